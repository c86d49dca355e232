/* Helpers of the OCaml host tests: real OCaml programs, the real loader. */
#ifndef OCAML_UTIL_H
#define OCAML_UTIL_H

#include <stdint.h>
#include <sys/types.h>

#define OCAML_LOADER "build/memprof-bpf"
/* tests/ocaml5/ builds these sources against the OCaml 5.3 programs. */
#ifndef OCAML_PROGS_DIR
#define OCAML_PROGS_DIR "build/tests/ocaml/progs/"
#endif
#define OCAML_PROG(name) OCAML_PROGS_DIR name

/* A fresh temporary directory (out gets its path). */
void ocaml_tmpdir(char *out, size_t len);
/* fork+exec argv (NULL-terminated), stdout and stderr to files (NULL: /dev/null). */
pid_t ocaml_spawn(const char *const argv[], const char *out, const char *err);
/* Exit code, or 128 + signal. */
int ocaml_wait(pid_t pid);
/*
 * Start an OCaml test program writing its pid to dir/ready; returns once
 * ready.  It then waits for dir/ready.go (tests/ocaml/progs/gate.ml).
 */
pid_t ocaml_start(const char *dir, const char *out, const char *const argv[]);
/* Create the empty file dir/name (ready.go, ready.stop: gate.ml). */
void ocaml_touch(const char *dir, const char *name);
/*
 * Start the loader on pid with args (NULL-terminated, after "attach PID"),
 * its stderr in dir/loader.err; once it wrote its --ready-file, say go to
 * the program and return the loader's pid.  If the loader exits first: 0,
 * and its exit code in *code.
 */
pid_t ocaml_loader_start(pid_t pid, const char *const args[], const char *dir, int *code);
/*
 * Run the loader on pid for seconds at rate (the program told to go once
 * the loader is attached), all views into dir/views; exit code.
 */
int ocaml_attach(pid_t pid, const char *seconds, const char *rate, const char *dir);
/* The same with the loader's -v (its stats line lands in dir/loader.err). */
int ocaml_attach_verbose(pid_t pid, const char *seconds, const char *rate, const char *dir);

/* Sum of the weights of a folded file's lines whose innermost frame is frame. */
double folded_frame_sum(const char *path, const char *frame);
/* Sum of every weight of a folded file. */
double folded_total(const char *path);
/* Whether some line of the file contains needle. */
int file_has(const char *path, const char *needle);
/* The number after "key " in path (testlib's file_value), or -1. */
double out_value(const char *path, const char *key);

/* The attach tests' helpers: target_control reads a target's control block. */
#include "attach_util.h"

/* The sites program's sites: Work.make_point, make_record, make_entry, Sites.entry. */
#define OCAML_N_SITES 4
/*
 * The sites program's alloc view, written to dir/views by an attach at
 * rate, against the words it printed to out ("site NAME words W"): each
 * site's samples in counts, their shares within 5.7 sd of the printed ones,
 * at least 500 samples in all, 99% of the bytes at the named sites.  The
 * samples' total.
 */
double ocaml_expect_printed_shares(const char *dir, const char *out, double rate,
				   double counts[OCAML_N_SITES]);
/*
 * The sites program (tests/ocaml/progs/sites.ml) built as exe by a user's
 * project (dune, opam): run, attached through its own probes (never
 * injected) for a second at 1e-4, its sites named as written (Work.make_point,
 * not dune's Dune__exe__Work) and holding its samples.
 */
void ocaml_check_sites_exe(const char *dir, const char *exe);

/* Run cmd (a shell command line); on failure, assert with the end of log. */
void ocaml_run_logged(const char *cmd, const char *log, const char *what);
/* The loader's stderr (dir/loader.err) says it injected host_lib. */
void ocaml_expect_injected(const char *dir, const char *host_lib);

#endif
