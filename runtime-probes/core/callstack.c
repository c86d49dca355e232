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

/* The program counter, %rsp and %rbp at this point of the calling function. */
#if UNWIND_FAST
#define CALLSTACK_HERE(pc, sp, fp)                                                                 \
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"                      \
			 : "=r"(pc), "=r"(sp), "=r"(fp))
#endif

/* unw_backtrace into buf, up to want frames (inlined: its first frame is
 * in the caller, as when callstack_capture called unw_backtrace itself). */
static inline __attribute__((always_inline)) size_t callstack_unw(uintptr_t *buf, size_t want)
{
#ifdef MEMPROF_CALLSTACK_GLIBC_BACKTRACE
	/* The TSan build (see the top): its own frames come first here. */
	int got = backtrace((void **)buf, (int)want);
#else
	int got = unw_backtrace((void **)buf, (int)want);
#endif

	return got > 0 ? (size_t)got : 0;
}

/* Drop the profiler's frames at the top of buf[0, n); the count left, at most max. */
static size_t callstack_drop_own(uintptr_t *buf, size_t n, size_t first, size_t max)
{
	while (first < n && callstack_is_own(buf[first]))
		first++;
	n -= first;
	if (n > max)
		n = max;
	if (first && n)
		memmove(buf, buf + first, n * sizeof(*buf));
	return n;
}

#if UNWIND_FAST && defined(MEMPROF_DEBUG)
/* Frames of the check's own above callstack_capture's caller in its reference. */
#define CALLSTACK_CHECK_SLACK 4
/*
 * The sanitized build checks every fast walk against unw_backtrace: from
 * the frame of callstack_capture's caller on (buf[1]), both must be the
 * same frames, as many (fewer only where the walk stopped at want).
 */
static __attribute__((noinline)) void callstack_check_walk(const uintptr_t *buf, size_t n,
							   size_t want)
{
	uintptr_t ref[MEMPROF_PROBE_MAX_STACK + 1 + 2 * CALLSTACK_SKIP_SLACK];
	size_t got, j = 0;

	if (n < 2 || want + CALLSTACK_CHECK_SLACK > sizeof(ref) / sizeof(ref[0]))
		return;
	got = callstack_unw(ref, want + CALLSTACK_CHECK_SLACK);
	while (j < got && j <= CALLSTACK_CHECK_SLACK && ref[j] != buf[1])
		j++;
	MEMPROF_ASSERT(j < got && j <= CALLSTACK_CHECK_SLACK);
	MEMPROF_ASSERT(n == want ? got - j >= n - 1 : got - j == n - 1);
	for (size_t k = 1; k < n; k++)
		MEMPROF_ASSERT(ref[j + k - 1] == buf[k]);
}

/*
 * The same check for a walk that started at the host's caller
 * (memprof_capture_from): unw_backtrace from here, the profiler's frames
 * dropped, must reach the same frames (after at most CALLSTACK_CHECK_SLACK
 * of the host's outside its own code), as many.
 */
static __attribute__((noinline)) void callstack_check_from(const uintptr_t *buf, size_t n,
							   size_t max)
{
	uintptr_t ref[MEMPROF_PROBE_MAX_STACK + 1 + 2 * CALLSTACK_SKIP_SLACK];
	size_t want = max + CALLSTACK_CHECK_SLACK, got, j = 0;

	if (n == 0 || want + CALLSTACK_SKIP_SLACK > sizeof(ref) / sizeof(ref[0]))
		return;
	got = callstack_drop_own(ref, callstack_unw(ref, want + CALLSTACK_SKIP_SLACK), 0, want);
	while (j < got && j <= CALLSTACK_CHECK_SLACK && ref[j] != buf[0])
		j++;
	MEMPROF_ASSERT(j < got && j <= CALLSTACK_CHECK_SLACK);
	MEMPROF_ASSERT(n == max ? got - j >= n : got - j == n);
	for (size_t k = 0; k < n; k++)
		MEMPROF_ASSERT(ref[j + k] == buf[k]);
}
#endif

#if UNWIND_FAST
/*
 * The walk from the host's caller (memprof_capture_from), when the host gave one outside the
 * profiler's code: none of the profiler's frames is walked or dropped.
 * UNWIND_FALLBACK when there is none, or a frame is not one the walk takes.
 */
static size_t callstack_walk_from(uintptr_t *buf, size_t max)
{
	struct callstack_from f = memprof_ts.from;
	size_t n;

	memprof_ts.from.ra = 0; /* one capture only */
	if (!f.ra || callstack_is_own(f.ra))
		return UNWIND_FALLBACK;
	n = unwind_walk(buf, max, f.ra, f.sp, f.fp, UNWIND_FIRST_RA);
#ifdef MEMPROF_DEBUG
	if (n != UNWIND_FALLBACK)
		callstack_check_from(buf, n, max);
#endif
	return n;
}
#endif

void memprof_capture_from(uintptr_t ra, uintptr_t sp, uintptr_t fp)
{
	memprof_ts.from = (struct callstack_from){.ra = ra, .sp = sp, .fp = fp};
}

size_t callstack_capture(uintptr_t *buf, size_t max)
{
	size_t (*hook)(uintptr_t *, size_t) = memprof_core.ops.capture_callstack;
	size_t want = max + CALLSTACK_SKIP_SLACK, n, first = 0;

	if (max == 0)
		return 0;
#if UNWIND_FAST
	if (!hook && memprof_ts.from.ra && (n = callstack_walk_from(buf, max)) != UNWIND_FALLBACK)
		return n;
#endif
	if (hook) {
		n = hook(buf, want);
		if (n > want)
			n = want;
	} else {
#if UNWIND_FAST
		uintptr_t pc, sp, fp;

		CALLSTACK_HERE(pc, sp, fp);
		n = unwind_walk(buf, want, pc, sp, fp, UNWIND_FIRST_PC);
		if (n == UNWIND_FALLBACK)
			n = callstack_unw(buf, want);
#ifdef MEMPROF_DEBUG
		else
			callstack_check_walk(buf, n, want);
#endif
#elif defined(MEMPROF_CALLSTACK_GLIBC_BACKTRACE)
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
		n = callstack_unw(buf, want);
#endif
	}
	return callstack_drop_own(buf, n, first, max);
}

int memprof_debug_callstack_pair(uintptr_t *fast, size_t *n_fast, uintptr_t *ref, size_t *n_ref,
				 size_t max)
{
	size_t want = max + CALLSTACK_SKIP_SLACK, n = UNWIND_FALLBACK;
	int walked = 0;

#if UNWIND_FAST
	uintptr_t pc, sp, fp;

	if (memprof_ts.from.ra && (n = callstack_walk_from(fast, max)) != UNWIND_FALLBACK) {
		*n_fast = n;
		*n_ref = callstack_drop_own(ref, callstack_unw(ref, want), 0, max);
		return 1;
	}
	CALLSTACK_HERE(pc, sp, fp);
	n = unwind_walk(fast, want, pc, sp, fp, UNWIND_FIRST_PC);
#endif
	if (n == UNWIND_FALLBACK)
		n = callstack_unw(fast, want);
	else
		walked = 1;
	*n_fast = callstack_drop_own(fast, n, 0, max);
	*n_ref = callstack_drop_own(ref, callstack_unw(ref, want), 0, max);
	return walked;
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

__attribute__((noinline)) size_t memprof_unwind(uintptr_t *buf, size_t max)
{
	uintptr_t ref[MEMPROF_UNWIND_MAX + 1];
	size_t n = UNWIND_FALLBACK, got;

	if (max > MEMPROF_UNWIND_MAX)
		max = MEMPROF_UNWIND_MAX;
	if (max == 0)
		return 0;
#if UNWIND_FAST
	uintptr_t pc, sp, fp;

	/* This function's own frame is walked, not recorded: the first is the caller's. */
	CALLSTACK_HERE(pc, sp, fp);
	n = unwind_walk(buf, max, pc, sp, fp, UNWIND_SKIP_FIRST);
#ifndef MEMPROF_DEBUG
	if (n != UNWIND_FALLBACK)
		return n;
#endif
#endif
	/* unw_backtrace from here: its first frame, in this function, goes. */
	got = callstack_unw(ref, max + 1);
	if (got == 0)
		return 0;
	if (n != UNWIND_FALLBACK) {
		/* The sanitized build: the walk must be unw_backtrace's frames. */
		MEMPROF_ASSERT(n == got - 1);
		for (size_t k = 0; k < n && k + 1 < got; k++)
			MEMPROF_ASSERT(buf[k] == ref[k + 1]);
		return n;
	}
	memcpy(buf, ref + 1, (got - 1) * sizeof(*buf));
	return got - 1;
}
