/*
 * Allocation sites on real programs (the rule of userspace/output/site.c):
 * a C++ program whose allocating functions return non-void types and grow
 * std::vector, std::map and std::string, and a C program using SQLite
 * through its C API.  The text report's top sites are the programs' own
 * functions at the lines that allocate; go tool pprof's flat column (the
 * profile's drop_frames) agrees; the CSVs carry the site's file and line;
 * --lines and --short-names shape folded and text names.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_util.h"

#define RATE "0.001"
/* Rows above this share are "top sites". */
#define TOP_SHARE 2.0

/* Lines of source holding marker, into lines (at most max); their count. */
static int marked_lines(const char *source, const char *marker, int *lines, int max)
{
	FILE *f = fopen(source, "r");
	char l[1024];
	int n = 0, no = 0;

	cr_assert(f, "no %s", source);
	while (fgets(l, sizeof(l), f) && n < max) {
		no++;
		if (strstr(l, marker))
			lines[n++] = no;
	}
	fclose(f);
	return n;
}

struct top_row {
	double share;
	char site[1024];
};

/* The alloc view's rows by site of a text report, largest first. */
static int alloc_rows(const char *report, struct top_row *rows, int max)
{
	const char *sec = strstr(report, "\n== alloc ("), *end, *l;
	int n = 0;

	cr_assert(sec, "no alloc section:\n%s", report);
	end = strstr(sec + 1, "\n== ");
	for (l = strstr(sec, "-- by site\n"); l && l < end && n < max; l = strchr(l + 1, '\n')) {
		const char *p = l + 1, *q, *eol = strchr(p, '\n');

		if (sscanf(p, "%lf%%", &rows[n].share) != 1)
			continue;
		/* share bytes [lo, hi] objects [lo, hi] samples site */
		q = strchr(p, ']');
		q = q ? strchr(q + 1, ']') : NULL;
		cr_assert(q && q < eol, "unparsable row: %.300s", p);
		q++;
		q += strspn(q, " ");
		q += strspn(q, "0123456789");
		q += strspn(q, " ");
		snprintf(rows[n].site, sizeof(rows[n].site), "%.*s", (int)(eol - q), q);
		n++;
	}
	return n;
}

/* The line of a site label "name (file:line)" if file ends with source's basename; else 0. */
static int site_line(const char *site, const char *source)
{
	const char *base = strrchr(source, '/') ? strrchr(source, '/') + 1 : source;
	const char *open = strrchr(site, '('), *colon;
	char want[128];

	if (!open || !(colon = strrchr(open, ':')))
		return 0;
	snprintf(want, sizeof(want), "%s:", base);
	if ((size_t)(colon + 1 - open) < strlen(want) ||
	    strncmp(colon + 1 - strlen(want), want, strlen(want)))
		return 0;
	return atoi(colon + 1);
}

/* go tool pprof -top: the functions of the rows whose flat share is at least TOP_SHARE. */
static void pprof_flat_tops(const char *pb, const char *const allowed[], int n_allowed)
{
	char cmd[512], *out, *l;
	int rows = 0;

	snprintf(cmd, sizeof(cmd), "HOME=/tmp go tool pprof -top '%s' 2>&1", pb);
	out = out_command(cmd);
	cr_assert(out && (l = strstr(out, " flat%")), "go tool pprof -top:\n%s", out);
	for (l = strchr(l, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
		double flat, share;
		char unit[16];
		int used = 0, ok = 0;

		if (sscanf(l + 1, "%lf%15[a-zA-Z] %lf%%%*s %*s %*s %n", &flat, unit, &share,
			   &used) < 3 ||
		    !used)
			continue;
		if (share < TOP_SHARE)
			continue;
		for (int k = 0; k < n_allowed; k++)
			ok |= !strncmp(l + 1 + used, allowed[k], strlen(allowed[k]));
		cr_expect(ok, "pprof's flat top is not the program's: %.200s", l + 1);
		rows++;
	}
	cr_expect_geq(rows, 2, "no flat top in:\n%s", out);
	free(out);
}

/* The header of a CSV file ends with ",pid,file,line"; some row names file:line. */
static void csv_has_lines(const char *path, const char *source, int line)
{
	char *csv = out_file(path), *nl, want[160];
	const char *base = strrchr(source, '/') + 1;

	cr_assert(csv && (nl = strchr(csv, '\n')), "no %s", path);
	cr_expect(nl - csv > 14 && !strncmp(nl - 14, ",pid,file,line", 14), "header: %.*s",
		  (int)(nl - csv), csv);
	snprintf(want, sizeof(want), "%s,%d\n", base, line);
	cr_expect(strstr(csv, want), "no row ending in '%s' in %s:\n%.2000s", want, path, csv);
	free(csv);
}

Test(output_sites, cxx_functions_returning_values, .timeout = 120)
{
	static const char *const funcs[] = {"grow_prices", "index_names", "build_report",
					    "make_series"};
	const char *source = "tests/output/progs/cxx_sites.cpp";
	char dir[128], txt[256], pb[256], folded[256], csv[256], want[256], *report, *text;
	struct top_row rows[64];
	int n, seen[4] = {0}, lines[4];

	out_tmpdir(dir, sizeof(dir));
	snprintf(txt, sizeof(txt), "%s/sites.txt", dir);
	snprintf(pb, sizeof(pb), "%s/sites.pb.gz", dir);
	snprintf(folded, sizeof(folded), "%s/sites.folded", dir);
	snprintf(csv, sizeof(csv), "%s/lifetimes.csv", dir);
	for (int k = 0; k < 4; k++) {
		char marker[64];

		snprintf(marker, sizeof(marker), "LINE:%s", funcs[k]);
		lines[k] = out_source_line(source, marker);
		cr_assert_gt(lines[k], 0);
	}
	const char *args[] = {"-o",	     txt,    "-o",	pb,
			      "-o",	     folded, "--lines", "--short-names",
			      "--lifetimes", csv,    NULL};
	cr_assert_eq(out_profile("cxx_sites", dir, RATE, args), 0, "the profiled run failed");
	report = out_file(txt);
	cr_assert(report);
	n = alloc_rows(report, rows, 64);
	cr_assert_geq(n, 4, "%s", report);
	for (int i = 0; i < n && rows[i].share >= TOP_SHARE; i++) {
		int k, line;

		for (k = 0; k < 4 && !strstr(rows[i].site, funcs[k]); k++)
			;
		cr_expect(k < 4 && strstr(rows[i].site, "shop::"),
			  "top site %d is not the program's: %s", i, rows[i].site);
		if (k == 4)
			continue;
		line = site_line(rows[i].site, source);
		cr_expect_eq(line, lines[k], "%s: line %d, the allocation is on line %d",
			     rows[i].site, line, lines[k]);
		seen[k] = 1;
	}
	for (int k = 0; k < 4; k++)
		cr_expect(seen[k], "no top site %s in:\n%s", funcs[k], report);
	/* --short-names: the template function's return type and arguments as <...>. */
	cr_expect(strstr(report, "std::vector<...> shop::make_series<...>(int) ("), "%s", report);
	cr_expect(strstr(report, "shop::grow_prices(std::vector<...>&, int) ("), "%s", report);
	free(report);

	/* --lines: folded frames "func (file:line)". */
	text = out_file(folded);
	cr_assert(text);
	snprintf(want, sizeof(want), "shop::grow_prices(std::vector<...>&, int) (%s:%d)", source,
		 lines[0]);
	cr_expect(strstr(text, want), "no '%s' in:\n%.3000s", want, text);
	cr_expect(strstr(text, "main (") && strstr(text, "cxx_sites.cpp:"), "%.2000s", text);
	free(text);

	csv_has_lines(csv, source, lines[0]);
	pprof_flat_tops(pb,
			(const char *const[]){"shop::", "std::vector<long, std::allocator<long> "
							"> shop::make_series"},
			2);
}

Test(output_sites, sqlite_through_its_c_api, .timeout = 120)
{
	static const char *const funcs[] = {"load_rows", "query_rows", "main"};
	const char *source = "tests/output/progs/sqlite_sites.c";
	char dir[128], txt[256], pb[256], tl[256], *report;
	struct top_row rows[64];
	int n, n_lines, lines[32], seen[3] = {0}, tops = 0;

	out_tmpdir(dir, sizeof(dir));
	snprintf(txt, sizeof(txt), "%s/sites.txt", dir);
	snprintf(pb, sizeof(pb), "%s/sites.pb.gz", dir);
	snprintf(tl, sizeof(tl), "%s/timeline.csv", dir);
	n_lines = marked_lines(source, "/* LINE */", lines, 32);
	cr_assert_geq(n_lines, 5);
	const char *args[] = {"-o", txt, "-o", pb, "--timeline", tl, NULL};
	cr_assert_eq(out_profile("sqlite_sites", dir, RATE, args), 0, "the profiled run failed");
	report = out_file(txt);
	cr_assert(report);
	n = alloc_rows(report, rows, 64);
	for (int i = 0; i < n && rows[i].share >= TOP_SHARE; i++) {
		int k, line, marked = 0;

		for (k = 0; k < 3 && strncmp(rows[i].site, funcs[k], strlen(funcs[k])); k++)
			;
		cr_expect(k < 3, "top site %d is not the program's: %s\n%s", i, rows[i].site,
			  report);
		line = site_line(rows[i].site, source);
		for (int j = 0; j < n_lines; j++)
			marked |= lines[j] == line;
		cr_expect(marked, "%s: line %d is no call into SQLite", rows[i].site, line);
		if (k < 3)
			seen[k] = 1;
		tops++;
	}
	cr_expect_geq(tops, 2, "%s", report);
	cr_expect(seen[0] && seen[1], "load_rows and query_rows are not both top sites:\n%s",
		  report);
	cr_expect(!strstr(report, "libsqlite3"), "a site in libsqlite3:\n%s", report);
	free(report);

	{
		char *csv = out_file(tl);

		cr_assert(csv);
		const char *head = "time_s,gcs,site,live_bytes,live_samples,pid,file,line\n";

		cr_expect(!strncmp(csv, head, strlen(head)), "%.200s", csv);
		cr_expect(strstr(csv, ",load_rows,") && strstr(csv, "sqlite_sites.c,"), "%.2000s",
			  csv);
		free(csv);
	}
	pprof_flat_tops(pb, funcs, 3);
}
