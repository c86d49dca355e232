/*
 * Estimated objects on the reference runtime: memprof-bpf attached for real
 * to build/tests/attach/progs/sizes (blocks of 1 to 300 fields, one site
 * per size, minor heap up to 256 fields and major heap above) until it
 * exits.  At rate 1 each size's objects, samples and bytes are exact; at
 * 1e-3 its objects are within 5.7 standard deviations of its blocks, and so
 * are all sizes' together (objects_check.h).  A custom block counts as two
 * allocations, its block (4 words) and its out-of-heap memory (256 words,
 * no header), as Gc.Memprof's sources Normal and Custom do.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "attach_util.h"
#include "objects_check.h"

#define SIZES_BIN "build/tests/attach/progs/sizes"
#define SITE_FMT "site_w%03d"
#define CUSTOM_SITE "site_custom"
/* Words of one custom block, header included, and of its out-of-heap memory. */
#define CUSTOM_BLOCK_WORDS 4.0
#define CUSTOM_MEM_WORDS 256.0

/* The custom site's blocks, estimated objects, samples and bytes. */
struct custom_run {
	double blocks, objects, samples, bytes;
};

/* Bytes of the folded file's lines whose innermost frame is site. */
static double folded_site_bytes(const char *path, const char *site)
{
	char *text = read_file(path), *save = NULL;
	double sum = 0;

	cr_assert_not_null(text, "cannot read %s", path);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *inner;

		if (!sp)
			continue;
		*sp = '\0';
		inner = strrchr(line, ';');
		if (!strcmp(inner ? inner + 1 : line, site))
			sum += strtod(sp + 1, NULL);
	}
	free(text);
	return sum;
}

/* Run sizes (words per site, at least min_blocks each) traced at rate until it exits; fill r and c.
 */
static void run_sizes(const char *rate, const char *words, const char *min_blocks,
		      struct objects_run *r, struct custom_run *c)
{
	char *report;
	char dir[128], ready[256], out[256], err[256], txt[256], folded[256], pid[16];
	char *argv[] = {SIZES_BIN, ready, (char *)words, (char *)min_blocks, NULL};
	pid_t p;

	tmpdir_make(dir, sizeof(dir));
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(out, sizeof(out), "%s/sizes.out", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(txt, sizeof(txt), "%s/report.txt", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	p = spawn(argv, out, NULL);
	cr_assert_gt(p, 0);
	cr_assert_eq(wait_file(ready, TEST_EVENT_TIMEOUT_S), 0, "%s did not start", SIZES_BIN);
	snprintf(pid, sizeof(pid), "%d", (int)p);
	const char *largs[] = {"attach", pid, "-v", "--rate", rate, "-o", txt, "-o", folded, NULL};
	cr_assert_eq(loader_run(err, largs), 0, "the loader failed");
	cr_assert_eq(wait_exit(p), 0, "%s failed", SIZES_BIN);
	cr_expect_eq(loader_stat(err, "dropped"), 0, "samples dropped");
	objects_read(r, SITE_FMT, out, txt, folded);
	cr_assert_eq(file_value(out, "site " CUSTOM_SITE " blocks", &c->blocks), 0);
	report = read_file(txt);
	cr_assert_not_null(report);
	cr_assert_eq(objects_report_row(report, CUSTOM_SITE, &c->objects, &c->samples), 0,
		     "no " CUSTOM_SITE " in the report");
	free(report);
	c->bytes = folded_site_bytes(folded, CUSTOM_SITE);
}

Test(attach_objects, exact_at_rate_1_for_blocks_of_1_to_300_fields, .timeout = 120)
{
	struct objects_run r;
	struct custom_run c;
	double words = CUSTOM_BLOCK_WORDS + CUSTOM_MEM_WORDS;

	/* 200 blocks or more: one object too many in 300 is seen in the report's units. */
	run_sizes("1", "3000", "200", &r, &c);
	objects_expect_exact(&r, SITE_FMT);
	cr_expect_eq(c.objects, 2 * c.blocks, "custom: %.0f objects for %.0f blocks", c.objects,
		     c.blocks);
	cr_expect_eq(c.samples, words * c.blocks, "custom: %.0f samples for %.0f words", c.samples,
		     words * c.blocks);
	cr_expect_eq(c.bytes, 8 * words * c.blocks, "custom: %.0f bytes for %.0f words", c.bytes,
		     words * c.blocks);
}

Test(attach_objects, unbiased_at_rate_1e_3_for_blocks_of_1_to_300_fields, .timeout = 120)
{
	struct objects_run r;
	struct custom_run c;
	double rate = 1e-3, words = CUSTOM_BLOCK_WORDS + CUSTOM_MEM_WORDS, sd;

	run_sizes("0.001", "200000", "1", &r, &c);
	objects_expect_unbiased(&r, SITE_FMT, rate);
	/* Two estimates of c.blocks each: the blocks' and their memory's. */
	sd = sqrt(c.blocks * (1 - rate) / rate * (1 / CUSTOM_BLOCK_WORDS + 1 / CUSTOM_MEM_WORDS));
	cr_expect(within_binomial(c.samples, words * c.blocks, rate),
		  "custom: %.0f samples for %.0f words", c.samples, words * c.blocks);
	cr_expect_leq(fabs(c.objects - 2 * c.blocks), TEST_SIGMAS * sd + 0.5,
		      "custom: %.0f objects for %.0f blocks (sd %.1f)", c.objects, c.blocks, sd);
}
