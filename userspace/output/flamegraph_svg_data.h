/*
 * What the SVG flame graph draws (flamegraph_svg.c), for every view of the
 * profile: one tree per view (the stacks merged root first, children by
 * name), frame names, lines and allocation sites shared in one string
 * table, and the data script that carries them all to the SVG's own script
 * (flamegraph_svg_script.c), which draws the view chosen.
 */
#ifndef MEMPROF_FLAMEGRAPH_SVG_DATA_H
#define MEMPROF_FLAMEGRAPH_SVG_DATA_H

#include <stdint.h>
#include <stdio.h>

#include "core/idmap.h"
#include "profile.h"

/*
 * The views the SVG switches between: every view the profile has, in the
 * order of enum memprof_view (named by memprof_view_names).  A view added
 * to the profile is one more button, key and data array, with no other
 * change here or in the script.
 */
#define SVG_N_VIEWS MEMPROF_N_VIEWS

/* Frames narrower than this share of their view are left out. */
#define SVG_MIN_SHARE 1e-4

/* Distinct strings, numbered from 0 in the order they came. */
struct svg_strings {
	struct idmap map; /* hash -> number */
	char **strs;	  /* owned */
	int32_t *out;	  /* number in the data script's table, -1 not written yet */
	size_t n, cap;
	int32_t n_out;
};

/* The line of a frame with the bytes through it (one per distinct line). */
struct svg_tally {
	int32_t id; /* string: " (file:line)" */
	int64_t bytes;
};

struct svg_node {
	int32_t name; /* string */
	int64_t bytes, samples;
	struct lifetime_dist *life; /* of the stacks through this frame, or NULL */
	struct svg_node *child, *next;
	/* Lines of this frame: the first SVG_MAX_LINES distinct ones. */
	struct svg_tally *lines;
	uint16_t n_lines, more_lines;
	/* Allocation sites of the stacks through it (stacks come by site). */
	int32_t site_cur, site_best; /* in svg_data.sites, -1 none */
	int64_t site_cur_bytes, site_best_bytes;
	uint32_t n_sites;
};
#define SVG_MAX_LINES 64

/* A stack as the trees take it: root first, string numbers. */
struct svg_path {
	size_t n;
	int32_t *name, *tip; /* tip -1: no line */
	int32_t site;	     /* in svg_data.sites */
};

/* An allocation site: its name as a frame's, and what site_format adds to it. */
struct svg_site {
	int32_t name, tip; /* strings; tip -1: no line */
	int32_t out;	   /* number in the data script's table, -1 not written yet */
};

struct svg_data {
	const struct profile *p;
	struct svg_strings str;
	struct svg_site *sites;
	size_t n_sites, cap_sites;
	struct idmap site_map; /* (name, tip) -> number in sites */
	int32_t n_sites_out;
	struct svg_path *paths; /* per profile stack */
	size_t *by_site;	/* stack numbers, in order of their sites */
	struct svg_node *views[SVG_N_VIEWS];
	char *scratch[2]; /* names being formatted */
	size_t scratch_len[2];
};

/* Every view's tree.  0, or -1 out of memory (svg_data_free() then). */
int svg_data_build(struct svg_data *d, const struct profile *p);
void svg_data_free(struct svg_data *d);

const char *svg_str(const struct svg_data *d, int32_t id);
/* A node's children kept in the picture of a view of total bytes. */
int svg_node_kept(const struct svg_node *n, double total);

/*
 * The data script: var D={...} with the views' names, the run's pid and
 * rate, the view shown first, every view's frames (preorder, kept ones
 * only) and the strings they use.  0, or -1 on an error.
 */
int svg_data_write(FILE *out, struct svg_data *d, enum memprof_view first);

#endif
