/*
 * attach --every: snapshots named by time in the directory, in order, one
 * per interval and the last at the detach; their alloc weights add up to
 * the whole run's exactly.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "exit_codes.h"

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(cli_every, snapshots_add_up)
{
	char dir[128], out[256], err[256], whole[256], snaps[256], pid[16], path[512];
	char *names[64];
	int n = 0;
	double sum = 0;
	regex_t re;
	DIR *d;
	struct dirent *e;
	pid_t t;

	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(whole, sizeof(whole), "%s/whole.folded", dir);
	snprintf(snaps, sizeof(snaps), "%s/snaps", dir);
	t = cli_trigger(dir);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach",		pid,	   "-d", "3.5", "--rate",
			      "0.01",		"--every", "1",	 "-o",	whole,
			      "--snapshot-dir", snaps,	   NULL};
	cr_expect_eq(cli_run(out, err, args), EXIT_OK);
	kill(t, SIGTERM);
	wait_exit(t);
	cr_assert_eq(regcomp(&re, "^[0-9]{8}T[0-9]{6}\\.[0-9]{3}Z\\.folded$", REG_EXTENDED), 0);
	d = opendir(snaps);
	cr_assert(d, "no snapshot directory");
	while ((e = readdir(d)) && n < 64) {
		if (e->d_name[0] == '.')
			continue;
		cr_expect_eq(regexec(&re, e->d_name, 0, NULL, 0), 0, "bad name %s", e->d_name);
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	regfree(&re);
	/* At 1, 2 and 3 s, and the last at the detach (3.5 s). */
	cr_expect(n >= 3 && n <= 5, "%d snapshots", n);
	qsort(names, n, sizeof(*names), name_cmp);
	for (int i = 0; i < n; i++) {
		double s;

		snprintf(path, sizeof(path), "%s/%s", snaps, names[i]);
		s = folded_sum(path, NULL);
		cr_expect_geq(s, 0);
		if (i < n - 1)
			cr_expect_gt(s, 0, "snapshot %s is empty", names[i]);
		sum += s;
		free(names[i]);
	}
	cr_expect_gt(sum, 0);
	cr_expect_eq(sum, folded_sum(whole, NULL), "snapshots %.0f, whole run %.0f", sum,
		     folded_sum(whole, NULL));
}
