/*
 * What the injector's two files share (inject.c: the call and the thread
 * it is made in; inject_checks.c: steps 1 to 3, the checks of the process,
 * its libc and dynamic loader, a thread's safe point).  Its users include
 * inject.h.
 */
#ifndef MEMPROF_INJECT_INTERNAL_H
#define MEMPROF_INJECT_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/user.h>

#include "inject.h"

struct range {
	uint64_t start, end;
};

struct injector {
	pid_t pid;
	const char *lib_path;
	uint64_t dlopen_addr, dlerror_addr;
	struct range *unsafe; /* code a call to dlopen must not interrupt */
	size_t n_unsafe;
	char *err;
	size_t errlen;
};

/* The one line of a failure into in->err; returns st. */
static inline enum inject_status inject_fail(struct injector *in, enum inject_status st,
					     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(in->err, in->errlen, fmt, ap);
	va_end(ap);
	return st;
}

/* What /proc/PID/status says: state, TracerPid, Seccomp.  0 or -1. */
struct proc_status {
	char state;
	long tracer;
	int seccomp;
};
int inject_read_status(pid_t pid, struct proc_status *st);

/* 1. Refuse what cannot work (a stopped, traced, seccomp-filtered, static,
 * Go or foreign process; YAMA ptrace_scope 3). */
enum inject_status inject_check_process(struct injector *in);
/* 2. dlopen and dlerror in the target's libc, and the code a call to dlopen
 * must not interrupt (in->unsafe). */
enum inject_status inject_find_symbols(struct injector *in);
/* 3. 1 when the stopped thread tid may call dlopen: its PC is not in unsafe
 * code and no word of its stack is a return address into unsafe code. */
int inject_thread_is_safe(const struct injector *in, pid_t tid,
			  const struct user_regs_struct *regs);

#endif
