/* Symbolize, merge and print the folded stacks of one view. */
#include "folded.h"

#include "profile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct folded_line {
	char *stack;
	uint64_t weight;
};

/*
 * Root-first frames joined by ';' (in names ';' becomes ':', and line breaks
 * and tabs spaces), each as flags (PROFILE_NAME_*) print it.  malloc'ed.
 */
static char *stack_string(const struct profile_stack *s, unsigned flags)
{
	struct profile_name names[PROFILE_MAX_NAMES];
	size_t n = profile_stack_entries(s, names, PROFILE_MAX_NAMES), len = 0;
	char *out, *owned[PROFILE_MAX_NAMES];
	const char *str[PROFILE_MAX_NAMES];

	for (size_t i = 0; i < n; i++) {
		owned[i] = flags && names[i].line ? profile_name_dup(&names[i], flags) : NULL;
		str[i] = owned[i] ? owned[i] : names[i].name;
		len += strlen(str[i]) + 1;
	}
	out = malloc(len + 1);
	if (out) {
		len = 0;
		for (size_t i = n; i-- > 0;) {
			size_t flen = strlen(str[i]);

			if (len)
				out[len++] = ';';
			for (size_t k = 0; k < flen; k++) {
				char c = str[i][k];

				out[len++] = c == ';'				     ? ':'
					     : (c == '\n' || c == '\t' || c == '\r') ? ' '
										     : c;
			}
		}
		out[len] = '\0';
	}
	for (size_t i = 0; i < n; i++)
		free(owned[i]);
	return out;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack,
		      ((const struct folded_line *)b)->stack);
}

long folded_write(FILE *out, const struct profile *p, enum memprof_view v)
{
	struct folded_line *lines = calloc(p->n_stacks ? p->n_stacks : 1, sizeof(*lines));
	size_t n_lines = 0, kept = 0;
	long rc = 0;

	if (!lines)
		return -1;
	for (size_t i = 0; i < p->n_stacks; i++) {
		if (p->stacks[i].bytes[v] <= 0)
			continue;
		lines[n_lines].stack = stack_string(&p->stacks[i], p->meta.names);
		if (!lines[n_lines].stack) {
			rc = -1;
			goto out;
		}
		lines[n_lines++].weight = (uint64_t)p->stacks[i].bytes[v];
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
