/*
 * The tracked-block table: one array of entries, as in OCaml 4.11.
 * The invariants are stated in entries.c (design comment) and on each field;
 * memprof_debug_check (debug.c) verifies every one of them (enum
 * memprof_invariant in memprof_debug.h), and MEMPROF_ASSERT (core.h) marks
 * the points that rely on them.  Every function here is called with
 * memprof_core.lock held.
 */
#ifndef MEMPROF_ENTRIES_H
#define MEMPROF_ENTRIES_H

#include <stddef.h>
#include <stdint.h>

#include "memprof.h"

struct profile;

struct entry {
	/* The tracked block (a host value / malloc pointer).  While unbound it
	 * holds the block's word offset inside its combined allocation. */
	memprof_value block;
	/* User data from the last callback; MEMPROF_NONE before the alloc
	 * callback ran and once deleted.  A strong root.  If it may be a young
	 * value, the entry's index is >= tbl.young. */
	memprof_value data;
	/* Nonzero, unique in the process, never reused (global counter). */
	uint64_t id;
	/* NULL, or the address of the variable in which one thread holds this
	 * entry's index ("busy": a callback for it runs, or it is a placeholder
	 * being bound).  Compaction and swaps update *idx_ptr; a busy entry is
	 * never removed, and no other thread runs a callback for it. */
	size_t *idx_ptr;
	/* The user profile whose tracker gets this block's callbacks; NULL when
	 * no callback will run any more (only probes, if traced). */
	struct profile *prof;
	/* Call stack for a postponed alloc callback (malloc'ed, may be NULL);
	 * handed to the alloc callback when it runs, freed once deleted.  NULL
	 * iff stack_len is 0; stack_len <= prof->callstack_size. */
	uintptr_t *stack;
	size_t stack_len;
	size_t n_samples;    /* >= 1 */
	size_t wosize;	     /* block size in words, header excluded */
	unsigned source : 2; /* enum memprof_source */
	unsigned young : 1;  /* born young (minor heap / young epoch) */
	/* Malloc host: never moves, dies by free, has a handle (handles.c), and
	 * its callbacks run right away on the thread that sees the event. */
	unsigned malloc_style : 1;
	unsigned unbound : 1;	   /* placeholder: the block is not allocated yet (implies busy) */
	unsigned alloc_done : 1;   /* alloc callback ran (or will never run) */
	unsigned promoted : 1;	   /* survived into the major heap; implies young */
	unsigned promote_done : 1; /* promote callback ran; implies promoted */
	unsigned dead : 1;	   /* the block died (death recorded, probe fired) */
	unsigned deleted : 1;	   /* to be removed; implies index >= tbl.delete, prof == NULL */
	unsigned traced : 1;	   /* sample probe fired: promote/dealloc probes fire too */
};

struct entries {
	struct entry *t;
	size_t len; /* entries in use are t[0, len); len <= cap */
	size_t cap; /* allocated slots */
	/* young <= len.  Every entry whose block may be in the minor heap (born
	 * young, bound, not promoted, not dead) or whose data may be young is at
	 * an index >= young.  A minor collection visits only [young, len). */
	size_t young;
	/* callback <= len.  Every entry that is not busy and has a pending
	 * callback is at an index >= callback. */
	size_t callback;
	/* delete <= len.  Every deleted entry is at an index >= delete. */
	size_t delete;
	size_t n_deleted; /* deleted entries still in t[0, len) */
	size_t limit;	  /* most entries the array may hold, 0: no limit (debug hook) */
};

/* New entry at the end of the table, zeroed except id; NO_INDEX on failure
 * (growth failed or the debug limit): the caller drops the sample. */
size_t entries_new(void);
/* A new id (nonzero, never used before), counted as a sample: every
 * sample's id, with an entry (entries_new) or without (a malloc host's
 * tracer-only sample, malloc_host.c). */
uint64_t entries_take_id(void);
/* End tracking: release the profile and stack, mark deleted. */
void entries_delete(size_t i);
/* Remove deleted, non-busy entries, keeping order; fixes every index. */
void entries_compact(void);
/* Compact if enough entries are deleted to pay for it. */
void entries_maybe_compact(void);
/* Entry i holds young data (or a young block): move it into [young, len)
 * by swapping it with t[young - 1] (fixing both).  Returns its new index. */
size_t entries_make_young(size_t i);
/* Entry i may have a pending callback: lower tbl.callback to cover it. */
void entries_note_pending(size_t i);
/* Does entry e have a callback to run (alloc, then promote, then dealloc)? */
int entry_pending(const struct entry *e);
/* Does entry e still need to be in the table?  Deletes it if not and not busy. */
void entries_settle(size_t i);
/* Drop the entry's profile reference (no more callbacks). */
void entry_drop_profile(struct entry *e);
/* Mark the block dead (fires the dealloc probe when traced). */
void entries_mark_dead(size_t i);
/* Mark the block promoted to `moved` (fires the promote probe when traced). */
void entries_mark_promoted(size_t i, memprof_value moved);
/* Release a busy entry: clear idx_ptr, settle, note pending. */
void entries_release(size_t i);

/* Handles of malloc-style entries: id -> index (handles.c).  The map holds
 * exactly the malloc-style entries that are neither deleted nor dead. */
int handles_put(uint64_t id, size_t idx);  /* 0, or -1 when out of memory */
size_t handles_get(uint64_t id);	   /* NO_INDEX when absent */
void handles_set(uint64_t id, size_t idx); /* id must be present */
void handles_del(uint64_t id);		   /* no-op when absent */
size_t handles_take(uint64_t id);	   /* remove; its index, NO_INDEX when absent */
size_t handles_count(void);		   /* ids in the map */

#endif
