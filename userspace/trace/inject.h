/*
 * Load a shared library into a running process that was not started with
 * it: seize one of its threads with ptrace, make that thread call the
 * target's own dlopen, and put the thread back exactly as it was.
 */
#ifndef MEMPROF_INJECT_H
#define MEMPROF_INJECT_H

#include <limits.h>
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
	pid_t tid;	     /* the thread that made the call */
	unsigned attempts;   /* interruptions before a safe one */
	double pause_ms;     /* how long that thread was stopped, its judgement and call included */
	double judge_ms;     /* of that pause, the judgement: from its stop to the verdict */
	double judge_max_ms; /* the longest judgement of any thread stopped */
	double total_ms;     /* from the first interruption to the end */
	unsigned long handle; /* dlopen's handle in the target */
	int interrupted;      /* a stop signal made the loader leave the call (raised again) */
	/* Threads judged by their whole call chain, by the chain and a scan
	 * above it, by a scan of the stack alone, and at once by their PC or
	 * signal mask (inject_internal.h, INJECT_JUDGED_*). */
	unsigned judged[4];
};

/* How long the injector looks for a safe moment before giving up. */
#define INJECT_SAFE_POINT_TIMEOUT_S 5.0

/*
 * The library to inject, as checked and read by inject_lib_open (inject_lib.c):
 * the file and every directory above it are root's and writable by nobody
 * else, and bytes are what was read from that file.  The target is given
 * these bytes (in a sealed memfd), never the path.
 */
struct inject_lib {
	char path[PATH_MAX]; /* its real path, for messages */
	char name[256];	     /* its file name: the memfd's name in the target */
	unsigned char *bytes;
	size_t len;
};

/* Check and read the library at path.  0, or one of these with one line
 * in err. */
enum { INJECT_LIB_UNREADABLE = -1, INJECT_LIB_UNTRUSTED = -2 };
int inject_lib_open(const char *path, struct inject_lib *lib, char *err, size_t errlen);
void inject_lib_free(struct inject_lib *lib);

/*
 * The injection lock of process pid, held by a loader from its look for
 * the probes to the end of an injection, so that two loaders never inject
 * two copies: a descriptor; INJECT_LOCK_NONE where no lock can be made (a
 * loader without the rights to /run: it goes on unlocked); or -1, with one
 * line in err, after timeout_s.
 */
#define INJECT_LOCK_NONE (-2)
int inject_lock(pid_t pid, double timeout_s, char *err, size_t errlen);
void inject_unlock(int fd, pid_t pid);
/* How long a loader waits for another one's injection. */
#define INJECT_LOCK_TIMEOUT_S 15.0

/*
 * Load lib into process pid: dlopen("/proc/thread-self/fd/N", RTLD_NOW) of a memfd
 * holding lib's bytes, in one of its threads.  On failure err (errlen
 * bytes) holds one line.
 */
enum inject_status inject_library(pid_t pid, const struct inject_lib *lib,
				  struct inject_result *res, char *err, size_t errlen);

#endif
