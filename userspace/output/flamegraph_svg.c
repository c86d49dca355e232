/*
 * The flame graph: the view's stacks merged into a tree (root at the
 * bottom, callees above their callers, widths proportional to estimated
 * bytes), written as SVG rectangles with a small script for zoom, search
 * and details.  Children are ordered by name, so the same profile always
 * draws the same picture.
 */
#include "flamegraph_svg.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lifetimes.h"
#include "xml.h"

#define WIDTH 1200
#define PAD_X 10
#define FRAME_H 18
#define TOP 56	  /* title and buttons */
#define BOTTOM 34 /* details line */
/* Frames narrower than this share of the whole are left out. */
#define MIN_SHARE 1e-4

struct node {
	const char *name;
	int64_t bytes, samples;
	struct lifetime_dist *life; /* of the stacks through this frame, or NULL */
	struct node *child, *next;  /* first child, next sibling (sorted by name) */
};

static struct node *node_new(const char *name)
{
	struct node *n = calloc(1, sizeof(*n));

	if (n)
		n->name = name;
	return n;
}

static void node_free(struct node *n)
{
	while (n) {
		struct node *next = n->next;

		node_free(n->child);
		free(n->life);
		free(n);
		n = next;
	}
}

/* The child of parent named name, created in name order if missing. */
static struct node *child_of(struct node *parent, const char *name)
{
	struct node **link = &parent->child, *n;
	int c = 1;

	while (*link && (c = strcmp((*link)->name, name)) < 0)
		link = &(*link)->next;
	if (*link && c == 0)
		return *link;
	n = node_new(name);
	if (!n)
		return NULL;
	n->next = *link;
	*link = n;
	return n;
}

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

struct writer {
	FILE *out;
	const struct profile *p;
	double total;
	int max_depth;
};

static int depth_of(const struct node *n, double total)
{
	int d = 0;

	for (const struct node *c = n->child; c; c = c->next)
		if (c->bytes / total >= MIN_SHARE) {
			int cd = depth_of(c, total) + 1;

			if (cd > d)
				d = cd;
		}
	return d;
}

static void write_node(struct writer *w, const struct node *n, double x, int depth, int height)
{
	double share = n->bytes / w->total, lo, hi, per;
	double px = PAD_X + x * (WIDTH - 2 * PAD_X), pw = share * (WIDTH - 2 * PAD_X);
	int y = height - BOTTOM - (depth + 1) * FRAME_H;
	char b[32], bl[32], bh[32], fill[32], life[256];

	per = profile_bytes_per_sample(w->p, n->bytes, n->samples);
	poisson_interval95((double)n->samples, &lo, &hi);
	human_bytes(b, sizeof(b), (double)n->bytes);
	human_bytes(bl, sizeof(bl), lo * per);
	human_bytes(bh, sizeof(bh), hi * per);
	colour(n->name, fill, sizeof(fill));
	fprintf(w->out, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%d\" data-t=\"", x,
		share, depth);
	xml_text(w->out, n->name);
	fprintf(w->out, " \u2014 %s (%.2f%%), 95%% interval [%s, %s], %lld samples", b, 100 * share,
		bl, bh, (long long)n->samples);
	if (n->life) {
		lifetime_summary(n->life, life, sizeof(life));
		fputs("; ", w->out);
		xml_text(w->out, life);
	}
	fputs("\"><title>", w->out);
	xml_text(w->out, n->name);
	fprintf(w->out, "\n%s, %.2f%% of the view\n95%% interval [%s, %s] (%lld samples)", b,
		100 * share, bl, bh, (long long)n->samples);
	if (n->life) {
		fputc('\n', w->out);
		xml_text(w->out, life);
	}
	fputs("</title>", w->out);
	fprintf(w->out,
		"<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>"
		"<text x=\"%.2f\" y=\"%d\">",
		px, y, pw, FRAME_H - 1, fill, px + 3, y + FRAME_H - 5);
	/* The label as the script draws it (for viewers without scripts). */
	{
		int fits = (int)floor((pw - 6) / 7);
		size_t len = strlen(n->name);

		if (fits >= 3 && len <= (size_t)fits) {
			xml_text(w->out, n->name);
		} else if (fits >= 3) {
			char cut[512];

			snprintf(cut, sizeof(cut), "%.*s..", fits - 2 < 500 ? fits - 2 : 500,
				 n->name);
			xml_text(w->out, cut);
		}
	}
	fprintf(w->out, "</text></g>\n");
	for (const struct node *c = n->child; c; c = c->next) {
		if (c->bytes / w->total >= MIN_SHARE)
			write_node(w, c, x, depth + 1, height);
		x += c->bytes / w->total;
	}
}

/* The script: zoom, search, details.  Frames carry their geometry as
 * shares of the whole (data-x, data-w) and their depth (data-d). */
static const char script[] =
    "var W="
    "1200"
    ",PX=10,frames=[],focus=null,details,searchInfo,matchRe=null;\n"
    "window.addEventListener('error',function(e){\n"
    " document.documentElement.setAttribute('data-error',String(e.message));});\n"
    "function init(){\n"
    " var gs=document.querySelectorAll('g.f');\n"
    " for(var i=0;i<gs.length;i++){var g=gs[i];frames.push({g:g,x:+g.getAttribute('data-x'),\n"
    "  w:+g.getAttribute('data-w'),d:+g.getAttribute('data-d'),r:g.querySelector('rect'),\n"
    "  t:g.querySelector('text'),name:g.querySelector('title').textContent.split('\\n')[0]});\n"
    "  g.addEventListener('click',zoomTo.bind(null,frames[i]));\n"
    "  g.addEventListener('mouseover',show.bind(null,frames[i]));\n"
    "  g.addEventListener('mouseout',function(){details.textContent=' ';});}\n"
    " details=document.getElementById('details');searchInfo=document.getElementById('matched');\n"
    " document.getElementById('reset').addEventListener('click',function(){zoomTo(null);});\n"
    " document.getElementById('search').addEventListener('click',askSearch);\n"
    " document.addEventListener('keydown',function(e){\n"
    "  if((e.ctrlKey||e.metaKey)&&e.key=='f'){e.preventDefault();askSearch();}\n"
    "  else if(e.key=='Escape'){zoomTo(null);setSearch(null);}});\n"
    " window.addEventListener('hashchange',fromHash);\n"
    " draw();fromHash();document.documentElement.setAttribute('data-ready','1');}\n"
    "function fromHash(){var h=location.hash.slice(1).split('&');\n"
    " for(var i=0;i<h.length;i++){var k=h[i].split('=')[0],v=h[i].slice(k.length+1);\n"
    "  try{v=decodeURIComponent(v);}catch(e){continue;}\n"
    "  if(k=='search')setSearch(v);else if(k=='zoom')zoomTo(widest(v));}}\n"
    "function widest(s){var re,best=null;try{re=new RegExp(s);}catch(e){return null;}\n"
    " for(var i=0;i<frames.length;i++){var f=frames[i];\n"
    "  if(re.test(f.name)&&(!best||f.w>best.w||f.w==best.w&&f.d<best.d))best=f;}\n"
    " return best;}\n"
    "function show(f){details.textContent=f.g.getAttribute('data-t');}\n"
    "function inside(f,z){return f.d>=z.d&&f.x>=z.x-1e-12&&f.x+f.w<=z.x+z.w+1e-9;}\n"
    "function below(f,z){return f.d<z.d&&f.x<=z.x+1e-12&&f.x+f.w>=z.x+z.w-1e-9;}\n"
    "function zoomTo(f){focus=f;draw();}\n"
    "function draw(){\n"
    " var z=focus||{x:0,w:1,d:0},span=W-2*PX;\n"
    " for(var i=0;i<frames.length;i++){var f=frames[i],x,w,show=true,dim=false;\n"
    "  if(inside(f,z)){x=(f.x-z.x)/z.w;w=f.w/z.w;}\n"
    "  else if(below(f,z)){x=0;w=1;dim=true;}else show=false;\n"
    "  if(!show||w*span<0.5){f.g.style.display='none';continue;}\n"
    "  f.g.style.display='';f.r.setAttribute('x',PX+x*span);f.r.setAttribute('width',w*span);\n"
    "  f.t.setAttribute('x',PX+x*span+3);f.g.style.opacity=dim?0.6:1;\n"
    "  var fits=Math.floor((w*span-6)/7);\n"
    "  f.t.textContent=fits<3?'':(f.name.length<=fits?f.name:f.name.slice(0,fits-2)+'..');\n"
    "  f.r.style.fill=matchRe&&matchRe.test(f.name)?'rgb(220,60,220)':'';}\n"
    " document.getElementById('reset').style.opacity=focus?1:0.35;}\n"
    "function askSearch(){var s=prompt('Search frames (regular "
    "expression)',matchRe?matchRe.source:'');\n"
    " if(s===null)return;setSearch(s);}\n"
    "function setSearch(s){\n"
    " try{matchRe=s?new RegExp(s):null;}catch(e){matchRe=null;searchInfo.textContent='bad "
    "expression';return;}\n"
    " var hits=frames.filter(function(f){return matchRe&&matchRe.test(f.name);});\n"
    " hits.sort(function(a,b){return a.x-b.x||a.d-b.d;});\n"
    " var sum=0,end=-1;for(var i=0;i<hits.length;i++){var h=hits[i];\n"
    "  if(h.x>=end-1e-12){sum+=h.w;end=h.x+h.w;}else "
    "if(h.x+h.w>end){sum+=h.x+h.w-end;end=h.x+h.w;}}\n"
    " searchInfo.textContent=matchRe?('matched '+(100*sum).toFixed(2)+'% of the view'):'';\n"
    " draw();}\n"
    "window.addEventListener('load',init);\n";

int flamegraph_svg_write(FILE *out, const struct profile *p, enum memprof_view v)
{
	struct node *root = node_new("all");
	struct writer w = {.out = out, .p = p};
	int height, rc = 0;
	char b[32];

	if (!root)
		return -1;
	for (size_t i = 0; i < p->n_stacks && !rc; i++) {
		const struct profile_stack *s = &p->stacks[i];
		const char *names[PROFILE_MAX_NAMES];
		size_t n;
		struct node *at = root;

		if (s->bytes[v] <= 0)
			continue;
		n = profile_stack_names(s, names, PROFILE_MAX_NAMES);
		root->bytes += s->bytes[v];
		root->samples += s->samples[v];
		if (s->life && !root->life && !(root->life = calloc(1, sizeof(*root->life)))) {
			rc = -1;
			break;
		}
		if (s->life)
			lifetime_dist_merge(root->life, s->life);
		for (size_t k = n; k-- > 0;) {
			at = child_of(at, names[k]);
			if (!at) {
				rc = -1;
				break;
			}
			at->bytes += s->bytes[v];
			at->samples += s->samples[v];
			if (s->life && !at->life && !(at->life = calloc(1, sizeof(*at->life)))) {
				rc = -1;
				break;
			}
			if (s->life)
				lifetime_dist_merge(at->life, s->life);
		}
	}
	if (rc) {
		node_free(root);
		return -1;
	}
	w.total = root->bytes > 0 ? (double)root->bytes : 1;
	w.max_depth = depth_of(root, w.total);
	height = TOP + (w.max_depth + 1) * FRAME_H + BOTTOM;
	human_bytes(b, sizeof(b), (double)root->bytes);

	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		WIDTH, height, WIDTH, height);
	fprintf(out, "<style>\n"
		     "text{font-family:'DejaVu Sans Mono',monospace;font-size:12px;fill:#222}\n"
		     "#title{font-size:17px;font-family:sans-serif}\n"
		     ".btn{cursor:pointer;fill:#1a5fb4;font-family:sans-serif;font-size:13px}\n"
		     "g.f{cursor:pointer}g.f:hover rect{stroke:#333;stroke-width:0.8}\n"
		     "</style>\n");
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n", script);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fbf8f1\"/>\n", WIDTH,
		height);
	fprintf(out,
		"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">memprof-bpf: %s view "
		"of process %d, %s estimated (rate %g per word)</text>\n",
		WIDTH / 2, memprof_view_names[v], (int)p->meta.pid, b, p->meta.rate);
	fprintf(out,
		"<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"46\">Reset zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"46\" "
		"text-anchor=\"end\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"46\" text-anchor=\"end\"> </text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
		PAD_X, WIDTH - PAD_X, WIDTH - PAD_X - 60, PAD_X, height - 12);
	fprintf(out, "<g id=\"frames\">\n");
	if (root->bytes > 0)
		write_node(&w, root, 0, 0, height);
	else
		fprintf(out, "<text x=\"%d\" y=\"%d\">nothing sampled in this view</text>\n", PAD_X,
			TOP + 20);
	fprintf(out, "</g>\n</svg>\n");
	node_free(root);
	return ferror(out) ? -1 : 0;
}
