/*
 * A C++ program (a class template in nested namespaces filling std::vector
 * and std::map) profiled for real: its frames are demangled, std::vector's
 * inlined members are frames of their own (lines of one location in pprof),
 * and the text report's site is the program's own function.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_util.h"

Test(output_cxx, demangled_names_and_inline_frames)
{
	char dir[128], pb[256], folded[256], txt[256], cmd[512];
	char *text, *raw, *report, *locs;
	int inline_lines = 0;

	out_tmpdir(dir, sizeof(dir));
	snprintf(pb, sizeof(pb), "%s/cxx.pb.gz", dir);
	snprintf(folded, sizeof(folded), "%s/cxx.folded", dir);
	snprintf(txt, sizeof(txt), "%s/cxx.txt", dir);
	const char *args[] = {"-o", pb, "-o", folded, "-o", txt, NULL};
	cr_assert_eq(out_profile("cxx_app", dir, "0.001", args), 0, "the profiled run failed");

	text = out_file(folded);
	cr_assert(text && *text);
	cr_expect(strstr(text, ";app::fill(int);"), "no demangled app::fill:\n%.3000s", text);
	cr_expect(strstr(text, "std::vector<app::Point, std::allocator<app::Point> >::"),
		  "no demangled template member:\n%.3000s", text);
	cr_expect(strstr(text, ";operator new(unsigned long) "), "operator new not demangled");
	cr_expect(!strstr(text, ";_Z"), "a mangled frame:\n%.3000s", text);
	free(text);

	/* go tool pprof -raw prints a location's inlined lines indented below it. */
	snprintf(cmd, sizeof(cmd), "HOME=/tmp go tool pprof -raw '%s' 2>/dev/null", pb);
	raw = out_command(cmd);
	cr_assert(raw && (locs = strstr(raw, "Locations\n")));
	for (char *l = locs; (l = strchr(l, '\n')) && *++l;)
		if (!strncmp(l, "          ", 10) && strstr(l, "std::") && strchr(l, ':'))
			inline_lines++;
	cr_expect_geq(inline_lines, 1, "no inline frame in:\n%s", locs);
	cr_expect(strstr(locs, "bits/new_allocator.h:"), "no libstdc++ header line");
	free(raw);

	report = out_file(txt);
	cr_assert(report);
	/* With the line it allocates on (a call inlined from the loop). */
	cr_expect(strstr(report, "  app::fill(int) (tests/output/progs/cxx_app.cpp:"),
		  "the site is not the program's:\n%s", report);
	free(report);
}
