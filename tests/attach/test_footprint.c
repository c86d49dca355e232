/*
 * The loader's footprint on a program of 10,000 distinct call stacks
 * (tests/preload/progs/stacks many, under the malloc host): its peak RSS
 * stays under FOOTPRINT_MAX_RSS_KIB.  A guard against a return to
 * preallocation (stack slots of the deepest stack, arrays mapped whole):
 * the loader used to hold 138 MiB of mapped BPF arrays before any
 * symbolization.  The tight figures are in bench/tables/t9-footprint.sh.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach_util.h"

#define STACKS_BIN "build/tests/preload/progs/stacks"
#define PRELOAD_LIB "build/libmemprof-preload.so"
#define FOOTPRINT_PATHS "10000"
/* Passes over every path: at rate 1e-3 an 8 KiB block is sampled with
 * probability 0.64, so a path is missed in all 5 with probability 0.006. */
#define FOOTPRINT_ROUNDS "5"
#define FOOTPRINT_MIN_STACKS 9000
#define FOOTPRINT_MAX_RSS_KIB (64 * 1024)

/* Exit code of pid (128 + signal), its peak RSS in KiB in *rss_kib. */
static int wait_rusage(pid_t pid, long *rss_kib)
{
	struct rusage ru;
	int st;

	if (wait4(pid, &st, 0, &ru) != pid)
		return -1;
	*rss_kib = ru.ru_maxrss;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(footprint, ten_thousand_stacks_fit_in_64_mib_of_loader_rss)
{
	char dir[256], ready[300], out[300], err[300], folded[300], preload[4096];
	long rss_kib = 0;
	pid_t prog, loader;
	int code, lines;

	cr_assert(access(STACKS_BIN, X_OK) == 0, "%s is not built", STACKS_BIN);
	cr_assert(realpath(PRELOAD_LIB, preload), "%s is not built", PRELOAD_LIB);
	tmpdir_make(dir, sizeof(dir));
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(out, sizeof(out), "%s/stacks.out", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	{
		char *const argv[] = {STACKS_BIN,	"many",		 ready,
				      FOOTPRINT_ROUNDS, FOOTPRINT_PATHS, NULL};

		setenv("LD_PRELOAD", preload, 1);
		prog = spawn(argv, out, NULL);
		unsetenv("LD_PRELOAD");
	}
	cr_assert_gt(prog, 0);
	cr_assert_eq(wait_nonempty_file(ready, TEST_EVENT_TIMEOUT_S), 0, "stacks never started");
	char *pid = read_file(ready);
	cr_assert_not_null(pid);
	pid[strcspn(pid, "\n")] = 0;
	{
		char *const argv[] = {(char *)loader_bin(),
				      "attach",
				      pid,
				      "--rate",
				      "1e-3",
				      "-o",
				      folded,
				      "-v",
				      NULL};

		loader = spawn(argv, NULL, err);
	}
	cr_assert_gt(loader, 0);
	code = wait_rusage(loader, &rss_kib);
	cr_assert_eq(wait_exit(prog), 0, "stacks failed");
	cr_assert_eq(code, 0, "the loader exited %d: %s", code, read_file(err));
	lines = file_lines(folded);
	cr_assert_geq(lines, FOOTPRINT_MIN_STACKS, "only %d stacks in the profile", lines);
	cr_expect_leq(rss_kib, FOOTPRINT_MAX_RSS_KIB,
		      "the loader's peak RSS was %ld KiB with %d stacks (at most %d)", rss_kib,
		      lines, FOOTPRINT_MAX_RSS_KIB);
	free(pid);
}

/* The size in MiB after "NAME " in the start-up maps line of a -v log, or -1. */
static double map_mib(const char *log, const char *name)
{
	char key[64];
	const char *at = log ? strstr(log, "memprof-bpf: maps: ") : NULL;

	snprintf(key, sizeof(key), " %s ", name);
	at = at ? strstr(at, key) : NULL;
	return at ? strtod(at + strlen(key), NULL) : -1;
}

/* block_slots' MiB when attached at rate to pid (-v), a process under the preload. */
static double block_slots_mib(const char *dir, pid_t pid, const char *rate)
{
	char err[300], pidbuf[16], *log;
	double mib;

	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	const char *args[] = {"attach", pidbuf, "-d", "0.1",	   "--rate",
			      rate,	"-v",	"-o", "/dev/null", NULL};
	cr_assert_eq(loader_run(err, args), 0, "the loader failed: %s", read_file(err));
	log = read_file(err);
	mib = map_mib(log, "block_slots");
	free(log);
	return mib;
}

/*
 * The block map's home slots are sized from a first look at the target
 * (tracer_home_slots): four times the live samples its resident memory
 * holds at the rate, 16,384 slots (1 MiB) at the least.  A sleeping
 * process: 1 MiB; a python3 holding 512 MiB at rate 1e-4 (6,711 live
 * samples): 32,768 slots, 2 MiB.  The 16 MiB of the whole default size
 * before, whatever the target.
 */
Test(footprint, the_block_map_is_sized_from_the_target, .timeout = 120)
{
	char dir[256], ready[300], preload[4096], env_preload[4200];
	const char *sleeper[] = {"/bin/sleep", "600", NULL};
	const char *env[] = {env_preload, NULL};
	pid_t t;

	cr_assert(realpath(PRELOAD_LIB, preload), "%s is not built", PRELOAD_LIB);
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", preload);
	tmpdir_make(dir, sizeof(dir));
	t = test_spawn(sleeper, env, NULL, NULL);
	cr_assert_gt(t, 0);
	cr_assert_eq(wait_mapped(t, "libmemprof-preload.so"), 0);
	cr_expect_eq(block_slots_mib(dir, t, "1e-4"), 1.0, "a sleeping process");
	kill(t, SIGKILL);
	wait_exit(t);

	snprintf(ready, sizeof(ready), "%s/ready", dir);
	const char *holder[] = {"/usr/bin/python3", "-c",
				"import sys, time\n"
				"b = b'x' * (512 << 20)\n"
				"open(sys.argv[1], 'w').write('ready')\n"
				"time.sleep(600)\n",
				ready, NULL};
	t = test_spawn(holder, env, NULL, NULL);
	cr_assert_gt(t, 0);
	cr_assert_eq(wait_nonempty_file(ready, TEST_EVENT_TIMEOUT_S), 0, "python3 never held");
	cr_expect_eq(block_slots_mib(dir, t, "1e-4"), 2.0, "a process holding 512 MiB");
	kill(t, SIGKILL);
	wait_exit(t);
}
