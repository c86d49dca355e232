/*
 * A program whose library (libprivuser.so, loaded with RTLD_DEEPBIND)
 * allocates through a private allocator: its blocks must never reach the
 * process's allocator, before or after an injection.  Cycles blocks until
 * STOP exists; READY once it runs.  Prints "result=ok" and exits 0.
 *
 *   privmain READY STOP LIBDIR
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Static: an uninitialised buffer on the stack would keep stale words of
 * the dynamic loader's start-up, which the injector's stack scan refuses. */
static char path[4096];

int main(int argc, char **argv)
{
	int (*cycle)(long);
	void *h;
	long i = 0;
	int bad = 0, fd;

	if (argc < 4)
		return 2;
	snprintf(path, sizeof(path), "%s/libprivuser.so", argv[3]);
	h = dlopen(path, RTLD_NOW | RTLD_DEEPBIND);
	cycle = h ? (int (*)(long))dlsym(h, "privuser_cycle") : NULL;
	if (!cycle) {
		printf("result=%s\n", dlerror());
		return 2;
	}
	for (; i < 1000; i++)
		bad += cycle(i);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "ready\n", 6) != 6)
		return 2;
	close(fd);
	while (access(argv[2], F_OK)) {
		for (int k = 0; k < 1000; k++, i++)
			bad += cycle(i);
		usleep(1000);
	}
	printf("result=%s\n", bad ? "a block changed" : "ok");
	return bad != 0;
}
