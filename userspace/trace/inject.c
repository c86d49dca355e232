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
 * 4. Safe: write the call stub (inject_stub.c) and its data (the memfd's
 *    name, dlopen, dlerror, where to resume) into the slack after libc's
 *    text, then change only the thread's PC (and, for a system call it
 *    was blocked in, rax and orig_rax, so that the stub, not the kernel,
 *    restarts it) and let it run.  The stub saves every register, maps a
 *    stack of its own, blocks the asynchronous signals but glibc's own,
 *    saves the FP state, makes a memfd, calls dlopen on it once it is
 *    sealed, restores all of it and jumps back.
 * 5. Detach it at once and watch from outside: it runs the stub untraced
 *    (its signals, glibc's SIGSETXID storms among them, are delivered as
 *    usual), and /proc/PID/task/TID/syscall shows it when it waits at one
 *    of the stub's markers.  At the first, write the library's checked
 *    bytes (struct inject_lib) into its memfd and seal it; at the second,
 *    read the result.  Each time, seize it for a moment to end the wait,
 *    and let it go.
 *
 * Whatever happens to the loader, the target is never left broken: before
 * the PC is set nothing of the thread changed; after it, the stub restores
 * the thread by itself, with or without a tracer (docs/injection.md gives
 * the argument step by step).  A stop signal (Ctrl-C) lets the thread go at
 * once, inside the stub, which finishes by itself.
 *
 * Steps 1 to 3 are in inject_checks.c, 4 and 5 here.
 */
#include "inject_internal.h"
#include "inject_stub.h"
#include "symbols/procmaps.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* Largest XSAVE area we keep (AMX tiles make it about 11 KiB). */
#define XSTATE_MAX 16384
/* Pause between two attempts on the same thread. */
#define RETRY_PAUSE_US 2000
/* After this long in the dlopen call, say that we are still waiting. */
#define CALL_NOTE_AFTER_S 5.0
/* How often the thread's blocked call is looked at while it runs the stub. */
#define CALL_POLL_NS 200000L

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

/*
 * Write len bytes at addr in process pid, also into a read-only mapping
 * (the stub's page of libc's text: /proc/PID/mem writes as ptrace does,
 * into a private copy of the page).  0, or -1 with errno.
 */
static int write_text(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	char path[64];
	unsigned char back[sizeof(struct inject_stub_data) + 4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)proc_live_tid(pid));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pwrite(fd, buf, len, (off_t)addr);
	/* Read it back: the stub runs from these bytes. */
	if (n == (ssize_t)len && len <= sizeof(back))
		n = pread(fd, back, len, (off_t)addr) == (ssize_t)len && !memcmp(back, buf, len)
			? (ssize_t)len
			: -1;
	close(fd);
	if (n != (ssize_t)len) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

/* Linux's codes for an interrupted system call that is to be restarted. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/*
 * Where the thread goes on after the stub, and its rax then: where it was,
 * or, stopped in a system call to be restarted, that call's syscall
 * instruction again, as the kernel itself would do on resume (the stub's
 * entry disables the kernel's restart: orig_rax -1).
 */
static void resume_point(const struct user_regs_struct *r, uint64_t *rip, uint64_t *rax)
{
	*rip = r->rip;
	*rax = r->rax;
	if ((int64_t)r->orig_rax < 0)
		return;
	switch (-(int64_t)r->rax) {
	case ERESTARTSYS:
	case ERESTARTNOINTR:
	case ERESTARTNOHAND:
		*rip = r->rip - 2; /* syscall is 2 bytes */
		*rax = r->orig_rax;
		break;
	case ERESTART_RESTARTBLOCK:
		*rip = r->rip - 2;
		*rax = SYS_restart_syscall;
		break;
	default:
		break;
	}
}

/* The signals the stub blocks during the call (bit n - 1: signal n). */
static uint64_t call_block_mask(void)
{
	/* Synchronous ones cannot wait; glibc's SIGCANCEL and SIGSETXID must
	 * not (a set*id call in another thread waits for every thread). */
	const int keep[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, 32, 33};
	uint64_t mask = ~0ull;

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		mask &= ~(1ull << (keep[i] - 1));
	return mask;
}

enum call_status { CALL_OK, CALL_GONE, CALL_ERROR, CALL_LEFT };

struct call_result {
	uint64_t handle, error; /* the result marker's r9, r8 */
	int signal;		/* CALL_LEFT: the signal that made the loader leave */
	int deliver_errno;	/* the library's bytes could not be delivered */
};

/*
 * What /proc/PID/task/TID/syscall says of a thread blocked in a system
 * call: its number, six argument registers, stack pointer and PC (v[0..8]).
 * 9, or fewer when it runs (or is gone).
 */
static int blocked_call(pid_t pid, pid_t tid, uint64_t v[9])
{
	char path[96], text[256];
	int fd, n = 0;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	text[len] = '\0';
	for (char *p = text, *end; n < 9; p = end, n++) {
		v[n] = strtoull(p, &end, 0);
		if (end == p)
			break;
	}
	return n;
}

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

/*
 * Stop the thread (PTRACE_INTERRUPT) and wait for that stop.  A signal
 * that arrives first is delivered at once: a signal handed to PTRACE_DETACH
 * from the interrupt's stop would be dropped (the kernel injects one only
 * from a signal-delivery stop), and a lost SIGSETXID hangs every set*id
 * call of the process.  0, or -1: gone.
 */
static int interrupt_thread(pid_t tid)
{
	int group_stopped;

	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL))
		return -1;
	return wait_interrupted(tid, &group_stopped);
}

/* Let go of a running thread: stop it, then detach. */
static void leave_thread(pid_t tid)
{
	if (!interrupt_thread(tid))
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
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

/* Whether thread tid of pid still exists. */
static int thread_alive(pid_t pid, pid_t tid)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

/*
 * The thread runs the stub on its own, not traced: its signals (a storm of
 * glibc's SIGSETXID among them) are its own business.  Look at its blocked
 * call until it waits at one of the stub's markers (inject_stub.c); v then
 * holds that call (v[2]: which marker, `which` or a later one; v[5], v[6]:
 * r8, r9).  The signals
 * in wake (the loader's stop signals, blocked by the caller) end the look:
 * CALL_LEFT, with nothing to undo.
 */
static enum call_status wait_marker(const struct injector *in, pid_t tid, const sigset_t *wake,
				    uint64_t which, uint64_t v[9], struct call_result *out)
{
	const uint64_t marker_pc = in->stub_addr + inject_stub_marker_offset();
	double note_at = now_s() + CALL_NOTE_AFTER_S;

	for (;;) {
		const struct timespec tick = {0, CALL_POLL_NS};
		int got;

		if (blocked_call(in->pid, tid, v) == 9 && v[0] == STUB_MARKER_SYSCALL &&
		    v[8] == marker_pc && v[2] >= which)
			return CALL_OK;
		if (!thread_alive(in->pid, tid))
			return CALL_GONE;
		got = sigtimedwait(wake, NULL, &tick);
		if (got > 0 && got != SIGCHLD) {
			out->signal = got;
			return CALL_LEFT;
		}
		if (now_s() > note_at) {
			fprintf(
			    stderr,
			    "memprof-bpf: note: the injected dlopen in thread %d is taking long; "
			    "waiting (an interrupt leaves it to finish by itself)\n",
			    (int)tid);
			note_at = now_s() + CALL_NOTE_AFTER_S;
		}
	}
}

/*
 * End the wait at marker `which`: seize the thread for a moment, read the
 * error string at err_addr if asked (why), make the marker's call return
 * STUB_ACK if it still waits there, and let it go.  A thread that has left
 * that marker meanwhile (its wait timed out) is let go unchanged.
 */
static enum call_status ack_marker(const struct injector *in, pid_t tid, uint64_t which,
				   uint64_t err_addr, char *why, size_t whylen)
{
	const uint64_t marker_pc = in->stub_addr + inject_stub_marker_offset();
	struct user_regs_struct r;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) || interrupt_thread(tid))
		return thread_alive(in->pid, tid) ? CALL_ERROR : CALL_GONE;
	if (err_addr)
		read_string(tid, err_addr, why, whylen);
	if (!ptrace(PTRACE_GETREGS, tid, NULL, &r) && r.rip == marker_pc &&
	    r.orig_rax == STUB_MARKER_SYSCALL && r.rsi == which) {
		r.rax = STUB_ACK;
		r.orig_rax = (uint64_t)-1; /* the call is over: no restart */
		ptrace(PTRACE_SETREGS, tid, NULL, &r);
	}
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	return CALL_OK;
}

/*
 * At the first marker: write the library's bytes into the stub's memfd
 * (fd, through /proc/PID/task/TID/fd), the path to open into its region, then seal
 * the memfd (the stub opens only a sealed one).  0, or -1 with errno.
 */
static int deliver_library(const struct injector *in, pid_t tid, uint64_t fd, uint64_t region)
{
	char path[96], link[128], open_path[40];
	struct stat st;
	size_t done = 0;
	ssize_t n;
	int mfd, e;

	/* The thread's own table: a main thread that exited has none. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/fd/%d", (int)in->pid, (int)tid, (int)fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0 || fd > INT32_MAX)
		return -1;
	link[n] = 0;
	if (strncmp(link, "/memfd:", 7)) {
		errno = EBADF; /* not the stub's memfd */
		return -1;
	}
	mfd = open(path, O_RDWR | O_CLOEXEC);
	if (mfd < 0)
		return -1;
	if (fstat(mfd, &st) || !S_ISREG(st.st_mode) || st.st_size != 0) {
		close(mfd);
		errno = EBADF;
		return -1;
	}
	while (done < in->lib->len &&
	       (n = pwrite(mfd, in->lib->bytes + done, in->lib->len - done, (off_t)done)) > 0)
		done += (size_t)n;
	snprintf(open_path, sizeof(open_path), "/proc/thread-self/fd/%d", (int)fd);
	if (done != in->lib->len ||
	    write_text(in->pid, region + STUB_REGION_PATH, open_path, strlen(open_path) + 1) ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)) {
		e = done != in->lib->len && !errno ? EIO : errno;
		close(mfd);
		errno = e;
		return -1;
	}
	close(mfd);
	return 0;
}

/*
 * Follow the stub from its start: deliver the library at its first
 * marker, read the result at its second.  The thread is never held but
 * for the two acknowledgements.
 */
static enum call_status follow_stub(const struct injector *in, pid_t tid, const sigset_t *wake,
				    struct call_result *out, char *why, size_t whylen)
{
	uint64_t v[9];
	enum call_status cs = wait_marker(in, tid, wake, STUB_MARKER_MEMFD, v, out);

	if (cs != CALL_OK)
		return cs;
	if (v[2] == STUB_MARKER_MEMFD) {
		if (deliver_library(in, tid, v[6], v[5]))
			out->deliver_errno = errno ? errno : EIO;
		cs = ack_marker(in, tid, STUB_MARKER_MEMFD, 0, why, whylen);
		if (cs == CALL_OK)
			cs = wait_marker(in, tid, wake, STUB_MARKER_RESULT, v, out);
		if (cs != CALL_OK)
			return cs;
	}
	out->handle = v[6]; /* r9 */
	out->error = v[5];  /* r8 */
	return ack_marker(in, tid, STUB_MARKER_RESULT,
			  !out->handle && out->error > STUB_ERR_NOT_SEALED &&
				  out->error < (uint64_t)-4096
			      ? out->error
			      : 0,
			  why, whylen);
}

/* ---- 3+4. Seize a thread, check it, call ---- */

struct thread_list {
	pid_t *tids;
	size_t n, max;
};

static int add_live_thread(pid_t tid, char state, void *arg)
{
	struct thread_list *l = arg;

	/* A thread that has exited (a zombie main thread whose others run
	 * on) can be seized but never stops: not one to use. */
	if (state != '?' && state != 'Z' && state != 'X')
		l->tids[l->n++] = tid;
	return l->n == l->max;
}

static int list_threads(pid_t pid, pid_t *tids, size_t max)
{
	struct thread_list l = {tids, 0, max};

	if (!max || proc_for_each_thread(pid, add_live_thread, &l) < 0)
		return -1;
	return (int)l.n;
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

/*
 * The thread is stopped at a safe point: write the stub, point the thread
 * at it and follow it to its marker.  Returns with the thread detached (or
 * gone).  From the moment its PC is the stub's, the thread restores itself
 * whatever happens to the loader: nothing else of its state was changed.
 */
static enum inject_status inject_into(struct injector *in, pid_t tid, const sigset_t *wake,
				      struct inject_result *res)
{
	static struct saved_thread saved;
	static unsigned char stub[sizeof(struct inject_stub_data) + 4096];
	struct inject_stub_data data = {0};
	struct user_regs_struct r;
	struct call_result cr = {0};
	enum call_status cs;
	uint64_t resume, rax;
	size_t size = inject_stub_size(), name_len = strlen(in->lib->name);
	char why[512];

	if (save_thread(tid, &saved)) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return inject_fail(in, errno == ESRCH ? INJECT_GONE : INJECT_FAILED,
				   "cannot read the registers of thread %d: %s", (int)tid,
				   strerror(errno));
	}
	if (name_len > STUB_NAME_MAX || size > sizeof(stub)) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return inject_fail(in, INJECT_FAILED,
				   "the library's file name is too long (%zu bytes): %s", name_len,
				   in->lib->name);
	}
	resume_point(&saved.regs, &resume, &rax);
	data.resume = resume;
	data.dlopen = in->dlopen_addr;
	data.dlerror = in->dlerror_addr;
	data.block_mask = call_block_mask();
	data.stack_len = STUB_STACK_BYTES;
	memcpy(data.name, in->lib->name, name_len + 1);
	memcpy(stub, memprof_inject_stub, size);
	memcpy(stub + inject_stub_data_offset(), &data, sizeof(data));
	/* The stub and its data are in place before the PC points at them. */
	r = saved.regs;
	r.rip = in->stub_addr;
	r.rax = rax;
	r.orig_rax = (uint64_t)-1; /* no restart by the kernel: the stub's resume does it */
	if (write_text(in->pid, in->stub_addr, stub, size) ||
	    ptrace(PTRACE_SETREGS, tid, NULL, &r)) {
		int e = errno;

		/* Nothing was changed in the thread yet, or only its PC. */
		restore_thread(tid, &saved);
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return inject_fail(in, e == ESRCH ? INJECT_GONE : INJECT_FAILED,
				   "cannot set up the call in thread %d: %s", (int)tid,
				   strerror(e));
	}
	/* From here on the thread needs nobody: it restores itself. */
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	snprintf(why, sizeof(why), "(no reason given)");
	cs = follow_stub(in, tid, wake, &cr, why, sizeof(why));
	switch (cs) {
	case CALL_OK:
		if (cr.deliver_errno)
			snprintf(why, sizeof(why), "cannot write the library into its memfd: %s",
				 strerror(cr.deliver_errno));
		else if (!cr.handle && cr.error == STUB_ERR_NOT_SEALED)
			snprintf(why, sizeof(why),
				 "the library's bytes were not delivered in time (%d s)",
				 STUB_MARKER_WAIT_S);
		else if (!cr.handle && cr.error >= (uint64_t)-4096)
			snprintf(why, sizeof(why), "its stack or memfd for the call: %s",
				 strerror((int)-(int64_t)cr.error));
		res->handle = cr.handle;
		if (!cr.handle)
			return inject_fail(in, INJECT_FAILED, "dlopen in process %d failed: %s",
					   (int)in->pid, why);
		return INJECT_OK;
	case CALL_GONE:
		return inject_fail(in, INJECT_GONE,
				   "process %d exited or was killed during the injection",
				   (int)in->pid);
	case CALL_LEFT:
		res->interrupted = cr.signal;
		return inject_fail(in, INJECT_FAILED,
				   "interrupted during the injection: thread %d of process %d is "
				   "still in its dlopen, and goes back to its work by itself when "
				   "that returns",
				   (int)tid, (int)in->pid);
	default:
		leave_thread(tid);
		return inject_fail(in, INJECT_FAILED,
				   "lost thread %d of process %d in the call: %s", (int)tid,
				   (int)in->pid, strerror(errno));
	}
}

static enum inject_status find_safe_thread(struct injector *in, const sigset_t *wake,
					   struct inject_result *res)
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
			int how = INJECT_JUDGED_SCAN;
			int safe = !ptrace(PTRACE_GETREGS, tids[i], NULL, &regs) &&
				   inject_thread_is_safe(in, tids[i], &regs, &how);

			double judged_s = now_s() - t0;

			res->judged[how]++;
			if (judged_s * 1e3 > res->judge_max_ms)
				res->judge_max_ms = judged_s * 1e3;
			if (safe) {
				res->judge_ms = judged_s * 1e3;
				enum inject_status st = inject_into(in, tids[i], wake, res);

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
			   "allocator, the dynamic loader and thread start or exit (each thread "
			   "stays inside them); not injecting: start the program with "
			   "LD_PRELOAD=%s instead",
			   INJECT_SAFE_POINT_TIMEOUT_S, (int)in->pid, in->lib->path);
}

enum inject_status inject_library(pid_t pid, const struct inject_lib *lib,
				  struct inject_result *res, char *err, size_t errlen)
{
	struct injector in = {.pid = pid, .lib = lib, .err = err, .errlen = errlen};
	const char *scan_only;
	sigset_t wake, old;
	enum inject_status st;

	memset(res, 0, sizeof(*res));
	st = inject_check_process(&in);
	if (st == INJECT_OK)
		st = inject_find_symbols(&in);
	if (st == INJECT_OK) {
		/*
		 * The loader's stop signals and SIGCHLD (a stop of the thread) are
		 * waited for, not handled, while a thread is ours: a stop signal
		 * lets go of the thread (safe at any instant), then is raised
		 * again for the loader's own handler.
		 */
		sigemptyset(&wake);
		sigaddset(&wake, SIGCHLD);
		sigaddset(&wake, SIGINT);
		sigaddset(&wake, SIGTERM);
		sigaddset(&wake, SIGHUP);
		sigaddset(&wake, SIGQUIT);
		sigprocmask(SIG_BLOCK, &wake, &old);
		/* The modules are read before any thread is stopped.  The word
		 * scan alone (MEMPROF_BPF_INJECT_SCAN_ONLY=1) is the old judgement, for
		 * the benchmark that compares the two. */
		scan_only = getenv("MEMPROF_BPF_INJECT_SCAN_ONLY");
		if (!scan_only || strcmp(scan_only, "1"))
			in.unwinder = inject_unwinder_open(pid);
		st = find_safe_thread(&in, &wake, res);
		inject_unwinder_close(in.unwinder);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (res->interrupted)
			raise(res->interrupted);
	}
	free(in.unsafe);
	return st;
}
