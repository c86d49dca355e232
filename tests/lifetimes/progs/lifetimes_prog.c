/*
 * Allocation sites of known lifetimes and a live memory that grows in known
 * steps, run under the malloc host (the preload) for tests/lifetimes:
 *
 *   lifetimes_prog READY_FILE sites
 *     site_short    blocks freed LIFE_SHORT_US after their malloc (log2
 *                   slot [1024, 2048) us), one per iteration
 *     site_long     blocks freed LIFE_LONG_MS after their malloc (slot
 *                   [131, 262) ms), one per iteration
 *     site_forever  FOREVER_N blocks at the start, never freed
 *   for RUN_MS, then it prints its own measurements ("median_us site_short
 *   N", "median_us site_long N", "forever_held_ms N": the time from the
 *   last site_forever malloc to the exit) and exits.
 *
 *   lifetimes_prog READY_FILE steps
 *     site_step     STEPS steps of STEP_BYTES (STEP_BLOCKS blocks), one every
 *                   STEP_MS after STEP_MS of nothing; kept to the exit, which
 *                   comes STEP_MS after the last step.
 *
 *   lifetimes_prog READY_FILE peak
 *     site_hold     HOLD_BYTES, kept to the exit
 *     site_peak     PEAK_BYTES after them; once every sample taken has been
 *                   handed to the tracer (a flush request in its control
 *                   block, served), it writes READY_FILE.peak and holds them until
 *                   READY_FILE.release exists (the test creates it once it
 *                   has seen the loader poll since), then frees them all
 *     site_after    AFTER_BYTES, kept to the exit ("peak_bytes N",
 *                   "hold_bytes N", "after_bytes N"): the live memory rises
 *                   to HOLD_BYTES + PEAK_BYTES and ends at HOLD_BYTES +
 *                   AFTER_BYTES, so site_after is never part of the peak.
 *     While it waits it allocates and frees one small block a millisecond
 *     (site_tick): the host serves requests and hands over what it queued
 *     at its allocations.
 *
 * Every block is BLOCK_BYTES.  The program starts its work once a tracer
 * samples (wait_tracer.h), and its exit ends the tracer's run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wait_tracer.h"

#define BLOCK_BYTES 4096
#define RUN_MS 1600
#define LIFE_SHORT_US 1450
#define LIFE_LONG_MS 190
#define FOREVER_N 400
#define MAX_BLOCKS 4096
#define STEPS 4
#define STEP_BYTES (8 << 20)
#define STEP_BLOCKS (STEP_BYTES / BLOCK_BYTES)
#define STEP_MS 600
#define HOLD_BYTES (8 << 20)
#define PEAK_BYTES (64 << 20)
#define AFTER_BYTES (4 << 20)
#define AFTER_BLOCKS (AFTER_BYTES / BLOCK_BYTES)
#define HOLD_BLOCKS (HOLD_BYTES / BLOCK_BYTES)
#define PEAK_BLOCKS (PEAK_BYTES / BLOCK_BYTES)
#define TICK_BYTES 1024 /* the host polls when its countdown runs out: every few ticks */
#define WAIT_S 120	/* a failure detector: the test answers within seconds */

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_until_us(int64_t t)
{
	struct timespec ts = {t / 1000000, (t % 1000000) * 1000};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t median(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	return n ? v[n / 2] : 0;
}

static void *forever[FOREVER_N];
static void *ring[MAX_BLOCKS];
static int64_t ring_birth[MAX_BLOCKS];
static int64_t lives_short[MAX_BLOCKS], lives_long[MAX_BLOCKS];
static void *steps[STEPS * STEP_BLOCKS];
static void *held[HOLD_BLOCKS], *peak[PEAK_BLOCKS], *after[AFTER_BLOCKS];

__attribute__((noipa)) void *site_short(void)
{
	void *p = malloc(BLOCK_BYTES);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

__attribute__((noipa)) void *site_long(void)
{
	void *p = malloc(BLOCK_BYTES);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

__attribute__((noipa)) void *site_forever(void)
{
	void *p = malloc(BLOCK_BYTES);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

__attribute__((noipa)) void *site_step(void)
{
	void *p = malloc(BLOCK_BYTES);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

__attribute__((noipa)) void *site_hold(void)
{
	void *p = malloc(BLOCK_BYTES);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

__attribute__((noipa)) void *site_peak(void)
{
	void *p = malloc(BLOCK_BYTES);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

__attribute__((noipa)) void *site_after(void)
{
	void *p = malloc(BLOCK_BYTES);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

__attribute__((noipa)) void site_tick(void)
{
	wait_sink = malloc(TICK_BYTES);
	free(wait_sink);
}

static void touch(void *p)
{
	if (!p)
		exit(3);
	memset(p, 1, 64);
}

static int run_sites(void)
{
	size_t n_short = 0, n_long = 0, head = 0, tail = 0;
	int64_t start, last_forever;

	for (int i = 0; i < FOREVER_N; i++)
		touch(forever[i] = site_forever());
	last_forever = now_us();
	start = now_us();
	while (now_us() - start < RUN_MS * 1000LL && n_short < MAX_BLOCKS) {
		int64_t born = now_us();
		void *p = site_short();

		touch(p);
		/* The long-lived blocks: a ring, oldest freed once LIFE_LONG_MS old. */
		if ((tail + 1) % MAX_BLOCKS != head) {
			touch(ring[tail] = site_long());
			ring_birth[tail] = born;
			tail = (tail + 1) % MAX_BLOCKS;
		}
		sleep_until_us(born + LIFE_SHORT_US);
		free(p);
		lives_short[n_short++] = now_us() - born;
		while (head != tail && now_us() - ring_birth[head] >= LIFE_LONG_MS * 1000LL) {
			free(ring[head]);
			lives_long[n_long++] = now_us() - ring_birth[head];
			head = (head + 1) % MAX_BLOCKS;
		}
	}
	printf("median_us site_short %lld\n", (long long)median(lives_short, n_short));
	printf("median_us site_long %lld\n", (long long)median(lives_long, n_long));
	printf("blocks site_short %zu\nblocks site_long %zu\n", n_short, n_long);
	printf("forever_held_ms %lld\n", (long long)((now_us() - last_forever) / 1000));
	fflush(stdout);
	return 0;
}

static int run_steps(void)
{
	int64_t start = now_us();

	for (int s = 0; s < STEPS; s++) {
		sleep_until_us(start + (int64_t)(s + 1) * STEP_MS * 1000);
		int64_t t0 = now_us();

		for (int i = 0; i < STEP_BLOCKS; i++)
			touch(steps[s * STEP_BLOCKS + i] = site_step());
		printf("step %d at_ms %lld took_ms %lld\n", s + 1, (long long)((t0 - start) / 1000),
		       (long long)((now_us() - t0) / 1000));
	}
	sleep_until_us(start + (int64_t)(STEPS + 1) * STEP_MS * 1000);
	printf("step_bytes %d\nsteps %d\n", STEP_BYTES, STEPS);
	fflush(stdout);
	return 0;
}

/* One tick: a small allocation (the host's queues are served), then 1 ms asleep. */
static void tick(void)
{
	const struct timespec ms = {0, 1000000};

	site_tick();
	nanosleep(&ms, NULL);
}

/*
 * Ask the host for what it queued, as a tracer does before it detaches
 * (memprof_probe_abi.h, flush_request): served at its next poll, which an
 * allocation reaches.  The request to wait for.
 */
static uint64_t request_flush(void)
{
	return __atomic_add_fetch(&memprof_probe_control.flush_request, 1, __ATOMIC_ACQ_REL);
}

static int flush_served(uint64_t request)
{
	return __atomic_load_n(&memprof_probe_control.flushed, __ATOMIC_ACQUIRE) >= request;
}

static int run_peak(const char *ready)
{
	char path[4096];
	uint64_t request;
	int64_t until;
	FILE *f;

	for (int i = 0; i < HOLD_BLOCKS; i++)
		touch(held[i] = site_hold());
	for (int i = 0; i < PEAK_BLOCKS; i++)
		touch(peak[i] = site_peak());
	/* Every sample taken so far goes to the tracer's probe: none stays queued. */
	request = request_flush();
	until = now_us() + WAIT_S * 1000000LL;
	while (!flush_served(request) && now_us() < until)
		tick();
	snprintf(path, sizeof(path), "%s.peak", ready);
	f = fopen(path, "w");
	if (!f || fclose(f))
		return 2;
	/* Held until the test saw the loader poll with all of it live. */
	snprintf(path, sizeof(path), "%s.release", ready);
	while (access(path, F_OK) && now_us() < until)
		tick();
	if (access(path, F_OK)) {
		fprintf(stderr, "lifetimes_prog: no %s within %d s\n", path, WAIT_S);
		return 2;
	}
	for (int i = 0; i < PEAK_BLOCKS; i++)
		free(peak[i]);
	for (int i = 0; i < AFTER_BLOCKS; i++)
		touch(after[i] = site_after());
	printf("peak_bytes %d\nhold_bytes %d\nafter_bytes %d\n", PEAK_BYTES, HOLD_BYTES,
	       AFTER_BYTES);
	fflush(stdout);
	return 0; /* the exit hands the last deaths over (the host's destructor) */
}

int main(int argc, char **argv)
{
	if (argc != 3 ||
	    (strcmp(argv[2], "sites") && strcmp(argv[2], "steps") && strcmp(argv[2], "peak"))) {
		fprintf(stderr, "usage: lifetimes_prog READY_FILE sites|steps|peak\n");
		return 2;
	}
	if (wait_for_tracer(argv[1])) {
		fprintf(stderr, "lifetimes_prog: no tracer within 60 s\n");
		return 2;
	}
	if (!strcmp(argv[2], "peak"))
		return run_peak(argv[1]);
	return strcmp(argv[2], "sites") ? run_steps() : run_sites();
}
