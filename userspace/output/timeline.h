/*
 * The timeline of live memory: estimated live bytes per stack, sampled while
 * the loader is attached, written per site as a stacked-area SVG chart or as
 * CSV (--timeline), and drawn as a sparkline (timeline_sparkline, for `top`).
 *
 * A point is the kernel's live aggregate of every stack (stack_aggs, the
 * block map summed per stack: raised when a block is sampled, lowered when
 * it dies), read from the mmapped array without a syscall.  Points are
 * taken every interval and also at the first poll after the host fired its
 * gc probe (a garbage-collected host's live memory changes at collections).
 * Live memory here is that of blocks sampled since the attach.  The number
 * of points is bounded: when full, every other point goes and the interval
 * doubles, so a long attach keeps an even cover of its whole length.
 */
#ifndef MEMPROF_TIMELINE_H
#define MEMPROF_TIMELINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/* Processes a timeline follows at most (attach PID PID...). */
#define TIMELINE_MAX_PARTS 16

/*
 * One point: the live aggregates of every process's stacks, concatenated
 * (process k's stack ids 0..n_stacks[k]-1 come after those of processes
 * 0..k-1).
 */
struct timeline_point {
	int64_t t_ns;			       /* since the start of the timeline */
	uint64_t gcs;			       /* gc probes seen so far (all processes) */
	uint32_t n_stacks[TIMELINE_MAX_PARTS]; /* per process */
	int64_t *bytes;			       /* estimated live bytes per stack */
	int64_t *samples;		       /* samples behind them */
};

struct timeline {
	int64_t start_ns; /* CLOCK_MONOTONIC of t = 0 */
	int64_t interval_ns, next_ns;
	uint64_t last_gcs;
	struct timeline_point *pts;
	size_t n, max_points;
	size_t n_parts; /* processes: parts of the profile it is written with */
};

#define TIMELINE_MAX_POINTS 1024

/* 0, or -1 when out of memory. */
int timeline_init(struct timeline *tl, int64_t start_ns, int64_t interval_ns, size_t max_points);
void timeline_free(struct timeline *tl);

/* One process's live aggregates (the mmapped array) at a point. */
struct timeline_source {
	const struct memprof_stack_agg *aggs;
	uint32_t n_stacks;
};

/*
 * Take a point at now_ns (CLOCK_MONOTONIC) of the processes src[0..n_src)
 * (always the same ones, in the order of the profile's parts), if the
 * interval has passed, if gcs (the gc probe count) moved since the last
 * point, or if force.  Returns 1 if a point was taken, 0 if not, -1 when
 * out of memory.
 */
int timeline_sample_parts(struct timeline *tl, int64_t now_ns, const struct timeline_source *src,
			  size_t n_src, uint64_t gcs, int force);
/* The same for one process. */
int timeline_sample(struct timeline *tl, int64_t now_ns, const struct memprof_stack_agg *aggs,
		    uint32_t n_stacks, uint64_t gcs, int force);

/*
 * The live bytes of process part's stacks ids[0..n_ids) summed, one value
 * per point, into out[0..max).  Returns the number of points written.
 */
size_t timeline_series(const struct timeline *tl, size_t part, const uint32_t *ids, size_t n_ids,
		       double *out, size_t max);

/*
 * A sparkline of v[0..n) in at most width characters (UTF-8 block
 * elements, lowest for zero, highest for the series' maximum; a column
 * stands for the largest value of its points), NUL-terminated in buf.
 * Returns the number of characters drawn (not bytes).
 */
size_t timeline_sparkline(const double *v, size_t n, size_t width, char *buf, size_t len);

enum timeline_format { TIMELINE_SVG, TIMELINE_CSV };
/* .csv is CSV, anything else SVG. */
enum timeline_format timeline_format_of_path(const char *path);

/* Sites drawn on their own; the others are summed as one. */
#define TIMELINE_TOP_SITES 8
#define TIMELINE_OTHER_SITES "[other sites]"

/*
 * Write the timeline per site (site_of_stack() of p's stacks; with
 * several processes a site is per process, the legend names it "site
 * [comm (pid)]"): CSV rows time_s,gcs,site,live_bytes,live_samples,pid
 * (pid empty for the other sites), or the SVG chart.  0 or -1.
 */
int timeline_write(FILE *out, const struct timeline *tl, const struct profile *p,
		   enum timeline_format fmt);

#endif
