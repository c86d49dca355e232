/*
 * attach PID PID: one profile of two processes.  Every folded stack starts
 * with "comm (pid)", both processes are there, and each pprof sample has
 * the pid label of its process, with the same bytes as the folded stacks.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli_util.h"
#include "exit_codes.h"
#include "profile.pb-c.h"

static double pprof_alloc_of_pid(const char *path, long pid, size_t *unlabelled)
{
	gzFile z = gzopen(path, "rb");
	static unsigned char buf[64 << 20];
	int n = z ? gzread(z, buf, sizeof(buf)) : -1;
	Pprof__Profile *p;
	double sum = 0;
	int alloc = -1;

	if (z)
		gzclose(z);
	cr_assert_gt(n, 0, "cannot read %s", path);
	p = pprof__profile__unpack(NULL, (size_t)n, buf);
	cr_assert(p, "%s does not decode", path);
	for (size_t i = 0; i < p->n_sample_type; i++)
		if (!strcmp(p->string_table[p->sample_type[i]->type], "alloc_space"))
			alloc = (int)i;
	cr_assert_geq(alloc, 0);
	*unlabelled = 0;
	for (size_t i = 0; i < p->n_sample; i++) {
		const Pprof__Sample *s = p->sample[i];
		long label = -1;

		for (size_t k = 0; k < s->n_label; k++)
			if (!strcmp(p->string_table[s->label[k]->key], "pid"))
				label = (long)s->label[k]->num;
		if (label < 0)
			(*unlabelled)++;
		if (label == pid)
			sum += (double)s->value[alloc];
	}
	pprof__profile__free_unpacked(p, NULL);
	return sum;
}

Test(cli_multi, two_pids_one_profile)
{
	char dir[128], out[256], err[256], folded[256], pb[256], p1[16], p2[16], root[64];
	pid_t a, b;
	size_t unlabelled;
	FILE *f;
	char *line = NULL;
	size_t len = 0;
	int lines = 0, bad = 0;

	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(folded, sizeof(folded), "%s/two.folded", dir);
	snprintf(pb, sizeof(pb), "%s/two.pb.gz", dir);
	a = cli_trigger(dir);
	b = cli_trigger(dir);
	cr_assert(a > 0 && b > 0);
	snprintf(p1, sizeof(p1), "%d", (int)a);
	snprintf(p2, sizeof(p2), "%d", (int)b);
	const char *args[] = {"attach", p1,   p2,     "-v", "-d", "1.5", "--rate",
			      "0.01",	"-o", folded, "-o", pb,	  NULL};
	cr_expect_eq(cli_run(out, err, args), EXIT_OK);
	kill(a, SIGTERM);
	kill(b, SIGTERM);
	wait_exit(a);
	wait_exit(b);
	/* One stats line per process (-v). */
	snprintf(root, sizeof(root), "stats: pid %d ", (int)a);
	cr_expect(file_contains(err, root));
	snprintf(root, sizeof(root), "stats: pid %d ", (int)b);
	cr_expect(file_contains(err, root));

	f = fopen(folded, "r");
	cr_assert(f);
	while (getline(&line, &len, f) > 0) {
		char ra[64], rb[64];

		snprintf(ra, sizeof(ra), "trigger (%d);", (int)a);
		snprintf(rb, sizeof(rb), "trigger (%d);", (int)b);
		lines++;
		bad += strncmp(line, ra, strlen(ra)) && strncmp(line, rb, strlen(rb));
	}
	free(line);
	fclose(f);
	cr_expect_gt(lines, 0);
	cr_expect_eq(bad, 0, "%d stacks do not start with their process", bad);
	for (int k = 0; k < 2; k++) {
		pid_t pid = k ? b : a;
		double fs, ps;

		snprintf(root, sizeof(root), "trigger (%d);", (int)pid);
		fs = folded_sum(folded, root);
		ps = pprof_alloc_of_pid(pb, pid, &unlabelled);
		cr_expect_gt(fs, 0, "process %d missing", (int)pid);
		cr_expect_eq(fs, ps, "pid %d: folded %.0f, pprof %.0f", (int)pid, fs, ps);
		cr_expect_eq(unlabelled, 0, "%zu pprof samples without a pid label", unlabelled);
	}
}
