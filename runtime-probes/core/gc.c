/*
 * Collections: the user data are strong roots (all of them at a major
 * collection, the young suffix at a minor one); the tracked blocks are weak:
 * after the collector's marking the core asks the host which died.
 * Deaths and promotions are recorded (and their probes fired) here, at
 * detection; their callbacks are postponed to memprof_run_postponed.
 * The host's scanning function and hooks run with memprof_core.lock held: they must
 * not call back into memprof.
 */
#include "core.h"

void memprof_scan_young_roots(void (*f)(memprof_value *root, void *ctx), void *ctx)
{
	struct entries *tb = &memprof_core.tbl;

	pthread_mutex_lock(&memprof_core.lock);
	MEMPROF_ASSERT(tb->young <= tb->len);
	for (size_t i = tb->young; i < tb->len; i++)
		if (!tb->t[i].deleted && tb->t[i].data != MEMPROF_NONE)
			f(&tb->t[i].data, ctx);
	pthread_mutex_unlock(&memprof_core.lock);
}

void memprof_scan_roots(void (*f)(memprof_value *root, void *ctx), void *ctx)
{
	struct entries *tb = &memprof_core.tbl;

	pthread_mutex_lock(&memprof_core.lock);
	for (size_t i = 0; i < tb->len; i++)
		if (!tb->t[i].deleted && tb->t[i].data != MEMPROF_NONE)
			f(&tb->t[i].data, ctx);
	pthread_mutex_unlock(&memprof_core.lock);
}

void memprof_minor_update(void)
{
	struct entries *tb = &memprof_core.tbl;
	int (*survived)(memprof_value, memprof_value *) = memprof_core.ops.young_survived;
	int pending = 0;

	pthread_mutex_lock(&memprof_core.lock);
	MEMPROF_ASSERT(tb->young <= tb->len);
	probe_scan_begin_locked();
	size_t start = tb->young;
	for (size_t i = start; i < tb->len; i++) {
		struct entry *e = &tb->t[i];
		if (e->deleted || e->unbound || e->malloc_style || !e->young || e->promoted ||
		    e->dead || !survived)
			continue;
		memprof_value moved = e->block;
		if (survived(e->block, &moved))
			entries_mark_promoted(i, moved);
		else
			entries_mark_dead(i);
		entries_settle(i);
		entries_note_pending(i);
		pending |= entry_pending(&tb->t[i]);
	}
	memprof_core.stats.last_minor_scan = tb->len - start;
	tb->young = tb->len;
	probe_scan_end_locked();
	probe_events_flush_locked();
	pthread_mutex_unlock(&memprof_core.lock);
	if (pending)
		host_request_safe_point();
}

void memprof_major_update(void)
{
	struct entries *tb = &memprof_core.tbl;
	int (*is_dead)(memprof_value) = memprof_core.ops.major_is_dead;
	int pending = 0;

	pthread_mutex_lock(&memprof_core.lock);
	probe_scan_begin_locked();
	for (size_t i = 0; is_dead && i < tb->len; i++) {
		struct entry *e = &tb->t[i];
		if (e->deleted || e->unbound || e->malloc_style || e->dead ||
		    (e->young && !e->promoted))
			continue;
		if (!is_dead(e->block))
			continue;
		entries_mark_dead(i);
		entries_settle(i);
		entries_note_pending(i);
		pending |= entry_pending(&tb->t[i]);
	}
	probe_scan_end_locked();
	entries_compact();
	probe_events_flush_locked();
	pthread_mutex_unlock(&memprof_core.lock);
	if (pending)
		host_request_safe_point();
}
