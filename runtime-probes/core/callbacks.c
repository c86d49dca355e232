/*
 * Running callbacks.  A callback runs without memprof_core.lock, with the entry
 * busy (idx_ptr set to a variable of the running thread), and with the
 * thread's in_callback flag up so its own allocations are not sampled.
 * The callbacks of one entry run in order (alloc, promote, dealloc) and
 * never concurrently: only the thread that made the entry busy runs one.
 */
#include <stdlib.h>

#include "core.h"

enum cb_kind { CB_ALLOC, CB_PROMOTE, CB_DEALLOC };

int callbacks_run_one(size_t *ip, const uintptr_t *stack, size_t stack_len)
{
	struct thread_state *ts = &memprof_ts;
	struct entry *e = &memprof_core.tbl.t[*ip];

	MEMPROF_ASSERT(*ip < memprof_core.tbl.len && !e->idx_ptr && entry_pending(e));
	const memprof_tracker *tr = &e->prof->tracker;
	memprof_allocation info = {0};
	memprof_alloc_callback alloc_fn = NULL;
	memprof_promote_callback promote_fn = NULL;
	memprof_dealloc_callback dealloc_fn = NULL;
	enum cb_kind kind;
	int has_fn;

	if (!e->alloc_done) {
		kind = CB_ALLOC;
		alloc_fn = e->young ? tr->alloc_minor : tr->alloc_major;
		/* A stopped profile runs no alloc callback: as if it returned NONE. */
		if (e->prof->stopped)
			alloc_fn = NULL;
		has_fn = alloc_fn != NULL;
		info.id = e->id;
		info.n_samples = e->n_samples;
		info.size = e->wosize;
		info.source = (enum memprof_source)e->source;
		info.callstack = stack ? stack : e->stack;
		info.callstack_len = e->stack_len;
		if (stack)
			info.callstack_len = stack_len < e->prof->callstack_size
						 ? stack_len
						 : e->prof->callstack_size;
	} else if (e->promoted && !e->promote_done) {
		kind = CB_PROMOTE;
		promote_fn = tr->promote;
		has_fn = promote_fn != NULL;
	} else {
		kind = CB_DEALLOC;
		dealloc_fn = e->young && !e->promoted ? tr->dealloc_minor : tr->dealloc_major;
		has_fn = dealloc_fn != NULL;
	}
	void *arg = tr->arg;
	memprof_value in = e->data, out = MEMPROF_NONE;
	int err = 0;

	if (has_fn) {
		size_t *held_one[1] = {ip};
		struct held_set hs = {.idx = held_one, .n = 1, .prev = ts->held};
		e->idx_ptr = ip;
		ts->cb_stack = e->stack;
		e->stack = NULL;
		e->stack_len = 0;
		ts->held = &hs;
		pthread_mutex_unlock(&memprof_core.lock);

		ts->in_callback = 1;
		if (kind == CB_ALLOC)
			err = alloc_fn(arg, &info, &out);
		else if (kind == CB_PROMOTE)
			err = promote_fn(arg, in, &out);
		else
			err = dealloc_fn(arg, in);
		ts->in_callback = 0;

		pthread_mutex_lock(&memprof_core.lock);
		ts->held = hs.prev;
		free(ts->cb_stack);
		ts->cb_stack = NULL;
		memprof_core.stats.callbacks++;
		/* Compaction and swaps kept *ip exact while the lock was free. */
		MEMPROF_ASSERT(*ip < memprof_core.tbl.len);
		e = &memprof_core.tbl.t[*ip];
		MEMPROF_ASSERT(e->idx_ptr == ip);
		e->idx_ptr = NULL;
	}

	size_t i = *ip;
	free(e->stack);
	e->stack = NULL;
	e->stack_len = 0;
	if (kind == CB_ALLOC)
		e->alloc_done = 1;
	else if (kind == CB_PROMOTE)
		e->promote_done = 1;
	if (kind == CB_DEALLOC) {
		entry_drop_profile(e);
		entries_delete(i);
	} else if (e->prof) {
		/* Still ours (not discarded while the callback ran). */
		if (err || out == MEMPROF_NONE) {
			entry_drop_profile(e);
			e->data = MEMPROF_NONE;
		} else {
			e->data = out;
			if (memprof_core.ops.is_young && memprof_core.ops.is_young(out))
				i = entries_make_young(i);
		}
	}
	*ip = i;
	entries_settle(i);
	entries_note_pending(i);
	return err;
}

int callbacks_run_pending_locked(void)
{
	struct entries *tb = &memprof_core.tbl;

	MEMPROF_ASSERT(tb->callback <= tb->len);
	while (tb->callback < tb->len) {
		size_t i = tb->callback;
		struct entry *e = &tb->t[i];
		if (e->idx_ptr || !entry_pending(e)) {
			tb->callback++;
			continue;
		}
		int err = callbacks_run_one(&i, NULL, 0);
		if (err)
			return err;
	}
	return 0;
}

int memprof_run_postponed(void)
{
	if (probe_poll())
		host_update_young_limit();
	if (memprof_ts.in_callback ||
	    !atomic_load_explicit(&memprof_core.maybe_pending, memory_order_relaxed))
		return 0;

	pthread_mutex_lock(&memprof_core.lock);
	uint64_t before = memprof_core.stats.callbacks;
	int err = callbacks_run_pending_locked();
	int left = memprof_core.tbl.callback < memprof_core.tbl.len;
	/* Entries still pending are busy (their thread runs them) or wait
	 * behind an error: keep the hint only in the second case. */
	if (!err)
		atomic_store_explicit(&memprof_core.maybe_pending, 0, memory_order_relaxed);
	int ran = memprof_core.stats.callbacks != before;
	entries_maybe_compact();
	pthread_mutex_unlock(&memprof_core.lock);

	if (ran)
		host_update_young_limit();
	if (err && left)
		host_request_safe_point();
	return err;
}

void memprof_thread_switched(void)
{
	if (probe_poll())
		host_update_young_limit();
}

void memprof_thread_exit(void)
{
	struct thread_state *ts = &memprof_ts;

	if (ts->held) {
		pthread_mutex_lock(&memprof_core.lock);
		for (struct held_set *hs = ts->held; hs; hs = hs->prev) {
			for (size_t k = 0; k < hs->n; k++) {
				size_t i = *hs->idx[k];
				if (i == NO_INDEX)
					continue;
				MEMPROF_ASSERT(i < memprof_core.tbl.len);
				struct entry *e = &memprof_core.tbl.t[i];
				MEMPROF_ASSERT(e->idx_ptr == hs->idx[k]);
				e->idx_ptr = NULL;
				/* As if the callback had returned MEMPROF_NONE. */
				entry_drop_profile(e);
				e->data = MEMPROF_NONE;
				if (e->unbound) {
					/* Its block will never be allocated. */
					e->unbound = 0;
					e->block = 0;
					entries_mark_dead(i);
					entries_delete(i);
				}
				entries_settle(i);
			}
		}
		pthread_mutex_unlock(&memprof_core.lock);
	}
	free(ts->cb_stack);
	ts->cb_stack = NULL;
	unwind_thread_exit();
	ts->held = NULL;
	ts->in_callback = 0;
	ts->in_core = 0;
	ts->seeded = 0;
}
