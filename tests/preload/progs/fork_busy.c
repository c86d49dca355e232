/*
 * A traced process forks while its threads free sampled blocks.
 *
 *   fork_busy READY_FILE
 *
 * Writes its pid to READY_FILE and waits until a tracer samples it (the
 * control block says so).  Then worker threads allocate and free without
 * a pause, at the tracer's rate (a sampled block's death takes the core's
 * mutex), while the main thread forks FORKS children.  Each child frees
 * blocks it inherited from the workers, allocates past its first slow
 * path (which sees the tracer gone and takes the core's mutex) and exits;
 * a lock left held across the fork hangs it, and the watchdog's alarm
 * makes that a failure.  Prints:
 *   forks <n> failures <n> worker_allocs <n>
 */
#include <linux/types.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracer_wait.h"

#define CHILD_WATCHDOG_SECONDS 20
#define FORKS 200
#define WORKERS 3
#define SLOTS 64
#define CHILD_ALLOCS 20000

static atomic_int stop_workers;
/* Through a volatile (one per thread): the compiler must keep every
 * malloc and free. */
static _Thread_local void *volatile sink;
static atomic_ullong worker_allocs;
/* The workers' live blocks: children inherit them and free some. */
static void *_Atomic slots[WORKERS][SLOTS];

static void *work(void *arg)
{
	unsigned w = (unsigned)(uintptr_t)arg, k = w;
	unsigned long long n = 0;

	while (!atomic_load_explicit(&stop_workers, memory_order_relaxed)) {
		k = (k * 1103515245u + 12345u) & (SLOTS - 1);
		free(atomic_exchange(&slots[w][k], malloc(64 + k * 48)));
		sink = malloc(32 + (k & 7) * 8);
		free(sink);
		n += 2;
	}
	atomic_fetch_add(&worker_allocs, n);
	return NULL;
}

static int child_work(void)
{
	for (unsigned w = 0; w < WORKERS; w++)
		for (unsigned k = 0; k < SLOTS; k += 2)
			free(atomic_exchange(&slots[w][k], NULL));
	for (int i = 0; i < CHILD_ALLOCS; i++) {
		sink = malloc(16 + (size_t)(i & 255));
		free(sink);
	}
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t workers[WORKERS];
	int failures = 0;

	int forks = argc == 3 ? atoi(argv[2]) : FORKS;
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: fork_busy READY_FILE [FORKS]\n");
		return 2;
	}
	int waited = tracer_ready_and_wait("fork_busy", argv[1]);
	if (waited != 0)
		return waited == -1 ? 2 : 1;
	for (unsigned w = 0; w < WORKERS; w++)
		if (pthread_create(&workers[w], NULL, work, (void *)(uintptr_t)w) != 0) {
			fprintf(stderr, "fork_busy: cannot start a thread\n");
			return 1;
		}
	fflush(stdout);
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(CHILD_WATCHDOG_SECONDS);
			_exit(child_work());
		}
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "fork_busy: child %d: status %#x\n", i, status);
			failures++;
		}
	}
	atomic_store(&stop_workers, 1);
	for (unsigned w = 0; w < WORKERS; w++)
		pthread_join(workers[w], NULL);
	printf("forks %d failures %d worker_allocs %llu\n", forks, failures,
	       (unsigned long long)atomic_load(&worker_allocs));
	return 0;
}
