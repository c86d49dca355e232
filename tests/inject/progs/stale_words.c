/*
 * A sleeping thread whose live frame holds stale addresses inside malloc:
 * an earlier call chain ran through malloc at the same depth, and a large
 * local array of the frame that then blocks in read() was never written.
 * Its real call chain is main -> wait_in_read -> read: safe.  A check that
 * takes every stack word for a return address refuses it forever.
 *
 *   stale_words READY FIFO
 *
 * READY once blocked soon; reads one byte from FIFO, prints "result=ok"
 * and exits 0.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DEPTH 64

static int fd = -1;
static volatile unsigned long sink;

/* Deep frames that call malloc: its return addresses stay in the stack. */
static __attribute__((noinline)) void dirty(int depth)
{
	volatile char pad[128];

	pad[0] = (char)depth;
	if (depth < DEPTH)
		dirty(depth + 1);
	for (int i = 0; i < 16; i++) {
		void *p = malloc(2048 + (size_t)i * 1000); /* past the tcache: into _int_malloc */

		sink += (unsigned long)p;
		free(p);
	}
	sink += (unsigned long)pad[0];
}

/* A frame as deep as dirty's chain, its array left as it was. */
static __attribute__((noinline)) int wait_in_read(const char *ready)
{
	volatile char stale[DEPTH * 192];
	char byte;
	int r;

	__asm__ volatile("" : : "r"(stale) : "memory"); /* the array exists, unwritten */
	r = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (r < 0 || write(r, "ready\n", 6) != 6)
		return 2;
	close(r);
	return read(fd, &byte, 1) == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 3)
		return 2;
	fd = open(argv[2], O_RDWR);
	if (fd < 0)
		return 2;
	dirty(0);
	rc = wait_in_read(argv[1]);
	printf("result=%s\n", rc ? "read failed" : "ok");
	return rc;
}
