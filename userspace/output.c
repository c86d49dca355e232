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
#include "pprof.h"
#include "text_report.h"

/* Sites whose lifetime histograms -v prints. */
#define LIFETIMES_HIST_TOP 10

static const char *const format_names[N_FORMATS] = {"folded", "pprof", "svg", "text"};

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

enum output_format output_format_of_path(const char *path)
{
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof"))
		return FMT_PPROF;
	if (ends_with(path, ".svg"))
		return FMT_SVG;
	if (ends_with(path, ".txt"))
		return FMT_TEXT;
	return FMT_FOLDED;
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
	default:
		return folded_write(f, p, v) < 0 ? -1 : 0;
	}
}

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "memprof-bpf: cannot write %s%s%s\n", what, path ? " " : "",
		path ? path : "");
	return EXIT_FAILED;
}

static int write_all(const struct output_request *r, const struct profile *p)
{
	char path[PATH_MAX];

	if (r->all_views_dir) {
		if (mkdir(r->all_views_dir, 0755) && errno != EEXIST) {
			fprintf(stderr, "memprof-bpf: cannot create %s: %s\n", r->all_views_dir,
				strerror(errno));
			return EXIT_FAILED;
		}
		for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
			FILE *f;

			snprintf(path, sizeof(path), "%s/%s.folded", r->all_views_dir,
				 memprof_view_names[v]);
			f = fopen(path, "w");
			if (!f)
				return fail("", path);
			if (folded_write(f, p, v) < 0) {
				fclose(f);
				return fail("", path);
			}
			if (fclose(f))
				return fail("", path);
		}
		if (!r->n_paths)
			return EXIT_OK;
	}
	for (int i = 0; i < r->n_paths; i++) {
		const char *path = r->paths[i];
		enum output_format fmt =
		    r->format == FMT_AUTO ? output_format_of_path(path) : r->format;
		FILE *f = fopen(path, "w");

		if (!f)
			return fail("", path);
		if (write_format(f, p, fmt, p->meta.view)) {
			fclose(f);
			return fail("", path);
		}
		if (fclose(f))
			return fail("", path);
	}
	if (r->n_paths || r->all_views_dir)
		return EXIT_OK;
	if (write_format(stdout, p, r->format == FMT_AUTO ? FMT_FOLDED : r->format, p->meta.view) ||
	    fflush(stdout))
		return fail("the output", NULL);
	return EXIT_OK;
}

/* --lifetimes and --timeline (and, with -v, the lifetime histograms). */
static int write_lifetimes_timeline(const struct output_request *r, const struct profile *p)
{
	FILE *f;

	if (r->lifetimes_path) {
		f = fopen(r->lifetimes_path, "w");
		if (!f)
			return fail("", r->lifetimes_path);
		if (lifetimes_csv_write(f, p)) {
			fclose(f);
			return fail("", r->lifetimes_path);
		}
		if (fclose(f))
			return fail("", r->lifetimes_path);
		if (p->meta.verbose && lifetimes_hist_write(stderr, p, LIFETIMES_HIST_TOP))
			return fail("the lifetime histograms", NULL);
	}
	if (r->timeline_path && r->timeline) {
		f = fopen(r->timeline_path, "w");
		if (!f)
			return fail("", r->timeline_path);
		if (timeline_write(f, r->timeline, p, timeline_format_of_path(r->timeline_path))) {
			fclose(f);
			return fail("", r->timeline_path);
		}
		if (fclose(f))
			return fail("", r->timeline_path);
	}
	return EXIT_OK;
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
		 const struct memprof_stack_agg *aggs, uint32_t n, struct symbolizer *sym)
{
	struct output_source src = {
	    .pid = r->meta.pid, .stacks = stacks, .aggs = aggs, .n = n, .sym = sym};

	/* No lifetimes from here: output_write_sources with src.life has them. */

	return output_write_sources(r, &src, 1);
}

int output_write_sources(const struct output_request *r, const struct output_source *src,
			 size_t n_src)
{
	double w0 = wall_now(), c0 = cpu_now();
	struct rusage before, after;
	struct profile_part parts[PROFILE_MAX_PARTS];
	struct lifetime_input life[PROFILE_MAX_PARTS];
	struct profile p;
	int code, oom = 0;

	if (n_src > PROFILE_MAX_PARTS)
		n_src = PROFILE_MAX_PARTS;
	getrusage(RUSAGE_SELF, &before);
	for (size_t i = 0; i < n_src; i++) {
		parts[i] = (struct profile_part){.pid = src[i].pid,
						 .stacks = src[i].stacks,
						 .aggs = src[i].aggs,
						 .n = src[i].n,
						 .dsym = dsym_new(src[i].sym, r->dsym_flags)};
		snprintf(parts[i].root, sizeof(parts[i].root), "%s",
			 src[i].name ? src[i].name : "");
		oom |= !parts[i].dsym;
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
	for (size_t i = 0; i < n_src; i++)
		life[i] = src[i].life;
	if (lifetimes_attach(&p, life, n_src)) {
		profile_free(&p);
		for (size_t i = 0; i < n_src; i++)
			dsym_free(parts[i].dsym);
		fprintf(stderr, "memprof-bpf: out of memory reading the lifetimes\n");
		return EXIT_FAILED;
	}
	code = write_all(r, &p);
	if (!code)
		code = write_lifetimes_timeline(r, &p);
	profile_free(&p);
	for (size_t i = 0; i < n_src; i++)
		dsym_free(parts[i].dsym);
	return code;
}
