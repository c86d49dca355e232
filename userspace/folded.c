/* Symbolize, merge and print the folded stacks of one view. */
#include "folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *const memprof_view_names[MEMPROF_N_VIEWS] = MEMPROF_VIEW_NAMES;

#define FRAME_MAX 512
#define UNKNOWN_STACK_FRAME "[stack-unavailable]"

struct folded_line {
	char *stack;
	uint64_t weight;
};

int memprof_view_parse(const char *s)
{
	for (int v = 0; v < MEMPROF_N_VIEWS; v++)
		if (!strcmp(s, memprof_view_names[v]))
			return v;
	return -1;
}

/* Root-first frames joined by ';'.  malloc'ed. */
static char *stack_string(const struct memprof_stack *s, struct symbolizer *sym)
{
	size_t len = 0, cap = 256;
	char *out = malloc(cap), frame[FRAME_MAX];
	uint32_t depth = s->len > MEMPROF_STACK_DEPTH ? MEMPROF_STACK_DEPTH : s->len;

	if (!out)
		return NULL;
	out[0] = '\0';
	if (!depth)
		return strcpy(out, UNKNOWN_STACK_FRAME);
	for (uint32_t i = depth; i-- > 0;) {
		size_t flen;

		symbolizer_frame(sym, s->pcs[i], frame, sizeof(frame));
		flen = strlen(frame);
		if (len + flen + 2 > cap) {
			char *p;

			while (len + flen + 2 > cap)
				cap *= 2;
			p = realloc(out, cap);
			if (!p) {
				free(out);
				return NULL;
			}
			out = p;
		}
		if (len)
			out[len++] = ';';
		memcpy(out + len, frame, flen + 1);
		len += flen;
	}
	return out;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack,
		      ((const struct folded_line *)b)->stack);
}

long folded_write(FILE *out, const struct memprof_stack *stacks,
		  const struct memprof_stack_agg *aggs, uint32_t n, struct symbolizer *sym,
		  enum memprof_view v)
{
	struct folded_line *lines = calloc(n ? n : 1, sizeof(*lines));
	size_t n_lines = 0, kept = 0;
	long rc = 0;

	if (!lines)
		return -1;
	for (uint32_t id = 0; id < n; id++) {
		/* Live is raised and lowered concurrently: read it as signed. */
		int64_t w = (int64_t)aggs[id].bytes[v];

		if (w <= 0)
			continue;
		lines[n_lines].stack = stack_string(&stacks[id], sym);
		if (!lines[n_lines].stack) {
			rc = -1;
			goto out;
		}
		lines[n_lines++].weight = (uint64_t)w;
	}
	if (n_lines)
		qsort(lines, n_lines, sizeof(*lines), line_cmp);
	for (size_t i = 0; i < n_lines; i++) {
		if (kept && !strcmp(lines[kept - 1].stack, lines[i].stack)) {
			lines[kept - 1].weight += lines[i].weight;
			free(lines[i].stack);
			lines[i].stack = NULL;
			continue;
		}
		lines[kept++] = lines[i];
	}
	n_lines = kept;
	for (size_t i = 0; i < n_lines; i++)
		if (fprintf(out, "%s %" PRIu64 "\n", lines[i].stack, lines[i].weight) < 0)
			rc = -1;
	if (!rc)
		rc = (long)n_lines;
out:
	for (size_t i = 0; i < n_lines; i++)
		free(lines[i].stack);
	free(lines);
	return rc;
}
