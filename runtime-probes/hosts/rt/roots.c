/*
 * rt roots: per-thread frames of rooted C variables (RT_ROOTS) and global
 * roots.  The macro's array is a temporary, so frames are copied here.
 */
#include <stdlib.h>

#include "rt_internal.h"

void rt_roots_push(size_t n, rt_value **roots)
{
	struct rt_thread *t = rt_self;

	for (size_t i = 0; i < n; i++)
		if (rt_vec_push(&t->roots, (uintptr_t)roots[i]))
			rt_fatal("out of memory (roots)");
	if (rt_vec_push(&t->frames, n))
		rt_fatal("out of memory (roots)");
}

void rt_roots_pop(void)
{
	struct rt_thread *t = rt_self;

	if (t->frames.len == 0)
		rt_fatal("rt_roots_pop without a frame");
	t->roots.len -= t->frames.items[--t->frames.len];
}

void rt_register_global(rt_value *root)
{
	if (rt_vec_push(&rt.globals, (uintptr_t)root))
		rt_fatal("out of memory (global roots)");
}

void rt_unregister_global(rt_value *root)
{
	for (size_t i = rt.globals.len; i-- > 0;) {
		if (rt.globals.items[i] == (uintptr_t)root) {
			rt.globals.items[i] = rt.globals.items[--rt.globals.len];
			return;
		}
	}
}

void rt_scan_local_roots(rt_root_visitor f, void *ctx)
{
	for (struct rt_thread *t = rt.threads; t; t = t->next)
		for (size_t i = 0; i < t->roots.len; i++)
			f((uintptr_t *)t->roots.items[i], ctx);
	for (size_t i = 0; i < rt.globals.len; i++)
		f((uintptr_t *)rt.globals.items[i], ctx);
}

void rt_roots_free(struct rt_thread *t)
{
	rt_vec_free(&t->roots);
	rt_vec_free(&t->frames);
}
