/* The timeline of live memory: points, series, sparklines, CSV and SVG. */
#include "timeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lifetimes.h"
#include "site.h"
#include "xml.h"

int timeline_init(struct timeline *tl, int64_t start_ns, int64_t interval_ns, size_t max_points)
{
	memset(tl, 0, sizeof(*tl));
	tl->start_ns = start_ns;
	tl->interval_ns = interval_ns > 0 ? interval_ns : 1;
	tl->next_ns = start_ns;
	tl->max_points = max_points < 4 ? 4 : max_points;
	tl->pts = calloc(tl->max_points, sizeof(*tl->pts));
	return tl->pts ? 0 : -1;
}

static void point_free(struct timeline_point *pt)
{
	free(pt->bytes);
	free(pt->samples);
	memset(pt, 0, sizeof(*pt));
}

void timeline_free(struct timeline *tl)
{
	for (size_t i = 0; i < tl->n; i++)
		point_free(&tl->pts[i]);
	free(tl->pts);
	memset(tl, 0, sizeof(*tl));
}

/* Full: keep the first point and every second one after it; halve the rate. */
static void thin(struct timeline *tl)
{
	size_t k = 1;

	for (size_t i = 1; i < tl->n; i++) {
		if (i % 2 == 0)
			tl->pts[k++] = tl->pts[i];
		else
			point_free(&tl->pts[i]);
	}
	for (size_t i = k; i < tl->n; i++)
		memset(&tl->pts[i], 0, sizeof(tl->pts[i]));
	tl->n = k;
	tl->interval_ns *= 2;
}

/* Process k's offset in a point's arrays. */
static size_t part_off(const struct timeline_point *pt, size_t k)
{
	size_t off = 0;

	for (size_t i = 0; i < k; i++)
		off += pt->n_stacks[i];
	return off;
}

int timeline_sample_parts(struct timeline *tl, int64_t now_ns, const struct timeline_source *src,
			  size_t n_src, uint64_t gcs, int force)
{
	struct timeline_point *pt;
	size_t total = 0, o = 0;

	if (!force && now_ns < tl->next_ns && gcs == tl->last_gcs)
		return 0;
	if (n_src > TIMELINE_MAX_PARTS)
		n_src = TIMELINE_MAX_PARTS;
	if (tl->n == tl->max_points)
		thin(tl);
	for (size_t k = 0; k < n_src; k++)
		total += src[k].n_stacks;
	pt = &tl->pts[tl->n];
	pt->bytes = malloc((total ? total : 1) * sizeof(*pt->bytes));
	pt->samples = malloc((total ? total : 1) * sizeof(*pt->samples));
	if (!pt->bytes || !pt->samples) {
		point_free(pt);
		return -1;
	}
	pt->t_ns = now_ns - tl->start_ns;
	pt->gcs = gcs;
	for (size_t k = 0; k < n_src; k++) {
		pt->n_stacks[k] = src[k].n_stacks;
		for (uint32_t i = 0; i < src[k].n_stacks; i++, o++) {
			const volatile struct memprof_stack_agg *a = &src[k].aggs[i];
			/* Raised and lowered concurrently: signed, and never below zero. */
			int64_t b = (int64_t)a->bytes[MEMPROF_VIEW_LIVE];
			int64_t n = (int64_t)a->samples[MEMPROF_VIEW_LIVE];

			pt->bytes[o] = b > 0 ? b : 0;
			pt->samples[o] = n > 0 ? n : 0;
		}
	}
	if (n_src > tl->n_parts)
		tl->n_parts = n_src;
	tl->n++;
	tl->last_gcs = gcs;
	while (tl->next_ns <= now_ns)
		tl->next_ns += tl->interval_ns;
	return 1;
}

int timeline_sample(struct timeline *tl, int64_t now_ns, const struct memprof_stack_agg *aggs,
		    uint32_t n_stacks, uint64_t gcs, int force)
{
	struct timeline_source src = {.aggs = aggs, .n_stacks = n_stacks};

	return timeline_sample_parts(tl, now_ns, &src, 1, gcs, force);
}

size_t timeline_series(const struct timeline *tl, size_t part, const uint32_t *ids, size_t n_ids,
		       double *out, size_t max)
{
	size_t n = tl->n < max ? tl->n : max;

	for (size_t i = 0; i < n; i++) {
		const struct timeline_point *pt = &tl->pts[i];
		size_t off = part < TIMELINE_MAX_PARTS ? part_off(pt, part) : 0;
		double sum = 0;

		for (size_t k = 0; k < n_ids && part < TIMELINE_MAX_PARTS; k++)
			if (ids[k] < pt->n_stacks[part])
				sum += (double)pt->bytes[off + ids[k]];
		out[i] = sum;
	}
	return n;
}

size_t timeline_sparkline(const double *v, size_t n, size_t width, char *buf, size_t len)
{
	/* U+2581 .. U+2588, three bytes each in UTF-8. */
	static const char *const levels[] = {"\u2581", "\u2582", "\u2583", "\u2584",
					     "\u2585", "\u2586", "\u2587", "\u2588"};
	size_t cols = n < width ? n : width, drawn = 0, o = 0;
	double max = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (v[i] > max)
			max = v[i];
	for (size_t c = 0; c < cols && o + 4 <= len; c++) {
		size_t from = c * n / cols, to = (c + 1) * n / cols;
		double m = 0;
		int level = 0;

		for (size_t i = from; i < to; i++)
			if (v[i] > m)
				m = v[i];
		if (max > 0)
			level = (int)lround(m / max * 7);
		if (level < 0)
			level = 0;
		if (level > 7)
			level = 7;
		memcpy(buf + o, levels[level], 3);
		o += 3;
		buf[o] = '\0';
		drawn++;
	}
	return drawn;
}

enum timeline_format timeline_format_of_path(const char *path)
{
	size_t n = strlen(path);

	return n >= 4 && !strcmp(path + n - 4, ".csv") ? TIMELINE_CSV : TIMELINE_SVG;
}

/* ---- Per-site series ---- */

struct series {
	const char *name;	 /* the site: its function, */
	const char *file;	 /* file (NULL: unknown) */
	int line;		 /* and line */
	size_t part;		 /* its process; SIZE_MAX: the other sites */
	double *bytes, *samples; /* per point */
	double peak;
};

struct sites {
	struct series *s; /* the top sites, then TIMELINE_OTHER_SITES */
	size_t n;
};

static int series_cmp(const void *a, const void *b)
{
	const struct series *x = a, *y = b;

	if (x->peak != y->peak)
		return x->peak < y->peak ? 1 : -1;
	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	{
		struct site sx = {x->name, x->file, x->line}, sy = {y->name, y->file, y->line};

		return site_compare(&sx, &sy);
	}
}

static void sites_free(struct sites *st)
{
	for (size_t i = 0; i < st->n; i++) {
		free(st->s[i].bytes);
		free(st->s[i].samples);
	}
	free(st->s);
	st->s = NULL;
	st->n = 0;
}

static int series_alloc(struct series *s, const char *name, size_t part, size_t n)
{
	s->name = name;
	s->part = part;
	s->bytes = calloc(n ? n : 1, sizeof(double));
	s->samples = calloc(n ? n : 1, sizeof(double));
	return s->bytes && s->samples ? 0 : -1;
}

/*
 * Group the stacks by site (per process), keep the TIMELINE_TOP_SITES
 * largest peaks above 0 B.  site_of[part] maps a stack id of that process to its
 * series.
 */
static int sites_build(struct sites *st, const struct timeline *tl, const struct profile *p)
{
	size_t n_parts = p->n_parts ? p->n_parts : 1;
	uint32_t max_id[TIMELINE_MAX_PARTS] = {0};
	size_t *site_of[TIMELINE_MAX_PARTS] = {0}, n_all = 0, n_alloc = 0, top;
	struct series *all = NULL, *other;

	memset(st, 0, sizeof(*st));
	if (n_parts > TIMELINE_MAX_PARTS)
		n_parts = TIMELINE_MAX_PARTS;
	for (size_t i = 0; i < tl->n; i++)
		for (size_t k = 0; k < n_parts; k++)
			if (tl->pts[i].n_stacks[k] > max_id[k])
				max_id[k] = tl->pts[i].n_stacks[k];
	for (size_t i = 0; i < p->n_stacks; i++) {
		size_t k = p->stacks[i].part;

		if (k < n_parts && p->stacks[i].id + 1 > max_id[k])
			max_id[k] = p->stacks[i].id + 1;
	}
	for (size_t k = 0; k < n_parts; k++) {
		site_of[k] = malloc((max_id[k] ? max_id[k] : 1) * sizeof(**site_of));
		if (!site_of[k])
			goto oom;
		/* Stacks the profile does not name (no weight at the end) are "other". */
		for (uint32_t id = 0; id < max_id[k]; id++)
			site_of[k][id] = SIZE_MAX;
	}
	/* The sites, then one more for "other" (kept last, out of the sort). */
	all = calloc(p->n_stacks + 1, sizeof(*all));
	if (!all)
		goto oom;
	for (size_t i = 0; i < p->n_stacks; i++) {
		struct site st = site_of_stack_site(&p->stacks[i]);
		size_t k = p->stacks[i].part, j;

		if (k >= n_parts)
			continue;
		for (j = 0; j < n_all; j++) {
			struct site sj = {all[j].name, all[j].file, all[j].line};

			if (all[j].part == k && !site_compare(&sj, &st))
				break;
		}
		if (j == n_all) {
			n_alloc++;
			all[n_all].file = st.file;
			all[n_all].line = st.line;
			if (series_alloc(&all[n_all++], st.name, k, tl->n))
				goto oom;
		}
		site_of[k][p->stacks[i].id] = j;
	}
	other = &all[n_all];
	n_alloc++;
	if (series_alloc(other, TIMELINE_OTHER_SITES, SIZE_MAX, tl->n))
		goto oom;
	for (size_t t = 0; t < tl->n; t++) {
		const struct timeline_point *pt = &tl->pts[t];
		size_t off = 0;

		for (size_t k = 0; k < n_parts; off += pt->n_stacks[k], k++)
			for (uint32_t id = 0; id < pt->n_stacks[k]; id++) {
				struct series *s =
				    site_of[k][id] == SIZE_MAX ? other : &all[site_of[k][id]];

				s->bytes[t] += (double)pt->bytes[off + id];
				s->samples[t] += (double)pt->samples[off + id];
			}
	}
	for (size_t j = 0; j < n_all; j++)
		for (size_t t = 0; t < tl->n; t++)
			if (all[j].bytes[t] > all[j].peak)
				all[j].peak = all[j].bytes[t];
	qsort(all, n_all, sizeof(*all), series_cmp);
	/* Sites that never held a byte at any point are left out (largest first). */
	for (top = 0; top < n_all && top < TIMELINE_TOP_SITES && all[top].peak > 0; top++)
		;
	/* Past the top sites, everything joins "other". */
	for (size_t j = top; j < n_all; j++) {
		for (size_t t = 0; t < tl->n; t++) {
			other->bytes[t] += all[j].bytes[t];
			other->samples[t] += all[j].samples[t];
		}
		free(all[j].bytes);
		free(all[j].samples);
	}
	for (size_t t = 0; t < tl->n; t++)
		if (other->bytes[t] > other->peak)
			other->peak = other->bytes[t];
	st->n = top;
	if (other->peak > 0) {
		all[st->n++] = *other;
	} else {
		free(other->bytes);
		free(other->samples);
	}
	st->s = all;
	for (size_t k = 0; k < n_parts; k++)
		free(site_of[k]);
	return 0;
oom:
	for (size_t j = 0; all && j < n_alloc; j++) {
		free(all[j].bytes);
		free(all[j].samples);
	}
	free(all);
	for (size_t k = 0; k < n_parts; k++)
		free(site_of[k]);
	return -1;
}

/* The name a series shows: its site, with its process when there are several. */
static void series_label(const struct profile *p, const struct series *s, char *buf, size_t len)
{
	struct site st = {s->name, s->file, s->line};
	char name[LIFETIME_LABEL_LEN];

	if (s->part == SIZE_MAX) {
		snprintf(buf, len, "%s", s->name);
		return;
	}
	site_format(&st, p->meta.names, name, sizeof(name));
	lifetime_site_label(p, s->part, name, buf, len);
}

static int write_csv(FILE *out, const struct timeline *tl, const struct profile *p,
		     const struct sites *st)
{
	fprintf(out, "time_s,gcs,site,live_bytes,live_samples,pid,file,line\n");
	for (size_t t = 0; t < tl->n; t++)
		for (size_t j = 0; j < st->n; j++) {
			const struct series *s = &st->s[j];
			char name[LIFETIME_LABEL_LEN];

			fprintf(out, "%.3f,%llu,", (double)tl->pts[t].t_ns / 1e9,
				(unsigned long long)tl->pts[t].gcs);
			profile_name_format(s->name, NULL, 0, p->meta.names & PROFILE_NAME_SHORT,
					    name, sizeof(name));
			csv_field(out, name);
			fprintf(out, ",%.0f,%.0f,", s->bytes[t], s->samples[t]);
			if (s->part < p->n_parts)
				fprintf(out, "%d", (int)p->parts[s->part].pid);
			fputc(',', out);
			if (s->file)
				csv_field(out, s->file);
			fputc(',', out);
			if (s->line > 0)
				fprintf(out, "%d", s->line);
			fputc('\n', out);
		}
	return ferror(out) ? -1 : 0;
}

/* ---- The SVG chart ---- */

#define SVG_W 1000
#define PLOT_X 90
#define PLOT_Y 50
#define PLOT_W 870
#define PLOT_H 340
#define LEGEND_ROW 20
/* The legend is monospace, so its widths are known: 12 px DejaVu Sans Mono. */
#define LEGEND_CHAR_W 7.3
#define LEGEND_SWATCH 18 /* the colour square and its gap */

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
				      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

static void human_bytes(char *buf, size_t len, double b)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.4g %s" : "%.0f %s", b, units[u]);
}

/* A round step (1, 2 or 5 times a power of base) giving about n ticks over span. */
static double nice_step(double span, int n, double base)
{
	double raw = span / n, p = pow(base, floor(log(raw) / log(base))), f = raw / p;

	if (f <= 1)
		return p;
	if (f <= 2)
		return 2 * p;
	if (f <= 5 && base == 10)
		return 5 * p;
	if (f <= 4 && base != 10)
		return 4 * p;
	return (base == 10 ? 10 : 8) * p;
}

/* A legend entry, "label (peak N)", cut with an ellipsis to chars characters. */
static void legend_entry(const struct profile *p, const struct series *s, char *buf, size_t len,
			 size_t chars)
{
	char label[LIFETIME_LABEL_LEN], b[32], peak[48];
	size_t k = 0, cps = 0, room;

	human_bytes(b, sizeof(b), s->peak);
	snprintf(peak, sizeof(peak), " (peak %s)", b);
	series_label(p, s, label, sizeof(label));
	room = chars > strlen(peak) + 2 ? chars - strlen(peak) : 2;
	for (const char *c = label; *c; c++)
		cps += ((unsigned char)*c & 0xc0) != 0x80;
	if (cps > room) {
		/* The first room - 1 code points, then the ellipsis. */
		for (cps = 0; label[k]; k++)
			if (((unsigned char)label[k] & 0xc0) != 0x80 && cps++ == room - 1)
				break;
		snprintf(buf, len, "%.*s\u2026%s", (int)k, label, peak);
	} else {
		snprintf(buf, len, "%s%s", label, peak);
	}
}

/* Characters of the longest legend entry, uncut. */
static size_t legend_widest(const struct profile *p, const struct sites *st)
{
	char buf[LIFETIME_LABEL_LEN + 64];
	size_t widest = 0;

	for (size_t j = 0; j < st->n; j++) {
		size_t n = 0;

		legend_entry(p, &st->s[j], buf, sizeof(buf), sizeof(buf));
		for (const char *c = buf; *c; c++)
			n += ((unsigned char)*c & 0xc0) != 0x80;
		if (n > widest)
			widest = n;
	}
	return widest;
}

static int write_svg(FILE *out, const struct timeline *tl, const struct profile *p,
		     const struct sites *st)
{
	double t_end = tl->n ? (double)tl->pts[tl->n - 1].t_ns / 1e9 : 1, y_max = 0, step;
	/* Two columns when every entry fits half the plot's width, else one. */
	size_t half = (size_t)((PLOT_W / 2 - LEGEND_SWATCH - 8) / LEGEND_CHAR_W);
	int cols = legend_widest(p, st) <= half ? 2 : 1;
	size_t chars = (size_t)((PLOT_W / cols - LEGEND_SWATCH - 8) / LEGEND_CHAR_W);
	int height = PLOT_Y + PLOT_H + 50 +
		     (int)((st->n + (size_t)cols - 1) / (size_t)cols) * LEGEND_ROW + 10;
	double *cum = calloc(tl->n ? tl->n : 1, sizeof(double));
	char b[32];

	if (!cum)
		return -1;
	if (t_end <= 0)
		t_end = 1;
	for (size_t t = 0; t < tl->n; t++) {
		double sum = 0;

		for (size_t j = 0; j < st->n; j++)
			sum += st->s[j].bytes[t];
		if (sum > y_max)
			y_max = sum;
	}
	if (y_max <= 0)
		y_max = 1024;
	step = nice_step(y_max, 5, 2); /* powers of two: KiB and MiB land on ticks */
	y_max = ceil(y_max / step) * step;
#define X(t) (PLOT_X + (t) / t_end * PLOT_W)
#define Y(v) (PLOT_Y + PLOT_H - (v) / y_max * PLOT_H)
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		SVG_W, height, SVG_W, height);
	fprintf(out, "<style>text{font-family:'DejaVu Sans',sans-serif;font-size:12px;fill:#222}"
		     "#title{font-size:16px}.grid{stroke:#ddd;stroke-width:1}"
		     ".axis{stroke:#444;stroke-width:1}.gc{stroke:#c00;stroke-width:1}"
		     "path.a:hover{opacity:0.8}"
		     "text.lg{font-family:'DejaVu Sans Mono',monospace}</style>\n");
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fbf8f1\"/>\n", SVG_W,
		height);
	if (p->n_parts > 1)
		fprintf(out,
			"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">memprof-bpf: "
			"live memory of %zu processes by site (estimated bytes of blocks sampled "
			"since the attach)</text>\n",
			SVG_W / 2, p->n_parts);
	else
		fprintf(out,
			"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">memprof-bpf: "
			"live memory of process %d by site (estimated bytes of blocks sampled "
			"since the attach)</text>\n",
			SVG_W / 2, (int)p->meta.pid);
	/* Grid and y axis. */
	for (double v = 0; v <= y_max * 1.0001; v += step) {
		human_bytes(b, sizeof(b), v);
		fprintf(out,
			"<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			PLOT_X, Y(v), PLOT_X + PLOT_W, Y(v), PLOT_X - 6, Y(v) + 4, b);
	}
	/* x axis. */
	step = nice_step(t_end, 8, 10);
	for (double t = 0; t <= t_end * 1.0001; t += step)
		fprintf(out,
			"<line class=\"axis\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
			X(t), PLOT_Y + PLOT_H, X(t), PLOT_Y + PLOT_H + 5, X(t),
			PLOT_Y + PLOT_H + 18, t);
	{
		int gcs = tl->n > 1 && tl->pts[tl->n - 1].gcs != tl->pts[0].gcs;

		fprintf(out,
			"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time since attach (s)%s"
			"</text>\n",
			PLOT_X + PLOT_W / 2, PLOT_Y + PLOT_H + 36,
			gcs ? "; red ticks: the host's gc probe fired" : "");
	}
	/* The stacked areas, the largest site at the bottom. */
	for (size_t j = 0; j < st->n && tl->n; j++) {
		const struct series *s = &st->s[j];
		char last[32], label[LIFETIME_LABEL_LEN];

		human_bytes(b, sizeof(b), s->peak);
		human_bytes(last, sizeof(last), s->bytes[tl->n - 1]);
		fprintf(out,
			"<path class=\"a\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\" d=\"",
			palette[j % (sizeof(palette) / sizeof(palette[0]))]);
		for (size_t t = 0; t < tl->n; t++)
			fprintf(out, "%s%.1f,%.1f ", t ? "L" : "M",
				X((double)tl->pts[t].t_ns / 1e9), Y(cum[t] + s->bytes[t]));
		for (size_t t = tl->n; t-- > 0;)
			fprintf(out, "L%.1f,%.1f ", X((double)tl->pts[t].t_ns / 1e9), Y(cum[t]));
		fprintf(out, "Z\"><title>");
		series_label(p, s, label, sizeof(label));
		xml_text(out, label);
		fprintf(out, "\npeak %s, at the end %s</title></path>\n", b, last);
		for (size_t t = 0; t < tl->n; t++)
			cum[t] += s->bytes[t];
	}
	/* gc probes: a tick under the axis at each point after a collection. */
	for (size_t t = 1; t < tl->n; t++)
		if (tl->pts[t].gcs != tl->pts[t - 1].gcs)
			fprintf(
			    out,
			    "<line class=\"gc\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
			    X((double)tl->pts[t].t_ns / 1e9), PLOT_Y + PLOT_H - 6,
			    X((double)tl->pts[t].t_ns / 1e9), PLOT_Y + PLOT_H);
	fprintf(out,
		"<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
		"<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n",
		PLOT_X, PLOT_Y, PLOT_X, PLOT_Y + PLOT_H, PLOT_X, PLOT_Y + PLOT_H, PLOT_X + PLOT_W,
		PLOT_Y + PLOT_H);
	if (!tl->n)
		fprintf(out, "<text x=\"%d\" y=\"%d\">no point was taken</text>\n", PLOT_X + 10,
			PLOT_Y + 20);
	/* Legend: in stacking order, each entry cut to fit its column. */
	for (size_t j = 0; j < st->n; j++) {
		int x = PLOT_X + (int)(j % (size_t)cols) * (PLOT_W / cols);
		int y = PLOT_Y + PLOT_H + 56 + (int)(j / (size_t)cols) * LEGEND_ROW;
		char entry[LIFETIME_LABEL_LEN + 64];

		legend_entry(p, &st->s[j], entry, sizeof(entry), chars);
		fprintf(out,
			"<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text class=\"lg\" x=\"%d\" y=\"%d\">",
			x, y - 10, palette[j % (sizeof(palette) / sizeof(palette[0]))],
			x + LEGEND_SWATCH, y);
		xml_text(out, entry);
		fputs("</text>\n", out);
	}
	if (!st->n && tl->n)
		fprintf(out,
			"<text x=\"%d\" y=\"%d\">no site held live memory at any point</text>\n",
			PLOT_X + 10, PLOT_Y + 20);
	fprintf(out, "</svg>\n");
#undef X
#undef Y
	free(cum);
	return ferror(out) ? -1 : 0;
}

int timeline_write(FILE *out, const struct timeline *tl, const struct profile *p,
		   enum timeline_format fmt)
{
	struct sites st;
	int rc;

	if (sites_build(&st, tl, p))
		return -1;
	rc = fmt == TIMELINE_CSV ? write_csv(out, tl, p, &st) : write_svg(out, tl, p, &st);
	sites_free(&st);
	return rc;
}
