/*
 * Profiles: memprof_start / stop / discard and the profile handles
 * (memprof_start_profile / memprof_discard_profile), the rate in force, the
 * host's hooks and the counters.
 *
 * The rate in force is the sampling user profile's rate, else the tracer's
 * rate while a tracer is attached, else 0.  It is published through a
 * sequence lock so the sampling paths read it without memprof_core.lock.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct core_state memprof_core = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

atomic_uint rate_seq; /* odd while being written (core.h, rate_read) */
_Atomic double rate_lambda;
_Atomic double rate_inv_log1m;

void rate_update_locked(void)
{
	double lambda = 0;

	if (memprof_core.sampling)
		lambda = memprof_core.sampling->lambda;
	else if (memprof_core.tracer_on)
		lambda = memprof_core.tracer_rate;
	atomic_fetch_add_explicit(&rate_seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&rate_lambda, lambda, memory_order_relaxed);
	atomic_store_explicit(&rate_inv_log1m, lambda > 0 ? 1.0 / log1p(-lambda) : 0.0,
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&rate_seq, 1, memory_order_release);
	atomic_store_explicit(&memprof_core.callstack_size,
			      memprof_core.sampling ? memprof_core.sampling->callstack_size : 0,
			      memory_order_relaxed);
	probe_publish_locked();
}

void memprof_host_init(const memprof_host_ops *ops)
{
	pthread_mutex_lock(&memprof_core.lock);
	if (ops)
		memprof_core.ops = *ops;
	else
		memset(&memprof_core.ops, 0, sizeof(memprof_core.ops));
	pthread_mutex_unlock(&memprof_core.lock);
}

void host_update_young_limit(void)
{
	void (*f)(void) = memprof_core.ops.update_young_limit;

	if (f)
		f();
}

void host_request_safe_point(void)
{
	void (*f)(void) = memprof_core.ops.request_safe_point;

	if (f)
		f();
}

/*
 * Profiles with a handle (memprof_start_profile) not yet discarded.  Each
 * holds a reference on its profile, so a handle never names freed memory;
 * handles are never reused, so a stale one is simply not found.
 */
static struct {
	struct profile **p;
	size_t len, cap;
} known;
static memprof_profile next_handle = 1;

static int known_reserve_locked(void)
{
	if (known.len < known.cap)
		return 0;
	size_t cap = known.cap ? 2 * known.cap : 8;
	struct profile **p = realloc(known.p, cap * sizeof(*p));
	if (!p)
		return ENOMEM;
	known.p = p;
	known.cap = cap;
	return 0;
}

static void profile_unref_locked(struct profile *p)
{
	MEMPROF_ASSERT(p->refs >= 1);
	if (--p->refs == 0)
		free(p);
}

static int start_locked(struct profile *p, memprof_profile *profile_out)
{
	if (memprof_core.sampling)
		return EBUSY;
	if (profile_out) {
		if (known_reserve_locked())
			return ENOMEM;
		p->handle = next_handle++;
		p->refs++;
		known.p[known.len++] = p;
		*profile_out = p->handle;
	}
	memprof_core.sampling = p;
	rate_update_locked();
	return 0;
}

static int start(double rate, size_t callstack_size, const memprof_tracker *tracker,
		 memprof_profile *profile_out)
{
	if (isnan(rate) || rate < 0 || rate > 1)
		return EINVAL;
	struct profile *p = calloc(1, sizeof(*p));
	if (!p)
		return ENOMEM;
	if (tracker)
		p->tracker = *tracker;
	p->callstack_size = callstack_size;
	p->lambda = rate;
	p->refs = 1;

	pthread_mutex_lock(&memprof_core.lock);
	int err = start_locked(p, profile_out);
	pthread_mutex_unlock(&memprof_core.lock);
	if (err) {
		free(p);
		return err;
	}
	host_update_young_limit();
	return 0;
}

int memprof_start(double rate, size_t callstack_size, const memprof_tracker *tracker)
{
	return start(rate, callstack_size, tracker, NULL);
}

int memprof_start_profile(double rate, size_t callstack_size, const memprof_tracker *tracker,
			  memprof_profile *profile_out)
{
	if (!profile_out)
		return EINVAL;
	return start(rate, callstack_size, tracker, profile_out);
}

int memprof_stop(void)
{
	pthread_mutex_lock(&memprof_core.lock);
	struct profile *p = memprof_core.sampling;
	if (!p) {
		pthread_mutex_unlock(&memprof_core.lock);
		return EINVAL;
	}
	memprof_core.sampling = NULL;
	p->stopped = 1;
	profile_unref_locked(p);
	rate_update_locked();
	pthread_mutex_unlock(&memprof_core.lock);
	host_update_young_limit();
	return 0;
}

/*
 * Forget the blocks of profile `only` (NULL: of every profile; none
 * samples).  Entries a tracer saw stay, without callbacks, for their
 * probes.  A busy entry loses its profile too: the thread running its
 * callback finds it without one and ends its tracking.
 */
static void discard_entries_locked(const struct profile *only)
{
	for (size_t i = 0; i < memprof_core.tbl.len; i++) {
		struct entry *e = &memprof_core.tbl.t[i];
		if (!e->prof || (only && e->prof != only))
			continue;
		entry_drop_profile(e);
		e->data = MEMPROF_NONE;
		entries_settle(i);
	}
	entries_compact();
}

int memprof_discard(void)
{
	pthread_mutex_lock(&memprof_core.lock);
	if (memprof_core.sampling) {
		pthread_mutex_unlock(&memprof_core.lock);
		return EBUSY;
	}
	discard_entries_locked(NULL);
	/* Every known profile is stopped, and now discarded. */
	for (size_t k = 0; k < known.len; k++) {
		known.p[k]->handle = 0;
		profile_unref_locked(known.p[k]);
	}
	known.len = 0;
	pthread_mutex_unlock(&memprof_core.lock);
	return 0;
}

int memprof_discard_profile(memprof_profile profile)
{
	pthread_mutex_lock(&memprof_core.lock);
	size_t k = 0;
	while (k < known.len && (profile == 0 || known.p[k]->handle != profile))
		k++;
	if (k == known.len) {
		pthread_mutex_unlock(&memprof_core.lock);
		return EINVAL;
	}
	struct profile *p = known.p[k];
	if (p == memprof_core.sampling) {
		pthread_mutex_unlock(&memprof_core.lock);
		return EBUSY;
	}
	discard_entries_locked(p);
	known.p[k] = known.p[--known.len];
	p->handle = 0;
	profile_unref_locked(p);
	pthread_mutex_unlock(&memprof_core.lock);
	return 0;
}

void memprof_get_stats(memprof_stats *out)
{
	pthread_mutex_lock(&memprof_core.lock);
	*out = memprof_core.stats;
	out->tracked = memprof_core.tbl.len - memprof_core.tbl.n_deleted;
	pthread_mutex_unlock(&memprof_core.lock);
}
