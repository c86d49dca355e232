/*
 * The flame graph: every view's stacks merged into a tree (root at the
 * bottom, callees above their callers, widths proportional to estimated
 * bytes; flamegraph_svg_data.c), one SVG with the trees of every view in
 * its data script and its own script (flamegraph_svg_script.c) to draw the
 * view chosen, zoom, search and show details.  The view of --view is also
 * written as SVG rectangles, for viewers without scripts.  Children are
 * ordered by name, so the same profile always draws the same picture.
 */
#include "flamegraph_svg.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph_svg_data.h"
#include "flamegraph_svg_script.h"
#include "xml.h"

/*
 * The SVG is as wide as the window (width="100%"): the script lays the
 * frames out for the width it finds, and again when the window is resized.
 * WIDTH is the layout written into the file, for viewers without scripts.
 * The script's constants (flamegraph_svg_script.c) are the same.
 */
#define WIDTH 1200
#define PAD_X 10
#define FRAME_H 18
#define TOP 56	  /* title and buttons */
#define BOTTOM 49 /* details: two lines (the script adds more when needed) */
/* Width of a character of the 12 px monospace font (DejaVu Sans Mono: 0.602 em). */
#define CHAR_W 7.3
/* The view buttons: where the first starts, and the width of a character of theirs. */
#define VIEWS_X 100
#define VIEW_CHAR_W 7.5

static void human_bytes(char *buf, size_t len, double b)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.4g %s" : "%.0f %s", b, units[u]);
}

/* Warm colours from the name, so a function keeps its colour between runs. */
static void colour(const char *name, char *buf, size_t len)
{
	uint32_t h = 2166136261u;

	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	if (strstr(name, "+0x") || !strcmp(name, PROFILE_UNKNOWN_STACK))
		snprintf(buf, len, "rgb(%u,%u,%u)", 170 + h % 30, 170 + h % 30, 180 + h % 30);
	else
		snprintf(buf, len, "rgb(%u,%u,%u)", 205 + h % 50, 80 + (h >> 8) % 130,
			 40 + (h >> 16) % 50);
}

/* Code points of the UTF-8 string s. */
static size_t utf8_len(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/*
 * name cut to fit chars characters: whole, or its first chars - 1 code
 * points and an ellipsis; nothing below 2 characters.
 */
static void label_write(FILE *out, const char *name, int chars)
{
	char cut[512];
	size_t k = 0, cps = 0;

	if (chars < 2)
		return;
	if (utf8_len(name) <= (size_t)chars) {
		xml_text(out, name);
		return;
	}
	for (; name[k] && k < sizeof(cut) - 4; k++) {
		if (((unsigned char)name[k] & 0xc0) != 0x80 && cps++ == (size_t)chars - 1)
			break;
		cut[k] = name[k];
	}
	while (k && ((unsigned char)cut[k - 1] & 0xc0) == 0xc0)
		k--; /* never a lead byte without its continuation */
	memcpy(cut + k, "\u2026", 4);
	xml_text(out, cut);
}

struct writer {
	FILE *out;
	struct svg_data *d;
	double total;
};

static int depth_of(const struct svg_node *n, double total)
{
	int d = 0;

	for (const struct svg_node *c = n->child; c; c = c->next)
		if (svg_node_kept(c, total)) {
			int cd = depth_of(c, total) + 1;

			if (cd > d)
				d = cd;
		}
	return d;
}

/* Frame n at x (a share of the whole) and its kept children, packed from the left. */
static void write_node(struct writer *w, const struct svg_node *n, double x, int depth, int height)
{
	double pw = n->bytes / w->total * (WIDTH - 2 * PAD_X), px = PAD_X + x * (WIDTH - 2 * PAD_X);
	int y = height - BOTTOM - (depth + 1) * FRAME_H;
	const char *name = svg_str(w->d, n->name);
	char fill[32];

	colour(name, fill, sizeof(fill));
	fprintf(w->out,
		"<g class=\"f\"><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
		"rx=\"2\"/>"
		"<text x=\"%.2f\" y=\"%d\">",
		px, y, pw, FRAME_H - 1, fill, px + 3, y + FRAME_H - 5);
	/* The label as the script draws it. */
	label_write(w->out, name, (int)floor((pw - 6) / CHAR_W));
	fprintf(w->out, "</text></g>\n");
	for (const struct svg_node *c = n->child; c; c = c->next)
		if (svg_node_kept(c, w->total)) {
			write_node(w, c, x, depth + 1, height);
			x += c->bytes / w->total;
		}
}

/* A button per view, the view shown first marked (the script keeps them up to date). */
static void buttons_write(FILE *out, const struct svg_data *d, enum memprof_view first)
{
	double x = VIEWS_X;

	for (int v = 0; v < SVG_N_VIEWS; v++) {
		const char *name = memprof_view_names[v];

		fprintf(out, "<g id=\"view-%s\" class=\"view%s%s\"><title>%s view (key %d)</title>",
			name, v == (int)first ? " on" : "", d->views[v]->bytes > 0 ? "" : " empty",
			name, v + 1);
		fprintf(out, "<text class=\"btn\" x=\"%.0f\" y=\"46\">%s</text></g>\n", x, name);
		x += strlen(name) * VIEW_CHAR_W + 16;
	}
}

int flamegraph_svg_write(FILE *out, const struct profile *p, enum memprof_view v)
{
	struct svg_data d;
	struct writer w = {.out = out, .d = &d};
	const struct svg_node *root;
	int height;
	char b[32];

	if ((int)v < 0 || v >= SVG_N_VIEWS)
		v = MEMPROF_VIEW_ALLOC;
	if (svg_data_build(&d, p)) {
		svg_data_free(&d);
		return -1;
	}
	root = d.views[v];
	w.total = root->bytes > 0 ? (double)root->bytes : 1;
	height = TOP + (depth_of(root, w.total) + 1) * FRAME_H + BOTTOM;
	human_bytes(b, sizeof(b), (double)root->bytes);

	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"100%%\" "
		"height=\"%d\">\n",
		height);
	fprintf(out, "<style>\n"
		     "text{font-family:'DejaVu Sans Mono',monospace;font-size:12px;fill:#222}\n"
		     "#title{font-size:17px;font-family:sans-serif}\n"
		     ".btn{cursor:pointer;fill:#1a5fb4;font-family:sans-serif;font-size:13px}\n"
		     ".view.on .btn{fill:#222;font-weight:bold}.view.empty .btn{opacity:0.45}\n"
		     "g.f{cursor:pointer}g.f:hover rect{stroke:#333;stroke-width:0.8}\n"
		     "</style>\n");
	fputs("<script type=\"text/ecmascript\"><![CDATA[\n", out);
	if (svg_data_write(out, &d, v)) {
		svg_data_free(&d);
		return -1;
	}
	fprintf(out, "]]></script>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n",
		flamegraph_svg_script);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#fbf8f1\"/>\n");
	/* What the script measures a character of the labels on (never shown). */
	fprintf(out, "<text id=\"probe\" x=\"0\" y=\"-20\" visibility=\"hidden\">"
		     "MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM</text>\n");
	fprintf(out,
		"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">memprof-bpf: %s view "
		"of process %d, %s estimated (rate %g per word)</text>\n",
		WIDTH / 2, memprof_view_names[v], (int)p->meta.pid, b, p->meta.rate);
	fprintf(out, "<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"46\">Reset zoom</text>\n",
		PAD_X);
	buttons_write(out, &d, v);
	fprintf(out,
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"46\" "
		"text-anchor=\"end\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"46\" text-anchor=\"end\"> </text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
		WIDTH - PAD_X, WIDTH - PAD_X - 60, PAD_X, height - BOTTOM + 20);
	fprintf(out, "<g id=\"frames\">\n");
	if (root->bytes > 0)
		write_node(&w, root, 0, 0, height);
	else
		fprintf(out, "<text x=\"%d\" y=\"%d\">nothing sampled in this view</text>\n", PAD_X,
			TOP + 20);
	fprintf(out, "</g>\n</svg>\n");
	svg_data_free(&d);
	return ferror(out) ? -1 : 0;
}
