/*
 * What the files of memprof-bpf diff share (cmd_diff.c): the two inputs
 * read (diff_input.c), their difference, and the writers of the pprof and
 * text outputs (diff_output.c).
 */
#ifndef MEMPROF_DIFF_H
#define MEMPROF_DIFF_H

#include <stddef.h>
#include <stdio.h>

#include "output/profile.h"

struct entry {
	char *stack; /* root;...;leaf */
	double bytes, objects;
};

struct input {
	const char *path;
	struct entry *e;
	size_t n, cap;
	double total;
	double period; /* bytes one sample stands for (0: unknown) */
	int is_pprof;
};

struct diff_opts {
	const char *base, *new_, *out;
	int format; /* FMT_FOLDED, FMT_PPROF or FMT_TEXT */
	enum memprof_view view;
	double rate; /* for folded inputs: the rate they were sampled at (0: inferred) */
	int normalize;
	unsigned long rows;
};

struct change {
	const char *stack; /* borrowed from an input */
	double base, new_, base_objects, new_objects;
};

/*
 * Read BASE or NEW (folded, or pprof: gzipped or not), its stacks sorted and
 * merged.  0, or -1 after the one-line message.
 */
int diff_read_input(struct input *in, const char *path, const struct diff_opts *o);
void diff_input_free(struct input *in);

/* The diff as pprof (signed weights) and as text (by site, intervals).  0 or -1. */
int diff_write_pprof(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		     const struct input *base, const struct input *nw);
int diff_write_text(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		    const struct input *base, const struct input *nw, double scale);

#endif
