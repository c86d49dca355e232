/*
 * Folded stacks are sorted and merged on their names without being built
 * whole (output/folded.c): the file must be the one that building every
 * line, sorting the lines with strcmp and merging equal ones gives.  The
 * names are chosen to hit the edges of that comparison: a name that is
 * the start of another, followed by characters below and above ';', names
 * that print alike from different frames (';' printed ':', a tab printed
 * as a space), and lines that end where another goes on.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include "memprof_maps.h"
#include "output/folded.h"
#include "output/profile.h"

static const char *const texts[] = {"a",  "a b", "a:b", "ab",  "a;b", "a\tb", "b",
				    "a(", "a~",	 "",	"ab;", "b",   "a"};
#define N_TEXTS (sizeof(texts) / sizeof(texts[0]))
#define N_STACKS 3000
#define MAX_DEPTH 5

/* The line as the old writer built it: root first, ';' between, ';' as ':'
 * and tabs as spaces in names. */
static char *line_of(const struct profile_stack *s, unsigned flags)
{
	struct profile_name e[PROFILE_MAX_NAMES];
	size_t n = profile_stack_entries(s, e, PROFILE_MAX_NAMES), len = 0;
	char *out = malloc(4096);

	cr_assert(out);
	for (size_t i = n; i-- > 0;) {
		char *name =
		    flags && e[i].line ? profile_name_dup(&e[i], flags) : strdup(e[i].name);

		cr_assert(name);
		if (i + 1 < n)
			out[len++] = ';';
		for (char *c = name; *c; c++)
			out[len++] = *c == ';' ? ':' : *c == '\t' ? ' ' : *c;
		free(name);
	}
	out[len] = '\0';
	return out;
}

struct expected {
	char *stack;
	uint64_t weight;
};

static int expected_cmp(const void *a, const void *b)
{
	return strcmp(((const struct expected *)a)->stack, ((const struct expected *)b)->stack);
}

static void check(unsigned flags, unsigned seed)
{
	static struct dsym_line lines[N_TEXTS];
	static struct dsym_frame frames[N_TEXTS];
	static const struct dsym_frame *fp[N_STACKS][MAX_DEPTH];
	static struct profile_stack stacks[N_STACKS];
	static struct expected want[N_STACKS];
	struct profile p = {0};
	char *got = NULL, *expect = NULL;
	size_t got_len = 0, expect_len = 0, n_want = 0, kept = 0;
	FILE *f;

	srand(seed);
	for (size_t i = 0; i < N_TEXTS; i++) {
		lines[i] = (struct dsym_line){.function = (char *)texts[i],
					      .file = i % 3 ? "x.c" : NULL,
					      .line = (int)(i % 4)};
		frames[i] = (struct dsym_frame){.n_lines = 1, .lines = &lines[i]};
	}
	for (size_t i = 0; i < N_STACKS; i++) {
		size_t depth = 1 + (size_t)rand() % MAX_DEPTH;

		for (size_t k = 0; k < depth; k++)
			fp[i][k] = &frames[(size_t)rand() % N_TEXTS];
		stacks[i] = (struct profile_stack){.frames = fp[i], .n_frames = depth};
		stacks[i].bytes[MEMPROF_VIEW_ALLOC] = rand() % 5 ? 1 + rand() % 1000 : 0;
		if (stacks[i].bytes[MEMPROF_VIEW_ALLOC] > 0)
			want[n_want++] =
			    (struct expected){line_of(&stacks[i], flags),
					      (uint64_t)stacks[i].bytes[MEMPROF_VIEW_ALLOC]};
	}
	p.meta.names = flags;
	p.stacks = stacks;
	p.n_stacks = N_STACKS;

	qsort(want, n_want, sizeof(*want), expected_cmp);
	for (size_t i = 0; i < n_want; i++) {
		if (kept && !strcmp(want[kept - 1].stack, want[i].stack)) {
			want[kept - 1].weight += want[i].weight;
			free(want[i].stack);
			continue;
		}
		want[kept++] = want[i];
	}
	f = open_memstream(&expect, &expect_len);
	cr_assert(f);
	for (size_t i = 0; i < kept; i++) {
		fprintf(f, "%s %llu\n", want[i].stack, (unsigned long long)want[i].weight);
		free(want[i].stack);
	}
	cr_assert_eq(fclose(f), 0);

	f = open_memstream(&got, &got_len);
	cr_assert(f);
	long r = folded_write(f, &p, MEMPROF_VIEW_ALLOC);
	cr_expect_eq(r, (long)kept, "got %ld want %zu of %zu", r, kept, n_want);
	cr_assert_eq(fclose(f), 0);
	cr_expect(kept < n_want, "no two stacks printed alike: the merge is not tried");
	cr_expect_str_eq(got, expect, "flags %u, seed %u", flags, seed);
	free(got);
	free(expect);
}

Test(output_folded, sorted_and_merged_as_the_printed_lines)
{
	for (unsigned seed = 1; seed <= 4; seed++)
		check(0, seed);
}

Test(output_folded, sorted_and_merged_with_lines_and_short_names)
{
	for (unsigned seed = 1; seed <= 4; seed++)
		check(PROFILE_NAME_LINES | PROFILE_NAME_SHORT, seed);
}
