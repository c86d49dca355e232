#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "options.h"

int option_u64(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!text || *text == '-' || *text == '\0')
		goto bad;
	v = strtoull(text, &end, 10);
	if (errno || *end || v < min || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	fprintf(stderr, "%s: expected an integer in [%llu, %llu], got '%s'\n", name,
		(unsigned long long)min, (unsigned long long)max, text ? text : "");
	return -1;
}

int option_double(const char *name, const char *text, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	if (!text || *text == '\0')
		goto bad;
	v = strtod(text, &end);
	if (errno || *end || !(v >= min && v <= max))
		goto bad;
	*out = v;
	return 0;
bad:
	fprintf(stderr, "%s: expected a number in [%g, %g], got '%s'\n", name, min, max,
		text ? text : "");
	return -1;
}

int write_ready_file(const char *path)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		goto bad;
	f = fopen(tmp, "w");
	if (!f)
		goto bad;
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "--ready-file: cannot write '%s'\n", path);
	return -1;
}
