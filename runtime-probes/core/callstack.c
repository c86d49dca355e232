/*
 * Call stacks for samples: the host's capture_callstack hook if it has one,
 * else libgcc's DWARF unwinder (_Unwind_Backtrace), which needs no frame
 * pointers and does not allocate.
 */
#include <stdlib.h>
#include <unwind.h>
#ifdef MEMPROF_CALLSTACK_GLIBC_BACKTRACE
#include <execinfo.h>
#endif

#include "core.h"

/* Frames of the core above the host: callstack_capture itself and the
 * exported function that called it. */
#define CORE_FRAMES 2
/* Deepest stack captured, whatever callstack_size a profile asked for. */
#define CALLSTACK_MAX_FRAMES 4096

struct unwind_walk {
	uintptr_t *buf;
	size_t max;
	size_t n;
	size_t skip;
};

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_walk *w = arg;
	uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);

	if (ip == 0)
		return _URC_END_OF_STACK;
	if (w->skip) {
		w->skip--;
		return _URC_NO_REASON;
	}
	if (w->n >= w->max)
		return _URC_END_OF_STACK;
	w->buf[w->n++] = ip;
	return _URC_NO_REASON;
}

__attribute__((noinline)) size_t callstack_capture(uintptr_t *buf, size_t max)
{
	if (max == 0)
		return 0;
	size_t (*hook)(uintptr_t *, size_t) = memprof_core.ops.capture_callstack;
	if (hook) {
		size_t n = hook(buf, max);
		return n > max ? max : n;
	}
#ifdef MEMPROF_CALLSTACK_GLIBC_BACKTRACE
	/* The ThreadSanitizer build: glibc's backtrace(), which TSan tolerates. */
	{
		void *frames[MEMPROF_PROBE_MAX_STACK + CORE_FRAMES];
		int n = backtrace(
		    frames, (int)(max < MEMPROF_PROBE_MAX_STACK ? max : MEMPROF_PROBE_MAX_STACK) +
				CORE_FRAMES);
		size_t k = 0;

		for (int i = CORE_FRAMES; i < n; i++)
			buf[k++] = (uintptr_t)frames[i];
		return k;
	}
#endif
	struct unwind_walk w = {.buf = buf, .max = max, .skip = CORE_FRAMES};
	_Unwind_Backtrace(unwind_step, &w);
	/* Keep this frame a real call frame (no tail call). */
	__asm__ volatile("" ::: "memory");
	return w.n;
}

size_t callstack_wanted(void)
{
	size_t n = atomic_load_explicit(&memprof_core.callstack_size, memory_order_relaxed);

	if (SEMAPHORE_UP(memprof_sample_semaphore) && n < MEMPROF_PROBE_MAX_STACK)
		n = MEMPROF_PROBE_MAX_STACK;
	return n;
}

void stack_buf_init(struct stack_buf *sb)
{
	sb->buf = sb->local;
	sb->len = 0;
	sb->want = callstack_wanted();
	if (sb->want > CALLSTACK_MAX_FRAMES)
		sb->want = CALLSTACK_MAX_FRAMES;
	if (sb->want > MEMPROF_PROBE_MAX_STACK) {
		sb->buf = malloc(sb->want * sizeof(uintptr_t));
		if (!sb->buf) {
			sb->buf = sb->local;
			sb->want = MEMPROF_PROBE_MAX_STACK;
		}
	}
}

void stack_buf_free(struct stack_buf *sb)
{
	if (sb->buf != sb->local)
		free(sb->buf);
	sb->buf = sb->local;
}
