/* Helpers of the cli tests (with tests/attach/attach_util.h). */
#ifndef CLI_UTIL_H
#define CLI_UTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "attach_util.h"

/* Run the loader with args; its stdout and stderr into files.  Exit code. */
int cli_run(const char *out, const char *err, const char *const args[]);
/* Sum of the last column of a folded file's lines whose stack starts with prefix (NULL: all). */
double folded_sum(const char *path, const char *prefix);
/* The trigger, ready to be attached, running until the test ends it (SIGTERM). */
pid_t cli_trigger(const char *dir);

#endif
