/*
 * A C program with four allocation sites, for attaching memprof-bpf to it
 * for real.  It writes READY_FILE once started, waits until a tracer has
 * turned sampling on (the control block says so), runs a fixed workload,
 * prints one line per site and exits (which ends the tracer's run):
 *   site <name> words <W> live_words <L>
 * READY_FILE holds the pid to attach to.
 *
 *   sites READY_FILE ROUNDS [--fork | --fork-traced]
 *
 * --fork: the program forks first and the child does all of the above (the
 * parent waits for it): a tracer attaches to a child of a preloaded process.
 * --fork-traced: once traced, the program forks a child that allocates 4 MiB
 * and prints its control block (child_flags, child_rate): the tracer's
 * sampling must not carry over into the child.
 */
#include <linux/types.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracer_wait.h"

#define LONG_KEPT 4096
#define BIG_BYTES (256 * 1024)
#define MEDIUM_RING 512

static unsigned long long words[4], live[4];
/* Not static: the compiler must keep the stores (and the mallocs). */
void *long_kept[LONG_KEPT];
void *medium_ring[MEDIUM_RING];
#define PARENT_BLOCKS 64
void *parent_blocks[PARENT_BLOCKS];
static void *volatile sink;

static size_t words_of(size_t bytes)
{
	return (bytes + 7) / 8;
}

/* Dies at once: short-lived. */
__attribute__((noinline)) void site_short_lived(size_t bytes)
{
	sink = malloc(bytes);
	words[0] += words_of(bytes);
	free(sink);
}

/* Kept to the end. */
__attribute__((noinline)) void site_long_lived(size_t i)
{
	size_t bytes = 64 + (i % 8) * 16;

	if (i >= LONG_KEPT)
		return;
	long_kept[i] = malloc(bytes);
	words[1] += words_of(bytes);
	live[1] += words_of(bytes);
}

/* Born major (at or above the threshold), freed soon after. */
__attribute__((noinline)) void site_major_blocks(void)
{
	sink = malloc(BIG_BYTES);
	memset(sink, 1, 64);
	words[2] += words_of(BIG_BYTES);
	free(sink);
}

/* Lives through a ring of MEDIUM_RING blocks of 4 KiB (2 MiB: an epoch). */
__attribute__((noinline)) void site_medium_lived(size_t i)
{
	size_t k = i % MEDIUM_RING;

	if (medium_ring[k])
		live[3] -= words_of(4096);
	free(medium_ring[k]);
	medium_ring[k] = calloc(1, 4096);
	words[3] += words_of(4096);
	live[3] += words_of(4096);
}

/* A child of the traced process: allocate, then report the control block. */
static int traced_child(void)
{
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		return -1;
	if (child == 0) {
		for (int i = 0; i < 4096; i++) {
			sink = malloc(1024);
			free(sink);
		}
		printf("child_flags=%u\nchild_rate=%g\n", memprof_probe_control.flags,
		       memprof_probe_control.active_rate);
		fflush(stdout);
		_exit(0);
	}
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	int fork_first = argc == 4 && !strcmp(argv[3], "--fork");
	int fork_traced = argc == 4 && !strcmp(argv[3], "--fork-traced");
	if (argc < 3 || argc > 4 || (argc == 4 && !fork_first && !fork_traced)) {
		fprintf(stderr, "usage: sites READY_FILE ROUNDS [--fork | --fork-traced]\n");
		return 2;
	}
	long rounds = atol(argv[2]);
	if (rounds <= 0) {
		fprintf(stderr, "sites: bad ROUNDS %s\n", argv[2]);
		return 2;
	}
	if (fork_first) {
		/* Some heap history in the parent first (blocks the child inherits). */
		for (int i = 0; i < 1000; i++) {
			site_short_lived(100);
			parent_blocks[i % PARENT_BLOCKS] = malloc(300);
		}
		memset(words, 0, sizeof(words));
		memset(live, 0, sizeof(live));
		fflush(stdout);
		pid_t child = fork();
		if (child < 0)
			return 1;
		if (child > 0) {
			int status;
			if (waitpid(child, &status, 0) != child)
				return 1;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		}
	}
	int waited = tracer_ready_and_wait("sites", argv[1]);
	if (waited != 0)
		return waited == -1 ? 2 : 1;
	if (fork_traced && traced_child() != 0)
		return 1;
	for (long i = 0; i < rounds; i++) {
		site_short_lived(16 + (size_t)(i % 64) * 8);
		site_short_lived(200);
		if (i % 4 == 0)
			site_long_lived((size_t)i / 4);
		if (i % 64 == 0)
			site_major_blocks();
		site_medium_lived((size_t)i);
	}
	static const char *const names[4] = {"site_short_lived", "site_long_lived",
					     "site_major_blocks", "site_medium_lived"};
	for (int s = 0; s < 4; s++)
		printf("site %s words %llu live_words %llu\n", names[s], words[s], live[s]);
	return 0;
}
