/*
 * Lifetimes end to end (bpf/memprof.bpf.c's histograms, the loader's
 * --lifetimes CSV, -v histograms, text report, SVG and pprof): a program
 * under the malloc host with sites of known lifetimes
 * (tests/lifetimes/progs/lifetimes_prog.c, "sites"): blocks living about
 * 1.45 ms and about 190 ms, and blocks that never die.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lifetimes_util.h"
#include "profile.pb-c.h"

#define RATE "0.001"
#define RATE_NUM 0.001

struct run {
	char dir[64], csv[128], out[128], err[128], txt[128], svg[128], pb[128];
};

static void run_sites(struct run *r)
{
	lt_tmpdir(r->dir, sizeof(r->dir));
	cr_assert(r->dir[0], "no temporary directory");
	snprintf(r->csv, sizeof(r->csv), "%s/lifetimes.csv", r->dir);
	snprintf(r->out, sizeof(r->out), "%s/prog.out", r->dir);
	snprintf(r->err, sizeof(r->err), "%s/loader.err", r->dir);
	snprintf(r->txt, sizeof(r->txt), "%s/report.txt", r->dir);
	snprintf(r->svg, sizeof(r->svg), "%s/flame.svg", r->dir);
	snprintf(r->pb, sizeof(r->pb), "%s/profile.pb.gz", r->dir);
	{
		const char *extra[] = {"--lifetimes", r->csv, "-v", "-o",  r->txt,
				       "-o",	      r->svg, "-o", r->pb, NULL};
		int code = lt_run("sites", r->dir, RATE, extra);

		cr_assert_eq(code, 0, "loader exit %d: %s", code, read_file(r->err));
	}
}

/* The program's own median lifetime of a site, in milliseconds. */
static double prog_median_ms(const struct run *r, const char *site)
{
	char key[64];
	double us;

	snprintf(key, sizeof(key), "median_us %s", site);
	cr_assert_eq(file_value(r->out, key, &us), 0, "no '%s' in the program's output", key);
	return us / 1000;
}

/* Samples of a site: Binomial(blocks * BLOCK_WORDS, rate). */
static void check_samples(const struct run *r, const char *site, double blocks)
{
	double samples = lt_csv_num(r->csv, site, "samples");

	cr_assert(within_binomial(samples, blocks * BLOCK_WORDS, RATE_NUM),
		  "%s: %g samples, expected %g +- %g", site, samples,
		  blocks * BLOCK_WORDS * RATE_NUM, binomial_bound(blocks * BLOCK_WORDS, RATE_NUM));
}

Test(lifetimes, two_sites_p50_in_their_log2_slots, .timeout = 90)
{
	struct run r;
	char *header;
	double blocks;

	run_sites(&r);
	header = lt_first_line(r.csv);
	cr_assert(header, "no %s", r.csv);
	cr_assert(!strncmp(header, "site,samples,p50_ms,p90_ms,p99_ms,still_live",
			   strlen("site,samples,p50_ms,p90_ms,p99_ms,still_live")) &&
		      (header[44] == '\0' || header[44] == ','),
		  "header: %s", header);
	free(header);

	/* ~1.45 ms: slot [1024, 2048) us, as the program measured it. */
	{
		double p50 = lt_csv_num(r.csv, "site_short", "p50_ms");
		double want = prog_median_ms(&r, "site_short");

		cr_assert(!isnan(p50), "no site_short row: %s", read_file(r.csv));
		cr_assert_eq(lt_log2_us(want), 10,
			     "the program's own median %g ms left its slot "
			     "(machine too loaded?)",
			     want);
		cr_assert_eq(lt_log2_us(p50), lt_log2_us(want),
			     "site_short p50 %g ms, the program measured %g ms", p50, want);
		cr_assert_eq(lt_csv_num(r.csv, "site_short", "still_live"), 0);
		cr_assert_eq(file_value(r.out, "blocks site_short", &blocks), 0);
		check_samples(&r, "site_short", blocks);
	}
	/* ~190 ms: slot [131072, 262144) us. */
	{
		double p50 = lt_csv_num(r.csv, "site_long", "p50_ms");
		double want = prog_median_ms(&r, "site_long");

		cr_assert(!isnan(p50), "no site_long row: %s", read_file(r.csv));
		cr_assert_eq(lt_log2_us(want), 17, "the program's own median %g ms left its slot",
			     want);
		cr_assert_eq(lt_log2_us(p50), lt_log2_us(want),
			     "site_long p50 %g ms, the program measured %g ms", p50, want);
	}
	/* The two sites' slots are seven apart: 2^7 = 128 times longer. */
	cr_assert_eq(lt_log2_us(lt_csv_num(r.csv, "site_long", "p50_ms")) -
			 lt_log2_us(lt_csv_num(r.csv, "site_short", "p50_ms")),
		     7);
}

Test(lifetimes, site_never_freed_is_still_live_with_a_lower_bound, .timeout = 90)
{
	struct run r;
	char bound[32];
	double held, samples, live, youngest, p50;

	run_sites(&r);
	cr_assert_eq(file_value(r.out, "forever_held_ms", &held), 0);
	samples = lt_csv_num(r.csv, "site_forever", "samples");
	live = lt_csv_num(r.csv, "site_forever", "still_live");
	youngest = lt_csv_num(r.csv, "site_forever", "youngest_live_ms");
	p50 = lt_csv_num(r.csv, "site_forever", "p50_ms");
	cr_assert(samples > 0, "no site_forever row: %s", read_file(r.csv));
	check_samples(&r, "site_forever", 400);
	cr_assert_eq(live, samples, "site_forever: %g of %g samples still live", live, samples);
	cr_assert_eq(lt_csv_num(r.csv, "site_forever", "died_young") +
			 lt_csv_num(r.csv, "site_forever", "died_old"),
		     0);
	cr_assert_eq(lt_csv_cell(r.csv, "site_forever", "bound_from", bound, sizeof(bound)), 0);
	cr_assert_str_eq(bound, "p50", "every percentile of site_forever is a lower bound");
	/* Each block was alive for at least the program's last held time. */
	cr_assert(youngest >= held, "youngest live %g ms, held %g ms", youngest, held);
	/* The p50 lies in the slot of ages of at least held: at least half of it. */
	cr_assert(p50 >= held / 2, "p50 %g ms below its lower bound %g ms", p50, held / 2);
	/* The short site's blocks all died, and none of its percentiles is censored. */
	cr_assert_eq(lt_csv_cell(r.csv, "site_short", "bound_from", bound, sizeof(bound)), 0);
	cr_assert_str_eq(bound, "none");
}

/* The -v histograms, the text report, the SVG tooltips and pprof agree with the CSV. */
Test(lifetimes, other_outputs_show_the_same_percentiles, .timeout = 90)
{
	struct run r;
	char *err, *txt, *svg, *h, *row, *line_end;
	double p50 = 0;

	run_sites(&r);
	err = read_file(r.err);
	cr_assert(err);
	/* The -v histogram of site_short: its fullest bar is the 1.02 .. 2.05 ms slot. */
	h = strstr(err, "\nsite site_short: lifetime p50 ");
	cr_assert(h, "no histogram of site_short: %s", err);
	row = strstr(h, "1.02 ms .. 2.05 ms");
	cr_assert(row, "no 1.02 ms .. 2.05 ms slot: %.2000s", h);
	line_end = strchr(row, '\n');
	cr_assert(line_end && line_end - row > 40 &&
		      strstr(row, "|****************************************|") &&
		      strstr(row, "|****************************************|") < line_end,
		  "the 1.02 .. 2.05 ms bar is not the fullest: %.300s", row);

	/* Text report: the lifetime table's p50 of site_long, as the CSV says. */
	txt = read_file(r.txt);
	cr_assert(txt && (h = strstr(txt, "\n== lifetimes")), "no lifetime table");
	row = strstr(h, "site_long");
	cr_assert(row);
	while (row > h && row[-1] != '\n')
		row--;
	{
		unsigned long long n, y, o, l;
		char cell[32], unit[8];

		/* A percentile reads "193 ms", or ">=193 ms" when a lower bound. */
		cr_assert_eq(
		    sscanf(row, "%llu %llu %llu %llu %31s %7s", &n, &y, &o, &l, cell, unit), 6,
		    "row: %.200s", row);
		p50 = strtod(cell + (strncmp(cell, ">=", 2) ? 0 : 2), NULL);
		cr_assert_str_eq(unit, "ms");
		cr_assert_eq((double)n, lt_csv_num(r.csv, "site_long", "samples"));
		cr_assert(fabs(p50 - lt_csv_num(r.csv, "site_long", "p50_ms")) <= 0.01 * p50,
			  "report p50 %g, CSV %g", p50, lt_csv_num(r.csv, "site_long", "p50_ms"));
	}

	/* SVG: the tooltips' lifetimes are in its data (tests/output/test_svg_browser.c
	 * sees them drawn). */
	svg = read_file(r.svg);
	cr_assert(svg && strstr(svg, "\"site_short\""), "no site_short frame");
	cr_assert(strstr(svg, "\"lifetime p50 "), "no lifetime for the tooltips");

	/* pprof: a comment per site, and numeric labels on the samples. */
	{
		gzFile gz = gzopen(r.pb, "rb");
		static uint8_t buf[1 << 22];
		int len, comments = 0, labelled = 0;
		Pprof__Profile *pb;

		cr_assert(gz);
		len = gzread(gz, buf, sizeof(buf));
		gzclose(gz);
		cr_assert(len > 0);
		pb = pprof__profile__unpack(NULL, (size_t)len, buf);
		cr_assert(pb, "pprof does not decode");
		for (size_t i = 0; i < pb->n_comment; i++)
			comments += !strncmp(pb->string_table[pb->comment[i]],
					     "lifetimes of site site_long: ", 29);
		for (size_t i = 0; i < pb->n_sample; i++)
			for (size_t k = 0; k < pb->sample[i]->n_label; k++)
				labelled +=
				    !strcmp(pb->string_table[pb->sample[i]->label[k]->key],
					    "lifetime_p50") &&
				    !strcmp(pb->string_table[pb->sample[i]->label[k]->num_unit],
					    "microseconds");
		cr_assert_eq(comments, 1, "comments for site_long: %d", comments);
		cr_assert(labelled > 0, "no lifetime_p50 label");
		pprof__profile__free_unpacked(pb, NULL);
	}
	free(err);
	free(txt);
	free(svg);
}

/*
 * attach PID PID: lifetimes and the timeline are per process.  The sites
 * program and the steps program under one loader: each site's CSV row
 * names its own process in the pid column, site_short's p50 is still in
 * its log2 slot, and the timeline's site_step rows belong to the steps
 * program.
 */
Test(lifetimes, two_processes_each_site_in_its_own_process, .timeout = 120)
{
	const char *modes[] = {"sites", "steps"};
	char dir[64], csv[128], tl[128], err[128], cell[64], line[512];
	int pids[2], code, step_rows = 0;
	FILE *f;

	lt_tmpdir(dir, sizeof(dir));
	cr_assert(dir[0], "no temporary directory");
	snprintf(csv, sizeof(csv), "%s/lifetimes.csv", dir);
	snprintf(tl, sizeof(tl), "%s/timeline.csv", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	{
		const char *extra[] = {"--lifetimes", csv, "--timeline", tl, NULL};

		code = lt_run_multi(modes, 2, dir, RATE, extra, pids);
		cr_assert_eq(code, 0, "loader exit %d: %s", code, read_file(err));
	}
	cr_assert_eq(lt_csv_cell(csv, "site_short", "pid", cell, sizeof(cell)), 0,
		     "no site_short row: %s", read_file(csv));
	cr_assert_eq(atoi(cell), pids[0], "site_short in pid %s, not %d", cell, pids[0]);
	cr_assert_eq(lt_csv_cell(csv, "site_step", "pid", cell, sizeof(cell)), 0,
		     "no site_step row: %s", read_file(csv));
	cr_assert_eq(atoi(cell), pids[1], "site_step in pid %s, not %d", cell, pids[1]);
	cr_assert_eq(lt_log2_us(lt_csv_num(csv, "site_short", "p50_ms")), 10,
		     "site_short p50 %g ms", lt_csv_num(csv, "site_short", "p50_ms"));
	f = fopen(tl, "r");
	cr_assert(f, "no %s", tl);
	cr_assert(fgets(line, sizeof(line), f));
	cr_assert_str_eq(line, "time_s,gcs,site,live_bytes,live_samples,pid,file,line\n");
	while (fgets(line, sizeof(line), f)) {
		char site[128];
		int pid = 0;

		if (sscanf(line, "%*[^,],%*[^,],%127[^,],%*[^,],%*[^,],%d", site, &pid) == 2 &&
		    !strcmp(site, "site_step")) {
			cr_assert_eq(pid, pids[1], "timeline: site_step in pid %d", pid);
			step_rows++;
		}
	}
	fclose(f);
	cr_assert(step_rows > 0, "no site_step point in the timeline");
}
