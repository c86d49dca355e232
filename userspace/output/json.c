/*
 * The JSON writer: the whole profile in one document (schema: the JSON
 * section of userspace/output/README.md), every view, every stack with
 * its frames, the 95% intervals of the text report and the lifetimes.
 */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lifetimes.h"
#include "site.h"

static const double quantiles[] = {0.5, 0.9, 0.99};
static const char *const quantile_keys[] = {"p50_ms", "p90_ms", "p99_ms"};
static const char *const quantile_names[] = {"p50", "p90", "p99"};
#define N_QUANTILES 3

/* The length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	unsigned min;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, min = 0x80, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, min = 0x800, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, min = 0x10000, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* s as a JSON string (null for NULL); bytes that are not UTF-8 become U+FFFD. */
static void json_str(FILE *out, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	while (*u) {
		size_t n = utf8_len(u);

		if (!n) {
			fputs("\\ufffd", out);
			u++;
		} else if (*u == '"' || *u == '\\') {
			fprintf(out, "\\%c", *u++);
		} else if (*u == '\n') {
			fputs("\\n", out), u++;
		} else if (*u == '\t') {
			fputs("\\t", out), u++;
		} else if (*u < 0x20 || *u == 0x7f) {
			fprintf(out, "\\u%04x", *u++);
		} else {
			fwrite(u, 1, n, out);
			u += n;
		}
	}
	fputc('"', out);
}

/* A number, or null when it is not finite (JSON has no NaN). */
static void json_num(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.17g", v);
	else
		fputs("null", out);
}

/* {"bytes", "objects", "samples", and their 95% intervals}, as the text report gives them. */
static void json_estimate(FILE *out, const struct profile *p, int64_t bytes, double objects,
			  int64_t samples)
{
	double lo, hi, per = profile_bytes_per_sample(p, bytes, samples);

	poisson_interval95((double)samples, &lo, &hi);
	fprintf(out, "{\"bytes\": %lld, \"objects\": ", (long long)bytes);
	json_num(out, objects);
	fprintf(out, ", \"samples\": %lld, \"bytes_interval95\": [", (long long)samples);
	json_num(out, lo * per);
	fputs(", ", out);
	json_num(out, hi * per);
	fputs("], \"objects_interval95\": [", out);
	json_num(out, samples > 0 ? objects * lo / (double)samples : 0);
	fputs(", ", out);
	json_num(out, samples > 0 ? objects * hi / (double)samples : 0);
	fputs("]}", out);
}

/* {"alloc": estimate, ..., "peak": estimate}. */
static void json_views(FILE *out, const struct profile *p, const int64_t *bytes,
		       const double *objects, const int64_t *samples)
{
	fputc('{', out);
	for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
		fprintf(out, "%s\"%s\": ", v ? ", " : "", memprof_view_names[v]);
		json_estimate(out, p, bytes[v], objects[v], samples[v]);
	}
	fputc('}', out);
}

/* The lifetime fields of d (shared by the stacks and the sites). */
static void json_lifetime_fields(FILE *out, const struct lifetime_dist *d)
{
	uint64_t live = lifetime_dist_live(d);
	const char *bound = NULL;

	fprintf(out, "\"samples\": %llu", (unsigned long long)(lifetime_dist_died(d, -1) + live));
	for (int q = 0; q < N_QUANTILES; q++) {
		double ms = NAN;
		int lower = lifetime_quantile(d, quantiles[q], &ms);

		if (lower > 0 && !bound)
			bound = quantile_names[q];
		fprintf(out, ", \"%s\": ", quantile_keys[q]);
		json_num(out, lower < 0 ? NAN : ms);
	}
	fprintf(out, ", \"bound_from\": ");
	json_str(out, bound);
	fprintf(out, ", \"still_live\": %llu, \"died_young\": %llu, \"died_old\": %llu",
		(unsigned long long)live,
		(unsigned long long)lifetime_dist_died(d, MEMPROF_DIED_YOUNG),
		(unsigned long long)lifetime_dist_died(d, MEMPROF_DIED_OLD));
	fputs(", \"youngest_live_ms\": ", out);
	json_num(out, live ? (double)d->youngest_live_us / 1e3 : NAN);
	fputs(", \"oldest_live_ms\": ", out);
	json_num(out, live ? (double)d->oldest_live_us / 1e3 : NAN);
}

/* The marker a stack's folded line has at its root side, or NULL. */
static const char *stack_marker(const struct profile_stack *s)
{
	if (!s->n_frames)
		return PROFILE_UNKNOWN_STACK;
	if (s->flags & MEMPROF_STACK_F_INNER)
		return PROFILE_INNER_STACK;
	if (s->flags & MEMPROF_STACK_F_CUT)
		return PROFILE_CUT_STACK;
	return NULL;
}

static int json_stack(FILE *out, const struct profile *p, const struct profile_stack *s)
{
	struct profile_name e[PROFILE_MAX_NAMES];
	size_t n = profile_stack_entries(s, e, PROFILE_MAX_NAMES), k = 0;
	const struct dsym *d = s->part < p->n_parts ? p->parts[s->part].dsym : NULL;
	struct site st = site_of_stack_site(s);

	fprintf(out, "    {\"id\": %u, \"process\": %zu, \"marker\": ", s->id, s->part);
	json_str(out, stack_marker(s));
	fputs(",\n     \"frames\": [", out);
	for (size_t i = 0; i < n; i++) {
		const struct dsym_line *l = e[i].line;
		const struct dsym_frame *f = e[i].frame;
		const struct dsym_module *m =
		    f && d && f->module >= 0 && (size_t)f->module < dsym_n_modules(d)
			? dsym_module(d, (size_t)f->module)
			: NULL;

		if (!l || !f)
			continue; /* a marker or the process's root frame */
		fprintf(out, "%s\n      {\"function\": ", k++ ? "," : "");
		json_str(out, l->function);
		fputs(", \"file\": ", out);
		json_str(out, l->file);
		fputs(", \"line\": ", out);
		if (l->line > 0)
			fprintf(out, "%d", l->line);
		else
			fputs("null", out);
		fprintf(out, ", \"inlined\": %s, \"module\": ", l->inlined ? "true" : "false");
		json_str(out, m ? m->path : NULL);
		fprintf(out, ", \"address\": \"0x%llx\"}", (unsigned long long)f->addr);
	}
	fputs("],\n     \"site\": {\"function\": ", out);
	json_str(out, st.name);
	fputs(", \"file\": ", out);
	json_str(out, st.file);
	fputs(", \"line\": ", out);
	if (st.line > 0)
		fprintf(out, "%d}", st.line);
	else
		fputs("null}", out);
	fputs(",\n     \"views\": ", out);
	json_views(out, p, s->bytes, s->objects, s->samples);
	fputs(",\n     \"lifetime\": ", out);
	if (s->life) {
		fputc('{', out);
		json_lifetime_fields(out, s->life);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fputc('}', out);
	return 0;
}

static int json_lifetimes(FILE *out, const struct profile *p)
{
	size_t n = 0;
	struct lifetime_site *sites = NULL;
	int any = 0;

	for (size_t i = 0; i < p->n_stacks && !any; i++)
		any = p->stacks[i].life != NULL;
	if (!any) {
		fputs("null", out);
		return 0;
	}
	sites = lifetime_sites(p, &n);
	if (!sites)
		return -1;
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s\n    {\"site\": ", i ? "," : "");
		json_str(out, sites[i].name);
		fputs(", \"file\": ", out);
		json_str(out, sites[i].file);
		fputs(", \"line\": ", out);
		if (sites[i].line > 0)
			fprintf(out, "%d", sites[i].line);
		else
			fputs("null", out);
		fprintf(out, ", \"process\": %zu, ", sites[i].part);
		json_lifetime_fields(out, &sites[i].d);
		fputc('}', out);
	}
	fputs(n ? "\n  ]" : "]", out);
	free(sites);
	return 0;
}

int json_write(FILE *out, const struct profile *p)
{
	fprintf(out, "{\n  \"schema\": \"memprof-bpf-profile\",\n  \"version\": %d,\n",
		JSON_SCHEMA_VERSION);
	fputs("  \"processes\": [", out);
	for (size_t i = 0; i < p->n_parts; i++) {
		fprintf(out, "%s{\"pid\": %d, \"name\": ", i ? ", " : "", (int)p->parts[i].pid);
		json_str(out, p->parts[i].root);
		fputc('}', out);
	}
	fputs("],\n  \"rate\": ", out);
	json_num(out, p->meta.rate);
	fputs(",\n  \"bytes_per_sample\": ", out);
	json_num(out, p->meta.rate > 0 ? 8.0 / p->meta.rate : NAN);
	fprintf(out,
		",\n  \"time_unix_ns\": %lld,\n  \"duration_s\": ", (long long)p->meta.time_ns);
	json_num(out, (double)p->meta.duration_ns * 1e-9);
	fputs(",\n  \"view\": ", out);
	json_str(out, memprof_view_names[p->meta.view]);
	fputs(",\n  \"views\": [", out);
	for (int v = 0; v < MEMPROF_N_VIEWS; v++)
		fprintf(out, "%s\"%s\"", v ? ", " : "", memprof_view_names[v]);
	fputs("],\n  \"peak\": ", out);
	if (p->meta.peak_readings) {
		fputs("{\"time_s\": ", out);
		json_num(out, (double)p->meta.peak_t_ns * 1e-9);
		fprintf(out, ", \"readings\": %llu, \"poll_interval_s\": ",
			(unsigned long long)p->meta.peak_readings);
		json_num(out, (double)p->meta.poll_ns * 1e-9);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fputs(",\n  \"totals\": ", out);
	json_views(out, p, p->total_bytes, p->total_objects, p->total_samples);
	fputs(",\n  \"stacks\": [", out);
	for (size_t i = 0; i < p->n_stacks; i++) {
		fputs(i ? ",\n" : "\n", out);
		if (json_stack(out, p, &p->stacks[i]))
			return -1;
	}
	fputs(p->n_stacks ? "\n  ],\n  \"lifetimes\": " : "],\n  \"lifetimes\": ", out);
	if (json_lifetimes(out, p))
		return -1;
	fputs("\n}\n", out);
	return ferror(out) ? -1 : 0;
}
