/*
 * The sampler: a per-thread countdown of bytes, the Poisson draws, and the
 * young epochs.
 *
 * Each thread sees its allocations as a stream of requested bytes.  Sample
 * points fall on that stream as a Poisson process of rate lambda / 8 per
 * byte (lambda being the rate per word in force; geometric gaps drawn by
 * the core), and a block gets one sample per point it spans, so estimates
 * in bytes are exact in expectation whatever the size.  The fast path only
 * subtracts the block's bytes from `countdown` while it stays positive; the countdown
 * covers at most the distance to the next sample point, and at most a
 * check interval, so the slow path runs at least every check interval to
 * account bytes, end epochs and poll the core (a tracer may have attached).
 *
 * Epochs: the process allocates a shared count of bytes; each time it
 * crosses a multiple of the young epoch, the epoch ends (memprof_epoch_end)
 * and the young tracked blocks still alive are promoted.  Threads add their
 * bytes to the count on their slow paths, so epoch ends are seen within one
 * check interval per thread.
 */
#include <stdint.h>

#include "core.h"
#include "memprof_host.h"
#include "preload.h"

/* A countdown of 0 (budget SIZE_MAX): a new thread's first allocation takes the slow path. */
__thread struct preload_thread preload_self
    __attribute__((tls_model("initial-exec"))) = {.budget = SIZE_MAX};

static size_t epoch_bytes = PRELOAD_DEFAULT_YOUNG_EPOCH_BYTES;
static size_t major_threshold_bytes = PRELOAD_DEFAULT_MAJOR_THRESHOLD_BYTES;
static size_t check_bytes = PRELOAD_DEFAULT_YOUNG_EPOCH_BYTES / PRELOAD_EPOCH_CHECKS;
static atomic_uint_fast64_t bytes_allocated;

void sampler_configure(size_t young_epoch_bytes, size_t major_threshold)
{
	epoch_bytes = young_epoch_bytes ? young_epoch_bytes : 1;
	major_threshold_bytes = major_threshold;
	check_bytes = epoch_bytes / PRELOAD_EPOCH_CHECKS;
	if (check_bytes > PRELOAD_POLL_BYTES)
		check_bytes = PRELOAD_POLL_BYTES;
	if (check_bytes == 0)
		check_bytes = 1;
}

/* Add bytes to the process count; end the young epoch on crossing one. */
static void epochs_account(size_t bytes)
{
	uint64_t before = atomic_fetch_add_explicit(&bytes_allocated, bytes, memory_order_relaxed);

	if ((before + bytes) / epoch_bytes != before / epoch_bytes)
		memprof_epoch_end();
}

/* Arm the countdown: the next sample point is `rest` bytes away. */
static void countdown_arm(struct preload_thread *t, size_t rest, double rate)
{
	size_t check = rate > 0 ? check_bytes : PRELOAD_IDLE_POLL_BYTES;
	size_t c = rest < check ? rest : check;

	/* Inside the profiler, the countdown in force is the saved one. */
	if (t->inside)
		t->saved_countdown = c;
	else
		preload_set_countdown(t, c);
	t->armed = c;
	t->sample_after = rate > 0 ? rest - c : 0;
	t->rate = rate;
}

size_t sampler_countdown_expired(struct preload_thread *t, size_t bytes)
{
	if (t->inside || t->exited)
		return 0;
	got_poll();
	if (PRELOAD_UNLIKELY(!preload_profiler_usable())) {
		preload_init();
		if (!preload_profiler_usable())
			return 0;
	}
	if (PRELOAD_UNLIKELY(!t->registered))
		preload_register_thread(t);
	flusher_poll(t, *(volatile unsigned short *)&memprof_sample_semaphore != 0);

	size_t consumed = t->armed - preload_countdown(t) + bytes;
	size_t point = preload_countdown(t) + t->sample_after;
	double old_rate = t->rate;
	size_t n_samples = 0;
	size_t rest = SIZE_MAX;

	preload_enter_core(t);
	epochs_account(consumed);
	/* Errors of postponed callbacks have nowhere to go from malloc.  It
	 * polls the tracer semaphore: the one poll of this slow path (the
	 * draws below do not poll, and the rate is read without one). */
	(void)memprof_run_postponed();
	double rate = memprof_rate_in_force();
	if (rate > 0) {
		if (rate != old_rate)
			point = memprof_draw_gap_bytes();
		if (point <= bytes) {
			/* The first point, those after it in the block, and the
			 * distance from the block's end to the next one. */
			n_samples = 1 + memprof_draw_points_bytes(bytes - point, &rest);
		} else {
			rest = point - bytes;
		}
	}
	countdown_arm(t, rest, rate);
	/* A sampled block: the core stays entered until sampler_track. */
	if (!n_samples)
		preload_leave_core(t);
	return n_samples;
}

void sampler_track(struct preload_thread *t, void *p, size_t n_samples, size_t bytes)
{
	uint64_t handle = 0;

	MEMPROF_ASSERT(t->core_depth > 0);
	if (!p) {
		preload_leave_core(t);
		return;
	}
	sampled_blocks_prefetch(p);
	/* The alloc callback's error has nowhere to go: the block stays. */
	(void)memprof_track_malloc((memprof_value)p, bytes, n_samples,
				   bytes >= major_threshold_bytes, &handle);
	if (handle && sampled_blocks_insert(p, handle) != 0) {
		/* No room to remember it: end its tracking now rather than leak it. */
		memprof_block_freed(handle);
	}
	preload_leave_core(t);
}

void sampler_track_from(struct preload_thread *t, void *p, size_t n_samples, size_t bytes,
			const uintptr_t *frame)
{
	memprof_capture_from(frame[1], (uintptr_t)(frame + 2), frame[0]);
	sampler_track(t, p, n_samples, bytes);
	memprof_capture_from(0, 0, 0);
}

void sampler_handle_freed(struct preload_thread *t, uint64_t handle)
{
	if (!preload_profiler_usable())
		return;
	if (memprof_handle_runs_no_callback(handle)) {
		/* Only the core's mutex, which fork takes too: no gate. */
		preload_enter(t);
		memprof_block_freed(handle);
		preload_leave(t);
		return;
	}
	preload_enter_core(t);
	memprof_block_freed(handle);
	preload_leave_core(t);
}

void sampler_block_freed(struct preload_thread *t, const void *p)
{
	uint64_t handle = sampled_blocks_remove(p);

	if (handle)
		sampler_handle_freed(t, handle);
}

void sampler_force_poll(struct preload_thread *t)
{
	/* Keep the bytes allocated since arming, drop the pending sample point. */
	if (t->inside) {
		t->armed -= t->saved_countdown;
		t->saved_countdown = 0;
	} else {
		t->armed -= preload_countdown(t);
		preload_set_countdown(t, 0);
	}
	t->sample_after = 0;
	t->rate = 0;
}
