/*
 * A toy host for the core's unit tests: a real bump-allocated minor heap
 * (an array, allocated downwards) and hooks whose answers the test sets.
 * It is not the reference runtime; it exists so these tests can drive
 * every host entry point directly and check the table's bookkeeping.
 */
#ifndef TOY_HOST_H
#define TOY_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "memprof_host.h"

#define TOY_MINOR_WORDS 4096

struct toy_host {
	uintptr_t heap[TOY_MINOR_WORDS];
	uintptr_t young_start, young_end, young_ptr, trigger;
	/* young_survived answers this for every block (moved to block + offset);
	 * -1: a coin flip from rand_seed. */
	int survive;
	memprof_value moved_offset;
	/* major_is_dead answers this; -1: a coin flip from rand_seed. */
	int major_dead;
	unsigned rand_seed;
	unsigned limit_updates, safe_point_requests;
	/* reserve reaches a safe point (memprof_run_postponed) first. */
	int safe_point_in_reserve;
};
extern struct toy_host toy;

void toy_init(void);
/* Allocate n blocks the way a host's slow path does (through the trigger). */
int toy_alloc(size_t n, const size_t *wosizes, uintptr_t *base_out);
/* A minor collection: scan young roots (counting them), then minor_update. */
size_t toy_minor_gc(void);
int toy_is_young(memprof_value v);
/* Install the toy host again, declaring [start, end) its own code. */
void toy_set_own_code(uintptr_t start, uintptr_t end);

#endif
