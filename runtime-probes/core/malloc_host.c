/*
 * Malloc-style hosts: blocks never move and die by free.  Callbacks run
 * directly on the thread that sees the event: alloc in memprof_track_malloc,
 * dealloc in memprof_block_freed, promote in memprof_epoch_end.  When the
 * entry is busy (its previous callback still runs on another thread), that
 * thread runs the next callback as soon as it finishes, so the order holds.
 * The handle is the entry id; handles.c maps it to the entry's index.
 *
 * Tracer-only samples.  With no in-process profile, nothing will ever run a
 * callback for a sampled block: all a tracer needs is the sample's record,
 * then the block's promotion (a young block alive at its epoch's end) and
 * its death.  Such a sample takes no entry and no handle in handles.c: its
 * handle is the id itself, tagged (TRACER_HANDLE_*), and what is left to
 * know is which young blocks of the current epoch are alive, the ids in
 * tracer_young.  A tracer that goes (or comes) starts a new generation: the
 * handles of an older one fire nothing, as the entries the tracer forgets
 * (probe_forget_locked) do not.  The host frees a handle once (the preload
 * takes it out of its sampled-block table first): there is no entry left to
 * tell a second free from the first.
 */
#include <stdlib.h>

#include "core.h"

/* A tracer-only handle: the tag, young (born young, not major), the
 * generation it was taken in (low bits), the id. */
#define TRACER_HANDLE_TAG ((uint64_t)1 << 63)
#define TRACER_HANDLE_YOUNG ((uint64_t)1 << 62)
#define TRACER_HANDLE_GEN_SHIFT 48
#define TRACER_HANDLE_GEN_MASK (((uint64_t)1 << (62 - TRACER_HANDLE_GEN_SHIFT)) - 1)
#define TRACER_HANDLE_ID_MASK (((uint64_t)1 << TRACER_HANDLE_GEN_SHIFT) - 1)
/* In tracer_young.ids: that block died (ids are below 2^48). */
#define TRACER_YOUNG_DEAD ((uint64_t)1 << 63)
/* First capacity of tracer_young.ids. */
#define TRACER_YOUNG_MIN_CAP 256

/*
 * The young tracer-only samples of the current epoch, behind the core
 * lock.  ids[0, n) ascending (ids are taken under the lock, in order),
 * the bits of TRACER_YOUNG_DEAD aside: it is set once that block died (it
 * keeps its place for the search).  Invariants: n <= cap; the id of every
 * young tracer-only handle of generation gen taken since the last epoch end
 * is in ids[0, n), its TRACER_YOUNG_DEAD bit set iff the block died; gen
 * only grows.
 */
static struct tracer_young {
	uint64_t *ids;
	size_t n, cap;
	uint64_t gen;
} tracer_young;

static int tracer_young_add(uint64_t id)
{
	struct tracer_young *y = &tracer_young;

	if (y->n == y->cap) {
		size_t cap = y->cap ? 2 * y->cap : TRACER_YOUNG_MIN_CAP;
		uint64_t *ids = realloc(y->ids, cap * sizeof(*ids));
		if (!ids)
			return -1;
		y->ids = ids;
		y->cap = cap;
	}
	MEMPROF_ASSERT(id <= TRACER_HANDLE_ID_MASK &&
		       (y->n == 0 || (y->ids[y->n - 1] & ~TRACER_YOUNG_DEAD) < id));
	y->ids[y->n++] = id;
	return 0;
}

/* Take id out of the young ones: 1 if it was there (it dies young). */
static int tracer_young_take(uint64_t id)
{
	struct tracer_young *y = &tracer_young;
	size_t lo = 0, hi = y->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at = y->ids[mid] & ~TRACER_YOUNG_DEAD;
		if (at == id) {
			if (y->ids[mid] & TRACER_YOUNG_DEAD)
				return 0;
			y->ids[mid] |= TRACER_YOUNG_DEAD;
			return 1;
		}
		if (at < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

void malloc_tracer_new_generation_locked(void)
{
	tracer_young.n = 0;
	tracer_young.gen++;
}

/* The tracer-only sample of a block: its record, its handle.  Locked. */
static uint64_t track_for_tracer_locked(size_t bytes, size_t n_samples, int major,
					const uintptr_t *stack, size_t stack_len,
					const struct rate *r)
{
	uint64_t id = entries_take_id();

	if (id > TRACER_HANDLE_ID_MASK) {
		/* No handle could tell its death: not sampled at all. */
		probe_count_dropped();
		return 0;
	}
	int young = !major && tracer_young_add(id) == 0;

	/* Young it could not be remembered as, it is reported major: its
	 * promotion cannot be told. */
	probe_fire_sample(id, bytes ? bytes : 1, n_samples,
			  young ? MEMPROF_PROBE_KIND_MINOR : MEMPROF_PROBE_KIND_MAJOR,
			  MEMPROF_SRC_NORMAL, stack, stack_len, r->lambda / 8, 1);
	return TRACER_HANDLE_TAG | (young ? TRACER_HANDLE_YOUNG : 0) |
	       (tracer_young.gen & TRACER_HANDLE_GEN_MASK) << TRACER_HANDLE_GEN_SHIFT | id;
}

/* A tracer-only block died.  Locked. */
static void tracer_block_freed_locked(uint64_t handle)
{
	uint64_t id = handle & TRACER_HANDLE_ID_MASK;

	if ((handle >> TRACER_HANDLE_GEN_SHIFT & TRACER_HANDLE_GEN_MASK) !=
	    (tracer_young.gen & TRACER_HANDLE_GEN_MASK))
		return; /* sampled for a tracer that is gone */
	int minor = (handle & TRACER_HANDLE_YOUNG) && tracer_young_take(id);
	probe_event_locked(id,
			   minor ? MEMPROF_PROBE_EV_DEALLOC_MINOR : MEMPROF_PROBE_EV_DEALLOC_MAJOR);
}

/* The epoch ended: its young tracer-only blocks still alive are promoted.  Locked. */
static void tracer_epoch_end_locked(void)
{
	struct tracer_young *y = &tracer_young;

	for (size_t k = 0; k < y->n; k++)
		if (!(y->ids[k] & TRACER_YOUNG_DEAD))
			probe_event_locked(y->ids[k], MEMPROF_PROBE_EV_PROMOTE);
	y->n = 0;
}

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
	if (!memprof_core.sampling) {
		/* No profile: no entry.  Only for the tracer the last poll saw
		 * (its generation goes into the handle), while still attached. */
		uint64_t h =
		    memprof_core.tracer_on && SEMAPHORE_UP(memprof_sample_semaphore)
			? track_for_tracer_locked(bytes, n_samples, major, sb.buf, sb.len, &r)
			: 0;
		if (handle_out)
			*handle_out = h;
		pthread_mutex_unlock(&memprof_core.lock);
		stack_buf_free(&sb);
		ts->in_core = 0;
		return 0;
	}
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

int memprof_handle_runs_no_callback(uint64_t handle)
{
	return (handle & TRACER_HANDLE_TAG) != 0;
}

void memprof_host_fork_lock(void)
{
	pthread_mutex_lock(&memprof_core.lock);
}

void memprof_host_fork_unlock(void)
{
	pthread_mutex_unlock(&memprof_core.lock);
}

void memprof_block_freed(uint64_t handle)
{
	struct thread_state *ts = &memprof_ts;

	if (!handle)
		return;
	pthread_mutex_lock(&memprof_core.lock);
	if (handle & TRACER_HANDLE_TAG) {
		tracer_block_freed_locked(handle);
		pthread_mutex_unlock(&memprof_core.lock);
		return;
	}
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
	tracer_epoch_end_locked();
	probe_events_flush_locked();
	if (!ts->in_callback && !ts->in_core)
		while (callbacks_run_pending_locked() != 0)
			;
	entries_maybe_compact();
	pthread_mutex_unlock(&memprof_core.lock);
}
