/*
 * attach-threads: a multithreaded malloc workload for the attach storm
 * (run under the malloc preload, which gives it the memprof probes).
 *
 * Usage: attach-threads THREADS READY_FILE
 * Each thread builds and frees lists of blocks of varied sizes and checks
 * every list's sum, until SIGTERM; then it prints
 *   rounds <R> errors <E>
 * E is 0 unless a block's contents changed under the program.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16
#define LIST_LEN 64
/* Rounds between two short pauses (keeps a core free on a shared machine). */
#define PAUSE_EVERY 64

struct node {
	struct node *next;
	uint64_t v;
	char pad[];
};

static atomic_int stop;
static atomic_ullong total_rounds, total_errors;

static void on_term(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

static void *worker(void *arg)
{
	uint64_t rounds = 0, errors = 0, seed = (uintptr_t)arg;

	while (!atomic_load(&stop)) {
		struct node *head = NULL;
		uint64_t sum = 0;

		for (uint64_t i = 0; i < LIST_LEN; i++) {
			struct node *n = malloc(sizeof(*n) + ((i + seed) % 8) * 24);

			if (!n)
				abort();
			n->v = i * seed;
			n->next = head;
			head = n;
		}
		while (head) {
			struct node *next = head->next;

			sum += head->v;
			free(head);
			head = next;
		}
		errors += sum != seed * (LIST_LEN * (LIST_LEN - 1) / 2);
		if (++rounds % PAUSE_EVERY == 0)
			nanosleep(&(struct timespec){0, 200000}, NULL);
	}
	atomic_fetch_add(&total_rounds, rounds);
	atomic_fetch_add(&total_errors, errors);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	struct sigaction sa = {.sa_handler = on_term};
	int n = argc > 1 ? atoi(argv[1]) : 4;
	FILE *ready;

	if (n < 1 || n > MAX_THREADS || argc < 3) {
		fprintf(stderr, "usage: attach-threads THREADS(1-%d) READY_FILE\n", MAX_THREADS);
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)))
			return 2;
	ready = fopen(argv[2], "w");
	if (!ready || fprintf(ready, "%d\n", (int)getpid()) < 0 || fclose(ready))
		return 2;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("rounds %llu errors %llu\n", (unsigned long long)atomic_load(&total_rounds),
	       (unsigned long long)atomic_load(&total_errors));
	return 0;
}
