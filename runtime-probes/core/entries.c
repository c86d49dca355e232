/*
 * The tracked-block table.
 *
 * Design (after OCaml 4.11's memprof.c): every tracked block has one entry
 * in ONE growable array, memprof_core.tbl.t[0, len).  Three indexes split the array
 * so that each kind of traversal only visits the part that can concern it:
 *
 *   young     Entries below `young` hold neither a young block nor young
 *             user data.  A minor collection (scan_young_roots and
 *             minor_update) visits only [young, len), then sets young = len.
 *             New entries are appended at len, so they start in the young
 *             suffix.  When a callback returns a young value for an entry
 *             below young, the entry is swapped with t[young - 1] and young
 *             is decremented (the "swap trick"): the suffix grows by one
 *             entry, not by everything between the entry and the old young.
 *             So the suffix holds only entries created or given data since
 *             the last minor collection.
 *   callback  Entries below `callback` have no callback to run unless they
 *             are busy (their callback already runs).  memprof_run_postponed
 *             scans from callback up; any event that makes an entry pending
 *             lowers callback to that entry's index.
 *   delete    Entries below `delete` are not deleted.  Compaction walks only
 *             [delete, len), sliding live entries down in order.
 *
 * Busy entries: while a thread runs a callback for an entry (or holds a
 * placeholder entry of a combined allocation), the entry's idx_ptr points to
 * the variable in which that thread keeps the entry's index.  Compaction and
 * swaps rewrite *idx_ptr when they move the entry, and never remove a busy
 * entry, even a deleted one: the thread finds it again, at its new index,
 * when it takes the lock back.  This is what lets callbacks run without the
 * lock while other threads sample, collect, compact or run other callbacks.
 *
 * The lock (memprof_core.lock) is held by every function in this file (the
 * debug hooks, which take it themselves, are in debug.c).  MEMPROF_ASSERT
 * marks the points that rely on an invariant (sanitized build only).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* First allocation of the table, in entries. */
#define TABLE_MIN_CAP 64
/* Compact before growing when at least 1/TABLE_COMPACT_RATIO is deleted. */
#define TABLE_COMPACT_RATIO 4
/* Shrink the array when less than 1/TABLE_SHRINK_RATIO of it is used. */
#define TABLE_SHRINK_RATIO 4

/* The next id; locked (every id is taken under the core's mutex). */
static uint64_t next_id = 1;

static int entries_grow(void)
{
	struct entries *tb = &memprof_core.tbl;
	size_t cap = tb->cap ? 2 * tb->cap : TABLE_MIN_CAP;

	if (tb->limit && cap > tb->limit)
		cap = tb->limit;
	if (cap <= tb->len || cap > SIZE_MAX / sizeof(struct entry))
		return -1;
	struct entry *t = realloc(tb->t, cap * sizeof(struct entry));
	if (!t)
		return -1;
	tb->t = t;
	tb->cap = cap;
	return 0;
}

size_t entries_new(void)
{
	struct entries *tb = &memprof_core.tbl;

	if (tb->len == tb->cap) {
		if (tb->n_deleted && tb->n_deleted >= tb->len / TABLE_COMPACT_RATIO)
			entries_compact();
		if (tb->len == tb->cap && entries_grow() != 0) {
			entries_compact();
			if (tb->len == tb->cap)
				return NO_INDEX;
		}
	}
	MEMPROF_ASSERT(tb->len < tb->cap);
	size_t i = tb->len++;
	memset(&tb->t[i], 0, sizeof(tb->t[i]));
	tb->t[i].id = entries_take_id();
	return i;
}

uint64_t entries_take_id(void)
{
	memprof_core.stats.samples++;
	return next_id++;
}

void entry_drop_profile(struct entry *e)
{
	struct profile *p = e->prof;

	if (!p)
		return;
	e->prof = NULL;
	MEMPROF_ASSERT(p->refs >= 1);
	if (--p->refs == 0)
		free(p);
}

void entries_delete(size_t i)
{
	struct entries *tb = &memprof_core.tbl;
	struct entry *e = &tb->t[i];

	MEMPROF_ASSERT(i < tb->len);
	if (e->deleted)
		return;
	entry_drop_profile(e);
	free(e->stack);
	e->stack = NULL;
	e->stack_len = 0;
	e->data = MEMPROF_NONE;
	if (e->malloc_style)
		handles_del(e->id);
	e->deleted = 1;
	tb->n_deleted++;
	MEMPROF_ASSERT(tb->n_deleted <= tb->len);
	if (i < tb->delete)
		tb->delete = i;
}

/* The entry at `from` is now at `to`: tell whoever holds its index. */
static void entries_moved(size_t from, size_t to)
{
	struct entry *e = &memprof_core.tbl.t[to];

	if (e->idx_ptr) {
		MEMPROF_ASSERT(*e->idx_ptr == from);
		*e->idx_ptr = to;
	}
	if (e->malloc_style && !e->deleted && !e->dead) {
		MEMPROF_ASSERT(handles_get(e->id) == from);
		handles_set(e->id, to);
	}
}

void entries_compact(void)
{
	struct entries *tb = &memprof_core.tbl;
	size_t young = tb->young < tb->delete ? tb->young : NO_INDEX;
	size_t callback = tb->callback < tb->delete ? tb->callback : NO_INDEX;
	size_t first_kept_deleted = NO_INDEX;
	size_t j = tb->delete;

	MEMPROF_ASSERT(tb->delete <= tb->len && tb->young <= tb->len && tb->callback <= tb->len);
	for (size_t i = tb->delete; i < tb->len; i++) {
		if (i == tb->young)
			young = j;
		if (i == tb->callback)
			callback = j;
		struct entry *e = &tb->t[i];
		if (e->deleted && !e->idx_ptr) {
			tb->n_deleted--;
			continue;
		}
		MEMPROF_ASSERT(!e->deleted || !e->prof);
		if (e->deleted && first_kept_deleted == NO_INDEX)
			first_kept_deleted = j;
		if (i != j) {
			tb->t[j] = *e;
			entries_moved(i, j);
		}
		j++;
	}
	tb->young = young == NO_INDEX ? j : young;
	tb->callback = callback == NO_INDEX ? j : callback;
	tb->len = j;
	tb->delete = first_kept_deleted == NO_INDEX ? j : first_kept_deleted;
	MEMPROF_ASSERT(tb->young <= tb->len && tb->callback <= tb->len);
	MEMPROF_ASSERT(tb->n_deleted <= tb->len);

	if (tb->cap > TABLE_MIN_CAP && tb->len < tb->cap / TABLE_SHRINK_RATIO) {
		size_t cap = tb->cap / 2;
		struct entry *t = realloc(tb->t, cap * sizeof(struct entry));
		if (t) {
			tb->t = t;
			tb->cap = cap;
		}
	}
}

void entries_maybe_compact(void)
{
	struct entries *tb = &memprof_core.tbl;

	if (tb->n_deleted && tb->n_deleted >= tb->len / 2)
		entries_compact();
}

static void entries_swap(size_t i, size_t j)
{
	struct entries *tb = &memprof_core.tbl;
	struct entry tmp = tb->t[i];

	MEMPROF_ASSERT(i < tb->len && j < tb->len);
	tb->t[i] = tb->t[j];
	tb->t[j] = tmp;
	entries_moved(j, i);
	entries_moved(i, j);
	if (tb->t[i].deleted && i < tb->delete)
		tb->delete = i;
	if (tb->t[j].deleted && j < tb->delete)
		tb->delete = j;
	entries_note_pending(i);
	entries_note_pending(j);
}

size_t entries_make_young(size_t i)
{
	struct entries *tb = &memprof_core.tbl;

	MEMPROF_ASSERT(i < tb->len && tb->young <= tb->len);
	if (i >= tb->young)
		return i;
	size_t j = tb->young - 1;
	if (i != j)
		entries_swap(i, j);
	tb->young = j;
	return j;
}

int entry_pending(const struct entry *e)
{
	if (e->deleted || !e->prof)
		return 0;
	return !e->alloc_done || (e->promoted && !e->promote_done) || e->dead;
}

void entries_note_pending(size_t i)
{
	struct entries *tb = &memprof_core.tbl;
	struct entry *e = &tb->t[i];

	MEMPROF_ASSERT(i < tb->len);
	if (e->idx_ptr || !entry_pending(e))
		return;
	if (i < tb->callback)
		tb->callback = i;
	atomic_store_explicit(&memprof_core.maybe_pending, 1, memory_order_relaxed);
}

void entries_settle(size_t i)
{
	struct entry *e = &memprof_core.tbl.t[i];

	if (e->deleted || e->idx_ptr)
		return;
	if (!e->prof && (e->dead || !e->traced))
		entries_delete(i);
}

void entries_mark_dead(size_t i)
{
	struct entry *e = &memprof_core.tbl.t[i];

	e->dead = 1;
	if (e->traced && memprof_events_semaphore)
		probe_event_locked(e->id, e->young && !e->promoted
					      ? MEMPROF_PROBE_EV_DEALLOC_MINOR
					      : MEMPROF_PROBE_EV_DEALLOC_MAJOR);
}

void entries_mark_promoted(size_t i, memprof_value moved)
{
	struct entry *e = &memprof_core.tbl.t[i];

	MEMPROF_ASSERT(e->young && !e->dead);
	e->block = moved;
	e->promoted = 1;
	if (e->traced && memprof_events_semaphore)
		probe_event_locked(e->id, MEMPROF_PROBE_EV_PROMOTE);
}

void entries_release(size_t i)
{
	MEMPROF_ASSERT(i < memprof_core.tbl.len && memprof_core.tbl.t[i].idx_ptr &&
		       *memprof_core.tbl.t[i].idx_ptr == i);
	memprof_core.tbl.t[i].idx_ptr = NULL;
	entries_settle(i);
	entries_note_pending(i);
}
