/*
 * What a session says on stderr (session.h): its notes, the status line,
 * why a profile is empty, the warning on lost data, the notes on orphans and
 * (with -v) the "memprof-bpf: stats:" line.
 */
#include "session_internal.h"
#include "trace/control.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/*
 * A generous allocation throughput, to bound the samples a target could
 * have given at a very low rate: bytes allocated per second of its CPU time.
 */
#define GENEROUS_ALLOC_BYTES_PER_CPU_S (4.0 * 1024 * 1024 * 1024)

void session_progress_clear(struct session *s)
{
	if (s->progress_len) {
		fputs("\r\033[K", stderr);
		s->progress_len = 0;
	}
}

void session_note(struct session *s, const char *fmt, ...)
{
	va_list ap;

	session_progress_clear(s);
	fputs("memprof-bpf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t drops_of(const struct tracer *tr)
{
	return tracer_counter(tr, MEMPROF_CNT_DROP_BLOCKS_FULL) +
	       tracer_counter(tr, MEMPROF_CNT_DROP_OVERFLOW_BEHIND) +
	       tracer_counter(tr, MEMPROF_CNT_DROP_STACKS_FULL) +
	       tracer_counter(tr, MEMPROF_CNT_DROP_STACK_HASH) +
	       tracer_counter(tr, MEMPROF_CNT_DROP_STACK_READ) +
	       tracer_counter(tr, MEMPROF_CNT_DROP_STACK_COLLIDE);
}

void session_totals(const struct session *s, uint64_t *samples, uint64_t *live, uint64_t *drops)
{
	*samples = *live = *drops = 0;
	for (int i = 0; i < s->n; i++) {
		const struct tracer *tr = &s->procs[i].tr;

		*samples += tracer_counter(tr, MEMPROF_CNT_SAMPLES);
		*live += tr->n_blocks;
		*drops += drops_of(tr);
	}
}

void session_progress(struct session *s)
{
	uint64_t samples, live, drops;
	double t = session_now() - s->start_mono;
	int n;

	if (!s->progress)
		return;
	session_totals(s, &samples, &live, &drops);
	n = fprintf(stderr,
		    "\rmemprof-bpf: %02d:%02d:%02d elapsed, %" PRIu64 " samples, %" PRIu64
		    " live blocks, %" PRIu64 " drops\033[K",
		    (int)(t / 3600), (int)(t / 60) % 60, (int)t % 60, samples, live, drops);
	fflush(stderr);
	s->progress_len = n > 0 ? n : 1;
}

/*
 * The injected OCaml host found the program running its own Gc.Memprof
 * and started nothing: IN_PROCESS at rate 0 (ocaml_attach.c).  Read at the
 * end; a process that exited since says nothing.
 */
static int program_profile_alone(const struct traced *p)
{
	struct memprof_probe_control ctl;

	return p->t.ocaml_host && p->t.control_addr &&
	       !control_read(p->pid, p->t.control_addr, &ctl) &&
	       (ctl.flags & MEMPROF_PROBE_F_IN_PROCESS) && !ctl.active_rate;
}

/* The target took no sample: say why, in one note. */
void session_note_empty(const struct session *s, const struct traced *p, double seconds)
{
	double rate = p->active_rate ? p->active_rate : s->o->rate;
	double expected = rate * p->cpu_s * GENEROUS_ALLOC_BYTES_PER_CPU_S / 8;

	if (p->polls && p->stopped_polls == p->polls)
		fprintf(stderr,
			"memprof-bpf: note: no samples: process %d was stopped the whole %.1f s "
			"this tracer was attached (SIGSTOP or a debugger): it ran no code (kill "
			"-CONT it)\n",
			(int)p->pid, seconds);
	else if (!p->took_attach && program_profile_alone(p))
		fprintf(stderr,
			"memprof-bpf: note: no samples: process %d runs its own Gc.Memprof "
			"profile (memtrace, or the program's): the OCaml host left it alone\n",
			(int)p->pid);
	else if (!p->took_attach && p->cpu_s <= 0 && p->t.ocaml_host)
		fprintf(stderr,
			"memprof-bpf: note: no samples: process %d ran no OCaml code in the %.1f s "
			"this tracer was attached (it used no CPU time: blocked in a system call, "
			"or waiting), so its OCaml host never reached a safe point to start "
			"Gc.Memprof; sampling starts when it runs again while traced\n",
			(int)p->pid, seconds);
	else if (!p->took_attach && p->cpu_s > 0 && p->t.ocaml_host)
		fprintf(
		    stderr,
		    "memprof-bpf: note: no samples: process %d links the OCaml host "
		    "(memprof_probe) but did not sample in the %.1f s this tracer was attached, "
		    "though it ran: it has not called Memprof_probe.install () (or not reached "
		    "it yet)\n",
		    (int)p->pid, seconds);
	else if (!p->took_attach || p->cpu_s <= 0)
		fprintf(stderr,
			"memprof-bpf: note: no samples: process %d never allocated in the %.1f s "
			"this tracer was attached (%s)\n",
			(int)p->pid, seconds,
			p->cpu_s <= 0 ? "it used no CPU time"
				      : "it never reached an allocation that takes up the attach");
	else if (expected < 1)
		fprintf(stderr,
			"memprof-bpf: note: no samples: the rate %g is too low for %.1f s: the "
			"%.2f s of CPU time process %d used, at a generous %.0f GiB allocated per "
			"CPU-second, give %.3g expected samples (raise --rate)\n",
			rate, seconds, p->cpu_s, (int)p->pid,
			GENEROUS_ALLOC_BYTES_PER_CPU_S / (1024.0 * 1024 * 1024), expected);
	else
		fprintf(stderr,
			"memprof-bpf: note: no samples: process %d sampled at rate %g for %.1f s "
			"and used %.2f s of CPU time, but took no sample (it allocated little; "
			"at most %.3g samples were possible)\n",
			(int)p->pid, rate, seconds, p->cpu_s, expected);
}

/* Appends ", "-separated parts to a line of len bytes. */
static void part_add(char *line, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void part_add(char *line, size_t len, const char *fmt, ...)
{
	size_t at = strlen(line);
	va_list ap;

	if (at && at + 2 < len) {
		memcpy(line + at, "; ", 3);
		at += 2;
	}
	va_start(ap, fmt);
	vsnprintf(line + at, len - at, fmt, ap);
	va_end(ap);
}

/*
 * The counts that mean the profile lost data, in one warning line:
 * samples not fully kept (their block untracked: no live, promoted, short
 * or lifetime; or their stack unknown), samples of an id already tracked
 * (left out of live), events that name blocks never seen sampled after
 * this tracer's first sample (a lost sample), and unreadable events.
 * Orphans of blocks sampled before the attach or after the detach, late
 * events, double promotes (ignored), cut stacks and the small stack table
 * (their own notes) lose nothing that the profile claims to hold.
 */
static void warn_lost(const struct tracer *tr, const char *who)
{
	static const char *const causes[] = {
	    "block map full",	"stack table full",	"stack hash full",
	    "stack unreadable", "stack hash collision", "block map's overflow not grown yet"};
	uint64_t drops[] = {
	    tracer_counter(tr, MEMPROF_CNT_DROP_BLOCKS_FULL),
	    tracer_counter(tr, MEMPROF_CNT_DROP_STACKS_FULL),
	    tracer_counter(tr, MEMPROF_CNT_DROP_STACK_HASH),
	    tracer_counter(tr, MEMPROF_CNT_DROP_STACK_READ),
	    tracer_counter(tr, MEMPROF_CNT_DROP_STACK_COLLIDE),
	    tracer_counter(tr, MEMPROF_CNT_DROP_OVERFLOW_BEHIND),
	};
	uint64_t dropped = drops_of(tr);
	uint64_t dups = tracer_counter(tr, MEMPROF_CNT_DUPLICATE_IDS);
	uint64_t unexplained = tracer_counter(tr, MEMPROF_CNT_ORPHAN_PROMOTES) +
			       tracer_counter(tr, MEMPROF_CNT_ORPHAN_DEALLOCS);
	uint64_t bad = tracer_counter(tr, MEMPROF_CNT_BAD_EVENTS);
	uint64_t carries = tracer_counter(tr, MEMPROF_CNT_LIFETIME_CARRIES_LOST);
	char line[1024] = "", why[256] = "";

	if (dropped) {
		for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
			if (drops[i])
				snprintf(why + strlen(why), sizeof(why) - strlen(why),
					 "%s%s %" PRIu64, *why ? ", " : "", causes[i], drops[i]);
		part_add(line, sizeof(line),
			 "%" PRIu64 " of %" PRIu64 " samples not fully kept (%s%s)", dropped,
			 tracer_counter(tr, MEMPROF_CNT_SAMPLES), why,
			 drops[0] ? ": raise --max-blocks" : "");
	}
	if (dups)
		part_add(line, sizeof(line),
			 "%" PRIu64 " samples of an id already tracked (left out of live)", dups);
	if (unexplained)
		part_add(line, sizeof(line),
			 "%" PRIu64 " promote/dealloc events named blocks newer than this tracer's "
			 "first sample that it never saw sampled (a lost sample probe, or a host "
			 "whose block ids do not increase)",
			 unexplained);
	if (bad)
		part_add(line, sizeof(line), "%" PRIu64 " events unreadable or malformed", bad);
	if (carries)
		part_add(line, sizeof(line),
			 "%" PRIu64 " carries of lifetime counts past 2^32 samples (a slot of a "
			 "stack's histogram is short by 2^32 each)",
			 carries);
	if (*line)
		fprintf(stderr, "memprof-bpf: warning:%s data lost: %s\n", who, line);
}

/* The internal counters, in one line (-v). */
static void stats_line(const struct tracer *tr, const char *who)
{
	uint64_t unexplained = tracer_counter(tr, MEMPROF_CNT_ORPHAN_PROMOTES) +
			       tracer_counter(tr, MEMPROF_CNT_ORPHAN_DEALLOCS);
	uint64_t map_full = tracer_counter(tr, MEMPROF_CNT_ORPHAN_UNTRACKED);
	uint64_t early = tracer_counter(tr, MEMPROF_CNT_ORPHAN_EARLY);
	uint64_t oldest_ns = 0, now;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	for (size_t i = 0; i < tr->n_blocks; i++)
		if (now > tr->blocks[i].b.alloc_ns && now - tr->blocks[i].b.alloc_ns > oldest_ns)
			oldest_ns = now - tr->blocks[i].b.alloc_ns;
	fprintf(
	    stderr,
	    "memprof-bpf: stats:%s samples %" PRIu64 " promotes %" PRIu64 " deallocs %" PRIu64
	    " gcs %" PRIu64 " orphan_ids %" PRIu64 " double_promotes %" PRIu64
	    " duplicate_ids %" PRIu64 " dropped %" PRIu64 " live_blocks %zu oldest_live_ms %" PRIu64
	    " late_orphan_ids %" PRIu64 " late_events %" PRIu64 " orphans_map_full %" PRIu64
	    " orphans_before_attach %" PRIu64 " event_batches %" PRIu64 " cut_stacks %" PRIu64
	    " inner_stacks %" PRIu64 " overflow_blocks %" PRIu64 " sample_batches %" PRIu64
	    " late_samples %" PRIu64 " lifetime_carries_lost %" PRIu64 "\n",
	    who, tracer_counter(tr, MEMPROF_CNT_SAMPLES), tracer_counter(tr, MEMPROF_CNT_PROMOTES),
	    tracer_counter(tr, MEMPROF_CNT_DEALLOCS), tracer_counter(tr, MEMPROF_CNT_GCS),
	    unexplained + map_full + early, tracer_counter(tr, MEMPROF_CNT_DOUBLE_PROMOTES),
	    tracer_counter(tr, MEMPROF_CNT_DUPLICATE_IDS), drops_of(tr), tr->n_blocks,
	    oldest_ns / 1000000, tracer_counter(tr, MEMPROF_CNT_LATE_ORPHANS),
	    tracer_counter(tr, MEMPROF_CNT_LATE_EVENTS), map_full, early,
	    tracer_counter(tr, MEMPROF_CNT_EVENT_PROBES),
	    tracer_counter(tr, MEMPROF_CNT_TRUNCATED_STACKS),
	    tracer_counter(tr, MEMPROF_CNT_INNER_STACKS),
	    tracer_counter(tr, MEMPROF_CNT_OVERFLOW_BLOCKS),
	    tracer_counter(tr, MEMPROF_CNT_SAMPLE_BATCHES),
	    tracer_counter(tr, MEMPROF_CNT_LATE_SAMPLES),
	    tracer_counter(tr, MEMPROF_CNT_LIFETIME_CARRIES_LOST));
}

static void report_one(const struct session *s, const struct traced *p)
{
	const struct tracer *tr = &p->tr;
	uint64_t map_full = tracer_counter(tr, MEMPROF_CNT_ORPHAN_UNTRACKED);
	uint64_t early = tracer_counter(tr, MEMPROF_CNT_ORPHAN_EARLY);
	uint64_t late = tracer_counter(tr, MEMPROF_CNT_LATE_ORPHANS);
	char who[32] = "";

	if (s->n > 1)
		snprintf(who, sizeof(who), " pid %d", (int)p->pid);
	if (s->o->verbose)
		stats_line(tr, who);
	warn_lost(tr, who);
	if (map_full)
		fprintf(stderr,
			"memprof-bpf: note:%s %" PRIu64
			" promote/dealloc events named blocks sampled while the block map was "
			"full (not tracked: raise --max-blocks)\n",
			who, map_full);
	if (early)
		fprintf(
		    stderr,
		    "memprof-bpf: note:%s %" PRIu64
		    " promote/dealloc events named blocks sampled before this tracer attached "
		    "(attached mid-run: an in-process profile or another tracer sampled them)\n",
		    who, early);
	if (late && s->o->verbose)
		fprintf(stderr,
			"memprof-bpf:%s %" PRIu64 " promote/dealloc events while detaching named "
			"blocks sampled after the detach began (late ids)\n",
			who, late);
	if (tracer_counter(tr, MEMPROF_CNT_TRUNCATED_STACKS))
		fprintf(stderr,
			"memprof-bpf: note:%s %" PRIu64
			" samples had stacks deeper than %d frames: "
			"cut to their innermost %d, under a [stack-cut] root\n",
			who, tracer_counter(tr, MEMPROF_CNT_TRUNCATED_STACKS), MEMPROF_STACK_DEPTH,
			MEMPROF_STACK_DEPTH);
	if (tracer_counter(tr, MEMPROF_CNT_INNER_STACKS))
		fprintf(stderr,
			"memprof-bpf: note:%s the stack table (%u stacks, %u frames in all) was "
			"full%s%s: %" PRIu64
			" samples kept only their innermost %d frames, under a [stack-table-full] "
			"root (--max-stacks raises it)\n",
			who, tr->max_stacks, tr->frame_chunks * MEMPROF_FRAME_CHUNK,
			tracer_counter(tr, MEMPROF_CNT_FRAMES_FULL) ? " (its frames used up)" : "",
			tracer_counter(tr, MEMPROF_CNT_ARENA_BEHIND)
			    ? " (or its chunks not grown yet: new stacks came faster than the "
			      "loader's polls)"
			    : "",
			tracer_counter(tr, MEMPROF_CNT_INNER_STACKS), MEMPROF_INNER_DEPTH);
}

void session_report(const struct session *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->procs[i].tr.skel)
			report_one(s, &s->procs[i]);
}
