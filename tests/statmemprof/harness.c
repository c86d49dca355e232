/* Shared helpers of the statmemprof scenarios: see harness.h. */
#include "harness.h"
#include "memprof_debug.h"
#include "testlib.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Smallest expected count for which the normal approximation is used. */
#define HARNESS_MIN_MEAN 100.0

void harness_setup(void)
{
	rt_config config = {0};
	int err = rt_init(&config);
	cr_assert_eq(err, 0, "rt_init: %s", strerror(err));
	memprof_set_seed(HARNESS_SEED);
}

void harness_teardown(void)
{
	memprof_stop();
	memprof_discard();
	rt_shutdown();
}

void harness_settle(void)
{
	int err = rt_poll();
	cr_assert_eq(err, 0, "rt_poll returned %d", err);
}

void harness_check(const char *step)
{
	int err = memprof_debug_check();
	cr_assert_eq(err, 0, "memprof_debug_check after %s: %s", step, strerror(err));
}

void harness_assert_binomial(const char *what, uint64_t observed, double trials, double p)
{
	double mean = trials * p;

	if (p >= 1.0) {
		cr_assert_eq(observed, (uint64_t)trials, "%s: %llu samples, expected exactly %.0f",
			     what, (unsigned long long)observed, trials);
		return;
	}
	cr_assert(mean > HARNESS_MIN_MEAN && trials * (1.0 - p) > HARNESS_MIN_MEAN,
		  "%s: scenario too small for the normal approximation", what);
	cr_assert(within_binomial((double)observed, trials, p),
		  "%s: %llu samples, expected %.1f +- %.1f (%.1f sigma)", what,
		  (unsigned long long)observed, mean, binomial_bound(trials, p), TEST_SIGMAS);
}

/* ---- callstacks ---- */

fn_range harness_fn_range(void *fn)
{
	Dl_info dli;
	const ElfW(Sym) *sym = NULL;
	cr_assert(dladdr1(fn, &dli, (void **)&sym, RTLD_DL_SYMENT) && sym,
		  "no ELF symbol for a test function (link with -rdynamic)");
	cr_assert_eq(dli.dli_saddr, fn, "the symbol found does not start at the function");
	cr_assert_gt(sym->st_size, 0);
	fn_range r = {(uintptr_t)fn, (uintptr_t)fn + sym->st_size};
	return r;
}

int harness_stack_has(const memprof_allocation *info, fn_range r)
{
	/* A return address follows its call: it may equal the end. */
	for (size_t i = 0; i < info->callstack_len; i++)
		if (info->callstack[i] > r.lo && info->callstack[i] <= r.hi)
			return 1;
	return 0;
}

/* ---- keeper ---- */

void keeper_init(keeper *k, size_t cap)
{
	k->array = RT_UNIT;
	k->cap = cap;
	k->len = 0;
	rt_register_global(&k->array);
	int err = rt_alloc_major(cap, 0, &k->array);
	cr_assert_eq(err, 0, "keeper: rt_alloc_major(%zu) returned %d", cap, err);
}

void keeper_push(keeper *k, rt_value v)
{
	cr_assert_lt(k->len, k->cap, "keeper full");
	rt_store_field(k->array, k->len++, v);
}

void keeper_clear(keeper *k)
{
	for (size_t i = 0; i < k->len; i++)
		rt_store_field(k->array, i, RT_UNIT);
	k->len = 0;
}

void keeper_free(keeper *k)
{
	rt_unregister_global(&k->array);
	k->array = RT_UNIT;
}

/* ---- lifecycle ---- */

static _Thread_local int harness_in_callback;

void lifecycle_init(lifecycle *lc)
{
	memset(lc, 0, sizeof(*lc));
}

void lifecycle_free(lifecycle *lc)
{
	free(lc->recs);
	lc->recs = NULL;
	lc->len = lc->cap = 0;
}

void lifecycle_fail(lifecycle *lc, const char *fmt, ...)
{
	if (lc->errors++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(lc->first_error, sizeof(lc->first_error), fmt, ap);
		va_end(ap);
	}
}

static int lifecycle_enter(lifecycle *lc, const char *what)
{
	if (harness_in_callback) {
		lifecycle_fail(lc, "%s: callback nested in another callback", what);
		return 0;
	}
	harness_in_callback = 1;
	return 1;
}

static void lifecycle_leave(void)
{
	harness_in_callback = 0;
}

static void lifecycle_allocate_noise(lifecycle *lc)
{
	for (size_t i = 0; i < lc->alloc_in_callback; i++) {
		rt_value v;
		int err = rt_alloc(1 + i % 8, 0, &v);
		if (err)
			lifecycle_fail(lc, "rt_alloc inside a callback returned %d", err);
	}
	if (lc->callback_work)
		lc->callback_work(lc);
}

/* The record a user datum names, or NULL (and a violation). */
static block_record *lifecycle_record(lifecycle *lc, memprof_value data, const char *what)
{
	if (!RT_IS_INT(data)) {
		lifecycle_fail(lc, "%s: user data %#lx is not the value returned earlier", what,
			       (unsigned long)data);
		return NULL;
	}
	intptr_t idx = RT_INT_VAL(data);
	if (idx < 0 || (size_t)idx >= lc->len) {
		lifecycle_fail(lc, "%s: user data %ld names no record", what, (long)idx);
		return NULL;
	}
	return &lc->recs[idx];
}

static int lifecycle_alloc(lifecycle *lc, const memprof_allocation *info, int major,
			   memprof_value *data_out)
{
	const char *what = major ? "alloc_major" : "alloc_minor";

	if (!lifecycle_enter(lc, what))
		return 0;
	if (major) {
		lc->n_alloc_major++;
		lc->samples_major += info->n_samples;
	} else {
		lc->n_alloc_minor++;
		lc->samples_minor += info->n_samples;
	}
	if (info->id == 0)
		lifecycle_fail(lc, "%s: id 0", what);
	if (info->n_samples == 0)
		lifecycle_fail(lc, "%s: n_samples 0", what);
	if (info->callstack_len > 0 && info->callstack == NULL)
		lifecycle_fail(lc, "%s: %zu frames but no callstack", what, info->callstack_len);
	lifecycle_allocate_noise(lc);

	if (lc->filter && !lc->filter(lc, info, major)) {
		lifecycle_leave();
		*data_out = MEMPROF_NONE;
		return 0;
	}
	if (lc->len == lc->cap) {
		size_t cap = lc->cap ? 2 * lc->cap : 1024;
		block_record *recs = realloc(lc->recs, cap * sizeof(*recs));
		if (!recs) {
			lifecycle_fail(lc, "out of memory for records");
			lifecycle_leave();
			*data_out = MEMPROF_NONE;
			return 0;
		}
		lc->recs = recs;
		lc->cap = cap;
	}
	block_record *r = &lc->recs[lc->len];
	r->id = info->id;
	r->size = info->size;
	r->n_samples = info->n_samples;
	r->source = info->source;
	r->state = major ? BLOCK_MAJOR : BLOCK_MINOR;
	r->born_major = major;
	*data_out = RT_VAL_INT(lc->len);
	lc->len++;
	lifecycle_leave();
	return 0;
}

static int lifecycle_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	return lifecycle_alloc(arg, info, 0, out);
}

static int lifecycle_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	return lifecycle_alloc(arg, info, 1, out);
}

static int lifecycle_promote(void *arg, memprof_value data, memprof_value *out)
{
	lifecycle *lc = arg;

	*out = data;
	if (!lifecycle_enter(lc, "promote"))
		return 0;
	lc->n_promote++;
	lifecycle_allocate_noise(lc);
	block_record *r = lifecycle_record(lc, data, "promote");
	if (r) {
		if (r->state != BLOCK_MINOR)
			lifecycle_fail(lc, "promote: block %llu in state %d",
				       (unsigned long long)r->id, r->state);
		r->state = BLOCK_PROMOTED;
	}
	lifecycle_leave();
	return 0;
}

static int lifecycle_dealloc(lifecycle *lc, memprof_value data, int major)
{
	const char *what = major ? "dealloc_major" : "dealloc_minor";

	if (!lifecycle_enter(lc, what))
		return 0;
	if (major)
		lc->n_dealloc_major++;
	else
		lc->n_dealloc_minor++;
	lifecycle_allocate_noise(lc);
	block_record *r = lifecycle_record(lc, data, what);
	if (r) {
		int ok = major ? (r->state == BLOCK_PROMOTED || r->state == BLOCK_MAJOR)
			       : r->state == BLOCK_MINOR;
		if (!ok)
			lifecycle_fail(lc, "%s: block %llu in state %d", what,
				       (unsigned long long)r->id, r->state);
		r->state = major ? BLOCK_DEAD_MAJOR : BLOCK_DEAD_MINOR;
	}
	lifecycle_leave();
	return 0;
}

static int lifecycle_dealloc_minor(void *arg, memprof_value data)
{
	return lifecycle_dealloc(arg, data, 0);
}

static int lifecycle_dealloc_major(void *arg, memprof_value data)
{
	return lifecycle_dealloc(arg, data, 1);
}

memprof_tracker lifecycle_tracker(lifecycle *lc)
{
	memprof_tracker t = {
	    .alloc_minor = lifecycle_alloc_minor,
	    .alloc_major = lifecycle_alloc_major,
	    .promote = lifecycle_promote,
	    .dealloc_minor = lifecycle_dealloc_minor,
	    .dealloc_major = lifecycle_dealloc_major,
	    .arg = lc,
	};
	return t;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void lifecycle_assert_ok(const lifecycle *lc)
{
	cr_assert_eq(lc->errors, 0, "%u violations in callbacks, first: %s", lc->errors,
		     lc->first_error);
	if (lc->len < 2)
		return;
	uint64_t *ids = malloc(lc->len * sizeof(*ids));
	cr_assert_not_null(ids);
	for (size_t i = 0; i < lc->len; i++)
		ids[i] = lc->recs[i].id;
	qsort(ids, lc->len, sizeof(*ids), compare_u64);
	for (size_t i = 1; i < lc->len; i++)
		cr_assert_neq(ids[i], ids[i - 1], "id %llu given to two blocks",
			      (unsigned long long)ids[i]);
	free(ids);
}

size_t lifecycle_count(const lifecycle *lc, enum block_state state)
{
	size_t n = 0;
	for (size_t i = 0; i < lc->len; i++)
		n += lc->recs[i].state == state;
	return n;
}

void lifecycle_assert_balanced(const lifecycle *lc)
{
	size_t born_minor = 0, promoted = 0;
	for (size_t i = 0; i < lc->len; i++) {
		const block_record *r = &lc->recs[i];
		born_minor += !r->born_major;
		promoted +=
		    r->state == BLOCK_PROMOTED || (r->state == BLOCK_DEAD_MAJOR && !r->born_major);
	}
	cr_assert_eq(lc->n_promote, promoted, "%llu promote callbacks for %zu promoted blocks",
		     (unsigned long long)lc->n_promote, promoted);
	cr_assert_eq(lc->n_dealloc_minor, lifecycle_count(lc, BLOCK_DEAD_MINOR));
	cr_assert_eq(lc->n_dealloc_major, lifecycle_count(lc, BLOCK_DEAD_MAJOR));
	cr_assert_leq(lc->n_promote + lc->n_dealloc_minor, born_minor);
}

void lifecycle_assert_all_dead(const lifecycle *lc)
{
	lifecycle_assert_ok(lc);
	lifecycle_assert_balanced(lc);
	for (size_t i = 0; i < lc->len; i++) {
		const block_record *r = &lc->recs[i];
		cr_assert(r->state == BLOCK_DEAD_MINOR || r->state == BLOCK_DEAD_MAJOR,
			  "block %llu (size %zu) still in state %d", (unsigned long long)r->id,
			  r->size, r->state);
	}
}
