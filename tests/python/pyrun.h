/*
 * Helpers of the Python host's tests (the test_ files of this folder): a traced run
 * of a Python program, driven by events, never by a time.
 *
 * The programs (the .py files of progs/) print "ready PID" once, then a line starting
 * with "round" each time they finish a unit of work, and stop when their
 * stop file exists.  A test starts one (pyrun_start), attaches the loader
 * without a duration (pyrun_attach: it ends with the program), waits until
 * the loader says the target samples and the program has done n more
 * rounds (pyrun_wait_rounds), then stops the program and checks that both
 * ended well (pyrun_finish).  So a run holds as many samples on a loaded
 * machine as on an idle one.
 */
#ifndef PYRUN_H
#define PYRUN_H

#include <sys/types.h>

#define PYTHON "/usr/bin/python3"
#define LOADER PYTHON_BUILD_DIR "/memprof-bpf"
#define SCRIPT PYTHON_PROGS_DIR "/three_funcs.py"
#define CTYPES_SCRIPT PYTHON_PROGS_DIR "/ctypes_alloc.py"
#define FAKE PYTHON_BUILD_DIR "/tests/python/progs/fake_cpython"
#define EMBED PYTHON_BUILD_DIR "/tests/python/progs/embed_app"
/* Per word: the host samples per byte at an eighth of it. */
#define RATE "1e-4"
#define RATE_PER_BYTE (1e-4 / 8)

/* The test's own folder (pyrun_setup makes it, pyrun_teardown removes it). */
extern char pyrun_dir[64];
void pyrun_setup(void);
void pyrun_teardown(void);

/* "<pyrun_dir>/name" into buf. */
void pyrun_path(char *buf, size_t len, const char *name);

struct pyrun {
	char out[128], err[128], stop[128], lerr[128];
	pid_t prog, loader;
	int attaches; /* loaders started: the n-th writes loader<n>.err */
};

/* argv with its output to files (testlib's test_spawn): its pid. */
pid_t pyrun_spawn(const char *const argv[], const char *out, const char *err);
int pyrun_wait_status(pid_t pid);
/* Wait until the file at path holds text: 0, or -1 after the event timeout. */
int pyrun_wait_text(const char *path, const char *text);

/* Start argv (python3 and its arguments, env's NAME=value added) and wait for "ready".
 * argv may name r->stop: this sets it (<pyrun_dir>/stop) before the start. */
void pyrun_start(struct pyrun *r, const char *const argv[], const char *const env[]);
/*
 * Attach a loader to the program: LOADER attach PID -v ARGS... (ARGS NULL
 * ended, no -d: it ends with the program, or on SIGINT); its stderr in
 * r->lerr.
 */
void pyrun_attach(struct pyrun *r, const char *const args[]);
/* Wait until the loader says the target samples, then for n more "round" lines. */
void pyrun_wait_rounds(struct pyrun *r, int n);
/* Wait for n more "round" lines of the program. */
void pyrun_wait_more_rounds(struct pyrun *r, int n);
/* Stop the loader (SIGINT) and check that it ended well; the program runs on. */
void pyrun_detach(struct pyrun *r);
/* Stop the program (its stop file); check that it and the loader, if any, ended well. */
void pyrun_finish(struct pyrun *r);

/* The line of SCRIPT that holds text (1-based), or 0. */
int pyrun_script_line(const char *text);
/* The "hooked" and "unhooked" lines the program printed, in order (malloc'd). */
char *pyrun_hook_lines(const char *path);
/* The weight of a folded file's stacks that hold key. */
double pyrun_weight_with(const char *path, const char *key);
/* The same over the .folded files of a folder (snapshots). */
double pyrun_snapshots_weight_with(const char *dir, const char *key);

#endif
