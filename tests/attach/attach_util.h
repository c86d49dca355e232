/* Helpers of the attach tests: real processes, files, parsed outputs. */
#ifndef ATTACH_UTIL_H
#define ATTACH_UTIL_H

#include <stdint.h>
#include <sys/types.h>

#include "testlib.h"

#define LOADER_BIN "build/memprof-bpf"
#define TRIGGER_BIN "build/tests/attach/progs/trigger"
#define TRIGGER_SO_BIN "build/tests/attach/progs/trigger-so"
#define WORKLOAD_BIN "build/workload-sites"

#define MAX_SITES 16
#define SITE_NAME_MAX 64

/* Per-site numbers, from a program's "site NAME key value..." lines or
 * from a folded file (weights summed by the innermost "site_" frame). */
struct site_table {
	int n;
	char name[MAX_SITES][SITE_NAME_MAX];
	/* Folded: [0] bytes.  Trigger: words, live_words, sampled_words,
	 * samples, est_bytes.  Workload: words, live_words. */
	long long v[MAX_SITES][5];
};

/* A fresh temporary directory; path is static per call site (copy it). */
void tmpdir_make(char *out, size_t len);

/* fork+exec argv with stdout/stderr to files (NULL: /dev/null). */
pid_t spawn(char *const argv[], const char *out, const char *err);
/* Exit code, or 128 + signal. */
int wait_exit(pid_t pid);
/* Wait until pid's /proc/PID/maps names needle: 0, or -1. */
int wait_mapped(pid_t pid, const char *needle);
/* Wait until pid runs the executable path (after its exec): 0, or -1. */
int wait_exec(pid_t pid, const char *path);
/* Wait until path exists (returns 0) or timeout_s pass (-1). */
int wait_file(const char *path, double timeout_s);

/* Start the trigger with args (NULL-terminated); returns its pid once ready. */
pid_t trigger_start(const char *dir, const char *out, const char *const args[]);
/* The same with another trigger binary (TRIGGER_SO_BIN). */
pid_t trigger_start_bin(const char *bin, const char *dir, const char *out,
			const char *const args[]);

/*
 * The loader the tests run: LOADER_BIN, or $MEMPROF_BPF_LOADER (to show
 * that a test fails with another build, say main's).
 */
const char *loader_bin(void);

/* Run the loader to completion with args; stderr to err_path. Exit code. */
int loader_run(const char *err_path, const char *const args[]);
/* The same with the loader's stdout to out_path. */
int loader_run_out(const char *out_path, const char *err_path, const char *const args[]);
/* Start the loader (for concurrent runs). */
pid_t loader_start(const char *err_path, const char *const args[]);
/*
 * Start the loader with args and --ready-file in dir, and return its pid
 * once it is attached.  If it exits first: 0, and its exit code in *code;
 * -1 when it neither attached nor exited within TEST_EVENT_TIMEOUT_S.
 */
pid_t loader_start_ready(const char *dir, const char *err_path, const char *const args[],
			 int *code);

int site_table_read_folded(const char *path, struct site_table *t);
int site_table_read_lines(const char *path, struct site_table *t);
/* Index of name, or -1. */
int site_table_find(const struct site_table *t, const char *name);
long long site_value(const struct site_table *t, const char *name, int col);

/* Value of key in the loader's "memprof-bpf: stats:" line, or -1. */
long long loader_stat(const char *err_path, const char *key);
/* Lines in a file (-1 if unreadable); file_contains: 1 if it holds needle.
 * Whole files: read_file (testlib.h). */
int file_lines(const char *path);
int file_contains(const char *path, const char *needle);
/* Wait until path contains needle (0) or timeout_s pass (-1). */
int wait_text(const char *path, const char *needle, double timeout_s);

/* Read the control block of pid (finds memprof_probe_control). 0 or -1. */
struct memprof_probe_control;
int target_control(pid_t pid, struct memprof_probe_control *out);
/*
 * Wait until pid's control block satisfies done (0), or -1 after
 * TEST_EVENT_TIMEOUT_S.  The common conditions below.
 */
int wait_target_control(pid_t pid, int (*done)(const struct memprof_probe_control *));
int control_sampled_once(const struct memprof_probe_control *c); /* samples > 0 */
int control_sampling_on(const struct memprof_probe_control *c);	 /* a rate in force */
int control_sampling_off(const struct memprof_probe_control *c); /* no rate, no owner */

#endif
