/*
 * A thread calls setegid() in a loop, as a privilege-dropping server does:
 * glibc then sends SIGSETXID to every other thread and waits until each
 * has taken it, holding the thread stack cache lock that dlopen (of a
 * library with static TLS) takes too.  An injected thread that blocks
 * SIGSETXID deadlocks the process.
 *
 *   setxid READY STOP
 *
 * The main thread waits for STOP (sleeping); READY is written once the
 * loop runs.  Prints "setxid calls N" and exits 0.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_ulong calls;

static void *setxid_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (setegid(getegid()))
			return NULL;
		atomic_fetch_add(&calls, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const struct timespec pause = {0, 1000000};
	char text[32];
	pthread_t t;
	int fd, n;

	if (argc < 3 || pthread_create(&t, NULL, setxid_loop, NULL))
		return 2;
	while (atomic_load(&calls) == 0)
		nanosleep(&pause, NULL);
	n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, (size_t)n) != n || close(fd))
		return 2;
	while (access(argv[2], F_OK))
		nanosleep(&pause, NULL);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("setxid calls %lu\n", atomic_load(&calls));
	return 0;
}
