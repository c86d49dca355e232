/*
 * 200 allocation sites with known sizes, for the coverage of the text
 * report's 95% intervals (tests/output/test_text.c).  Site i (site_000 ..
 * site_199) allocates (1 + i % 7) * 1000 blocks of 64 bytes (8 words);
 * even sites keep theirs to exit (live), odd sites free each at once
 * (short-lived).
 *
 *   many_sites READY_FILE
 */
#include <stdlib.h>

#include "wait_tracer.h"

#define BLOCK_BYTES 64
#define PER_SITE_MAX 7000

/* Not static, and freed through a volatile: the mallocs stay. */
void *kept[100 * PER_SITE_MAX];
static size_t n_kept;

/* A macro, not a function: the malloc is in site_NNN's own frame. */
#define RUN_SITE(i)                                                                                \
	for (int k = 0; k < (1 + (i) % 7) * 1000; k++) {                                           \
		wait_sink = malloc(BLOCK_BYTES);                                                   \
		if ((i) % 2 == 0)                                                                  \
			kept[n_kept++] = wait_sink;                                                \
		else                                                                               \
			free(wait_sink);                                                           \
	}

#define SITE(i)                                                                                    \
	__attribute__((noipa)) void site_##i(void)                                                 \
	{                                                                                          \
		RUN_SITE(1##i - 1000);                                                             \
		__asm__ volatile("");                                                              \
	}
#define SITES10(d)                                                                                 \
	SITE(d##0)                                                                                 \
	SITE(d##1)                                                                                 \
	SITE(d##2) SITE(d##3) SITE(d##4) SITE(d##5) SITE(d##6) SITE(d##7) SITE(d##8) SITE(d##9)
#define SITES100(h)                                                                                \
	SITES10(h##0)                                                                              \
	SITES10(h##1)                                                                              \
	SITES10(h##2)                                                                              \
	SITES10(h##3)                                                                              \
	SITES10(h##4) SITES10(h##5) SITES10(h##6) SITES10(h##7) SITES10(h##8) SITES10(h##9)
SITES100(0)
SITES100(1)

#undef SITE
#define SITE(i) site_##i,
static void (*const sites[])(void) = {SITES100(0) SITES100(1)};

int main(int argc, char **argv)
{
	if (argc != 2 || wait_for_tracer(argv[1])) {
		fprintf(stderr, "usage: many_sites READY_FILE (and a tracer within 60 s)\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		sites[i]();
	printf("kept %zu\n", n_kept);
	return 0;
}
