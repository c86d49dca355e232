/*
 * memprof-bpf: attach to a process's memprof USDT probes and write what it
 * allocates, by call stack, as folded stacks.  See usage() for the options
 * and the exit codes.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "environ_check.h"
#include "exit_codes.h"
#include "folded.h"
#include "output.h"
#include "target.h"
#include "timeline.h"
#include "tracer.h"

/* How often the maps are read, and the target's mappings re-read. */
#define POLL_INTERVAL_MS 100
#define MAPS_REFRESH_POLLS 1
/* How often the block map is copied (live blocks and their ages). */
#define BLOCKS_READ_POLLS 5
/* Timeline points: every poll at first (fewer on long attaches, timeline.h). */
#define TIMELINE_INTERVAL_MS POLL_INTERVAL_MS
#define ERR_LEN 512

static volatile sig_atomic_t stop_requested;
static int verbose;

struct options {
	pid_t pid;
	double seconds;				 /* 0: until the target exits or a signal */
	const char *out_paths[OUTPUT_MAX_FILES]; /* -o, repeatable */
	int n_out;
	const char *all_views_dir;
	enum memprof_view view;
	double rate;
	uint32_t max_blocks; /* 0: the default size of the block map */
	/* Output format and symbolization (userspace/output.c). */
	enum output_format format;
	int no_dwarf;
	/* Lifetimes and the timeline (userspace/lifetimes.c, timeline.c). */
	const char *lifetimes_path;
	const char *timeline_path;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memprof-bpf attach PID [-d SECONDS] [-o FILE] [--view "
		"alloc|live|promoted|short]\n"
		"                             [--all-views DIR] [--rate R] [--max-blocks N] [-v]\n"
		"                             [--format folded|pprof|svg|text] [--no-dwarf]\n"
		"                             [--lifetimes FILE.csv] [--timeline FILE.svg|.csv]\n"
		"Traces the memprof USDT probes of process PID and writes what it allocated, by\n"
		"call stack, in estimated bytes (to FILE or stdout; with --all-views,\n"
		"DIR/<view>.folded for every view).  Stops after -d SECONDS, on SIGINT/SIGTERM,\n"
		"or when PID exits.\n"
		"  --format F folded stacks (default), pprof (gzipped profile.proto, every view),\n"
		"             svg (interactive flame graph of --view), text (report with 95%%\n"
		"             intervals); without it, -o FILE's extension decides: .pb.gz or\n"
		"             .pprof, .svg, .txt, anything else folded; -o may be repeated\n"
		"  --no-dwarf names from symbol tables only (no debug files, lines, inlines)\n"
		"  --lifetimes FILE.csv  lifetime percentiles per site (with -v, histograms too)\n"
		"  --timeline FILE.svg|FILE.csv  live bytes of the top sites over the attach\n"
		"  --view V   alloc: every sampled allocation (default); live: blocks alive at\n"
		"             the end (in a garbage-collected host: not yet reclaimed, so dead\n"
		"             blocks count until the collector frees them); promoted: blocks\n"
		"             promoted; short: blocks freed while young\n"
		"  --rate R   sampling rate per word asked of the target (default %g)\n"
		"  --max-blocks N  tracked blocks the kernel side holds at once (default %d);\n"
		"             when full, samples still count in alloc and a note reports drops\n"
		"  -v         verbose, with libbpf's own log\n"
		"Exit codes: 0 done (also when the target exited), 1 bad usage, 2 target problem\n"
		"(no such process, no memprof probes, corrupt ELF), 3 not privileged or kernel\n"
		"without BTF/uprobes, 4 BPF or output failure.\n",
		MEMPROF_PROBE_DEFAULT_RATE, MEMPROF_MAX_BLOCKS);
}

static int die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("memprof-bpf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	char *end;
	long pid;

	*o = (struct options){
	    .view = MEMPROF_VIEW_ALLOC, .rate = MEMPROF_PROBE_DEFAULT_RATE, .format = FMT_AUTO};
	if (argc < 3 || strcmp(argv[1], "attach")) {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			usage(stdout);
			exit(EXIT_OK);
		}
		usage(stderr);
		return -1;
	}
	errno = 0;
	pid = strtol(argv[2], &end, 10);
	if (errno || *end || pid <= 0 || pid > INT_MAX) {
		die(EXIT_USAGE, "bad pid '%s'", argv[2]);
		return -1;
	}
	o->pid = (pid_t)pid;
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-v")) {
			verbose = 1;
			continue;
		}
		if (!strcmp(a, "--no-dwarf")) {
			o->no_dwarf = 1;
			continue;
		}
		if (!v) {
			die(EXIT_USAGE, "option %s needs a value (see --help)", a);
			return -1;
		}
		i++;
		if (!strcmp(a, "-d")) {
			o->seconds = strtod(v, &end);
			if (*end || !(o->seconds > 0)) {
				die(EXIT_USAGE, "bad duration '%s'", v);
				return -1;
			}
		} else if (!strcmp(a, "-o")) {
			if (o->n_out == OUTPUT_MAX_FILES) {
				die(EXIT_USAGE, "at most %d -o files", OUTPUT_MAX_FILES);
				return -1;
			}
			o->out_paths[o->n_out++] = v;
		} else if (!strcmp(a, "--format")) {
			int f = output_format_parse(v);

			if (f < 0) {
				die(EXIT_USAGE, "unknown format '%s' (folded, pprof, svg, text)",
				    v);
				return -1;
			}
			o->format = f;
		} else if (!strcmp(a, "--lifetimes")) {
			o->lifetimes_path = v;
		} else if (!strcmp(a, "--timeline")) {
			o->timeline_path = v;
		} else if (!strcmp(a, "--all-views")) {
			o->all_views_dir = v;
		} else if (!strcmp(a, "--view")) {
			int view = memprof_view_parse(v);

			if (view < 0) {
				die(EXIT_USAGE, "unknown view '%s' (alloc, live, promoted, short)",
				    v);
				return -1;
			}
			o->view = view;
		} else if (!strcmp(a, "--rate")) {
			o->rate = strtod(v, &end);
			if (*end || !(o->rate > 0 && o->rate <= 1)) {
				die(EXIT_USAGE, "bad rate '%s' (a rate per word, in (0, 1])", v);
				return -1;
			}
		} else if (!strcmp(a, "--max-blocks")) {
			unsigned long n = strtoul(v, &end, 10);

			if (*end || *v == '-' || n == 0 || n > UINT32_MAX) {
				die(EXIT_USAGE, "bad block count '%s'", v);
				return -1;
			}
			o->max_blocks = (uint32_t)n;
		} else {
			die(EXIT_USAGE, "unknown option '%s' (see --help)", a);
			return -1;
		}
	}
	return 0;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return verbose ? vfprintf(stderr, fmt, ap) : 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CLOCK_MONOTONIC in nanoseconds, the clock of bpf_ktime_get_ns. */
static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A timeline point, if one is due (or forced); a failure is said once. */
static void timeline_poll(struct timeline *tl, const struct tracer *tr, int force)
{
	static int noted;

	if (!tl || !tl->pts)
		return;
	if (timeline_sample(tl, mono_ns(), tr->aggs, tracer_n_stacks(tr),
			    tracer_counter(tr, MEMPROF_CNT_GCS), force) < 0 &&
	    !noted) {
		noted = 1;
		fprintf(stderr, "memprof-bpf: note: out of memory: the timeline stops here\n");
	}
}

/* Write the requested rate, after checking the control block's magic. */
static int request_rate(const struct options *o, const struct target *t)
{
	struct memprof_probe_control ctl;
	int rc;

	if (!t->control_addr) {
		fprintf(stderr,
			"memprof-bpf: note: no %s symbol in process %d: its rate cannot be set\n",
			MEMPROF_PROBE_CONTROL_SYMBOL, (int)o->pid);
		return EXIT_OK;
	}
	rc = control_read(o->pid, t->control_addr, &ctl);
	if (rc)
		return die(rc == -EPERM ? EXIT_DENIED : EXIT_TARGET,
			   "cannot read the control block of process %d: %s", (int)o->pid,
			   strerror(-rc));
	if (ctl.magic != MEMPROF_PROBE_CONTROL_MAGIC)
		return die(EXIT_TARGET, "process %d: %s has a bad magic (corrupt or foreign)",
			   (int)o->pid, MEMPROF_PROBE_CONTROL_SYMBOL);
	if (ctl.abi_version != MEMPROF_PROBE_ABI_VERSION)
		return die(EXIT_TARGET, "process %d: probe ABI version %u, this tracer knows %u",
			   (int)o->pid, ctl.abi_version, MEMPROF_PROBE_ABI_VERSION);
	rc = control_write_rate(o->pid, t->control_addr, o->rate);
	if (rc)
		return die(EXIT_TARGET, "cannot write the requested rate into process %d: %s",
			   (int)o->pid, strerror(-rc));
	return EXIT_OK;
}

/* Once the host has picked up the attach: say what rate is in force. */
static int report_rate(const struct options *o, const struct target *t)
{
	struct memprof_probe_control ctl;

	if (!t->control_addr || control_read(o->pid, t->control_addr, &ctl) || !ctl.active_rate)
		return 0;
	if (ctl.flags & MEMPROF_PROBE_F_IN_PROCESS)
		fprintf(stderr,
			"memprof-bpf: note: an in-process profile is sampling at rate %g; you "
			"observe its samples at that rate\n",
			ctl.active_rate);
	else if (ctl.active_rate != o->rate)
		fprintf(
		    stderr,
		    "memprof-bpf: note: the target samples at rate %g, not the %g asked (another "
		    "tracer asked first); estimates use the rate in force\n",
		    ctl.active_rate, o->rate);
	else if (verbose)
		fprintf(stderr, "memprof-bpf: target sampling at rate %g\n", ctl.active_rate);
	return 1;
}

/*
 * Is a sample semaphore down although this tracer is attached?  The kernel
 * keeps one count per probe and process, not one per tracer: when another
 * tracer of the same process detaches, it lowers the semaphore under us.
 */
static int semaphore_lost(const struct target *t)
{
	for (size_t i = 0; i < t->n_files; i++) {
		unsigned short v;

		if (t->files[i].sample_semaphore &&
		    !semaphore_read(t->pid, t->files[i].sample_semaphore, &v) && v == 0)
			return 1;
	}
	return 0;
}

/*
 * Say once that the target stopped sampling under us.  Attaching again
 * would not help: the kernel still holds this tracer's breakpoint, so it
 * would not raise the semaphore, and unregistering with the semaphore at
 * zero makes it leak the uprobe.
 */
static void note_semaphore_lost(pid_t pid, int *noted)
{
	if (*noted)
		return;
	*noted = 1;
	fprintf(stderr,
		"memprof-bpf: note: process %d's memprof sample semaphore dropped while this "
		"tracer was attached (another tracer of it detached?): it stopped sampling; the "
		"output covers the time before\n",
		(int)pid);
}

static void refresh_maps(pid_t pid, struct symbolizer *sym)
{
	struct proc_maps maps;

	if (proc_maps_read(pid, &maps))
		return;
	/* A process that exited meanwhile shows no mappings: keep the last ones. */
	if (maps.n)
		symbolizer_set_maps(sym, &maps);
	else
		proc_maps_free(&maps);
}

/* Returns 1 if the target exited. */
static int trace_loop(const struct options *o, const struct target *t, struct tracer *tr,
		      struct symbolizer *sym, struct timeline *tl)
{
	double end = o->seconds > 0 ? now_s() + o->seconds : 0;
	int rate_reported = 0, lost_noted = 0;

	for (unsigned poll = 1; !stop_requested; poll++) {
		struct timespec pause = {0, POLL_INTERVAL_MS * 1000000L};

		nanosleep(&pause, NULL);
		if (proc_exited(o->pid))
			return 1;
		if (!rate_reported)
			rate_reported = report_rate(o, t);
		if (!lost_noted && semaphore_lost(t) && !proc_exited(o->pid))
			note_semaphore_lost(o->pid, &lost_noted);
		if (poll % BLOCKS_READ_POLLS == 0 && tracer_read_blocks(tr) && verbose)
			fprintf(stderr, "memprof-bpf: cannot read the block map: %s\n",
				strerror(errno));
		if (poll % MAPS_REFRESH_POLLS == 0)
			refresh_maps(o->pid, sym);
		timeline_poll(tl, tr, 0);
		if (end && now_s() >= end)
			break;
	}
	return 0;
}

static int write_output(const struct options *o, struct tracer *tr, struct symbolizer *sym,
			const struct timespec *start, const struct lifetime_input *life,
			const struct timeline *tl)
{
	struct timespec now;
	struct output_request r = {
	    .n_paths = o->n_out,
	    .all_views_dir = o->all_views_dir,
	    .format = o->format,
	    .dsym_flags = o->no_dwarf ? DSYM_NO_DWARF : 0,
	    .meta = {.pid = o->pid, .rate = o->rate, .view = o->view, .verbose = verbose},
	    .lifetimes = life,
	    .lifetimes_path = o->lifetimes_path,
	    .timeline = tl,
	    .timeline_path = o->timeline_path};

	memcpy(r.paths, o->out_paths, sizeof(r.paths));
	clock_gettime(CLOCK_REALTIME, &now);
	r.meta.time_ns = (int64_t)start->tv_sec * 1000000000 + start->tv_nsec;
	r.meta.duration_ns = ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec) - r.meta.time_ns;
	return output_write(&r, tr->stacks, tr->aggs, tracer_n_stacks(tr), sym);
}

static void report_counters(const struct tracer *tr)
{
	uint64_t drops[] = {
	    tracer_counter(tr, MEMPROF_CNT_DROP_BLOCKS_FULL),
	    tracer_counter(tr, MEMPROF_CNT_DROP_STACKS_FULL),
	    tracer_counter(tr, MEMPROF_CNT_DROP_STACK_HASH),
	    tracer_counter(tr, MEMPROF_CNT_DROP_STACK_READ),
	    tracer_counter(tr, MEMPROF_CNT_DROP_STACK_COLLIDE),
	};
	uint64_t dropped = 0;
	uint64_t orphans = tracer_counter(tr, MEMPROF_CNT_ORPHAN_PROMOTES) +
			   tracer_counter(tr, MEMPROF_CNT_ORPHAN_DEALLOCS);
	uint64_t oldest_ns = 0, now;
	struct timespec ts;

	for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
		dropped += drops[i];
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	for (size_t i = 0; i < tr->n_blocks; i++)
		if (now > tr->blocks[i].b.alloc_ns && now - tr->blocks[i].b.alloc_ns > oldest_ns)
			oldest_ns = now - tr->blocks[i].b.alloc_ns;
	fprintf(stderr,
		"memprof-bpf: stats: samples %" PRIu64 " promotes %" PRIu64 " deallocs %" PRIu64
		" gcs %" PRIu64 " orphan_ids %" PRIu64 " double_promotes %" PRIu64
		" duplicate_ids %" PRIu64 " dropped %" PRIu64
		" live_blocks %zu oldest_live_ms %" PRIu64 " late_orphan_ids %" PRIu64 "\n",
		tracer_counter(tr, MEMPROF_CNT_SAMPLES), tracer_counter(tr, MEMPROF_CNT_PROMOTES),
		tracer_counter(tr, MEMPROF_CNT_DEALLOCS), tracer_counter(tr, MEMPROF_CNT_GCS),
		orphans, tracer_counter(tr, MEMPROF_CNT_DOUBLE_PROMOTES),
		tracer_counter(tr, MEMPROF_CNT_DUPLICATE_IDS), dropped, tr->n_blocks,
		oldest_ns / 1000000, tracer_counter(tr, MEMPROF_CNT_LATE_ORPHANS));
	if (dropped)
		fprintf(stderr,
			"memprof-bpf: note: maps full or reads failed, samples dropped: block map "
			"full %" PRIu64 ", stack table full %" PRIu64 ", stack hash full %" PRIu64
			", stack unreadable %" PRIu64 ", stack hash collision %" PRIu64 "\n",
			drops[0], drops[1], drops[2], drops[3], drops[4]);
	if (orphans)
		fprintf(stderr,
			"memprof-bpf: note: %" PRIu64 " promote/dealloc events named blocks this "
			"tracer never saw sampled (sampled before it attached, for another tracer "
			"or an "
			"in-process profile)\n",
			orphans);
	if (tracer_counter(tr, MEMPROF_CNT_TRUNCATED_STACKS))
		fprintf(stderr, "memprof-bpf: note: %" PRIu64 " stacks were cut to %d frames\n",
			tracer_counter(tr, MEMPROF_CNT_TRUNCATED_STACKS), MEMPROF_STACK_DEPTH);
}

static int run(const struct options *o, struct symbolizer *sym)
{
	char err[ERR_LEN];
	struct target t;
	struct tracer tr;
	struct timespec start;
	struct timeline tl = {0};
	struct lifetime_input life;
	int64_t censor_ns;
	int code, exited;

	if (kill(o->pid, 0) && errno == ESRCH)
		return die(EXIT_TARGET, "no process with pid %d", (int)o->pid);
	if (environ_check_privileges(err, sizeof(err)) || environ_check_kernel(err, sizeof(err)))
		return die(EXIT_DENIED, "%s", err);
	switch (target_scan(o->pid, sym, &t, err, sizeof(err))) {
	case TARGET_OK:
		break;
	case TARGET_NO_ACCESS:
		target_free(&t);
		return die(EXIT_DENIED, "%s", err);
	case TARGET_ERROR:
		target_free(&t);
		return die(EXIT_FAILED, "%s", err);
	default:
		target_free(&t);
		return die(EXIT_TARGET, "%s", err);
	}
	code = request_rate(o, &t);
	if (code) {
		target_free(&t);
		return code;
	}
	switch (tracer_open(&tr, o->pid, o->max_blocks, err, sizeof(err))) {
	case TRACER_OK:
		code = EXIT_OK;
		break;
	case TRACER_DENIED:
		code = die(EXIT_DENIED, "%s", err);
		break;
	default:
		code = die(EXIT_FAILED, "%s", err);
	}
	if (!code && tracer_attach(&tr, &t, err, sizeof(err)) != TRACER_OK)
		code = die(proc_exited(o->pid) ? EXIT_TARGET : EXIT_FAILED, "%s", err);
	if (code) {
		tracer_close(&tr);
		target_free(&t);
		return code;
	}
	if (verbose)
		fprintf(stderr, "memprof-bpf: attached to %zu probe file(s) of process %d\n",
			t.n_files, (int)o->pid);
	clock_gettime(CLOCK_REALTIME, &start);
	if (o->timeline_path) {
		if (timeline_init(&tl, mono_ns(), TIMELINE_INTERVAL_MS * 1000000LL,
				  TIMELINE_MAX_POINTS))
			fprintf(stderr, "memprof-bpf: note: out of memory: no timeline\n");
		timeline_poll(&tl, &tr, 1);
	}
	exited = trace_loop(o, &t, &tr, sym, o->timeline_path ? &tl : NULL);
	/*
	 * Blocks still in the block map after the detach were alive now (the
	 * dealloc program goes after this): their lifetimes are censored here.
	 */
	censor_ns = mono_ns();
	if (o->timeline_path)
		timeline_poll(&tl, &tr, 1);
	tracer_detach(&tr); /* the target's semaphores drop: it stops sampling */
	if (exited)
		fprintf(stderr,
			"memprof-bpf: note: process %d exited; writing what was collected\n",
			(int)o->pid);
	tracer_read_blocks(&tr);
	life = (struct lifetime_input){.hists = tr.lifetimes,
				       .n_stacks = tracer_n_stacks(&tr),
				       .blocks = tr.blocks,
				       .n_blocks = tr.n_blocks,
				       .now_ns = (uint64_t)censor_ns};
	code = write_output(o, &tr, sym, &start, &life, &tl);
	timeline_free(&tl);
	report_counters(&tr);
	tracer_close(&tr);
	target_free(&t);
	return code;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct symbolizer *sym;
	struct options o;
	int code;

	if (parse_options(argc, argv, &o))
		return EXIT_USAGE;
	libbpf_set_print(libbpf_log);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sym = symbolizer_new();
	if (!sym)
		return die(EXIT_FAILED, "out of memory");
	code = run(&o, sym);
	symbolizer_free(sym);
	return code;
}
