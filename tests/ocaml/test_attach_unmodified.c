/*
 * Attaching to a running native OCaml program that was never linked with
 * memprof_probe: the loader injects the OCaml host of its runtime
 * (runtime-probes/hosts/ocaml-attach), which starts Gc.Memprof inside it.
 * The program is the sites program (tests/ocaml/progs/sites.ml) built
 * with a stand-in for the package (bench/ocaml/no_probe): three sites of
 * known word shares and lifetimes, which it prints.  The ground truth is
 * also Gc.Memprof at rate 1 in a run of its own (the same program with
 * tests/ocaml/progs/truth/memprof_probe.ml).  tests/ocaml5/ runs the same on the
 * program built with OCaml 5.3.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"
#include "ocaml_util.h"
#include "testlib.h"

#if OCAML_UNDER_TEST == 5
#define PLAIN OCAML_PROG("sites-plain")
#define TRUTH OCAML_PROG("sites-truth")
#define HOST_LIB "libmemprof-ocaml5-attach.so"
#else
#define PLAIN "build/bench/ocaml-sites-plain"
#define TRUTH OCAML_PROG("sites-truth")
#define HOST_LIB "libmemprof-ocaml4-attach.so"
#endif

#define RATE 1e-4
#define RATE_S "1e-4"
#define N_SITES 4

static const char *const site_names[N_SITES] = {"Work.make_point", "Work.make_record",
						"Work.make_entry", "Sites.entry"};
enum { POINT, RECORD, ENTRY, CONS };

static double view_sum(const char *dir, const char *view, int site)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/views/%s.folded", dir, view);
	return folded_frame_sum(path, site_names[site]);
}

Test(ocaml_attach_unmodified, sites_shares_and_views, .timeout = 90)
{
	char dir[256], out[512], ready[512];
	double counts[OCAML_N_SITES];

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	const char *argv[] = {PLAIN, "1000000", ready, "5e6", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "3", RATE_S, dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0, "the OCaml program failed");
	/* It finished its work and printed its own output. */
	cr_expect_eq(out_value(out, "iterations"), 1000000, "the program's output is not whole");
	ocaml_expect_injected(dir, HOST_LIB);
	ocaml_expect_printed_shares(dir, out, RATE, counts);
	/*
	 * The three sites of Work against Gc.Memprof at rate 1, in a run of
	 * its own (the sites program with the truth stand-in): their shares
	 * within 5.7 sd of the words it counted there.
	 */
	char truth_dir[256], truth_out[512], truth_ready[512], key[64];
	double exact[3], exact_all = 0, seen_all = 0;

	ocaml_tmpdir(truth_dir, sizeof(truth_dir));
	snprintf(truth_out, sizeof(truth_out), "%s/out", truth_dir);
	snprintf(truth_ready, sizeof(truth_ready), "%s/ready", truth_dir);
	const char *truth_argv[] = {TRUTH, "100000", truth_ready, "0", NULL};
	pid_t truth_pid = ocaml_start(truth_dir, truth_out, truth_argv);

	ocaml_touch(truth_dir, "ready.go");
	cr_assert_eq(ocaml_wait(truth_pid), 0, "the truth run failed");
	for (int i = POINT; i <= ENTRY; i++) {
		snprintf(key, sizeof(key), "truth %s", site_names[i]);
		exact[i] = out_value(truth_out, key);
		cr_assert_gt(exact[i], 0, "the truth run counted nothing at %s", site_names[i]);
		exact_all += exact[i];
		seen_all += counts[i];
	}
	for (int i = POINT; i <= ENTRY; i++)
		cr_expect(within_binomial(counts[i], seen_all, exact[i] / exact_all),
			  "%s: %.0f samples of %.0f, Gc.Memprof at rate 1 gives share %.4f",
			  site_names[i], counts[i], seen_all, exact[i] / exact_all);
	/* live and promoted: the kept site leads the garbage. */
	cr_expect_gt(view_sum(dir, "live", ENTRY), view_sum(dir, "live", POINT),
		     "live: make_entry %.0f, make_point %.0f", view_sum(dir, "live", ENTRY),
		     view_sum(dir, "live", POINT));
	cr_expect_gt(view_sum(dir, "promoted", ENTRY), view_sum(dir, "promoted", POINT),
		     "promoted: make_entry %.0f, make_point %.0f", view_sum(dir, "promoted", ENTRY),
		     view_sum(dir, "promoted", POINT));
}

/* Sampling is off after a detach: no rate, no owner, the counter stands still. */
static void expect_stopped(pid_t pid)
{
	struct memprof_probe_control a, b;

	cr_assert_eq(wait_target_control(pid, control_sampling_off), 0, "sampling never went off");
	cr_assert_eq(target_control(pid, &a), 0, "cannot read the control block");
	cr_expect_eq(a.active_rate, 0, "still sampling at %g", a.active_rate);
	cr_expect_gt(a.samples, 0, "nothing was ever sampled");
	test_sleep_s(0.3);
	cr_assert_eq(target_control(pid, &b), 0, "cannot read the control block");
	cr_expect_eq(a.samples, b.samples, "samples went on after the detach: %llu then %llu",
		     (unsigned long long)a.samples, (unsigned long long)b.samples);
}

Test(ocaml_attach_unmodified, attach_detach_attach_again, .timeout = 90)
{
	char dir[256], out[512], ready[512], err[600];
	struct memprof_probe_control first;
	char *text;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	/* A short run, then garbage until the test says stop (gate.ml). */
	const char *argv[] = {PLAIN, "200000", ready, "5e6", "linger", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "1", "1e-3", dir), 0, "the first loader failed");
	expect_stopped(pid);
	cr_assert_eq(target_control(pid, &first), 0);
	/* The second attach finds the library loaded: no second injection. */
	cr_assert_eq(ocaml_attach(pid, "1", "1e-3", dir), 0, "the second loader failed");
	text = read_file(err);
	cr_assert_not_null(text);
	cr_expect(!strstr(text, "had no memprof probes"), "injected twice: %s", text);
	free(text);
	expect_stopped(pid);
	struct memprof_probe_control second;

	cr_assert_eq(target_control(pid, &second), 0);
	cr_expect_gt(second.samples, first.samples, "the second attach sampled nothing");
	ocaml_touch(dir, "ready.stop");
	cr_assert_eq(ocaml_wait(pid), 0, "the OCaml program failed");
	cr_expect_eq(out_value(out, "iterations"), 200000, "the program's output is not whole");
}

/* A program running its own Gc.Memprof is left alone, and the loader says so. */
Test(ocaml_attach_unmodified, a_program_profiling_itself_is_left_alone, .timeout = 90)
{
	char dir[256], out[512], ready[512], err[600];
	int code;
	char *text;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	const char *argv[] = {OCAML_PROG("own_memprof-plain"), "3", ready, "early", NULL};
	const char *args[] = {"-d", "1", "-o", "/dev/null", NULL};
	pid_t pid = ocaml_start(dir, out, argv);
	pid_t loader = ocaml_loader_start(pid, args, dir, &code);

	cr_assert_neq(loader, 0, "the loader exited with %d", code);
	cr_expect_eq(ocaml_wait(loader), 0, "the loader failed");
	text = read_file(err);
	cr_assert_not_null(text);
	cr_expect(strstr(text, "runs its own Gc.Memprof profile (memtrace, or the program's): "
			       "the OCaml host left it alone"),
		  "%s", text);
	free(text);
	cr_assert_eq(ocaml_wait(pid), 0, "the program failed (did its Gc.Memprof raise?)");
	cr_expect(file_has(out, "own samples yes"), "its own tracker saw nothing");
	cr_expect(file_has(out, "errors 0"), "its own tracker saw other data");
}

/* Systhreads: two threads allocating the same number of 4- and 8-word blocks. */
Test(ocaml_attach_unmodified, systhreads_allocating_in_two_threads, .timeout = 90)
{
	char dir[256], out[512], ready[512], path[600];
	double a, b, ca, cb;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	const char *argv[] = {OCAML_PROG("threads_sites-plain"), "3", ready, NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "1.5", "1e-5", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0, "the OCaml program failed");
	a = out_value(out, "a");
	b = out_value(out, "b");
	cr_assert(a > 0 && b > 0, "the program's output is not whole");
	snprintf(path, sizeof(path), "%s/views/alloc.folded", dir);
	ca = folded_frame_sum(path, "Threads_sites.alloc_a") * 1e-5 / 8;
	cb = folded_frame_sum(path, "Threads_sites.alloc_b") * 1e-5 / 8;
	cr_assert_gt(ca + cb, 500, "too few samples: %.0f", ca + cb);
	cr_expect(within_binomial(ca, ca + cb, 4 * a / (4 * a + 8 * b)),
		  "alloc_a: %.0f of %.0f samples", ca, ca + cb);
}

/*
 * The injected host fires memprof:gc from the runtime's timing hooks, as
 * the linked package does (memprof_probe_gc.c): set with the first
 * profile, so from the safe point on.  3e6 words/s against a 256 Ki-word
 * minor heap is about 11 minor collections a second, 2 s attached.
 */
Test(ocaml_attach_unmodified, the_gc_probe_fires_at_collections, .timeout = 90)
{
	char dir[256], out[512], ready[512], err[600];

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	const char *argv[] = {PLAIN, "1000000", ready, "3e6", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach_verbose(pid, "2", "1e-5", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0, "the OCaml program failed");
	ocaml_expect_injected(dir, HOST_LIB);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	cr_expect_geq(out_value(err, "gcs"), 8, "memprof:gc fired %.0f times",
		      out_value(err, "gcs"));
}

/*
 * A program blocked in a system call (opening a fifo nobody writes to)
 * for the whole attach: the loader ends at its -d with a note that names
 * the block, not a hang; once the test writes its line, the program
 * finishes with its own output.
 */
Test(ocaml_attach_unmodified, a_program_blocked_in_a_system_call, .timeout = 90)
{
	char dir[256], out[512], ready[512], fifo[600], err[600], *text;
	int code;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(fifo, sizeof(fifo), "%s.fifo", ready);
	cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo %s", fifo);
	const char *argv[] = {OCAML_PROG("blocked-plain"), ready, NULL};
	pid_t pid = ocaml_start(dir, out, argv);
	const char *args[] = {"-d", "1", "--rate", "1e-4", NULL};
	pid_t loader = ocaml_loader_start(pid, args, dir, &code);

	cr_assert_neq(loader, 0, "the loader exited with %d", code);
	cr_assert_eq(ocaml_wait(loader), 0, "the loader failed");
	ocaml_expect_injected(dir, HOST_LIB);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	text = read_file(err);
	cr_assert_not_null(text);
	cr_expect(strstr(text, "ran no OCaml code") && strstr(text, "blocked in a system call"),
		  "no note of the block: %s", text);
	free(text);
	FILE *f = fopen(fifo, "w");
	cr_assert_not_null(f, "cannot open %s", fifo);
	fputs("hello\n", f);
	fclose(f);
	cr_assert_eq(ocaml_wait(pid), 0, "the blocked program failed");
	cr_expect_eq(out_value(out, "got hello"), 1000, "the program's output is not whole");
}

/* Whether process pid maps the injected OCaml host. */
static int has_host(pid_t pid)
{
	char maps[64];

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	return file_has(maps, HOST_LIB);
}

/*
 * The loader killed (SIGKILL) at a random instant of its attach: before,
 * during or after the injection, or once Gc.Memprof runs.  The program,
 * allocating all along, finishes its work with its own output.  6 trials
 * (200 with MEMPROF_TEST_LONG=1); MEMPROF_TEST_SEED replays a run.
 */
Test(ocaml_attach_unmodified, the_loader_killed_at_random_instants, .timeout = 900)
{
	const char *seed_env = getenv("MEMPROF_TEST_SEED");
	unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10) : 29;
	int trials = getenv("MEMPROF_TEST_LONG") ? 200 : 6;

	int injected = 0;

	fprintf(stderr, "killed loader: seed %u (MEMPROF_TEST_SEED), %d trials\n", seed, trials);
	srand(seed);
	for (int t = 0; t < trials; t++) {
		char dir[256], out[512], ready[512], pid_s[16];
		/* Denser early: the injection comes some 0.1 s after the loader's start. */
		double u = (double)rand() / RAND_MAX, after = 1.2 * u * u * u;
		struct timespec ts = {(time_t)after, (long)((after - (double)(time_t)after) * 1e9)};
		int code;

		ocaml_tmpdir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/out", dir);
		snprintf(ready, sizeof(ready), "%s/ready", dir);
		const char *argv[] = {PLAIN, "400000", ready, "5e6", NULL};
		pid_t pid = ocaml_start(dir, out, argv);

		ocaml_touch(dir, "ready.go");
		snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
		const char *largs[] = {OCAML_LOADER, "attach", pid_s, "-d",	   "5",
				       "--rate",     "1e-3",   "-o",  "/dev/null", NULL};
		pid_t loader = ocaml_spawn(largs, NULL, NULL);

		nanosleep(&ts, NULL);
		kill(loader, SIGKILL);
		ocaml_wait(loader);
		injected += has_host(pid);
		code = ocaml_wait(pid);
		cr_assert_eq(code, 0,
			     "trial %d (loader killed after %.3f s): the program ended with %d", t,
			     after, code);
		cr_assert_eq(out_value(out, "iterations"), 400000,
			     "trial %d (after %.3f s): the program's output is not whole", t,
			     after);
	}
	fprintf(stderr, "killed loader: %d of %d trials killed it after the injection\n", injected,
		trials);
}
