/*
 * The only thread that could be used is blocked inside the allocator: it
 * calls malloc_stats(), whose report to stderr blocks on a full pipe that
 * nobody reads.  The main thread waits in pthread_join.  No instant is
 * safe, so the injector must give up and leave the process as it was.
 *
 *   in_allocator READY
 *
 * READY gets the blocked thread's id, just before the call.
 */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *ready_path;

static void *blocked(void *arg)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)syscall(SYS_gettid));
	int fd = open(ready_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	(void)arg;
	if (fd < 0 || write(fd, text, (size_t)n) != n)
		_exit(2);
	close(fd);
	malloc_stats();
	return NULL;
}

int main(int argc, char **argv)
{
	char fill[4096];
	int p[2];
	pthread_t t;

	if (argc < 2 || pipe(p))
		return 2;
	ready_path = argv[1];
	/* stderr: a pipe filled to the brim, never read. */
	memset(fill, 'x', sizeof(fill));
	if (dup2(p[1], 2) < 0 || fcntl(2, F_SETFL, O_NONBLOCK))
		return 2;
	while (write(2, fill, sizeof(fill)) > 0)
		;
	if (fcntl(2, F_SETFL, 0))
		return 2;
	/* Something to report, in an arena of its own. */
	free(malloc(100));
	if (pthread_create(&t, NULL, blocked, NULL))
		return 2;
	pthread_join(t, NULL);
	return 0;
}
