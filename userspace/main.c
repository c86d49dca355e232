/*
 * memprof-bpf: attach to a process's memprof USDT probes and write what it
 * allocates, by call stack, as folded stacks.  See usage() for the options
 * and the exit codes.
 */
#include <bpf/libbpf.h>
#include <ctype.h>
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
#include "outfile.h"
#include "target.h"
#include "tracer.h"

/* How often the maps are read, and the target's mappings re-read. */
#define POLL_INTERVAL_MS 100
#define MAPS_REFRESH_POLLS 1
/* How often the block map is copied (live blocks and their ages). */
#define BLOCKS_READ_POLLS 5
#define ERR_LEN 512
/*
 * A generous allocation throughput, to bound the samples a target could
 * have given at a very low rate: bytes allocated per second of its CPU time.
 */
#define GENEROUS_ALLOC_BYTES_PER_CPU_S (4.0 * 1024 * 1024 * 1024)

static volatile sig_atomic_t stop_requested;
static int verbose;

struct options {
	pid_t pid;
	double seconds; /* 0: until the target exits or a signal */
	const char *out_path;
	const char *all_views_dir;
	enum memprof_view view;
	double rate;
	uint32_t max_blocks; /* 0: the default size of the block map */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memprof-bpf attach PID [-d SECONDS] [-o FILE] [--view "
		"alloc|live|promoted|short]\n"
		"                             [--all-views DIR] [--rate R] [--max-blocks N] [-v]\n"
		"Traces the memprof USDT probes of process PID and writes folded stacks weighted\n"
		"in estimated bytes (to FILE or stdout; with --all-views, DIR/<view>.folded for\n"
		"every view).  Stops after -d SECONDS, on SIGINT/SIGTERM/SIGHUP, or when PID\n"
		"exits.  Outputs are opened before tracing and replaced whole at the end; if\n"
		"writing fails, the profile goes to a file in $TMPDIR (or /tmp) and is named.\n"
		"  --view V   alloc: every sampled allocation (default); live: blocks alive at\n"
		"             the end; promoted: blocks promoted; short: blocks freed while young\n"
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

/* The options that take a value. */
static int takes_value(const char *a)
{
	static const char *const with_value[] = {"-d",	   "-o",     "--all-views",
						 "--view", "--rate", "--max-blocks"};

	for (size_t i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
		if (!strcmp(a, with_value[i]))
			return 1;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	char *end;
	long pid;

	*o = (struct options){.view = MEMPROF_VIEW_ALLOC, .rate = MEMPROF_PROBE_DEFAULT_RATE};
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
	/* Digits only: no sign, no spaces. */
	if (!isdigit((unsigned char)argv[2][0]) || errno || *end || pid <= 0 || pid > INT_MAX) {
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
		if (!takes_value(a)) {
			die(EXIT_USAGE, "unknown option '%s' (see --help)", a);
			return -1;
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
			o->out_path = v;
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
		}
	}
	if (o->out_path && o->all_views_dir) {
		die(EXIT_USAGE, "-o and --all-views exclude each other (--all-views DIR writes "
				"DIR/<view>.folded)");
		return -1;
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

/*
 * Write the requested rate, after checking the control block's magic.
 * *old gets the rate that was requested before (put back on failure), and
 * *written says whether this tracer wrote one.
 */
static int request_rate(const struct options *o, const struct target *t, double *old, int *written)
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
	*old = ctl.requested_rate;
	rc = control_write_rate(o->pid, t->control_addr, o->rate);
	*written = !rc;
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

/* What the target did while traced: explains an empty profile. */
struct trace_seen {
	unsigned polls, stopped_polls; /* polls, and those that found it stopped */
	int took_attach;	       /* its control block showed a rate in force */
	double active_rate;	       /* the last rate in force seen */
	double cpu_s;		       /* its CPU time while traced */
	double seconds;		       /* time traced */
};

static void seen_poll(const struct options *o, const struct target *t, struct trace_seen *seen)
{
	struct memprof_probe_control ctl;
	char state;
	double cpu;

	seen->polls++;
	if (!proc_state(o->pid, &state, &cpu) && (state == 'T' || state == 't'))
		seen->stopped_polls++;
	if (t->control_addr && !control_read(o->pid, t->control_addr, &ctl) && ctl.active_rate) {
		seen->took_attach = 1;
		seen->active_rate = ctl.active_rate;
	}
}

/* Returns 1 if the target exited. */
static int trace_loop(const struct options *o, const struct target *t, struct tracer *tr,
		      struct symbolizer *sym, struct trace_seen *seen)
{
	double start = now_s(), end = o->seconds > 0 ? start + o->seconds : 0, cpu0 = 0, cpu1;
	int rate_reported = 0, lost_noted = 0, exited = 0;
	char state;

	proc_state(o->pid, &state, &cpu0);
	for (unsigned poll = 1; !stop_requested; poll++) {
		struct timespec pause = {0, POLL_INTERVAL_MS * 1000000L};

		nanosleep(&pause, NULL);
		if (proc_exited(o->pid)) {
			exited = 1;
			break;
		}
		seen_poll(o, t, seen);
		if (!rate_reported)
			rate_reported = report_rate(o, t);
		if (!lost_noted && semaphore_lost(t) && !proc_exited(o->pid))
			note_semaphore_lost(o->pid, &lost_noted);
		if (poll % BLOCKS_READ_POLLS == 0 && tracer_read_blocks(tr) && verbose)
			fprintf(stderr, "memprof-bpf: cannot read the block map: %s\n",
				strerror(errno));
		if (poll % MAPS_REFRESH_POLLS == 0)
			refresh_maps(o->pid, sym);
		if (end && now_s() >= end)
			break;
	}
	seen->seconds = now_s() - start;
	if (!proc_state(o->pid, &state, &cpu1))
		seen->cpu_s = cpu1 - cpu0;
	return exited;
}

/* The outputs, opened before tracing: -o FILE or stdout, or one file per view. */
struct outputs {
	struct outfile files[MEMPROF_N_VIEWS];
	int views[MEMPROF_N_VIEWS];
	int n;
};

static void outputs_close(struct outputs *out)
{
	for (int i = 0; i < out->n; i++)
		outfile_close(&out->files[i]);
	out->n = 0;
}

static int outputs_open(const struct options *o, struct outputs *out)
{
	char path[PATH_MAX], err[ERR_LEN];

	memset(out, 0, sizeof(*out));
	if (!o->all_views_dir) {
		out->views[0] = o->view;
		if (outfile_open(&out->files[0], o->out_path, err, sizeof(err))) {
			outfile_close(&out->files[0]);
			return die(EXIT_FAILED, "%s", err);
		}
		out->n = 1;
		return EXIT_OK;
	}
	if (outfile_make_dir(o->all_views_dir, err, sizeof(err)))
		return die(EXIT_FAILED, "%s", err);
	for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
		snprintf(path, sizeof(path), "%s/%s.folded", o->all_views_dir,
			 memprof_view_names[v]);
		out->views[v] = v;
		if (outfile_open(&out->files[v], path, err, sizeof(err))) {
			outfile_close(&out->files[v]);
			outputs_close(out);
			return die(EXIT_FAILED, "%s", err);
		}
		out->n = v + 1;
	}
	return EXIT_OK;
}

struct view_writer {
	struct tracer *tr;
	struct symbolizer *sym;
	enum memprof_view view;
};

static int write_folded(FILE *f, void *ctx)
{
	struct view_writer *w = ctx;

	return folded_write(f, w->tr->stacks, w->tr->aggs, tracer_n_stacks(w->tr), w->sym,
			    w->view) < 0
		   ? -1
		   : 0;
}

/* Every output; a failed one keeps its profile in a fallback file. */
static int write_output(struct outputs *out, struct tracer *tr, struct symbolizer *sym)
{
	char err[ERR_LEN + PATH_MAX], tag[64];
	int code = EXIT_OK;

	for (int i = 0; i < out->n; i++) {
		struct view_writer w = {tr, sym, out->views[i]};

		snprintf(tag, sizeof(tag), "%s.folded", memprof_view_names[out->views[i]]);
		if (outfile_write(&out->files[i], write_folded, &w, tag, err, sizeof(err)))
			code = die(EXIT_FAILED, "%s", err);
	}
	return code;
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
	uint64_t unexplained = tracer_counter(tr, MEMPROF_CNT_ORPHAN_PROMOTES) +
			       tracer_counter(tr, MEMPROF_CNT_ORPHAN_DEALLOCS);
	uint64_t map_full = tracer_counter(tr, MEMPROF_CNT_ORPHAN_UNTRACKED);
	uint64_t early = tracer_counter(tr, MEMPROF_CNT_ORPHAN_EARLY);
	uint64_t late = tracer_counter(tr, MEMPROF_CNT_LATE_ORPHANS);
	uint64_t orphans = unexplained + map_full + early;
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
		" live_blocks %zu oldest_live_ms %" PRIu64 " late_orphan_ids %" PRIu64
		" orphans_map_full %" PRIu64 " orphans_before_attach %" PRIu64 "\n",
		tracer_counter(tr, MEMPROF_CNT_SAMPLES), tracer_counter(tr, MEMPROF_CNT_PROMOTES),
		tracer_counter(tr, MEMPROF_CNT_DEALLOCS), tracer_counter(tr, MEMPROF_CNT_GCS),
		orphans, tracer_counter(tr, MEMPROF_CNT_DOUBLE_PROMOTES),
		tracer_counter(tr, MEMPROF_CNT_DUPLICATE_IDS), dropped, tr->n_blocks,
		oldest_ns / 1000000, late, map_full, early);
	if (dropped)
		fprintf(stderr,
			"memprof-bpf: note: maps full or reads failed, samples dropped: block map "
			"full %" PRIu64 ", stack table full %" PRIu64 ", stack hash full %" PRIu64
			", stack unreadable %" PRIu64 ", stack hash collision %" PRIu64 "\n",
			drops[0], drops[1], drops[2], drops[3], drops[4]);
	/* Orphans (promote/dealloc of ids not tracked), by their true cause. */
	if (map_full)
		fprintf(stderr,
			"memprof-bpf: note: %" PRIu64
			" promote/dealloc events named blocks sampled "
			"while the block map was full (not tracked: raise --max-blocks)\n",
			map_full);
	if (early)
		fprintf(stderr,
			"memprof-bpf: note: %" PRIu64
			" promote/dealloc events named blocks sampled "
			"before this tracer attached (attached mid-run: an in-process profile or "
			"another tracer sampled them)\n",
			early);
	if (unexplained)
		fprintf(stderr,
			"memprof-bpf: note: %" PRIu64 " promote/dealloc events named blocks newer "
			"than this tracer's first sample that it never saw sampled (a lost sample "
			"probe, or a host whose block ids do not increase)\n",
			unexplained);
	if (late && verbose)
		fprintf(stderr,
			"memprof-bpf: %" PRIu64 " promote/dealloc events while detaching named "
			"blocks sampled after the sample probe was gone (late ids)\n",
			late);
	if (tracer_counter(tr, MEMPROF_CNT_TRUNCATED_STACKS))
		fprintf(stderr, "memprof-bpf: note: %" PRIu64 " stacks were cut to %d frames\n",
			tracer_counter(tr, MEMPROF_CNT_TRUNCATED_STACKS), MEMPROF_STACK_DEPTH);
}

/* The target took no sample: say why, in one note. */
static void note_empty(const struct options *o, const struct trace_seen *seen)
{
	double rate = seen->active_rate ? seen->active_rate : o->rate;
	double expected = rate * seen->cpu_s * GENEROUS_ALLOC_BYTES_PER_CPU_S / 8;

	if (seen->polls && seen->stopped_polls == seen->polls)
		fprintf(stderr,
			"memprof-bpf: note: no samples: process %d was stopped the whole %.1f s "
			"this tracer was attached (SIGSTOP or a debugger): it ran no code (kill "
			"-CONT it)\n",
			(int)o->pid, seen->seconds);
	else if (!seen->took_attach || seen->cpu_s <= 0)
		fprintf(stderr,
			"memprof-bpf: note: no samples: process %d never allocated in the %.1f s "
			"this tracer was attached (%s)\n",
			(int)o->pid, seen->seconds,
			seen->cpu_s <= 0
			    ? "it used no CPU time"
			    : "it never reached an allocation that takes up the attach");
	else if (expected < 1)
		fprintf(stderr,
			"memprof-bpf: note: no samples: the rate %g is too low for %.1f s: the "
			"%.2f s of CPU time process %d used, at a generous %.0f GiB allocated per "
			"CPU-second, give %.3g expected samples (raise --rate)\n",
			rate, seen->seconds, seen->cpu_s, (int)o->pid,
			GENEROUS_ALLOC_BYTES_PER_CPU_S / (1024.0 * 1024 * 1024), expected);
	else
		fprintf(stderr,
			"memprof-bpf: note: no samples: process %d sampled at rate %g for %.1f s "
			"and used %.2f s of CPU time, but took no sample (it allocated little; "
			"at most %.3g samples were possible)\n",
			(int)o->pid, rate, seen->seconds, seen->cpu_s, expected);
}

/* Put back the rate requested before this tracer, after a failure. */
static void restore_rate(const struct options *o, const struct target *t, double old)
{
	if (control_write_rate(o->pid, t->control_addr, old) && verbose)
		fprintf(stderr, "memprof-bpf: cannot restore the rate requested of process %d\n",
			(int)o->pid);
}

static int run(const struct options *o, struct symbolizer *sym)
{
	char err[ERR_LEN];
	struct trace_seen seen = {0};
	struct outputs out;
	struct target t;
	struct tracer tr;
	int code, exited, written = 0;
	double old_rate = 0;

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
	/* Everything that can fail before the target is touched, first. */
	code = outputs_open(o, &out);
	if (code) {
		target_free(&t);
		return code;
	}
	switch (tracer_open(&tr, o->pid, o->max_blocks, err, sizeof(err))) {
	case TRACER_OK:
		break;
	case TRACER_DENIED:
		code = die(EXIT_DENIED, "%s", err);
		break;
	default:
		code = die(EXIT_FAILED, "%s", err);
	}
	if (!code) {
		int probe = environ_probe_uprobes(o->pid, err, sizeof(err));

		if (probe)
			code = die(probe == -2 ? EXIT_TARGET : EXIT_DENIED, "%s", err);
	}
	if (!code)
		code = request_rate(o, &t, &old_rate, &written);
	if (!code && tracer_attach(&tr, &t, err, sizeof(err)) != TRACER_OK)
		code = die(proc_exited(o->pid) ? EXIT_TARGET : EXIT_FAILED, "%s", err);
	if (code) {
		tracer_close(&tr);
		if (written)
			restore_rate(o, &t, old_rate);
		outputs_close(&out);
		target_free(&t);
		return code;
	}
	if (verbose)
		fprintf(stderr, "memprof-bpf: attached to %zu probe file(s) of process %d\n",
			t.n_files, (int)o->pid);
	exited = trace_loop(o, &t, &tr, sym, &seen);
	tracer_detach(&tr); /* the target's semaphores drop: it stops sampling */
	if (exited)
		fprintf(stderr,
			"memprof-bpf: note: process %d exited; writing what was collected\n",
			(int)o->pid);
	else if (!tracer_counter(&tr, MEMPROF_CNT_SAMPLES))
		note_empty(o, &seen);
	tracer_read_blocks(&tr);
	code = write_output(&out, &tr, sym);
	report_counters(&tr);
	tracer_close(&tr);
	outputs_close(&out);
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
	sigaction(SIGHUP, &sa, NULL);
	/* A closed pipe on stdout is an output error (EPIPE), not a silent death. */
	signal(SIGPIPE, SIG_IGN);
	sym = symbolizer_new();
	if (!sym)
		return die(EXIT_FAILED, "out of memory");
	code = run(&o, sym);
	symbolizer_free(sym);
	return code;
}
