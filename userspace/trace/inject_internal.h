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
#include "inject_unwind.h"

struct range {
	uint64_t start, end;
};

struct injector {
	pid_t pid;
	const struct inject_lib *lib;
	uint64_t dlopen_addr, dlerror_addr;
	/* Where the call stub goes (inject_stub.h): the slack after the end of
	 * libc's text segment, in its last page (never executed by anyone). */
	uint64_t stub_addr;
	struct range *unsafe;		  /* code a call to dlopen must not interrupt */
	struct inject_unwinder *unwinder; /* NULL: stacks are judged by a word scan */
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
int inject_read_thread_status(pid_t pid, pid_t tid, struct proc_status *st);

/* 1. Refuse what cannot work (a stopped, traced, seccomp-filtered, static,
 * Go or foreign process; YAMA ptrace_scope 3). */
enum inject_status inject_check_process(struct injector *in);
/* 2. dlopen and dlerror in the target's libc, the place of the call stub,
 * and the code a call to dlopen must not interrupt (in->unsafe). */
enum inject_status inject_find_symbols(struct injector *in);
/* How a thread was judged: its whole call chain, the chain then a scan of
 * the stack above it, or a scan of its whole stack. */
/* How a stopped thread was judged: by its whole call chain, the chain and a
 * scan above it, a scan alone, or without a look at its stack (its PC, or
 * its signal mask, is in unsafe code). */
enum {
	INJECT_JUDGED_CHAIN,
	INJECT_JUDGED_PART,
	INJECT_JUDGED_SCAN,
	INJECT_JUDGED_AT_ONCE,
	INJECT_JUDGED_WAYS
};
/* 3. 1 when the stopped thread tid may call dlopen: neither its PC nor any
 * call of its chain is in unsafe code (inject_checks.c says how). */
int inject_thread_is_safe(const struct injector *in, pid_t tid, const struct user_regs_struct *regs,
			  int *how);

#endif
