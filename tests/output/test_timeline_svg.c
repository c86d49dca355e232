/*
 * The timeline chart's legend (userspace/output/timeline.c) on a timeline
 * of known points: a site with a long C++ name, a short one, and one that
 * never held a byte.  The empty site is left out; in headless Chromium a
 * probe script measures the legend as drawn: every entry inside the SVG,
 * none over another, the long one cut with an ellipsis.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include "memprof_maps.h"
#include "output/profile.h"
#include "output/timeline.h"
#include "output_util.h"

#define N_SITES 3
#define N_POINTS 10
#define MIB (1024 * 1024)

static const char *const names[N_SITES] = {
    "app::storage::Store<std::map<std::__cxx11::basic_string<char, std::char_traits<char>, "
    "std::allocator<char> >, std::vector<long, std::allocator<long> > > >::index(std::__cxx11::"
    "basic_string<char, std::char_traits<char>, std::allocator<char> > const&, long const&)",
    "short_site",
    "never_live_site",
};

/* What the browser drew: legend entries outside the SVG, overlapping, cut. */
static const char probe[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "window.addEventListener('load',function(){\n"
    " var svg=document.documentElement,t=document.querySelectorAll('text.lg'),b=[],out=0,\n"
    "  overlap=0,cut=0,w=+svg.getAttribute('width');\n"
    " for(var i=0;i<t.length;i++){b.push(t[i].getBBox());\n"
    "  if(b[i].x<0||b[i].x+b[i].width>w)out++;\n"
    "  if(t[i].textContent.indexOf('\\u2026')>=0)cut++;}\n"
    " for(var i=0;i<b.length;i++)for(var j=i+1;j<b.length;j++)\n"
    "  if(b[i].x<b[j].x+b[j].width&&b[j].x<b[i].x+b[i].width&&\n"
    "     b[i].y<b[j].y+b[j].height&&b[j].y<b[i].y+b[i].height)overlap++;\n"
    " svg.setAttribute('data-probe','entries='+t.length+' out='+out+' overlap='+overlap+\n"
    "  ' cut='+cut);});\n"
    "]]></script>\n";

Test(output_timeline_svg, legend_fits_and_leaves_out_empty_sites, .timeout = 120)
{
	struct dsym_line lines[N_SITES] = {{0}};
	struct dsym_frame frames[N_SITES] = {{0}};
	const struct dsym_frame *fp[N_SITES];
	struct profile_stack stacks[N_SITES] = {{0}};
	struct memprof_stack_agg aggs[N_SITES];
	struct profile p = {0};
	struct timeline tl;
	char dir[128], path[256], *svg = NULL, *dom, *end;
	size_t len = 0;
	FILE *f;

	for (int i = 0; i < N_SITES; i++) {
		lines[i].function = (char *)names[i];
		frames[i].n_lines = 1;
		frames[i].lines = &lines[i];
		fp[i] = &frames[i];
		stacks[i].frames = &fp[i];
		stacks[i].n_frames = 1;
		stacks[i].id = (uint32_t)i;
		stacks[i].bytes[MEMPROF_VIEW_ALLOC] = 4 * MIB;
		stacks[i].samples[MEMPROF_VIEW_ALLOC] = 40;
	}
	p.meta.pid = 4242;
	p.stacks = stacks;
	p.n_stacks = N_SITES;
	cr_assert_eq(timeline_init(&tl, 0, 100000000, 64), 0);
	for (int t = 0; t < N_POINTS; t++) {
		memset(aggs, 0, sizeof(aggs));
		aggs[0].bytes[MEMPROF_VIEW_LIVE] = (__u64)t * MIB;
		aggs[1].bytes[MEMPROF_VIEW_LIVE] = MIB / 2;
		cr_assert_geq(timeline_sample(&tl, (int64_t)t * 100000000, aggs, N_SITES, 0, 1), 0);
	}
	f = open_memstream(&svg, &len);
	cr_assert(f);
	cr_assert_eq(timeline_write(f, &tl, &p, TIMELINE_SVG), 0);
	cr_assert_eq(fclose(f), 0);
	timeline_free(&tl);
	cr_expect(strstr(svg, ">short_site (peak 512 KiB)<"), "no short_site entry:\n%s", svg);
	cr_expect(!strstr(svg, "never_live_site"), "a site that never held a byte is listed");
	cr_expect(!strstr(svg, "(peak 0 B)"), "an entry of 0 B");

	/* As drawn. */
	out_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/timeline.svg", dir);
	cr_assert((end = strstr(svg, "</svg>")));
	f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "%.*s%s%s", (int)(end - svg), svg, probe, end);
	cr_assert_eq(fclose(f), 0);
	free(svg);
	dom = out_chromium_dom(dir, path, "", 1200);
	cr_assert(dom && strstr(dom, "data-probe="), "the probe did not run: %.600s",
		  dom ? dom : "");
	cr_expect_eq(out_attr_value(dom, "data-probe", "entries"), 2, "%s",
		     strstr(dom, "data-probe="));
	cr_expect_eq(out_attr_value(dom, "data-probe", "out"), 0, "entries past the SVG's edge");
	cr_expect_eq(out_attr_value(dom, "data-probe", "overlap"), 0, "entries over each other");
	cr_expect_eq(out_attr_value(dom, "data-probe", "cut"), 1, "the long name is not cut");
	free(dom);
}
