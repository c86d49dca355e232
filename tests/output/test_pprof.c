/*
 * The pprof output read by go tool pprof: the alloc_space and inuse_space
 * tops of a program with known sites match its exact shares (5.7 sigma),
 * -lines names the right file:line, every view is a sample type; and libc's
 * own frames are named (libc6-dbg) where --no-dwarf leaves them module+0xOFF.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_util.h"

#define RATE "0.01"
#define BYTES_PER_SAMPLE 800.0 /* 8 / RATE */
#define SOURCE "tests/output/progs/known_sites.c"
#define N_SITES 3

static const char *const sites[N_SITES] = {"site_kept_small", "site_kept_large", "site_temporary"};
/* Exact words of each site (known_sites.c): 20000 x 25, 2000 x 500, 100000 x 15. */
static const double words[N_SITES] = {500000, 1000000, 1500000};
static const int kept[N_SITES] = {1, 1, 0};

/* Flat bytes of function name in a `go tool pprof -top -unit=B` output. */
static double flat_bytes(const char *top, const char *name)
{
	for (const char *l = top; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l), k = strlen(name);

		if (len > k && !strncmp(l + len - k, name, k) && l[len - k - 1] == ' ')
			return strtod(l, NULL);
	}
	return 0;
}

static char *pprof(const char *args, const char *file)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "HOME=/tmp PPROF_TMPDIR=/tmp go tool pprof %s '%s' 2>/dev/null",
		 args, file);
	return out_command(cmd);
}

static void check_shares(const char *top, int live_only)
{
	double n[N_SITES], total = 0, total_words = 0;

	for (int s = 0; s < N_SITES; s++) {
		if (live_only && !kept[s]) {
			cr_expect_eq(flat_bytes(top, sites[s]), 0, "%s is not live", sites[s]);
			continue;
		}
		n[s] = flat_bytes(top, sites[s]) / BYTES_PER_SAMPLE;
		total += n[s];
		total_words += words[s];
	}
	cr_assert_gt(total, 10000, "too few samples: %.0f\n%s", total, top);
	for (int s = 0; s < N_SITES; s++) {
		double p, sd;

		if (live_only && !kept[s])
			continue;
		p = words[s] / total_words;
		sd = sqrt(total * p * (1 - p));
		cr_expect(fabs(n[s] - total * p) <= SIGMAS * sd,
			  "%s: %.0f samples, expected %.1f +- %.1f", sites[s], n[s], total * p, sd);
	}
}

Test(output_pprof, go_pprof_tops_lines_and_sample_types)
{
	char dir[128], pb[256], folded[256];
	char *top, *lines, *raw;

	out_tmpdir(dir, sizeof(dir));
	snprintf(pb, sizeof(pb), "%s/profile.pb.gz", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	const char *args[] = {"-o", pb, "-o", folded, NULL};
	cr_assert_eq(out_profile("known_sites", dir, RATE, args), 0, "the profiled run failed");

	top = pprof("-sample_index=alloc_space -unit=B -top -nodecount=100", pb);
	cr_assert(top && strstr(top, "Type: alloc_space"), "go tool pprof cannot read it:\n%s",
		  top ? top : "");
	check_shares(top, 0);
	free(top);
	top = pprof("-sample_index=inuse_space -unit=B -top -nodecount=100", pb);
	cr_assert(top && strstr(top, "Type: inuse_space"));
	check_shares(top, 1);
	free(top);

	lines = pprof("-sample_index=alloc_space -lines -top -nodecount=100", pb);
	cr_assert(lines);
	out_expect_site_lines(lines, SOURCE, sites, N_SITES);
	free(lines);

	raw = pprof("-raw", pb);
	cr_assert(raw);
	cr_expect(strstr(raw, "alloc_objects/count alloc_space/bytes") &&
		      strstr(raw, "inuse_objects/count inuse_space/bytes") &&
		      strstr(raw, "promoted_objects/count promoted_space/bytes") &&
		      strstr(raw, "short_objects/count short_space/bytes"),
		  "sample types missing:\n%.2000s", raw);
	cr_expect(strstr(raw, "PeriodType: space bytes") && strstr(raw, "Period: 800\n"));
	cr_expect(strstr(raw, "sampling rate 0.01 per word"));
	/* Mappings with build ids: "0x...: /path/known_sites <40 hex digits>". */
	cr_expect(strstr(raw, "progs/known_sites "), "no mapping of the program:\n%s",
		  strstr(raw, "Mappings") ? strstr(raw, "Mappings") : raw);
	free(raw);
}

/* libc's frames: named with file:line from libc6-dbg; not without DWARF. */
Test(output_pprof, libc_frames_are_named_from_its_debug_file)
{
	char dir[128], pb[256], folded[256], *text, *lines;

	out_tmpdir(dir, sizeof(dir));
	snprintf(pb, sizeof(pb), "%s/profile.pprof", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	const char *args[] = {"-o", pb, "-o", folded, NULL};
	cr_assert_eq(out_profile("known_sites", dir, RATE, args), 0);
	text = out_file(folded);
	cr_assert(text && *text);
	/* __libc_start_call_main is not exported: only the debug file names it. */
	cr_expect(strstr(text, ";__libc_start_call_main;"), "libc frame unnamed:\n%.1500s", text);
	cr_expect(!strstr(text, "libc.so.6+0x"), "an unnamed libc frame:\n%.1500s", text);
	free(text);
	lines = pprof("-sample_index=alloc_space -lines -top -nodecount=100", pb);
	cr_expect(lines && strstr(lines, "libc_start_call_main.h:"), "no libc source line:\n%s",
		  lines ? lines : "");
	free(lines);

	/* The same without DWARF: symbol tables only. */
	const char *bare[] = {"-o", folded, "--no-dwarf", NULL};
	cr_assert_eq(out_profile("known_sites", dir, RATE, bare), 0);
	text = out_file(folded);
	cr_assert(text && *text);
	cr_expect(strstr(text, "libc.so.6+0x"), "--no-dwarf named a hidden libc frame");
	cr_expect(strstr(text, ";site_kept_small "), "--no-dwarf lost the program's symbols");
	free(text);
}
