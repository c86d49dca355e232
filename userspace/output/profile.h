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

/*
 * The views (enum memprof_view, memprof_maps.h): the kernel's aggregates,
 * then peak, which the loader derives (peak.h).
 */
extern const char *const memprof_view_names[MEMPROF_N_VIEWS];
struct peak_stack; /* peak.h */

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
	/* The allocating domain's id + 1 (the stack's MEMPROF_PROBE_STACK_DOMAIN
	 * entry, never a frame), 0 when the host names none. */
	int domain;
	/* With PROFILE_NAME_BY_DOMAIN, "domain N", the frame above the stack's
	 * outermost (below its process's root); else "". */
	char domain_root[24];
};

struct profile_meta {
	pid_t pid;
	double rate;	 /* rate in force (per word), 0 if unknown */
	int64_t time_ns; /* wall-clock start of the collection */
	int64_t duration_ns;
	enum memprof_view view; /* the view of single-view formats */
	int verbose;		/* text: also per stack */
	const char *title;	/* pprof: the first comment, instead of the process's */
	unsigned names;		/* PROFILE_NAME_*: how folded and text print frames */
	/* The peak view: the readings of the live view behind it (0: no peak
	 * known), when the highest was read (since the start) and how often
	 * the loader read (its poll interval). */
	uint64_t peak_readings;
	int64_t peak_t_ns, poll_ns;
};

/* --lines: frames read "func (file:line)" where the line is known. */
#define PROFILE_NAME_LINES 1u
/* --short-names: C++ template arguments as <...> ("std::vector<...>::push_back"). */
#define PROFILE_NAME_SHORT 2u
/* --by-domain: a "domain N" root frame on the stacks of OCaml 5 domains. */
#define PROFILE_NAME_BY_DOMAIN 4u

/*
 * --native: a Python program's stacks keep the native frames between its
 * Python frames (memprof_probe_abi.h, MEMPROF_PROBE_PY_FRAME_V1).  Without
 * it, a stack is its native frames down to the innermost Python frame, then
 * the Python frames only.
 */
#define PROFILE_NAME_NATIVE 8u

/* Several processes in one profile (attach PID PID...). */
#define PROFILE_MAX_PARTS 64

/* One traced process: its aggregates, the symbolizer of its address space. */
struct profile_part {
	pid_t pid;
	char root[64]; /* "comm (pid)" */
	const struct memprof_stack *stacks;
	/* The frame arena the stacks index (memprof_maps.h), n_frames long. */
	const __u64 *frames;
	uint64_t n_frames;
	const struct memprof_stack_agg *aggs;
	uint32_t n;
	struct dsym *dsym; /* kept by the profile, freed by the caller */
	/* The live view at the peak, per stack id [0, n_peak) (NULL: none). */
	const struct peak_stack *peak;
	uint32_t n_peak;
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
int profile_build(struct profile *p, const struct memprof_stack *stacks, const __u64 *frames,
		  uint64_t n_frames, const struct memprof_stack_agg *aggs, uint32_t n,
		  struct dsym *dsym, const struct profile_meta *meta);
/*
 * The same for several processes: every stack gets a root frame naming
 * its process when there is more than one part.  0, or -1 out of memory.
 */
int profile_build_parts(struct profile *p, const struct profile_part *parts, size_t n_parts,
			const struct profile_meta *meta);
void profile_free(struct profile *p);
/*
 * The frames are resolved before the profile is built, in three steps, so
 * that the loader's peak RSS never holds at once the kernel's stack tables
 * (mapped), the symbolizer's readers (libdwfl and the debug files it maps)
 * and the profile: profile_collect_pcs reads the addresses of the frames
 * profile_build_parts will keep (one set per part), the caller may then
 * unmap the tables, profile_resolve_pcs resolves the addresses into each
 * part's dsym cache, and the readers can go before the tables are mapped
 * again and the profile built.  profile_collect_pcs returns NULL, and
 * profile_resolve_pcs -1, when out of memory.
 */
struct profile_pcs; /* one set of addresses per part */
struct profile_pcs *profile_collect_pcs(const struct profile_part *parts, size_t n_parts,
					const struct profile_meta *meta);
int profile_resolve_pcs(const struct profile_part *parts, size_t n_parts,
			const struct profile_pcs *pcs);
void profile_pcs_free(struct profile_pcs *pcs);

/* "comm (pid)" of a live process (or "? (pid)" once it is gone). */
void profile_process_name(pid_t pid, char *buf, size_t len);

/* The frame names of a stack: lines of every frame, innermost first, then its
 * process's root frame if it has one. */
size_t profile_stack_names(const struct profile_stack *s, const char **names, size_t max);
#define PROFILE_MAX_NAMES (MEMPROF_STACK_DEPTH * 8)

/* A name of a stack with what it names: a frame's line, or a marker (line
 * and frame NULL: the root, [stack-cut], [stack-unavailable]). */
struct profile_name {
	const char *name;
	const struct dsym_line *line;
	const struct dsym_frame *frame;
};
/* profile_stack_names() with the lines and frames. */
size_t profile_stack_entries(const struct profile_stack *s, struct profile_name *out, size_t max);

/*
 * A frame's name as folded and text print it: with PROFILE_NAME_SHORT the
 * template arguments cut to <...>, with PROFILE_NAME_LINES " (file:line)"
 * after it when file is known and line > 0.  Into buf (cut to len).
 */
void profile_name_format(const char *name, const char *file, int line, unsigned flags, char *buf,
			 size_t len);
/* The same malloc'ed (NULL out of memory). */
char *profile_name_dup(const struct profile_name *n, unsigned flags);
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
