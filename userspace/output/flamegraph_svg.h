/*
 * A self-contained interactive flame graph (SVG with its own script) of one
 * view: click a frame to zoom into it, search by regular expression, and a
 * tooltip per frame with its estimated bytes, share and 95% interval.
 */
#ifndef MEMPROF_FLAMEGRAPH_SVG_H
#define MEMPROF_FLAMEGRAPH_SVG_H

#include <stdio.h>

#include "profile.h"

/* Flame graph of view v.  0, or -1 on a write or memory error. */
int flamegraph_svg_write(FILE *out, const struct profile *p, enum memprof_view v);

#endif
