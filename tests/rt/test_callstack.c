/*
 * Call stacks of samples taken through rt start in the mutator: frame 0 is
 * the return address inside the noinline function that called the rt
 * entry (rt_alloc, rt_alloc_major, rt_alloc_comb, rt_alloc_custom,
 * rt_unmarshal), frame 1 is inside the function that called that one, and
 * no frame lies in rt's entries or the core's.  The core drops the frames
 * in its own code and in rt's (section rt_text, given as the host's
 * own_code by runtime.c); this holds under callbacks that allocate, after
 * errors and after a thread exiting in a callback.  Function ranges come
 * from ELF symbols (the binary is linked -rdynamic).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "memprof.h"
#include "rt.h"
#include "rt_internal.h"

#define MAX_SAMPLES 64
#define MAX_FRAMES 32
#define CALLBACK_ERROR 77

struct sample {
	uintptr_t frames[MAX_FRAMES];
	size_t len;
	enum memprof_source source;
};

static struct {
	struct sample s[MAX_SAMPLES];
	size_t n;
	int fail_next;	 /* the next alloc callback returns CALLBACK_ERROR */
	int allocate;	 /* alloc callbacks allocate through every rt entry */
	int exit_thread; /* alloc callbacks exit the (non-main) thread */
} rec;

static volatile uintptr_t sink; /* keeps calls from being tail calls */

static void allocate_everywhere(void)
{
	static const size_t sizes[] = {2, 3};
	rt_value v[2];

	if (rt_alloc(5, 0, &v[0]) || rt_alloc_major(5, 0, &v[0]) || rt_alloc_comb(2, sizes, 0, v) ||
	    rt_alloc(1000, 0, &v[0]))
		sink = 0;
}

static int record(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	*out = MEMPROF_NONE;
	if (rec.n < MAX_SAMPLES) {
		struct sample *s = &rec.s[rec.n++];

		s->len = info->callstack_len < MAX_FRAMES ? info->callstack_len : MAX_FRAMES;
		memcpy(s->frames, info->callstack, s->len * sizeof(uintptr_t));
		s->source = info->source;
	}
	if (rec.allocate)
		allocate_everywhere();
	if (rec.exit_thread)
		rt_thread_exit((void *)1);
	if (rec.fail_next) {
		rec.fail_next = 0;
		return CALLBACK_ERROR;
	}
	return 0;
}

static const memprof_tracker recorder = {.alloc_minor = record, .alloc_major = record};

static void setup(void)
{
	cr_assert_eq(rt_init(NULL), 0);
	memprof_set_seed(7);
	memset(&rec, 0, sizeof(rec));
	cr_assert_eq(memprof_start(1.0, MAX_FRAMES, &recorder), 0);
}

static void teardown(void)
{
	memprof_stop();
	memprof_discard();
	rt_shutdown();
}

TestSuite(rt_callstack, .init = setup, .fini = teardown);

/* ---- Address ranges from ELF symbols ---- */

struct fn_range {
	uintptr_t lo, hi;
};

static struct fn_range range_of(void *fn)
{
	Dl_info dli;
	const ElfW(Sym) *sym = NULL;

	cr_assert(dladdr1(fn, &dli, (void **)&sym, RTLD_DL_SYMENT) && sym,
		  "no ELF symbol for a function (link with -rdynamic)");
	cr_assert_eq(dli.dli_saddr, fn, "the symbol found does not start at the function");
	cr_assert_gt(sym->st_size, 0);
	return (struct fn_range){(uintptr_t)fn, (uintptr_t)fn + sym->st_size};
}

/* A return address follows its call: it may equal the function's end. */
static int in_range(struct fn_range r, uintptr_t ra)
{
	return ra > r.lo && ra <= r.hi;
}

/* The entries of rt and the core a sampled stack passes through. */
static void *const runtime_fns[] = {
    (void *)rt_alloc,
    (void *)rt_alloc_major,
    (void *)rt_alloc_comb,
    (void *)rt_alloc_custom,
    (void *)rt_unmarshal,
    (void *)rt_alloc_young,
    (void *)memprof_track_young,
    (void *)memprof_track_major,
    (void *)memprof_track_custom,
    (void *)memprof_track_intern,
};

/* Sample i starts in `mutator`, called from `caller`, with no runtime frame. */
static void assert_starts_in(size_t i, void *mutator, void *caller, const char *name)
{
	const struct sample *s = &rec.s[i];

	cr_assert_lt(i, rec.n, "%s: no sample %zu (%zu samples)", name, i, rec.n);
	cr_assert_geq(s->len, 2, "%s: sample %zu has %zu frames", name, i, s->len);
	cr_assert(in_range(range_of(mutator), s->frames[0]),
		  "%s: sample %zu: frame 0 (%#lx) is not inside the mutator", name, i,
		  (unsigned long)s->frames[0]);
	cr_assert(in_range(range_of(caller), s->frames[1]),
		  "%s: sample %zu: frame 1 (%#lx) is not inside the mutator's caller", name, i,
		  (unsigned long)s->frames[1]);
	for (size_t k = 0; k < s->len; k++)
		for (size_t f = 0; f < sizeof(runtime_fns) / sizeof(runtime_fns[0]); f++)
			cr_assert(!in_range(range_of(runtime_fns[f]), s->frames[k]),
				  "%s: sample %zu: frame %zu is inside the runtime (entry %zu)",
				  name, i, k, f);
}

static void assert_all_start_in(void *mutator, void *caller, const char *name)
{
	cr_assert_gt(rec.n, 0, "%s: no sample", name);
	for (size_t i = 0; i < rec.n; i++)
		assert_starts_in(i, mutator, caller, name);
}

/* ---- Mutators: noinline, each calls one rt entry and uses its result ---- */

static int last_err;

static void note(int err, rt_value v)
{
	last_err = err;
	sink = v;
}

__attribute__((noinline, noclone)) void mutator_alloc(void)
{
	rt_value v = RT_UNIT;
	int err = rt_alloc(4, 0, &v);

	note(err, v);
}

__attribute__((noinline, noclone)) void mutator_alloc_large(void)
{
	rt_value v = RT_UNIT;
	int err = rt_alloc(RT_MAX_YOUNG_WOSIZE + 100, 0, &v);

	note(err, v);
}

__attribute__((noinline, noclone)) void mutator_alloc_major(void)
{
	rt_value v = RT_UNIT;
	int err = rt_alloc_major(6, 0, &v);

	note(err, v);
}

__attribute__((noinline, noclone)) void mutator_alloc_comb(void)
{
	static const size_t sizes[] = {3, 4, 5};
	rt_value v[3] = {RT_UNIT, RT_UNIT, RT_UNIT};
	int err = rt_alloc_comb(3, sizes, 0, v);

	note(err, v[2]);
}

static void custom_free(void *data)
{
	free(data);
}

__attribute__((noinline, noclone)) void mutator_alloc_custom(void)
{
	void *data = malloc(16);
	rt_value v = RT_UNIT;
	int err;

	cr_assert_not_null(data);
	err = rt_alloc_custom(data, 4096, custom_free, &v);
	if (err)
		free(data);
	note(err, v);
}

static void *marshaled;
static size_t marshaled_len;

__attribute__((noinline, noclone)) void mutator_unmarshal(void)
{
	rt_value v = RT_UNIT;
	int err = rt_unmarshal(marshaled, marshaled_len, &v);

	note(err, v);
}

/* The mutator's caller: frame 1 of every sample. */
__attribute__((noinline, noclone)) void call_mutator(void (*mutator)(void))
{
	mutator();
	sink++;
}

/* A two-block tree to unmarshal, made before sampling starts. */
static void make_marshaled(void)
{
	rt_value a = RT_UNIT, b = RT_UNIT;

	cr_assert_eq(memprof_stop(), 0);
	RT_ROOTS(2, &a, &b);
	cr_assert_eq(rt_alloc(2, 0, &a), 0);
	cr_assert_eq(rt_alloc(3, 0, &b), 0);
	rt_store_field(a, 0, b);
	cr_assert_eq(rt_marshal(a, &marshaled, &marshaled_len), 0);
	RT_ROOTS_END();
	cr_assert_eq(memprof_discard(), 0);
	cr_assert_eq(memprof_start(1.0, MAX_FRAMES, &recorder), 0);
}

static void run(void (*mutator)(void), int expect_err)
{
	call_mutator(mutator);
	cr_assert_eq(last_err, expect_err, "the allocation returned %d", last_err);
}

/* ---- Every sampling entry ---- */

Test(rt_callstack, alloc_young)
{
	run(mutator_alloc, 0);
	cr_assert_eq(rec.n, 1);
	assert_all_start_in((void *)mutator_alloc, (void *)call_mutator, "rt_alloc");
}

Test(rt_callstack, alloc_large_goes_major)
{
	run(mutator_alloc_large, 0);
	cr_assert_eq(rec.n, 1);
	assert_all_start_in((void *)mutator_alloc_large, (void *)call_mutator, "rt_alloc large");
}

Test(rt_callstack, alloc_major)
{
	run(mutator_alloc_major, 0);
	cr_assert_eq(rec.n, 1);
	assert_all_start_in((void *)mutator_alloc_major, (void *)call_mutator, "rt_alloc_major");
}

Test(rt_callstack, alloc_comb)
{
	run(mutator_alloc_comb, 0);
	cr_assert_eq(rec.n, 3);
	assert_all_start_in((void *)mutator_alloc_comb, (void *)call_mutator, "rt_alloc_comb");
}

Test(rt_callstack, alloc_custom)
{
	int custom = 0;

	run(mutator_alloc_custom, 0);
	cr_assert_eq(rec.n, 2, "the block and its out-of-heap memory: %zu samples", rec.n);
	for (size_t i = 0; i < rec.n; i++)
		custom += rec.s[i].source == MEMPROF_SRC_CUSTOM;
	cr_assert_eq(custom, 1);
	assert_all_start_in((void *)mutator_alloc_custom, (void *)call_mutator, "rt_alloc_custom");
}

Test(rt_callstack, unmarshal)
{
	make_marshaled();
	run(mutator_unmarshal, 0);
	free(marshaled);
	cr_assert_eq(rec.n, 2);
	for (size_t i = 0; i < rec.n; i++)
		cr_assert_eq(rec.s[i].source, MEMPROF_SRC_MARSHAL);
	assert_all_start_in((void *)mutator_unmarshal, (void *)call_mutator, "rt_unmarshal");
}

Test(rt_callstack, one_frame_is_the_mutator)
{
	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_discard(), 0);
	cr_assert_eq(memprof_start(1.0, 1, &recorder), 0);
	run(mutator_alloc_major, 0);
	cr_assert_eq(rec.n, 1);
	cr_assert_eq(rec.s[0].len, 1);
	cr_assert(in_range(range_of((void *)mutator_alloc_major), rec.s[0].frames[0]));
}

/* ---- Under callbacks, errors and thread exits ---- */

/*
 * The young block's callback allocates through every entry before the
 * custom memory is sampled: the next sample still starts in the mutator.
 */
Test(rt_callstack, callbacks_that_allocate)
{
	rec.allocate = 1;
	run(mutator_alloc_custom, 0);
	run(mutator_alloc_major, 0);
	cr_assert_eq(rt_poll(), 0);
	cr_assert_eq(rec.n, 3, "allocations in callbacks were sampled: %zu samples", rec.n);
	assert_starts_in(0, (void *)mutator_alloc_custom, (void *)call_mutator, "custom");
	assert_starts_in(1, (void *)mutator_alloc_custom, (void *)call_mutator, "custom");
	assert_starts_in(2, (void *)mutator_alloc_major, (void *)call_mutator, "major");
}

/* A failing callback at one site does not disturb the next site's stack. */
Test(rt_callstack, after_errors)
{
	void (*const sites[])(void) = {mutator_alloc, mutator_alloc_major, mutator_alloc_comb,
				       mutator_alloc_custom, mutator_alloc_large};
	const size_t nsites = sizeof(sites) / sizeof(sites[0]);

	for (size_t i = 0; i < nsites; i++) {
		rec.fail_next = 1;
		run(sites[i], CALLBACK_ERROR);
		size_t first = rec.n;
		run(sites[(i + 1) % nsites], 0);
		cr_assert_gt(rec.n, first);
		for (size_t k = first; k < rec.n; k++)
			assert_starts_in(k, (void *)sites[(i + 1) % nsites], (void *)call_mutator,
					 "after an error");
	}
}

static void *exit_in_callback(void *arg)
{
	(void)arg;
	call_mutator(mutator_alloc);
	return NULL; /* not reached: the callback exits the thread */
}

static void *alloc_in_thread(void *arg)
{
	(void)arg;
	call_mutator(mutator_alloc_major);
	return (void *)(uintptr_t)(last_err == 0 ? 2 : 3);
}

/* A thread exiting inside a callback leaves the next threads' stacks right. */
Test(rt_callstack, thread_exit_in_callback)
{
	rt_thread *t;
	void *ret = NULL;

	rec.exit_thread = 1;
	cr_assert_eq(rt_thread_create(&t, exit_in_callback, NULL), 0);
	cr_assert_eq(rt_thread_join(t, &ret), 0);
	cr_assert_eq((uintptr_t)ret, 1, "the thread did not exit in its callback");
	rec.exit_thread = 0;
	cr_assert_eq(rec.n, 1);
	assert_starts_in(0, (void *)mutator_alloc, (void *)call_mutator, "exiting thread");

	cr_assert_eq(rt_thread_create(&t, alloc_in_thread, NULL), 0);
	cr_assert_eq(rt_thread_join(t, &ret), 0);
	cr_assert_eq((uintptr_t)ret, 2, "the next thread's allocation went wrong");
	run(mutator_alloc, 0);
	cr_assert_eq(rec.n, 3);
	assert_starts_in(1, (void *)mutator_alloc_major, (void *)call_mutator, "next thread");
	assert_starts_in(2, (void *)mutator_alloc, (void *)call_mutator, "main thread");
}

/* rt's code range, as the linker laid it out: every rt entry, no mutator. */
extern const char __start_rt_text[], __stop_rt_text[];

Test(rt_callstack, rt_text_covers_the_runtime_only)
{
	const uintptr_t lo = (uintptr_t)__start_rt_text, hi = (uintptr_t)__stop_rt_text;
	void *const rt_fns[] = {(void *)rt_alloc,      (void *)rt_alloc_major,
				(void *)rt_alloc_comb, (void *)rt_alloc_custom,
				(void *)rt_unmarshal,  (void *)rt_alloc_young,
				(void *)rt_init,       (void *)rt_poll};
	void *const mutator_fns[] = {(void *)mutator_alloc, (void *)call_mutator,
				     (void *)memprof_track_major};

	cr_assert_lt(lo, hi);
	for (size_t i = 0; i < sizeof(rt_fns) / sizeof(rt_fns[0]); i++) {
		struct fn_range r = range_of(rt_fns[i]);
		cr_assert(r.lo >= lo && r.hi <= hi, "rt function %zu lies outside rt_text", i);
	}
	for (size_t i = 0; i < sizeof(mutator_fns) / sizeof(mutator_fns[0]); i++) {
		struct fn_range r = range_of(mutator_fns[i]);
		cr_assert(r.hi <= lo || r.lo >= hi, "function %zu (not rt's) lies in rt_text", i);
	}
}
