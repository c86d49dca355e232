/* Helpers of the output tests: run a program under the preload, attach the
 * loader until the program exits, read what the tools say. */
#ifndef OUTPUT_UTIL_H
#define OUTPUT_UTIL_H

#include <stddef.h>

#define LOADER_BIN "build/memprof-bpf"
#define PRELOAD_SO "build/libmemprof-preload.so"
#define PROGS_DIR "build/tests/output/progs"
#define SIGMAS 5.7

/* A fresh temporary directory (removed at exit). */
void out_tmpdir(char *out, size_t len);

/*
 * Start PROGS_DIR/prog under the preload, attach the loader with rate and
 * the extra arguments (NULL-terminated) until the program exits.  The
 * loader's stderr goes to dir/loader.err.  Returns the loader's exit code,
 * or -1 if the program did not start or did not exit 0.
 */
int out_profile(const char *prog, const char *dir, const char *rate, const char *const extra[]);
/* The same with the loader's standard output into stdout_path (NULL: /dev/null). */
int out_profile_stdout(const char *prog, const char *dir, const char *rate,
		       const char *const extra[], const char *stdout_path);

/* Standard output of a shell command, malloc'ed (NULL on failure). */
char *out_command(const char *cmd);
/* Whole file, malloc'ed (NULL on error). */
char *out_file(const char *path);

/* Line number of the first line of path holding needle, or -1. */
int out_source_line(const char *path, const char *needle);

/*
 * go tool pprof -lines output names each of the n sites at its line of
 * source, the line marked "LINE:<site>" (criterion expectations).
 */
void out_expect_site_lines(const char *lines, const char *source, const char *const sites[], int n);

/* A value with a unit (B, KiB, MiB, GiB, TiB) in bytes; NAN if none. */
double out_parse_bytes(const char *s, const char **end);

/*
 * The DOM of file://svg#fragment once loaded in headless Chromium, in a
 * window width px wide, from a fresh profile under dir (malloc'ed).
 */
char *out_chromium_dom(const char *dir, const char *svg, const char *fragment, int width);
/* The number after "key=" in the first attr="..." of dom (NAN if none). */
double out_attr_value(const char *dom, const char *attr, const char *key);

#endif
