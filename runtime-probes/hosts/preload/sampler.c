/*
 * The sampler: a per-thread countdown of words, the Poisson draws, and the
 * young epochs.
 *
 * Each thread sees its allocations as a stream of words (a block of b bytes
 * is ceil(b / 8) words).  Sample points fall on that stream as a Poisson
 * process of rate lambda (geometric gaps drawn by the core), and a block
 * gets one sample per point it spans.  The fast path only subtracts the
 * block's words from `countdown` while it stays positive; the countdown
 * covers at most the distance to the next sample point, and at most a
 * check interval, so the slow path runs at least every check interval to
 * account bytes, end epochs and poll the core (a tracer may have attached).
 *
 * Epochs: the process allocates a shared count of words; each time it
 * crosses a multiple of the young epoch, the epoch ends (memprof_epoch_end)
 * and the young tracked blocks still alive are promoted.  Threads add their
 * words to the count on their slow paths, so epoch ends are seen within one
 * check interval per thread.
 */
#include <stdint.h>

#include "memprof_host.h"
#include "preload.h"

__thread struct preload_thread preload_self __attribute__((tls_model("initial-exec")));

static size_t epoch_words = PRELOAD_DEFAULT_YOUNG_EPOCH_BYTES / 8;
static size_t major_threshold_bytes = PRELOAD_DEFAULT_MAJOR_THRESHOLD_BYTES;
static size_t check_words = PRELOAD_DEFAULT_YOUNG_EPOCH_BYTES / 8 / PRELOAD_EPOCH_CHECKS;
static atomic_uint_fast64_t words_allocated;

void sampler_configure(size_t young_epoch_bytes, size_t major_threshold)
{
	epoch_words = preload_words(young_epoch_bytes);
	if (epoch_words == 0)
		epoch_words = 1;
	major_threshold_bytes = major_threshold;
	check_words = epoch_words / PRELOAD_EPOCH_CHECKS;
	if (check_words > PRELOAD_POLL_BYTES / 8)
		check_words = PRELOAD_POLL_BYTES / 8;
	if (check_words == 0)
		check_words = 1;
}

/* Add words to the process count; end the young epoch on crossing one. */
static void epochs_account(size_t words)
{
	uint64_t before = atomic_fetch_add_explicit(&words_allocated, words, memory_order_relaxed);

	if ((before + words) / epoch_words != before / epoch_words)
		memprof_epoch_end();
}

/* Arm the countdown: the next sample point is `rest` words away. */
static void countdown_arm(struct preload_thread *t, size_t rest, double rate)
{
	size_t c = rest < check_words ? rest : check_words;

	t->countdown = c;
	t->armed = c;
	t->sample_after = rate > 0 ? rest - c : 0;
	t->rate = rate;
}

size_t sampler_countdown_expired(struct preload_thread *t, size_t words)
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

	size_t consumed = t->armed - t->countdown + words;
	size_t point = t->countdown + t->sample_after;
	double old_rate = t->rate;
	size_t n_samples = 0;
	size_t rest = SIZE_MAX;

	preload_enter_core(t);
	epochs_account(consumed);
	/* Errors of postponed callbacks have nowhere to go from malloc. */
	(void)memprof_run_postponed();
	double rate = memprof_current_rate();
	if (rate > 0) {
		if (rate != old_rate)
			point = memprof_draw_gap();
		if (point <= words) {
			n_samples = 1 + memprof_draw_binomial(words - point);
			rest = memprof_draw_gap();
		} else {
			rest = point - words;
		}
	}
	preload_leave_core(t);
	countdown_arm(t, rest, rate);
	return n_samples;
}

void sampler_track(struct preload_thread *t, void *p, size_t words, size_t n_samples, size_t bytes)
{
	uint64_t handle = 0;

	preload_enter_core(t);
	/* The alloc callback's error has nowhere to go: the block stays. */
	(void)memprof_track_malloc((memprof_value)p, words, n_samples,
				   bytes >= major_threshold_bytes, &handle);
	if (handle && sampled_blocks_insert(p, handle) != 0) {
		/* No room to remember it: end its tracking now rather than leak it. */
		memprof_block_freed(handle);
	}
	preload_leave_core(t);
}

void sampler_handle_freed(struct preload_thread *t, uint64_t handle)
{
	if (!preload_profiler_usable())
		return;
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
	/* Keep the words allocated since arming, drop the pending sample point. */
	if (t->inside) {
		t->armed -= t->saved_countdown;
		t->saved_countdown = 0;
	} else {
		t->armed -= t->countdown;
		t->countdown = 0;
	}
	t->sample_after = 0;
	t->rate = 0;
}
