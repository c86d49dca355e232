/*
 * A dynamically linked program that carries a .go.buildinfo section, as Go
 * executables do: memprof-bpf must refuse to inject into it (Go's runtime
 * does not allocate through malloc).  Writes READY (argv[1]), then waits.
 */
#include <stdio.h>
#include <unistd.h>

__attribute__((section(".go.buildinfo"), used)) static const char buildinfo[32] =
    "\xff Go buildinf:";

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "w") : NULL;

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		return 2;
	sleep(60);
	return 0;
}
