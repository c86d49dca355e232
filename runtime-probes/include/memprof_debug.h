/*
 * memprof debug hooks: exported by libmemprof for tests, not for production
 * use.  Internal-but-exported: the names may change with the core.  Each
 * hook takes the core's lock; all may be called inside callbacks.
 */
#ifndef MEMPROF_DEBUG_H
#define MEMPROF_DEBUG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Cap the tracked-block table at max_entries entries (0: no cap, the
 * default).  When the table is full and cannot grow, a new sample is
 * dropped and counted in memprof_stats.dropped and in the probe control
 * block's dropped counter, exactly as when realloc fails.
 */
void memprof_debug_set_table_limit(size_t max_entries);

/*
 * The invariants of the tracked-block table (runtime-probes/core/entries.h
 * states them beside the fields that hold them; docs/design.md explains
 * them), in the order memprof_debug_check tests them: the indexes, then each
 * entry in index order, then the whole table.
 */
enum memprof_invariant {
	MEMPROF_INV_OK = 0,	     /* every invariant holds */
	MEMPROF_INV_LEN_CAP,	     /* len <= cap */
	MEMPROF_INV_YOUNG_LEN,	     /* young <= len */
	MEMPROF_INV_CALLBACK_LEN,    /* callback <= len */
	MEMPROF_INV_DELETE_LEN,	     /* delete <= len */
	MEMPROF_INV_ID,		     /* an entry's id is nonzero */
	MEMPROF_INV_N_SAMPLES,	     /* n_samples >= 1 */
	MEMPROF_INV_SOURCE,	     /* source is an enum memprof_source */
	MEMPROF_INV_IDX_PTR,	     /* a busy entry's *idx_ptr is its index */
	MEMPROF_INV_UNBOUND_BUSY,    /* unbound implies busy */
	MEMPROF_INV_PROMOTED_YOUNG,  /* promoted implies young */
	MEMPROF_INV_PROMOTE_DONE,    /* promote_done implies promoted */
	MEMPROF_INV_DELETED_INDEX,   /* a deleted entry is at an index >= delete */
	MEMPROF_INV_DELETED_PROFILE, /* a deleted entry has no profile */
	MEMPROF_INV_DATA_NONE,	     /* no data before the alloc callback ran, nor once deleted */
	MEMPROF_INV_STACK,	     /* stack NULL iff stack_len 0, within the profile's
					callstack_size, freed once the alloc callback ran */
	MEMPROF_INV_YOUNG_SUFFIX,    /* what may be young is at an index >= young */
	MEMPROF_INV_CALLBACK_SUFFIX, /* a pending, non-busy entry is at an index >= callback */
	MEMPROF_INV_HANDLE,	     /* a live malloc-style entry's handle maps to its index */
	MEMPROF_INV_ID_UNIQUE,	     /* no two entries share an id */
	MEMPROF_INV_N_DELETED,	     /* n_deleted counts the deleted entries */
	MEMPROF_INV_HANDLE_COUNT,    /* the handle map holds only live malloc-style entries */
	MEMPROF_INV_PROFILE_REFS,    /* a profile's refs: its entries, +1 while it samples */
	MEMPROF_INV_PROFILE_STOPPED, /* the sampling profile is not stopped, every other is */
	MEMPROF_INV_COUNT
};

/*
 * Check every invariant above, for any number of profiles.  Returns
 * MEMPROF_INV_OK (0) or the first one violated.
 */
int memprof_debug_check(void);
/*
 * The same, and when msg is not NULL a one-line report in it (at most size
 * bytes, NUL-terminated): the invariant's text, and the entry that broke it
 * ("entry 3 (id 17): promoted implies young").
 */
int memprof_debug_check_report(char *msg, size_t size);
/* The text of an invariant code ("unknown invariant" if it is none). */
const char *memprof_debug_invariant_text(int code);

/*
 * Break one invariant of the live table on purpose, so that a test sees
 * memprof_debug_check name it; memprof_debug_corrupt(MEMPROF_INV_OK) puts
 * the table back as it was.  Nothing else may touch the table in between.
 * Returns 0; ENOENT when the table has no entry that can break it (e.g.
 * MEMPROF_INV_HANDLE needs a live malloc-style entry); EINVAL for an unknown
 * code, a corruption while another is in place, or an undo with none.
 */
int memprof_debug_corrupt(int invariant);

/* The table's indexes, for tests of the young-suffix argument. */
struct memprof_debug_indexes {
	size_t len, cap, young, callback, delete;
};
void memprof_debug_get_indexes(struct memprof_debug_indexes *out);

/*
 * The fast unwinder (runtime-probes/core/unwind.c): how many of the
 * calling thread's captures it walked, and how many it handed to
 * unw_backtrace (a frame it does not take).  Both 0 where it is compiled
 * out.
 */
void memprof_debug_unwind_stats(size_t *fast, size_t *fallbacks);
/*
 * Capture the calling thread's stack from here twice, with the fast
 * unwinder into fast[] and with unw_backtrace into ref[], up to max
 * frames each (max + 32 slots), the core's frames dropped from both.
 * Returns 1 when the fast unwinder walked the stack itself, 0 when it
 * handed it over (fast[] then holds unw_backtrace's frames too).  After
 * memprof_capture_from, the fast walk starts at the frame given there, as
 * a sample's would (ref[] is unw_backtrace's from here all the same).
 */
int memprof_debug_callstack_pair(uintptr_t *fast, size_t *n_fast, uintptr_t *ref, size_t *n_ref,
				 size_t max);

#ifdef __cplusplus
}
#endif

#endif
