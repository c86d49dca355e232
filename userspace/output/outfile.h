/*
 * Output files that survive errors, for every writer of the loader.
 *
 * - outfile_open() runs before tracing: a bad path fails at once, with the
 *   reason, before any sample is taken.  A regular file is written through
 *   an anonymous temporary file in its directory (O_TMPFILE, else a hidden
 *   named one) that is linked into place only when complete, so a crash or
 *   a kill leaves either the old file or the whole new one, never half.
 *   Devices and FIFOs (/dev/stdout, a pipe) are written in place.
 * - outfile_write() runs a writer; on a write error (full disk, closed
 *   pipe, EIO) it gives the reason and writes the profile again into a
 *   fallback file in $TMPDIR (or /tmp), and says where.
 */
#ifndef MEMPROF_OUTFILE_H
#define MEMPROF_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct outfile {
	char *path;	/* the final path; NULL: standard output */
	char *tmp_path; /* named temporary file, NULL if none (O_TMPFILE, in place) */
	int fd;		/* open descriptor (1 for standard output) */
	int in_place;	/* written directly (device, FIFO, stdout) */
	int anonymous;	/* an O_TMPFILE: linked into place at the end */
	char *fallback; /* after a failed write: where the profile went, or NULL */
};

/*
 * Writes a whole profile to f, a buffered stream on the output (a regular
 * file's temporary, put in place only once complete).  It may be run a
 * second time, into the fallback file, after a write error: it must leave
 * ctx as it found it.  0, or -1 with errno set.  The output is never held
 * whole in memory (at 10,000 stacks a folded profile is about 5 MiB).
 */
typedef int (*outfile_writer)(FILE *f, void *ctx);

/*
 * Open path (NULL or "-": standard output) for writing, before tracing.  0, or -1
 * with one line in err (the path and strerror).
 */
int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen);

/* Create directory dir if needed and check it can take files.  0 or -1. */
int outfile_make_dir(const char *dir, char *err, size_t errlen);

/*
 * Write the profile with fn(f, ctx) and put it in place.  On failure: -1,
 * err holds "cannot write PATH: REASON", and if the profile could be
 * written to a fallback file, o->fallback names it (err then ends with
 * "; the profile is in FALLBACK").  tag names the fallback file
 * (memprof-bpf-PID-XXXXXX-TAG, for instance "alloc.folded").
 */
int outfile_write(struct outfile *o, outfile_writer fn, void *ctx, const char *tag, char *err,
		  size_t errlen);

/* Drop an unwritten output (the temporary file goes); frees o. */
void outfile_close(struct outfile *o);

#endif
