/*
 * OCaml 5.3: how the injectable host's call reaches the OCaml side of
 * every domain (docs/ocaml-host.md).
 *
 * The runtime calls caml_domain_external_interrupt_hook at the end of a
 * domain's pending actions (caml_do_pending_actions_res, after signal
 * handlers, memprof callbacks and finalisers, where the systhreads library
 * yields), when the domain's Caml_state->requested_external_interrupt is
 * set: the domain holds its lock there and may run OCaml code.  The helper
 * thread sets that flag in every domain, as the systhreads tick thread
 * does for its own (caml_init_domain_self gives the helper a domain's
 * Caml_state to write to: the domain states are allocated once per slot,
 * in slot order, and kept), then interrupts them all
 * (caml_interrupt_all_signal_safe, what the runtime's signal handler
 * calls), so each runs its pending actions at its next allocation or poll
 * point.  The hook acts once per request in each thread, then chains to
 * the hook it replaced (systhreads' clears the flag and yields).  The
 * runtime's default hook leaves the flag set; a flag left set costs a
 * domain one call of an empty hook per pending action.
 *
 * The hook is put back once no domain samples for the tracer.
 */
#include "ocaml_attach.h"

#include <stdatomic.h>

#include <caml/domain.h>
#include <caml/domain_state.h>
#include <caml/startup_aux.h>

typedef void (*interrupt_hook)(void);

/* Requests repeated for one generation while a domain has not acted on it:
 * at most this many (ATTACH_POLL_MS apart), for a domain whose state was
 * being set up when it was asked (domain_create clears the flag) and that
 * did not inherit a profile.  A slot whose domain has exited never acts:
 * the cap ends the requests.  A domain blocked through them all (a system
 * call, a join) acts once it wakes: its flag stays set (the default hook
 * leaves it), so its pending actions run the hook, which stays installed
 * while its profile is counted (tests/ocaml5/test_attach_domains.c). */
#define MAX_REPEATS 40
#define MAX_SLOTS 128

static interrupt_hook prev_hook;
static int hook_installed;
/* Bumped for each change the helper saw; a thread acts when it has not
 * seen the last one, and its domain's slot records it. */
static atomic_uint request_gen;
static atomic_uint acted_gen[MAX_SLOTS];
static _Thread_local unsigned seen_gen;
static _Thread_local int in_act;
static int last_up, repeats;

static void attach_interrupt_hook(void)
{
	unsigned gen = atomic_load(&request_gen);
	caml_domain_state *st = Caml_state_opt;

	if (seen_gen != gen && !in_act && st) {
		unsigned before = seen_gen;

		seen_gen = gen;
		in_act = 1;
		if (attach_act() < 0)
			seen_gen = before; /* again at the next pending action */
		else if (st->id >= 0 && st->id < MAX_SLOTS)
			atomic_store(&acted_gen[st->id], gen);
		in_act = 0;
	}
	if (prev_hook)
		prev_hook();
}

/* Set the flag of every domain that has not acted on gen; their number. */
static int ask_behind(unsigned gen)
{
	int behind = 0;

	for (uintnat i = 0; i < caml_params->max_domains && i < MAX_SLOTS; i++) {
		caml_domain_state *st;

		caml_init_domain_self((int)i);
		st = Caml_state_opt;
		if (!st)
			break; /* no domain ever ran in this slot, nor in any after it */
		if (atomic_load(&acted_gen[i]) == gen)
			continue;
		atomic_store(&st->requested_external_interrupt, 1);
		behind++;
	}
	return behind;
}

void safepoint_request(int up)
{
	if (!hook_installed) {
		prev_hook = __atomic_exchange_n(&caml_domain_external_interrupt_hook,
						attach_interrupt_hook, __ATOMIC_SEQ_CST);
		hook_installed = 1;
	}
	if (up != last_up || !repeats) {
		atomic_fetch_add(&request_gen, 1);
		last_up = up;
		repeats = 0;
	}
	repeats++;
	if (ask_behind(atomic_load(&request_gen)))
		caml_interrupt_all_signal_safe();
	else
		repeats = MAX_REPEATS;
}

int safepoint_served(void)
{
	return !hook_installed || repeats >= MAX_REPEATS;
}

void safepoint_idle(void)
{
	if (!hook_installed)
		return;
	/* A domain still inside the hook returns through prev_hook, unchanged. */
	__atomic_store_n(&caml_domain_external_interrupt_hook, prev_hook, __ATOMIC_SEQ_CST);
	hook_installed = 0;
	repeats = 0;
}
