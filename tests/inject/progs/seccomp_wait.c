/*
 * Runs under a seccomp filter (one that allows everything): memprof-bpf
 * must refuse to inject into it (exit 3).
 *
 *   seccomp_wait READY           the filter on the main thread
 *   seccomp_wait READY thread    the filter on a second thread only
 *
 * Prints "filtered" and writes READY once the filter is in place, then
 * waits.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int filter(void)
{
	struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {.len = 1, .filter = allow};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return -1;
	}
	return 0;
}

static int filtered_fds[2];

static void *filtered_thread(void *arg)
{
	char c = filter() ? 'n' : 'y';

	(void)arg;
	if (write(filtered_fds[1], &c, 1) != 1)
		return NULL;
	sleep(60);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char c = 'n';
	FILE *f;

	if (argc > 2 && !strcmp(argv[2], "thread")) {
		if (pipe(filtered_fds) || pthread_create(&t, NULL, filtered_thread, NULL) ||
		    read(filtered_fds[0], &c, 1) != 1 || c != 'y')
			return 1;
	} else if (filter()) {
		return 1;
	}
	printf("filtered\n");
	fflush(stdout);
	f = argc > 1 ? fopen(argv[1], "w") : NULL;
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		return 2;
	sleep(60);
	return 0;
}
