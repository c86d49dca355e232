/* A statically linked program without memprof probes: sleeps for argv[1] s. */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 30);
	return 0;
}
