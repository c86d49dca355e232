/*
 * tests/preload harness: run a real program under LD_PRELOAD of
 * build/libmemprof-preload.so and read what it printed.
 *
 * The helper programs (tests/preload/progs/) print "key=value" lines; the
 * tests look values up by key.  Files are read with testlib.h's read_file.
 */
#ifndef PRELOAD_HARNESS_H
#define PRELOAD_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

#include "testlib.h" /* read_file, the statistical bounds */

struct run_result {
	int status; /* wait status */
	char *out;  /* stdout, NUL-terminated */
	char *err;  /* stderr, NUL-terminated */
};

/* Absolute path of the preload library, or of a helper program. */
const char *preload_library(void);
const char *preload_prog(const char *name);

/*
 * Run argv (argv[0] a path) with LD_PRELOAD set to the library (when
 * preload is nonzero) and the "NAME=value" strings of env (NULL-terminated,
 * may be NULL) added.  Fails the test if the program cannot be started.
 */
void run_program(const char *const argv[], const char *const env[], int preload,
		 struct run_result *r);
void run_result_free(struct run_result *r);

/* Exited with status 0? */
int run_ok(const struct run_result *r);
/* The value printed as "key=value" (last one wins); fails the test if absent. */
long long result_num(const struct run_result *r, const char *key);
/* Same, NULL if absent. */
const char *result_str(const struct run_result *r, const char *key);

/* Start argv like run_program, stdout and stderr to files; returns its pid. */
pid_t spawn_program(const char *const argv[], const char *const env[], int preload,
		    const char *out_path, const char *err_path);
/* Wait for pid: its wait status. */
int wait_program(pid_t pid);
/* Waiting until a file exists and is not empty: wait_nonempty_file (testlib.h). */

#endif
