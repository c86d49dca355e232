/* Helpers of the lifetime and timeline tests: run a program under the
 * malloc host with the loader attached until it exits; read CSV cells. */
#ifndef LIFETIMES_UTIL_H
#define LIFETIMES_UTIL_H

#include <stddef.h>
#include <sys/types.h>

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

/*
 * The same in steps, for a test that acts while the loader runs: start the
 * programs (as lt_run_multi; pids into p) and wait until each wrote its
 * ready file: 0, or -1.  Then start the loader on them (its pid, or -1;
 * its --ready-file is dir/ready.go, which the programs wait for),
 * and at last wait for the loader and the programs: the loader's exit code,
 * or -1 if a program did not exit 0 (they are killed if the loader failed).
 */
int lt_start_progs(const char *const modes[], int n_progs, const char *dir, pid_t *p);
pid_t lt_start_loader(const pid_t *p, int n_progs, const char *dir, const char *rate,
		      const char *const extra[]);
int lt_finish(pid_t loader, const pid_t *p, int n_progs);

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
