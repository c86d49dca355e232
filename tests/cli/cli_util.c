/* Helpers of the cli tests. */
#include "cli_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_run(const char *out, const char *err, const char *const args[])
{
	return loader_run_out(out, err, args);
}

double folded_sum(const char *path, const char *prefix)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t len = 0;
	double sum = 0;

	if (!f)
		return -1;
	while (getline(&line, &len, f) > 0) {
		char *sp = strrchr(line, ' ');

		if (sp && (!prefix || !strncmp(line, prefix, strlen(prefix))))
			sum += atof(sp + 1);
	}
	free(line);
	fclose(f);
	return sum;
}

pid_t cli_trigger(const char *dir)
{
	char out[256], secs[32];

	snprintf(out, sizeof(out), "%s/trigger-%d.out", dir, rand());
	snprintf(secs, sizeof(secs), "%g", TEST_EVENT_TIMEOUT_S);
	const char *args[] = {"--seconds", secs, NULL};
	return trigger_start(dir, out, args);
}
