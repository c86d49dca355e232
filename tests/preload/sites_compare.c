/* Per-site totals of heaptrack and memprof-bpf: see sites_compare.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sites_compare.h"

/* Is this frame a site?  Named, and not an allocator wrapper. */
static int is_site(const char *name)
{
	return name && *name && !strstr(name, "+0x") && !strcasestr(name, "alloc");
}

static int site_index(struct site_totals *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], name))
			return i;
	if (t->n == SITES_MAX)
		return -1;
	t->name[t->n] = strdup(name);
	t->exact[t->n] = t->estimate[t->n] = 0;
	return t->n++;
}

/* Growable arrays for heaptrack's tables (index 0 unused where 1-based). */
struct table {
	long *v;
	size_t n, cap;
};

static void table_push(struct table *a, long x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 1024;
		a->v = realloc(a->v, a->cap * sizeof(long));
		if (!a->v)
			abort();
	}
	a->v[a->n++] = x;
}

/*
 * heaptrack's data, one record per line, numbers in hex:
 *   s LEN TEXT            a string (1-based)
 *   i IP MODULE [FN FILE LINE]...   an instruction pointer (1-based); the last
 *                         FN is the outermost (the ELF symbol's) function
 *   t IP_INDEX PARENT     a trace node (1-based, 0 is the root)
 *   a SIZE TRACE          an allocation kind (0-based)
 *   + ALLOC_INDEX         one allocation of that kind
 */
int sites_add_heaptrack(struct site_totals *t, const char *path)
{
	const char *tool = strstr(path, ".gz") ? "zcat" : "zstd -dc";
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s '%s'", tool, path);
	FILE *in = popen(cmd, "r");
	if (!in)
		return -1;
	struct table strings = {0}, ip_fn = {0}, trace_ip = {0}, trace_parent = {0};
	struct table alloc_size = {0}, alloc_trace = {0}, alloc_count = {0};
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	table_push(&strings, 0);
	table_push(&ip_fn, 0);
	table_push(&trace_ip, 0);
	table_push(&trace_parent, 0);
	while ((len = getline(&line, &cap, in)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (len < 2 || line[1] != ' ')
			continue;
		char *p = line + 2, *end;
		switch (line[0]) {
		case 's': {
			char *text = strchr(p, ' ');
			table_push(&strings, (long)strdup(text ? text + 1 : ""));
			break;
		}
		case 'i': {
			long fn = 0;
			strtoul(p, &end, 16);	/* ip */
			strtoul(end, &end, 16); /* module */
			for (int k = 0; *end; k++) {
				long x = (long)strtoul(end, &end, 16);
				if (k % 3 == 0)
					fn = x;
			}
			table_push(&ip_fn, fn);
			break;
		}
		case 't':
			table_push(&trace_ip, (long)strtoul(p, &end, 16));
			table_push(&trace_parent, (long)strtoul(end, NULL, 16));
			break;
		case 'a':
			table_push(&alloc_size, (long)strtoul(p, &end, 16));
			table_push(&alloc_trace, (long)strtoul(end, NULL, 16));
			table_push(&alloc_count, 0);
			break;
		case '+': {
			size_t k = strtoul(p, NULL, 16);
			if (k < alloc_count.n)
				alloc_count.v[k]++;
			break;
		}
		}
	}
	free(line);
	int rc = pclose(in) == 0 && alloc_size.n > 0 ? 0 : -1;
	for (size_t k = 0; rc == 0 && k < alloc_size.n; k++) {
		const char *site = "(none)";
		for (long node = alloc_trace.v[k]; node > 0 && (size_t)node < trace_ip.n;
		     node = trace_parent.v[node]) {
			long ip = trace_ip.v[node];
			long fn = ip > 0 && (size_t)ip < ip_fn.n ? ip_fn.v[ip] : 0;
			const char *name =
			    fn > 0 && (size_t)fn < strings.n ? (const char *)strings.v[fn] : NULL;
			if (is_site(name)) {
				site = name;
				break;
			}
		}
		int i = site_index(t, site);
		if (i >= 0)
			t->exact[i] += (double)alloc_size.v[k] * (double)alloc_count.v[k];
	}
	for (size_t k = 1; k < strings.n; k++)
		free((char *)strings.v[k]);
	free(strings.v);
	free(ip_fn.v);
	free(trace_ip.v);
	free(trace_parent.v);
	free(alloc_size.v);
	free(alloc_trace.v);
	free(alloc_count.v);
	return rc;
}

/* Folded: "root;...;leaf WEIGHT" per line. */
int sites_add_folded(struct site_totals *t, const char *path)
{
	FILE *in = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!in)
		return -1;
	while (getline(&line, &cap, in) > 0) {
		char *space = strrchr(line, ' ');
		if (!space)
			continue;
		*space = 0;
		double weight = atof(space + 1);
		const char *site = "(none)";
		/* Frames from the leaf (last) outwards. */
		for (char *end = line + strlen(line); end > line;) {
			char *start = end;
			while (start > line && start[-1] != ';')
				start--;
			*end = 0;
			if (is_site(start)) {
				site = start;
				break;
			}
			end = start > line ? start - 1 : line;
		}
		int i = site_index(t, site);
		if (i >= 0)
			t->estimate[i] += weight;
	}
	free(line);
	fclose(in);
	return 0;
}

double sites_total_exact(const struct site_totals *t)
{
	double sum = 0;

	for (int i = 0; i < t->n; i++)
		sum += t->exact[i];
	return sum;
}
