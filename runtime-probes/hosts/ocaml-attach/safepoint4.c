/*
 * OCaml 4.13 and 4.14: how the injectable host's call reaches the OCaml
 * side (docs/ocaml-host.md).
 *
 * The runtime's pending signals are run at a safe point, with the runtime
 * lock held: caml_process_pending_signals_exn (from the pending actions of
 * an allocation's slow path or a poll, and from caml_enter_blocking_section)
 * finds a pending entry in caml_pending_signals, then calls
 * caml_sigmask_hook(SIG_BLOCK, NULL, &set) to read the blocked signals,
 * before it runs the OCaml handlers of those pending.  The helper thread
 * replaces that hook with its own and records "signal" 0 with
 * caml_record_signal (what the runtime's signal handler calls: it marks the
 * entry and makes the next allocation take the slow path).  No signal is
 * sent, and 0 is no signal's number: the hook, seeing entry 0 marked and a
 * NULL set, clears the entry, acts (OCaml code may run there, as signal
 * handlers do), then calls the hook it replaced.  Had the entry stayed
 * marked, the runtime would still skip it (sigismember(&set, 0) fails, and
 * a failure counts as blocked).
 *
 * The hook is put back once the profile is stopped after the tracer left.
 */
#include "ocaml_attach.h"

#include <signal.h>
#include <stdatomic.h>

#include <caml/signals.h>

typedef int (*sigmask_hook)(int, const sigset_t *, sigset_t *);

/* The entry of caml_pending_signals the helper marks: no signal has it. */
#define REQUEST_ENTRY 0

static sigmask_hook prev_hook;
static int hook_installed;
/* Set by the helper, cleared by the hook once it acted. */
static atomic_int pending;

static int attach_sigmask_hook(int how, const sigset_t *set, sigset_t *old)
{
	if (!set && caml_pending_signals[REQUEST_ENTRY] && atomic_load(&pending)) {
		caml_pending_signals[REQUEST_ENTRY] = 0;
		/* One runtime lock: nobody else can be setting the tracker up. */
		attach_act();
		atomic_store(&pending, 0);
	}
	return prev_hook(how, set, old);
}

void safepoint_request(int up)
{
	(void)up;
	if (!hook_installed) {
		prev_hook =
		    __atomic_exchange_n(&caml_sigmask_hook, attach_sigmask_hook, __ATOMIC_SEQ_CST);
		hook_installed = 1;
	}
	atomic_store(&pending, 1);
	caml_record_signal(REQUEST_ENTRY);
}

int safepoint_served(void)
{
	return !atomic_load(&pending);
}

void safepoint_idle(void)
{
	if (!hook_installed || atomic_load(&pending))
		return;
	/* A thread still inside the hook returns through prev_hook, unchanged. */
	__atomic_store_n(&caml_sigmask_hook, prev_hook, __ATOMIC_SEQ_CST);
	hook_installed = 0;
}
