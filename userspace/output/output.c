/* Format dispatch: build the profile once, write it as asked. */
#include "output.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "exit_codes.h"
#include "flamegraph_svg.h"
#include "folded.h"
#include "json.h"
#include "pprof.h"
#include "text_report.h"

/* Sites whose lifetime histograms -v prints. */
#define LIFETIMES_HIST_TOP 10

static const char *const format_names[N_FORMATS] = {"folded", "pprof", "svg", "text", "json"};

int output_format_parse(const char *s)
{
	for (int f = 0; f < N_FORMATS; f++)
		if (!strcmp(s, format_names[f]))
			return f;
	return -1;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

enum output_format output_format_of_ext(const char *path)
{
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof"))
		return FMT_PPROF;
	if (ends_with(path, ".svg"))
		return FMT_SVG;
	if (ends_with(path, ".txt"))
		return FMT_TEXT;
	if (ends_with(path, ".json"))
		return FMT_JSON;
	if (ends_with(path, ".folded"))
		return FMT_FOLDED;
	return FMT_AUTO;
}

enum output_format output_format_of_path(const char *path)
{
	enum output_format f = output_format_of_ext(path);

	return f == FMT_AUTO ? FMT_FOLDED : f;
}

const char *output_format_name(enum output_format f)
{
	return f >= 0 && f < N_FORMATS ? format_names[f] : "auto";
}

int output_is_stdout(const char *path)
{
	return !path || !strcmp(path, OUTPUT_STDOUT);
}

enum output_format output_format_for(const char *path, enum output_format requested)
{
	enum output_format ext = output_is_stdout(path) ? FMT_AUTO : output_format_of_ext(path);

	if (ext != FMT_AUTO)
		return ext;
	return requested == FMT_AUTO ? FMT_FOLDED : requested;
}

void output_note_formats(const char *const paths[], int n, enum output_format requested)
{
	for (int i = 0; requested != FMT_AUTO && i < n; i++) {
		enum output_format f = output_format_for(paths[i], requested);

		if (f != requested)
			fprintf(
			    stderr,
			    "memprof-bpf: note: %s is written as %s, by its extension (--format "
			    "%s applies to standard output, snapshots and files without a known "
			    "extension)\n",
			    paths[i], format_names[f], format_names[requested]);
	}
}

static int write_format(FILE *f, const struct profile *p, enum output_format fmt,
			enum memprof_view v)
{
	switch (fmt) {
	case FMT_PPROF:
		return pprof_write(f, p);
	case FMT_SVG:
		return flamegraph_svg_write(f, p, v);
	case FMT_TEXT:
		return text_report_write(f, p);
	case FMT_JSON:
		return json_write(f, p);
	default:
		return folded_write(f, p, v) < 0 ? -1 : 0;
	}
}

#define ERR_LEN (2 * PATH_MAX + 256)

static void files_init(struct output_files *f)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < OUTPUT_MAX_FILES; i++)
		f->paths[i].fd = -1;
	for (int v = 0; v < MEMPROF_N_VIEWS; v++)
		f->views[v].fd = -1;
	f->out.fd = -1;
	f->lifetimes.fd = -1;
	f->timeline.fd = -1;
}

void output_files_close(struct output_files *f)
{
	for (int i = 0; i < f->n_paths; i++)
		outfile_close(&f->paths[i]);
	if (f->has_views)
		for (int v = 0; v < MEMPROF_N_VIEWS; v++)
			outfile_close(&f->views[v]);
	if (f->has_stdout)
		outfile_close(&f->out);
	if (f->has_lifetimes)
		outfile_close(&f->lifetimes);
	if (f->has_timeline)
		outfile_close(&f->timeline);
	files_init(f);
}

int output_files_open(struct output_files *f, const struct output_request *r, int with_stdout)
{
	char path[PATH_MAX], err[ERR_LEN];

	files_init(f);
	if (r->all_views_dir) {
		if (outfile_make_dir(r->all_views_dir, err, sizeof(err)))
			goto fail;
		f->has_views = 1;
		for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
			snprintf(path, sizeof(path), "%s/%s.folded", r->all_views_dir,
				 memprof_view_names[v]);
			if (outfile_open(&f->views[v], path, err, sizeof(err)))
				goto fail;
		}
	}
	for (int i = 0; i < r->n_paths; i++) {
		f->n_paths = i + 1;
		if (outfile_open(&f->paths[i], r->paths[i], err, sizeof(err)))
			goto fail;
	}
	if (r->lifetimes_path) {
		f->has_lifetimes = 1;
		if (outfile_open(&f->lifetimes, r->lifetimes_path, err, sizeof(err)))
			goto fail;
	}
	if (r->timeline_path) {
		f->has_timeline = 1;
		if (outfile_open(&f->timeline, r->timeline_path, err, sizeof(err)))
			goto fail;
	}
	if (!r->n_paths && !r->all_views_dir && with_stdout) {
		f->has_stdout = 1;
		if (outfile_open(&f->out, NULL, err, sizeof(err)))
			goto fail;
	}
	return EXIT_OK;
fail:
	output_files_close(f);
	fprintf(stderr, "memprof-bpf: %s\n", err);
	return EXIT_FAILED;
}

struct format_writer {
	const struct profile *p;
	enum output_format fmt;
	enum memprof_view view;
};

static int format_writer_run(FILE *f, void *ctx)
{
	const struct format_writer *w = ctx;

	errno = 0;
	return write_format(f, w->p, w->fmt, w->view);
}

static const char *const format_ext[N_FORMATS] = {".folded", ".pb.gz", ".svg", ".txt", ".json"};

/* Write one file with fn; a failure is one line (with the fallback file, if any). */
static int write_with(struct outfile *o, outfile_writer fn, void *ctx, const char *tag)
{
	char err[ERR_LEN];

	if (!outfile_write(o, fn, ctx, tag, err, sizeof(err)))
		return EXIT_OK;
	fprintf(stderr, "memprof-bpf: %s\n", err);
	return EXIT_FAILED;
}

static int lifetimes_writer(FILE *f, void *ctx)
{
	errno = 0;
	return lifetimes_csv_write(f, ctx) ? -1 : 0;
}

struct timeline_writer {
	const struct output_request *r;
	const struct profile *p;
};

static int timeline_writer_run(FILE *f, void *ctx)
{
	const struct timeline_writer *w = ctx;

	errno = 0;
	return timeline_write(f, w->r->timeline, w->p, timeline_format_of_path(w->r->timeline_path))
		   ? -1
		   : 0;
}

/* Write one file; a failure is one line (with the fallback file, if any). */
static int write_one(struct outfile *o, const struct profile *p, enum output_format fmt,
		     enum memprof_view v, const char *tag)
{
	struct format_writer w = {p, fmt, v};
	char err[ERR_LEN];

	if (!outfile_write(o, format_writer_run, &w, tag, err, sizeof(err)))
		return EXIT_OK;
	fprintf(stderr, "memprof-bpf: %s\n", err);
	return EXIT_FAILED;
}

static int write_all(const struct output_request *r, const struct profile *p)
{
	struct output_files own, *files = r->files;
	char tag[96];
	int code = EXIT_OK;

	if (!files) {
		code = output_files_open(&own, r, 1);
		if (code)
			return code;
		files = &own;
	}
	/* Every file is tried: one that fails does not lose the others. */
	if (files->has_views)
		for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
			snprintf(tag, sizeof(tag), "%s.folded", memprof_view_names[v]);
			code |= write_one(&files->views[v], p, FMT_FOLDED, v, tag);
		}
	for (int i = 0; i < files->n_paths; i++) {
		const char *path = r->paths[i], *base = strrchr(path, '/');
		enum output_format fmt = output_format_for(path, r->format);

		if (output_is_stdout(path))
			snprintf(tag, sizeof(tag), "stdout%s", format_ext[fmt]);
		else
			snprintf(tag, sizeof(tag), "%.80s", base ? base + 1 : path);
		code |= write_one(&files->paths[i], p, fmt, p->meta.view, tag);
	}
	if (files->has_stdout) {
		enum output_format fmt = r->format == FMT_AUTO ? FMT_FOLDED : r->format;

		snprintf(tag, sizeof(tag), "stdout%s", format_ext[fmt]);
		code |= write_one(&files->out, p, fmt, p->meta.view, tag);
	}
	if (files->has_lifetimes) {
		const char *base = strrchr(r->lifetimes_path, '/');

		snprintf(tag, sizeof(tag), "%.80s", base ? base + 1 : r->lifetimes_path);
		code |= write_with(&files->lifetimes, lifetimes_writer, (void *)p, tag);
		if (p->meta.verbose && lifetimes_hist_write(stderr, p, LIFETIMES_HIST_TOP)) {
			fprintf(stderr, "memprof-bpf: cannot write the lifetime histograms\n");
			code = EXIT_FAILED;
		}
	}
	if (files->has_timeline && r->timeline) {
		struct timeline_writer tw = {r, p};
		const char *base = strrchr(r->timeline_path, '/');

		snprintf(tag, sizeof(tag), "%.80s", base ? base + 1 : r->timeline_path);
		code |= write_with(&files->timeline, timeline_writer_run, &tw, tag);
	}
	if (files == &own)
		output_files_close(&own);
	return code ? EXIT_FAILED : EXIT_OK;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int output_write(const struct output_request *r, const struct memprof_stack *stacks,
		 const __u64 *frames, uint64_t n_frames, const struct memprof_stack_agg *aggs,
		 uint32_t n, struct symbolizer *sym)
{
	struct output_source src = {.pid = r->meta.pid,
				    .stacks = stacks,
				    .frames = frames,
				    .n_frames = n_frames,
				    .aggs = aggs,
				    .n = n,
				    .sym = sym};

	/* No lifetimes from here: output_write_sources with src.life has them. */

	return output_write_sources(r, &src, 1);
}

/*
 * Whether an output of r shows lifetimes: --lifetimes, and every format
 * but folded stacks (text table, SVG tooltips, pprof labels, JSON fields).
 * Folded stacks alone need none: the lifetimes (880 bytes a stack in the
 * profile) are then not read.
 */
static int wants_lifetimes(const struct output_request *r)
{
	if (r->lifetimes_path)
		return 1;
	for (int i = 0; i < r->n_paths; i++)
		if (output_format_for(r->paths[i], r->format) != FMT_FOLDED)
			return 1;
	return !r->n_paths && !r->all_views_dir && r->format != FMT_AUTO && r->format != FMT_FOLDED;
}

int output_write_sources(const struct output_request *r, const struct output_source *src,
			 size_t n_src)
{
	double w0 = wall_now(), c0 = cpu_now();
	struct rusage before, after;
	struct profile_part parts[PROFILE_MAX_PARTS];
	struct lifetime_input life[PROFILE_MAX_PARTS];
	struct profile_pcs *pcs = NULL;
	struct profile p;
	int code, oom = 0, map_err = 0;

	if (n_src > PROFILE_MAX_PARTS)
		n_src = PROFILE_MAX_PARTS;
	getrusage(RUSAGE_SELF, &before);
	for (size_t i = 0; i < n_src; i++) {
		parts[i] = (struct profile_part){.pid = src[i].pid,
						 .stacks = src[i].stacks,
						 .frames = src[i].frames,
						 .n_frames = src[i].n_frames,
						 .aggs = src[i].aggs,
						 .n = src[i].n,
						 .peak = src[i].peak,
						 .n_peak = src[i].n_peak,
						 .dsym = dsym_new(src[i].sym, r->dsym_flags)};
		snprintf(parts[i].root, sizeof(parts[i].root), "%s",
			 src[i].name ? src[i].name : "");
		oom |= !parts[i].dsym;
	}
	/*
	 * The frames are resolved with the kernel's tables unmapped, and the
	 * DWARF readers (libdwfl and the debug files it maps) released before
	 * the tables are mapped again and the profile built: otherwise the
	 * three add up in the loader's peak RSS (profile.h).
	 */
	if (!oom && !(pcs = profile_collect_pcs(parts, n_src, &r->meta)))
		oom = 1;
	for (size_t i = 0; i < n_src && !oom; i++)
		if (src[i].unmap_tables)
			src[i].unmap_tables(src[i].tables_ctx);
	if (!oom && profile_resolve_pcs(parts, n_src, pcs))
		oom = 1;
	profile_pcs_free(pcs);
	for (size_t i = 0; i < n_src; i++)
		dsym_release_readers(parts[i].dsym);
	for (size_t i = 0; i < n_src; i++) {
		int rc = src[i].map_tables ? src[i].map_tables(src[i].tables_ctx) : 0;

		if (rc && !map_err)
			map_err = rc;
	}
	if (map_err) {
		for (size_t i = 0; i < n_src; i++)
			dsym_free(parts[i].dsym);
		fprintf(stderr, "memprof-bpf: cannot map the stack tables again: %s\n",
			strerror(-map_err));
		return EXIT_FAILED;
	}
	if (oom || profile_build_parts(&p, parts, n_src, &r->meta)) {
		if (!oom)
			profile_free(&p);
		for (size_t i = 0; i < n_src; i++)
			dsym_free(parts[i].dsym);
		fprintf(stderr, "memprof-bpf: out of memory symbolizing the stacks\n");
		return EXIT_FAILED;
	}
	/*
	 * The rate in force is what the samples were weighed with: the one
	 * asked for, unless the target sampled at another (another tracer's,
	 * an in-process profile's).  The kernel side weighs with 65536 / rate
	 * rounded, hence the tolerance.
	 */
	if (p.total_samples[MEMPROF_VIEW_ALLOC] > 0 && p.total_bytes[MEMPROF_VIEW_ALLOC] > 0) {
		double used = 8.0 * (double)p.total_samples[MEMPROF_VIEW_ALLOC] /
			      (double)p.total_bytes[MEMPROF_VIEW_ALLOC];

		if (!(fabs(used - p.meta.rate) <= 1e-3 * p.meta.rate))
			p.meta.rate = used;
	}
	if (r->meta.verbose) {
		size_t addrs = 0, lines = 0, mods = 0, dwarf = 0;

		for (size_t k = 0; k < n_src; k++) {
			size_t a, l, m = dsym_n_modules(parts[k].dsym);

			for (size_t i = 0; i < m; i++)
				dwarf += dsym_module(parts[k].dsym, i)->has_dwarf;
			dsym_counts(parts[k].dsym, &a, &l);
			addrs += a, lines += l, mods += m;
		}
		getrusage(RUSAGE_SELF, &after);
		fprintf(stderr,
			"memprof-bpf: symbolization: %zu stacks, %zu addresses, %zu frames, %zu "
			"modules (%zu with DWARF), %.1f ms wall, %.1f ms cpu, max rss %ld KiB "
			"(%ld KiB before)\n",
			p.n_stacks, addrs, lines, mods, dwarf, (wall_now() - w0) * 1e3,
			(cpu_now() - c0) * 1e3, after.ru_maxrss, before.ru_maxrss);
	}
	for (size_t i = 0; i < n_src; i++) {
		life[i] = src[i].life;
		if (!wants_lifetimes(r))
			life[i].read_hists = NULL;
	}
	if (lifetimes_attach(&p, life, n_src)) {
		profile_free(&p);
		for (size_t i = 0; i < n_src; i++)
			dsym_free(parts[i].dsym);
		fprintf(stderr, "memprof-bpf: out of memory reading the lifetimes\n");
		return EXIT_FAILED;
	}
	code = write_all(r, &p);
	profile_free(&p);
	for (size_t i = 0; i < n_src; i++)
		dsym_free(parts[i].dsym);
	return code;
}
