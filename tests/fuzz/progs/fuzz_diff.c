/*
 * libFuzzer target: diff's readers (diff_input.c: folded, pprof, gzipped
 * or not) on arbitrary bytes, then its join and its three writers
 * (diff_output.c).  The first byte picks the options: bits 0-1 the view,
 * bit 2 --normalize, bit 3 --rate 0.01, bit 4 the input is BASE (else NEW);
 * the other side is a small fixed folded profile.  Any input must be read
 * or refused with one message, never crash, leak or overflow, and what is
 * read must hold diff's promises: stacks without control characters, no
 * frame ending in a space, within the limits, weights from 0 to 2^62.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cmd/diff.h"

static const char other[] = "main;a 800\nmain;b;c 1600\nmain;x 8\n";

/* A memfd holding data; its path into path. */
static int memfd_of(const void *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz-diff", MFD_CLOEXEC);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* diff's promises about what it read. */
static void check(const struct input *in)
{
	double total = 0;

	if (in->n > DIFF_MAX_STACKS || in->frames > DIFF_MAX_FRAMES_TOTAL)
		abort();
	for (size_t i = 0; i < in->n; i++) {
		const struct entry *e = &in->e[i];
		size_t frames = *e->stack != '\0';

		if (!(e->bytes >= 0 && e->bytes <= DIFF_MAX_WEIGHT) ||
		    !(e->objects >= 0 && e->objects <= DIFF_MAX_WEIGHT))
			abort();
		total += e->bytes;
		for (const char *c = e->stack; *c; c++) {
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				abort();
			if (*c == ' ' && (c[1] == ';' || c[1] == '\0'))
				abort();
			frames += *c == ';';
		}
		if (frames > DIFF_MAX_FRAMES)
			abort();
		/* Sorted and merged: each stack once. */
		if (i && strcmp(in->e[i - 1].stack, e->stack) >= 0)
			abort();
	}
	if (total > DIFF_MAX_WEIGHT * 1.0001)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diff_opts o = {.rows = 20};
	struct input a = {0}, b = {0};
	char fuzzed[64], fixed[64];
	int flags = size ? data[0] : 0, fd1, fd2;
	struct change *c;
	double scale = 1;
	size_t n = 0;
	FILE *out;

	fd1 = memfd_of(size ? data + 1 : data, size ? size - 1 : 0, fuzzed, sizeof(fuzzed));
	fd2 = memfd_of(other, sizeof(other) - 1, fixed, sizeof(fixed));
	o.view = (enum memprof_view)(flags & 3);
	o.normalize = !!(flags & 4);
	o.rate = flags & 8 ? 0.01 : 0;
	o.base = flags & 16 ? fuzzed : fixed;
	o.new_ = flags & 16 ? fixed : fuzzed;
	if (diff_read_input(&a, o.base, &o) || diff_read_input(&b, o.new_, &o))
		goto out;
	check(&a);
	check(&b);
	if (o.normalize && a.total >= 1)
		scale = b.total / a.total;
	c = diff_join(&a, &b, scale, &n);
	if (!c)
		abort();
	out = fopen("/dev/null", "w");
	if (!out)
		abort();
	if (diff_write_folded(out, c, n) || diff_write_pprof(out, c, n, &o, &a, &b) ||
	    diff_write_text(out, c, n, &o, &a, &b, scale))
		abort();
	fclose(out);
	free(c);
out:
	diff_input_free(&a);
	diff_input_free(&b);
	close(fd1);
	close(fd2);
	return 0;
}
