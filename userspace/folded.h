/*
 * Folded stacks ("root;...;leaf weight" per line, as flamegraph.pl reads)
 * from the per-stack aggregates, one output view at a time.
 */
#ifndef MEMPROF_FOLDED_H
#define MEMPROF_FOLDED_H

#include <stdint.h>
#include <stdio.h>

enum output_view { OUT_ALLOC, OUT_LIVE, OUT_PROMOTED, OUT_SHORT, N_OUT_VIEWS };
extern const char *const output_view_names[N_OUT_VIEWS];

/* The view named s, or -1. */
int output_view_parse(const char *s);

struct profile;

/*
 * Write view v of profile p to out, one line per distinct symbolized stack
 * (inline frames included), sorted, weights in estimated bytes; zero
 * weights are left out.  Returns the number of lines, or -1 on a write or
 * memory error.
 */
long folded_write(FILE *out, const struct profile *p, enum output_view v);

#endif
