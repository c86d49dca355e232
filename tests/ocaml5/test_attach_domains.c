/*
 * OCaml 5.3 domains in a program never linked with memprof_probe
 * (tests/ocaml5/progs/spawner.ml), attached while four domains allocate
 * and the main domain spawns and joins pairs of domains: the injected
 * OCaml host (runtime-probes/hosts/ocaml-attach) starts Gc.Memprof in
 * every domain that runs, a domain spawned while its parent samples
 * shares the parent's profile, and the program finishes with its own
 * output.  3 runs (20 with MEMPROF_TEST_LONG=1).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "ocaml_util.h"

#define SPAWNER OCAML_PROG("spawner")

Test(ocaml5_attach_domains, four_domains_and_domains_spawned_while_attached, .timeout = 600)
{
	int runs = getenv("MEMPROF_TEST_LONG") ? 20 : 3;

	for (int r = 0; r < runs; r++) {
		char dir[256], out[512], ready[512], views[512], path[600], site[64];
		int code;

		ocaml_tmpdir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/out", dir);
		snprintf(ready, sizeof(ready), "%s/ready", dir);
		snprintf(views, sizeof(views), "%s/views", dir);
		const char *argv[] = {SPAWNER, "2", ready, NULL};
		const char *args[] = {"-d", "1.5", "--rate", "1e-4", "--all-views", views, NULL};
		pid_t pid = ocaml_start(dir, out, argv);
		pid_t loader = ocaml_loader_start(pid, args, dir, &code);

		cr_assert_neq(loader, 0, "run %d: the loader exited with %d", r, code);
		cr_assert_eq(ocaml_wait(loader), 0, "run %d: the loader failed", r);
		code = ocaml_wait(pid);
		cr_assert_eq(code, 0, "run %d: the program ended with %d (in %s)", r, code, dir);
		cr_expect_gt(out_value(out, "pairs"), 0, "run %d: no pair of domains ran", r);
		snprintf(path, sizeof(path), "%s/alloc.folded", views);
		for (int k = 0; k < 4; k++) {
			snprintf(site, sizeof(site), "Spawner.site_%d", k);
			cr_expect_gt(folded_frame_sum(path, site), 0,
				     "run %d: domain %d not sampled", r, k);
		}
		cr_expect_gt(folded_frame_sum(path, "Spawner.churn"), 0,
			     "run %d: no domain spawned while attached was sampled", r);
	}
	fprintf(stderr, "ocaml5_attach_domains: %d runs, no crash, every domain sampled\n", runs);
}
