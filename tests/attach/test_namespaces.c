/*
 * A target in its own mount namespace (a container), traced from the host:
 * its executable sits at a path where the host sees nothing, a different
 * program, or an identical copy.  The loader must read and probe the
 * target's own file (through /proc/PID/root), and see every sample.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach_util.h"
#include "exit_codes.h"

#define UNSHARE "/usr/bin/unshare"

enum host_view { HOST_NOTHING, HOST_OTHER_PROGRAM, HOST_IDENTICAL_COPY };

static void traced_in_a_namespace(enum host_view hv)
{
	static const char *const sites[] = {"site_short_lived", "site_medium_lived",
					    "site_long_lived", "site_major_blocks"};
	char dir[128], ns[192], err[256], tout[256], ready[256], out[256], script[2048];
	char cmd[512], pid[16], lready[256];
	struct site_table trig, alloc;
	pid_t t;

	tmpdir_make(dir, sizeof(dir));
	cr_assert(dir[0]);
	snprintf(ns, sizeof(ns), "%s/ns", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(tout, sizeof(tout), "%s/trigger.out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(lready, sizeof(lready), "%s/loader.ready", dir);
	snprintf(out, sizeof(out), "%s/alloc.folded", dir);
	cr_assert_eq(mkdir(ns, 0755), 0);
	/* What the host sees at the target's path. */
	if (hv != HOST_NOTHING) {
		snprintf(cmd, sizeof(cmd), "cp %s %s/trigger",
			 hv == HOST_OTHER_PROGRAM ? WORKLOAD_BIN : TRIGGER_BIN, ns);
		cr_assert_eq(system(cmd), 0);
	}
	/* The target's own copy, on a tmpfs only its namespace sees.  It starts
	 * once the loader is attached (the loader's --ready-file). */
	snprintf(script, sizeof(script),
		 "mount -t tmpfs none %s && cp %s %s/trigger && exec %s/trigger --ready-file %s "
		 "--wait-tracers 1 --start-file %s --iterations 100000",
		 ns, TRIGGER_BIN, ns, ns, ready, lready);
	char *argv[] = {UNSHARE, "-m", "--propagation", "private", "/bin/sh", "-c", script, NULL};
	t = spawn(argv, tout, NULL);
	cr_assert_gt(t, 0);
	cr_assert_eq(wait_file(ready, TEST_EVENT_TIMEOUT_S), 0,
		     "the namespaced trigger did not start");
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid, "--rate",	     "0.01", "-d", "600",
			      "-o",	out, "--ready-file", lready, NULL};
	cr_expect_eq(loader_run(err, args), EXIT_OK);
	/* Done by now, unless no tracer attached to its own file. */
	kill(t, SIGTERM);
	cr_assert_eq(wait_exit(t), 0, "the trigger saw no tracer: %s", read_file(err));
	cr_assert_eq(site_table_read_lines(tout, &trig), 0);
	cr_assert_eq(site_table_read_folded(out, &alloc), 0);
	for (int s = 0; s < 4; s++)
		cr_expect_eq(site_value(&alloc, sites[s], 0), site_value(&trig, sites[s], 4),
			     "alloc %s", sites[s]);
	cr_expect(!file_contains(err, "semaphore dropped"), "false 'semaphore dropped' note");
}

Test(namespaces, target_file_invisible_from_the_host)
{
	traced_in_a_namespace(HOST_NOTHING);
}

Test(namespaces, another_program_at_the_targets_path)
{
	traced_in_a_namespace(HOST_OTHER_PROGRAM);
}

Test(namespaces, identical_copy_at_the_targets_path)
{
	traced_in_a_namespace(HOST_IDENTICAL_COPY);
}
