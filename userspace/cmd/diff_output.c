/* memprof-bpf diff: the difference of two inputs and its outputs (diff.h). */
#include "diff.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/pprof.h"
#include "output/site.h"

/* ---- The difference ---- */

struct change *diff_join(const struct input *a, const struct input *b, double scale, size_t *n_out)
{
	struct change *c = calloc(a->n + b->n + 1, sizeof(*c));
	size_t i = 0, j = 0, n = 0;

	if (!c)
		return NULL;
	while (i < a->n || j < b->n) {
		int cmp = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->e[i].stack, b->e[j].stack);

		if (cmp <= 0) {
			c[n].stack = a->e[i].stack;
			c[n].base = a->e[i].bytes * scale;
			c[n].base_objects = a->e[i].objects * scale;
			i++;
		}
		if (cmp >= 0) {
			c[n].stack = b->e[j].stack;
			c[n].new_ = b->e[j].bytes;
			c[n].new_objects = b->e[j].objects;
			j++;
		}
		n++;
	}
	*n_out = n;
	return c;
}

/* ---- folded: flamegraph.pl's differential input ---- */

int diff_write_folded(FILE *f, const struct change *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %.0f %.0f\n", c[i].stack, c[i].base, c[i].new_);
	return ferror(f) ? -1 : 0;
}

/* ---- pprof: a profile of signed weights, frames by name ---- */

struct name_frame {
	char *name;
	size_t len;
	struct dsym_line line;
	struct dsym_frame frame;
};

/* The distinct frame names: an open-addressing table of indices into v. */
struct names {
	struct name_frame *v;
	size_t n, cap;
	uint32_t *slots; /* index + 1, 0 empty */
	size_t n_slots;	 /* a power of two, at least twice n */
};

static uint64_t name_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* The slot of name s[0..len): its entry, or the empty slot where it goes. */
static uint32_t *names_slot(const struct names *t, const char *s, size_t len)
{
	size_t mask = t->n_slots - 1, i = name_hash(s, len) & mask;

	for (;; i = (i + 1) & mask) {
		uint32_t *slot = &t->slots[i];
		const struct name_frame *nf = *slot ? &t->v[*slot - 1] : NULL;

		if (!nf || (nf->len == len && !memcmp(nf->name, s, len)))
			return slot;
	}
}

/* The index of name s[0..len), added if new; -1 out of memory. */
static long names_add(struct names *t, const char *s, size_t len)
{
	uint32_t *slot;

	if (2 * (t->n + 1) > t->n_slots) {
		size_t n_slots = t->n_slots ? 2 * t->n_slots : 1024;
		uint32_t *old = t->slots;
		size_t old_n = t->n_slots;

		t->slots = calloc(n_slots, sizeof(*t->slots));
		if (!t->slots) {
			t->slots = old;
			return -1;
		}
		t->n_slots = n_slots;
		for (size_t i = 0; i < old_n; i++)
			if (old[i])
				*names_slot(t, t->v[old[i] - 1].name, t->v[old[i] - 1].len) =
				    old[i];
		free(old);
	}
	slot = names_slot(t, s, len);
	if (*slot)
		return (long)*slot - 1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct name_frame *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n] = (struct name_frame){.name = strndup(s, len), .len = len};
	if (!t->v[t->n].name)
		return -1;
	*slot = (uint32_t)++t->n;
	return (long)t->n - 1;
}

/* The frames of a stack, innermost first, into frames[]; their count, or -1 out of memory. */
static long stack_frames(struct names *t, const char *stack, size_t *idx, size_t max)
{
	size_t n = 0;

	for (const char *f = stack; *f;) {
		const char *end = strchr(f, ';');
		size_t len = end ? (size_t)(end - f) : strlen(f);

		/* Empty frames ("a;;b") are left out. */
		if (len && n < max) {
			long i = names_add(t, f, len);

			if (i < 0)
				return -1;
			idx[n++] = (size_t)i;
		}
		f += len + (end != NULL);
	}
	for (size_t a = 0, z = n; a + 1 < z; a++, z--) {
		size_t x = idx[a];

		idx[a] = idx[z - 1];
		idx[z - 1] = x;
	}
	return (long)n;
}

int diff_write_pprof(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		     const struct input *base, const struct input *nw)
{
	struct names t = {0};
	struct profile p = {0};
	size_t *idx = malloc(DIFF_MAX_FRAMES * sizeof(*idx));
	char title[1024];
	int rc = -1;

	p.stacks = calloc(n ? n : 1, sizeof(*p.stacks));
	if (!p.stacks || !idx)
		goto out;
	/* Every distinct name once (frames point into t.v: it must not move after). */
	for (size_t i = 0; i < n; i++)
		if (stack_frames(&t, c[i].stack, idx, DIFF_MAX_FRAMES) < 0)
			goto out;
	for (size_t i = 0; i < t.n; i++) {
		t.v[i].line = (struct dsym_line){.function = t.v[i].name};
		t.v[i].frame = (struct dsym_frame){.module = -1, .n_lines = 1};
		t.v[i].frame.lines = &t.v[i].line;
	}
	for (size_t i = 0; i < n; i++) {
		struct profile_stack *s = &p.stacks[p.n_stacks];
		long depth = stack_frames(&t, c[i].stack, idx, DIFF_MAX_FRAMES);

		if (depth < 0)
			goto out;
		s->frames = calloc(depth ? (size_t)depth : 1, sizeof(*s->frames));
		if (!s->frames)
			goto out;
		p.n_stacks++;
		/* Root first in the folded stack, innermost first in the profile. */
		for (long k = 0; k < depth; k++)
			s->frames[k] = &t.v[idx[k]].frame;
		s->n_frames = (size_t)depth;
		s->bytes[o->view] = llround(c[i].new_ - c[i].base);
		/* Scaled by --normalize, BASE's objects may go beyond what pprof holds. */
		s->objects[o->view] =
		    fmax(-(double)DIFF_MAX_WEIGHT,
			 fmin((double)DIFF_MAX_WEIGHT, c[i].new_objects - c[i].base_objects));
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
	for (size_t i = 0; i < t.n; i++)
		free(t.v[i].name);
	free(t.v);
	free(t.slots);
	free(idx);
	return rc;
}

/* ---- text: by site, with intervals ---- */

struct site_change {
	const char *site; /* site[0..len): a frame inside a stack of the inputs */
	size_t len;
	double base, new_, lo, hi; /* change interval, bytes */
	int noise;
};

static int site_cmp(const void *a, const void *b)
{
	const struct site_change *x = a, *y = b;
	int d = memcmp(x->site, y->site, x->len < y->len ? x->len : y->len);

	return d ? d : x->len < y->len ? -1 : x->len > y->len;
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
		fprintf(f, "%12s  [%11s, %11s]  %11s  %11s  %-6s  %.*s\n", d, lo, hi, b, w,
			c->noise ? "noise" : "real", (int)c->len, c->site);
		shown++;
	}
	if (!shown)
		fprintf(f, "    (none)\n");
}

int diff_write_text(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		    const struct input *base, const struct input *nw, double scale)
{
	struct site_change *s = calloc(n ? n : 1, sizeof(*s));
	const char **names = malloc(DIFF_MAX_FRAMES * sizeof(*names));
	char *copy = NULL; /* one stack at a time, split */
	size_t copy_cap = 0;
	double pb = base->period * scale, pn = nw->period, lo, hi;
	size_t m = 0, noise = 0, k = 0;
	char t1[32], t2[32], t3[32], t4[32], t5[32];
	int rc = -1;

	if (!s || !names)
		goto out;
	for (size_t i = 0; i < n; i++) {
		size_t nn = 0, len = strlen(c[i].stack);
		const char *site;

		if (len + 1 > copy_cap) {
			char *v = realloc(copy, 2 * (len + 1));

			if (!v)
				goto out;
			copy = v;
			copy_cap = 2 * (len + 1);
		}
		memcpy(copy, c[i].stack, len + 1);
		/* Innermost first: split the root-first stack, then reverse. */
		for (char *t = strtok(copy, ";"); t && nn < DIFF_MAX_FRAMES; t = strtok(NULL, ";"))
			names[nn++] = t;
		for (size_t a = 0, z = nn; a + 1 < z; a++, z--) {
			const char *x = names[a];

			names[a] = names[z - 1];
			names[z - 1] = x;
		}
		/* The site is one of the names: the same bytes in the stack itself. */
		site = nn ? site_of_names(names, nn) : NULL;
		s[m].site = site ? c[i].stack + (site - copy) : "(empty stack)";
		s[m].len = strlen(site ? site : s[m].site);
		s[m].base = c[i].base;
		s[m].new_ = c[i].new_;
		m++;
	}
	if (m)
		qsort(s, m, sizeof(*s), site_cmp);
	for (size_t i = 0; i < m; i++) {
		if (k && !site_cmp(&s[k - 1], &s[i])) {
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
	free(copy);
	free(names);
	free(s);
	return rc;
}
