/*
 * A thread blocked in a system call when the injector uses it: the call
 * must go on as if nothing happened.  One thread; READY is written just
 * before the call, and the test waits until the thread is blocked in it
 * (/proc/PID/syscall), then injects, then ends the call itself:
 *
 *   syscalls sleep READY        nanosleep(SLEEP_S) until SIGUSR1: the call
 *                               is cut by that signal only, and the time it
 *                               says is left (rem) is what was left when
 *                               the signal came, so the call was restarted
 *                               with its first deadline, not begun again
 *   syscalls read READY FIFO    read() of one byte from FIFO (opened
 *                               read-write, so it never sees an end of
 *                               file): the byte the test writes, no EINTR
 *
 * Prints "result=ok" or what went wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Longer than any test: the signal ends it. */
#define SLEEP_S 600
/*
 * How far rem may be from the time left when the signal came: the
 * signal's own latency.  The test starts the injection a second or more
 * into the sleep, so a call begun again would be off by that much.
 */
#define REM_SLACK_S 0.5

static volatile sig_atomic_t signalled;
static struct timespec signalled_at;

static double seconds(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec * 1e-9;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return seconds(&ts);
}

static void on_usr1(int sig)
{
	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &signalled_at);
	signalled = 1;
}

/*
 * READY, with system calls only: stdio would leave the return addresses of
 * malloc and free in the stack words below the blocked call, and the
 * injector's conservative scan would then never find the thread safe.
 */
static int write_ready(const char *path)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void blocked_sleep(const char *ready)
{
	struct sigaction sa = {.sa_handler = on_usr1}; /* no SA_RESTART */
	const struct timespec req = {SLEEP_S, 0};
	struct timespec rem = {0, 0};
	double t0, left;
	int rc;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) || write_ready(ready))
		exit(2);
	t0 = now();
	rc = nanosleep(&req, &rem);
	if (rc == 0) {
		printf("result=nanosleep returned before the signal\n");
		return;
	}
	if (errno != EINTR || !signalled) {
		printf("result=nanosleep failed before the signal: %s\n", strerror(errno));
		return;
	}
	left = SLEEP_S - (seconds(&signalled_at) - t0);
	if (seconds(&rem) < left - REM_SLACK_S || seconds(&rem) > left + REM_SLACK_S)
		printf("result=nanosleep left %.3f s where %.3f s were left\n", seconds(&rem),
		       left);
	else
		printf("result=ok\n");
}

static void blocked_read(const char *ready, const char *fifo)
{
	int fd = open(fifo, O_RDWR);
	char c = 0;
	ssize_t n;

	if (fd < 0 || write_ready(ready))
		exit(2);
	n = read(fd, &c, 1);
	if (n != 1 || c != 'x')
		printf("result=read returned %zd (%s)\n", n, n < 0 ? strerror(errno) : "");
	else
		printf("result=ok\n");
	close(fd);
}

/*
 * Zero the stack below main: the dynamic loader's start-up left stale words
 * there (return addresses into ld.so among them) that the injector's
 * conservative scan takes for live frames of the dynamic loader.
 */
__attribute__((noinline)) static void scrub_stack(void)
{
	char below[256 * 1024];

	explicit_bzero(below, sizeof(below)); /* never optimized away */
}

__attribute__((noinline)) static int run(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "sleep"))
		blocked_sleep(argv[2]);
	else if (argc >= 4 && !strcmp(argv[1], "read"))
		blocked_read(argv[2], argv[3]);
	else
		return 2;
	fflush(stdout);
	/* An allocation after the injection, through the redirected slot. */
	free(malloc(100));
	return 0;
}

int main(int argc, char **argv)
{
	scrub_stack();
	return run(argc, argv);
}
