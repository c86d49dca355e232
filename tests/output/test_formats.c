/*
 * The SVG flame graph (well-formed, self-contained, holds the sites with
 * their share and interval), the format chosen by extension or --format, and
 * bad format arguments as one line with exit 1.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

	/* --format wins over the extension; the view is --view's. */
	const char *args2[] = {"-o", forced, "--format", "svg", "--view", "live", NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args2), 0);
	text = out_file(forced);
	cr_assert(text);
	cr_expect(strstr(text, "<svg") && strstr(text, "live view"));
	cr_expect(!strstr(text, "site_temporary"), "a short-lived site in the live view");
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
