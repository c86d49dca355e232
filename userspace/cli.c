/* Shared command-line messages and value parsers (cli.h). */
#include "cli.h"
#include "output/site.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_vdie(int code, const char *fmt, va_list ap)
{
	fputs("memprof-bpf: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	return code;
}

int cli_die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vdie(code, fmt, ap);
	va_end(ap);
	return code;
}

/* The long option whose value is val, or NULL. */
static const struct option *long_of(const struct option *longopts, int val)
{
	for (; longopts && longopts->name; longopts++)
		if (longopts->val == val)
			return longopts;
	return NULL;
}

int cli_getopt_error(int c, char *const argv[], const struct option *longopts)
{
	const char *a = argv[optind - 1];
	const struct option *lo = optopt ? long_of(longopts, optopt) : NULL;
	size_t len;

	if (c == ':') {
		/* A long option, or a short one (its letter in optopt). */
		if (a && !strncmp(a, "--", 2))
			return cli_die(EXIT_USAGE, "option %s needs a value (see --help)", a);
		if (lo && optopt >= 256)
			return cli_die(EXIT_USAGE, "option --%s needs a value (see --help)",
				       lo->name);
		return cli_die(EXIT_USAGE, "option -%c needs a value (see --help)", optopt);
	}
	if (optopt && optopt < 256 && !(a && !strncmp(a, "--", 2)))
		return cli_die(EXIT_USAGE, "unknown option '-%c' (see --help)", optopt);
	if (!a)
		return cli_die(EXIT_USAGE, "bad option (see --help)");
	len = strcspn(a, "=");
	if (a[len] == '=' && lo && !lo->has_arg)
		return cli_die(EXIT_USAGE, "option --%s takes no value (see --help)", lo->name);
	return cli_die(EXIT_USAGE, "unknown option '%.*s' (see --help)", (int)len, a);
}

void cli_getopt_reset(void)
{
	optind = 0; /* glibc: 0 also resets its internal state */
	opterr = 0;
}

int cli_parse_pid(const char *s, pid_t *out)
{
	char *end;
	long pid;

	errno = 0;
	pid = strtol(s, &end, 10);
	if (errno || *end || end == s || *s < '0' || *s > '9' || pid <= 0 || pid > INT_MAX) {
		cli_die(EXIT_USAGE, "bad pid '%s'", s);
		return -1;
	}
	*out = (pid_t)pid;
	return 0;
}

int cli_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !(v > 0) || v > 1e9) {
		cli_die(EXIT_USAGE, "bad duration '%s'", s);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_parse_count(const char *s, const char *what, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || *end || end == s || *s < '0' || *s > '9' || n == 0 || n > max) {
		cli_die(EXIT_USAGE, "bad %s '%s'", what, s);
		return -1;
	}
	*out = n;
	return 0;
}

int cli_skip_frames(const char *regex)
{
	char err[512];

	if (site_skip_add(regex, err, sizeof(err))) {
		cli_die(EXIT_USAGE, "%s", err);
		return -1;
	}
	return 0;
}
