/*
 * A target for killing the loader in the middle of an injection: THREADS
 * threads allocate, fill, check and free blocks in bursts until STOP
 * exists, each with its own pattern, so that any corruption of a thread's
 * registers, stack, signal mask or heap shows as a wrong byte.  Each burst
 * is followed by a short sleep: sixteen threads never starve the machine
 * (and the loader being tested) of both cores.
 *
 *   hammer READY STOP [THREADS]
 *
 * READY is written (system calls only) once every thread runs.  Prints
 * "threads N rounds R errors E" and exits 0 when E is 0, 1 otherwise.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
/* Rounds of a burst; between two bursts, a look for STOP and a pause. */
#define BURST_ROUNDS 512
#define BURST_PAUSE_NS 1000000L

static const char *stop_path;
static atomic_int running, stop;
static atomic_ulong rounds, errors;

static void *hammer(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	unsigned long mine = 0, bad = 0;

	atomic_fetch_add(&running, 1);
	while (!atomic_load(&stop)) {
		size_t n;
		unsigned char *p, fill;

		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		n = 16 + seed % 4000;
		fill = (unsigned char)(seed >> 32);
		p = malloc(n);
		if (!p) {
			bad++;
			continue;
		}
		memset(p, fill, n);
		for (size_t i = 0; i < n; i += 61)
			bad += p[i] != fill;
		free(p);
		if (++mine % BURST_ROUNDS == 0) {
			const struct timespec pause = {0, BURST_PAUSE_NS};

			if (access(stop_path, F_OK) == 0)
				atomic_store(&stop, 1);
			nanosleep(&pause, NULL);
		}
	}
	atomic_fetch_add(&rounds, mine);
	atomic_fetch_add(&errors, bad);
	return NULL;
}

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

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	int n = argc > 3 ? atoi(argv[3]) : 16;

	if (argc < 3 || n < 1 || n > MAX_THREADS)
		return 2;
	stop_path = argv[2];
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, hammer, (void *)(uintptr_t)(i + 1)))
			return 2;
	while (atomic_load(&running) < n)
		usleep(1000);
	if (write_ready(argv[1]))
		return 2;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("threads %d rounds %lu errors %lu\n", n, atomic_load(&rounds), atomic_load(&errors));
	return atomic_load(&errors) ? 1 : 0;
}
