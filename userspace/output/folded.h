/*
 * Folded stacks ("root;...;leaf weight" per line, as flamegraph.pl reads)
 * from the per-stack aggregates, one output view at a time.
 */
#ifndef MEMPROF_FOLDED_H
#define MEMPROF_FOLDED_H

#include <stdint.h>
#include <stdio.h>

#include <linux/types.h>
#include "memprof_maps.h"

/* The views are the kernel's aggregates (enum memprof_view, memprof_maps.h). */
extern const char *const memprof_view_names[MEMPROF_N_VIEWS];

/* The view named s, or -1. */
int memprof_view_parse(const char *s);

struct profile;

/*
 * Write view v of profile p to out, one line per distinct symbolized stack
 * (inline frames included), sorted, weights in estimated bytes; zero
 * weights are left out.  Returns the number of lines, or -1 on a write or
 * memory error.
 */
long folded_write(FILE *out, const struct profile *p, enum memprof_view v);

#endif
