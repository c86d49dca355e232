/*
 * The injector: dlopen a library inside a running process, over ptrace.
 *
 * 1. Refuse what cannot work: a stopped or already traced process, a
 *    seccomp-filtered one (the library's own system calls could get it
 *    killed), YAMA ptrace_scope 3, a static, Go or non-x86-64 executable, a
 *    process without glibc's libc.so.6.
 * 2. Find dlopen and dlerror in the target's libc (its ELF symbols plus
 *    the load address from /proc/PID/maps), and the code where a call to
 *    dlopen could deadlock or corrupt state: the dynamic loader (ld.so)
 *    and libc's allocator, fork, thread creation and join, exit and dl*
 *    functions (they hold the malloc arena locks, the loader's locks or
 *    the thread stack cache lock that dlopen takes).
 * 3. Seize one thread (PTRACE_SEIZE, PTRACE_INTERRUPT) and look at its
 *    program counter and its whole stack: any word that is an address
 *    inside that code (other than a function's first byte, which is a
 *    function pointer and not a return address) means the thread may be
 *    inside it.  The test is conservative: a stale word in a live frame
 *    makes us wait, never proceed wrongly.  Not safe: let the thread go,
 *    try the next thread, a little later, within a time bound.
 * 4. Safe: save its registers, its extended FP state (XSAVE area) and its
 *    signal mask; block every asynchronous signal for the call; write the
 *    library path below the red zone and a return address of 0; point the
 *    PC at dlopen and let it run.  The return to address 0 faults: the
 *    SIGSEGV stops the thread before any handler runs and is discarded.
 *    If dlopen returned NULL, call dlerror the same way for the reason.
 * 5. Restore registers (an interrupted system call restarts as it would
 *    have), FP state and signal mask, and detach.
 *
 * Signals the loader gets meanwhile (Ctrl-C) are held until the thread is
 * back: abandoning it mid-call would crash the target.
 *
 * Steps 1 to 3 are in inject_checks.c, 4 and 5 here.
 */
#include "inject_internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <dirent.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "the injector drives x86-64 targets from an x86-64 loader"
#endif

/* Below the stack pointer: the red zone, then our path and return address. */
#define RED_ZONE 128
/* Largest XSAVE area we keep (AMX tiles make it about 11 KiB). */
#define XSTATE_MAX 16384
/* Pause between two attempts on the same thread. */
#define RETRY_PAUSE_US 2000
/* After this long in the dlopen call, say that we are still waiting. */
#define CALL_NOTE_AFTER_S 5.0

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- 4. The call ---- */

struct saved_thread {
	struct user_regs_struct regs;
	unsigned char xstate[XSTATE_MAX];
	struct iovec xstate_iov;
	int xstate_regset; /* NT_X86_XSTATE or NT_PRFPREG */
	uint64_t sigmask;
};

static int save_thread(pid_t tid, struct saved_thread *s)
{
	if (ptrace(PTRACE_GETREGS, tid, NULL, &s->regs))
		return -1;
	s->xstate_iov = (struct iovec){s->xstate, sizeof(s->xstate)};
	s->xstate_regset = NT_X86_XSTATE;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &s->xstate_iov)) {
		s->xstate_iov = (struct iovec){s->xstate, sizeof(s->xstate)};
		s->xstate_regset = NT_PRFPREG;
		if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &s->xstate_iov))
			return -1;
	}
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(s->sigmask), &s->sigmask))
		return -1;
	return 0;
}

static int restore_thread(pid_t tid, struct saved_thread *s)
{
	int rc = 0;

	rc |=
	    ptrace(PTRACE_SETREGSET, tid, (void *)(long)s->xstate_regset, &s->xstate_iov) ? -1 : 0;
	rc |= ptrace(PTRACE_SETREGS, tid, NULL, &s->regs) ? -1 : 0;
	rc |= ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(s->sigmask), &s->sigmask) ? -1 : 0;
	return rc;
}

static int write_target(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = {(void *)buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};

	return process_vm_writev(tid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

enum call_status { CALL_OK, CALL_GONE, CALL_CRASHED, CALL_ERROR };

/*
 * Run fn(arg0, arg1) on the stopped thread tid, starting from the saved
 * state; *ret gets its return value.  data (len bytes) is copied onto the
 * thread's stack first and arg0 == DATA_ARG means its address there.
 */
#define DATA_ARG UINT64_MAX

static enum call_status call_in_thread(pid_t tid, const struct saved_thread *saved, uint64_t fn,
				       uint64_t arg0, uint64_t arg1, const void *data, size_t len,
				       uint64_t *ret)
{
	struct user_regs_struct r = saved->regs;
	uint64_t sp = saved->regs.rsp - RED_ZONE, zero = 0;
	/* Block every signal that is not synchronous: the call runs undisturbed. */
	uint64_t mask = ~0ull;
	const int sync_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
	double noted_at = now_s() + CALL_NOTE_AFTER_S;

	for (size_t i = 0; i < sizeof(sync_signals) / sizeof(sync_signals[0]); i++)
		mask &= ~(1ull << (sync_signals[i] - 1));
	if (data) {
		sp = (sp - len) & ~(uint64_t)15;
		if (write_target(tid, sp, data, len))
			return CALL_ERROR;
		if (arg0 == DATA_ARG)
			arg0 = sp;
	}
	sp = (sp & ~(uint64_t)15) - 8; /* as after a call: rsp + 8 is 16-aligned */
	if (write_target(tid, sp, &zero, sizeof(zero)))
		return CALL_ERROR;
	r.rsp = sp;
	r.rip = fn;
	r.rdi = arg0;
	r.rsi = arg1;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1; /* not in a system call: no restart on resume */
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) ||
	    ptrace(PTRACE_SETREGS, tid, NULL, &r) || ptrace(PTRACE_CONT, tid, NULL, NULL))
		return CALL_ERROR;
	for (;;) {
		int status;
		pid_t w = waitpid(tid, &status, __WALL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECHILD ? CALL_GONE : CALL_ERROR;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return CALL_GONE;
		if (!WIFSTOPPED(status))
			continue;
		int sig = WSTOPSIG(status), event = status >> 16;

		if (event == PTRACE_EVENT_STOP) {
			/* Group-stop (SIGSTOP from someone): wait for SIGCONT, then go on. */
			int group =
			    sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
			if (ptrace(group ? PTRACE_LISTEN : PTRACE_CONT, tid, NULL, NULL))
				return errno == ESRCH ? CALL_GONE : CALL_ERROR;
			continue;
		}
		if (event) {
			if (ptrace(PTRACE_CONT, tid, NULL, NULL))
				return errno == ESRCH ? CALL_GONE : CALL_ERROR;
			continue;
		}
		if (sig == SIGSEGV) {
			struct user_regs_struct now;

			if (ptrace(PTRACE_GETREGS, tid, NULL, &now))
				return CALL_GONE;
			if (now.rip == 0) {
				*ret = now.rax;
				return CALL_OK;
			}
			return CALL_CRASHED;
		}
		if (sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
		    sig == SIGSYS)
			return CALL_CRASHED;
		/* SIGSTOP (cannot be blocked): deliver it, the group stops, see above. */
		if (now_s() > noted_at) {
			fprintf(stderr,
				"memprof-bpf: note: the injected dlopen in thread %d is taking "
				"long; waiting for it\n",
				(int)tid);
			noted_at = now_s() + 3600;
		}
		if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig))
			return errno == ESRCH ? CALL_GONE : CALL_ERROR;
	}
}

/* ---- 3+4. Seize a thread, check it, call ---- */

/* Wait for the PTRACE_INTERRUPT stop, passing signals on.  0, or -1: gone. */
static int wait_interrupted(pid_t tid, int *group_stopped)
{
	*group_stopped = 0;
	for (;;) {
		int status;
		pid_t w = waitpid(tid, &status, __WALL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -1;
		if (!WIFSTOPPED(status))
			continue;
		if (status >> 16 == PTRACE_EVENT_STOP) {
			int sig = WSTOPSIG(status);

			*group_stopped = sig != SIGTRAP;
			return 0;
		}
		/* A signal arrived first: deliver it; the interrupt stop follows. */
		if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)WSTOPSIG(status)))
			return -1;
	}
}

static int list_threads(pid_t pid, pid_t *tids, size_t max)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max) {
		long t = strtol(de->d_name, NULL, 10);

		if (t > 0)
			tids[n++] = (pid_t)t;
	}
	closedir(d);
	return (int)n;
}

static enum inject_status seize_error(struct injector *in, pid_t tid)
{
	int e = errno;

	if (e == ESRCH)
		return INJECT_GONE; /* that thread ended: try the others */
	if (e == EPERM) {
		struct proc_status st;

		if (!inject_read_status(in->pid, &st) && st.tracer)
			return inject_fail(in, INJECT_REFUSED,
					   "process %d is already traced by process %ld",
					   (int)in->pid, st.tracer);
		return inject_fail(
		    in, INJECT_DENIED,
		    "not permitted to ptrace process %d (needs CAP_SYS_PTRACE, or the same "
		    "user and YAMA ptrace_scope 0): cannot inject the malloc host",
		    (int)in->pid);
	}
	return inject_fail(in, INJECT_FAILED, "cannot ptrace thread %d of process %d: %s", (int)tid,
			   (int)in->pid, strerror(e));
}

/* Read a NUL-terminated string of the target. */
static void read_string(pid_t tid, uint64_t addr, char *buf, size_t len)
{
	struct iovec local = {buf, len - 1};
	struct iovec remote = {(void *)(uintptr_t)addr, len - 1};
	ssize_t got;

	/* A string may end near a page end: shrink the read until it works. */
	do {
		got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
		if (got < 0) {
			uint64_t page_left = 4096 - (addr & 4095);
			local.iov_len = remote.iov_len =
			    local.iov_len > page_left ? page_left : local.iov_len / 2;
		}
	} while (got < 0 && local.iov_len > 0);
	buf[got > 0 ? got : 0] = 0;
}

/*
 * The thread is stopped at a safe point: make the calls and restore it.
 * Returns with the thread detached (or gone).
 */
static enum inject_status inject_into(struct injector *in, pid_t tid, struct inject_result *res)
{
	static struct saved_thread saved;
	enum call_status cs;
	uint64_t handle = 0, msg = 0;
	enum inject_status st = INJECT_OK;
	char why[512];

	if (save_thread(tid, &saved)) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return inject_fail(in, errno == ESRCH ? INJECT_GONE : INJECT_FAILED,
				   "cannot read the registers of thread %d: %s", (int)tid,
				   strerror(errno));
	}
	cs = call_in_thread(tid, &saved, in->dlopen_addr, DATA_ARG, RTLD_NOW, in->lib_path,
			    strlen(in->lib_path) + 1, &handle);
	if (cs == CALL_OK && !handle) {
		cs = call_in_thread(tid, &saved, in->dlerror_addr, 0, 0, NULL, 0, &msg);
		if (cs == CALL_OK) {
			snprintf(why, sizeof(why), "(no reason given)");
			if (msg)
				read_string(tid, msg, why, sizeof(why));
			st = inject_fail(in, INJECT_FAILED, "dlopen in process %d failed: %s",
					 (int)in->pid, why);
		}
	}
	if (cs == CALL_GONE)
		return inject_fail(in, INJECT_GONE,
				   "process %d exited or was killed during the injection",
				   (int)in->pid);
	if (restore_thread(tid, &saved))
		return inject_fail(in, errno == ESRCH ? INJECT_GONE : INJECT_FAILED,
				   "cannot restore thread %d of process %d: %s", (int)tid,
				   (int)in->pid, strerror(errno));
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	if (cs == CALL_CRASHED)
		return inject_fail(
		    in, INJECT_FAILED,
		    "the injected dlopen faulted in process %d; its thread %d was put back",
		    (int)in->pid, (int)tid);
	if (cs == CALL_ERROR)
		return inject_fail(in, INJECT_FAILED, "cannot set up the call in thread %d: %s",
				   (int)tid, strerror(errno));
	res->handle = handle;
	return st;
}

static enum inject_status find_safe_thread(struct injector *in, struct inject_result *res)
{
	double start = now_s(), deadline = start + INJECT_SAFE_POINT_TIMEOUT_S;
	pid_t tids[256];

	while (now_s() < deadline) {
		int n = list_threads(in->pid, tids, sizeof(tids) / sizeof(tids[0]));

		if (n <= 0)
			return inject_fail(in, INJECT_GONE, "process %d exited", (int)in->pid);
		for (int i = 0; i < n; i++) {
			struct user_regs_struct regs;
			int group_stopped;
			double t0;

			if (ptrace(PTRACE_SEIZE, tids[i], NULL, NULL)) {
				enum inject_status st = seize_error(in, tids[i]);

				if (st == INJECT_GONE)
					continue;
				return st;
			}
			t0 = now_s();
			res->attempts++;
			if (ptrace(PTRACE_INTERRUPT, tids[i], NULL, NULL) ||
			    wait_interrupted(tids[i], &group_stopped))
				continue; /* the thread ended */
			if (group_stopped) {
				ptrace(PTRACE_DETACH, tids[i], NULL, NULL);
				return inject_fail(
				    in, INJECT_REFUSED,
				    "process %d was stopped meanwhile; continue it first",
				    (int)in->pid);
			}
			if (!ptrace(PTRACE_GETREGS, tids[i], NULL, &regs) &&
			    inject_thread_is_safe(in, tids[i], &regs)) {
				enum inject_status st = inject_into(in, tids[i], res);

				res->tid = tids[i];
				res->pause_ms = (now_s() - t0) * 1e3;
				res->total_ms = (now_s() - start) * 1e3;
				return st;
			}
			ptrace(PTRACE_DETACH, tids[i], NULL, NULL);
		}
		usleep(RETRY_PAUSE_US + (unsigned)(rand() % RETRY_PAUSE_US));
	}
	return inject_fail(in, INJECT_FAILED,
			   "found no moment in %.0f s when a thread of process %d was outside the "
			   "allocator and the dynamic loader; not injecting",
			   INJECT_SAFE_POINT_TIMEOUT_S, (int)in->pid);
}

enum inject_status inject_library(pid_t pid, const char *lib_path, struct inject_result *res,
				  char *err, size_t errlen)
{
	struct injector in = {.pid = pid, .lib_path = lib_path, .err = err, .errlen = errlen};
	sigset_t hold, old;
	enum inject_status st;

	memset(res, 0, sizeof(*res));
	if (lib_path[0] != '/')
		return inject_fail(&in, INJECT_FAILED, "the library path must be absolute: %s",
				   lib_path);
	st = inject_check_process(&in);
	if (st == INJECT_OK)
		st = inject_find_symbols(&in);
	if (st == INJECT_OK) {
		/* Hold the loader's own stop signals while a thread is ours. */
		sigemptyset(&hold);
		sigaddset(&hold, SIGINT);
		sigaddset(&hold, SIGTERM);
		sigaddset(&hold, SIGHUP);
		sigaddset(&hold, SIGQUIT);
		sigprocmask(SIG_BLOCK, &hold, &old);
		st = find_safe_thread(&in, res);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	free(in.unsafe);
	return st;
}
