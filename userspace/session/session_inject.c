/*
 * The scan or injection of a target (session.c's attach): its probes, or
 * the host to load into it, vetted and injected (trace/inject.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session_internal.h"
#include "trace/inject.h"
#include "trace/ocaml_runtime.h"
#include "trace/python_runtime.h"

/*
 * The host to inject: the library named host (the injectable OCaml host),
 * or the malloc host (host NULL): --preload, or libmemprof-preload.so; next
 * to this program, or in ../lib (where an installation puts it).  out:
 * PATH_MAX bytes.
 */
static int preload_path(const struct attach_opts *o, const char *host, char *out, char *err,
			size_t errlen)
{
	char self[PATH_MAX], dir[PATH_MAX];
	const char *candidates[] = {"%s/%s", "%s/../lib/%s"};
	const char *name = host ? host : "libmemprof-preload.so";

	if (o->preload && !host) {
		if (!realpath(o->preload, out)) {
			snprintf(err, errlen, "--preload %.300s: %s", o->preload, strerror(errno));
			return -1;
		}
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		snprintf(err, errlen, "cannot find this program's path: %s", strerror(errno));
		return -1;
	}
	self[n] = 0;
	snprintf(dir, sizeof(dir), "%s", self);
	*strrchr(dir, '/') = 0;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), candidates[i], dir, name);
		if (realpath(path, out) && !access(out, R_OK))
			return 0;
	}
	snprintf(err, errlen, "no %s next to %.300s or in ../lib to inject%s", name, self,
		 host ? "" : "; give --preload LIB");
	return -1;
}

/*
 * Find the probes; a process without them gets the malloc host loaded into
 * it (unless --no-inject), and is scanned again.  A process that has them
 * (preloaded, a memprof runtime, injected before) is never injected.
 */
static int scan_or_inject_locked(const struct attach_opts *o, struct traced *p, char *err,
				 size_t errlen)
{
	enum target_status st = target_scan(p->pid, p->sym, &p->t, err, errlen);
	struct inject_result res;
	struct inject_lib lib;
	enum inject_status ist;
	char path[PATH_MAX];
	const char *ocaml_host = NULL;
	struct python_runtime py = {0};

	if (st == TARGET_NO_PROBES && proc_is_kernel_thread(p->pid)) {
		snprintf(err, errlen,
			 "process %d is a kernel thread: it has no user memory and no memprof "
			 "probes to trace",
			 (int)p->pid);
		return st;
	}
	/* An OCaml program: the malloc host would see only the runtime's heap
	 * chunks; it is refused or given the OCaml host (ocaml_runtime.h). */
	if (st == TARGET_NO_PROBES && !o->inject_malloc) {
		struct ocaml_runtime rt;

		if (!ocaml_runtime_of_pid(p->pid, &rt) &&
		    ocaml_runtime_refusal(p->pid, &rt, err, errlen))
			return TARGET_OCAML_REFUSED;
		ocaml_host = ocaml_runtime_attach_host(&rt);
		/* A CPython: the Python host sees pymalloc (python_runtime.h). */
		if (!python_runtime_of_pid(p->pid, &py) &&
		    python_runtime_refusal(p->pid, &py, err, errlen))
			return TARGET_PYTHON_REFUSED;
	}
	if (st != TARGET_NO_PROBES || o->no_inject) {
		if (st == TARGET_NO_PROBES)
			strncat(err,
				ocaml_host ? "; --no-inject: not loading the OCaml host"
					   : "; --no-inject: not loading the malloc host",
				errlen - strlen(err) - 1);
		return st;
	}
	target_free(&p->t);
	if (preload_path(o,
			 ocaml_host			 ? ocaml_host
			 : python_runtime_supported(&py) ? PYTHON_HOST_LIB
							 : NULL,
			 path, err, errlen))
		return TARGET_INJECT_FAILED;
	switch (inject_lib_open(path, &lib, err, errlen)) {
	case 0:
		break;
	case INJECT_LIB_UNTRUSTED:
		return TARGET_INJECT_DENIED;
	default:
		return TARGET_INJECT_FAILED;
	}
	ist = inject_library(p->pid, &lib, &res, err, errlen);
	inject_lib_free(&lib);
	switch (ist) {
	case INJECT_OK:
		break;
	case INJECT_DENIED:
		return TARGET_INJECT_DENIED;
	default:
		return TARGET_INJECT_FAILED;
	}
	fprintf(
	    stderr,
	    "memprof-bpf: note: process %d had no memprof probes: loaded %s into it (its thread "
	    "%d paused %.2f ms); it stays loaded after detach\n",
	    (int)p->pid, lib.path, (int)res.tid, res.pause_ms);
	if (o->verbose)
		fprintf(
		    stderr,
		    "memprof-bpf: injection: %u interruption(s), %.2f ms in all; threads judged "
		    "by their call chain %u, by the chain and a stack scan above it %u, by a "
		    "stack scan %u, at once (in unsafe code) %u; judging took %.3f ms of the "
		    "pause, at most %.3f ms for any thread\n",
		    res.attempts, res.total_ms, res.judged[0], res.judged[1], res.judged[2],
		    res.judged[3], res.judge_ms, res.judge_max_ms);
	st = target_scan(p->pid, p->sym, &p->t, err, errlen);
	if (st == TARGET_NO_PROBES)
		snprintf(err, errlen, "process %d: %.300s was loaded but shows no memprof probes",
			 (int)p->pid, lib.path);
	return st;
}

/* The same, holding the process's injection lock (inject.h). */
int session_scan_or_inject(const struct attach_opts *o, struct traced *p, char *err, size_t errlen)
{
	int lock = o->no_inject ? INJECT_LOCK_NONE
				: inject_lock(p->pid, INJECT_LOCK_TIMEOUT_S, err, errlen);
	int st;

	if (lock == -1)
		return TARGET_INJECT_DENIED;
	st = scan_or_inject_locked(o, p, err, errlen);
	inject_unlock(lock, p->pid);
	return st;
}
