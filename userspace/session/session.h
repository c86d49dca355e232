/*
 * A tracing session: one or more processes attached at once (each with its
 * own BPF object, links and symbolizer), polled together, detached
 * together, and written as one profile.  Used by attach and top.
 */
#ifndef MEMPROF_SESSION_H
#define MEMPROF_SESSION_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cli.h"
#include "output/output.h"
#include "output/peak.h"
#include "trace/target.h"
#include "trace/tracer.h"

#define SESSION_MAX_PIDS 16

/* The options of attach and top (each command takes the ones it lists). */
struct attach_opts {
	pid_t pids[SESSION_MAX_PIDS];
	int n_pids;
	double seconds;				 /* 0: until the targets exit or a signal */
	const char *out_paths[OUTPUT_MAX_FILES]; /* -o, repeatable */
	int n_out;
	const char *all_views_dir;
	enum memprof_view view;
	double rate;
	uint32_t max_blocks; /* 0: the default bound, the home slots sized from the target */
	uint32_t max_stacks; /* 0: the default size of the stack table */
	enum output_format format;
	int no_dwarf;
	unsigned names;	     /* PROFILE_NAME_*: --lines, --short-names, --by-domain, --native */
	int no_inject;	     /* refuse a process without probes instead of injecting */
	int inject_malloc;   /* the malloc host even into an OCaml program (ocaml_runtime.h) */
	const char *preload; /* library to inject, NULL: found next to the loader */
	/* --ready-file: removed at the start, written (the traced PIDs, one a
	 * line, whole by a rename) once every target's probes are attached and
	 * its rate requested; left in place at the end. */
	const char *ready_file;
	int verbose;
	double every; /* --every SECONDS: snapshots into snapshot_dir */
	const char *snapshot_dir;
	/* Lifetimes and the timeline (lifetimes.c, timeline.c) */
	const char *lifetimes_path; /* --lifetimes FILE.csv */
	const char *timeline_path;  /* --timeline FILE.svg|FILE.csv */
	/* top */
	unsigned long rows;
	int sort; /* enum memprof_view */
};

void attach_opts_init(struct attach_opts *o);
/* The long options attach and top share, which attach_opts_set handles
 * (with 'v' and 'h'): the head of each command's long_opts. */
#define ATTACH_SHARED_LONG_OPTS                                                                    \
	{"duration", required_argument, NULL, 'd'}, {"output", required_argument, NULL, 'o'},      \
	    {"format", required_argument, NULL, OPT_FORMAT},                                       \
	    {"view", required_argument, NULL, OPT_VIEW},                                           \
	    {"rate", required_argument, NULL, OPT_RATE},                                           \
	    {"max-blocks", required_argument, NULL, OPT_MAX_BLOCKS},                               \
	    {"max-stacks", required_argument, NULL, OPT_MAX_STACKS},                               \
	    {"no-dwarf", no_argument, NULL, OPT_NO_DWARF},                                         \
	    {"no-inject", no_argument, NULL, OPT_NO_INJECT},                                       \
	    {"inject-malloc", no_argument, NULL, OPT_INJECT_MALLOC},                               \
	    {"preload", required_argument, NULL, OPT_PRELOAD},                                     \
	    {"ready-file", required_argument, NULL, OPT_READY_FILE},                               \
	    {"skip-frames", required_argument, NULL, OPT_SKIP_FRAMES},                             \
	    {"lines", no_argument, NULL, OPT_LINES},                                               \
	    {"short-names", no_argument, NULL, OPT_SHORT_NAMES},                                   \
	    {"by-domain", no_argument, NULL, OPT_BY_DOMAIN}, {"verbose", no_argument, NULL, 'v'},  \
	    {"native", no_argument, NULL, OPT_NATIVE}, {"verbose", no_argument, NULL, 'v'},        \
	{                                                                                          \
		"help", no_argument, NULL, 'h'                                                     \
	}

/*
 * One option of attach or top (getopt_long's c and optarg).  0 when
 * handled, -1 after printing the one-line message, 1 when c is not one of
 * the shared options.
 */
int attach_opts_set(struct attach_opts *o, int c, const char *arg);
/* The operands: PIDs.  0, or -1 after a message. */
/*
 * The options of a command's argv with getopt_long, through
 * attach_opts_set; --help prints usage to stdout and exits 0.  EXIT_OK, or
 * EXIT_USAGE after a one-line message.  The operands start at optind.
 */
int attach_opts_parse(struct attach_opts *o, int argc, char **argv, const char *short_opts,
		      const struct option *long_opts, void (*usage)(FILE *));
int attach_opts_pids(struct attach_opts *o, int argc, char *const argv[], int max);
/*
 * The outputs asked for: at most one goes to standard output (-o -,
 * --lifetimes -, --timeline -), none when the command draws there itself
 * (stdout_taken: top), no binary pprof onto a terminal; and a note for each
 * file whose extension overrides --format.  0, or -1 after a message.
 */
int attach_opts_outputs(const struct attach_opts *o, int stdout_taken);

struct traced {
	pid_t pid;
	char name[64]; /* "comm (pid)" */
	struct symbolizer *sym;
	struct target t;
	struct tracer tr;
	int opened, exited, rate_reported, lost_noted, forgot_noted;
	int saw_tracer;	      /* its control block said it sampled for a tracer */
	int taken_over_noted; /* an in-process profile took over: said once */
	int probe_fd;	      /* environ_probe_uprobes's event, closed at the end (0: none) */
	struct memprof_stack_agg *snap_prev; /* --every: aggregates at the last snapshot */
	/* The rate requested before this tracer, put back if the attach fails. */
	double old_rate;
	int rate_written;
	/* What it did while traced: explains an empty profile. */
	unsigned polls, stopped_polls; /* polls, and those that found it stopped */
	int took_attach;	       /* its control block showed a rate in force */
	double active_rate;	       /* the last rate in force seen */
	/* Its program threads' CPU time at attach and while traced, and the
	 * whole process's at attach (procmaps.h's proc_program_cpu). */
	double cpu0, cpu_s, all_cpu0;
	uint64_t exit_ns; /* CLOCK_MONOTONIC ns when it was seen gone (0: alive) */
};

struct session {
	const struct attach_opts *o;
	struct traced procs[SESSION_MAX_PIDS];
	int n;
	struct timespec start; /* CLOCK_REALTIME at attach */
	double start_mono;
	int progress;	  /* a status line is shown on stderr (a terminal) */
	int progress_len; /* characters of the status line on screen */
	int detached;
	/* --timeline: live bytes of every process's stacks, one point per due
	 * poll (timeline.h); pts NULL: none. */
	struct timeline tl;
	int tl_noted; /* out of memory said once */
	/* The peak view (peak.h): the live view at the highest total read,
	 * over the whole attach and (--every) since the last snapshot. */
	struct peak peak, snap_peak;
	int peak_noted; /* out of memory said once */
};

/*
 * Set by SIGINT, SIGTERM or SIGHUP once session_signals() installed the
 * handlers.  SIGPIPE is ignored: a closed pipe on stdout is an output
 * error (EPIPE, exit 4, the profile kept in a fallback file).
 */
extern volatile sig_atomic_t session_stop_requested;
void session_signals(void);

/*
 * Check the machine and the rights to probe every process of o, then scan
 * and attach them.  An exit code: EXIT_OK, or the code of the first
 * failure (one line printed; what was attached is detached again and the
 * rates requested before are put back).  Open the outputs before.
 */
int session_start(struct session *s, const struct attach_opts *o);
/*
 * Open the outputs of o (-o, with the rest of r as the command set it;
 * with_stdout: "-" is standard output) before the targets are touched, so
 * that a bad path fails at once, then install the signals and start the
 * session.  EXIT_OK, or an exit code after its one line (the files closed).
 */
int session_open(struct session *s, const struct attach_opts *o, struct output_request *r,
		 struct output_files *files, int with_stdout);
/*
 * What session_open and session_start return when SIGINT, SIGTERM or SIGHUP
 * came during the start: everything was undone (rates, probes, an
 * injection left to finish by itself), one note said so, no output is
 * written, and the command exits EXIT_OK.
 */
#define SESSION_INTERRUPTED (-1)
/*
 * One poll (every SESSION_POLL_MS): targets alive, rate notes, semaphores,
 * mappings, the block maps every few polls.  Returns how many targets are
 * still alive (notes the ones that exited).
 */
#define SESSION_POLL_MS 100
int session_poll(struct session *s, unsigned poll);
/*
 * Between two polls, every SESSION_GROW_MS: grow the stack tables of every
 * traced process ahead of their use (tracer_sync), so a burst of new
 * stacks finds their chunks created sooner than the next poll.
 */
#define SESSION_GROW_MS 10
void session_grow(struct session *s);
/*
 * Detach every process and read the block maps a last time.  Notes a
 * process that exited, and one that took no sample (why: stopped, never
 * allocated, a rate too low for the time).
 */
void session_detach(struct session *s);
/*
 * Write what the session collected as r asks (r->meta filled here; the
 * lifetimes, --lifetimes and --timeline from the session's options).
 */
int session_write(struct session *s, struct output_request *r);
/* The "memprof-bpf: stats:" line(s) and the notes on drops. */
void session_report(const struct session *s);
void session_free(struct session *s);

/* Totals over the processes: samples, live blocks, drops. */
void session_totals(const struct session *s, uint64_t *samples, uint64_t *live, uint64_t *drops);

/* A note on stderr (clears the status line first). */
void session_note(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The status line (only on a terminal), and its removal. */
void session_progress(struct session *s);
void session_progress_clear(struct session *s);

/* --every: write the snapshot of the interval since the last one. */
int session_snapshot(struct session *s, const struct timespec *from);

/* CLOCK_MONOTONIC seconds */
static inline double session_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
