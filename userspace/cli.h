/*
 * The command line of every subcommand (attach, top, list, diff): one
 * message format, the value parsers, and getopt_long's errors turned into
 * one line and EXIT_USAGE.  Options follow libbpf-tools and perf:
 * "--opt=value" and "--opt value", "-d5" and "-d 5", options anywhere among
 * the operands, "--" ends them, and "--help" on every subcommand.
 */
#ifndef MEMPROF_CLI_H
#define MEMPROF_CLI_H

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>

#include "exit_codes.h"

/* Values of the long options without a short form (one per option). */
enum cli_long_opt {
	OPT_ALL_VIEWS = 256,
	OPT_VIEW,
	OPT_RATE,
	OPT_MAX_BLOCKS,
	OPT_MAX_STACKS,
	OPT_FORMAT,
	OPT_NO_DWARF,
	OPT_EVERY,
	OPT_SNAPSHOT_DIR,
	OPT_SORT,
	OPT_NO_INJECT,
	OPT_INJECT_MALLOC,
	OPT_PRELOAD,
	OPT_LIFETIMES,
	OPT_TIMELINE,
	OPT_READY_FILE,
	OPT_SKIP_FRAMES,
	OPT_LINES,
	OPT_SHORT_NAMES,
	OPT_BY_DOMAIN,
	OPT_NATIVE,
	OPT_HELP,
	OPT_VERSION,
};

/* "memprof-bpf: " fmt "\n" on stderr; returns code. */
int cli_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a va_list. */
int cli_vdie(int code, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/*
 * getopt_long returned '?' or ':' (the optstring starts with ':'): print
 * what was wrong in one line.  Returns EXIT_USAGE.
 */
int cli_getopt_error(int c, char *const argv[], const struct option *longopts);

/* Reset getopt for a new parse of argv (the subcommand's own arguments). */
void cli_getopt_reset(void);

/* Parsers: 0, or -1 after printing the one-line message. */
int cli_parse_pid(const char *s, pid_t *out);
int cli_parse_seconds(const char *s, double *out); /* > 0 */
int cli_parse_count(const char *s, const char *what, unsigned long max, unsigned long *out);
/* --skip-frames REGEX: one more frame pattern the allocation site skips
 * (output/site.h). */
int cli_skip_frames(const char *regex);

#endif
