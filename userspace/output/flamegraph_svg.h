/*
 * A self-contained interactive flame graph (SVG with its own script) of
 * every view of the profile: buttons, keys 1-N and the URL fragment's
 * view=NAME switch views without a reload; click a frame to zoom into it,
 * search by regular expression, and a tooltip per frame with its file:line,
 * estimated bytes, share, 95% interval, allocation site and lifetimes.
 */
#ifndef MEMPROF_FLAMEGRAPH_SVG_H
#define MEMPROF_FLAMEGRAPH_SVG_H

#include <stdio.h>

#include "profile.h"

/* Flame graph of every view, v shown first.  0, or -1 on a write or memory error. */
int flamegraph_svg_write(FILE *out, const struct profile *p, enum memprof_view v);

#endif
