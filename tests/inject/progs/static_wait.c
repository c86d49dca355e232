/*
 * Linked statically: memprof-bpf must refuse to inject into it.  Writes
 * READY (argv[1]), then waits.
 */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "w") : NULL;

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		return 2;
	sleep(60);
	return 0;
}
