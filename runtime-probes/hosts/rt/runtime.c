/*
 * rt: runtime state, set-up and tear-down, the allocation limit, safe
 * points, block accessors, and the hooks rt gives the memprof core.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

struct rt_state rt;

_Noreturn void rt_fatal(const char *what)
{
	fprintf(stderr, "rt: fatal error: %s\n", what);
	abort();
}

int rt_vec_push(struct rt_vec *v, uintptr_t x)
{
	if (v->len == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		uintptr_t *items = realloc(v->items, cap * sizeof(*items));
		if (!items)
			return ENOMEM;
		v->items = items;
		v->cap = cap;
	}
	v->items[v->len++] = x;
	return 0;
}

void rt_vec_free(struct rt_vec *v)
{
	free(v->items);
	memset(v, 0, sizeof(*v));
}

/*
 * young_limit = max(GC trigger, memprof trigger), or young_end (above any
 * young_ptr) while a safe point is requested, so the next allocation takes
 * the slow path.  The flag is re-read after the store so a concurrent
 * rt_request_safe_point is never lost.
 */
void rt_update_young_limit(void)
{
	uintptr_t limit = rt.young_start;

	if (rt.young_trigger > limit)
		limit = rt.young_trigger;
	__atomic_store_n(&rt.young_limit, limit, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&rt.safe_point_requested, __ATOMIC_SEQ_CST))
		__atomic_store_n(&rt.young_limit, rt.young_end, __ATOMIC_SEQ_CST);
}

void rt_renew_minor_sample(void)
{
	rt.young_trigger = rt_mp_renew_minor_sample(rt.young_ptr, rt.young_start);
	rt_update_young_limit();
}

void rt_request_safe_point(void)
{
	__atomic_store_n(&rt.safe_point_requested, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&rt.young_limit, rt.young_end, __ATOMIC_SEQ_CST);
}

/*
 * A safe point: run the postponed memprof callbacks (which also lets the
 * core poll the tracer's semaphore) and return the first error.
 */
int rt_safe_point(void)
{
	int err;

	__atomic_store_n(&rt.safe_point_requested, 0, __ATOMIC_SEQ_CST);
	rt_update_young_limit();
	err = rt_mp_run_postponed();
	return err;
}

int rt_poll(void)
{
	return rt_safe_point();
}

#if RT_WITH_MEMPROF
static int host_is_young(memprof_value v)
{
	return rt_is_young_value(v);
}

static int host_young_survived(memprof_value v, memprof_value *moved)
{
	if (RT_HDR(v) != RT_FORWARDED)
		return 0;
	*moved = RT_FIELDS(v)[0];
	return 1;
}

static int host_major_is_dead(memprof_value v)
{
	return RT_HDR_COLOR(RT_HDR(v)) == RT_WHITE;
}

static const memprof_host_ops rt_host_ops = {
    .is_young = host_is_young,
    .young_survived = host_young_survived,
    .major_is_dead = host_major_is_dead,
    .update_young_limit = rt_renew_minor_sample,
    .request_safe_point = rt_request_safe_point,
};

/*
 * rt's code, all of it in section rt_text (build.mk): its frames are
 * dropped from the top of call stacks like the core's, so a sample's stack
 * starts at the return address into the mutator, whichever rt entry (and
 * nested entries, slow paths) it went through.
 */
extern const char __start_rt_text[] __attribute__((visibility("hidden")));
extern const char __stop_rt_text[] __attribute__((visibility("hidden")));

void rt_memprof_install(void)
{
	static int installed;

	if (!installed) {
		memprof_host_ops ops = rt_host_ops;
		ops.own_code[0] =
		    (memprof_code_range){(uintptr_t)__start_rt_text, (uintptr_t)__stop_rt_text};
		memprof_host_init(&ops);
		installed = 1;
	}
}
#endif

int rt_init(const rt_config *config)
{
	size_t words =
	    config && config->minor_heap_words ? config->minor_heap_words : RT_DEFAULT_MINOR_WORDS;
	int err;

	if (rt.initialized)
		return EBUSY;
	if (words < RT_MIN_MINOR_WORDS)
		return EINVAL;
	memset(&rt, 0, sizeof(rt));
	rt_memprof_install();
	err = rt_threads_init();
	if (err)
		return err;
	err = rt_minor_init(words);
	if (err) {
		rt_threads_shutdown();
		return err;
	}
	rt.initialized = 1;
	rt_renew_minor_sample();
	return 0;
}

void rt_shutdown(void)
{
	if (!rt.initialized)
		return;
	rt_minor_gc();
	rt_major_free_all();
	rt_minor_free();
	rt_vec_free(&rt.ref_table);
	rt_vec_free(&rt.young_customs);
	rt_vec_free(&rt.mark_stack);
	rt_vec_free(&rt.globals);
	rt_threads_shutdown();
	rt.initialized = 0;
}

void rt_get_stats(rt_stats *out)
{
	*out = rt.stats;
}

size_t rt_wosize(rt_value block)
{
	return RT_HDR_WOSIZE(RT_HDR(block));
}

unsigned rt_tag(rt_value block)
{
	return RT_HDR_TAG(RT_HDR(block));
}

rt_value rt_field(rt_value block, size_t i)
{
	return RT_FIELDS(block)[i];
}

int rt_is_young(rt_value v)
{
	return rt_is_young_value(v);
}

/*
 * The write barrier: a major block that starts pointing to a young block
 * gets its field remembered, so the next minor collection treats it as a
 * root.  A field that already held a young value is already remembered.
 */
void rt_store_field(rt_value block, size_t i, rt_value v)
{
	rt_value *field = &RT_FIELDS(block)[i];

	if (!rt_is_young_value(block) && rt_is_young_value(v) && !rt_is_young_value(*field))
		rt_remember_field(field);
	*field = v;
}
