/*
 * Helpers shared by every test area (tests/lib/, linked into every test):
 * the statistical bounds and reading what a program wrote.
 */
#ifndef TESTLIB_H
#define TESTLIB_H

#include <sys/types.h>

/*
 * Width of every statistical bound, in standard deviations, as in OCaml's
 * statmemprof tests: with fixed seeds a correct sampler stays inside, and
 * a biased one soon leaves.
 */
#define TEST_SIGMAS 5.7

/* TEST_SIGMAS standard deviations of a Binomial(n, p) count. */
double binomial_bound(double n, double p);
/* TEST_SIGMAS standard deviations of a Poisson count of the given mean. */
double poisson_bound(double mean);
/* |observed - n p| <= binomial_bound(n, p) (exact when p is 0 or 1). */
int within_binomial(double observed, double n, double p);
/* |observed - mean| <= poisson_bound(mean). */
int within_poisson(double observed, double mean);

/* A whole file, malloc'ed and NUL-terminated; NULL if unreadable. */
char *read_file(const char *path);
/*
 * The number after "KEY " in text, where KEY (which may hold spaces)
 * starts the text or follows whitespace: "rounds 4096", or
 * "site site_x words 80" with key "site site_x words".  0 and *out set, or
 * -1 if no such key is followed by a number.
 */
int text_value(const char *text, const char *key, double *out);
/* The same in a file; -1 also if the file cannot be read. */
int file_value(const char *path, const char *key, double *out);

/*
 * Waiting for events, never for a time.  The bound of every wait is a
 * failure detector only, far above the slowest start-up seen (the loader's
 * BPF verifier alone took up to 3 s on a loaded 2-core machine): a correct
 * run never comes near it.
 */
#define TEST_EVENT_TIMEOUT_S 120.0

/*
 * Wait until the loader `loader` (a child of the test) has written its
 * --ready-file `path`: 0.  If it exits first: 1, its exit code (or 128 +
 * the signal) in *code, and the child is reaped.  -1 after timeout_s.
 */
int wait_loader_ready(pid_t loader, const char *path, double timeout_s, int *code);
/*
 * Wait until thread tid is blocked in system call nr (its
 * /proc/TID/syscall): 0, or -1 after timeout_s (or when the thread is
 * gone).
 */
int wait_in_syscall(pid_t tid, long nr, double timeout_s);
/* CLOCK_MONOTONIC in seconds. */
double test_now_s(void);
/* Sleep s seconds: a pause between polls, or a draw of a random instant, never a wait for an event.
 */
void test_sleep_s(double s);
/* A draw in [0, 1) from rand() (seeded by the test, its seed printed). */
double test_uniform(void);
/* Wait until path exists and is not empty: 0, or -1 after timeout_s. */
int wait_nonempty_file(const char *path, double timeout_s);

/*
 * Start argv[0] (a path) with argv, without LD_PRELOAD, env's "NAME=value"
 * entries added (env may be NULL), stdout and stderr to files (NULL:
 * /dev/null): its pid, or -1.  It gets SIGTERM when the test ends early (a
 * failed assertion, Criterion's timeout), so that no loader stays attached
 * and no program runs on after its test.
 */
pid_t test_spawn(const char *const argv[], const char *const env[], const char *out,
		 const char *err);

#endif
