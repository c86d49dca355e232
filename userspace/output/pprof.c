/*
 * The pprof writer: every view of the profile in one gzipped profile.proto
 * (profile.proto, encoded with protobuf-c), sample types named as
 * Go's heap profiles name them (inuse is our live view).
 */
#include "pprof.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "heap_idmap.h"
#include "lifetimes.h"
#include "profile.pb-c.h"
#include "site.h"

/* Sample types, two per view (objects, bytes), in the order of the views. */
static const char *const type_names[MEMPROF_N_VIEWS][2] = {
    {"alloc_objects", "alloc_space"},	    {"inuse_objects", "inuse_space"},
    {"promoted_objects", "promoted_space"}, {"short_objects", "short_space"},
    {"peak_objects", "peak_space"},
};

/* ---- Tables: each string and each function once, their numbers ---- */

/*
 * Distinct strings, numbered from 0 in the order they came: an idmap from
 * a string's hash (FNV-1a, made nonzero) to its number, the number naming
 * the string that idmap_find_same compares (two strings may share a hash).
 */
struct strset {
	struct idmap map;
	char **strs; /* owned */
	size_t n, cap;
};

/* What strset_same compares: the set and the string looked for. */
struct strset_key {
	const struct strset *t;
	const char *s;
};

static uint64_t hash_bytes(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ? h : 1;
}

static int strset_same(uint64_t value, const void *ctx)
{
	const struct strset_key *k = ctx;

	return !strcmp(k->t->strs[value], k->s);
}

/* 1 and the number of s in *i when the set has it, else 0. */
static int strset_find(const struct strset *t, const char *s, uint64_t h, size_t *i)
{
	struct strset_key k = {t, s};
	size_t slot = idmap_find_same(&t->map, h, strset_same, &k);

	if (slot == IDMAP_ABSENT)
		return 0;
	*i = (size_t)t->map.slots[slot].value;
	return 1;
}

/* Add a copy of s (not in the set), numbered t->n - 1; the copy, or NULL. */
static char *strset_add(struct strset *t, const char *s, uint64_t h)
{
	char *copy;

	if (t->n == t->cap) {
		size_t ncap = t->cap ? 2 * t->cap : 256;
		char **v = realloc(t->strs, ncap * sizeof(*v));

		if (!v)
			return NULL;
		t->strs = v;
		t->cap = ncap;
	}
	copy = strdup(s);
	if (!copy)
		return NULL;
	if (idmap_insert(&t->map, h, t->n)) {
		free(copy);
		return NULL;
	}
	t->strs[t->n++] = copy;
	return copy;
}

static void strset_free(struct strset *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	idmap_clear(&t->map);
}

/* ---- The profile message being built ---- */

struct builder {
	Pprof__Profile prof;
	struct strset strings;	 /* string k is prof.string_table[k + 1] */
	struct strset functions; /* "function\1system name\1file" k is function id k + 1 */
	struct idmap locations;	 /* a frame (its address) -> its location id */
	size_t cap_strings, cap_functions, cap_locations;
	int oom;
};

static int64_t str_index(struct builder *b, const char *s)
{
	char *copy;
	uint64_t h;
	size_t k;

	if (!s || !*s)
		return 0;
	h = hash_bytes(s);
	if (strset_find(&b->strings, s, h, &k))
		return (int64_t)k + 1;
	if (b->prof.n_string_table == b->cap_strings) {
		size_t ncap = b->cap_strings * 2;
		char **v = realloc(b->prof.string_table, ncap * sizeof(*v));

		if (!v) {
			b->oom = 1;
			return 0;
		}
		b->prof.string_table = v;
		b->cap_strings = ncap;
	}
	copy = strset_add(&b->strings, s, h);
	if (!copy) {
		b->oom = 1;
		return 0;
	}
	b->prof.string_table[b->prof.n_string_table++] = copy;
	return (int64_t)b->prof.n_string_table - 1;
}

/* Grow a message pointer array by one; the new slot, or NULL. */
static void *push(void ***arr, size_t *n, size_t *cap, size_t size)
{
	void *m;

	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		void **v = realloc(*arr, ncap * sizeof(*v));

		if (!v)
			return NULL;
		*arr = v;
		*cap = ncap;
	}
	m = calloc(1, size);
	if (m)
		(*arr)[(*n)++] = m;
	return m;
}

static uint64_t function_id(struct builder *b, const struct dsym_line *l)
{
	char key[2048];
	Pprof__Function *f;
	uint64_t h;
	size_t k;

	snprintf(key, sizeof(key), "%s\x01%s\x01%s", l->function,
		 l->system_name ? l->system_name : "", l->file ? l->file : "");
	h = hash_bytes(key);
	if (strset_find(&b->functions, key, h, &k))
		return k + 1;
	f = push((void ***)&b->prof.function, &b->prof.n_function, &b->cap_functions, sizeof(*f));
	if (!f || !strset_add(&b->functions, key, h)) {
		b->oom = 1;
		return 0;
	}
	pprof__function__init(f);
	f->id = b->prof.n_function;
	f->name = str_index(b, l->function);
	f->system_name = str_index(b, l->system_name ? l->system_name : l->function);
	f->filename = str_index(b, l->file);
	f->start_line = l->start_line;
	return f->id;
}

static uint64_t location_id(struct builder *b, const struct dsym_frame *fr, size_t map_base)
{
	Pprof__Location *loc;
	uint64_t key = (uint64_t)(uintptr_t)fr, id;

	if (idmap_get(&b->locations, key, &id))
		return id;
	loc =
	    push((void ***)&b->prof.location, &b->prof.n_location, &b->cap_locations, sizeof(*loc));
	if (!loc) {
		b->oom = 1;
		return 0;
	}
	pprof__location__init(loc);
	loc->id = b->prof.n_location;
	loc->mapping_id = fr->module >= 0 ? map_base + (uint64_t)fr->module + 1 : 0;
	loc->address = fr->addr;
	loc->line = calloc(fr->n_lines, sizeof(*loc->line));
	if (!loc->line) {
		b->oom = 1;
		return 0;
	}
	for (size_t i = 0; i < fr->n_lines; i++) {
		Pprof__Line *l = calloc(1, sizeof(*l));

		if (!l) {
			b->oom = 1;
			break;
		}
		pprof__line__init(l);
		l->function_id = function_id(b, &fr->lines[i]);
		l->line = fr->lines[i].line;
		loc->line[loc->n_line++] = l;
	}
	if (idmap_insert(&b->locations, key, loc->id))
		b->oom = 1;
	return loc->id;
}

/* Labels of a sample at most: pid, domain, then the four lifetime labels. */
#define SAMPLE_MAX_LABELS 6

/* A new numeric label on smp (its array sized SAMPLE_MAX_LABELS), or NULL. */
static Pprof__Label *new_label(Pprof__Sample *smp)
{
	Pprof__Label *l;

	if (!smp->label && !(smp->label = calloc(SAMPLE_MAX_LABELS, sizeof(*smp->label))))
		return NULL;
	if (smp->n_label == SAMPLE_MAX_LABELS || !(l = calloc(1, sizeof(*l))))
		return NULL;
	pprof__label__init(l);
	smp->label[smp->n_label++] = l;
	return l;
}

/* A numeric label key = num on a sample: "pid" on a profile of several
 * processes, "domain" for an OCaml 5 domain's stacks. */
static int add_num_label(struct builder *b, Pprof__Sample *smp, const char *key, int64_t num)
{
	Pprof__Label *l = new_label(smp);

	if (!l)
		return -1;
	l->key = str_index(b, key);
	l->num = num;
	return 0;
}

static void value_type(struct builder *b, Pprof__ValueType *vt, const char *type, const char *unit)
{
	pprof__value_type__init(vt);
	vt->type = str_index(b, type);
	vt->unit = str_index(b, unit);
}

static void builder_free(struct builder *b)
{
	Pprof__Profile *p = &b->prof;

	for (size_t i = 0; i < p->n_sample_type; i++)
		free(p->sample_type[i]);
	free(p->sample_type);
	for (size_t i = 0; i < p->n_sample; i++) {
		free(p->sample[i]->location_id);
		for (size_t j = 0; j < p->sample[i]->n_label; j++)
			free(p->sample[i]->label[j]);
		free(p->sample[i]->label);
		free(p->sample[i]->value);
		free(p->sample[i]);
	}
	free(p->sample);
	for (size_t i = 0; i < p->n_mapping; i++)
		free(p->mapping[i]);
	free(p->mapping);
	for (size_t i = 0; i < p->n_location; i++) {
		for (size_t j = 0; j < p->location[i]->n_line; j++)
			free(p->location[i]->line[j]);
		free(p->location[i]->line);
		free(p->location[i]);
	}
	free(p->location);
	for (size_t i = 0; i < p->n_function; i++)
		free(p->function[i]);
	free(p->function);
	free(p->string_table); /* the strings are the set's */
	free(p->comment);
	free(p->period_type);
	strset_free(&b->strings);
	strset_free(&b->functions);
	idmap_clear(&b->locations);
}

static void add_comment(struct builder *b, size_t *cap, const char *text)
{
	int64_t *v;

	if (b->prof.n_comment == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		v = realloc(b->prof.comment, *cap * sizeof(*v));
		if (!v) {
			b->oom = 1;
			return;
		}
		b->prof.comment = v;
	}
	b->prof.comment[b->prof.n_comment++] = str_index(b, text);
}

/*
 * A stack's lifetime percentiles as numeric labels, in microseconds:
 * lifetime_p50, lifetime_p90, lifetime_p99 (a "_min" suffix when only a
 * lower bound, blocks being still alive), and lifetime_still_live (samples).
 */
static int lifetime_labels(struct builder *b, Pprof__Sample *smp, const struct lifetime_dist *d)
{
	static const double qs[] = {0.5, 0.9, 0.99};
	static const char *const names[][2] = {{"lifetime_p50", "lifetime_p50_min"},
					       {"lifetime_p90", "lifetime_p90_min"},
					       {"lifetime_p99", "lifetime_p99_min"}};
	uint64_t live = lifetime_dist_live(d);

	for (int i = 0; i < 4; i++) {
		Pprof__Label *l = new_label(smp);
		double ms = 0;
		int lower = 0;

		if (!l)
			return -1;
		if (i < 3) {
			lower = lifetime_quantile(d, qs[i], &ms);
			if (lower < 0)
				lower = 0;
			l->key = str_index(b, names[i][lower]);
			l->num = llround(ms * 1000);
			l->num_unit = str_index(b, "microseconds");
		} else {
			l->key = str_index(b, "lifetime_still_live");
			l->num = (int64_t)live;
			l->num_unit = str_index(b, "count");
		}
	}
	return b->oom ? -1 : 0;
}

/* One comment per site (the --lifetimes table in words). */
static int lifetime_comments(struct builder *b, size_t *cap, const struct profile *p)
{
	size_t n;
	struct lifetime_site *sites;
	char text[1536], sum[256], label[LIFETIME_LABEL_LEN];

	for (n = 0; n < p->n_stacks && !p->stacks[n].life; n++)
		;
	if (n == p->n_stacks)
		return 0;
	sites = lifetime_sites(p, &n);
	if (!sites)
		return -1;
	for (size_t i = 0; i < n; i++) {
		lifetime_summary(&sites[i].d, sum, sizeof(sum));
		lifetime_site_label(p, sites[i].part, sites[i].name, label, sizeof(label));
		snprintf(text, sizeof(text), "lifetimes of site %s: %llu samples, %s", label,
			 (unsigned long long)(lifetime_dist_died(&sites[i].d, -1) +
					      lifetime_dist_live(&sites[i].d)),
			 sum);
		add_comment(b, cap, text);
	}
	free(sites);
	return b->oom ? -1 : 0;
}

static int build(struct builder *b, const struct profile *p)
{
	Pprof__Profile *pb = &b->prof;
	size_t cap_samples = 0, cap_mappings = 0, cap_comments = 0;
	size_t map_base[PROFILE_MAX_PARTS] = {0};
	struct dsym_line roots[PROFILE_MAX_PARTS];
	struct dsym_frame root_frames[PROFILE_MAX_PARTS];
	char text[512], exe[4096] = "";

	pprof__profile__init(pb);
	idmap_init(&b->strings.map, &heap_idmap_allocator, 256);
	idmap_init(&b->functions.map, &heap_idmap_allocator, 256);
	idmap_init(&b->locations, &heap_idmap_allocator, 256);
	b->cap_strings = 256;
	pb->string_table = calloc(b->cap_strings, sizeof(char *));
	if (!pb->string_table)
		return -1;
	pb->string_table[pb->n_string_table++] = ""; /* index 0 */
	pb->sample_type = calloc(2 * MEMPROF_N_VIEWS, sizeof(*pb->sample_type));
	pb->period_type = calloc(1, sizeof(*pb->period_type));
	if (!pb->sample_type || !pb->period_type)
		return -1;
	for (int v = 0; v < MEMPROF_N_VIEWS; v++)
		for (int k = 0; k < 2; k++) {
			Pprof__ValueType *vt = calloc(1, sizeof(*vt));

			if (!vt)
				return -1;
			value_type(b, vt, type_names[v][k], k ? "bytes" : "count");
			pb->sample_type[pb->n_sample_type++] = vt;
		}
	value_type(b, pb->period_type, "space", "bytes");
	pb->period = p->meta.rate > 0 ? llround(8.0 / p->meta.rate) : 0;
	pb->default_sample_type = str_index(b, type_names[p->meta.view][1]);
	pb->time_nanos = p->meta.time_ns;
	pb->duration_nanos = p->meta.duration_ns;
	{
		/* The allocation site's rule (site.h), for pprof's flat column. */
		char *drop = site_drop_frames();

		if (!drop)
			return -1;
		pb->drop_frames = str_index(b, drop);
		free(drop);
	}

	for (size_t part = 0; part < p->n_parts; part++) {
		const struct dsym *d = p->parts[part].dsym;

		map_base[part] = pb->n_mapping;
		for (size_t i = 0; d && i < dsym_n_modules(d); i++) {
			const struct dsym_module *m = dsym_module(d, i);
			Pprof__Mapping *mp = push((void ***)&pb->mapping, &pb->n_mapping,
						  &cap_mappings, sizeof(*mp));

			if (!mp)
				return -1;
			pprof__mapping__init(mp);
			mp->id = pb->n_mapping;
			mp->memory_start = m->start;
			mp->memory_limit = m->limit;
			mp->file_offset = m->offset;
			mp->filename = str_index(b, m->path);
			mp->build_id = str_index(b, m->build_id);
			mp->has_functions = 1;
			mp->has_filenames = m->has_dwarf;
			mp->has_line_numbers = m->has_dwarf;
			mp->has_inline_frames = m->has_dwarf;
			if (part == 0 && i == 0)
				snprintf(exe, sizeof(exe), "%s", m->path);
		}
	}

	for (size_t i = 0; i < p->n_stacks; i++) {
		const struct profile_stack *s = &p->stacks[i];
		Pprof__Sample *smp =
		    push((void ***)&pb->sample, &pb->n_sample, &cap_samples, sizeof(*smp));

		if (!smp)
			return -1;
		pprof__sample__init(smp);
		smp->value = calloc(2 * MEMPROF_N_VIEWS, sizeof(*smp->value));
		smp->location_id = calloc(s->n_frames + 2, sizeof(uint64_t));
		if (!smp->value || !smp->location_id)
			return -1;
		if (s->root && add_num_label(b, smp, "pid", p->parts[s->part].pid))
			return -1;
		if (s->domain && add_num_label(b, smp, "domain", s->domain - 1))
			return -1;
		for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
			smp->value[2 * v] = llround(s->objects[v]);
			smp->value[2 * v + 1] = s->bytes[v];
		}
		smp->n_value = 2 * MEMPROF_N_VIEWS;
		if (s->life && lifetime_labels(b, smp, s->life))
			return -1;
		for (size_t f = 0; f < s->n_frames; f++)
			smp->location_id[smp->n_location_id++] =
			    location_id(b, s->frames[f], map_base[s->part]);
		if (!s->n_frames) {
			/* A location of its own, with a function named for it. */
			static const struct dsym_line unknown_line = {.function =
									  PROFILE_UNKNOWN_STACK};
			static const struct dsym_frame unknown = {
			    .module = -1, .n_lines = 1, .lines = (struct dsym_line *)&unknown_line};

			smp->location_id[smp->n_location_id++] = location_id(b, &unknown, 0);
		}
		if (s->root) {
			/* The process as the root frame: a location of its own per part. */
			roots[s->part] = (struct dsym_line){.function = (char *)s->root};
			root_frames[s->part] = (struct dsym_frame){
			    .module = -1, .n_lines = 1, .lines = &roots[s->part]};
			smp->location_id[smp->n_location_id++] =
			    location_id(b, &root_frames[s->part], 0);
		}
	}

	snprintf(text, sizeof(text),
		 "memprof-bpf: process %d%s%s, sampling rate %g per word (one sample per %.0f "
		 "bytes on average)",
		 (int)p->meta.pid, *exe ? " " : "", exe, p->meta.rate,
		 p->meta.rate > 0 ? 8.0 / p->meta.rate : 0.0);
	add_comment(b, &cap_comments, p->meta.title ? p->meta.title : text);
	for (size_t part = 0; p->n_parts > 1 && part < p->n_parts; part++) {
		snprintf(text, sizeof(text),
			 "memprof-bpf: root frame \"%s\": the samples labelled pid=%d",
			 p->parts[part].root, (int)p->parts[part].pid);
		add_comment(b, &cap_comments, text);
	}
	add_comment(b, &cap_comments,
		    "views: alloc = every sampled allocation, inuse = blocks alive when tracing "
		    "stopped, promoted = blocks that survived a minor collection, short = blocks "
		    "freed while young, peak = blocks alive when the total live memory read "
		    "was highest");
	if (p->meta.peak_readings) {
		snprintf(text, sizeof(text),
			 "peak: read at %.3f s since the start, the highest of %llu readings "
			 "about %.0f ms apart (a higher peak between two readings is not seen)",
			 (double)p->meta.peak_t_ns * 1e-9,
			 (unsigned long long)p->meta.peak_readings, (double)p->meta.poll_ns * 1e-6);
		add_comment(b, &cap_comments, text);
	}
	add_comment(b, &cap_comments,
		    "each value is an estimate: a view's samples are Poisson, so a value "
		    "resting on n samples has a relative error of about 1/sqrt(n)");
	if (lifetime_comments(b, &cap_comments, p))
		return -1;
	return b->oom ? -1 : 0;
}

/* Gzip buf into out. */
static int gzip_write(FILE *out, const uint8_t *buf, size_t len)
{
	z_stream z = {0};
	uint8_t chunk[65536];
	int rc;

	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -1;
	z.next_in = (uint8_t *)buf;
	z.avail_in = (uInt)len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		rc = deflate(&z, Z_FINISH);
		if (rc == Z_STREAM_ERROR || fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
						sizeof(chunk) - z.avail_out) {
			deflateEnd(&z);
			return -1;
		}
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

int pprof_write(FILE *out, const struct profile *p)
{
	struct builder b = {0};
	uint8_t *buf = NULL;
	size_t len;
	int rc = -1;

	if (build(&b, p))
		goto out;
	len = pprof__profile__get_packed_size(&b.prof);
	buf = malloc(len ? len : 1);
	if (!buf)
		goto out;
	pprof__profile__pack(&b.prof, buf);
	rc = gzip_write(out, buf, len);
out:
	/* String 0 is a literal: the set owns the others. */
	if (b.prof.string_table)
		b.prof.string_table[0] = NULL;
	builder_free(&b);
	free(buf);
	return rc;
}
