/*
 * A thread blocked in a system call when the injector uses it: the call
 * must go on as if nothing happened.
 *
 *   syscalls sleep   nanosleep(1.5 s): no error, at least 1.5 s elapsed
 *   syscalls read    read() on a pipe another thread writes after 1.5 s:
 *                    the byte, no EINTR
 *
 * Prints "result=ok" or what went wrong; the test injects at about 0.3 s.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *writer(void *arg)
{
	const struct timespec later = {1, 500000000};

	(void)arg;
	nanosleep(&later, NULL);
	if (write(fds[1], "x", 1) != 1)
		exit(3);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	if (!strcmp(argv[1], "sleep")) {
		const struct timespec req = {1, 500000000};
		double t0 = now();
		int rc = nanosleep(&req, NULL);
		double dt = now() - t0;
		if (rc)
			printf("result=nanosleep failed: %s\n", strerror(errno));
		else if (dt < 1.5)
			printf("result=nanosleep cut short: %.3f s\n", dt);
		else
			printf("result=ok\n");
	} else {
		pthread_t t;
		char c = 0;
		if (pipe(fds) || pthread_create(&t, NULL, writer, NULL))
			return 1;
		ssize_t n = read(fds[0], &c, 1);
		if (n != 1 || c != 'x')
			printf("result=read returned %zd (%s)\n", n, n < 0 ? strerror(errno) : "");
		else
			printf("result=ok\n");
		pthread_join(t, NULL);
	}
	/* An allocation after the injection, through the redirected slot. */
	free(malloc(100));
	return 0;
}
