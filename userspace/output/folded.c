/*
 * Symbolize, merge and print the folded stacks of one view.
 *
 * A line is never built whole in memory: each name is made printable once
 * (struct folded_names), a stack is the list of its names' numbers, root
 * first, and the lines are sorted and merged on those lists, comparing the
 * names' text where two numbers differ.  The order is that of the printed
 * lines as strcmp sorts them.  Building the lines instead took about 500
 * bytes a stack at once, the largest part of the loader's peak memory at
 * its stop with 10,000 stacks.
 */
#include "folded.h"

#include "profile.h"
#include "heap_idmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/*
 * The names of one write, numbered in the order they came.  A name is
 * known by where it comes from: a frame's line (its dsym_line, printed with
 * the flags) or a marker's or root's string.  Invariant: text[i] is the
 * printed form of name i (';' as ':', line breaks and tabs as spaces), owned
 * (freed with the set) when owned[i]; two numbers may have the same text.
 */
struct folded_names {
	struct idmap by_source; /* source key (name_key) -> number + 1 */
	const char **text;
	unsigned char *owned;
	size_t n, cap;
};

/* A source's key: nonzero, a line's never equal to a string's. */
static uint64_t name_key(const struct profile_name *e)
{
	return e->line ? ((uint64_t)(uintptr_t)e->line << 1) | 1
		       : (uint64_t)(uintptr_t)e->name << 1;
}

/* text with ';', line breaks and tabs replaced, or NULL when it has none
 * (or when out of memory: *oom set). */
static char *printable(const char *text, int *oom)
{
	char *out;

	if (!text[strcspn(text, ";\n\t\r")])
		return NULL;
	out = strdup(text);
	if (!out) {
		*oom = 1;
		return NULL;
	}
	for (char *c = out; *c; c++)
		if (*c == ';')
			*c = ':';
		else if (*c == '\n' || *c == '\t' || *c == '\r')
			*c = ' ';
	return out;
}

/* The number of name e, added if new; -1 when out of memory. */
static int64_t names_intern(struct folded_names *s, const struct profile_name *e, unsigned flags)
{
	uint64_t key = name_key(e), v;
	char *formatted = NULL, *clean;
	int oom = 0;

	if (idmap_get(&s->by_source, key, &v))
		return (int64_t)v - 1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		const char **text = realloc(s->text, cap * sizeof(*text));

		if (!text)
			return -1;
		s->text = text;
		unsigned char *owned = realloc(s->owned, cap);
		if (!owned)
			return -1;
		s->owned = owned;
		s->cap = cap;
	}
	if (flags && e->line) {
		formatted = profile_name_dup(e, flags);
		if (!formatted)
			return -1;
	}
	clean = printable(formatted ? formatted : e->name, &oom);
	if (oom) {
		free(formatted);
		return -1;
	}
	if (clean) {
		free(formatted);
		formatted = clean;
	}
	s->text[s->n] = formatted ? formatted : e->name;
	s->owned[s->n] = formatted != NULL;
	if (idmap_insert(&s->by_source, key, s->n + 1)) {
		free(formatted);
		return -1;
	}
	return (int64_t)s->n++;
}

static void names_free(struct folded_names *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->owned[i])
			free((char *)s->text[i]);
	free(s->text);
	free(s->owned);
	idmap_clear(&s->by_source);
}

/* A line: its names' numbers, root first, are ids[start, start + len). */
struct folded_line {
	size_t start;
	uint32_t len;
	uint64_t weight;
};

struct folded {
	struct folded_names names;
	uint32_t *ids;
	size_t n_ids, cap_ids;
};

/*
 * strcmp of two printed lines, from their names: where the numbers differ
 * the texts decide, and where one text is the start of the other, what
 * follows it in its line (';' before the next name, or the line's end)
 * against the other's next character (never ';').
 */
static int line_cmp(const void *a, const void *b, void *ctx)
{
	const struct folded *f = ctx;
	const struct folded_line *x = a, *y = b;
	const uint32_t *s = f->ids + x->start, *t = f->ids + y->start;
	uint32_t n = x->len < y->len ? x->len : y->len;

	for (uint32_t i = 0; i < n; i++) {
		const unsigned char *p, *q;
		size_t k = 0;

		if (s[i] == t[i])
			continue;
		p = (const unsigned char *)f->names.text[s[i]];
		q = (const unsigned char *)f->names.text[t[i]];
		while (p[k] && p[k] == q[k])
			k++;
		if (!p[k] && !q[k])
			continue; /* two sources, one text */
		int cp = p[k] ? p[k] : i + 1 < x->len ? ';' : 0;
		int cq = q[k] ? q[k] : i + 1 < y->len ? ';' : 0;
		return cp - cq;
	}
	return (x->len > y->len) - (x->len < y->len);
}

/* Append stack s's names, root first; -1 when out of memory. */
static int add_stack(struct folded *f, const struct profile_stack *s, unsigned flags,
		     struct folded_line *line)
{
	struct profile_name names[PROFILE_MAX_NAMES];
	size_t n = profile_stack_entries(s, names, PROFILE_MAX_NAMES);

	if (f->n_ids + n > f->cap_ids) {
		size_t cap = f->cap_ids ? 2 * f->cap_ids : 4096;
		uint32_t *ids;

		while (cap < f->n_ids + n)
			cap *= 2;
		ids = realloc(f->ids, cap * sizeof(*ids));
		if (!ids)
			return -1;
		f->ids = ids;
		f->cap_ids = cap;
	}
	line->start = f->n_ids;
	line->len = (uint32_t)n;
	for (size_t i = n; i-- > 0;) {
		int64_t id = names_intern(&f->names, &names[i], flags);

		if (id < 0)
			return -1;
		f->ids[f->n_ids++] = (uint32_t)id;
	}
	return 0;
}

static int print_line(FILE *out, const struct folded *f, const struct folded_line *line)
{
	for (uint32_t i = 0; i < line->len; i++)
		if ((i && fputc(';', out) == EOF) ||
		    fputs(f->names.text[f->ids[line->start + i]], out) == EOF)
			return -1;
	return fprintf(out, " %" PRIu64 "\n", line->weight) < 0 ? -1 : 0;
}

long folded_write(FILE *out, const struct profile *p, enum memprof_view v)
{
	struct folded_line *lines = calloc(p->n_stacks ? p->n_stacks : 1, sizeof(*lines));
	struct folded f = {0};
	size_t n_lines = 0, kept = 0;
	long rc = 0;

	if (!lines)
		return -1;
	idmap_init(&f.names.by_source, &heap_idmap_allocator, 256);
	for (size_t i = 0; i < p->n_stacks; i++) {
		if (p->stacks[i].bytes[v] <= 0)
			continue;
		if (add_stack(&f, &p->stacks[i], p->meta.names, &lines[n_lines])) {
			rc = -1;
			goto out;
		}
		lines[n_lines++].weight = (uint64_t)p->stacks[i].bytes[v];
	}
	if (n_lines)
		qsort_r(lines, n_lines, sizeof(*lines), line_cmp, &f);
	for (size_t i = 0; i < n_lines; i++) {
		if (kept && !line_cmp(&lines[kept - 1], &lines[i], &f)) {
			lines[kept - 1].weight += lines[i].weight;
			continue;
		}
		lines[kept++] = lines[i];
	}
	for (size_t i = 0; i < kept; i++)
		if (print_line(out, &f, &lines[i]))
			rc = -1;
	if (!rc)
		rc = (long)kept;
out:
	names_free(&f.names);
	free(f.ids);
	free(lines);
	return rc;
}
