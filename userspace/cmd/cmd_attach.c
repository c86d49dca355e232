/*
 * memprof-bpf attach PID [PID...]: trace the memprof probes of running
 * processes and write what they allocated, by call stack; with --every,
 * also a snapshot per interval into a directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include <linux/types.h>
#include "memprof_probe_abi.h"
#include "session/session.h"

static const char short_opts[] = ":d:o:vh";
static const struct option long_opts[] = {
    ATTACH_SHARED_LONG_OPTS,
    {"all-views", required_argument, NULL, OPT_ALL_VIEWS},
    {"every", required_argument, NULL, OPT_EVERY},
    {"snapshot-dir", required_argument, NULL, OPT_SNAPSHOT_DIR},
    {"lifetimes", required_argument, NULL, OPT_LIFETIMES},
    {"timeline", required_argument, NULL, OPT_TIMELINE},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: memprof-bpf attach PID [PID...] [-d SECONDS] [-o FILE] [--view "
	    "alloc|live|promoted|short|peak]\n"
	    "                             [--all-views DIR] [--rate R] [--max-blocks N]\n"
	    "                             [--max-stacks N] [-v]\n"
	    "                             [--format folded|pprof|svg|text|json] [--no-dwarf]\n"
	    "                             [--every SECONDS --snapshot-dir DIR]\n"
	    "                             [--no-inject] [--inject-malloc] [--preload LIB]\n"
	    "                             [--ready-file FILE]\n"
	    "                             [--lifetimes FILE.csv] [--timeline FILE.svg|FILE.csv]\n"
	    "                             [--lines] [--short-names] [--by-domain] [--native]\n"
	    "                             [--skip-frames REGEX]\n"
	    "Traces the memprof USDT probes of process PID and writes what it allocated, by\n"
	    "call stack, in estimated bytes (to FILE or stdout; with --all-views,\n"
	    "DIR/<view>.folded for every view).  Stops after -d SECONDS, on SIGINT, SIGTERM\n"
	    "or SIGHUP, or when PID exits.  Outputs are opened before tracing and replaced\n"
	    "whole at the end; if writing fails, the profile goes to a file in $TMPDIR (or\n"
	    "/tmp), and the error names it.  With several PIDs, every stack starts with a frame "
	    "naming\n"
	    "its process, \"comm (pid)\", and pprof samples carry a pid label.  A dynamically\n"
	    "linked process without the probes gets the malloc host (libmemprof-preload.so)\n"
	    "loaded into it first, without a restart; a CPython 3.11 gets the Python host\n"
	    "(libmemprof-python.so).\n"
	    "  -d, --duration SECONDS  stop after SECONDS\n"
	    "  -o, --output FILE  write FILE (repeatable; - is standard output)\n"
	    "  --format F folded stacks (default), pprof (gzipped profile.proto, every view),\n"
	    "             svg (interactive flame graph of --view), text (report with 95%%\n"
	    "             intervals), json (every view, stack and interval, the lifetimes).\n"
	    "             A known extension of -o FILE wins over it: .pb.gz or .pprof,\n"
	    "             .svg, .txt, .json, .folded; --format applies to standard output,\n"
	    "             snapshots and other names (folded without it)\n"
	    "  --no-dwarf names from symbol tables only (no debug files, lines, inlines)\n"
	    "  --lines    folded stacks: frames read \"func (file:line)\" where the debug\n"
	    "             information gives a line (the text report and the CSVs always\n"
	    "             give the site's file and line)\n"
	    "  --short-names  C++ template arguments as <...> in folded, text and CSV names\n"
	    "             (std::vector<...>::push_back)\n"
	    "  --by-domain  OCaml 5: every stack starts with a frame \"domain N\", the domain\n"
	    "             that allocated (pprof samples always carry a domain label)\n"
	    "  --native   Python programs: keep the native frames between Python frames\n"
	    "             (by default a stack is the native frames down to the innermost\n"
	    "             Python function, then the Python frames)\n"
	    "  --skip-frames REGEX  the allocation site (text report, CSVs, timeline) is the\n"
	    "             innermost frame that is not the allocator's, the C++ standard\n"
	    "             library's, a known wrapper's (xmalloc, g_malloc, PyMem_*, ...) or a\n"
	    "             library's whose frames all count as the call into it (SQLite), nor\n"
	    "             one whose function name without its parameters matches REGEX\n"
	    "             whole (POSIX extended; repeatable).  pprof's drop_frames holds\n"
	    "             the same rule\n"
	    "  --view V   alloc: every sampled allocation (default); live: blocks alive at\n"
	    "             the end (in a garbage-collected host: not yet reclaimed, so dead\n"
	    "             blocks count until the collector frees them); promoted: blocks\n"
	    "             promoted; short: blocks freed while young; peak: the live blocks\n"
	    "             when the total live memory read (every %d ms) was highest\n"
	    "  --rate R   sampling rate per word asked of the target (default %g); the\n"
	    "             malloc host samples per byte at R / 8, runtimes per word\n"
	    "  --max-blocks N  tracked blocks the kernel side holds at once (default %d,\n"
	    "             in home slots sized from the target's resident memory and an\n"
	    "             overflow allocated on use; given, the home slots are N);\n"
	    "             when full, samples still count in alloc and a note reports drops\n"
	    "  --max-stacks N  distinct call stacks kept, up to %d frames each (default\n"
	    "             %d: about %llu MiB of kernel memory from the start, and %.1f KiB\n"
	    "             more per stack in use, its frames (%d on average) and lifetimes\n"
	    "             included); once the table or its frames are full, a sample\n"
	    "             keeps its innermost %d frames in a second\n"
	    "             table of %d stacks, under a [stack-table-full] root, and a note\n"
	    "             counts them\n"
	    "  --every SECONDS  also write a snapshot every SECONDS into --snapshot-dir DIR,\n"
	    "             named by its UTC time (YYYYmmddTHHMMSS.mmmZ.ext, in --format):\n"
	    "             alloc, promoted and short over the interval, live at its end\n"
	    "  --lifetimes FILE.csv  lifetime percentiles per allocation site, from sample to\n"
	    "             death (blocks still alive: their age, a lower bound); with -v also\n"
	    "             each top site's histogram on stderr.  The text report, the SVG\n"
	    "             tooltips and pprof labels show the same percentiles\n"
	    "  --timeline FILE.svg|FILE.csv  estimated live bytes of the top sites over the\n"
	    "             attach: a stacked-area chart, or CSV (by the extension)\n"
	    "             With several PIDs a site is per process: \"site [comm (pid)]\",\n"
	    "             and the CSV files have a pid column (then the site's file, line)\n"
	    "  --no-inject  never load the malloc host: a process without probes is an error\n"
	    "  --inject-malloc  load the malloc host even into an OCaml program without\n"
	    "             probes (refused otherwise: it sees the runtime's heap chunks only)\n"
	    "             or a CPython (a 3.11 gets libmemprof-python.so, which sees pymalloc\n"
	    "             and names Python frames; other versions are refused)\n"
	    "  --preload LIB  the malloc host to load (default: libmemprof-preload.so next to\n"
	    "             this program, or in ../lib)\n"
	    "  --ready-file FILE  once every PID's probes are attached and its rate asked\n"
	    "             for, write FILE (the PIDs, one a line; replaced whole, removed at\n"
	    "             the start): a script waits for it, not for a time.  The target\n"
	    "             starts sampling at its next safe point\n"
	    "  -v, --verbose  verbose, with libbpf's own log\n"
	    "On a terminal, a status line shows the elapsed time, samples, live blocks and\n"
	    "drops.\n"
	    "Exit codes: 0 done (also when the target exited), 1 bad usage (also this\n"
	    "program's own PID, outputs that cannot work together), 2 target problem (no such\n"
	    "process, or one that exited while being attached, no memprof probes, corrupt\n"
	    "ELF, a process that cannot be injected), 3 not privileged (also: ptrace or\n"
	    "seccomp refuses the injection, an untrusted library) or kernel without\n"
	    "BTF/uprobes, 4 BPF or output failure.  The environment: man memprof-bpf.\n",
	    SESSION_POLL_MS, MEMPROF_PROBE_DEFAULT_RATE, MEMPROF_MAX_BLOCKS, MEMPROF_STACK_DEPTH,
	    MEMPROF_MAX_STACKS,
	    (unsigned long long)((tracer_stack_memory(MEMPROF_MAX_STACKS) + (1 << 19)) >> 20),
	    tracer_stack_memory_used() / 1024.0, MEMPROF_FRAMES_PER_STACK, MEMPROF_INNER_DEPTH,
	    MEMPROF_INNER_STACKS);
}

static int parse(int argc, char **argv, struct attach_opts *o)
{
	int rc = attach_opts_parse(o, argc, argv, short_opts, long_opts, usage);

	if (rc != EXIT_OK)
		return rc;
	if (optind >= argc)
		return cli_die(EXIT_USAGE, "attach needs a PID (see memprof-bpf attach --help)");
	if (attach_opts_pids(o, argc, argv, SESSION_MAX_PIDS))
		return EXIT_USAGE;
	if (o->every && !o->snapshot_dir)
		return cli_die(EXIT_USAGE, "--every needs --snapshot-dir DIR");
	if (o->snapshot_dir && !o->every)
		return cli_die(EXIT_USAGE, "--snapshot-dir needs --every SECONDS");
	if (attach_opts_outputs(o, 0))
		return EXIT_USAGE;
	return EXIT_OK;
}

/* Poll until -d, a signal, or every target gone; snapshots on the way. */
static int trace_loop(struct session *s, const struct attach_opts *o)
{
	double end = o->seconds > 0 ? s->start_mono + o->seconds : 0;
	double next_snap = o->every ? s->start_mono + o->every : 0, next_progress = 0;
	struct timespec snap_from = s->start;
	int code = EXIT_OK;

	for (unsigned poll = 1; !session_stop_requested; poll++) {
		struct timespec pause = {0, SESSION_GROW_MS * 1000000L};
		double now;

		for (int k = 0; k < SESSION_POLL_MS / SESSION_GROW_MS && !session_stop_requested;
		     k++) {
			nanosleep(&pause, NULL);
			if (k + 1 < SESSION_POLL_MS / SESSION_GROW_MS)
				session_grow(s);
		}
		/* A stop signal ends the sleep: no poll more before the detach. */
		if (session_stop_requested || !session_poll(s, poll))
			break;
		now = session_now();
		if (next_snap && now >= next_snap) {
			struct timespec t;

			clock_gettime(CLOCK_REALTIME, &t);
			session_progress_clear(s);
			code = session_snapshot(s, &snap_from);
			if (code)
				return code;
			snap_from = t;
			while (next_snap <= now)
				next_snap += o->every;
		}
		if (end && now >= end)
			break;
		if (now >= next_progress) {
			session_progress(s);
			next_progress = now + 1;
		}
	}
	if (o->every) {
		/* The last interval, once the probes are detached: the snapshots
		 * add up to the whole run. */
		session_detach(s);
		code = session_snapshot(s, &snap_from);
	}
	return code;
}

int cmd_attach(int argc, char **argv)
{
	struct output_request r = {0};
	struct output_files files;
	struct attach_opts o;
	struct session s;
	char err[PATH_MAX + 256];
	int code;

	code = parse(argc, argv, &o);
	if (code)
		return code;
	/*
	 * Every output is opened (the directories created) before the target
	 * is touched: a bad path fails now, with its reason, not after the
	 * tracing.
	 */
	if (o.snapshot_dir && outfile_make_dir(o.snapshot_dir, err, sizeof(err)))
		return cli_die(EXIT_FAILED, "%s", err);
	r.all_views_dir = o.all_views_dir;
	r.lifetimes_path = o.lifetimes_path;
	r.timeline_path = o.timeline_path;
	code = session_open(&s, &o, &r, &files, 1);
	if (code == SESSION_INTERRUPTED)
		return EXIT_OK;
	if (code)
		return code;
	s.progress = isatty(STDERR_FILENO);
	code = trace_loop(&s, &o);
	session_detach(&s);
	if (!code)
		code = session_write(&s, &r);
	session_report(&s);
	session_free(&s);
	output_files_close(&files);
	return code;
}
