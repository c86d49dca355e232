/*
 * The fast unwinder (runtime-probes/core/unwind.c) gives exactly the frames
 * unw_backtrace gives, on stacks of several shapes: deep recursion (and a
 * stack cut at the maximum), a frame addressed from %rbp (alloca), a frame
 * larger than 64 KiB, frames of the C library (a qsort callback), a thread's
 * stack (its outermost frame), a signal handler's stack (a signal frame: the
 * unwinder hands it to unw_backtrace, and the frames are the same all the
 * same), a call that ends its function (a noreturn call: the return address
 * is past the function's end, so the rule is the one of the address
 * before).  Each stack is captured twice, the second time through its cached
 * rules.  Where the fast unwinder must walk the stack itself, the test says
 * so too, so that a fallback everywhere would not pass unseen.  And
 * memprof_unwind, the hosts' unw_backtrace, gives unw_backtrace's frames.
 */
#include <alloca.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "memprof.h"
#include "memprof_debug.h"
#include "memprof_host.h"

#define MAX_FRAMES 64
#define SLOTS (MAX_FRAMES + 32)
#define DEEP 40
#define DEEPER 100
#define BIG_FRAME_BYTES 100000
#define ALLOCA_BYTES 4000

struct pair {
	uintptr_t fast[SLOTS], ref[SLOTS];
	size_t n_fast, n_ref;
	int walked;
};

static volatile uintptr_t sink; /* keeps calls from being tail calls */

static __attribute__((noinline)) void take(struct pair *p)
{
	p->walked =
	    memprof_debug_callstack_pair(p->fast, &p->n_fast, p->ref, &p->n_ref, MAX_FRAMES);
	sink++;
}

/* Twice from the same place: the second walk runs on cached rules. */
static __attribute__((noinline)) void take_twice(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		take(&p[i]);
		sink++;
	}
}

static void expect_same(const struct pair *p, const char *what)
{
	for (int i = 0; i < 2; i++) {
		cr_assert_gt(p[i].n_ref, 0, "%s: unw_backtrace gave no frame", what);
		cr_assert_eq(p[i].n_fast, p[i].n_ref,
			     "%s (capture %d): %zu frames, unw_backtrace %zu", what, i, p[i].n_fast,
			     p[i].n_ref);
		for (size_t k = 0; k < p[i].n_ref; k++)
			cr_assert_eq(p[i].fast[k], p[i].ref[k],
				     "%s (capture %d): frame %zu is %#lx, unw_backtrace %#lx", what,
				     i, k, (unsigned long)p[i].fast[k], (unsigned long)p[i].ref[k]);
	}
}

static void expect_walked(const struct pair *p, const char *what)
{
	cr_expect(p[0].walked && p[1].walked, "%s: the fast unwinder handed the stack over", what);
}

static __attribute__((noinline)) void recurse(int depth, struct pair *p)
{
	if (depth > 0)
		recurse(depth - 1, p);
	else
		take_twice(p);
	sink++;
}

Test(unwind, deep_recursion)
{
	struct pair p[2];

	recurse(DEEP, p);
	expect_same(p, "recursion");
	expect_walked(p, "recursion");
}

Test(unwind, a_stack_cut_at_the_maximum)
{
	struct pair p[2];

	recurse(DEEPER, p);
	expect_same(p, "deeper recursion");
	cr_expect_eq(p[0].n_fast, MAX_FRAMES);
	expect_walked(p, "deeper recursion");
}

static __attribute__((noinline)) void with_alloca(size_t bytes, struct pair *p)
{
	volatile char *b = alloca(bytes);

	b[0] = 1;
	b[bytes - 1] = 2;
	take_twice(p);
	sink += (uintptr_t)b[0] + (uintptr_t)b[bytes - 1];
}

Test(unwind, a_frame_addressed_from_rbp)
{
	struct pair p[2];

	with_alloca(ALLOCA_BYTES, p);
	expect_same(p, "alloca");
	expect_walked(p, "alloca");
}

/*
 * A host's entry point, as the malloc host's slow path: it keeps a frame
 * pointer and hands its caller's frame to the core (memprof_capture_from),
 * so the fast walk starts there.
 */
static __attribute__((noinline, optimize("no-omit-frame-pointer"))) void host_entry(struct pair *p)
{
	const uintptr_t *frame = __builtin_frame_address(0);

	memprof_capture_from(frame[1], (uintptr_t)(frame + 2), frame[0]);
	p->walked =
	    memprof_debug_callstack_pair(p->fast, &p->n_fast, p->ref, &p->n_ref, MAX_FRAMES);
	memprof_capture_from(0, 0, 0);
	sink++;
}

/* The walk from the host's caller: unw_backtrace's frames after its first
 * (the return address into host_entry). */
static void expect_from_caller(const struct pair *p, const char *what)
{
	cr_assert(p->walked, "%s: the fast unwinder handed the stack over", what);
	cr_assert_gt(p->n_ref, 1, "%s: unw_backtrace gave %zu frames", what, p->n_ref);
	cr_assert_geq(p->n_fast, p->n_ref - 1, "%s: %zu frames, unw_backtrace %zu", what, p->n_fast,
		      p->n_ref);
	for (size_t k = 0; k + 1 < p->n_ref; k++)
		cr_assert_eq(p->fast[k], p->ref[k + 1], "%s: frame %zu is %#lx, unw_backtrace %#lx",
			     what, k, (unsigned long)p->fast[k], (unsigned long)p->ref[k + 1]);
}

static __attribute__((noinline)) void recurse_to_host(int depth, struct pair *p)
{
	if (depth > 0)
		recurse_to_host(depth - 1, p);
	else
		host_entry(p);
	sink++;
}

/* The host's caller addresses its frame from %rbp (alloca): the walk needs
 * the caller's %rbp, read from the host's frame. */
static __attribute__((noinline)) void alloca_to_host(size_t bytes, struct pair *p)
{
	volatile char *b = alloca(bytes);

	b[0] = 1;
	b[bytes - 1] = 2;
	host_entry(p);
	sink += (uintptr_t)b[0] + (uintptr_t)b[bytes - 1];
}

Test(unwind, from_the_hosts_caller)
{
	struct pair p;

	recurse_to_host(DEEP, &p);
	expect_from_caller(&p, "recursion");
	alloca_to_host(ALLOCA_BYTES, &p);
	expect_from_caller(&p, "alloca");
	/* Once the host cleared it, a walk starts from its own frame again. */
	take(&p);
	cr_expect(p.n_fast == p.n_ref && p.fast[0] == p.ref[0], "a start left behind");
}

static __attribute__((noinline)) void big_frame(struct pair *p)
{
	volatile char b[BIG_FRAME_BYTES];

	b[0] = 1;
	b[BIG_FRAME_BYTES - 1] = 2;
	take_twice(p);
	sink += (uintptr_t)b[0] + (uintptr_t)b[BIG_FRAME_BYTES - 1];
}

Test(unwind, a_frame_larger_than_64_kib)
{
	struct pair p[2];

	big_frame(p);
	expect_same(p, "big frame");
	expect_walked(p, "big frame");
}

static jmp_buf back;

static __attribute__((noinline, noreturn)) void take_and_jump(struct pair *p)
{
	take_twice(p);
	longjmp(back, 1);
}

/* Its last instruction is the call: the return address is past its end. */
static __attribute__((noinline)) void ends_in_a_call(struct pair *p)
{
	sink++;
	take_and_jump(p);
}

Test(unwind, a_call_that_ends_its_function)
{
	static struct pair p[2];

	if (!setjmp(back))
		ends_in_a_call(p);
	expect_same(p, "noreturn call");
	expect_walked(p, "noreturn call");
}

static struct pair *sort_pairs;

static int compare_and_take(const void *a, const void *b)
{
	if (sort_pairs) {
		take_twice(sort_pairs);
		sort_pairs = NULL;
	}
	return *(const int *)a - *(const int *)b;
}

Test(unwind, through_the_c_library)
{
	struct pair p[2];
	int v[] = {5, 3, 9, 1, 7, 2, 8};

	sort_pairs = p;
	qsort(v, sizeof(v) / sizeof(v[0]), sizeof(v[0]), compare_and_take);
	cr_assert_null(sort_pairs, "the comparator ran");
	expect_same(p, "qsort callback");
	expect_walked(p, "qsort callback");
}

static void *thread_main(void *arg)
{
	recurse(3, arg);
	return NULL;
}

Test(unwind, a_threads_whole_stack)
{
	struct pair p[2];
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, thread_main, p), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	expect_same(p, "thread");
	expect_walked(p, "thread");
}

static struct pair *signal_pairs;

static void on_signal(int sig)
{
	(void)sig;
	take_twice(signal_pairs);
}

Test(unwind, a_signal_handler)
{
	struct pair p[2];
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	signal_pairs = p;
	cr_assert_eq(sigaction(SIGUSR1, &sa, &old), 0);
	raise(SIGUSR1);
	sigaction(SIGUSR1, &old, NULL);
	expect_same(p, "signal handler");
}

Test(unwind, counts_its_walks)
{
	struct pair p[2];
	size_t fast0, slow0, fast1, slow1;

	memprof_debug_unwind_stats(&fast0, &slow0);
	recurse(2, p);
	memprof_debug_unwind_stats(&fast1, &slow1);
	cr_expect_eq(fast1 - fast0, 2, "two walks, %zu counted", fast1 - fast0);
	cr_expect_eq(slow1, slow0);
}

/* memprof_unwind and unw_backtrace side by side: only their first frames,
 * two call sites in here, differ. */
static __attribute__((noinline)) void unwind_both(uintptr_t *a, size_t *na, uintptr_t *b,
						  size_t *nb)
{
	*na = memprof_unwind(a, MAX_FRAMES);
	sink++;
	int got = unw_backtrace((void **)b, MAX_FRAMES);
	*nb = got > 0 ? (size_t)got : 0;
	sink++;
}

static __attribute__((noinline)) void recurse_unwind(int depth, uintptr_t *a, size_t *na,
						     uintptr_t *b, size_t *nb)
{
	if (depth > 0)
		recurse_unwind(depth - 1, a, na, b, nb);
	else
		unwind_both(a, na, b, nb);
	sink++;
}

Test(unwind, memprof_unwind_is_unw_backtrace)
{
	for (int depth = 0; depth <= DEEPER; depth += DEEPER / 4) {
		uintptr_t a[MAX_FRAMES], b[MAX_FRAMES];
		size_t na, nb, fast0, slow0, fast1, slow1;

		memprof_debug_unwind_stats(&fast0, &slow0);
		recurse_unwind(depth, a, &na, b, &nb);
		memprof_debug_unwind_stats(&fast1, &slow1);
		cr_expect_eq(fast1 - fast0, 1, "depth %d: the walk was not the fast one", depth);
		cr_assert_eq(na, nb, "depth %d: %zu frames, unw_backtrace %zu", depth, na, nb);
		cr_assert_gt(na, 2);
		cr_expect(a[0] > (uintptr_t)unwind_both && a[0] < (uintptr_t)unwind_both + 256,
			  "depth %d: the first frame is in the caller", depth);
		for (size_t k = 1; k < na; k++)
			cr_assert_eq(a[k], b[k], "depth %d: frame %zu is %#lx, unw_backtrace %#lx",
				     depth, k, (unsigned long)a[k], (unsigned long)b[k]);
	}
}
