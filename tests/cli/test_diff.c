/*
 * diff of two known profiles: the folded output is flamegraph.pl's
 * "stack BASE NEW" for every stack of either side, the pprof output holds
 * the signed differences, the text output says what grew and shrank and
 * which change is within the noise.  And a real run read as folded and as
 * pprof is the same profile (no difference at all).
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

static char dir[128], out[256], err[256], base[256], nw[256];

/* 800 bytes per sample (rate 0.01). */
static void setup(void)
{
	FILE *f;

	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(base, sizeof(base), "%s/base.folded", dir);
	snprintf(nw, sizeof(nw), "%s/new.folded", dir);
	f = fopen(base, "w");
	fputs("main;a;site_grew 80000\n"    /* 100 samples */
	      "main;b;site_shrank 800000\n" /* 1000 */
	      "main;c;site_noise 8000\n"    /* 10 */
	      "main;d;site_gone 40000\n"    /* 50 */
	      "main;c;site_noise 800\n",    /* merged with the line above: 11 */
	      f);
	fclose(f);
	f = fopen(nw, "w");
	fputs("main;a;site_grew 160000\n"   /* 200 */
	      "main;b;site_shrank 400000\n" /* 500 */
	      "main;c;site_noise 9600\n"    /* 12 */
	      "main;e;site_new 24000\n",    /* 30 */
	      f);
	fclose(f);
}

Test(cli_diff, folded_is_flamegraph_differential, .init = setup)
{
	const char *args[] = {"diff", base, nw, NULL};
	const char *want = "main;a;site_grew 80000 160000\n"
			   "main;b;site_shrank 800000 400000\n"
			   "main;c;site_noise 8800 9600\n"
			   "main;d;site_gone 40000 0\n"
			   "main;e;site_new 0 24000\n";
	char *text;

	cr_assert_eq(cli_run(out, err, args), EXIT_OK);
	text = read_file(out);
	cr_assert(text);
	cr_expect_str_eq(text, want);
	free(text);
}

Test(cli_diff, text_grew_shrank_noise, .init = setup)
{
	const char *args[] = {"diff", base, nw, "--format=text", NULL};
	char *text, *grew, *shrank;

	cr_assert_eq(cli_run(out, err, args), EXIT_OK);
	text = read_file(out);
	cr_assert(text);
	grew = strstr(text, "grew most");
	shrank = strstr(text, "shrank most");
	cr_assert(grew && shrank && grew < shrank, "%s", text);
	/* +78.12 KiB is 100 samples more than 100: far outside the noise. */
	cr_expect(strstr(grew, "+78.12 KiB"), "%s", text);
	cr_expect(strstr(grew, "real    site_grew"), "%s", text);
	cr_expect(strstr(grew, "noise   site_noise"), "%s", text);
	cr_expect(strstr(grew, "site_new") < shrank, "%s", text);
	cr_expect(strstr(shrank, "-390.6 KiB"), "%s", text);
	cr_expect(strstr(shrank, "real    site_shrank"), "%s", text);
	cr_expect(strstr(shrank, "site_gone"), "%s", text);
	/* The grew list is largest first. */
	cr_expect(strstr(grew, "site_grew") < strstr(grew, "site_new"), "%s", text);
	cr_expect(strstr(text, "1 site(s) changed within the noise"), "%s", text);
	free(text);
}

static Pprof__Profile *read_pprof(const char *path)
{
	static unsigned char buf[16 << 20];
	gzFile z = gzopen(path, "rb");
	int n = z ? gzread(z, buf, sizeof(buf)) : -1;

	if (z)
		gzclose(z);
	cr_assert_gt(n, 0);
	return pprof__profile__unpack(NULL, (size_t)n, buf);
}

Test(cli_diff, pprof_signed, .init = setup)
{
	char pb[256];
	Pprof__Profile *p;
	int alloc = -1;
	double grew = 0, shrank = 0, total = 0;

	snprintf(pb, sizeof(pb), "%s/diff.pb.gz", dir);
	const char *args[] = {"diff", base, nw, "-o", pb, NULL};
	cr_assert_eq(cli_run(out, err, args), EXIT_OK);
	p = read_pprof(pb);
	cr_assert(p);
	for (size_t i = 0; i < p->n_sample_type; i++)
		if (!strcmp(p->string_table[p->sample_type[i]->type], "alloc_space"))
			alloc = (int)i;
	cr_assert_geq(alloc, 0);
	for (size_t i = 0; i < p->n_sample; i++) {
		const Pprof__Sample *s = p->sample[i];
		const Pprof__Location *leaf = NULL;
		const char *name;

		for (size_t l = 0; l < p->n_location; l++)
			if (p->location[l]->id == s->location_id[0])
				leaf = p->location[l];
		cr_assert(leaf);
		name = p->string_table[p->function[leaf->line[0]->function_id - 1]->name];
		if (!strcmp(name, "site_grew"))
			grew = (double)s->value[alloc];
		if (!strcmp(name, "site_shrank"))
			shrank = (double)s->value[alloc];
		total += (double)s->value[alloc];
		cr_expect_eq(s->n_location_id, 3);
	}
	cr_expect_eq(grew, 80000);
	cr_expect_eq(shrank, -400000);
	cr_expect_eq(total, 80000 - 400000 + 800 - 40000 + 24000);
	pprof__profile__free_unpacked(p, NULL);
}

/* One real run, written as folded and as pprof: the same stacks and bytes. */
Test(cli_diff, folded_and_pprof_of_one_run_agree, .init = setup)
{
	char pid[16], fo[256], pb[256], line[4096];
	pid_t t = cli_trigger(dir);
	FILE *f;
	int lines = 0, differ = 0;

	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	snprintf(fo, sizeof(fo), "%s/run.folded", dir);
	snprintf(pb, sizeof(pb), "%s/run.pb.gz", dir);
	const char *args[] = {"attach", pid, "-d", "1", "--rate", "0.01", "-o", fo, "-o", pb, NULL};
	cr_assert_eq(cli_run(out, err, args), EXIT_OK);
	kill(t, SIGTERM);
	wait_exit(t);
	const char *d[] = {"diff", fo, pb, NULL};
	cr_assert_eq(cli_run(out, err, d), EXIT_OK);
	f = fopen(out, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		char *b = strrchr(line, ' ');
		char *a;

		*b = '\0';
		a = strrchr(line, ' ');
		lines++;
		differ += atof(a + 1) != atof(b + 1);
	}
	fclose(f);
	cr_expect_gt(lines, 0);
	cr_expect_eq(differ, 0, "%d of %d stacks differ", differ, lines);
}
