/* memprof-bpf diff: the pprof and text outputs of the difference (diff.h). */
#include "diff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/pprof.h"
#include "output/site.h"

/* ---- pprof: a profile of signed weights, frames by name ---- */

struct name_frame {
	char *name;
	struct dsym_line line;
	struct dsym_frame frame;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, ((const struct name_frame *)b)->name);
}

static int frame_sort(const void *a, const void *b)
{
	return strcmp(((const struct name_frame *)a)->name, ((const struct name_frame *)b)->name);
}

int diff_write_pprof(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		     const struct input *base, const struct input *nw)
{
	struct name_frame *frames = NULL;
	size_t n_frames = 0, cap = 0, k;
	struct profile p = {0};
	char title[1024];
	int rc = -1;

	/* The distinct frame names, each a frame of one line. */
	for (size_t i = 0; i < n; i++) {
		char *copy = strdup(c[i].stack);

		if (!copy)
			goto out;
		for (char *t = strtok(copy, ";"); t; t = strtok(NULL, ";")) {
			if (n_frames == cap) {
				struct name_frame *v;

				cap = cap ? 2 * cap : 256;
				v = realloc(frames, cap * sizeof(*v));
				if (!v) {
					free(copy);
					goto out;
				}
				frames = v;
			}
			frames[n_frames++].name = strdup(t);
		}
		free(copy);
	}
	if (n_frames)
		qsort(frames, n_frames, sizeof(*frames), frame_sort);
	k = 0;
	for (size_t i = 0; i < n_frames; i++) {
		if (!frames[i].name) {
			for (size_t j = 0; j < k; j++)
				free(frames[j].name);
			for (size_t j = i; j < n_frames; j++)
				free(frames[j].name);
			n_frames = 0;
			goto out;
		}
		if (k && !strcmp(frames[k - 1].name, frames[i].name)) {
			free(frames[i].name);
			continue;
		}
		frames[k++] = frames[i];
	}
	n_frames = k;
	for (size_t i = 0; i < n_frames; i++) {
		frames[i].line = (struct dsym_line){.function = frames[i].name};
		frames[i].frame = (struct dsym_frame){.module = -1, .n_lines = 1};
	}
	for (size_t i = 0; i < n_frames; i++)
		frames[i].frame.lines = &frames[i].line;
	p.stacks = calloc(n ? n : 1, sizeof(*p.stacks));
	if (!p.stacks)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct profile_stack *s = &p.stacks[p.n_stacks];
		char *copy = strdup(c[i].stack);
		size_t depth = 1;

		if (!copy)
			goto out;
		for (const char *q = copy; *q; q++)
			depth += *q == ';';
		s->frames = calloc(depth, sizeof(*s->frames));
		if (!s->frames) {
			free(copy);
			goto out;
		}
		p.n_stacks++;
		/* Root first in the folded stack, innermost first in the profile. */
		k = depth;
		for (char *t = strtok(copy, ";"); t && k; t = strtok(NULL, ";")) {
			const char *key = t;
			struct name_frame *nf =
			    bsearch(&key, frames, n_frames, sizeof(*frames), name_cmp);

			s->frames[--k] = &nf->frame;
		}
		free(copy);
		/* Empty frames ("a;;b") leave holes: close them up. */
		s->n_frames = 0;
		for (size_t q = k; q < depth; q++)
			s->frames[s->n_frames++] = s->frames[q];
		s->bytes[o->view] = llround(c[i].new_ - c[i].base);
		s->objects[o->view] = c[i].new_objects - c[i].base_objects;
		p.total_bytes[o->view] += s->bytes[o->view];
	}
	snprintf(title, sizeof(title),
		 "memprof-bpf diff: %s view, %s minus %s (signed: negative values shrank)",
		 memprof_view_names[o->view], nw->path, base->path);
	p.meta = (struct profile_meta){
	    .view = o->view, .title = title, .rate = nw->period > 0 ? 8.0 / nw->period : 0};
	rc = pprof_write(f, &p);
out:
	for (size_t i = 0; i < p.n_stacks; i++)
		free(p.stacks[i].frames);
	free(p.stacks);
	for (size_t i = 0; i < n_frames; i++)
		free(frames[i].name);
	free(frames);
	return rc;
}

/* ---- text: by site, with intervals ---- */

struct site_change {
	const char *site;
	double base, new_, lo, hi; /* change interval, bytes */
	int noise;
};

static int site_cmp(const void *a, const void *b)
{
	return strcmp(((const struct site_change *)a)->site, ((const struct site_change *)b)->site);
}

static int change_desc(const void *a, const void *b)
{
	double x = ((const struct site_change *)a)->new_ - ((const struct site_change *)a)->base;
	double y = ((const struct site_change *)b)->new_ - ((const struct site_change *)b)->base;

	return x < y ? 1 : x > y ? -1 : site_cmp(a, b);
}

static void human(char *buf, size_t len, double b, int sign)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double a = fabs(b);
	int u = 0;

	while (a >= 1024 && u < 4) {
		a /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%s%.4g %s" : "%s%.0f %s",
		 b < 0	? "-"
		 : sign ? "+"
			: "",
		 a, units[u]);
}

/*
 * The 95% interval of NEW - BASE: each side's Poisson interval of its
 * sample count, scaled by its bytes per sample, the extremes combined
 * (conservative: wider than the interval of the difference).
 */
static void change_interval(double base, double new_, double pb, double pn, double *lo, double *hi)
{
	double bl, bh, nl, nh;

	if (!(pb > 0) || !(pn > 0)) {
		*lo = *hi = new_ - base;
		return;
	}
	poisson_interval95(base / pb, &bl, &bh);
	poisson_interval95(new_ / pn, &nl, &nh);
	/* With nothing on one side, its interval's upper end stays that of 0 samples. */
	*lo = nl * pn - bh * pb;
	*hi = nh * pn - bl * pb;
}

static void print_sites(FILE *f, const struct site_change *s, size_t n, int grew,
			unsigned long rows)
{
	unsigned long shown = 0;
	char d[32], lo[32], hi[32], b[32], w[32];

	fprintf(f, "\n%s most\n", grew ? "grew" : "shrank");
	fprintf(f, "%12s  %-27s  %11s  %11s  %-6s  %s\n", "change", "[95% interval]", "base", "new",
		"noise?", "site");
	for (size_t k = 0; k < n && shown < rows; k++) {
		const struct site_change *c = grew ? &s[k] : &s[n - 1 - k];
		double delta = c->new_ - c->base;

		if (grew ? !(delta > 0) : !(delta < 0))
			break;
		human(d, sizeof(d), delta, 1);
		human(lo, sizeof(lo), c->lo, 1);
		human(hi, sizeof(hi), c->hi, 1);
		human(b, sizeof(b), c->base, 0);
		human(w, sizeof(w), c->new_, 0);
		fprintf(f, "%12s  [%11s, %11s]  %11s  %11s  %-6s  %s\n", d, lo, hi, b, w,
			c->noise ? "noise" : "real", c->site);
		shown++;
	}
	if (!shown)
		fprintf(f, "    (none)\n");
}

int diff_write_text(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		    const struct input *base, const struct input *nw, double scale)
{
	struct site_change *s = calloc(n ? n : 1, sizeof(*s));
	const char *names[PROFILE_MAX_NAMES];
	char **copies = calloc(n ? n : 1, sizeof(*copies));
	double pb = base->period * scale, pn = nw->period, lo, hi;
	size_t m = 0, noise = 0, k = 0;
	char t1[32], t2[32], t3[32], t4[32], t5[32];
	int rc = -1;

	if (!s || !copies)
		goto out;
	for (size_t i = 0; i < n; i++) {
		size_t nn = 0, len;

		copies[i] = strdup(c[i].stack);
		if (!copies[i])
			goto out;
		/* Innermost first: split the root-first stack, then reverse. */
		for (char *t = strtok(copies[i], ";"); t && nn < PROFILE_MAX_NAMES;
		     t = strtok(NULL, ";"))
			names[nn++] = t;
		for (size_t a = 0, z = nn; a + 1 < z; a++, z--) {
			const char *x = names[a];

			names[a] = names[z - 1];
			names[z - 1] = x;
		}
		s[m].site = nn ? site_of_names(names, nn) : "(empty stack)";
		len = strlen(s[m].site);
		(void)len;
		s[m].base = c[i].base;
		s[m].new_ = c[i].new_;
		m++;
	}
	if (m)
		qsort(s, m, sizeof(*s), site_cmp);
	for (size_t i = 0; i < m; i++) {
		if (k && !strcmp(s[k - 1].site, s[i].site)) {
			s[k - 1].base += s[i].base;
			s[k - 1].new_ += s[i].new_;
			continue;
		}
		s[k++] = s[i];
	}
	m = k;
	for (size_t i = 0; i < m; i++) {
		change_interval(s[i].base, s[i].new_, pb, pn, &s[i].lo, &s[i].hi);
		s[i].noise = s[i].lo <= 0 && s[i].hi >= 0;
		noise += s[i].noise && s[i].new_ != s[i].base;
	}
	if (m)
		qsort(s, m, sizeof(*s), change_desc);
	human(t1, sizeof(t1), base->total * scale, 0);
	human(t2, sizeof(t2), nw->total, 0);
	fprintf(f, "memprof-bpf diff: %s view, NEW %s minus BASE %s\n", memprof_view_names[o->view],
		nw->path, base->path);
	fprintf(f, "base %s%s, new %s", t1, scale != 1 ? " (normalized to new's total)" : "", t2);
	human(t3, sizeof(t3), nw->total - base->total * scale, 1);
	change_interval(base->total * scale, nw->total, pb, pn, &lo, &hi);
	human(t4, sizeof(t4), lo, 1);
	human(t5, sizeof(t5), hi, 1);
	fprintf(f, ", change %s [95%% interval %s, %s]\n", t3, t4, t5);
	if (pb > 0 && pn > 0) {
		human(t1, sizeof(t1), pb, 0);
		human(t2, sizeof(t2), pn, 0);
		fprintf(f,
			"One sample stands for %s in base, %s in new%s.  A change is noise when "
			"its interval holds 0:\nsampling alone could have made it.\n",
			t1, t2,
			base->is_pprof && nw->is_pprof ? ""
			: o->rate > 0		       ? " (--rate)"
				      : " (folded: the common divisor of each one's weights)");
	} else {
		fprintf(f, "The sampling period is unknown: no intervals.\n");
	}
	print_sites(f, s, m, 1, o->rows);
	print_sites(f, s, m, 0, o->rows);
	fprintf(f, "\n%zu site(s) changed within the noise of sampling\n", noise);
	rc = ferror(f) ? -1 : 0;
out:
	for (size_t i = 0; copies && i < n; i++)
		free(copies[i]);
	free(copies);
	free(s);
	return rc;
}
