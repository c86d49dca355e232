/*
 * A thread whose SSE registers hold values across the injection: it loads
 * a pattern into xmm0-xmm15 and spins on a flag without touching them, so
 * the injector finds it in its own code and uses it; dlopen's code uses
 * those registers, and only the stub's FP state restore gives them back.
 * A second thread sets the flag once STOP exists; the main thread waits in
 * pthread_join (where no injection happens).
 *
 *   fpstate READY STOP
 *
 * READY gets the spinning thread's id.  Prints "result=ok" (or which
 * register changed) and exits 0 when all is well.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *ready_path, *stop_path;
static volatile int stop;
static unsigned char pattern[16][16], seen[16][16];

static void write_ready(void)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)syscall(SYS_gettid));
	int fd = open(ready_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, text, (size_t)n) != n)
		_exit(2);
	close(fd);
}

static void *spin(void *arg)
{
	(void)arg;
	write_ready();
	__asm__ volatile("movdqu 0(%0), %%xmm0\n\tmovdqu 16(%0), %%xmm1\n\t"
			 "movdqu 32(%0), %%xmm2\n\tmovdqu 48(%0), %%xmm3\n\t"
			 "movdqu 64(%0), %%xmm4\n\tmovdqu 80(%0), %%xmm5\n\t"
			 "movdqu 96(%0), %%xmm6\n\tmovdqu 112(%0), %%xmm7\n\t"
			 "movdqu 128(%0), %%xmm8\n\tmovdqu 144(%0), %%xmm9\n\t"
			 "movdqu 160(%0), %%xmm10\n\tmovdqu 176(%0), %%xmm11\n\t"
			 "movdqu 192(%0), %%xmm12\n\tmovdqu 208(%0), %%xmm13\n\t"
			 "movdqu 224(%0), %%xmm14\n\tmovdqu 240(%0), %%xmm15\n\t"
			 "1: pause\n\tcmpl $0, (%2)\n\tje 1b\n\t"
			 "movdqu %%xmm0, 0(%1)\n\tmovdqu %%xmm1, 16(%1)\n\t"
			 "movdqu %%xmm2, 32(%1)\n\tmovdqu %%xmm3, 48(%1)\n\t"
			 "movdqu %%xmm4, 64(%1)\n\tmovdqu %%xmm5, 80(%1)\n\t"
			 "movdqu %%xmm6, 96(%1)\n\tmovdqu %%xmm7, 112(%1)\n\t"
			 "movdqu %%xmm8, 128(%1)\n\tmovdqu %%xmm9, 144(%1)\n\t"
			 "movdqu %%xmm10, 160(%1)\n\tmovdqu %%xmm11, 176(%1)\n\t"
			 "movdqu %%xmm12, 192(%1)\n\tmovdqu %%xmm13, 208(%1)\n\t"
			 "movdqu %%xmm14, 224(%1)\n\tmovdqu %%xmm15, 240(%1)\n\t"
			 :
			 : "r"(pattern), "r"(seen), "r"(&stop)
			 : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
			   "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
			   "xmm15");
	return NULL;
}

static void *watch(void *arg)
{
	const struct timespec tick = {0, 2000000};

	(void)arg;
	while (access(stop_path, F_OK))
		nanosleep(&tick, NULL);
	stop = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t spinner, watcher;
	int bad = -1;

	if (argc < 3)
		return 2;
	ready_path = argv[1];
	stop_path = argv[2];
	for (int r = 0; r < 16; r++)
		for (int i = 0; i < 16; i++)
			pattern[r][i] = (unsigned char)(0x5a ^ (r * 16 + i) * 7);
	/* The spinner first: the injector tries threads in the order of their ids. */
	if (pthread_create(&spinner, NULL, spin, NULL) ||
	    pthread_create(&watcher, NULL, watch, NULL))
		return 2;
	pthread_join(spinner, NULL);
	pthread_join(watcher, NULL);
	for (int r = 0; r < 16 && bad < 0; r++)
		if (memcmp(pattern[r], seen[r], 16))
			bad = r;
	if (bad >= 0)
		printf("result=xmm%d changed\n", bad);
	else
		printf("result=ok\n");
	return bad >= 0;
}
