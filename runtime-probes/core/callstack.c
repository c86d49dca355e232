/*
 * Call stacks for samples, one strategy for every host: unwind the calling
 * thread (libunwind's unw_backtrace, local only: DWARF call frame
 * information, no frame pointers needed, no allocation, and a per-address
 * cache that makes it much cheaper than libgcc's _Unwind_Backtrace: figures
 * in bench/results/stack-capture.md), or take the host's capture_callstack
 * hook if it has one; then drop the frames at the top that lie in the
 * profiler's own code: the core's (its code is all in section memprof_text, see build.mk)
 * and the ranges the host gave in memprof_host_ops.own_code (rt: its whole
 * runtime; the malloc host: its whole shared object).  The first frame
 * kept is the return address into the program that allocated, whichever
 * path through the host and the core the sample took.
 */
#include <stdlib.h>
#include <string.h>
#ifdef MEMPROF_CALLSTACK_GLIBC_BACKTRACE
/*
 * The ThreadSanitizer build (make tsan): glibc's backtrace(), because
 * libunwind's thread-exit destructor crashes inside TSan's interceptor.
 * The frames of the core are dropped by address all the same.
 */
#include <execinfo.h>
#else
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#include "core.h"

/* Deepest stack captured, whatever callstack_size a profile asked for. */
#define CALLSTACK_MAX_FRAMES 4096

/* The bounds of the core's code, set by the linker. */
extern const char __start_memprof_text[] __attribute__((visibility("hidden")));
extern const char __stop_memprof_text[] __attribute__((visibility("hidden")));

/* Does a return address lie in [start, end)?  It follows its call, so the
 * call itself is at ra - 1 (a call may end a function). */
static int code_range_has(uintptr_t start, uintptr_t end, uintptr_t ra)
{
	return ra - 1 - start < end - start;
}

/* Is ra a return address into the profiler's own code? */
static int callstack_is_own(uintptr_t ra)
{
	const memprof_code_range *r = memprof_core.ops.own_code;

	if (code_range_has((uintptr_t)__start_memprof_text, (uintptr_t)__stop_memprof_text, ra))
		return 1;
	for (size_t i = 0; i < MEMPROF_HOST_OWN_CODE_RANGES; i++)
		if (r[i].end > r[i].start && code_range_has(r[i].start, r[i].end, ra))
			return 1;
	return 0;
}

size_t callstack_capture(uintptr_t *buf, size_t max)
{
	size_t (*hook)(uintptr_t *, size_t) = memprof_core.ops.capture_callstack;
	size_t want = max + CALLSTACK_SKIP_SLACK, n, first = 0;

	if (max == 0)
		return 0;
	if (hook) {
		n = hook(buf, want);
		if (n > want)
			n = want;
	} else {
#ifdef MEMPROF_CALLSTACK_GLIBC_BACKTRACE
		int got = backtrace((void **)buf, (int)want);

		n = got > 0 ? (size_t)got : 0;
		/*
		 * Under TSan, backtrace() is an interceptor: its own frames come
		 * first, above the core's.  Everything before the first frame in
		 * the core goes too.
		 */
		while (first < n && !callstack_is_own(buf[first]))
			first++;
		if (first == n)
			first = 0;
#else
		int got = unw_backtrace((void **)buf, (int)want);

		n = got > 0 ? (size_t)got : 0;
#endif
	}
	while (first < n && callstack_is_own(buf[first]))
		first++;
	n -= first;
	if (n > max)
		n = max;
	if (first && n)
		memmove(buf, buf + first, n * sizeof(*buf));
	return n;
}

size_t callstack_wanted(void)
{
	size_t n = atomic_load_explicit(&memprof_core.callstack_size, memory_order_relaxed);

	/* One frame more than the probe takes: it tells a cut stack from a full one. */
	if (SEMAPHORE_UP(memprof_sample_semaphore) && n < MEMPROF_PROBE_MAX_STACK + 1)
		n = MEMPROF_PROBE_MAX_STACK + 1;
	return n;
}

void stack_buf_init(struct stack_buf *sb)
{
	sb->buf = sb->local;
	sb->len = 0;
	sb->want = callstack_wanted();
	if (sb->want > CALLSTACK_MAX_FRAMES)
		sb->want = CALLSTACK_MAX_FRAMES;
	if (sb->want > MEMPROF_PROBE_MAX_STACK + 1) {
		sb->buf = malloc((sb->want + CALLSTACK_SKIP_SLACK) * sizeof(uintptr_t));
		if (!sb->buf) {
			sb->buf = sb->local;
			sb->want = MEMPROF_PROBE_MAX_STACK + 1;
		}
	}
}

void stack_buf_free(struct stack_buf *sb)
{
	if (sb->buf != sb->local)
		free(sb->buf);
	sb->buf = sb->local;
}
