/*
 * Runs under a seccomp filter (one that allows everything): memprof-bpf
 * must refuse to inject into it (exit 3).  Prints "filtered" and writes
 * READY (argv[1]) once the filter is in place, then waits.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {.len = 1, .filter = allow};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return 1;
	}
	printf("filtered\n");
	fflush(stdout);
	FILE *f = argc > 1 ? fopen(argv[1], "w") : NULL;
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		return 2;
	sleep(60);
	return 0;
}
