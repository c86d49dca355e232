/*
 * memprof-bpf attached for real (root, real kernel, real uprobes) to the
 * deterministic trigger: exact and statistical checks of every view, the
 * orphan-id invariant, detach, two tracers, the target exiting, and the
 * error cases.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>
#include "memprof_probe_abi.h"
#include "attach_util.h"
#include "output/folded.h"

#define RATE_ARG "0.01"
#define RATE 0.01
/* 8 / RATE: the estimated bytes one sample stands for, exact at RATE. */
#define BYTES_PER_SAMPLE 800
#define ITERS_ARG "100000"
#define ITERS 100000
/* What the loader prints with -v once its probes are attached. */
#define ATTACHED_NOTE "memprof-bpf: attached to"

enum { COL_WORDS, COL_LIVE_WORDS, COL_SAMPLED_WORDS, COL_SAMPLES, COL_EST_BYTES };

#define N_TRIGGER_SITES 4
static const char *const sites[N_TRIGGER_SITES] = {"site_short_lived", "site_medium_lived",
						   "site_long_lived", "site_major_blocks"};
/* Words per block, header included (tests/attach/progs/trigger.c). */
static const long long site_words[N_TRIGGER_SITES] = {5, 9, 17, 301};

struct run {
	char dir[128], err[192], out[192], views[192];
	int rc;
	struct site_table trigger, view[MEMPROF_N_VIEWS];
};

static void paths(struct run *r, const char *tag)
{
	tmpdir_make(r->dir, sizeof(r->dir));
	cr_assert(r->dir[0], "mkdtemp failed");
	snprintf(r->err, sizeof(r->err), "%s/%s.err", r->dir, tag);
	snprintf(r->out, sizeof(r->out), "%s/trigger.out", r->dir);
	snprintf(r->views, sizeof(r->views), "%s/%s", r->dir, tag);
}

static void read_views(struct run *r)
{
	char path[256];

	for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
		snprintf(path, sizeof(path), "%s/%s.folded", r->views, memprof_view_names[v]);
		cr_assert_eq(site_table_read_folded(path, &r->view[v]), 0, "no %s", path);
	}
}

/*
 * The trigger (bin) waits for the tracer (its semaphore, then the loader's
 * --ready-file: the semaphore rises with the first uprobe, before every
 * program is in place), runs ITERS iterations and exits while still
 * attached.  extra: one more loader option and its value.
 */
/* As run_attached_bin, the trigger running iters iterations. */
static void run_attached_iters(struct run *r, const char *bin, const char *iters, const char *extra,
			       const char *extra_val)
{
	char pid[16], ready[300];
	pid_t t;

	paths(r, "tracer");
	snprintf(ready, sizeof(ready), "%s/loader.ready", r->dir);
	const char *targs[] = {
	    "--wait-tracers", "1", "--start-file", ready, "--iterations", iters, NULL};
	t = trigger_start_bin(bin, r->dir, r->out, targs);
	cr_assert_gt(t, 0, "trigger did not start");
	snprintf(pid, sizeof(pid), "%d", (int)t);
	/* -v: the stats line the invariants are read from. */
	const char *largs[] = {"attach",       pid,   "-v",	     "--rate", RATE_ARG,
			       "--ready-file", ready, "--all-views", r->views, extra,
			       extra_val,      NULL};
	r->rc = loader_run(r->err, largs);
	if (access(ready, F_OK) != 0) {
		/* The loader never got ready: the trigger would wait for it in vain. */
		kill(t, SIGKILL);
		wait_exit(t);
		char *log = read_file(r->err);
		cr_assert_fail("the loader exited (%d) before it was ready: %.2000s", r->rc,
			       log ? log : "");
	}
	cr_assert_eq(wait_exit(t), 0, "trigger failed");
	cr_assert_eq(site_table_read_lines(r->out, &r->trigger), 0);
	read_views(r);
}

static void run_attached_bin(struct run *r, const char *bin, const char *extra,
			     const char *extra_val)
{
	run_attached_iters(r, bin, ITERS_ARG, extra, extra_val);
}

static void run_attached(struct run *r)
{
	run_attached_bin(r, TRIGGER_BIN, NULL, NULL);
}

static void assert_invariants(const char *err)
{
	cr_expect_eq(loader_stat(err, "orphan_ids"), 0, "promote/dealloc ids never sampled");
	cr_expect_eq(loader_stat(err, "double_promotes"), 0);
	cr_expect_eq(loader_stat(err, "duplicate_ids"), 0);
	cr_expect_eq(loader_stat(err, "dropped"), 0);
	cr_expect_gt(loader_stat(err, "samples"), 0);
}

/* Every view of every site is what the trigger says it sampled, exactly. */
static void expect_exact_views(const struct run *r)
{
	for (int s = 0; s < N_TRIGGER_SITES; s++) {
		long long est = site_value(&r->trigger, sites[s], COL_EST_BYTES);
		int is_short = s == 0, is_long = s == 2, promoted = s == 1 || s == 2;

		cr_expect_gt(est, 0, "%s: nothing sampled", sites[s]);
		cr_expect_eq(site_value(&r->view[MEMPROF_VIEW_ALLOC], sites[s], 0), est, "alloc %s",
			     sites[s]);
		cr_expect_eq(site_value(&r->view[MEMPROF_VIEW_LIVE], sites[s], 0),
			     is_long ? est : 0, "live %s", sites[s]);
		cr_expect_eq(site_value(&r->view[MEMPROF_VIEW_PROMOTED], sites[s], 0),
			     promoted ? est : 0, "promoted %s", sites[s]);
		cr_expect_eq(site_value(&r->view[MEMPROF_VIEW_SHORT], sites[s], 0),
			     is_short ? est : 0, "short %s", sites[s]);
	}
}

/*
 * A block map of 16,500 (the trigger keeps 15,443 sampled blocks alive at
 * the end, of 124,000 sampled): block ids wrap round the slots many times
 * and the long-lived blocks hold most of them, so many later blocks find
 * every choice of slot taken (bpf/memprof_maps.h) and live in the overflow
 * (15,400 in this run).  The views stay exact and nothing is dropped.
 */
Test(attach_trigger, views_stay_exact_when_blocks_overflow_their_home_slots)
{
	struct run r;

	run_attached_bin(&r, TRIGGER_BIN, "--max-blocks", "16500");
	cr_assert_eq(r.rc, 0, "loader exit %d", r.rc);
	assert_invariants(r.err);
	cr_expect_gt(loader_stat(r.err, "overflow_blocks"), loader_stat(r.err, "samples") / 10,
		     "the overflow was hardly used");
	expect_exact_views(&r);
}

/*
 * The overflow's levels are created as it fills (bpf/memprof_maps.h,
 * blocks_overflow: 16,384 blocks, then 65,536, then --max-blocks): the
 * trigger run 500,000 iterations keeps about 75,000 sampled blocks alive at
 * the end against 16,384 home slots (sized from its small resident memory),
 * so the overflow holds far more than its first level.  The views stay
 * exact and nothing is dropped.  With the levels never grown past the
 * first, samples were dropped (the overflow not grown yet).
 */
Test(attach_trigger, the_overflow_grows_with_the_blocks_it_holds, .timeout = 300)
{
	struct run r;

	run_attached_iters(&r, TRIGGER_BIN, "500000", NULL, NULL);
	cr_assert_eq(r.rc, 0, "loader exit %d", r.rc);
	assert_invariants(r.err);
	cr_expect_gt(loader_stat(r.err, "live_blocks"), 2 * 16384 + 16384,
		     "too few live blocks to fill the first level");
	expect_exact_views(&r);
}

/*
 * The block map sized whole for the 124,000 blocks the trigger samples
 * (--max-blocks given: its home slots are that many): no block id meets
 * an older live one in its home slot.  Without --max-blocks the home
 * slots are sized from the target's resident memory, which the trigger's
 * simulated heap is not: the overflow is used then, as in the test above.
 */
Test(attach_trigger, views_match_the_samples_fired_exactly)
{
	struct run r;

	run_attached_bin(&r, TRIGGER_BIN, "--max-blocks", "262144");
	cr_assert_eq(r.rc, 0, "loader exit %d", r.rc);
	cr_expect(file_contains(r.err, "exited"), "no note that the target exited");
	assert_invariants(r.err);
	cr_expect_eq(loader_stat(r.err, "overflow_blocks"), 0,
		     "block ids collided in a map larger than the blocks sampled");
	expect_exact_views(&r);
	/* Promotions and deaths came in memprof:events batches (ABI 2): the views
	 * above are exact all the same. */
	long long events = loader_stat(r.err, "promotes") + loader_stat(r.err, "deallocs");
	long long batches = loader_stat(r.err, "event_batches");
	/* The tracer's counts are what the trigger handed it, exactly. */
	double fired_samples, fired_promotes, fired_deallocs;
	cr_assert_eq(file_value(r.out, "fired samples", &fired_samples), 0);
	cr_assert_eq(file_value(r.out, "promotes", &fired_promotes), 0);
	cr_assert_eq(file_value(r.out, "deallocs", &fired_deallocs), 0);
	cr_expect_eq(loader_stat(r.err, "samples"), (long long)fired_samples);
	cr_expect_eq(loader_stat(r.err, "promotes"), (long long)fired_promotes);
	cr_expect_eq(loader_stat(r.err, "deallocs"), (long long)fired_deallocs);
	cr_expect_gt(batches, 0);
	cr_expect_lt(batches * 4, events, "%lld batches for %lld events", batches, events);
	/* Exactly the sites, each under main: symbolized from .symtab. */
	cr_expect_eq(r.view[MEMPROF_VIEW_ALLOC].n, N_TRIGGER_SITES);
	cr_expect_gt(loader_stat(r.err, "live_blocks"), 0, "no live blocks kept in userspace");
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/alloc.folded", r.views);
		cr_expect(file_contains(path, ";main;site_short_lived "), "bad stacks");
	}
}

/*
 * The block map sized from the trigger's small resident memory (16,384
 * slots) against about 7,500 long-lived blocks at the end (50,000
 * iterations): they hold slots all over the map, and a later block takes
 * the next free one of its choices of slot (bpf/memprof_maps.h), not the
 * overflow hash, whose inserts allocate.  With its first slot alone, 10,200
 * of the 62,100 samples went to the overflow; with the choices, 750.
 */
Test(attach_trigger, long_lived_blocks_leave_the_others_a_slot)
{
	struct run r;

	run_attached_iters(&r, TRIGGER_BIN, "50000", NULL, NULL);
	cr_assert_eq(r.rc, 0);
	assert_invariants(r.err);
	cr_expect_lt(loader_stat(r.err, "overflow_blocks") * 20, loader_stat(r.err, "samples"),
		     "%lld of %lld samples in the overflow", loader_stat(r.err, "overflow_blocks"),
		     loader_stat(r.err, "samples"));
	expect_exact_views(&r);
}

Test(attach_trigger, views_match_the_allocation_distribution)
{
	struct run r;

	run_attached(&r);
	cr_assert_eq(r.rc, 0);
	for (int s = 0; s < N_TRIGGER_SITES; s++) {
		double words = (double)ITERS * site_words[s];
		double n =
		    site_value(&r.view[MEMPROF_VIEW_ALLOC], sites[s], 0) / (double)BYTES_PER_SAMPLE;

		cr_expect(within_binomial(n, words, RATE), "alloc %s: %.0f samples for %.0f words",
			  sites[s], n, words);
	}
	/* Short-lived blocks all die young; long-lived ones all stay live. */
	cr_expect(
	    within_binomial(site_value(&r.view[MEMPROF_VIEW_SHORT], sites[0], 0) / BYTES_PER_SAMPLE,
			    (double)ITERS * site_words[0], RATE));
	cr_expect(
	    within_binomial(site_value(&r.view[MEMPROF_VIEW_LIVE], sites[2], 0) / BYTES_PER_SAMPLE,
			    (double)ITERS * site_words[2], RATE));
	cr_expect(within_binomial(site_value(&r.view[MEMPROF_VIEW_PROMOTED], sites[1], 0) /
				      BYTES_PER_SAMPLE,
				  (double)ITERS * site_words[1], RATE));
	cr_expect_eq(site_value(&r.view[MEMPROF_VIEW_PROMOTED], sites[3], 0), 0,
		     "born-major promoted");
}

Test(attach_trigger, two_tracers_on_one_process_both_see_everything)
{
	char err2[256], views2[256], pid[16], start[256];
	struct site_table a, b;
	struct run r;
	pid_t t, l1, l2;
	FILE *f;

	paths(&r, "first");
	snprintf(err2, sizeof(err2), "%s/second.err", r.dir);
	snprintf(views2, sizeof(views2), "%s/second", r.dir);
	snprintf(start, sizeof(start), "%s/start", r.dir);
	const char *targs[] = {"--wait-tracers", "1", "--start-file", start, "--iterations",
			       "20000",		 NULL};
	t = trigger_start(r.dir, r.out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args1[] = {"attach", pid,		"-v",	 "--rate",
			       RATE_ARG, "--all-views", r.views, NULL};
	const char *args2[] = {"attach", pid,		"-v",	"--rate",
			       RATE_ARG, "--all-views", views2, NULL};
	l1 = loader_start(r.err, args1);
	l2 = loader_start(err2, args2);
	cr_assert_eq(wait_text(r.err, ATTACHED_NOTE, TEST_EVENT_TIMEOUT_S), 0,
		     "first tracer did not attach");
	cr_assert_eq(wait_text(err2, ATTACHED_NOTE, TEST_EVENT_TIMEOUT_S), 0,
		     "second tracer did not attach");
	f = fopen(start, "w");
	cr_assert(f && !fclose(f));
	cr_assert_eq(wait_exit(l1), 0);
	cr_assert_eq(wait_exit(l2), 0);
	cr_assert_eq(wait_exit(t), 0);
	cr_assert_eq(site_table_read_lines(r.out, &r.trigger), 0);
	assert_invariants(r.err);
	assert_invariants(err2);
	/* The kernel's views: the peak is each loader's own, read at its own polls. */
	for (int v = 0; v < MEMPROF_N_KERNEL_VIEWS; v++) {
		char p1[512], p2[512];

		snprintf(p1, sizeof(p1), "%s/%s.folded", r.views, memprof_view_names[v]);
		snprintf(p2, sizeof(p2), "%s/%s.folded", views2, memprof_view_names[v]);
		site_table_read_folded(p1, &a);
		site_table_read_folded(p2, &b);
		for (int s = 0; s < N_TRIGGER_SITES; s++) {
			cr_expect_eq(site_value(&a, sites[s], 0), site_value(&b, sites[s], 0),
				     "%s %s differs between tracers", memprof_view_names[v],
				     sites[s]);
			if (v == MEMPROF_VIEW_ALLOC)
				cr_expect_eq(site_value(&a, sites[s], 0),
					     site_value(&r.trigger, sites[s], COL_EST_BYTES));
		}
	}
}

Test(attach_trigger, detach_stops_sampling_in_the_target)
{
	const char *targs[] = {"--seconds", "60", NULL};
	struct memprof_probe_control before, after;
	const struct timespec pause = {0, 300000000};
	char pid[16];
	struct run r;
	pid_t t;

	paths(&r, "detach");
	t = trigger_start(r.dir, r.out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *largs[] = {"attach", pid, "-d", "1", "--rate", RATE_ARG, "-o", r.views, NULL};
	cr_assert_eq(loader_run(r.err, largs), 0);
	cr_expect_gt(file_lines(r.views), 0, "nothing collected in 1 s");
	/* The host's next safe point turns sampling off. */
	cr_assert_eq(wait_target_control(t, control_sampling_off), 0, "sampling never went off");
	cr_assert_eq(target_control(t, &before), 0, "cannot read the control block");
	nanosleep(&pause, NULL);
	cr_assert_eq(target_control(t, &after), 0);
	kill(t, SIGTERM);
	wait_exit(t);
	cr_expect_gt(before.samples, 0, "the target never sampled");
	cr_expect_eq(before.samples, after.samples, "still sampling after detach");
	cr_expect_eq(after.active_rate, 0.0);
	cr_expect_eq(after.requested_rate, RATE, "requested rate not written");
	cr_expect_not(file_contains(r.err, "exited"));
}

Test(attach_trigger, sigint_stops_the_tracer_with_output)
{
	const char *targs[] = {"--seconds", "600", NULL};
	char pid[16];
	struct run r;
	pid_t t, l;
	int code;

	paths(&r, "sigint");
	t = trigger_start(r.dir, r.out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *largs[] = {"attach", pid, "--rate", RATE_ARG, "-o", r.views, NULL};
	l = loader_start_ready(r.dir, r.err, largs, &code);
	cr_assert_gt(l, 0, "the loader did not attach (exit %d)", code);
	/* Interrupted once the target is known to sample. */
	cr_assert_eq(wait_target_control(t, control_sampled_once), 0, "the target never sampled");
	kill(l, SIGINT);
	cr_expect_eq(wait_exit(l), 0);
	kill(t, SIGTERM);
	wait_exit(t);
	cr_expect(file_contains(r.views, "site_short_lived"));
}

Test(attach_trigger, probes_in_a_shared_library)
{
	char path[256];
	struct run r;

	run_attached_bin(&r, TRIGGER_SO_BIN, NULL, NULL);
	cr_assert_eq(r.rc, 0);
	assert_invariants(r.err);
	for (int s = 0; s < N_TRIGGER_SITES; s++)
		cr_expect_eq(site_value(&r.view[MEMPROF_VIEW_ALLOC], sites[s], 0),
			     site_value(&r.trigger, sites[s], COL_EST_BYTES), "alloc %s", sites[s]);
	/* main in the executable, the rest in the .so: both symbolized. */
	snprintf(path, sizeof(path), "%s/alloc.folded", r.views);
	cr_expect(file_contains(path, ";main;attach_trigger_main;site_short_lived "),
		  "bad stacks in %s", path);
}

Test(attach_trigger, a_full_block_map_is_reported)
{
	struct run r;

	run_attached_bin(&r, TRIGGER_BIN, "--max-blocks", "64");
	cr_assert_eq(r.rc, 0);
	cr_expect_gt(loader_stat(r.err, "dropped"), 0);
	cr_expect(file_contains(r.err, "block map full"), "no note on the full map");
	/* Blocks that found no room still count where they were allocated. */
	for (int s = 0; s < N_TRIGGER_SITES; s++)
		cr_expect_eq(site_value(&r.view[MEMPROF_VIEW_ALLOC], sites[s], 0),
			     site_value(&r.trigger, sites[s], COL_EST_BYTES), "alloc %s", sites[s]);
	cr_expect_lt(site_value(&r.view[MEMPROF_VIEW_LIVE], "site_long_lived", 0),
		     site_value(&r.trigger, "site_long_lived", COL_EST_BYTES));
	/*
	 * Only long-lived blocks never die: they end up holding every slot of
	 * the map, and the live view is exactly them, at least one sample each.
	 */
	cr_expect_eq(loader_stat(r.err, "live_blocks"), 64);
	for (int s = 0; s < N_TRIGGER_SITES; s++)
		if (strcmp(sites[s], "site_long_lived"))
			cr_expect_eq(site_value(&r.view[MEMPROF_VIEW_LIVE], sites[s], 0), 0,
				     "live %s", sites[s]);
	cr_expect_geq(site_value(&r.view[MEMPROF_VIEW_LIVE], "site_long_lived", 0),
		      64 * BYTES_PER_SAMPLE);
}

Test(attach_trigger, one_tracer_leaving_does_not_stop_the_other)
{
	const char *targs[] = {"--seconds", "60", NULL};
	const struct timespec pause = {0, 300000000};
	struct memprof_probe_control c1, c2;
	char err2[256], pid[16];
	struct run r;
	pid_t t, stays, leaves;

	paths(&r, "leaves");
	snprintf(err2, sizeof(err2), "%s/stays.err", r.dir);
	t = trigger_start(r.dir, r.out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *stay_args[] = {"attach", pid,  "-v",	"--rate",
				   RATE_ARG, "-o", "/dev/null", NULL};
	const char *leave_args[] = {"attach", pid,  "-d",	 "0.5", "--rate",
				    RATE_ARG, "-o", "/dev/null", NULL};
	stays = loader_start(err2, stay_args);
	cr_assert_eq(wait_text(err2, ATTACHED_NOTE, TEST_EVENT_TIMEOUT_S), 0,
		     "first tracer did not attach");
	leaves = loader_start(r.err, leave_args);
	cr_expect_eq(wait_exit(leaves), 0);
	nanosleep(&pause, NULL);
	cr_expect_eq(target_control(t, &c1), 0);
	nanosleep(&pause, NULL);
	cr_expect_eq(target_control(t, &c2), 0);
	kill(stays, SIGINT);
	cr_expect_eq(wait_exit(stays), 0);
	kill(t, SIGTERM);
	wait_exit(t);
	cr_expect_gt(c2.samples, c1.samples, "sampling stopped when the other tracer left");
	cr_expect_gt(c2.active_rate, 0.0);
	cr_expect_eq(loader_stat(err2, "orphan_ids"), 0);
}

Test(attach_trigger, one_view_to_stdout)
{
	char pid[16], out[256], ready[300];
	struct site_table v, trig;
	struct run r;
	pid_t t;

	paths(&r, "stdout");
	snprintf(out, sizeof(out), "%s/short.folded", r.dir);
	snprintf(ready, sizeof(ready), "%s/loader.ready", r.dir);
	const char *targs[] = {"--wait-tracers", "1", "--start-file", ready, "--iterations",
			       "20000",		 NULL};
	t = trigger_start(r.dir, r.out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *largs[] = {"attach",       pid,   "--rate", RATE_ARG, "--view", "short",
			       "--ready-file", ready, NULL};
	cr_assert_eq(loader_run_out(out, r.err, largs), 0);
	cr_assert_eq(wait_exit(t), 0);
	cr_assert_eq(site_table_read_lines(r.out, &trig), 0);
	cr_assert_eq(site_table_read_folded(out, &v), 0);
	cr_expect_eq(v.n, 1, "only the short-lived site dies young");
	cr_expect_eq(site_value(&v, "site_short_lived", 0),
		     site_value(&trig, "site_short_lived", COL_EST_BYTES));
}
