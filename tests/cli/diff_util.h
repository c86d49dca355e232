/* Helpers of the diff tests (tests/cli/test_diff*.c). */
#ifndef DIFF_UTIL_H
#define DIFF_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

/* path holding text (the test fails if it cannot be written). */
void write_text(const char *path, const char *text);

/* One sample of a pprof input: its frames, innermost first, and its bytes. */
struct psample {
	const char *frames[8];
	int64_t bytes;
};

/* A pprof profile (alloc_objects, alloc_space) of n <= 16 samples, gzipped or not. */
void write_pprof(const char *path, const struct psample *s, size_t n, int gz);
/* A pprof file, gzipped or not, decoded (free with pprof__profile__free_unpacked). */
Pprof__Profile *read_pprof(const char *path);

/*
 * The loader run with args, its address space limited to as_bytes
 * (RLIMIT_AS), stdout and stderr into files.  Its exit code.
 */
int diff_run_limited(const char *out, const char *err, const char *const args[], size_t as_bytes);

#endif
