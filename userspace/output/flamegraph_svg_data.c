/*
 * The flame graph's model and its data script (flamegraph_svg_data.h).
 * Each stack is read once into string numbers (its frames as folded names
 * them, each frame's " (file:line)", its allocation site); each view's tree
 * is then built from those, the stacks taken in order of their sites, so a
 * frame counts the bytes of each site through it in one run and keeps the
 * largest.
 */
#include "flamegraph_svg_data.h"

#include <stdlib.h>
#include <string.h>

#include "lifetimes.h"
#include "site.h"
#include "heap_idmap.h"

/* ---- Strings ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ? h : 1;
}

struct str_key {
	const struct svg_strings *t;
	const char *s;
};

static int str_same(uint64_t value, const void *ctx)
{
	const struct str_key *k = ctx;

	return !strcmp(k->t->strs[value], k->s);
}

/* The number of s, added (copied) if new; -1 out of memory. */
static int32_t intern(struct svg_strings *t, const char *s)
{
	uint64_t h = hash_str(s);
	struct str_key k = {t, s};
	size_t slot = idmap_find_same(&t->map, h, str_same, &k);
	char *copy;

	if (slot != IDMAP_ABSENT)
		return (int32_t)t->map.slots[slot].value;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? 2 * t->cap : 256;
		char **v = realloc(t->strs, ncap * sizeof(*v));
		int32_t *o;

		if (!v)
			return -1;
		t->strs = v;
		o = realloc(t->out, ncap * sizeof(*o));
		if (!o)
			return -1;
		t->out = o;
		t->cap = ncap;
	}
	copy = strdup(s);
	if (!copy || t->n >= INT32_MAX || idmap_insert(&t->map, h, t->n)) {
		free(copy);
		return -1;
	}
	t->out[t->n] = -1;
	t->strs[t->n] = copy;
	return (int32_t)t->n++;
}

const char *svg_str(const struct svg_data *d, int32_t id)
{
	return id >= 0 && (size_t)id < d->str.n ? d->str.strs[id] : "";
}

/* ---- Sites ---- */

/* The number of the site (name, tip), added if new; -1 out of memory. */
static int32_t site_intern(struct svg_data *d, int32_t name, int32_t tip)
{
	uint64_t key = (uint64_t)(name + 1) << 32 | (uint32_t)(tip + 1), v;

	if (idmap_get(&d->site_map, key, &v))
		return (int32_t)v;
	if (d->n_sites == d->cap_sites) {
		size_t ncap = d->cap_sites ? 2 * d->cap_sites : 64;
		struct svg_site *s = realloc(d->sites, ncap * sizeof(*s));

		if (!s)
			return -1;
		d->sites = s;
		d->cap_sites = ncap;
	}
	if (d->n_sites >= INT32_MAX || idmap_insert(&d->site_map, key, d->n_sites))
		return -1;
	d->sites[d->n_sites] = (struct svg_site){name, tip, -1};
	return (int32_t)d->n_sites++;
}

/* ---- Stacks as string numbers ---- */

/*
 * Scratch buffer k (0 or 1) with room for name with " (file:line)" (sized
 * as profile_name_dup() sizes it: names are never cut); its length in *len.
 */
static char *scratch(struct svg_data *d, int k, const char *name, const char *file, size_t *len)
{
	size_t need = strlen(name) + 32 + (file ? strlen(file) : 0);

	if (need > d->scratch_len[k]) {
		char *b = realloc(d->scratch[k], need);

		if (!b)
			return NULL;
		d->scratch[k] = b;
		d->scratch_len[k] = need;
	}
	*len = d->scratch_len[k];
	return d->scratch[k];
}

/*
 * name, file and line as folded names a frame (profile_name_format() with
 * the profile's flags) and the text lng adds to it (a number, or -1 when it
 * adds nothing): lng is what the tooltips show.  0, or -1 out of memory.
 */
static int name_and_tip(struct svg_data *d, const char *name, const char *file, int line,
			const char *lng, int32_t *key, int32_t *tip)
{
	size_t len, klen;
	char *buf = scratch(d, 1, name, file, &len);

	*tip = -1;
	if (!buf)
		return -1;
	profile_name_format(name, file, line, d->p->meta.names, buf, len);
	klen = strlen(buf);
	if ((*key = intern(&d->str, buf)) < 0)
		return -1;
	if (strlen(lng) > klen && !strncmp(lng, buf, klen) &&
	    (*tip = intern(&d->str, lng + klen)) < 0)
		return -1;
	return 0;
}

/* Stack s root first: its frames as folded prints them, their lines, its site. */
static int path_build(struct svg_data *d, const struct profile_stack *s, struct svg_path *out)
{
	struct profile_name e[PROFILE_MAX_NAMES];
	size_t n = profile_stack_entries(s, e, PROFILE_MAX_NAMES), len;
	unsigned flags = d->p->meta.names;
	struct site st = site_of_stack_site(s);
	int32_t name, tip;
	char *buf;

	out->n = n;
	out->name = calloc(n ? 2 * n : 1, sizeof(*out->name));
	out->tip = out->name + n;
	if (!out->name || !(buf = scratch(d, 0, st.name, st.file, &len)))
		return -1;
	/* The site as the text report prints it, its name shared with the frames'. */
	site_format(&st, flags, buf, len);
	if (name_and_tip(d, st.name, st.file, st.line, buf, &name, &tip) ||
	    (out->site = site_intern(d, name, tip)) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct profile_name *f = &e[n - 1 - i];
		const char *file = f->line ? f->line->file : NULL;
		int line = f->line ? f->line->line : 0;

		/* With file:line as the tooltips show it (and --lines, folded). */
		if (!(buf = scratch(d, 0, f->name, file, &len)))
			return -1;
		profile_name_format(f->name, file, line, flags | PROFILE_NAME_LINES, buf, len);
		if (name_and_tip(d, f->name, file, line, buf, &out->name[i], &out->tip[i]))
			return -1;
	}
	return 0;
}

static int by_site_cmp(const void *a, const void *b, void *ctx)
{
	const struct svg_data *d = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int32_t sx = d->paths[x].site, sy = d->paths[y].site;

	if (sx != sy)
		return sx < sy ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* ---- Trees ---- */

static void node_free(struct svg_node *n)
{
	while (n) {
		struct svg_node *next = n->next;

		node_free(n->child);
		free(n->life);
		free(n->lines);
		free(n);
		n = next;
	}
}

static struct svg_node *node_new(int32_t name)
{
	struct svg_node *n = calloc(1, sizeof(*n));

	if (n) {
		n->name = name;
		n->site_cur = n->site_best = -1;
	}
	return n;
}

/* The child of parent named name, created in name order if missing. */
static struct svg_node *child_of(const struct svg_data *d, struct svg_node *parent, int32_t name)
{
	struct svg_node **link = &parent->child, *n;
	int c = 1;

	while (*link && (c = strcmp(svg_str(d, (*link)->name), svg_str(d, name))) < 0)
		link = &(*link)->next;
	if (*link && c == 0)
		return *link;
	n = node_new(name);
	if (!n)
		return NULL;
	n->next = *link;
	*link = n;
	return n;
}

static int node_add_line(struct svg_node *n, int32_t tip, int64_t bytes)
{
	if (tip < 0)
		return 0;
	for (size_t i = 0; i < n->n_lines; i++)
		if (n->lines[i].id == tip) {
			n->lines[i].bytes += bytes;
			return 0;
		}
	if (n->n_lines == SVG_MAX_LINES) {
		n->more_lines = 1;
		return 0;
	}
	if (!(n->n_lines & (n->n_lines - 1))) { /* 0 or a power of two: grow */
		struct svg_tally *t =
		    realloc(n->lines, (n->n_lines ? 2 * n->n_lines : 1) * sizeof(*t));

		if (!t)
			return -1;
		n->lines = t;
	}
	n->lines[n->n_lines++] = (struct svg_tally){tip, bytes};
	return 0;
}

/* A stack of bytes (its site being site) through n. */
static int node_add(struct svg_node *n, const struct profile_stack *s, enum memprof_view v,
		    int32_t site, int32_t tip)
{
	n->bytes += s->bytes[v];
	n->samples += s->samples[v];
	if (n->site_cur != site) {
		if (n->site_cur_bytes > n->site_best_bytes) {
			n->site_best = n->site_cur;
			n->site_best_bytes = n->site_cur_bytes;
		}
		n->site_cur = site;
		n->site_cur_bytes = 0;
		n->n_sites++;
	}
	n->site_cur_bytes += s->bytes[v];
	if (s->life && !n->life && !(n->life = calloc(1, sizeof(*n->life))))
		return -1;
	if (s->life)
		lifetime_dist_merge(n->life, s->life);
	return node_add_line(n, tip, s->bytes[v]);
}

/* The last run of sites counted; the largest line first. */
static void node_finish(struct svg_node *n)
{
	for (; n; n = n->next) {
		if (n->site_cur_bytes > n->site_best_bytes) {
			n->site_best = n->site_cur;
			n->site_best_bytes = n->site_cur_bytes;
		}
		for (size_t i = 1; i < n->n_lines; i++)
			if (n->lines[i].bytes > n->lines[0].bytes) {
				struct svg_tally t = n->lines[0];

				n->lines[0] = n->lines[i];
				n->lines[i] = t;
			}
		node_finish(n->child);
	}
}

static struct svg_node *tree_build(struct svg_data *d, enum memprof_view v, int32_t all)
{
	struct svg_node *root = node_new(all);

	for (size_t k = 0; root && k < d->p->n_stacks; k++) {
		size_t i = d->by_site[k];
		const struct profile_stack *s = &d->p->stacks[i];
		const struct svg_path *path = &d->paths[i];
		struct svg_node *at = root;

		if (s->bytes[v] <= 0)
			continue;
		if (node_add(root, s, v, path->site, -1))
			goto fail;
		for (size_t j = 0; j < path->n; j++)
			if (!(at = child_of(d, at, path->name[j])) ||
			    node_add(at, s, v, path->site, path->tip[j]))
				goto fail;
	}
	if (root)
		node_finish(root);
	return root;
fail:
	node_free(root);
	return NULL;
}

int svg_data_build(struct svg_data *d, const struct profile *p)
{
	int32_t all;

	memset(d, 0, sizeof(*d));
	d->p = p;
	idmap_init(&d->str.map, &heap_idmap_allocator, 256);
	idmap_init(&d->site_map, &heap_idmap_allocator, 64);
	d->paths = calloc(p->n_stacks ? p->n_stacks : 1, sizeof(*d->paths));
	d->by_site = calloc(p->n_stacks ? p->n_stacks : 1, sizeof(*d->by_site));
	if (!d->paths || !d->by_site || (all = intern(&d->str, "all")) < 0)
		return -1;
	for (size_t i = 0; i < p->n_stacks; i++) {
		d->by_site[i] = i;
		if (path_build(d, &p->stacks[i], &d->paths[i]))
			return -1;
	}
	qsort_r(d->by_site, p->n_stacks, sizeof(*d->by_site), by_site_cmp, d);
	for (int v = 0; v < SVG_N_VIEWS; v++)
		if (!(d->views[v] = tree_build(d, (enum memprof_view)v, all)))
			return -1;
	return 0;
}

void svg_data_free(struct svg_data *d)
{
	for (int v = 0; v < SVG_N_VIEWS; v++)
		node_free(d->views[v]);
	for (size_t i = 0; d->paths && i < d->p->n_stacks; i++)
		free(d->paths[i].name);
	free(d->paths);
	free(d->by_site);
	for (size_t i = 0; i < d->str.n; i++)
		free(d->str.strs[i]);
	free(d->str.strs);
	free(d->str.out);
	idmap_clear(&d->str.map);
	free(d->sites);
	idmap_clear(&d->site_map);
	free(d->scratch[0]);
	free(d->scratch[1]);
	memset(d, 0, sizeof(*d));
}

/* The lifetime summary of a node as a string number, or -1 (no lifetimes, out of memory). */
static int32_t node_life(struct svg_data *d, const struct svg_node *n)
{
	char life[256];

	if (!n->life)
		return -1;
	lifetime_summary(n->life, life, sizeof(life));
	return intern(&d->str, life);
}

int svg_node_kept(const struct svg_node *n, double total)
{
	return total > 0 && n->bytes / total >= SVG_MIN_SHARE;
}

/* ---- The data script ---- */

/* One code point from s (UTF-8), advancing *s; U+FFFD for a malformed one. */
static uint32_t utf8_next(const unsigned char **s)
{
	const unsigned char *p = *s;
	uint32_t c = *p++, min;
	int more;

	if (c < 0x80)
		more = 0, min = 0;
	else if ((c & 0xe0) == 0xc0)
		more = 1, c &= 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		more = 2, c &= 0x0f, min = 0x800;
	else if ((c & 0xf8) == 0xf0)
		more = 3, c &= 0x07, min = 0x10000;
	else {
		*s = p;
		return 0xfffd;
	}
	for (int i = 0; i < more; i++, p++) {
		if ((*p & 0xc0) != 0x80) {
			*s = p;
			return 0xfffd;
		}
		c = c << 6 | (*p & 0x3f);
	}
	*s = p;
	return c < min || c > 0x10ffff || (c >= 0xd800 && c < 0xe000) ? 0xfffd : c;
}

/*
 * s as a JavaScript string literal in ASCII: whatever the name holds, the
 * CDATA section around the script stays valid XML and never ends early
 * (its "]]>" is written "]]\\u003e").
 */
static void js_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int brackets = 0; /* ']' just written */

	fputc('"', out);
	while (*p) {
		uint32_t c = utf8_next(&p);

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", (char)c);
		else if (c >= 0x20 && c < 0x7f && !(c == '>' && brackets >= 2))
			fputc((int)c, out);
		else if (c < 0x10000)
			fprintf(out, "\\u%04x", (unsigned)c);
		else
			fprintf(out, "\\u%04x\\u%04x", 0xd800 + ((c - 0x10000) >> 10),
				0xdc00 + ((c - 0x10000) & 0x3ff));
		brackets = c == ']' ? brackets + 1 : 0;
	}
	fputc('"', out);
}

/* The number of string id in the data script's table (-1 stays -1). */
static int32_t str_use(struct svg_data *d, int32_t id)
{
	if (id < 0)
		return -1;
	if (d->str.out[id] < 0)
		d->str.out[id] = d->str.n_out++;
	return d->str.out[id];
}

/* The same for a site. */
static int32_t site_use(struct svg_data *d, int32_t id)
{
	if (id < 0)
		return -1;
	if (d->sites[id].out < 0)
		d->sites[id].out = d->n_sites_out++;
	return d->sites[id].out;
}

/*
 * A view's frames in preorder, ten numbers each: depth, name, bytes,
 * samples, the largest line (" (file:line)"), how many lines, the largest
 * site (in D.t), its bytes, how many sites, the lifetime summary (-1: none).
 */
static int frames_write(FILE *out, struct svg_data *d, const struct svg_node *n, int depth,
			double total, int *first)
{
	int32_t life = node_life(d, n);

	if (n->life && life < 0)
		return -1;
	fprintf(out, "%s%d,%d,%lld,%lld,%d,%u,%d,%lld,%u,%d", *first ? "" : ",\n", depth,
		str_use(d, n->name), (long long)n->bytes, (long long)n->samples,
		n->n_lines ? str_use(d, n->lines[0].id) : -1, n->n_lines + n->more_lines,
		site_use(d, n->site_best), (long long)n->site_best_bytes, n->n_sites,
		str_use(d, life));
	*first = 0;
	for (const struct svg_node *c = n->child; c; c = c->next)
		if (svg_node_kept(c, total) && frames_write(out, d, c, depth + 1, total, first))
			return -1;
	return 0;
}

int svg_data_write(FILE *out, struct svg_data *d, enum memprof_view first)
{
	int32_t *order;

	fprintf(out, "var D={pid:%d,rate:%.17g,rt:\"%g\",first:%d,views:[", (int)d->p->meta.pid,
		d->p->meta.rate, d->p->meta.rate, (int)first);
	for (int v = 0; v < SVG_N_VIEWS; v++) {
		fputs(v ? "," : "", out);
		js_string(out, memprof_view_names[v]);
	}
	fputs("],\nv:[", out);
	for (int v = 0; v < SVG_N_VIEWS; v++) {
		const struct svg_node *root = d->views[v];
		int first_frame = 1;

		fputs(v ? "],\n[" : "[", out);
		if (root->bytes > 0 &&
		    frames_write(out, d, root, 0, (double)root->bytes, &first_frame))
			return -1;
	}
	/* The sites used, two strings each (name, what its line adds). */
	fputs("]],\nt:[", out);
	order = malloc((d->n_sites_out ? (size_t)d->n_sites_out : 1) * sizeof(*order));
	if (!order)
		return -1;
	for (size_t i = 0; i < d->n_sites; i++)
		if (d->sites[i].out >= 0)
			order[d->sites[i].out] = (int32_t)i;
	for (int32_t i = 0; i < d->n_sites_out; i++) {
		const struct svg_site *st = &d->sites[order[i]];

		fprintf(out, "%s%d,%d", i ? "," : "", str_use(d, st->name), str_use(d, st->tip));
	}
	free(order);
	fputs("],\ns:[", out);
	/* The strings used, in the order their numbers were given. */
	order = malloc((d->str.n_out ? (size_t)d->str.n_out : 1) * sizeof(*order));
	if (!order)
		return -1;
	for (size_t i = 0; i < d->str.n; i++)
		if (d->str.out[i] >= 0)
			order[d->str.out[i]] = (int32_t)i;
	for (int32_t i = 0; i < d->str.n_out; i++) {
		fputs(i ? (i % 8 ? "," : ",\n") : "", out);
		js_string(out, d->str.strs[order[i]]);
	}
	free(order);
	fputs("]};\n", out);
	return ferror(out) ? -1 : 0;
}
