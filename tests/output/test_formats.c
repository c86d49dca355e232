/*
 * The SVG flame graph (well-formed, self-contained, holds the sites with
 * their share and interval), the format chosen by extension or --format, and
 * bad format arguments as one line with exit 1.  No traps: a known
 * extension wins over --format (a note says so), -o - is standard output,
 * and combinations that cannot work are one line and exit 1.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exit_codes.h"
#include "output_util.h"

Test(output_formats, svg_is_well_formed_and_holds_the_sites)
{
	char dir[128], svg[256], forced[256], cmd[512], *text, *out;

	out_tmpdir(dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/alloc.svg", dir);
	snprintf(forced, sizeof(forced), "%s/flame.data", dir);
	const char *args[] = {"-o", svg, NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args), 0);
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s' 2>&1 && echo well-formed", svg);
	out = out_command(cmd);
	cr_expect(out && strstr(out, "well-formed"), "xmllint: %s", out ? out : "");
	free(out);
	text = out_file(svg);
	cr_assert(text);
	cr_expect(!strncmp(text, "<?xml", 5));
	cr_expect(strstr(text, "<script") && strstr(text, "function zoomTo"), "no script");
	for (const char *s = "site_kept_small\0site_kept_large\0site_temporary\0run_batch\0"; *s;
	     s += strlen(s) + 1)
		cr_expect(strstr(text, s), "no %s in the SVG", s);
	cr_expect(strstr(text, "95% interval ["), "no interval in the tooltips");
	cr_expect(!strstr(text, "href=\"http"), "not self-contained");
	free(text);

	/* --format decides for a name without a known extension; the view is --view's. */
	const char *args2[] = {"-o", forced, "--format", "svg", "--view", "live", NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args2), 0);
	text = out_file(forced);
	cr_assert(text);
	cr_expect(strstr(text, "<svg") && strstr(text, "live view"));
	/* Every view is in the file; the one drawn without the script is live. */
	cr_expect(strstr(text, "<g id=\"frames\">") &&
		      !strstr(strstr(text, "<g id=\"frames\">"), "site_temporary"),
		  "a short-lived site drawn in the live view");
	free(text);
}

Test(output_formats, bad_format_is_one_line_and_exit_1)
{
	char cmd[256], *out;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s attach 1 --format png 2>&1; echo rc=$?", LOADER_BIN);
	out = out_command(cmd);
	cr_assert(out);
	cr_expect(strstr(out, "unknown format 'png'"), "%s", out);
	cr_expect(sscanf(strstr(out, "rc=") ? strstr(out, "rc=") : "", "rc=%d", &rc) == 1 &&
		      rc == EXIT_USAGE,
		  "%s", out);
	cr_expect_eq(strchr(out, '\n') + 1, strstr(out, "rc="), "not one line: %s", out);
	free(out);
}

static int starts_gzip(const char *path)
{
	unsigned char m[2] = {0};
	FILE *f = fopen(path, "rb");
	int ok = f && fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b;

	if (f)
		fclose(f);
	return ok;
}

/* Lines of text holding needle. */
static int count(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

Test(output_formats, a_known_extension_wins_over_format, .timeout = 120)
{
	char dir[128], txt[256], svg[256], data[256], folded[256], errp[256];
	char *text, *err;

	out_tmpdir(dir, sizeof(dir));
	snprintf(txt, sizeof(txt), "%s/py.txt", dir);
	snprintf(svg, sizeof(svg), "%s/py.svg", dir);
	snprintf(data, sizeof(data), "%s/py.data", dir);
	snprintf(folded, sizeof(folded), "%s/py.folded", dir);
	snprintf(errp, sizeof(errp), "%s/loader.err", dir);
	const char *args[] = {"--format", "pprof", "-o", txt,	 "-o", svg,
			      "-o",	  data,	   "-o", folded, NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args), 0, "the profiled run failed");
	text = out_file(txt);
	cr_expect(text && strstr(text, "site_kept_large") && !starts_gzip(txt),
		  "py.txt is not the text report");
	free(text);
	text = out_file(svg);
	cr_expect(text && !strncmp(text, "<?xml", 5) && strstr(text, "<svg"),
		  "py.svg is not an SVG");
	free(text);
	text = out_file(folded);
	cr_expect(text && strstr(text, ";site_kept_large ") && !starts_gzip(folded),
		  "py.folded is not folded");
	free(text);
	cr_expect(starts_gzip(data), "py.data (no known extension) is not --format's pprof");
	err = out_file(errp);
	cr_assert(err);
	cr_expect_eq(count(err, "by its extension (--format pprof"), 3,
		     "not one note per overridden file:\n%s", err);
	cr_expect(strstr(err, "py.txt is written as text"), "%s", err);
	free(err);
}

Test(output_formats, dash_is_standard_output, .timeout = 120)
{
	char dir[128], out[256], svg[256], *text;
	int lines = 0;

	cr_assert_neq(access("-", F_OK), 0, "a file named - is in the way");
	out_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/stdout", dir);
	snprintf(svg, sizeof(svg), "%s/alloc.svg", dir);
	/* As `-o - --format folded | flamegraph.pl` reads it, beside a file. */
	const char *args[] = {"-o", "-", "--format", "folded", "-o", svg, NULL};
	cr_assert_eq(out_profile_stdout("known_sites", dir, "0.01", args, out), 0,
		     "the profiled run failed");
	cr_expect_neq(access("-", F_OK), 0, "wrote a file named -");
	text = out_file(out);
	cr_assert(text);
	for (char *l = text, *nl; *l; l = nl + 1) {
		char *sp;

		nl = strchr(l, '\n');
		cr_assert(nl, "an unfinished line: %.200s", l);
		*nl = '\0';
		sp = strrchr(l, ' ');
		cr_expect(sp && strchr(l, ';') && strtoll(sp + 1, NULL, 10) > 0,
			  "not a folded line: %.200s", l);
		*nl = '\n';
		lines++;
	}
	cr_expect_gt(lines, 2);
	cr_expect(strstr(text, ";site_kept_small "), "no site in the folded stdout");
	free(text);
	text = out_file(svg);
	cr_expect(text && strstr(text, "<svg"), "the SVG beside it was not written");
	free(text);
	/* Without --format, standard output is folded too. */
	const char *plain[] = {"-o", "-", NULL};
	cr_assert_eq(out_profile_stdout("known_sites", dir, "0.01", plain, out), 0);
	text = out_file(out);
	cr_expect(text && strstr(text, ";site_kept_large ") && !starts_gzip(out), "%.200s",
		  text ? text : "");
	free(text);
}

/* Combinations that cannot work: one line, exit 1, before any target is touched. */
Test(output_formats, impossible_combinations_are_one_line_and_exit_1)
{
	static const char *const cases[][2] = {
	    {"attach 1 -o - -o -", "standard output (-) can take one output"},
	    {"attach 1 -o - --timeline -", "standard output (-) can take one output"},
	    {"top 1 -o -", "draws on standard output"},
	    {"diff a.folded b.folded -o d.svg", "not SVG"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char cmd[512], *out;
		int rc;

		snprintf(cmd, sizeof(cmd), "%s %s 2>&1 >/dev/null; echo rc=$?", LOADER_BIN,
			 cases[i][0]);
		out = out_command(cmd);
		cr_assert(out);
		cr_expect(strstr(out, cases[i][1]), "%s: %s", cases[i][0], out);
		cr_expect(sscanf(strstr(out, "rc=") ? strstr(out, "rc=") : "", "rc=%d", &rc) == 1 &&
			      rc == EXIT_USAGE,
			  "%s: %s", cases[i][0], out);
		cr_expect_eq(strchr(out, '\n') + 1, strstr(out, "rc="), "%s: not one line: %s",
			     cases[i][0], out);
		free(out);
	}
}
