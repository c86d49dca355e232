/*
 * The SVG flame graph driven in headless Chromium: its script runs to the
 * end without an error (it marks the root data-ready, and any uncaught
 * error as data-error), and the URL fragment's zoom and search change the
 * DOM as a click and a search would: the zoomed frame spans the width, the
 * frames beside it are hidden, the matches are highlighted and the matched
 * share is the sum of their widths.  A copy with a broken script is the
 * control that errors are seen.  One SVG holds every view: the fragment's
 * view=, a view's button and its key each draw that view's frames, whose
 * bytes are those of the same run's folded file of that view, frame by
 * frame; zoom and search hold across a switch and work after it.  Tooltips
 * give each frame's file:line and the allocation site of its stacks (C++
 * profile, lines marked in the source).  On a C++ profile (long template
 * names), a probe script added to a copy measures what the browser drew:
 * the SVG is as wide as the window, every label fits its frame (cut with
 * an ellipsis), and the details of the longest tooltip fit the width and
 * the height.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "output_util.h"

#define HIGHLIGHT "fill: rgb(220, 60, 220)"
/* The drawn width of the whole at a window of 1200 px (SVG_MIN_SHARE: the smallest frame). */
#define SPAN 1180
#define MIN_SHARE 1e-4

static char *dump_dom(const char *dir, const char *svg, const char *fragment)
{
	return out_chromium_dom(dir, svg, fragment, 1200);
}

/* A frame of the dumped DOM: its name, geometry, bytes, state and tooltips. */
struct frame {
	char name[1024], title[4096], details[4096];
	double w, rect_w, bytes;
	int depth, hidden, highlighted;
};

/* s[0..n) with the DOM's entities decoded, into out. */
static void unescape(char *out, size_t len, const char *s, size_t n)
{
	static const char *const ents[][2] = {{"&amp;", "&"},	{"&lt;", "<"},	{"&gt;", ">"},
					      {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", " "}};
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < len;) {
		size_t e = 0;

		while (e < sizeof(ents) / sizeof(ents[0]) &&
		       strncmp(s + i, ents[e][0], strlen(ents[e][0])))
			e++;
		if (s[i] == '&' && e < sizeof(ents) / sizeof(ents[0])) {
			out[o++] = ents[e][1][0];
			i += strlen(ents[e][0]);
		} else {
			out[o++] = s[i++];
		}
	}
	out[o] = '\0';
}

/* Attribute name of the tag [tag, end), decoded into out ("" when absent). */
static void attr_of(const char *tag, const char *end, const char *name, char *out, size_t len)
{
	char key[64];
	const char *p, *q;

	snprintf(key, sizeof(key), " %s=\"", name);
	out[0] = '\0';
	p = strstr(tag, key);
	if (!p || p > end)
		return;
	p += strlen(key);
	q = strchr(p, '"');
	if (q && q < end)
		unescape(out, len, p, (size_t)(q - p));
}

/* Every <g class="f"> of dom, in order (preorder); returns how many (at most max). */
static int frames_of(const char *dom, struct frame *out, int max)
{
	int n = 0;

	for (const char *g = dom; n < max && (g = strstr(g, "<g class=\"f\"")); g++) {
		const char *end = strstr(g, "</g>"), *tag_end = strchr(g, '>'), *r, *t, *te;
		struct frame *f = &out[n];
		char v[64];

		if (!end || !tag_end)
			break;
		attr_of(g, tag_end, "data-n", f->name, sizeof(f->name));
		attr_of(g, tag_end, "data-t", f->details, sizeof(f->details));
		attr_of(g, tag_end, "data-w", v, sizeof(v));
		f->w = strtod(v, NULL);
		attr_of(g, tag_end, "data-b", v, sizeof(v));
		f->bytes = v[0] ? strtod(v, NULL) : -1;
		attr_of(g, tag_end, "data-d", v, sizeof(v));
		f->depth = v[0] ? atoi(v) : -1;
		attr_of(g, tag_end, "style", v, sizeof(v));
		f->hidden = strstr(v, "display: none") != NULL;
		r = strstr(g, "<rect");
		f->rect_w = -1;
		if (r && r < end) {
			attr_of(r, strchr(r, '>'), "width", v, sizeof(v));
			f->rect_w = v[0] ? strtod(v, NULL) : -1;
		}
		f->highlighted = r && r < end && strstr(r, HIGHLIGHT) && strstr(r, HIGHLIGHT) < end;
		t = strstr(g, "<title>");
		te = t ? strstr(t, "</title>") : NULL;
		f->title[0] = '\0';
		if (t && te && te < end)
			unescape(f->title, sizeof(f->title), t + 7, (size_t)(te - t - 7));
		n++;
	}
	return n;
}

static int starts_with(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* A view's folded file: root-first stacks and their bytes. */
struct folded {
	char stack[4096];
	double bytes;
};

static int folded_read(const char *path, struct folded *out, int max)
{
	FILE *f = fopen(path, "r");
	char line[4200];
	int n = 0;

	cr_assert(f, "no %s", path);
	while (n < max && fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');

		cr_assert(sp && strchr(line, '\n') && sp - line < (long)sizeof(out[n].stack),
			  "bad folded line: %.200s", line);
		*sp = '\0';
		memcpy(out[n].stack, line, (size_t)(sp - line) + 1);
		out[n++].bytes = strtod(sp + 1, NULL);
	}
	fclose(f);
	return n;
}

/* Bytes of the stacks through the root-first path (all stacks for ""). */
static double folded_through(const struct folded *st, int n, const char *path)
{
	size_t k = strlen(path);
	double sum = 0;

	for (int i = 0; i < n; i++)
		if (!k || (!strncmp(st[i].stack, path, k) &&
			   (st[i].stack[k] == ';' || st[i].stack[k] == '\0')))
			sum += st[i].bytes;
	return sum;
}

/* Distinct root-first prefixes of the stacks holding at least min bytes. */
static int folded_prefixes(const struct folded *st, int n, double min)
{
	int count = 0;

	for (int i = 0; i < n; i++)
		for (const char *e = st[i].stack;; e++) {
			if (*e == ';' || *e == '\0') {
				char prefix[4096];
				int seen = 0;

				snprintf(prefix, sizeof(prefix), "%.*s", (int)(e - st[i].stack),
					 st[i].stack);
				for (int j = 0; j < i && !seen; j++)
					seen = folded_through(&st[j], 1, prefix) > 0;
				count += !seen && folded_through(st, n, prefix) >= min;
			}
			if (!*e)
				break;
		}
	return count;
}

/*
 * The frames drawn are those of the folded file: the root holds every
 * stack's bytes, each frame those of the stacks through it, and every
 * prefix of at least MIN_SHARE of the view is a frame.  The view's bytes.
 */
static double expect_frames_of_folded(const char *dom, const struct frame *fr, int n,
				      const char *folded_path, const char *view)
{
	static struct folded st[256];
	int ns = folded_read(folded_path, st, 256), wrong = 0;
	const char *up[130];
	double total = folded_through(st, ns, "");

	if (!ns) {
		cr_expect_eq(n, 0, "%s: %d frames drawn for an empty view", view, n);
		cr_expect(strstr(dom, ">nothing sampled in this view</text>"), "%s: no empty note",
			  view);
		return 0;
	}
	cr_assert_gt(n, 0, "%s: nothing drawn", view);
	cr_expect(!strcmp(fr[0].name, "all") && fr[0].depth == 0, "%s: root %s", view, fr[0].name);
	cr_expect_eq(fr[0].bytes, total, "%s: the root holds %.0f B, %s %.0f B", view, fr[0].bytes,
		     folded_path, total);
	for (int i = 1; i < n && wrong < 3; i++) {
		char path[4096];
		size_t o = 0;
		double want;

		cr_assert(fr[i].depth >= 1 && fr[i].depth < 130, "%s: depth %d", view, fr[i].depth);
		up[fr[i].depth] = fr[i].name;
		/* Root first, joined by ';' (in a name ';' is ':', as folded writes it). */
		for (int k = 1; k <= fr[i].depth; k++) {
			if (k > 1 && o + 1 < sizeof(path))
				path[o++] = ';';
			for (const char *c = up[k]; *c && o + 1 < sizeof(path); c++)
				path[o++] = *c == ';' ? ':' : *c;
		}
		path[o] = '\0';
		want = folded_through(st, ns, path);
		wrong += want != fr[i].bytes;
		cr_expect_eq(fr[i].bytes, want, "%s: %s draws %.0f B, the folded stacks %.0f B",
			     view, path, fr[i].bytes, want);
	}
	cr_expect_eq(n - 1, folded_prefixes(st, ns, MIN_SHARE * total),
		     "%s: %d frames drawn, the folded file has %d of at least %g of the view", view,
		     n - 1, folded_prefixes(st, ns, MIN_SHARE * total), MIN_SHARE);
	return total;
}

/* The value of attribute name of the root element, into out ("" if none). */
static void root_attr(const char *dom, const char *name, char *out, size_t len)
{
	const char *svg = strstr(dom, "<svg");

	out[0] = '\0';
	if (svg)
		attr_of(svg, strchr(svg, '>'), name, out, len);
}

/* The DOM's view is view: its script ran, the root and the title name it. */
static void expect_view(const char *dom, const char *view)
{
	char got[64], title[96];

	cr_assert(dom && strstr(dom, "data-ready=\"1\""), "%s: %.600s", view, dom ? dom : "");
	cr_expect(!strstr(dom, "data-error="), "script error: %s", strstr(dom, "data-error="));
	root_attr(dom, "data-view", got, sizeof(got));
	cr_expect_str_eq(got, view, "the view drawn is '%s', not %s", got, view);
	snprintf(title, sizeof(title), ">memprof-bpf: %s view of process ", view);
	cr_expect(strstr(dom, title), "no title '%s'", title);
}

/*
 * Zoomed on the frame named zoomed (the whole width; the frames named
 * beside hidden), the frames starting with match highlighted and no other,
 * and the matched share the sum of their widths.
 */
static void expect_zoom_and_search(const char *dom, const struct frame *fr, int n,
				   const char *zoomed, const char *beside, const char *match)
{
	int z = -1, hidden = 0, shown = 0, hits = 0, wrong_hits = 0;
	const char *matched;
	double want = 0, got;

	for (int i = 0; i < n; i++) {
		if (!strcmp(fr[i].name, zoomed))
			z = i;
		if (!strcmp(fr[i].name, beside)) {
			hidden += fr[i].hidden;
			shown += !fr[i].hidden;
		}
		if (starts_with(fr[i].name, match)) {
			hits += fr[i].highlighted;
			want += fr[i].w;
		} else {
			wrong_hits += fr[i].highlighted;
		}
	}
	cr_assert_geq(z, 0, "no %s frame", zoomed);
	cr_expect(!fr[z].hidden && fabs(fr[z].rect_w - SPAN) < 0.5,
		  "zoomed %s is %.1f px wide, not the whole %d", zoomed, fr[z].rect_w, SPAN);
	cr_expect(hidden >= 1 && shown == 0, "%s beside the zoomed frame: %d hidden, %d shown",
		  beside, hidden, shown);
	cr_expect_gt(hits, 0, "no %s frame highlighted", match);
	cr_expect_eq(wrong_hits, 0, "%d frames highlighted that do not match", wrong_hits);
	matched = strstr(dom, "id=\"matched\"");
	matched = matched ? strchr(matched, '>') : NULL;
	cr_assert(matched && starts_with(matched + 1, "matched "), "no matched share: %.80s",
		  matched ? matched : "");
	got = strtod(matched + 1 + strlen("matched "), NULL);
	cr_expect(fabs(got - 100 * want) < 0.01, "matched %.2f%%, frames sum to %.2f%%", got,
		  100 * want);
}

/* A copy of svg with a script of the test's own added at its end (run after the SVG's). */
static void svg_with_probe(const char *svg, const char *copy, const char *probe)
{
	char *text = out_file(svg), *end;
	FILE *f;

	cr_assert(text && (end = strstr(text, "</svg>")), "no SVG in %s", svg);
	f = fopen(copy, "w");
	cr_assert(f);
	fprintf(f, "%.*s<script type=\"text/ecmascript\"><![CDATA[\n%s\n]]></script>\n%s",
		(int)(end - text), text, probe, end);
	cr_assert_eq(fclose(f), 0);
	free(text);
}

/* The views of an SVG, as its buttons name them, in order; how many. */
static int views_of(const char *svg, char views[][32], int max)
{
	char *text = out_file(svg);
	int n = 0;

	cr_assert(text);
	for (const char *p = text; n < max && (p = strstr(p, "<g id=\"view-")); p++)
		sscanf(p + strlen("<g id=\"view-"), "%31[^\"]", views[n++]);
	free(text);
	return n;
}

Test(output_svg_browser, script_runs_and_zoom_and_search_change_the_dom, .timeout = 300)
{
	char dir[128], svg[256], broken[256], cmd[1024], *dom;
	static struct frame fr[512];
	int n;

	out_tmpdir(dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/alloc.svg", dir);
	const char *args[] = {"-o", svg, NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args), 0, "the profiled run failed");

	/* As loaded: the script ran to its end, nothing zoomed or matched. */
	dom = dump_dom(dir, svg, "");
	cr_assert(dom && strstr(dom, "<svg"), "no DOM from chromium: %s", dom ? dom : "");
	expect_view(dom, "alloc");
	n = frames_of(dom, fr, 512);
	cr_assert_gt(n, 5);
	for (int i = 0; i < n; i++)
		cr_expect(!fr[i].highlighted, "%s highlighted without a search", fr[i].name);
	free(dom);

	/* Zoom on run_batch and search the kept sites, as the fragment asks. */
	dom = dump_dom(dir, svg, "zoom=%5Erun_batch%24&search=site_kept");
	expect_view(dom, "alloc");
	n = frames_of(dom, fr, 512);
	expect_zoom_and_search(dom, fr, n, "run_batch", "run_requests", "site_kept");
	free(dom);

	/* The control: a script that throws is seen as such. */
	snprintf(broken, sizeof(broken), "%s/broken.svg", dir);
	snprintf(cmd, sizeof(cmd),
		 "sed 's/^function draw(){$/function draw(){no_such_function();/' '%s' >'%s' && "
		 "grep -q no_such_function '%s'",
		 svg, broken, broken);
	cr_assert_eq(system(cmd), 0, "cannot break the script (draw() not found)");
	dom = dump_dom(dir, broken, "");
	cr_assert(dom && strstr(dom, "<svg"));
	cr_expect(strstr(dom, "data-error=\"") && !strstr(dom, "data-ready="),
		  "a throwing script was not noticed:\n%.600s", dom);
	free(dom);
}

/*
 * One SVG, every view: #view=NAME draws the frames of NAME.folded, written
 * by the same run (--all-views), frame by frame; the views differ.
 */
Test(output_svg_browser, the_fragment_draws_each_view_from_its_folded_stacks, .timeout = 300)
{
	char dir[128], svg[256], folded[256], fragment[64], views[8][32], *dom;
	static struct frame fr[512];
	double totals[8];
	int n_views;

	out_tmpdir(dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/flame.svg", dir);
	const char *args[] = {"-o", svg, "--all-views", dir, NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args), 0, "the profiled run failed");
	n_views = views_of(svg, views, 8);
	cr_assert_geq(n_views, 4, "%d view buttons", n_views);
	cr_expect(!strcmp(views[0], "alloc") && !strcmp(views[1], "live") &&
		      !strcmp(views[2], "promoted") && !strcmp(views[3], "short"),
		  "views %s %s %s %s", views[0], views[1], views[2], views[3]);
	for (int v = 0; v < n_views; v++) {
		snprintf(fragment, sizeof(fragment), "view=%s", views[v]);
		snprintf(folded, sizeof(folded), "%s/%s.folded", dir, views[v]);
		dom = dump_dom(dir, svg, fragment);
		expect_view(dom, views[v]);
		totals[v] =
		    expect_frames_of_folded(dom, fr, frames_of(dom, fr, 512), folded, views[v]);
		free(dom);
	}
	/* known_sites frees a third of its blocks at once: live holds less than alloc. */
	cr_expect(totals[1] > 0 && totals[1] < 0.9 * totals[0], "alloc %.0f B, live %.0f B",
		  totals[0], totals[1]);
}

/* The probes that switch views as a user would: a button, then a key. */
static const char click_live[] = "window.addEventListener('load',function(){\n"
				 " document.querySelector('#view-live text').dispatchEvent(\n"
				 "  new MouseEvent('click',{bubbles:true}));});";
static const char key_zoom_search[] =
    "window.addEventListener('load',function(){\n"
    " document.dispatchEvent(new KeyboardEvent('keydown',{key:'%d',bubbles:true}));\n"
    " var gs=document.querySelectorAll('g.f');\n"
    " for(var i=0;i<gs.length;i++)if(gs[i].getAttribute('data-n')=='run_requests'){\n"
    "  gs[i].querySelector('rect').dispatchEvent(new MouseEvent('click',{bubbles:true}));\n"
    "  break;}\n"
    " window.prompt=function(){return 'site_temp';};\n"
    " document.getElementById('search').dispatchEvent(new MouseEvent('click',"
    "{bubbles:true}));});";

/*
 * Zoom and search across a switch: zoomed on run_batch and searching the
 * kept sites in alloc, the live button keeps both (the share matched again
 * on live's frames).  After a switch by key to short, a click zooms and the
 * Search button searches.  Each time the frames are the view's folded stacks.
 */
Test(output_svg_browser, zoom_and_search_hold_across_a_switch_and_after_it, .timeout = 300)
{
	char dir[128], svg[256], copy[256], folded[256], probe_js[1024], *text, *key, *dom;
	static struct frame fr[512];
	int n, short_key = 0;

	out_tmpdir(dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/flame.svg", dir);
	snprintf(copy, sizeof(copy), "%s/probed.svg", dir);
	const char *args[] = {"-o", svg, "--all-views", dir, NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args), 0, "the profiled run failed");

	svg_with_probe(svg, copy, click_live);
	dom = dump_dom(dir, copy, "zoom=%5Erun_batch%24&search=site_kept");
	expect_view(dom, "live");
	n = frames_of(dom, fr, 512);
	snprintf(folded, sizeof(folded), "%s/live.folded", dir);
	expect_frames_of_folded(dom, fr, n, folded, "live");
	expect_zoom_and_search(dom, fr, n, "run_batch", "run_requests", "site_kept");
	free(dom);

	/* The key of short, as its button's tooltip says. */
	text = out_file(svg);
	key = text ? strstr(text, "<g id=\"view-short\"") : NULL;
	key = key ? strstr(key, "(key ") : NULL;
	cr_assert(key && sscanf(key, "(key %d)", &short_key) == 1, "no key for short");
	free(text);
	snprintf(probe_js, sizeof(probe_js), key_zoom_search, short_key);
	svg_with_probe(svg, copy, probe_js);
	dom = dump_dom(dir, copy, "");
	expect_view(dom, "short");
	n = frames_of(dom, fr, 512);
	snprintf(folded, sizeof(folded), "%s/short.folded", dir);
	expect_frames_of_folded(dom, fr, n, folded, "short");
	expect_zoom_and_search(dom, fr, n, "run_requests", "run_batch", "site_temp");
	free(dom);
}

/* The first line of s (a tooltip), into out. */
static void first_line(const char *s, char *out, size_t len)
{
	snprintf(out, len, "%.*s", (int)strcspn(s, "\n"), s);
}

/* The line of tooltip t starting with prefix (without it), into out ("" if none). */
static void tooltip_line(const char *t, const char *prefix, char *out, size_t len)
{
	const char *l = strstr(t, prefix);

	out[0] = '\0';
	if (l && (l == t || l[-1] == '\n'))
		first_line(l + strlen(prefix), out, len);
}

/*
 * Tooltips on a C++ profile: the frame of each allocating function gives its
 * file:line (the line marked in the source) in its tooltip and details,
 * and its allocation site the same; every frame's site has a file:line; in
 * alloc and after a switch to short.
 */
Test(output_svg_browser, tooltips_give_file_line_and_the_allocation_site, .timeout = 300)
{
	static const char *const funcs[] = {"grow_prices", "index_names", "build_report",
					    "make_series"};
	const char *source = "tests/output/progs/cxx_sites.cpp";
	const char *fragments[] = {"", "view=short"};
	char dir[128], svg[256], *dom;
	static struct frame fr[512];
	int lines[4];
	regex_t has_line;

	cr_assert_eq(regcomp(&has_line, "\\([^ ()]+:[0-9]+\\)", REG_EXTENDED | REG_NOSUB), 0);
	for (int k = 0; k < 4; k++) {
		char marker[64];

		snprintf(marker, sizeof(marker), "LINE:%s", funcs[k]);
		lines[k] = out_source_line(source, marker);
		cr_assert_gt(lines[k], 0);
	}
	out_tmpdir(dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/sites.svg", dir);
	const char *args[] = {"-o", svg, NULL};
	cr_assert_eq(out_profile("cxx_sites", dir, "0.001", args), 0, "the profiled run failed");
	for (int v = 0; v < 2; v++) {
		int n, seen[4] = {0}, sites = 0;

		dom = dump_dom(dir, svg, fragments[v]);
		expect_view(dom, v ? "short" : "alloc");
		n = frames_of(dom, fr, 512);
		cr_assert_gt(n, 10);
		for (int i = 0; i < n; i++) {
			char head[2048], site[2048], want[128];
			int k;

			tooltip_line(fr[i].title, "allocation site: ", site, sizeof(site));
			cr_expect(site[0] && !regexec(&has_line, site, 0, NULL, 0),
				  "the site of %s has no file:line: '%s'", fr[i].name, site);
			sites += site[0] != '\0';
			for (k = 0; k < 4; k++)
				if (strstr(fr[i].name, "shop::") && strstr(fr[i].name, funcs[k]))
					break;
			if (k == 4)
				continue;
			seen[k] = 1;
			snprintf(want, sizeof(want), " (%s:%d)", source, lines[k]);
			first_line(fr[i].title, head, sizeof(head));
			cr_expect(starts_with(head, fr[i].name) && strstr(head, want),
				  "the tooltip of %s reads '%s', without%s", fr[i].name, head,
				  want);
			cr_expect(starts_with(fr[i].details, head), "details '%.300s'",
				  fr[i].details);
			cr_expect(strstr(site, funcs[k]) && strstr(site, want),
				  "the site of %s is '%s', not at%s", funcs[k], site, want);
			cr_expect(strstr(fr[i].title, "\nlifetime p50 "), "no lifetimes: %s",
				  fr[i].title);
		}
		cr_expect_eq(sites, n, "%d of %d frames name a site", sites, n);
		for (int k = 0; k < 4; k++)
			cr_expect(seen[k], "no frame of %s in %s", funcs[k], v ? "short" : "alloc");
		free(dom);
	}
	regfree(&has_line);
}

/*
 * What the browser drew, measured by a script of the test's own (run after
 * the SVG's): labels wider than their frame, labels cut, the window's and
 * the SVG's widths, the root frame's, and the details of the longest
 * tooltip shown (its right and bottom edges, the SVG's height).
 */
static const char probe[] =
    "window.addEventListener('load',function(){\n"
    " var svg=document.documentElement,over=0,cut=0,worst='',longest=null;\n"
    " var gs=document.querySelectorAll('g.f');\n"
    " for(var i=0;i<gs.length;i++){var g=gs[i],t=g.querySelector('text');\n"
    "  if(!longest||g.getAttribute('data-t').length>longest.getAttribute('data-t').length)\n"
    "   longest=g;\n"
    "  if(g.style.display=='none'||!t.textContent)continue;\n"
    "  var w=+g.querySelector('rect').getAttribute('width'),tl=t.getComputedTextLength();\n"
    "  if(t.textContent.indexOf('\\u2026')>=0)cut++;\n"
    "  if(tl>w-3+0.01){over++;worst=t.textContent;}}\n"
    " longest.dispatchEvent(new MouseEvent('mouseover'));\n"
    " var d=document.getElementById('details').getBBox();\n"
    " svg.setAttribute('data-probe','over='+over+' cut='+cut+' win='+window.innerWidth+\n"
    "  ' svg='+svg.getBoundingClientRect().width+' root='+gs[0].querySelector('rect')\n"
    "  .getAttribute('width')+' right='+(d.x+d.width)+' bottom='+(d.y+d.height)+\n"
    "  ' height='+svg.getAttribute('height')+' worst='+worst);});\n";

static double probe_value(const char *dom, const char *key)
{
	return out_attr_value(dom, "data-probe", key);
}

Test(output_svg_browser, labels_fit_and_the_svg_fills_the_window, .timeout = 300)
{
	char dir[128], svg[256], probed[300], *text, *dom;
	const int widths[] = {1600, 700};

	out_tmpdir(dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/cxx.svg", dir);
	snprintf(probed, sizeof(probed), "%s/probed.svg", dir);
	const char *args[] = {"-o", svg, NULL};
	cr_assert_eq(out_profile("cxx_app", dir, "0.001", args), 0, "the profiled run failed");
	text = out_file(svg);
	cr_assert(text && strstr(text, "std::_Rb_tree<"), "no long C++ name to fit");
	free(text);
	svg_with_probe(svg, probed, probe);
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		double win, w;

		dom = out_chromium_dom(dir, probed, "", widths[i]);
		cr_assert(dom && strstr(dom, "data-probe="), "the probe did not run: %.600s",
			  dom ? dom : "");
		cr_expect(!strstr(dom, "data-error="), "script error: %s",
			  strstr(dom, "data-error="));
		win = probe_value(dom, "win");
		w = probe_value(dom, "svg");
		cr_expect(fabs(win - widths[i]) < 1, "a window of %d px gave %.0f", widths[i], win);
		cr_expect(fabs(w - win) < 1, "the SVG is %.0f px wide in a %.0f px window", w, win);
		cr_expect(fabs(probe_value(dom, "root") - (w - 20)) < 1,
			  "the root frame is %.1f px wide in a %.0f px SVG",
			  probe_value(dom, "root"), w);
		cr_expect_eq(probe_value(dom, "over"), 0,
			     "%.0f labels wider than their frame: %.160s", probe_value(dom, "over"),
			     strstr(dom, "worst="));
		cr_expect_gt(probe_value(dom, "cut"), 0, "no label cut with an ellipsis");
		cr_expect_leq(probe_value(dom, "right"), w, "the details end at %.0f px of %.0f",
			      probe_value(dom, "right"), w);
		cr_expect_leq(probe_value(dom, "bottom"), probe_value(dom, "height"),
			      "the details end at y %.0f, below the SVG's %.0f px",
			      probe_value(dom, "bottom"), probe_value(dom, "height"));
		free(dom);
	}
}
