/*
 * A program that looks like a CPython of a version the Python host does
 * not read (3.12.1): it exports PyMem_SetAllocator and Py_Version (linked
 * with -rdynamic), as an embedding program would, under a name that is not
 * "python".  The loader must refuse it, untouched.
 *
 *   fake_cpython READY_FILE    writes READY_FILE, then waits for SIGTERM
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

const unsigned long Py_Version = 0x030c01f0ul;

void PyMem_SetAllocator(int domain, void *allocator)
{
	(void)domain;
	(void)allocator;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 1;
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	for (;;)
		pause();
}
