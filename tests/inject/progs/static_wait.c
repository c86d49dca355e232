/* Linked statically: memprof-bpf must refuse to inject into it. */
#include <unistd.h>

int main(void)
{
	sleep(60);
	return 0;
}
