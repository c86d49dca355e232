/*
 * tests/inject helpers: start a real program (never under LD_PRELOAD), let
 * build/memprof-bpf inject the malloc host into it and attach, release the
 * program's workload once sampling is on, and compare the sites of the
 * folded output with the program's own exact counts.
 */
#ifndef INJECT_UTIL_H
#define INJECT_UTIL_H

#include <sys/types.h>

#include "exit_codes.h"

#define INJECT_LOADER INJECT_BUILD_DIR "/memprof-bpf"
#define INJECT_PROGS INJECT_BUILD_DIR "/tests/inject/progs"
#define INJECT_RATE "0.001"
/* Bytes one sample stands for at rate 0.001: 8 * round(65536 / 0.001) >> 16. */
#define INJECT_BYTES_PER_SAMPLE 8000.0
#define INJECT_MAX_SITES 8

struct session {
	char dir[64];
	char go[96], ready[96], out[96], err[96], views[96];
	pid_t prog;
	int loaders; /* loader runs so far (each logs to dir/loaderN.err) */
};

/* A fresh temporary folder and file names. */
void session_init(struct session *s);
/* Start the program: argv[0] a path, "@GO" stands for the go file; env
 * entries "NAME=value" added.  "@READY" stands for a file the program
 * writes once it is in the state the test needs: start waits for it. */
void session_start(struct session *s, const char *const argv[], const char *const env[]);
/*
 * Run the loader on the program with extra arguments (NULL-terminated);
 * with wait_sampling, return once it reports that the target samples (its
 * pid in *loader, still running), else wait for it.  Returns its log path;
 * *status gets its wait status when it was waited for.
 */
const char *session_loader(struct session *s, const char *const extra[], int wait_sampling,
			   pid_t *loader, int *status);
/* Let the program's workload start. */
void session_go(struct session *s);
/* Wait for a process: its wait status. */
int session_wait(pid_t pid);
void session_end(struct session *s);

/* Wait for the program to end: exit 0, its output holding `holds`. */
void session_expect_finish(struct session *s, const char *holds);
/* Attach for 0.3 s (-o /dev/null), expecting an injection and exit 0: the
 * loader's log (malloc'ed). */
char *session_inject_briefly(struct session *s);
/* Write bytes into a FIFO the program reads. */
void fifo_put(const char *fifo, const char *bytes);

/* Program output of a run without any tracer (the go file made first). */
char *plain_output(const char *const argv[], const char *const env[]);

/* A whole file, malloc'd and NUL-terminated (the test fails if unreadable). */
char *slurp(const char *path);
/* How many times needle occurs in the target's /proc/PID/maps. */
int maps_count(pid_t pid, const char *needle);
/* /proc/PID/maps now (malloc'ed). */
char *maps_snapshot(pid_t pid);
/*
 * Regions of `after` (maps texts) that were mapped without write permission
 * in `before` and are writable now (the GOT's RELRO pages left open):
 * their count, the first one's line in what.
 */
int maps_gained_write(const char *before, const char *after, char *what, size_t len);
/* Whether some thread of pid has a tracer (TracerPid). */
int inject_traced(pid_t pid);
/* Wait (spinning: a tracer may hold a thread for only a moment) until
 * inject_traced(pid): 0, or -1 after timeout_s. */
int wait_traced(pid_t pid, double timeout_s);

/*
 * The program printed "site NAME words W" lines; the folded file weighs
 * stacks in bytes.  A stack belongs to the innermost of its frames named
 * like a site.  Given the samples of all the sites together, each site's
 * count is binomial with the site's share of the words: check it within
 * TEST_SIGMAS (5.7) standard deviations, and that at least min_samples were
 * taken.
 */
void check_site_shares(const char *program_out, const char *folded, double min_samples);

#endif
