/* Helpers of the lifetime and timeline tests: run a program under the
 * malloc host with the loader attached until it exits; read CSV cells. */
#ifndef LIFETIMES_UTIL_H
#define LIFETIMES_UTIL_H

#include <stddef.h>

#include "testlib.h"

#define LOADER_BIN "build/memprof-bpf"
#define PRELOAD_SO "build/libmemprof-preload.so"
#define PROG_BIN "build/tests/lifetimes/progs/lifetimes_prog"
#define BLOCK_WORDS 512 /* lifetimes_prog's BLOCK_BYTES / 8 */

/* A fresh temporary directory (removed at exit). */
void lt_tmpdir(char *out, size_t len);

/*
 * Run PROG_BIN READY mode under the preload, attach the loader at rate with
 * the extra arguments (NULL-terminated) until the program exits.  The
 * program's stdout goes to dir/prog.out, the loader's stderr to
 * dir/loader.err.  The loader's exit code, or -1 if the program did not
 * start or did not exit 0.
 */
int lt_run(const char *mode, const char *dir, const char *rate, const char *const extra[]);

/*
 * The same with n_progs programs (modes[k] each, at most LT_MAX_PROGS),
 * all attached by one loader (attach PID PID...); their pids into pids
 * (unless NULL).  The first program's output is dir/prog.out, the k-th's
 * dir/progK.out.
 */
#define LT_MAX_PROGS 4
int lt_run_multi(const char *const modes[], int n_progs, const char *dir, const char *rate,
		 const char *const extra[], int *pids);

/* The first line of a file, malloc'ed (no newline); NULL if unreadable. */
char *lt_first_line(const char *path);

/*
 * The cell of column col in the row whose first field is site, in a CSV
 * file with a header line (unquoted fields only).  0 and out set, or -1.
 */
int lt_csv_cell(const char *path, const char *site, const char *col, char *out, size_t len);
/* The same as a number; NAN if missing or empty. */
double lt_csv_num(const char *path, const char *site, const char *col);

/* floor(log2(ms * 1000)): the log2 slot of a lifetime in microseconds, less one. */
int lt_log2_us(double ms);

#endif
