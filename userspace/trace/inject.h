/*
 * Load a shared library into a running process that was not started with
 * it: seize one of its threads with ptrace, make that thread call the
 * target's own dlopen, and put the thread back exactly as it was.
 */
#ifndef MEMPROF_INJECT_H
#define MEMPROF_INJECT_H

#include <stddef.h>
#include <sys/types.h>

enum inject_status {
	INJECT_OK = 0,
	INJECT_REFUSED, /* a target we cannot inject: static, Go, other arch, stopped, no glibc */
	INJECT_DENIED,	/* ptrace not permitted: capability, YAMA, seccomp filter */
	INJECT_GONE,	/* the target exited or was killed meanwhile */
	INJECT_FAILED,	/* no safe moment in time, dlopen failed in the target, ... */
};

struct inject_result {
	pid_t tid;	      /* the thread that made the call */
	unsigned attempts;    /* interruptions before a safe one */
	double pause_ms;      /* how long that thread was stopped for the call */
	double total_ms;      /* from the first interruption to the end */
	unsigned long handle; /* dlopen's handle in the target */
};

/* How long the injector looks for a safe moment before giving up. */
#define INJECT_SAFE_POINT_TIMEOUT_S 5.0

/*
 * dlopen(lib_path, RTLD_NOW) in process pid.  lib_path must be absolute and
 * readable by the target.  On failure err (errlen bytes) holds one line.
 */
enum inject_status inject_library(pid_t pid, const char *lib_path, struct inject_result *res,
				  char *err, size_t errlen);

#endif
