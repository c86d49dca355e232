/*
 * fork and exec under the preload.
 *
 *   fork_exec threads     worker threads allocate and free while the main
 *                         thread forks; every child allocates, frees and
 *                         starts a thread of its own (a lock left held
 *                         across fork would hang it: alarm turns that
 *                         into a failure)
 *   fork_exec account     profile at rate 1, fork: the child frees blocks
 *                         tracked before the fork (one dealloc each) and
 *                         its own allocations are sampled exactly
 *   fork_exec exec        the child execs this program ("exec-child"): the
 *                         preload is there again and samples exactly
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracker.h"

/* Seconds a child may take before it is deemed hung. */
#define CHILD_WATCHDOG_SECONDS 30
#define FORKS 40
#define WORKERS 3
#define BEFORE_FORK_BLOCKS 100

static atomic_int stop_workers;

static void *churn(void *arg)
{
	void *slot[32] = {0};
	unsigned k = 0;

	(void)arg;
	while (!atomic_load(&stop_workers)) {
		k = (k * 1103515245u + 12345u) & 31;
		slot[k] = realloc(slot[k], 1 + k * 37);
		free(malloc(16 + k));
	}
	for (k = 0; k < 32; k++)
		free(slot[k]);
	return NULL;
}

static int child_work(void)
{
	pthread_t t;
	void *p[64];

	for (int i = 0; i < 64; i++)
		p[i] = malloc(8 * (size_t)(i + 1));
	for (int i = 0; i < 64; i++)
		free(p[i]);
	if (pthread_create(&t, NULL, churn, NULL) != 0)
		return 1;
	atomic_store(&stop_workers, 1);
	pthread_join(t, NULL);
	return 0;
}

static int mode_threads(void)
{
	pthread_t w[WORKERS];
	int failures = 0;

	if (memprof_start(0.05, 16, &checking_tracker) != 0)
		return 1;
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&w[i], NULL, churn, NULL);
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(CHILD_WATCHDOG_SECONDS);
			_exit(child_work());
		}
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			failures++;
	}
	atomic_store(&stop_workers, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	memprof_stop();
	printf("forks=%d\nfailures=%d\n", FORKS, failures);
	printf("order_errors=%llu\n", (unsigned long long)tracker_counts.order_errors);
	return 0;
}

/* Allocate `n` blocks of growing size tagged 2; returns the words. */
static unsigned long long allocate_tagged(void **p, int n)
{
	unsigned long long words = 0;

	tracker_tag = 2;
	for (int i = 0; i < n; i++) {
		p[i] = malloc(8 * (size_t)(i + 1));
		words += (unsigned long long)(i + 1);
	}
	tracker_tag = 0;
	return words;
}

static int mode_account(void)
{
	void *before[BEFORE_FORK_BLOCKS], *after[BEFORE_FORK_BLOCKS];

	tracker_exact = 1;
	if (memprof_start(1.0, 0, &checking_tracker) != 0)
		return 1;
	tracker_tag = 1;
	for (int i = 0; i < BEFORE_FORK_BLOCKS; i++)
		before[i] = malloc(2048); /* sampled at 1/8 per byte: P(missed) = (7/8)^2048 */
	tracker_tag = 0;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(CHILD_WATCHDOG_SECONDS);
		unsigned long long dead_before =
		    tracker_counts.dealloc_minor + tracker_counts.dealloc_major;
		for (int i = 0; i < BEFORE_FORK_BLOCKS; i++)
			free(before[i]);
		unsigned long long dead_after =
		    tracker_counts.dealloc_minor + tracker_counts.dealloc_major;
		unsigned long long words = allocate_tagged(after, BEFORE_FORK_BLOCKS);
		memprof_stop();
		printf("child_deallocs=%llu\n", dead_after - dead_before);
		printf("child_words=%llu\nchild_samples=%llu\n", words,
		       (unsigned long long)tracker_counts.samples[2]);
		printf("child_live_before=%llu\n", tracker_live(1));
		printf("child_order_errors=%llu\n",
		       (unsigned long long)tracker_counts.order_errors);
		fflush(stdout);
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	/* The parent's blocks are its own: still tracked, still alive. */
	printf("parent_live_before=%llu\n", tracker_live(1));
	printf("child_status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128);
	for (int i = 0; i < BEFORE_FORK_BLOCKS; i++)
		free(before[i]);
	printf("parent_live_after=%llu\n", tracker_live(1));
	memprof_stop();
	return 0;
}

static int mode_exec_child(void)
{
	void *p[BEFORE_FORK_BLOCKS];

	tracker_exact = 1;
	if (memprof_start(1.0, 0, &checking_tracker) != 0)
		return 1;
	unsigned long long words = allocate_tagged(p, BEFORE_FORK_BLOCKS);
	for (int i = 0; i < BEFORE_FORK_BLOCKS; i++)
		free(p[i]);
	memprof_stop();
	printf("exec_words=%llu\nexec_samples=%llu\nexec_live=%llu\n", words,
	       (unsigned long long)tracker_counts.samples[2], tracker_live(2));
	return 0;
}

static int mode_exec(const char *self)
{
	if (memprof_start(1.0, 0, &checking_tracker) != 0)
		return 1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(CHILD_WATCHDOG_SECONDS);
		execl(self, self, "exec-child", (char *)NULL);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	memprof_stop();
	printf("exec_status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fork_exec threads|account|exec\n");
		return 2;
	}
	if (!strcmp(argv[1], "threads"))
		return mode_threads();
	if (!strcmp(argv[1], "account"))
		return mode_account();
	if (!strcmp(argv[1], "exec"))
		return mode_exec(argv[0]);
	if (!strcmp(argv[1], "exec-child"))
		return mode_exec_child();
	fprintf(stderr, "fork_exec: unknown mode %s\n", argv[1]);
	return 2;
}
