/*
 * The profile every output format is written from: the per-stack
 * aggregates of the BPF side, symbolized (symbols/dwarf_symbolize.c),
 * with the sample counts behind each estimate and the run's metadata.
 */
#ifndef MEMPROF_PROFILE_H
#define MEMPROF_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>
#include "memprof_maps.h"
#include "symbols/dwarf_symbolize.h"

struct lifetime_dist; /* lifetimes.h */

/* The views are the kernel's aggregates (enum memprof_view, memprof_maps.h). */
extern const char *const memprof_view_names[MEMPROF_N_VIEWS];

/* The view named s, or -1. */
int memprof_view_parse(const char *s);

struct profile_stack {
	/* Frames innermost first (NULL entries never); n_frames 0: stack unknown. */
	const struct dsym_frame **frames;
	size_t n_frames;
	unsigned flags;			  /* MEMPROF_STACK_F_*: a marker frame at the root */
	uint32_t id;			  /* the kernel's stack id */
	struct lifetime_dist *life;	  /* lifetimes_attach(), or NULL; freed with the profile */
	int64_t samples[MEMPROF_N_VIEWS]; /* samples behind each view (sum of n_samples) */
	int64_t bytes[MEMPROF_N_VIEWS];	  /* estimated bytes */
	double objects[MEMPROF_N_VIEWS];  /* estimated objects */
	size_t part;			  /* the process it belongs to: profile.parts[part] */
	/* The root frame naming its process, "comm (pid)", or NULL (one process). */
	const char *root;
};

struct profile_meta {
	pid_t pid;
	double rate;	 /* rate in force (per word), 0 if unknown */
	int64_t time_ns; /* wall-clock start of the collection */
	int64_t duration_ns;
	enum memprof_view view; /* the view of single-view formats */
	int verbose;		/* text: also per stack */
	const char *title;	/* pprof: the first comment, instead of the process's */
};

/* Several processes in one profile (attach PID PID...). */
#define PROFILE_MAX_PARTS 64

/* One traced process: its aggregates, the symbolizer of its address space. */
struct profile_part {
	pid_t pid;
	char root[64]; /* "comm (pid)" */
	const struct memprof_stack *stacks;
	const struct memprof_stack_agg *aggs;
	uint32_t n;
	struct dsym *dsym; /* kept by the profile, freed by the caller */
};

struct profile {
	struct profile_meta meta;
	struct dsym *dsym; /* parts[0].dsym */
	struct profile_part parts[PROFILE_MAX_PARTS];
	size_t n_parts;		      /* above 1: every stack's root frame names its process */
	struct profile_stack *stacks; /* only stacks with some weight */
	size_t n_stacks;
	int64_t total_samples[MEMPROF_N_VIEWS], total_bytes[MEMPROF_N_VIEWS];
	double total_objects[MEMPROF_N_VIEWS];
};

/*
 * Symbolize stacks[0..n) with dsym (kept by the profile, freed with it).
 * 0, or -1 when out of memory.
 */
int profile_build(struct profile *p, const struct memprof_stack *stacks,
		  const struct memprof_stack_agg *aggs, uint32_t n, struct dsym *dsym,
		  const struct profile_meta *meta);
/*
 * The same for several processes: every stack gets a root frame naming
 * its process when there is more than one part.  0, or -1 out of memory.
 */
int profile_build_parts(struct profile *p, const struct profile_part *parts, size_t n_parts,
			const struct profile_meta *meta);
void profile_free(struct profile *p);

/* "comm (pid)" of a live process (or "? (pid)" once it is gone). */
void profile_process_name(pid_t pid, char *buf, size_t len);

/* The frame names of a stack: lines of every frame, innermost first, then its
 * process's root frame if it has one. */
size_t profile_stack_names(const struct profile_stack *s, const char **names, size_t max);
#define PROFILE_MAX_NAMES (MEMPROF_STACK_DEPTH * 8)
#define PROFILE_UNKNOWN_STACK "[stack-unavailable]"
/* Root marker of a stack kept with its innermost frames (the table was full). */
#define PROFILE_INNER_STACK "[stack-table-full]"
/* Root marker of a stack cut at MEMPROF_STACK_DEPTH frames. */
#define PROFILE_CUT_STACK "[stack-cut]"

/* Bytes per sample behind view v of a stack (its estimate over its samples). */
double profile_bytes_per_sample(const struct profile *p, int64_t bytes, int64_t samples);

/*
 * 95% confidence interval of a Poisson mean from n observed events
 * (Garwood's exact interval through the Wilson-Hilferty approximation of
 * the chi-square quantiles).
 */
void poisson_interval95(double n, double *lo, double *hi);

#endif
