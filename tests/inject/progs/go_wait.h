/*
 * The test programs of tests/inject/ start, build some heap history, then
 * write GO_FILE.ready (their pid: the test injects from then on) and wait
 * for the test to create GO_FILE (the test does so once memprof-bpf,
 * having injected the malloc host, reports that the program samples).  While
 * waiting they allocate about 1 MiB per millisecond, so the malloc host
 * polls and notices the tracer.
 */
#ifndef INJECT_GO_WAIT_H
#define INJECT_GO_WAIT_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define GO_WAIT_SECONDS 120

static void *volatile go_wait_sink;

/* 0 once go_file exists, -1 after GO_WAIT_SECONDS. */
__attribute__((noinline)) static int go_wait(const char *go_file)
{
	const struct timespec pause = {0, 1000000};
	/* Zeroed: stale words in an unwritten buffer would look like frames. */
	char ready[256] = {0}, tmp[300] = {0}, text[32] = {0};
	int fd, n;

	/*
	 * GO_FILE.ready, whole by a rename, with system calls only: stdio would
	 * leave return addresses into malloc in the stack words above the wait,
	 * which the injector's conservative stack scan takes for live frames
	 * (it reads every word of the stack).
	 */
	snprintf(ready, sizeof(ready), "%s.ready", go_file);
	snprintf(tmp, sizeof(tmp), "%s.tmp", ready);
	n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)n) != n || close(fd) || rename(tmp, ready))
		return -1;
	for (long i = 0; i < GO_WAIT_SECONDS * 1000L; i++) {
		if (access(go_file, F_OK) == 0)
			return 0;
		for (int k = 0; k < 16; k++) {
			go_wait_sink = malloc(65536);
			free(go_wait_sink);
		}
		nanosleep(&pause, NULL);
	}
	return -1;
}

#endif
