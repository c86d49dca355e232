/*
 * Debug hooks (memprof_debug.h): the table limit, the invariant check, the
 * deliberate corruptions its tests use, and the failure report of
 * MEMPROF_ASSERT.  Unlike the functions of entries.c, which run with
 * memprof_core.lock held, each hook here takes the lock itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "memprof_debug.h"

/* ---- assertion failures (core.h) ---- */

#ifdef MEMPROF_DEBUG
_Noreturn void core_assert_failed(const char *file, int line, const char *cond)
{
	char msg[512];
	int n =
	    snprintf(msg, sizeof(msg), "memprof: %s:%d: assertion failed: %s\n", file, line, cond);

	/* No stdio buffer (no malloc): the table may be what is broken. */
	if (n > 0)
		(void)!write(STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg));
	abort();
}
#endif

/* ---- the table limit ---- */

void memprof_debug_set_table_limit(size_t max_entries)
{
	pthread_mutex_lock(&memprof_core.lock);
	memprof_core.tbl.limit = max_entries;
	pthread_mutex_unlock(&memprof_core.lock);
}

void memprof_debug_get_indexes(struct memprof_debug_indexes *out)
{
	pthread_mutex_lock(&memprof_core.lock);
	out->len = memprof_core.tbl.len;
	out->cap = memprof_core.tbl.cap;
	out->young = memprof_core.tbl.young;
	out->callback = memprof_core.tbl.callback;
	out->delete = memprof_core.tbl.delete;
	pthread_mutex_unlock(&memprof_core.lock);
}

/* ---- the invariant check ---- */

static const char *const invariant_text[MEMPROF_INV_COUNT] = {
    [MEMPROF_INV_OK] = "every invariant holds",
    [MEMPROF_INV_LEN_CAP] = "len <= cap",
    [MEMPROF_INV_YOUNG_LEN] = "young <= len",
    [MEMPROF_INV_CALLBACK_LEN] = "callback <= len",
    [MEMPROF_INV_DELETE_LEN] = "delete <= len",
    [MEMPROF_INV_ID] = "an entry's id is nonzero",
    [MEMPROF_INV_N_SAMPLES] = "n_samples >= 1",
    [MEMPROF_INV_SOURCE] = "source is an enum memprof_source",
    [MEMPROF_INV_IDX_PTR] = "a busy entry's *idx_ptr is its index",
    [MEMPROF_INV_UNBOUND_BUSY] = "unbound implies busy",
    [MEMPROF_INV_PROMOTED_YOUNG] = "promoted implies young",
    [MEMPROF_INV_PROMOTE_DONE] = "promote_done implies promoted",
    [MEMPROF_INV_DELETED_INDEX] = "a deleted entry is at an index >= delete",
    [MEMPROF_INV_DELETED_PROFILE] = "a deleted entry has no profile",
    [MEMPROF_INV_DATA_NONE] = "data is MEMPROF_NONE before the alloc callback ran and once deleted",
    [MEMPROF_INV_STACK] = "stack is NULL iff stack_len is 0, stack_len <= the profile's "
			  "callstack_size, and no stack is kept once the alloc callback ran "
			  "or the entry is deleted",
    [MEMPROF_INV_YOUNG_SUFFIX] =
	"an entry that may hold a young block or young data is at an index >= young",
    [MEMPROF_INV_CALLBACK_SUFFIX] =
	"an entry with a pending callback that is not busy is at an index >= callback",
    [MEMPROF_INV_HANDLE] =
	"a malloc-style entry neither deleted nor dead has a handle mapping to its index",
    [MEMPROF_INV_ID_UNIQUE] = "no two entries share an id",
    [MEMPROF_INV_N_DELETED] = "n_deleted counts the deleted entries",
    [MEMPROF_INV_HANDLE_COUNT] =
	"the handle map holds only malloc-style entries neither deleted nor dead",
    [MEMPROF_INV_PROFILE_REFS] =
	"a profile's refs counts the entries pointing at it, +1 while it samples, "
	"+1 while its handle is known",
    [MEMPROF_INV_PROFILE_STOPPED] = "the sampling profile is not stopped, every other is",
};

const char *memprof_debug_invariant_text(int code)
{
	if (code < 0 || code >= MEMPROF_INV_COUNT)
		return "unknown invariant";
	return invariant_text[code];
}

/* Can entry e hold a block in the minor heap or young user data? */
static int entry_may_be_young(const struct entry *e)
{
	if (e->deleted)
		return 0;
	if (e->young && !e->unbound && !e->promoted && !e->dead && !e->malloc_style)
		return 1;
	return e->data != MEMPROF_NONE && memprof_core.ops.is_young &&
	       memprof_core.ops.is_young(e->data);
}

/* The first invariant entry i breaks, or MEMPROF_INV_OK.  Locked. */
static int check_entry(size_t i)
{
	const struct entries *tb = &memprof_core.tbl;
	const struct entry *e = &tb->t[i];

	if (e->id == 0)
		return MEMPROF_INV_ID;
	if (e->n_samples < 1)
		return MEMPROF_INV_N_SAMPLES;
	if (e->source > MEMPROF_SRC_CUSTOM)
		return MEMPROF_INV_SOURCE;
	if (e->idx_ptr && *e->idx_ptr != i)
		return MEMPROF_INV_IDX_PTR;
	if (e->unbound && !e->idx_ptr)
		return MEMPROF_INV_UNBOUND_BUSY;
	if (e->promoted && !e->young)
		return MEMPROF_INV_PROMOTED_YOUNG;
	if (e->promote_done && !e->promoted)
		return MEMPROF_INV_PROMOTE_DONE;
	if (e->deleted && i < tb->delete)
		return MEMPROF_INV_DELETED_INDEX;
	if (e->deleted && e->prof)
		return MEMPROF_INV_DELETED_PROFILE;
	if ((!e->alloc_done || e->deleted) && e->data != MEMPROF_NONE)
		return MEMPROF_INV_DATA_NONE;
	if ((e->stack == NULL) != (e->stack_len == 0) ||
	    (e->prof && e->stack_len > e->prof->callstack_size) ||
	    ((e->alloc_done || e->deleted) && e->stack))
		return MEMPROF_INV_STACK;
	if (i < tb->young && entry_may_be_young(e))
		return MEMPROF_INV_YOUNG_SUFFIX;
	if (i < tb->callback && !e->idx_ptr && entry_pending(e))
		return MEMPROF_INV_CALLBACK_SUFFIX;
	if (e->malloc_style && !e->deleted && !e->dead && handles_get(e->id) != i)
		return MEMPROF_INV_HANDLE;
	return MEMPROF_INV_OK;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void sort_keys(uint64_t *keys, size_t n)
{
	qsort(keys, n, sizeof(*keys), cmp_u64);
}

/* No two entries share an id.  Locked. */
static int check_ids_unique(void)
{
	const struct entries *tb = &memprof_core.tbl;
	uint64_t *ids = malloc((tb->len ? tb->len : 1) * sizeof(*ids));
	int err = MEMPROF_INV_OK;

	if (!ids) {
		for (size_t i = 0; i < tb->len && !err; i++)
			for (size_t j = i + 1; j < tb->len && !err; j++)
				if (tb->t[i].id == tb->t[j].id)
					err = MEMPROF_INV_ID_UNIQUE;
		return err;
	}
	for (size_t i = 0; i < tb->len; i++)
		ids[i] = tb->t[i].id;
	sort_keys(ids, tb->len);
	for (size_t i = 1; i < tb->len && !err; i++)
		if (ids[i] == ids[i - 1])
			err = MEMPROF_INV_ID_UNIQUE;
	free(ids);
	return err;
}

/* Entries pointing at profile p, +1 if it samples (not its handle).  Locked. */
static size_t profile_expected_refs(const struct profile *p)
{
	const struct entries *tb = &memprof_core.tbl;
	size_t refs = p == memprof_core.sampling;

	for (size_t i = 0; i < tb->len; i++)
		refs += tb->t[i].prof == p;
	return refs;
}

static int check_one_profile(const struct profile *p, size_t refs)
{
	/* The handle of memprof_start_profile holds one more, until discarded. */
	if (p->refs != refs + (p->handle != 0))
		return MEMPROF_INV_PROFILE_REFS;
	if (p->stopped != (p != memprof_core.sampling))
		return MEMPROF_INV_PROFILE_STOPPED;
	return MEMPROF_INV_OK;
}

/*
 * Every profile, however many: the sampling one and those entries point
 * at.  The entries' profile pointers are sorted, so each run is one
 * profile and its length its entry count.  Locked.
 */
static int check_profiles(void)
{
	const struct entries *tb = &memprof_core.tbl;
	uint64_t *profs = malloc((tb->len + 1) * sizeof(*profs));
	size_t n = 0;
	int err = MEMPROF_INV_OK;

	if (!profs) {
		/* Quadratic, without memory. */
		if (memprof_core.sampling)
			err = check_one_profile(memprof_core.sampling,
						profile_expected_refs(memprof_core.sampling));
		for (size_t i = 0; i < tb->len && !err; i++)
			if (tb->t[i].prof)
				err = check_one_profile(tb->t[i].prof,
							profile_expected_refs(tb->t[i].prof));
		return err;
	}
	if (memprof_core.sampling)
		profs[n++] = (uint64_t)(uintptr_t)memprof_core.sampling;
	for (size_t i = 0; i < tb->len; i++)
		if (tb->t[i].prof)
			profs[n++] = (uint64_t)(uintptr_t)tb->t[i].prof;
	sort_keys(profs, n);
	for (size_t i = 0; i < n && !err;) {
		size_t j = i;
		while (j < n && profs[j] == profs[i])
			j++;
		err = check_one_profile((const struct profile *)(uintptr_t)profs[i], j - i);
		i = j;
	}
	free(profs);
	return err;
}

/* The check itself.  Locked.  *where: the entry that failed, or NO_INDEX. */
static int check_locked(size_t *where)
{
	const struct entries *tb = &memprof_core.tbl;
	size_t n_deleted = 0, n_handles = 0;
	int err;

	*where = NO_INDEX;
	if (tb->len > tb->cap)
		return MEMPROF_INV_LEN_CAP;
	if (tb->young > tb->len)
		return MEMPROF_INV_YOUNG_LEN;
	if (tb->callback > tb->len)
		return MEMPROF_INV_CALLBACK_LEN;
	if (tb->delete > tb->len)
		return MEMPROF_INV_DELETE_LEN;
	for (size_t i = 0; i < tb->len; i++) {
		const struct entry *e = &tb->t[i];
		err = check_entry(i);
		if (err) {
			*where = i;
			return err;
		}
		n_deleted += e->deleted;
		n_handles += e->malloc_style && !e->deleted && !e->dead;
	}
	err = check_ids_unique();
	if (err)
		return err;
	if (n_deleted != tb->n_deleted)
		return MEMPROF_INV_N_DELETED;
	if (n_handles != handles_count())
		return MEMPROF_INV_HANDLE_COUNT;
	return check_profiles();
}

int memprof_debug_check_report(char *msg, size_t size)
{
	size_t where;

	pthread_mutex_lock(&memprof_core.lock);
	int err = check_locked(&where);
	uint64_t id = where != NO_INDEX ? memprof_core.tbl.t[where].id : 0;
	pthread_mutex_unlock(&memprof_core.lock);
	if (msg && size) {
		if (where != NO_INDEX)
			snprintf(msg, size, "entry %zu (id %llu): %s", where,
				 (unsigned long long)id, invariant_text[err]);
		else
			snprintf(msg, size, "%s", invariant_text[err]);
	}
	return err;
}

int memprof_debug_check(void)
{
	return memprof_debug_check_report(NULL, 0);
}

/* ---- deliberate corruptions, for the tests of the check ---- */

/* What the last corruption changed, to put it back. */
static struct {
	int what; /* MEMPROF_INV_OK: nothing to undo */
	struct entries tbl;
	size_t i;
	struct entry e;
	struct profile *prof;
	size_t prof_refs;
	int prof_stopped;
	uint64_t handle_key;
} corruption;

/* A key no entry can have (ids count up from 1). */
#define CORRUPT_HANDLE_KEY UINT64_MAX

/* What a corrupted idx_ptr points at: never the entry's index. */
static size_t idx_ptr_bogus;

/* First entry (index >= from) satisfying pred, or NO_INDEX.  Locked. */
static size_t find_entry(size_t from, size_t below, int (*pred)(const struct entry *))
{
	const struct entries *tb = &memprof_core.tbl;

	for (size_t i = from; i < tb->len && i < below; i++)
		if (pred(&tb->t[i]))
			return i;
	return NO_INDEX;
}

static int is_plain(const struct entry *e)
{
	return !e->deleted && !e->idx_ptr;
}
static int has_profile(const struct entry *e)
{
	return is_plain(e) && e->prof;
}
static int is_live_malloc(const struct entry *e)
{
	return is_plain(e) && e->malloc_style && !e->dead;
}
static int is_not_malloc(const struct entry *e)
{
	return is_plain(e) && !e->malloc_style;
}

static int corrupt_locked(int what)
{
	struct entries *tb = &memprof_core.tbl;
	size_t i = NO_INDEX;
	struct entry *e;

	switch (what) {
	case MEMPROF_INV_LEN_CAP:
		if (!tb->len)
			return ENOENT;
		tb->cap = tb->len - 1;
		return 0;
	case MEMPROF_INV_YOUNG_LEN:
		tb->young = tb->len + 1;
		return 0;
	case MEMPROF_INV_CALLBACK_LEN:
		tb->callback = tb->len + 1;
		return 0;
	case MEMPROF_INV_DELETE_LEN:
		tb->delete = tb->len + 1;
		return 0;
	case MEMPROF_INV_N_DELETED:
		tb->n_deleted++;
		return 0;
	case MEMPROF_INV_HANDLE_COUNT:
		if (handles_put(CORRUPT_HANDLE_KEY, 0) != 0)
			return ENOMEM;
		corruption.handle_key = CORRUPT_HANDLE_KEY;
		return 0;
	case MEMPROF_INV_PROFILE_REFS:
	case MEMPROF_INV_PROFILE_STOPPED: {
		struct profile *p = memprof_core.sampling;
		if (!p) {
			i = find_entry(0, NO_INDEX, has_profile);
			if (i == NO_INDEX)
				return ENOENT;
			p = tb->t[i].prof;
		}
		corruption.prof = p;
		corruption.prof_refs = p->refs;
		corruption.prof_stopped = p->stopped;
		if (what == MEMPROF_INV_PROFILE_REFS)
			p->refs++;
		else
			p->stopped = !p->stopped;
		return 0;
	}
	case MEMPROF_INV_ID_UNIQUE: {
		/* A non-malloc entry takes another entry's id (a malloc one would
		 * break its handle first). */
		size_t j = find_entry(0, NO_INDEX, is_not_malloc);
		if (j == NO_INDEX)
			return ENOENT;
		i = j == 0 ? 1 : 0;
		if (i >= tb->len)
			return ENOENT;
		corruption.i = j;
		corruption.e = tb->t[j];
		tb->t[j].id = tb->t[i].id;
		return 0;
	}
	default:
		break;
	}

	/* The per-entry invariants: one entry changes. */
	switch (what) {
	case MEMPROF_INV_ID:
	case MEMPROF_INV_N_SAMPLES:
	case MEMPROF_INV_SOURCE:
	case MEMPROF_INV_IDX_PTR:
	case MEMPROF_INV_UNBOUND_BUSY:
	case MEMPROF_INV_PROMOTED_YOUNG:
	case MEMPROF_INV_PROMOTE_DONE:
	case MEMPROF_INV_DATA_NONE:
		i = find_entry(0, NO_INDEX, is_plain);
		break;
	case MEMPROF_INV_DELETED_INDEX:
		i = find_entry(0, NO_INDEX, is_plain);
		/* It goes below delete: raise delete past it if no deleted entry is
		 * in the way. */
		for (size_t k = tb->delete; i != NO_INDEX && k < i; k++)
			if (tb->t[k].deleted)
				return ENOENT;
		break;
	case MEMPROF_INV_DELETED_PROFILE:
	case MEMPROF_INV_STACK:
		i = find_entry(0, NO_INDEX, has_profile);
		break;
	case MEMPROF_INV_YOUNG_SUFFIX:
		i = find_entry(0, tb->young, is_not_malloc);
		break;
	case MEMPROF_INV_CALLBACK_SUFFIX:
		i = find_entry(0, tb->callback, has_profile);
		break;
	case MEMPROF_INV_HANDLE:
		i = find_entry(0, NO_INDEX, is_live_malloc);
		break;
	default:
		return EINVAL;
	}
	if (i == NO_INDEX)
		return ENOENT;
	corruption.i = i;
	corruption.e = tb->t[i];
	e = &tb->t[i];
	switch (what) {
	case MEMPROF_INV_ID:
		e->id = 0;
		break;
	case MEMPROF_INV_N_SAMPLES:
		e->n_samples = 0;
		break;
	case MEMPROF_INV_SOURCE:
		e->source = 3;
		break;
	case MEMPROF_INV_IDX_PTR:
		idx_ptr_bogus = i + 1;
		e->idx_ptr = &idx_ptr_bogus;
		break;
	case MEMPROF_INV_UNBOUND_BUSY:
		e->unbound = 1;
		break;
	case MEMPROF_INV_PROMOTED_YOUNG:
		e->promoted = 1;
		e->young = 0;
		break;
	case MEMPROF_INV_PROMOTE_DONE:
		e->promoted = 0;
		e->promote_done = 1;
		break;
	case MEMPROF_INV_DELETED_INDEX:
		e->deleted = 1;
		if (tb->delete <= i)
			tb->delete = i + 1;
		break;
	case MEMPROF_INV_DELETED_PROFILE:
		/* The last entry with a profile is marked deleted, delete lowered to it. */
		i = NO_INDEX;
		for (size_t k = tb->len; k-- > 0;)
			if (has_profile(&tb->t[k])) {
				i = k;
				break;
			}
		corruption.i = i;
		corruption.e = tb->t[i];
		e = &tb->t[i];
		e->deleted = 1;
		if (tb->delete > i)
			tb->delete = i;
		break;
	case MEMPROF_INV_DATA_NONE:
		e->alloc_done = 0;
		e->data = (memprof_value)1;
		break;
	case MEMPROF_INV_STACK:
		e->stack_len = e->stack ? 0 : 1;
		break;
	case MEMPROF_INV_YOUNG_SUFFIX:
		/* A block in the minor heap (as far as the entry says), below young. */
		e->young = 1;
		e->unbound = 0;
		e->promoted = 0;
		e->promote_done = 0;
		e->dead = 0;
		break;
	case MEMPROF_INV_CALLBACK_SUFFIX:
		/* A death whose dealloc callback is due, below callback. */
		e->dead = 1;
		break;
	case MEMPROF_INV_HANDLE:
		handles_set(e->id, i + 1);
		break;
	}
	return 0;
}

static void undo_locked(void)
{
	struct entries *tb = &memprof_core.tbl;
	int what = corruption.what;

	if (what == MEMPROF_INV_HANDLE)
		handles_set(corruption.e.id, corruption.i);
	if (corruption.handle_key)
		handles_del(corruption.handle_key);
	if (corruption.prof) {
		corruption.prof->refs = corruption.prof_refs;
		corruption.prof->stopped = corruption.prof_stopped;
	}
	if (corruption.i != NO_INDEX)
		tb->t[corruption.i] = corruption.e;
	tb->cap = corruption.tbl.cap;
	tb->young = corruption.tbl.young;
	tb->callback = corruption.tbl.callback;
	tb->delete = corruption.tbl.delete;
	tb->n_deleted = corruption.tbl.n_deleted;
}

int memprof_debug_corrupt(int invariant)
{
	int err = 0;

	pthread_mutex_lock(&memprof_core.lock);
	if (invariant == MEMPROF_INV_OK) {
		if (corruption.what == MEMPROF_INV_OK)
			err = EINVAL;
		else
			undo_locked();
		corruption.what = MEMPROF_INV_OK;
	} else if (corruption.what != MEMPROF_INV_OK || invariant < 0 ||
		   invariant >= MEMPROF_INV_COUNT) {
		err = EINVAL;
	} else {
		corruption.tbl = memprof_core.tbl;
		corruption.i = NO_INDEX;
		corruption.prof = NULL;
		corruption.handle_key = 0;
		err = corrupt_locked(invariant);
		if (!err)
			corruption.what = invariant;
	}
	pthread_mutex_unlock(&memprof_core.lock);
	return err;
}
