/*
 * What the files of memprof-bpf diff share (cmd_diff.c): the two inputs
 * read (diff_input.c), their difference, and the writers of the pprof and
 * text outputs (diff_output.c).
 */
#ifndef MEMPROF_DIFF_H
#define MEMPROF_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output/profile.h"

/*
 * What diff reads of each input, at most (its --help and the man page say
 * so).  Past any of them it stops with one line naming the file and the
 * limit, exit 1.  Within them its memory is about 1.5 times the inputs'
 * size plus 150 bytes a stack, and the pprof output adds about 1 KiB a
 * stack (its encoder's): 1.1 GiB for 2^20 one-frame stacks.
 *   DIFF_MAX_INPUT_MIB     the input's bytes, once decompressed; for a pprof
 *                          input, also its stacks spelled out as folded text
 *   DIFF_MAX_DECODE_MIB    the memory decoding a pprof input takes
 *   DIFF_MAX_STACKS        stacks: lines of a folded input, samples of pprof
 *   DIFF_MAX_FRAMES        frames of one stack
 *   DIFF_MAX_FRAMES_TOTAL  frames of all its stacks
 */
#define DIFF_MAX_INPUT_MIB 256
#define DIFF_MAX_DECODE_MIB 256
#define DIFF_MAX_STACKS (1 << 20)
#define DIFF_MAX_FRAMES 4096
#define DIFF_MAX_FRAMES_TOTAL (1 << 24)

/*
 * The most bytes (and objects) one input may weigh in all, 2^62: every
 * weight, sum and difference of two inputs then fits in an int64_t.  Weights
 * are finite and not negative.
 */
#define DIFF_MAX_WEIGHT (INT64_C(1) << 62)

struct entry {
	char *stack; /* root;...;leaf */
	double bytes, objects;
};

struct text_block;

struct input {
	const char *path;
	struct entry *e;
	size_t n, cap;
	size_t frames; /* of every stack read */
	double total;
	double period; /* bytes one sample stands for (0: unknown) */
	int is_pprof;
	char *text;		   /* a folded input's text, which its stacks point into */
	struct text_block *blocks; /* a pprof input's stacks */
	size_t text_bytes;	   /* of the blocks */
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
 * merged.  0, or the exit code after the one-line message.
 */
int diff_read_input(struct input *in, const char *path, const struct diff_opts *o);
void diff_input_free(struct input *in);

/*
 * The stacks of either input, in order, with their weights on both sides
 * (BASE's times scale).  calloc'ed (stacks borrowed), NULL out of memory.
 */
struct change *diff_join(const struct input *a, const struct input *b, double scale, size_t *n_out);

/* The diff as folded "stack BASE NEW", pprof (signed weights) and text (by site,
 * intervals).  0 or -1. */
int diff_write_folded(FILE *f, const struct change *c, size_t n);
int diff_write_pprof(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		     const struct input *base, const struct input *nw);
int diff_write_text(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		    const struct input *base, const struct input *nw, double scale);

#endif
