/*
 * The OCaml host's life with a tracer, on real OCaml programs and the real
 * loader: detach (and a tracer killed with -9) stops sampling within the
 * adapter's poll period and leaves the program's output unchanged;
 * systhreads; a program that runs Gc.Memprof itself, from the start or
 * taking it over while traced; a stripped executable.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"
#include "ocaml_util.h"
#include "testlib.h"

static void paths(const char *dir, char *out, char *ready, size_t len)
{
	snprintf(out, len, "%s/out", dir);
	snprintf(ready, len, "%s/ready", dir);
}

/*
 * Sampling goes off (the adapter polls every 50 ms, then acts at the next
 * allocation): no rate, no owner, and then the sample counter stands still
 * while the program allocates.
 */
static void expect_stopped(pid_t pid)
{
	struct memprof_probe_control a, b;

	cr_assert_eq(wait_target_control(pid, control_sampling_off), 0, "sampling never went off");
	cr_assert_eq(target_control(pid, &a), 0, "cannot read the control block");
	cr_expect_eq(a.active_rate, 0, "still sampling at %g", a.active_rate);
	cr_expect_eq(a.flags, 0, "flags %u", a.flags);
	cr_expect_gt(a.samples, 0, "nothing was ever sampled");
	test_sleep_s(0.5);
	cr_assert_eq(target_control(pid, &b), 0, "cannot read the control block");
	cr_expect_eq(a.samples, b.samples, "samples went on: %llu then %llu",
		     (unsigned long long)a.samples, (unsigned long long)b.samples);
}

/* The output of an untraced, unpaced run of sites. */
static char *reference_output(const char *dir, const char *iterations)
{
	char out[512], ready[512];

	snprintf(out, sizeof(out), "%s/ref.out", dir);
	snprintf(ready, sizeof(ready), "%s/ref.ready", dir);
	ocaml_touch(dir, "ref.ready.go"); /* untraced: it goes at once */
	const char *argv[] = {OCAML_PROG("sites"), iterations, ready, "0", NULL};
	cr_assert_eq(ocaml_wait(ocaml_spawn(argv, out, NULL)), 0);
	return read_file(out);
}

Test(ocaml_lifecycle, detach_stops_sampling_and_output_is_unchanged, .timeout = 60)
{
	char dir[256], out[512], ready[512], *ref, *got;

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	/* It allocates after its work until told to stop: sampling is seen off. */
	const char *argv[] = {OCAML_PROG("sites"), "600000", ready, "3e6", "linger", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "1.5", "1e-4", dir), 0, "the loader failed");
	expect_stopped(pid);
	ocaml_touch(dir, "ready.stop");
	cr_assert_eq(ocaml_wait(pid), 0);
	ref = reference_output(dir, "600000");
	got = read_file(out);
	cr_assert(ref && got);
	cr_expect_str_eq(got, ref, "the traced run printed something else");
	free(ref);
	free(got);
}

Test(ocaml_lifecycle, a_tracer_killed_with_sigkill_stops_sampling, .timeout = 60)
{
	char dir[256], out[512], ready[512], *ref, *got;
	int code;

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	const char *argv[] = {OCAML_PROG("sites"), "600000", ready, "3e6", "linger", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	const char *args[] = {"-d", "600", "-o", "/dev/null", NULL};
	pid_t loader = ocaml_loader_start(pid, args, dir, &code);

	cr_assert_gt(loader, 0, "the loader exited with %d before it attached", code);
	/* Killed once it is known to sample. */
	cr_assert_eq(wait_target_control(pid, control_sampled_once), 0, "nothing was ever sampled");
	kill(loader, SIGKILL);
	cr_expect_eq(ocaml_wait(loader), 128 + SIGKILL);
	expect_stopped(pid);
	ocaml_touch(dir, "ready.stop");
	cr_assert_eq(ocaml_wait(pid), 0);
	ref = reference_output(dir, "600000");
	got = read_file(out);
	cr_assert(ref && got);
	cr_expect_str_eq(got, ref);
	free(ref);
	free(got);
}

Test(ocaml_lifecycle, systhreads_allocating_in_two_threads, .timeout = 60)
{
	char dir[256], out[512], ready[512], path[600];
	double a, b, wa, wb, ca, cb;

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	const char *argv[] = {OCAML_PROG("threads_sites"), "3", ready, NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "1.5", "1e-5", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0);
	/* Both threads allocate the same number of blocks: 4 and 8 words. */
	a = out_value(out, "a");
	b = out_value(out, "b");
	cr_assert(a > 0 && b > 0);
	snprintf(path, sizeof(path), "%s/views/alloc.folded", dir);
	wa = folded_frame_sum(path, "Threads_sites.alloc_a");
	wb = folded_frame_sum(path, "Threads_sites.alloc_b");
	ca = wa * 1e-5 / 8;
	cb = wb * 1e-5 / 8;
	cr_assert_gt(ca + cb, 500, "too few samples: %.0f", ca + cb);
	cr_expect(within_binomial(ca, ca + cb, 4 * a / (4 * a + 8 * b)),
		  "alloc_a: %.0f of %.0f samples", ca, ca + cb);
}

Test(ocaml_lifecycle, a_program_that_runs_gc_memprof_itself, .timeout = 60)
{
	char dir[256], out[512], ready[512], path[600], err[600];

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	const char *argv[] = {OCAML_PROG("own_memprof"), "3", ready, "early", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "1.5", "1e-4", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0);
	cr_expect(file_has(out, "own samples yes"), "its own tracker saw nothing");
	cr_expect_eq(out_value(out, "errors"), 0, "its own tracker got wrong data");
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	cr_expect(file_has(err, "an in-process profile is sampling at rate 0.001"),
		  "the loader did not say who samples");
	snprintf(path, sizeof(path), "%s/views/alloc.folded", dir);
	cr_expect_gt(folded_frame_sum(path, "Own_memprof.garbage"), 0);
}

Test(ocaml_lifecycle, a_program_starting_gc_memprof_while_traced, .timeout = 60)
{
	char dir[256], out[512], ready[512], path[600];

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	/* It starts its profile at 1/3 of its run and stops it at 2/3. */
	const char *argv[] = {OCAML_PROG("own_memprof"), "3", ready, "late", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "2.5", "1e-4", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0, "the program failed (did Gc.Memprof.start raise?)");
	cr_expect(file_has(out, "own samples yes"));
	cr_expect_eq(out_value(out, "errors"), 0);
	snprintf(path, sizeof(path), "%s/views/alloc.folded", dir);
	cr_expect_gt(folded_frame_sum(path, "Own_memprof.garbage"), 0);
}

Test(ocaml_lifecycle, a_stripped_executable, .timeout = 60)
{
	char dir[256], out[512], ready[512], bin[512], cmd[1200], path[600];

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	snprintf(bin, sizeof(bin), "%s/sites-stripped", dir);
	snprintf(cmd, sizeof(cmd), "strip -o %s %s", bin, OCAML_PROG("sites"));
	cr_assert_eq(system(cmd), 0);
	const char *argv[] = {bin, "400000", ready, "3e6", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "1", "1e-4", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0);
	snprintf(path, sizeof(path), "%s/views/alloc.folded", dir);
	cr_expect_gt(folded_total(path), 0, "nothing sampled");
}

/* The pid a program wrote into its ready file. */
static pid_t ready_pid(const char *ready)
{
	char *text = read_file(ready);
	long pid = text ? strtol(text, NULL, 10) : 0;

	free(text);
	cr_assert_gt(pid, 0, "no pid in %s", ready);
	return (pid_t)pid;
}

Test(ocaml_lifecycle, a_forked_child_is_attachable, .timeout = 60)
{
	char dir[256], out[512], ready[512], path[600];

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	/* The parent installs the adapter, then forks: the child has no helper thread. */
	const char *argv[] = {OCAML_PROG("fork_sites"), "3", ready, NULL};
	pid_t parent = ocaml_start(dir, out, argv);
	pid_t child = ready_pid(ready);

	cr_assert_neq(child, parent);
	cr_assert_eq(ocaml_attach(child, "1.5", "1e-5", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(parent), 0);
	cr_expect(file_has(out, "child checksum"), "the child did not finish");
	cr_expect(file_has(out, "parent done"));
	snprintf(path, sizeof(path), "%s/views/alloc.folded", dir);
	cr_expect_gt(folded_frame_sum(path, "Fork_sites.child_alloc"), 0,
		     "nothing sampled in the child (did its helper thread restart?)");
}

Test(ocaml_lifecycle, the_gc_probe_fires_at_collections, .timeout = 60)
{
	char dir[256], out[512], ready[512], err[600];

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	const char *argv[] = {OCAML_PROG("sites"), "300000", ready, "3e6", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach_verbose(pid, "1", "1e-5", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	/* 3e6 words/s against a 256 Ki-word minor heap: about 11 minor collections a second. */
	cr_expect_geq(out_value(err, "gcs"), 8, "memprof:gc fired %.0f times",
		      out_value(err, "gcs"));
}

/*
 * The program takes Gc.Memprof over while traced, after filling a ring with
 * sampled blocks of Handover.before, then kills them all.  OCaml 5 keeps
 * the adapter's stopped profile following them: they die in the live view.
 * OCaml 4.13's stop forgets them: the loader says so, and they stay live.
 */
Test(ocaml_lifecycle, blocks_traced_before_a_takeover, .timeout = 60)
{
	char dir[256], out[512], ready[512], alloc[600], live[600], err[600];
	double before;

	ocaml_tmpdir(dir, sizeof(dir));
	paths(dir, out, ready, sizeof(out));
	const char *argv[] = {OCAML_PROG("handover"), "3", "1", ready, NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "2.5", "1e-4", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0, "the program failed (did Gc.Memprof.start raise?)");
	cr_expect(file_has(out, "own samples yes"));
	snprintf(alloc, sizeof(alloc), "%s/views/alloc.folded", dir);
	snprintf(live, sizeof(live), "%s/views/live.folded", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	cr_assert_gt(folded_frame_sum(alloc, "Handover.before"), 0, "nothing traced before");
	cr_expect_gt(folded_frame_sum(alloc, "Handover.after"), 0, "nothing traced after");
	before = folded_frame_sum(live, "Handover.before");
	/* Both compilers: the loader says the program's profile took over. */
	cr_expect(file_has(err, "own profile took sampling over"), "no takeover note");
#if OCAML_UNDER_TEST >= 5
	cr_expect_eq(before, 0, "dead blocks of Handover.before still live: %.0f bytes", before);
	cr_expect(!file_has(err, "stopped following blocks"), "the host says it forgot blocks");
#else
	cr_expect(file_has(err, "stopped following blocks"), "the loader did not note it");
	cr_expect_gt(before, 0, "4.13 forgets them: they stay live");
#endif
}
