/*
 * Folded stacks ("root;...;leaf weight" per line, as flamegraph.pl reads)
 * from the per-stack aggregates, one output view at a time.
 */
#ifndef MEMPROF_FOLDED_H
#define MEMPROF_FOLDED_H

#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/*
 * Write view v of profile p to out, one line per distinct symbolized stack
 * (inline frames included), sorted, weights in estimated bytes; zero
 * weights are left out.  Returns the number of lines, or -1 on a write or
 * memory error.
 */
long folded_write(FILE *out, const struct profile *p, enum memprof_view v);

#endif
