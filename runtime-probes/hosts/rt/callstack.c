/*
 * rt's capture_callstack hook: call stacks of samples start in the mutator,
 * at the return address of the outermost rt entry (rt_internal.h,
 * rt_entry_mark), as OCaml's start at the allocation point in the program.
 *
 * Unwinding is libunwind's unw_backtrace (local only): it walks the DWARF
 * call frame information, so it needs no frame pointers, and caches what
 * it learns per code address, which makes it an order of magnitude cheaper
 * per stack than libgcc's _Unwind_Backtrace.
 *
 * The frames above the mark (this hook, the core, rt's slow path) are
 * unwound and dropped.  If the mark is not among the unwound frames (no
 * entry marked it, or it lies deeper than the slack below), the whole
 * stack below this hook is kept: a sample is never lost.
 */
#if !defined(RT_NO_MEMPROF)

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdlib.h>

#include "rt_internal.h"

/* Frames unwound beyond what is asked, for those above the mark: this hook,
 * the core's (a few) and rt's (the entry, its slow path, a nested entry). */
#define RT_CALLSTACK_INNER_SLACK 32
/* Frames unwound into a buffer on the stack; deeper requests malloc one. */
#define RT_CALLSTACK_LOCAL_FRAMES (MEMPROF_PROBE_MAX_STACK + RT_CALLSTACK_INNER_SLACK)
/* Deepest stack returned (the core asks for at most as many). */
#define RT_CALLSTACK_MAX_FRAMES 4096
/* frames[0] is the return address into this hook: the fallback skips it. */
#define RT_CALLSTACK_SELF_FRAMES 1

_Thread_local uintptr_t rt_mutator_return;

/* Index of the first frame equal to the mark, or `skip` if it is absent. */
static size_t first_mutator_frame(void *const *frames, size_t n, uintptr_t mark, size_t skip)
{
	if (mark) {
		for (size_t i = 0; i < n; i++)
			if ((uintptr_t)frames[i] == mark)
				return i;
	}
	return skip < n ? skip : n;
}

__attribute__((noinline)) size_t rt_capture_callstack(uintptr_t *buf, size_t max)
{
	void *local[RT_CALLSTACK_LOCAL_FRAMES];
	void **frames = local;
	size_t want, n, first, len;
	int got;

	if (max == 0)
		return 0;
	if (max > RT_CALLSTACK_MAX_FRAMES)
		max = RT_CALLSTACK_MAX_FRAMES;
	want = max + RT_CALLSTACK_INNER_SLACK;
	if (want > RT_CALLSTACK_LOCAL_FRAMES) {
		frames = malloc(want * sizeof(*frames));
		if (!frames) {
			frames = local;
			want = RT_CALLSTACK_LOCAL_FRAMES;
		}
	}
	got = unw_backtrace(frames, (int)want);
	n = got > 0 ? (size_t)got : 0;
	first = first_mutator_frame(frames, n, rt_mutator_return, RT_CALLSTACK_SELF_FRAMES);
	len = n - first < max ? n - first : max;
	for (size_t i = 0; i < len; i++)
		buf[i] = (uintptr_t)frames[first + i];
	if (frames != local)
		free(frames);
	/* Keep this frame a real call frame (frames[0] is inside it). */
	__asm__ volatile("" ::: "memory");
	return len;
}

#else
/* ISO C forbids an empty translation unit. */
typedef int rt_callstack_unused;
#endif
