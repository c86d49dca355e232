/*
 * Malloc-style hosts: blocks never move and die by free.  Callbacks run
 * directly on the thread that sees the event: alloc in memprof_track_malloc,
 * dealloc in memprof_block_freed, promote in memprof_epoch_end.  When the
 * entry is busy (its previous callback still runs on another thread), that
 * thread runs the next callback as soon as it finishes, so the order holds.
 * The handle is the entry id; handles.c maps it to the entry's index.
 */
#include "core.h"

/* Run the callbacks entry *ip has pending, in order, errors dropped. */
static void malloc_run_direct(size_t *ip)
{
	while (*ip != NO_INDEX) {
		struct entry *e = &memprof_core.tbl.t[*ip];
		if (e->deleted || e->idx_ptr || !entry_pending(e))
			return;
		callbacks_run_one(ip, NULL, 0);
	}
}

int memprof_track_malloc(memprof_value block, size_t bytes, size_t n_samples, int major,
			 uint64_t *handle_out)
{
	size_t words = (bytes >> 3) + ((bytes & 7) != 0);
	struct thread_state *ts = &memprof_ts;
	struct rate r;
	int err = 0;

	if (handle_out)
		*handle_out = 0;
	if (n_samples == 0 || ts->in_callback || ts->in_core)
		return 0;
	rate_read(&r);
	if (r.lambda <= 0)
		return 0;
	ts->in_core = 1;
	struct stack_buf sb;
	stack_buf_init(&sb);
	sb.len = callstack_capture(sb.buf, sb.want);

	pthread_mutex_lock(&memprof_core.lock);
	size_t i =
	    sample_new_locked(block, words, bytes ? bytes : 1, n_samples, MEMPROF_SRC_NORMAL,
			      SAMPLE_MALLOC | (major ? 0 : SAMPLE_YOUNG), sb.buf, sb.len, &r);
	if (i != NO_INDEX) {
		uint64_t id = memprof_core.tbl.t[i].id;
		int tracked = 1; /* sample_new_locked put its handle */
		if (entry_pending(&memprof_core.tbl.t[i])) {
			ts->in_core = 0;
			err = callbacks_run_one(&i, sb.buf, sb.len);
			ts->in_core = 1;
			malloc_run_direct(&i);
			/* The callbacks may have ended its tracking. */
			tracked = handles_get(id) != NO_INDEX;
		}
		if (handle_out && tracked)
			*handle_out = id;
	}
	pthread_mutex_unlock(&memprof_core.lock);
	stack_buf_free(&sb);
	ts->in_core = 0;
	return err;
}

void memprof_block_freed(uint64_t handle)
{
	struct thread_state *ts = &memprof_ts;

	if (!handle)
		return;
	pthread_mutex_lock(&memprof_core.lock);
	size_t i = handles_take(handle);
	if (i != NO_INDEX) {
		MEMPROF_ASSERT(i < memprof_core.tbl.len);
		MEMPROF_ASSERT(memprof_core.tbl.t[i].id == handle &&
			       memprof_core.tbl.t[i].malloc_style);
		MEMPROF_ASSERT(!memprof_core.tbl.t[i].deleted && !memprof_core.tbl.t[i].dead);
		entries_mark_dead(i);
		entries_settle(i);
		entries_note_pending(i);
		if (!ts->in_callback && !ts->in_core)
			malloc_run_direct(&i);
		if (memprof_core.tbl.n_deleted > memprof_core.tbl.len / 2)
			entries_compact();
	}
	pthread_mutex_unlock(&memprof_core.lock);
}

void memprof_epoch_end(void)
{
	struct thread_state *ts = &memprof_ts;
	struct entries *tb = &memprof_core.tbl;

	pthread_mutex_lock(&memprof_core.lock);
	MEMPROF_ASSERT(tb->young <= tb->len);
	for (size_t i = tb->young; i < tb->len; i++) {
		struct entry *e = &tb->t[i];
		if (e->deleted || !e->malloc_style || !e->young || e->promoted || e->dead)
			continue;
		entries_mark_promoted(i, e->block);
		entries_note_pending(i);
	}
	tb->young = tb->len;
	probe_events_flush_locked();
	if (!ts->in_callback && !ts->in_core)
		while (callbacks_run_pending_locked() != 0)
			;
	entries_maybe_compact();
	pthread_mutex_unlock(&memprof_core.lock);
}
