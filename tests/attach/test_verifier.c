/*
 * The kernel's verifier checks each BPF program the loader loads in a few
 * times the program's own length, not once per path through it.  A count,
 * not a time: the "N verified" of each program in the start-up line of
 * attach -v (the verifier's own statistics).  When sample_one was inlined
 * in the batch's bpf_loop callback (bpf/memprof.bpf.c), the kernel
 * verified memprof_samples in 688,456 instructions (705 per instruction of
 * the program) and 1.4 s, and with the loader's 1 KiB statistics log it
 * refused the load with ENOSPC: every attach to a malloc host failed.
 * Both sample programs are checked: the reference runtime's trigger
 * (memprof_sample) and a preloaded malloc host (memprof_samples).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_util.h"
#include "exit_codes.h"
#include "testlib.h"

/* Instructions processed per instruction of the program, at most
 * (memprof_events, the highest, is about 5). */
#define MAX_VERIFIED_PER_INSN 10
#define PRELOAD_LIB "build/libmemprof-preload.so"

/* Check every "NAME: X insns, Y verified" of err's start-up line; whether
 * program want was among them. */
static int expect_programs_verified_within(const char *err, const char *want)
{
	char *text = read_file(err), *line, *list, *save = NULL;
	int seen = 0, n = 0;

	cr_assert_not_null(text, "cannot read %s", err);
	line = strstr(text, "start-up: ");
	cr_assert_not_null(line, "no start-up line in: %s", text);
	*strchrnul(line, '\n') = '\0';
	list = strstr(line, " (");
	cr_assert_not_null(list, "no programs in: %s", line);
	*strchrnul(list, ')') = '\0';
	for (char *p = strtok_r(list + 2, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
		char name[64];
		unsigned long insns, verified;

		cr_assert_eq(
		    sscanf(p, " %63[^:]: %lu insns, %lu verified", name, &insns, &verified), 3,
		    "cannot read '%s'", p);
		cr_expect(insns > 0 && verified > 0, "%s: no statistics", name);
		cr_expect_leq(verified, MAX_VERIFIED_PER_INSN * insns,
			      "%s: verified in %lu instructions for %lu", name, verified, insns);
		seen |= !strcmp(name, want);
		n++;
	}
	cr_expect_gt(n, 0, "no program in the start-up line");
	free(text);
	return seen;
}

static void attach_verbose(pid_t t, const char *dir, const char *want)
{
	char err[300], pid[16];

	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid, "-d", "0.1", "-v", "-o", "/dev/null", NULL};
	cr_assert_eq(loader_run(err, args), EXIT_OK, "the loader failed: %s", read_file(err));
	cr_expect(expect_programs_verified_within(err, want), "%s was not loaded", want);
}

Test(verifier, each_program_is_verified_in_a_few_times_its_length, .timeout = 120)
{
	char dir[128], out[300];
	const char *targs[] = {"--seconds", "600", NULL};
	const char *sleeper[] = {"/bin/sleep", "600", NULL};
	const char *env[] = {"LD_PRELOAD=" PRELOAD_LIB, NULL};
	pid_t t;

	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/trigger.out", dir);
	t = trigger_start(dir, out, targs);
	cr_assert_gt(t, 0, "the trigger did not start");
	attach_verbose(t, dir, "memprof_sample");
	kill(t, SIGKILL);
	wait_exit(t);

	t = test_spawn(sleeper, env, NULL, NULL);
	cr_assert_gt(t, 0);
	cr_assert_eq(wait_mapped(t, "libmemprof-preload.so"), 0,
		     "sleep never mapped the malloc host");
	attach_verbose(t, dir, "memprof_samples");
	kill(t, SIGKILL);
	wait_exit(t);
}
