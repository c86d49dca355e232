/*
 * The thread the injector must use has a small stack (PTHREAD_STACK_MIN,
 * 16 KiB), most of it in use: it recurses DEPTH frames of FRAME_BYTES each,
 * then blocks in read() of one byte from FIFO.  The main thread waits in
 * pthread_join (code a call to dlopen must not interrupt), so the small
 * thread is the only one the injector may use.
 *
 *   smallstack READY FIFO
 *
 * READY gets the small thread's id, written with system calls only just
 * before its read.  Once the byte came, each frame checks its own bytes;
 * prints "result=ok" (or what went wrong) and exits 0 when all is well.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEPTH 10
#define FRAME_BYTES 1024

static const char *ready_path, *fifo_path;
static int fifo_fd = -1;
static const char *result = "ok";

static void write_ready(void)
{
	char text[16] = {0};
	long tid = syscall(SYS_gettid);
	int n = 0, fd;

	for (long t = tid; t; t /= 10)
		n++;
	for (int i = n - 1; i >= 0; i--, tid /= 10)
		text[i] = (char)('0' + tid % 10);
	text[n] = '\n';
	fd = open(ready_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, (size_t)n + 1) != n + 1)
		result = "cannot write READY";
	if (fd >= 0)
		close(fd);
}

static __attribute__((noinline)) int descend(int depth)
{
	volatile unsigned char frame[FRAME_BYTES];
	int bad = 0;

	for (int i = 0; i < FRAME_BYTES; i++)
		frame[i] = (unsigned char)(depth * 31 + i);
	if (depth + 1 < DEPTH) {
		bad = descend(depth + 1);
	} else {
		char byte;

		write_ready();
		if (read(fifo_fd, &byte, 1) != 1)
			result = "read failed";
	}
	for (int i = 0; i < FRAME_BYTES; i++)
		bad += frame[i] != (unsigned char)(depth * 31 + i);
	return bad;
}

static void *small(void *arg)
{
	(void)arg;
	if (descend(0))
		result = "a frame of the small thread changed";
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t t;

	if (argc < 3)
		return 2;
	ready_path = argv[1];
	fifo_path = argv[2];
	fifo_fd = open(fifo_path, O_RDWR);
	if (fifo_fd < 0 || pthread_attr_init(&attr) ||
	    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN) ||
	    pthread_create(&t, &attr, small, NULL))
		return 2;
	pthread_join(t, NULL);
	printf("result=%s\n", result);
	return strcmp(result, "ok") != 0;
}
