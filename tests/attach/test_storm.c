/*
 * Standing checks: an attach/detach storm on a multithreaded target (BPF
 * objects, the target's fds and RSS flat, its result unchanged), and a
 * loader killed with SIGKILL (sampling stops, a new loader attaches).
 */
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>
#include "memprof_probe_abi.h"
#include "attach_util.h"
#include "exit_codes.h"

#define THREADS_BIN "build/tests/attach/progs/threads"
#define PRELOAD_LIB "build/libmemprof-preload.so"
#define STORM_CYCLES 50
#define STORM_THREADS "2"
/* RSS the target may gain over the storm (its allocator's noise). */
#define RSS_SLACK_KB 4096
/* libbpf's name of the loader's .rodata map (object memprof_bpf). */
#define RODATA_MAP_NAME "memprof_.rodata"

static char dir[128], err[192];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir));
	cr_assert(dir[0]);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
}

/* The loader's BPF maps alive for this pid (its .rodata holds the tgid). */
static int bpf_objects_of(pid_t pid)
{
	__u32 id = 0;
	int n = 0;

	while (!bpf_map_get_next_id(id, &id)) {
		struct bpf_map_info info = {0};
		__u32 len = sizeof(info), key = 0;
		int fd = bpf_map_get_fd_by_id(id);
		unsigned char value[256];

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    !strcmp(info.name, RODATA_MAP_NAME) && info.value_size <= sizeof(value) &&
		    info.value_size >= 4 && !bpf_map_lookup_elem(fd, &key, value)) {
			__u32 tgid;

			memcpy(&tgid, value, sizeof(tgid));
			n += tgid == (__u32)pid;
		}
		close(fd);
	}
	return n;
}

static int fd_count(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static long rss_kb(pid_t pid)
{
	char path[64], *text, *at;
	long kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = read_file(path);
	at = text ? strstr(text, "VmRSS:") : NULL;
	if (at)
		kb = strtol(at + strlen("VmRSS:"), NULL, 10);
	free(text);
	return kb;
}

/* The kernel frees a closed loader's objects a little later: wait for it. */
static int bpf_objects_settled(pid_t pid)
{
	int n = bpf_objects_of(pid);

	for (int i = 0; i < 100 && n; i++) {
		nanosleep(&(struct timespec){0, 30000000}, NULL);
		n = bpf_objects_of(pid);
	}
	return n;
}

Test(standing, attach_detach_storm_on_a_multithreaded_target, .init = setup, .timeout = 900)
{
	char ready[256], tout[256], out[256], pid[16], preload[512];
	long rss0 = 0, rss1;
	int fds0 = 0, fds1, failed = 0, n_bpf;
	double samples = 0;
	double v;
	pid_t t;

	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(tout, sizeof(tout), "%s/threads.out", dir);
	snprintf(out, sizeof(out), "%s/out.folded", dir);
	cr_assert(realpath(PRELOAD_LIB, preload));
	setenv("LD_PRELOAD", preload, 1);
	char *argv[] = {THREADS_BIN, STORM_THREADS, ready, NULL};
	t = spawn(argv, tout, NULL);
	unsetenv("LD_PRELOAD");
	cr_assert_gt(t, 0);
	cr_assert_eq(wait_file(ready, TEST_EVENT_TIMEOUT_S), 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid, "-v", "-d", "0.1", "--rate", "1e-3", "-o", out, NULL};
	for (int c = 0; c < STORM_CYCLES; c++) {
		int rc = loader_run(err, args);

		if (rc != EXIT_OK && !failed++)
			cr_expect_eq(rc, EXIT_OK, "cycle %d: %s", c, read_file(err));
		/* One 0.1 s cycle may see no sample on a loaded machine; the storm
		 * as a whole must. */
		if (loader_stat(err, "samples") > 0)
			samples += loader_stat(err, "samples");
		if (c == 0) {
			cr_expect_eq(bpf_objects_settled(t), 0, "BPF objects left after one cycle");
			/* After the first cycle: the preload's table exists. */
			fds0 = fd_count(t);
			rss0 = rss_kb(t);
		}
	}
	fds1 = fd_count(t);
	rss1 = rss_kb(t);
	n_bpf = bpf_objects_settled(t);
	cr_log_info("storm: %d cycles, target fds %d -> %d, RSS %ld -> %ld kB, BPF objects "
		    "left %d",
		    STORM_CYCLES, fds0, fds1, rss0, rss1, n_bpf);
	cr_expect_eq(failed, 0, "%d cycles failed", failed);
	cr_expect_gt(samples, 0, "the storm samples nothing");
	cr_expect_eq(fds1, fds0, "the target's fds grew");
	cr_expect_lt(rss1 - rss0, RSS_SLACK_KB, "the target's RSS grew");
	cr_expect_eq(n_bpf, 0, "BPF objects left for the target");
	kill(t, SIGTERM);
	cr_expect_eq(wait_exit(t), 0);
	cr_assert_eq(file_value(tout, "errors", &v), 0, "no result");
	cr_expect_eq(v, 0, "the target's result changed");
	cr_expect_eq(file_value(tout, "rounds", &v), 0);
	cr_expect_gt(v, 0);
}

Test(standing, a_killed_loader_stops_sampling_and_another_attaches, .init = setup)
{
	const char *targs[] = {"--seconds", "600", NULL};
	char tout[256], pid[16];
	pid_t t, l;

	snprintf(tout, sizeof(tout), "%s/trigger.out", dir);
	t = trigger_start(dir, tout, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid, "-d", "600", "--rate", "0.01", NULL};
	l = loader_start(err, args);
	cr_assert_eq(wait_target_control(t, control_sampling_on), 0,
		     "the target never started sampling");
	kill(l, SIGKILL);
	cr_expect_eq(wait_exit(l), 128 + SIGKILL);
	/* The kernel drops the killed loader's uprobes: the target stops. */
	cr_expect_eq(wait_target_control(t, control_sampling_off), 0,
		     "sampling went on after the loader was killed");
	const char *again[] = {"attach", pid, "-v", "-d", "0.5", "--rate", "0.01", NULL};
	cr_expect_eq(loader_run(err, again), EXIT_OK);
	cr_expect_gt(loader_stat(err, "samples"), 0, "a new loader saw no sample");
	cr_expect_eq(loader_stat(err, "orphan_ids"), 0);
	kill(t, SIGTERM);
	wait_exit(t);
}
