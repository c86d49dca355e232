/*
 * Lifetimes of sampled blocks, per stack and per allocation site: the
 * kernel's log2 histograms of the blocks that died (bpf/memprof_maps.h,
 * struct memprof_lifetime_hist) and the ages of the blocks still alive when
 * the loader stopped (censored lifetimes: each is a lower bound), read from
 * the block map.  Percentiles, the --lifetimes CSV, the text histograms of
 * -v, and the one-line summaries the text report, the SVG tooltips and pprof
 * show.
 */
#ifndef MEMPROF_LIFETIMES_H
#define MEMPROF_LIFETIMES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"
#include "trace/tracer.h"

/* One stack's or one site's lifetimes, in samples (n_samples of each block). */
struct lifetime_dist {
	uint64_t died[MEMPROF_N_DEATHS][MEMPROF_LIFETIME_SLOTS];
	uint64_t live[MEMPROF_LIFETIME_SLOTS]; /* still alive: their ages so far */
	/* Exact ages (microseconds) of the youngest and oldest still-live block. */
	uint64_t youngest_live_us, oldest_live_us;
};

/* One stack's histogram of the blocks that died, as a reader hands it over. */
typedef void (*lifetime_hist_fn)(void *arg, uint32_t stack_id,
				 const struct memprof_lifetime_counts *h);
/*
 * Hand every histogram of the blocks that died to each (stack ids of
 * stacks with a death, in no order; a batch at a time from the kernel's
 * map, never the whole table copied): 0, or -errno.
 */
typedef int (*lifetime_hists_reader)(void *ctx, lifetime_hist_fn each, void *arg);

/* What the lifetimes of one process are read from, at the end of a run. */
struct lifetime_input {
	lifetime_hists_reader read_hists;   /* NULL: no lifetimes */
	void *read_ctx;			    /* its first argument */
	uint32_t n_stacks;		    /* stack ids below it are read */
	const struct tracked_block *blocks; /* the block map after detach */
	size_t n_blocks;
	uint64_t now_ns; /* CLOCK_MONOTONIC when sampling stopped (the censoring time) */
};

/* The histogram slot of a lifetime in microseconds (as the kernel files it). */
uint32_t lifetime_slot(uint64_t us);
/* The lifetimes a slot holds: [lo, hi) microseconds; hi is 0 for the last slot. */
void lifetime_slot_range(uint32_t slot, uint64_t *lo, uint64_t *hi);

/* Add from into to. */
void lifetime_dist_merge(struct lifetime_dist *to, const struct lifetime_dist *from);
uint64_t lifetime_dist_died(const struct lifetime_dist *d, int kind); /* -1: both kinds */
uint64_t lifetime_dist_live(const struct lifetime_dist *d);

/*
 * The q-quantile (0 < q < 1) of the lifetimes, in milliseconds, over the
 * deaths and the still-live ages together, interpolated linearly inside its
 * log2 slot.  Returns 0 if exact (to its slot), 1 if only a lower bound
 * (some block still alive at or below it: its real lifetime is longer), -1
 * if there is nothing to measure.
 */
int lifetime_quantile(const struct lifetime_dist *d, double q, double *ms);

/*
 * Give every stack of p its lifetimes (p->stacks[i].life, freed by
 * profile_free): in[k] is the input of the process p->parts[k], k < n_in
 * (an input without a reader is skipped; a reader that fails leaves the
 * histograms of the blocks that died empty, and says so itself).  0, or -1
 * when out of memory.
 */
int lifetimes_attach(struct profile *p, const struct lifetime_input *in, size_t n_in);

/* One line: "lifetime p50 1.4 ms, p90 1.9 ms, p99 2 ms (>= lower bound), N still live". */
void lifetime_summary(const struct lifetime_dist *d, char *buf, size_t len);

/*
 * Per-site lifetimes of p, largest sample count first.  A site is per
 * process: with several processes (p->n_parts > 1) the same function in two
 * processes is two sites, named with lifetime_site_label().
 */
struct lifetime_site {
	const char *name; /* site_of_stack_site() of its stacks: the function, */
	const char *file; /* the file (NULL: unknown) */
	int line;	  /* and the line where it calls */
	size_t part;	  /* its process, p->parts[part] */
	struct lifetime_dist d;
};
/* "site", or "site [comm (pid)]" when p has several processes. */
#define LIFETIME_LABEL_LEN 1024
void lifetime_site_label(const struct profile *p, size_t part, const char *site, char *buf,
			 size_t len);
struct lifetime_site *lifetime_sites(const struct profile *p, size_t *n);

/*
 * The --lifetimes CSV (header LIFETIMES_CSV_HEADER, then died_young,
 * died_old, bound_from, youngest_live_ms, oldest_live_ms, pid, and the
 * site's file and line, empty when unknown).  0 or -1.
 */
#define LIFETIMES_CSV_HEADER "site,samples,p50_ms,p90_ms,p99_ms,still_live"
int lifetimes_csv_write(FILE *out, const struct profile *p);
/* The text report's lifetime table.  0 or -1. */
int lifetimes_text_table(FILE *out, const struct profile *p);
/* Histograms of the top sites as text, one bar per log2 slot.  0 or -1. */
int lifetimes_hist_write(FILE *out, const struct profile *p, size_t top);

/* s as one CSV field (quoted when it holds a comma, a quote or a newline). */
void csv_field(FILE *out, const char *s);

#endif
