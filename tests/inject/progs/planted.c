/*
 * A library planted at the malloc host's path inside a target's private
 * mount namespace (tests/inject/test_vetting.c): if anything loads it, its
 * constructor writes the file named by $PLANTED_MARK.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void planted_runs(void)
{
	const char *mark = getenv("PLANTED_MARK");
	int fd = mark ? open(mark, O_WRONLY | O_CREAT, 0644) : -1;

	if (fd >= 0)
		close(fd);
}
