/*
 * The loader's outputs: folded stacks, pprof, an SVG flame graph or a text
 * report, chosen by --format or by the output file's extension.
 */
#ifndef MEMPROF_OUTPUT_H
#define MEMPROF_OUTPUT_H

#include "outfile.h"
#include "lifetimes.h"
#include "profile.h"
#include "timeline.h"

enum output_format { FMT_AUTO = -1, FMT_FOLDED, FMT_PPROF, FMT_SVG, FMT_TEXT, FMT_JSON, N_FORMATS };

/* The format named s (folded, pprof, svg, text, json), or -1. */
int output_format_parse(const char *s);
/* The format of a file by its extension: .pb.gz/.pprof, .svg, .txt, .json, .folded, else
 * FMT_AUTO. */
enum output_format output_format_of_ext(const char *path);
/* The same, FMT_FOLDED for any other extension. */
enum output_format output_format_of_path(const char *path);
/* "folded", "pprof", "svg", "text", "json" ("auto" for FMT_AUTO). */
const char *output_format_name(enum output_format f);

/* The path that names standard output (-o -). */
#define OUTPUT_STDOUT "-"
/* 1 when path is NULL or OUTPUT_STDOUT. */
int output_is_stdout(const char *path);
/*
 * The format a file gets: an explicit extension (output_format_of_ext)
 * wins over --format (requested); --format applies to standard output and
 * to files without a known extension; FMT_FOLDED when neither says.
 */
enum output_format output_format_for(const char *path, enum output_format requested);
/* One note per path whose extension overrides an explicit --format. */
void output_note_formats(const char *const paths[], int n, enum output_format requested);

#define OUTPUT_MAX_FILES 8

/*
 * The files of a request, opened before tracing (outfile.h): a bad path
 * fails before any sample is taken, and each file is replaced whole at the
 * end, or its profile goes to a fallback file that the error names.
 */
struct output_files {
	struct outfile paths[OUTPUT_MAX_FILES]; /* -o FILE, in order */
	struct outfile views[MEMPROF_N_VIEWS];	/* --all-views DIR/<view>.folded */
	struct outfile out;			/* standard output */
	struct outfile lifetimes, timeline;	/* --lifetimes, --timeline */
	int n_paths, has_views, has_stdout, has_lifetimes, has_timeline;
};

struct output_request {
	const char *paths[OUTPUT_MAX_FILES]; /* files to write (none: stdout) */
	int n_paths;
	const char *all_views_dir; /* non-NULL: DIR/<view>.folded for every view */
	enum output_format format; /* FMT_AUTO: by each path's extension */
	unsigned dsym_flags;	   /* DSYM_* */
	struct profile_meta meta;
	/* Opened beforehand by output_files_open; NULL: opened when writing. */
	struct output_files *files;
	/*
	 * --lifetimes (needs the sources' lifetimes) and --timeline; NULL:
	 * none.  The lifetimes, when the sources have them, show in every
	 * output (text table, SVG tooltips, pprof labels and comments).
	 */
	const char *lifetimes_path;	 /* --lifetimes FILE.csv (-v: histograms on stderr) */
	const struct timeline *timeline; /* its parts are the sources, in order */
	const char *timeline_path;	 /* --timeline FILE.svg or FILE.csv */
};

/*
 * Open the files r names: its paths, the files of its all_views_dir
 * (created if needed), its lifetimes and timeline files, and standard output when there is neither
 * and with_stdout.  EXIT_OK, or EXIT_FAILED after one line with the reason (nothing stays open).
 */
int output_files_open(struct output_files *f, const struct output_request *r, int with_stdout);
/* Close them; a file not written is dropped (the old one stays). */
void output_files_close(struct output_files *f);

/*
 * Symbolize the aggregates and write what r asks.  Returns an exit code
 * (EXIT_OK, or EXIT_FAILED after printing one line).  With meta.verbose,
 * prints the symbolization's time and memory.
 */
int output_write(const struct output_request *r, const struct memprof_stack *stacks,
		 const __u64 *frames, uint64_t n_frames, const struct memprof_stack_agg *aggs,
		 uint32_t n, struct symbolizer *sym);

/* One traced process's aggregates and the symbolizer of its address space. */
struct output_source {
	pid_t pid;
	const char *name; /* "comm (pid)": its root frame when there are several */
	const struct memprof_stack *stacks;
	const __u64 *frames; /* the frame arena of the stacks, n_frames long */
	uint64_t n_frames;
	const struct memprof_stack_agg *aggs;
	uint32_t n;
	struct symbolizer *sym;
	struct lifetime_input life; /* life.read_hists NULL: no lifetimes */
	/* The live view at the peak, per stack id (peak.h; NULL: no peak view). */
	const struct peak_stack *peak;
	uint32_t n_peak;
	/*
	 * Optional (NULL: the tables stay): unmap the tables stacks, frames
	 * and aggs read from, while the frames are resolved, and map them
	 * again after (0, or -errno: the output then fails).
	 */
	void (*unmap_tables)(void *ctx);
	int (*map_tables)(void *ctx);
	void *tables_ctx;
};

/* The same for several processes in one profile (at most PROFILE_MAX_PARTS). */
int output_write_sources(const struct output_request *r, const struct output_source *src,
			 size_t n_src);

#endif
