/*
 * attach-trigger: a small deterministic memprof host for the attach tests.
 *
 * It fires the memprof USDT probes exactly per memprof_probe_abi.h (ABI 2:
 * promotions and deaths in memprof:events batches, one or more per
 * collection), behind
 * their semaphores, exports memprof_probe_control and obeys the attach
 * protocol: it samples only while the sample semaphore is up, at the rate
 * the tracer requested, and forgets its tracked blocks when it drops.
 *
 * Its "heap" is simulated, its sampling is real: each iteration allocates
 * one block per site (sizes below), sampled as a Bernoulli process over
 * words (header included) with a fixed seed.  Every TRIGGER_EPOCH_ITERS
 * iterations a "minor collection" kills the short-lived blocks (dealloc
 * minor) and promotes the others; medium-lived blocks and born-major blocks
 * die (dealloc major) TRIGGER_OLD_EPOCHS epochs later; long-lived blocks
 * never die.  At exit a final minor and major collection run, so exactly
 * the long-lived blocks stay live, and one line per site is printed:
 *   site <name> words <W> live_words <L> sampled_words <S> samples <N> est_bytes <B>
 * W counts every block, S, N and B only blocks allocated while sampling.
 *
 * Usage: attach-trigger [--iterations N] [--seconds S] [--wait-tracers K]
 *                       [--ready-file F] [--start-file F] [--map FILE] [--seed X]
 *                       [--vfork-every E] [--idle 1] [--hold-events F] [--sample-scale K]
 * --hold-events F: keep every promotion and death queued (a host whose
 * events wait for its next poll, as the core's do for up to 10 ms), firing
 * them only when a tracer asks for a flush (memprof_probe_control's
 * flush_request) and at exit; F is written once TRIGGER_HELD_EPOCHS
 * collections' events are held.  It shows that a detaching tracer gets
 * what the host had queued.
 * --sample-scale K: each sample counts K times its n_samples (K up to
 * 2^31: the kernel's 32-bit lifetime slots wrap, and their carries must
 * add up).
 * --vfork-every E: every E epochs, one iteration runs in a vfork child (in
 * the trigger's memory, as dash's children do): its samples are the
 * trigger's, and the trigger later frees its blocks.  --idle 1: allocate
 * nothing (sleep for --seconds), never taking up an attach.
 * --wait-tracers K waits for the sample semaphore to reach K (the kernel
 * counts one per probe, not per tracer: K is 0 or 1); --start-file then
 * waits for F to exist (the test creates it once all its tracers attached).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <execinfo.h>
#include <fcntl.h>
#include <linux/types.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sdt.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memprof_probe_abi.h"

#define TRIGGER_EPOCH_ITERS 64
#define TRIGGER_OLD_EPOCHS 4
#define TRIGGER_WAIT_TIMEOUT_S 120
#define TRIGGER_DEFAULT_SEED 42
/* In --seconds mode, pause this long every epoch (keeps a core free). */
#define TRIGGER_EPOCH_PAUSE_NS 200000
/* --hold-events: its file is written after this many collections. */
#define TRIGGER_HELD_EPOCHS 16

unsigned short memprof_sample_semaphore __attribute__((section(".probes")));
unsigned short memprof_events_semaphore __attribute__((section(".probes")));

__attribute__((used, visibility("default"))) struct memprof_probe_control memprof_probe_control = {
    .magic = MEMPROF_PROBE_CONTROL_MAGIC,
    .abi_version = MEMPROF_PROBE_ABI_VERSION,
};

enum site { SITE_SHORT, SITE_MEDIUM, SITE_LONG, SITE_MAJOR, N_SITES };
static const char *const site_names[N_SITES] = {"site_short_lived", "site_medium_lived",
						"site_long_lived", "site_major_blocks"};
static const unsigned site_words[N_SITES] = {4, 8, 16, 300};

struct site_stats {
	uint64_t words, live_words, sampled_words, samples, est_bytes;
};
static struct site_stats stats[N_SITES];

struct tracked {
	uint64_t id;
	enum site site;
	unsigned age; /* epochs survived */
	int old;      /* promoted or born major */
};
static struct tracked *tracked;
static size_t n_tracked, cap_tracked;

static int sampling;
static double rate;
static uint64_t inv_rate_q16;
static uint64_t next_gap; /* words to the next sample point, >= 1 */
static uint64_t next_id = 1;
static uint64_t sample_scale = 1; /* --sample-scale */
static uint64_t rng_state;

static double rng_uniform(void)
{
	/* xorshift64*, in (0, 1]. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return ((rng_state * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53 + 0x1.0p-53;
}

static uint64_t draw_gap(void)
{
	if (rate >= 1.0)
		return 1;
	double gap = floor(log(rng_uniform()) / log1p(-rate));

	/* A rate like 1e-300: no sample within any run. */
	return gap >= 0x1p62 ? (uint64_t)1 << 62 : 1 + (uint64_t)gap;
}

static void held_fire(void);
static void held_drop(void);
static void write_ready(const char *path);

/* The safe point: follow the tracer semaphore. */
static void poll_tracer(void)
{
	volatile unsigned short *sem = &memprof_sample_semaphore;
	volatile struct memprof_probe_control *ctl = &memprof_probe_control;

	if (*sem && !sampling) {
		rate = ctl->requested_rate > 0 && ctl->requested_rate <= 1
			   ? ctl->requested_rate
			   : MEMPROF_PROBE_DEFAULT_RATE;
		inv_rate_q16 = 65536.0 / rate >= 0x1p62 ? (uint64_t)1 << 62
							: (uint64_t)llround(65536.0 / rate);
		next_gap = draw_gap();
		sampling = 1;
		ctl->active_rate = rate;
		ctl->flags |= MEMPROF_PROBE_F_TRACER;
	}
	/* Its events go at each collection, unless held (--hold-events). */
	if (ctl->flush_request != ctl->flushed) {
		uint64_t request = ctl->flush_request;

		held_fire();
		ctl->flushed = request;
	}
	if (!*sem && sampling) {
		held_drop();
		sampling = 0;
		ctl->active_rate = 0;
		ctl->flags &= ~MEMPROF_PROBE_F_TRACER;
		n_tracked = 0; /* forget the tracer's blocks */
	}
}

/* Samples handed to memprof:sample. */
static uint64_t fired_samples;
/* Events handed to memprof:events, by kind (MEMPROF_PROBE_EV_*). */
static uint64_t fired_events[4];

static void track(enum site s, uint64_t n, uint64_t size, const uintptr_t *stack, size_t len)
{
	int major = s == SITE_MAJOR;
	uint64_t id = next_id++;

	if (n_tracked == cap_tracked) {
		cap_tracked = cap_tracked ? 2 * cap_tracked : 1024;
		tracked = realloc(tracked, cap_tracked * sizeof(*tracked));
		if (!tracked) {
			fprintf(stderr, "attach-trigger: out of memory\n");
			exit(1);
		}
	}
	tracked[n_tracked++] = (struct tracked){.id = id, .site = s, .old = major};
	memprof_probe_control.samples++;
	stats[s].samples += n;
	stats[s].est_bytes += (n * inv_rate_q16 * 8) >> MEMPROF_PROBE_RATE_SHIFT;
	if (memprof_sample_semaphore) {
		fired_samples++;
		STAP_PROBE7(memprof, sample, id, size, n,
			    MEMPROF_PROBE_KIND_SOURCE(major ? MEMPROF_PROBE_KIND_MAJOR
							    : MEMPROF_PROBE_KIND_MINOR,
						      MEMPROF_PROBE_SRC_NORMAL),
			    (uintptr_t)stack, len, inv_rate_q16);
	}
}

/* Allocate one block of site s; called from the site functions. */
static __attribute__((noinline)) void alloc_block(enum site s)
{
	uint64_t words = site_words[s] + 1, left = words, n = 0;
	void *frames[MEMPROF_PROBE_MAX_STACK + 1];
	int len;

	stats[s].words += words;
	if (s == SITE_LONG)
		stats[s].live_words += words;
	if (!sampling)
		return;
	stats[s].sampled_words += words;
	while (next_gap <= left) {
		left -= next_gap;
		n++;
		next_gap = draw_gap();
	}
	next_gap -= left;
	if (!n)
		return;
	n *= sample_scale;
	/* Frame 0 is this function: the stack starts at the site's frame. */
	len = backtrace(frames, MEMPROF_PROBE_MAX_STACK + 1);
	track(s, n, site_words[s], (const uintptr_t *)(frames + 1), len > 1 ? len - 1 : 0);
}

__attribute__((noinline)) void site_short_lived(void)
{
	alloc_block(SITE_SHORT);
}

__attribute__((noinline)) void site_medium_lived(void)
{
	alloc_block(SITE_MEDIUM);
}

__attribute__((noinline)) void site_long_lived(void)
{
	alloc_block(SITE_LONG);
}

__attribute__((noinline)) void site_major_blocks(void)
{
	alloc_block(SITE_MAJOR);
}

/* Promotions and deaths, handed over in batches (memprof:events). */
static uint64_t events[2 * MEMPROF_PROBE_EVENTS_MAX]; /* (event, CLOCK_MONOTONIC ns) */
static uint64_t n_events;

/* --hold-events: the events not fired yet, in order; its file. */
static const char *held_file;
static uint64_t *held;
static size_t n_held, cap_held;
static unsigned held_collections;

/* Fire memprof:events with n events at ev, counted by kind. */
static void events_fire(const uint64_t *ev, uint64_t n)
{
	STAP_PROBE2(memprof, events, (uintptr_t)ev, n);
	for (uint64_t i = 0; i < n; i++)
		fired_events[MEMPROF_PROBE_EVENT_WHAT(ev[2 * i])]++;
}

static void events_flush(void)
{
	if (held_file && n_events) {
		if (n_held + 2 * n_events > cap_held) {
			cap_held = 2 * (n_held + 2 * n_events);
			held = realloc(held, cap_held * sizeof(*held));
			if (!held) {
				fprintf(stderr, "attach-trigger: out of memory\n");
				exit(1);
			}
		}
		memcpy(held + n_held, events, 2 * n_events * sizeof(*events));
		n_held += 2 * n_events;
	} else if (n_events && memprof_events_semaphore) {
		events_fire(events, n_events);
	}
	n_events = 0;
}

/* Fire the held events, in batches of at most MEMPROF_PROBE_EVENTS_MAX. */
static void held_fire(void)
{
	for (size_t i = 0; i < n_held; i += 2 * MEMPROF_PROBE_EVENTS_MAX) {
		uint64_t n = (n_held - i) / 2;

		if (n > MEMPROF_PROBE_EVENTS_MAX)
			n = MEMPROF_PROBE_EVENTS_MAX;
		if (memprof_events_semaphore)
			events_fire(held + i, n);
	}
	n_held = 0;
}

static void held_drop(void)
{
	n_held = 0;
}

static void event(const struct tracked *t, unsigned what)
{
	if (!memprof_events_semaphore)
		return;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	events[2 * n_events] = MEMPROF_PROBE_EVENT(t->id, what);
	events[2 * n_events + 1] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	n_events++;
	if (n_events == MEMPROF_PROBE_EVENTS_MAX)
		events_flush();
}

static void dealloc(const struct tracked *t, unsigned kind)
{
	event(t, kind == MEMPROF_PROBE_KIND_MINOR ? MEMPROF_PROBE_EV_DEALLOC_MINOR
						  : MEMPROF_PROBE_EV_DEALLOC_MAJOR);
}

/* One collection: short blocks die young, the others are promoted, old
 * medium and major blocks die after TRIGGER_OLD_EPOCHS (all if full).  Its
 * events go in batches of at most MEMPROF_PROBE_EVENTS_MAX, the last at
 * its end. */
static void collect(int full)
{
	size_t kept = 0;

	for (size_t i = 0; i < n_tracked; i++) {
		struct tracked t = tracked[i];

		if (t.site == SITE_SHORT) {
			dealloc(&t, MEMPROF_PROBE_KIND_MINOR);
			continue;
		}
		if (!t.old) {
			t.old = 1;
			event(&t, MEMPROF_PROBE_EV_PROMOTE);
		} else if (t.site != SITE_LONG && (full || ++t.age >= TRIGGER_OLD_EPOCHS)) {
			dealloc(&t, MEMPROF_PROBE_KIND_MAJOR);
			continue;
		}
		tracked[kept++] = t;
	}
	n_tracked = kept;
	events_flush();
	if (held_file && sampling && ++held_collections == TRIGGER_HELD_EPOCHS)
		write_ready(held_file);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void wait_tracers(unsigned k)
{
	double deadline = now_s() + TRIGGER_WAIT_TIMEOUT_S;
	const struct timespec pause = {0, 1000000};

	while (*(volatile unsigned short *)&memprof_sample_semaphore < k) {
		if (now_s() > deadline) {
			fprintf(stderr, "attach-trigger: no tracer attached within %d s\n",
				TRIGGER_WAIT_TIMEOUT_S);
			exit(3);
		}
		nanosleep(&pause, NULL);
	}
}

static void wait_start_file(const char *path)
{
	double deadline = now_s() + TRIGGER_WAIT_TIMEOUT_S;
	const struct timespec pause = {0, 1000000};

	while (access(path, F_OK)) {
		if (now_s() > deadline) {
			fprintf(stderr, "attach-trigger: %s not created within %d s\n", path,
				TRIGGER_WAIT_TIMEOUT_S);
			exit(3);
		}
		nanosleep(&pause, NULL);
	}
}

static void map_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) || st.st_size == 0 ||
	    mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
		fprintf(stderr, "attach-trigger: cannot map %s\n", path);
		exit(2);
	}
	close(fd);
}

/* One iteration in a vfork child: it runs in this process's memory. */
static __attribute__((noinline)) void one_iteration_in_vfork_child(void)
{
	pid_t child = vfork();

	if (child == 0) {
		site_short_lived();
		site_medium_lived();
		site_long_lived();
		site_major_blocks();
		_exit(0);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
}

static void write_ready(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
		fprintf(stderr, "attach-trigger: cannot write %s\n", path);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	unsigned long iterations = 100000, wait = 0, vfork_every = 0, idle = 0;
	double seconds = 0, end;
	const char *ready = NULL, *start = NULL;
	uint64_t seed = TRIGGER_DEFAULT_SEED;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "attach-trigger: %s needs a value\n", a);
			return 1;
		}
		if (!strcmp(a, "--iterations"))
			iterations = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--seconds"))
			seconds = atof(v);
		else if (!strcmp(a, "--wait-tracers"))
			wait = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--ready-file"))
			ready = v;
		else if (!strcmp(a, "--start-file"))
			start = v;
		else if (!strcmp(a, "--map"))
			map_file(v);
		else if (!strcmp(a, "--seed"))
			seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--vfork-every"))
			vfork_every = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--idle"))
			idle = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--hold-events"))
			held_file = v;
		else if (!strcmp(a, "--sample-scale"))
			sample_scale = strtoull(v, NULL, 0);
		else {
			fprintf(stderr, "attach-trigger: unknown option %s\n", a);
			return 1;
		}
		i++;
	}
	rng_state = seed ? seed : TRIGGER_DEFAULT_SEED;
	{
		void *warm[4];

		backtrace(warm, 4); /* load the unwinder before any tracer attaches */
	}
	if (ready)
		write_ready(ready);
	if (wait)
		wait_tracers(wait);
	if (start)
		wait_start_file(start);
	end = now_s() + seconds;
	while (idle && now_s() < end)
		nanosleep(&(struct timespec){0, 50000000}, NULL);
	if (idle)
		iterations = 0, seconds = 0;
	for (unsigned long it = 0; seconds > 0 ? now_s() < end : it < iterations; it++) {
		if (it % TRIGGER_EPOCH_ITERS == 0) {
			if (it)
				collect(0);
			poll_tracer();
			if (vfork_every && (it / TRIGGER_EPOCH_ITERS) % vfork_every == 0) {
				one_iteration_in_vfork_child();
			}
			if (seconds > 0)
				nanosleep(&(struct timespec){0, TRIGGER_EPOCH_PAUSE_NS}, NULL);
		}
		site_short_lived();
		site_medium_lived();
		site_long_lived();
		site_major_blocks();
	}
	collect(0);
	collect(1);
	held_fire();
	for (int s = 0; s < N_SITES; s++)
		printf("site %s words %llu live_words %llu sampled_words %llu samples %llu "
		       "est_bytes %llu\n",
		       site_names[s], (unsigned long long)stats[s].words,
		       (unsigned long long)stats[s].live_words,
		       (unsigned long long)stats[s].sampled_words,
		       (unsigned long long)stats[s].samples,
		       (unsigned long long)stats[s].est_bytes);
	/* What the tracer was handed: its counts must be these, exactly. */
	printf("fired samples %llu promotes %llu deallocs %llu\n",
	       (unsigned long long)fired_samples,
	       (unsigned long long)fired_events[MEMPROF_PROBE_EV_PROMOTE],
	       (unsigned long long)(fired_events[MEMPROF_PROBE_EV_DEALLOC_MINOR] +
				    fired_events[MEMPROF_PROBE_EV_DEALLOC_MAJOR]));
	return 0;
}
