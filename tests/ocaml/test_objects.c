/*
 * Estimated objects on OCaml (tests/ocaml/progs/sizes.ml; tests/ocaml5 runs
 * this file on OCaml 5.3): memprof-bpf attached for real until the program
 * exits, blocks of 1 to 300 fields from Array.make, one site per size, minor
 * heap up to 256 fields and major heap above.  At rate 1 each size's
 * objects, samples and bytes are exact (Gc.Memprof samples every word); at
 * 1e-3 its objects are within 5.7 standard deviations of its blocks, and so
 * are all sizes' together (tests/attach/objects_check.h).
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "objects_check.h"
#include "ocaml_util.h"

#define SITE_FMT "Blocks.w%03d"

/* Run sizes (words per site, at least min_blocks each) traced at rate until it exits; fill r. */
static void run_sizes(const char *rate, const char *words, const char *min_blocks,
		      struct objects_run *r)
{
	char dir[256], ready[512], out[512], txt[512], folded[512], err[512];
	const char *argv[] = {OCAML_PROG("sizes"), ready, words, min_blocks, NULL};
	pid_t pid, loader;
	int code = -1;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(txt, sizeof(txt), "%s/report.txt", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	pid = ocaml_start(dir, out, argv);
	const char *args[] = {"-v", "--rate", rate, "-o", txt, "-o", folded, NULL};
	loader = ocaml_loader_start(pid, args, dir, &code);
	cr_assert_gt(loader, 0, "the loader exited before it attached (exit %d)", code);
	cr_assert_eq(ocaml_wait(pid), 0, "the OCaml program failed");
	cr_assert_eq(ocaml_wait(loader), 0, "the loader failed");
	cr_expect_eq(loader_stat(err, "dropped"), 0, "samples dropped");
	objects_read(r, SITE_FMT, out, txt, folded);
}

Test(ocaml_objects, exact_at_rate_1_for_blocks_of_1_to_300_fields, .timeout = 120)
{
	struct objects_run r;

	/* 200 blocks or more: one object too many in 300 is seen in the report's units. */
	run_sizes("1", "3000", "200", &r);
	objects_expect_exact(&r, SITE_FMT);
}

Test(ocaml_objects, unbiased_at_rate_1e_3_for_blocks_of_1_to_300_fields, .timeout = 120)
{
	struct objects_run r;

	run_sizes("0.001", "200000", "1", &r);
	objects_expect_unbiased(&r, SITE_FMT, 1e-3);
}
