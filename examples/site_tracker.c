/*
 * site_tracker: a complete memprof tracker, the one README.md shows.
 *
 * It attributes every sampled block to its allocation site (the innermost
 * frame of its call stack, named with dladdr) and keeps, per site, the
 * estimated words allocated, promoted, freed young and still live.  The
 * user data threaded through the callbacks is the site's index, stored as
 * an immediate integer so the collector never has to move it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memprof.h"
#include "rt.h"

#define MAX_SITES 64
#define RATE 1e-3
#define CALLSTACK_FRAMES 8

struct site {
	uintptr_t pc;
	double allocated, promoted, short_lived, live; /* estimated words */
};

struct site_table {
	struct site sites[MAX_SITES];
	size_t n;
	double rate;
};

/* The tracked block's data: its site index and weight, as an immediate. */
static memprof_value site_data(size_t site, size_t n_samples)
{
	return RT_VAL_INT((intptr_t)(site << 20 | n_samples));
}

static size_t data_site(memprof_value v)
{
	return (size_t)RT_INT_VAL(v) >> 20;
}

static double data_words(const struct site_table *t, memprof_value v)
{
	return (double)((size_t)RT_INT_VAL(v) & 0xfffff) / t->rate;
}

static int on_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	struct site_table *t = arg;
	uintptr_t pc = info->callstack_len ? info->callstack[0] : 0;
	size_t i = 0;

	while (i < t->n && t->sites[i].pc != pc)
		i++;
	if (i == t->n) {
		if (t->n == MAX_SITES)
			return 0; /* *out stays MEMPROF_NONE: not tracked */
		t->sites[t->n++].pc = pc;
	}
	*out = site_data(i, info->n_samples);
	t->sites[i].allocated += data_words(t, *out);
	t->sites[i].live += data_words(t, *out);
	return 0;
}

static int on_promote(void *arg, memprof_value data, memprof_value *out)
{
	struct site_table *t = arg;

	t->sites[data_site(data)].promoted += data_words(t, data);
	*out = data; /* keep tracking: dealloc_major will get it */
	return 0;
}

static int on_dealloc_minor(void *arg, memprof_value data)
{
	struct site_table *t = arg;

	t->sites[data_site(data)].short_lived += data_words(t, data);
	t->sites[data_site(data)].live -= data_words(t, data);
	return 0;
}

static int on_dealloc_major(void *arg, memprof_value data)
{
	struct site_table *t = arg;

	t->sites[data_site(data)].live -= data_words(t, data);
	return 0;
}

/* Two sites with different lifetimes (global, so dladdr can name them). */
int short_lived_pairs(size_t n);
int long_lived_list(size_t n, rt_value *list);

__attribute__((noinline)) int short_lived_pairs(size_t n)
{
	rt_value v;

	for (size_t i = 0; i < n; i++) {
		int err = rt_alloc(2, 0, &v);
		if (err)
			return err;
	}
	return 0;
}

__attribute__((noinline)) int long_lived_list(size_t n, rt_value *list)
{
	rt_value cell = RT_UNIT;
	int err = 0;

	RT_ROOTS(1, &cell);
	for (size_t i = 0; i < n && !err; i++) {
		err = rt_alloc(4, 0, &cell);
		if (!err) {
			rt_store_field(cell, 0, *list);
			*list = cell;
		}
	}
	RT_ROOTS_END();
	return err;
}

int main(void)
{
	static struct site_table table = {.rate = RATE};
	const memprof_tracker tracker = {
	    .alloc_minor = on_alloc,
	    .alloc_major = on_alloc,
	    .promote = on_promote,
	    .dealloc_minor = on_dealloc_minor,
	    .dealloc_major = on_dealloc_major,
	    .arg = &table,
	};
	rt_value list = RT_UNIT;
	int err;

	if (rt_init(NULL) != 0) {
		fprintf(stderr, "site_tracker: cannot initialise the runtime\n");
		return 1;
	}
	memprof_set_seed(1);
	err = memprof_start(RATE, CALLSTACK_FRAMES, &tracker);
	if (err) {
		fprintf(stderr, "site_tracker: memprof_start: %s\n", strerror(err));
		return 1;
	}
	rt_register_global(&list);
	err = short_lived_pairs(1000000);
	if (!err)
		err = long_lived_list(200000, &list);
	rt_major_gc();
	if (!err)
		err = rt_poll(); /* run the postponed promote/dealloc callbacks */
	memprof_stop();
	if (err) {
		fprintf(stderr, "site_tracker: a callback failed: %d\n", err);
		return 1;
	}

	printf("%-24s %12s %12s %12s %12s\n", "site", "allocated", "promoted", "short", "live");
	for (size_t i = 0; i < table.n; i++) {
		const struct site *s = &table.sites[i];
		Dl_info dl;
		const char *name = "?";

		if (dladdr((void *)(s->pc - 1), &dl) && dl.dli_sname)
			name = dl.dli_sname;
		printf("%-24s %12.0f %12.0f %12.0f %12.0f\n", name, s->allocated * 8,
		       s->promoted * 8, s->short_lived * 8, s->live * 8);
	}
	rt_unregister_global(&list);
	memprof_discard();
	rt_shutdown();
	return 0;
}
