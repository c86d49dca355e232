/*
 * USDT probes (provider "memprof", see memprof_probe_abi.h), their
 * semaphores, the control block a tracer finds by ELF symbol, and the attach
 * protocol: a raised sample semaphore turns tracer-only sampling on when no
 * in-process profile samples; a lowered one turns it off and forgets the
 * blocks tracked only for the tracer.
 */
#include <math.h>

#include "core.h"
#include "memprof_probes.h"
#include "memprof_probe_site.h"

/* The kernel increments these (uprobe ref_ctr_offset) while a probe is attached. */
unsigned short memprof_sample_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_events_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_gc_semaphore __attribute__((section(".probes"), used));

__attribute__((used, visibility("default"))) struct memprof_probe_control memprof_probe_control = {
    .magic = MEMPROF_PROBE_CONTROL_MAGIC,
    .abi_version = MEMPROF_PROBE_ABI_VERSION,
};

#define PROBE_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Longest a queued sample or promote/dealloc event waits while the host polls. */
#define PROBE_EVENTS_MAX_AGE_NS 10000000u

/* Mirror of memprof_core.tracer_on, read without the lock by probe_poll. */
static atomic_int tracer_seen;

/* Sites fire only while armed (memprof_probe_site.h says why). */
static int probe_any_semaphore_up(void)
{
	return SEMAPHORE_UP(memprof_sample_semaphore) || SEMAPHORE_UP(memprof_events_semaphore) ||
	       SEMAPHORE_UP(memprof_gc_semaphore);
}

static void probe_fork_child(void)
{
	probe_sites_fork_child(probe_any_semaphore_up());
}

__attribute__((constructor)) static void probe_sites_init(void)
{
	pthread_atfork(NULL, NULL, probe_fork_child);
}

/*
 * Samples waiting for the next memprof:sample hit (the batched form,
 * memprof_probe_abi.h).  Locked (the core lock).  Each record's stack points
 * into frames, where the sample's stack was copied: a record and its frames
 * stay put until the flush.  Invariants: n <= MEMPROF_PROBE_SAMPLES_MAX,
 * n_frames <= PROBE_SAMPLES_FRAMES, and while n < MEMPROF_PROBE_SAMPLES_MAX
 * there is room for one more whole stack (PROBE_SAMPLES_FRAMES - n_frames
 * >= MEMPROF_PROBE_MAX_STACK): a full buffer is flushed at once.
 */
#define PROBE_SAMPLES_FRAMES (64 * MEMPROF_PROBE_MAX_STACK)
static struct probe_samples {
	uint64_t rec[MEMPROF_PROBE_SAMPLES_MAX][MEMPROF_PROBE_REC_WORDS];
	uint64_t frames[PROBE_SAMPLES_FRAMES];
	volatile uint32_t n; /* queued; read without the lock to decide on a flush */
	uint32_t n_frames;
	uint64_t first_ns; /* when the first one was queued, CLOCK_MONOTONIC_COARSE */
	double inv_for;	   /* inv_q16 is the record's inverse rate of this lambda */
	uint64_t inv_q16;
} probe_samples_queue = {.inv_for = -1};

/* A tracer's sample probe is attached here: its semaphore raised, and the
 * probe sites armed (a child forked while traced has them disarmed). */
static inline int tracer_attached(void)
{
	return SEMAPHORE_UP(memprof_sample_semaphore) && probe_sites_armed();
}

/* Hand the queued samples to the tracer (one probe hit).  Locked. */
static void probe_samples_flush_locked(void)
{
	struct probe_samples *b = &probe_samples_queue;
	uint64_t p = (uint64_t)(uintptr_t)b->rec, n = b->n;

	if (n && tracer_attached()) {
		DTRACE_PROBE2(memprof, sample, p, n);
		__atomic_fetch_add(&memprof_probe_control.samples, n, __ATOMIC_RELAXED);
	}
	b->n = 0;
	b->n_frames = 0;
}

void probe_fire_sample(uint64_t id, size_t size, size_t n_samples, unsigned kind, unsigned source,
		       const uintptr_t *stack, size_t stack_len, double lambda, int bytes)
{
	struct probe_samples *b = &probe_samples_queue;
	uint64_t ks = MEMPROF_PROBE_KIND_SOURCE(kind, source), *r;
	size_t sl = stack_len;

	if (!tracer_attached())
		return;
	/* The rate changes seldom: its Q16 inverse is kept for the last one. */
	if (lambda != b->inv_for) {
		double inv =
		    lambda > 0 ? round((double)(1u << MEMPROF_PROBE_RATE_SHIFT) / lambda) : 0;
		b->inv_for = lambda;
		b->inv_q16 = inv >= 0x1p64 ? UINT64_MAX : (uint64_t)inv;
	}
	if (bytes)
		ks |= MEMPROF_PROBE_F_BYTES;
	if (sl > MEMPROF_PROBE_MAX_STACK) {
		sl = MEMPROF_PROBE_MAX_STACK;
		ks |= MEMPROF_PROBE_F_STACK_CUT;
	}
	MEMPROF_ASSERT(b->n < MEMPROF_PROBE_SAMPLES_MAX &&
		       b->n_frames + MEMPROF_PROBE_MAX_STACK <= PROBE_SAMPLES_FRAMES);
	if (b->n == 0)
		b->first_ns = probe_clock_ns(CLOCK_MONOTONIC_COARSE);
	r = b->rec[b->n];
	r[MEMPROF_PROBE_REC_ID] = id;
	r[MEMPROF_PROBE_REC_SIZE] = size;
	r[MEMPROF_PROBE_REC_N_SAMPLES] = n_samples;
	r[MEMPROF_PROBE_REC_KIND_SOURCE] = ks;
	r[MEMPROF_PROBE_REC_STACK_PTR] = (uint64_t)(uintptr_t)&b->frames[b->n_frames];
	r[MEMPROF_PROBE_REC_STACK_LEN] = sl;
	r[MEMPROF_PROBE_REC_INV_RATE_Q16] = b->inv_q16;
	r[MEMPROF_PROBE_REC_TIME_NS] = probe_clock_ns(CLOCK_MONOTONIC);
	for (size_t k = 0; k < sl; k++)
		b->frames[b->n_frames + k] = stack[k];
	b->n_frames += (uint32_t)sl;
	b->n++;
	if (b->n == MEMPROF_PROBE_SAMPLES_MAX ||
	    PROBE_SAMPLES_FRAMES - b->n_frames < MEMPROF_PROBE_MAX_STACK)
		probe_samples_flush_locked();
}

/* Promotions and deaths waiting for the next memprof:events hit.  Locked. */
static struct probe_events probe_events_queue;

__attribute__((noinline)) void probe_events_flush_locked(void)
{
	/* A block's sample goes before its events. */
	probe_samples_flush_locked();
	probe_events_flush(&probe_events_queue);
}

/* A collection's scan begins: the deaths it finds are found within it, so
 * one clock read times them all (memprof_core.scan_ns), not one a death. */
void probe_scan_begin_locked(void)
{
	memprof_core.scan_ns =
	    SEMAPHORE_UP(memprof_events_semaphore) ? probe_clock_ns(CLOCK_MONOTONIC) : 0;
}

void probe_scan_end_locked(void)
{
	memprof_core.scan_ns = 0;
}

void probe_event_locked(uint64_t id, unsigned what)
{
	if (probe_events_add_at(&probe_events_queue, id, what, memprof_core.scan_ns))
		probe_events_flush_locked();
}

void memprof_probe_flush(void)
{
	if (!probe_events_queue.n && !probe_samples_queue.n)
		return;
	pthread_mutex_lock(&memprof_core.lock);
	probe_events_flush_locked();
	pthread_mutex_unlock(&memprof_core.lock);
}

/*
 * Serve the queues at a poll: the flush a tracer asked for, else a flush
 * when either queue waited longer than PROBE_EVENTS_MAX_AGE_NS.  One flush
 * empties both, so one coarse clock read decides for both (none while both
 * are empty).  Read without the lock, as probe_events_service.
 */
static void probe_queues_service(void)
{
	uint32_t n_ev = probe_events_queue.n, n_smp = probe_samples_queue.n;

	if (PROBE_UNLIKELY(probe_flush_requested())) {
		__u64 request = *(volatile __u64 *)&memprof_probe_control.flush_request;
		memprof_probe_flush();
		probe_flush_served(request);
		return;
	}
	if (!n_ev && !n_smp)
		return;
	uint64_t now = probe_clock_ns(CLOCK_MONOTONIC_COARSE);
	if ((n_ev && (int64_t)(now - probe_events_queue.first_ns) > PROBE_EVENTS_MAX_AGE_NS) ||
	    (n_smp && (int64_t)(now - probe_samples_queue.first_ns) > PROBE_EVENTS_MAX_AGE_NS))
		memprof_probe_flush();
}

int memprof_probe_service(void)
{
	if (!tracer_attached())
		return 0;
	probe_queues_service();
	return 1;
}

void memprof_probe_gc(unsigned phase, uint64_t minor_heap_bytes, uint64_t major_heap_bytes)
{
	uint64_t p = phase;

	if (SEMAPHORE_UP(memprof_gc_semaphore) && probe_sites_armed())
		DTRACE_PROBE3(memprof, gc, p, minor_heap_bytes, major_heap_bytes);
}

void probe_count_dropped(void)
{
	memprof_core.stats.dropped++;
	__atomic_fetch_add(&memprof_probe_control.dropped, 1, __ATOMIC_RELAXED);
}

void probe_publish_locked(void)
{
	struct rate r;
	uint32_t flags = 0;

	if (memprof_core.sampling)
		flags = MEMPROF_PROBE_F_IN_PROCESS;
	else if (memprof_core.tracer_on)
		flags = MEMPROF_PROBE_F_TRACER;
	rate_read(&r);
	__atomic_store(&memprof_probe_control.active_rate, &r.lambda, __ATOMIC_RELAXED);
	__atomic_store_n(&memprof_probe_control.flags, flags, __ATOMIC_RELEASE);
}

static double probe_requested_rate(void)
{
	double want = *(volatile double *)&memprof_probe_control.requested_rate;

	if (isnan(want) || want <= 0 || want > 1)
		return MEMPROF_PROBE_DEFAULT_RATE;
	return want;
}

/* The tracer went away: entries kept only for it go, the others stop firing. */
static void probe_forget_locked(void)
{
	probe_events_flush_locked();
	for (size_t i = 0; i < memprof_core.tbl.len; i++) {
		struct entry *e = &memprof_core.tbl.t[i];
		if (!e->traced)
			continue;
		e->traced = 0;
		entries_settle(i);
	}
	entries_compact();
}

int memprof_tracer_attached(void)
{
	return tracer_attached();
}

int probe_poll(void)
{
	int up = tracer_attached();

	if (up == atomic_load_explicit(&tracer_seen, memory_order_relaxed)) {
		/* Events wait at most PROBE_EVENTS_MAX_AGE_NS while the host runs,
		 * and no longer once the tracer asks for them. */
		probe_queues_service();
		return 0;
	}
	int changed = 0;
	pthread_mutex_lock(&memprof_core.lock);
	if (up != memprof_core.tracer_on) {
		memprof_core.tracer_on = up;
		atomic_store_explicit(&tracer_seen, up, memory_order_relaxed);
		malloc_tracer_new_generation_locked();
		if (up)
			memprof_core.tracer_rate = probe_requested_rate();
		else
			probe_forget_locked();
		changed = memprof_core.sampling == NULL;
		rate_update_locked();
	}
	pthread_mutex_unlock(&memprof_core.lock);
	return changed;
}
