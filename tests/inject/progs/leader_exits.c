/*
 * A process whose main thread has exited (pthread_exit) while another
 * runs on: a zombie leader.  The other thread writes READY once the main
 * thread shows as a zombie, then waits for a signal.
 *
 *   leader_exits READY
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *ready_path;

/* Whether the main thread (pid) is a zombie: system calls only. */
static int leader_gone(void)
{
	char path[64], buf[512] = {0};
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)getpid());
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	char *p = n > 0 ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' && p[2] == 'Z';
}

static void *runs_on(void *arg)
{
	const struct timespec tick = {0, 1000000};
	int fd;

	(void)arg;
	while (!leader_gone())
		nanosleep(&tick, NULL);
	fd = open(ready_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, "ready\n", 6) != 6)
			_exit(2);
		close(fd);
	}
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 2)
		return 2;
	ready_path = argv[1];
	if (pthread_create(&t, NULL, runs_on, NULL))
		return 2;
	pthread_exit(NULL);
}
