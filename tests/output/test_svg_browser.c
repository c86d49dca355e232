/*
 * The SVG flame graph driven in headless Chromium: its script runs to the
 * end without an error (it marks the root data-ready, and any uncaught
 * error as data-error), and the URL fragment's zoom and search change the
 * DOM as a click and a search would: the zoomed frame spans the width, the
 * frames beside it are hidden, the matches are highlighted and the matched
 * share is the sum of their widths.  A copy with a broken script is the
 * control that errors are seen.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output_util.h"

#define HIGHLIGHT "fill: rgb(220, 60, 220)"

static const char *const chromium_flags =
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync";

/* The DOM after load of file://svg#fragment, from a fresh profile dir. */
static char *dump_dom(const char *dir, const char *svg, const char *fragment)
{
	static int n;
	char cmd[2048], profile[256], cwd[256];

	cr_assert(getcwd(cwd, sizeof(cwd)));
	snprintf(profile, sizeof(profile), "%s/chromium-%d", dir, n++);
	cr_assert_eq(system("command -v chromium >/dev/null"), 0,
		     "chromium is not installed (Debian package chromium)");
	snprintf(cmd, sizeof(cmd),
		 "mkdir '%s' && HOME='%s' timeout 120 chromium %s --user-data-dir='%s' "
		 "--dump-dom 'file://%s%s%s#%s' 2>'%s.err'",
		 profile, profile, chromium_flags, profile, svg[0] == '/' ? "" : cwd,
		 svg[0] == '/' ? "" : "/", svg, fragment, profile);
	return out_command(cmd);
}

/* A frame of the dumped DOM: its name, geometry and state. */
struct frame {
	char name[128];
	double w, rect_w;
	int hidden, highlighted;
};

/* Every <g class="f"> of dom, in order; returns how many (at most max). */
static int frames_of(const char *dom, struct frame *out, int max)
{
	int n = 0;

	for (const char *g = dom; n < max && (g = strstr(g, "<g class=\"f\"")); g++) {
		const char *end = strstr(g, "</g>"), *t = strstr(g, "data-t=\""), *r;
		struct frame *f = &out[n];
		size_t len;

		if (!end || !t || t > end)
			break;
		t += strlen("data-t=\"");
		len = strcspn(t, " \"");
		snprintf(f->name, sizeof(f->name), "%.*s", (int)len, t);
		f->w = strtod(strstr(g, "data-w=\"") + strlen("data-w=\""), NULL);
		r = strstr(g, "<rect");
		f->rect_w = r && r < end ? strtod(strstr(r, "width=\"") + 7, NULL) : -1;
		{
			const char *tag_end = strchr(g, '>'), *style = strstr(g, "style=\"");

			f->hidden = style && style < tag_end && strstr(style, "display: none") &&
				    strstr(style, "display: none") < tag_end;
		}
		f->highlighted = r && r < end && strstr(r, HIGHLIGHT) && strstr(r, HIGHLIGHT) < end;
		n++;
	}
	return n;
}

static int starts_with(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

Test(output_svg_browser, script_runs_and_zoom_and_search_change_the_dom, .timeout = 300)
{
	char dir[128], svg[256], broken[256], cmd[1024], *dom, *matched;
	static struct frame fr[512];
	int n, batch = -1, hidden_requests = 0, shown_requests = 0, hits = 0, wrong_hits = 0;
	double want = 0, got;

	out_tmpdir(dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/alloc.svg", dir);
	const char *args[] = {"-o", svg, NULL};
	cr_assert_eq(out_profile("known_sites", dir, "0.01", args), 0, "the profiled run failed");

	/* As loaded: the script ran to its end, nothing zoomed or matched. */
	dom = dump_dom(dir, svg, "");
	cr_assert(dom && strstr(dom, "<svg"), "no DOM from chromium: %s", dom ? dom : "");
	cr_expect(strstr(dom, "data-ready=\"1\""), "the script did not finish:\n%.600s", dom);
	cr_expect(!strstr(dom, "data-error="), "script error: %s", strstr(dom, "data-error="));
	n = frames_of(dom, fr, 512);
	cr_assert_gt(n, 5);
	for (int i = 0; i < n; i++)
		cr_expect(!fr[i].highlighted, "%s highlighted without a search", fr[i].name);
	free(dom);

	/* Zoom on run_batch and search the kept sites, as the fragment asks. */
	dom = dump_dom(dir, svg, "zoom=%5Erun_batch%24&search=site_kept");
	cr_assert(dom && strstr(dom, "data-ready=\"1\""), "%.600s", dom ? dom : "");
	cr_expect(!strstr(dom, "data-error="), "script error: %s", strstr(dom, "data-error="));
	n = frames_of(dom, fr, 512);
	for (int i = 0; i < n; i++) {
		if (!strcmp(fr[i].name, "run_batch"))
			batch = i;
		if (!strcmp(fr[i].name, "run_requests")) {
			hidden_requests += fr[i].hidden;
			shown_requests += !fr[i].hidden;
		}
		if (starts_with(fr[i].name, "site_kept")) {
			hits += fr[i].highlighted;
			want += fr[i].w;
		} else {
			wrong_hits += fr[i].highlighted;
		}
	}
	cr_assert_geq(batch, 0, "no run_batch frame");
	cr_expect(!fr[batch].hidden && fabs(fr[batch].rect_w - 1180) < 0.5,
		  "zoomed run_batch is %.1f px wide, not the whole 1180", fr[batch].rect_w);
	cr_expect(hidden_requests >= 1 && shown_requests == 0,
		  "run_requests beside the zoomed frame: %d hidden, %d shown", hidden_requests,
		  shown_requests);
	cr_expect_gt(hits, 0, "no site_kept frame highlighted");
	cr_expect_eq(wrong_hits, 0, "%d frames highlighted that do not match", wrong_hits);
	matched = strstr(dom, "id=\"matched\"");
	matched = matched ? strchr(matched, '>') : NULL;
	cr_assert(matched && starts_with(matched + 1, "matched "), "no matched share: %.80s",
		  matched ? matched : "");
	got = strtod(matched + 1 + strlen("matched "), NULL);
	cr_expect(fabs(got - 100 * want) < 0.01, "matched %.2f%%, frames sum to %.2f%%", got,
		  100 * want);
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
