/* The text report, a table per view. */
#include "text_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lifetimes.h"
#include "site.h"

static const char *const view_meaning[MEMPROF_N_VIEWS] = {
    "every sampled allocation",
    "blocks still alive when tracing stopped",
    "blocks that survived a minor collection",
    "blocks freed while young",
    "live blocks when the total live memory read was highest",
};

struct row {
	char *label; /* site name, or the stack root;...;leaf */
	int64_t samples, bytes;
	double objects;
	int64_t peak_bytes; /* the same stacks' bytes in the peak view */
};

static void human_bytes(char *buf, size_t len, double b)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;

	while (fabs(b) >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.4g %s" : "%.0f %s", b, units[u]);
}

static void human_count(char *buf, size_t len, double n)
{
	if (fabs(n) < 1e6)
		snprintf(buf, len, "%.0f", n);
	else
		snprintf(buf, len, "%.4g", n);
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->label, y->label);
}

/* Root-first frames joined by ';', each as flags (PROFILE_NAME_*) print it;
 * malloc'ed. */
static char *stack_label(const struct profile_stack *s, unsigned flags)
{
	struct profile_name names[PROFILE_MAX_NAMES];
	size_t n = profile_stack_entries(s, names, PROFILE_MAX_NAMES), len = 1, o = 0;
	char *out, *owned[PROFILE_MAX_NAMES];
	const char *str[PROFILE_MAX_NAMES];

	for (size_t i = 0; i < n; i++) {
		owned[i] = flags && names[i].line ? profile_name_dup(&names[i], flags) : NULL;
		str[i] = owned[i] ? owned[i] : names[i].name;
		len += strlen(str[i]) + 1;
	}
	out = malloc(len);
	if (out) {
		for (size_t i = n; i-- > 0;)
			o += (size_t)sprintf(out + o, "%s%s", o ? ";" : "", str[i]);
		out[o] = '\0';
	}
	for (size_t i = 0; i < n; i++)
		free(owned[i]);
	return out;
}

/* The site of a stack, "name (file:line)", malloc'ed. */
static char *site_label(const struct profile_stack *s, unsigned flags)
{
	struct site st = site_of_stack_site(s);
	size_t len = strlen(st.name) + (st.file ? strlen(st.file) : 0) + 32;
	char *out = malloc(len);

	if (out)
		site_format(&st, flags, out, len);
	return out;
}

/* Rows of view v, by site (by_stack 0) or by stack; merged by label. */
static struct row *rows_of(const struct profile *p, int v, int by_stack, size_t *n_rows)
{
	struct row *rows = calloc(p->n_stacks ? p->n_stacks : 1, sizeof(*rows));
	size_t n = 0;

	if (!rows)
		return NULL;
	for (size_t i = 0; i < p->n_stacks; i++) {
		const struct profile_stack *s = &p->stacks[i];
		char *label;
		size_t j;

		if (s->bytes[v] <= 0)
			continue;
		label = by_stack ? stack_label(s, p->meta.names) : site_label(s, p->meta.names);
		if (!label)
			goto oom;
		for (j = 0; j < n && strcmp(rows[j].label, label); j++)
			;
		if (j == n)
			rows[n++].label = label;
		else
			free(label);
		rows[j].samples += s->samples[v];
		rows[j].bytes += s->bytes[v];
		rows[j].objects += s->objects[v];
		rows[j].peak_bytes += s->bytes[MEMPROF_VIEW_PEAK];
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	*n_rows = n;
	return rows;
oom:
	for (size_t j = 0; j < n; j++)
		free(rows[j].label);
	free(rows);
	return NULL;
}

/* The live view's tables have an "at peak" column when the peak was read. */
static int peak_column(const struct profile *p, int v)
{
	return v == MEMPROF_VIEW_LIVE && p->meta.peak_readings;
}

static void print_row(FILE *out, const struct profile *p, int v, const struct row *r)
{
	double lo, hi, per = profile_bytes_per_sample(p, r->bytes, r->samples);
	double share = p->total_bytes[v] > 0 ? 100.0 * r->bytes / p->total_bytes[v] : 0;
	char b[32], bl[32], bh[32], o[32], ol[32], oh[32];

	poisson_interval95((double)r->samples, &lo, &hi);
	human_bytes(b, sizeof(b), (double)r->bytes);
	human_bytes(bl, sizeof(bl), lo * per);
	human_bytes(bh, sizeof(bh), hi * per);
	human_count(o, sizeof(o), r->objects);
	human_count(ol, sizeof(ol), r->samples ? r->objects * lo / r->samples : 0);
	human_count(oh, sizeof(oh), r->samples ? r->objects * hi / r->samples : 0);
	fprintf(out, "%6.2f%%  %11s  [%11s, %11s]  %10s  [%10s, %10s]  %8lld  ", share, b, bl, bh,
		o, ol, oh, (long long)r->samples);
	if (peak_column(p, v)) {
		human_bytes(b, sizeof(b), (double)r->peak_bytes);
		fprintf(out, "%11s  ", b);
	}
	fprintf(out, "%s\n", r->label);
}

static int print_table(FILE *out, const struct profile *p, int v, int by_stack)
{
	size_t n;
	struct row *rows = rows_of(p, v, by_stack, &n);

	if (!rows)
		return -1;
	fprintf(out, "%7s  %11s  %-26s  %10s  %-24s  %8s  ", "share", "bytes", "[95% interval]",
		"objects", "[95% interval]", "samples");
	if (peak_column(p, v))
		fprintf(out, "%11s  ", "at peak");
	fprintf(out, "%s\n", by_stack ? "stack (root;...;leaf)" : "site");
	for (size_t i = 0; i < n; i++) {
		print_row(out, p, v, &rows[i]);
		free(rows[i].label);
	}
	if (!n)
		fprintf(out, "    (nothing sampled)\n");
	free(rows);
	return 0;
}

int text_report_write(FILE *out, const struct profile *p)
{
	char b[32];

	if (p->n_parts > 1) {
		fprintf(out, "memprof-bpf report: processes");
		for (size_t i = 0; i < p->n_parts; i++)
			fprintf(out, "%s %s", i ? "," : "", p->parts[i].root);
		fprintf(out, ", sampling rate %g per word", p->meta.rate);
	} else {
		fprintf(out, "memprof-bpf report: process %d, sampling rate %g per word",
			(int)p->meta.pid, p->meta.rate);
	}
	if (p->meta.rate > 0)
		fprintf(out, " (one sample per %.0f bytes on average)", 8.0 / p->meta.rate);
	fprintf(out, ", %.1f s\n", (double)p->meta.duration_ns * 1e-9);
	fprintf(out, "Estimates from samples; each [95%% interval] is the Poisson interval of its "
		     "sample count, scaled.\n");
	for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
		human_bytes(b, sizeof(b), (double)p->total_bytes[v]);
		fprintf(out, "\n== %s (%s): %s, %.0f objects, %lld samples\n",
			memprof_view_names[v], view_meaning[v], b, p->total_objects[v],
			(long long)p->total_samples[v]);
		if (v == MEMPROF_VIEW_PEAK && p->meta.peak_readings)
			fprintf(out,
				"   read at %.3f s since the start, the highest of %llu readings "
				"about %.0f ms apart (a higher peak between two is not seen)\n",
				(double)p->meta.peak_t_ns * 1e-9,
				(unsigned long long)p->meta.peak_readings,
				(double)p->meta.poll_ns * 1e-6);
		else if (v == MEMPROF_VIEW_PEAK)
			fprintf(out,
				"   not read: this profile has no readings of the live view\n");
		fprintf(out, "-- by site\n");
		if (print_table(out, p, v, 0))
			return -1;
		if (p->meta.verbose) {
			fprintf(out, "-- by stack\n");
			if (print_table(out, p, v, 1))
				return -1;
		}
	}
	/* Lifetime percentiles per site, when the loader read them. */
	for (size_t i = 0; i < p->n_stacks; i++)
		if (p->stacks[i].life)
			return lifetimes_text_table(out, p);
	return ferror(out) ? -1 : 0;
}
