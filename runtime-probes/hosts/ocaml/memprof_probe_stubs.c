/*
 * memprof_probe for OCaml 4.13 and 5.3 (native code): the memprof USDT
 * probes of memprof_probe_abi.h fired from the runtime's own Gc.Memprof,
 * so that `memprof-bpf attach PID` profiles an OCaml program that links
 * this library and calls Memprof_probe.install ().  One source for both
 * compilers; OCAML5 selects the 5.x parts.
 *
 * Who samples (4.13).  One Gc.Memprof profile runs at a time.  The
 * adapter's state says whose it is:
 *   IDLE     nobody samples;
 *   TRACER   the adapter started it for a tracer, at the tracer's rate;
 *   PROGRAM  the program started it (Gc.Memprof.start, memtrace...).
 * The link wraps caml_memprof_start and caml_memprof_stop (recorded in the
 * .cmxa): a program starting its own profile while the adapter samples
 * for a tracer takes over (the adapter's profile stops first, so the
 * program never sees "already started"), and its tracker is wrapped so
 * that a tracer sees its samples at its rate, as with the other hosts'
 * in-process profiles.  Stopping it hands sampling back to the tracer.
 * 4.13's stop forgets every tracked block: the control block then says so
 * (MEMPROF_PROBE_F_FORGOT) and the loader notes it.
 *
 * Who samples (5.x).  Profiles belong to domains, and the same three
 * owners are kept per domain, on the OCaml side (memprof_probe5.ml, in
 * domain-local storage); the wraps call it.  A program taking over stops
 * the adapter's profile without discarding it, so the blocks it tracks
 * keep their promote and dealloc until they die; the adapter discards its
 * profiles at detach.
 *
 * Noticing attach and detach.  install () starts a helper pthread (all
 * signals blocked, small stack) that reads the sample semaphore every
 * POLL_MS.  When it changes, the thread asks the runtime for an
 * asynchronous action, as a signal would: 4.13's caml_set_action_pending,
 * 5.x's interrupt of every domain (caml_interrupt_all_signal_safe, what
 * the runtime's own signal handler calls).  The runtime then runs its
 * pending actions at the next allocation (5.x: or poll point) of a thread
 * holding the runtime (domain) lock; the link wraps the last of them, where
 * finalisers run OCaml code (caml_final_do_calls_exn, 5.x
 * caml_final_do_calls_res), and the wrapper calls the OCaml poll, which
 * starts or stops Gc.Memprof.  No signal is used.  5.x: every thread runs
 * the poll once per request; a new domain runs pending actions before
 * Domain.spawn's body has created its domain-local storage, which the
 * poll reads, so the wrapper waits for that storage, and the poll of a
 * domain whose state has not come from its parent yet runs again at its
 * next pending action.
 *
 * Stacks: memprof_probe_callstack.c.
 *
 * GC timeline: memprof:gc fires from the runtime's timing hooks,
 * memprof_probe_gc.c (shared with the injectable host).
 */
#define CAML_INTERNALS
#include "memprof_probe_version.h"
#if !MEMPROF_OCAML_NO_MEMPROF /* to the end: memprof_probe_version.h */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <caml/alloc.h>
#include <caml/backtrace_prim.h>
#include <caml/callback.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/misc.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>
#if OCAML5
#include <caml/domain.h>
#include <caml/frame_descriptors.h>
#else
#include <caml/stack.h>
#endif

#include <linux/types.h>

#include "memprof_probe_abi.h"
#include "memprof_probe_callstack.h"
#include "memprof_probe_gc.h"
#include "memprof_probe_site.h"

/* How often the helper thread reads the sample semaphore. */
#define POLL_MS 50

/* The kernel increments these (uprobe ref_ctr_offset) while a probe is attached. */
unsigned short memprof_sample_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_events_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_gc_semaphore __attribute__((section(".probes"), used));

__attribute__((used, visibility("default"))) struct memprof_probe_control memprof_probe_control = {
    .magic = MEMPROF_PROBE_CONTROL_MAGIC,
    .abi_version = MEMPROF_PROBE_ABI_VERSION,
};

enum owner { OWNER_IDLE, OWNER_TRACER, OWNER_PROGRAM };

static _Atomic uint64_t next_id = 1;
/* Blocks sampled since the tracer was last seen attached have id >= first_id. */
static _Atomic uint64_t first_id = 1;
static atomic_int tracer_seen;
/* Set when the host forgot blocks it followed for the tracer (4.13). */
static atomic_int forgot;

/* Shared with the helper thread. */
static atomic_int installed;
static atomic_int helper_running;

static int tracer_up(void)
{
	return PROBE_SEMAPHORE_UP(memprof_sample_semaphore) && probe_sites_armed();
}

static int any_semaphore_up(void)
{
	return PROBE_SEMAPHORE_UP(memprof_sample_semaphore) ||
	       PROBE_SEMAPHORE_UP(memprof_events_semaphore) ||
	       PROBE_SEMAPHORE_UP(memprof_gc_semaphore);
}

/*
 * Who samples, for the control block.  4.13: one owner.  5.x: profiles
 * started by the program and by the adapter are counted; a program's
 * profile takes precedence in what the control block says.
 */
static atomic_int program_profiles, tracer_profiles;
static _Atomic double program_rate, tracer_rate;

static void publish(void)
{
	uint32_t flags = 0;
	double rate = 0;

	if (atomic_load(&program_profiles) > 0) {
		flags = MEMPROF_PROBE_F_IN_PROCESS;
		rate = atomic_load(&program_rate);
	} else if (atomic_load(&tracer_profiles) > 0) {
		flags = MEMPROF_PROBE_F_TRACER;
		rate = atomic_load(&tracer_rate);
	}
	if (atomic_load(&forgot))
		flags |= MEMPROF_PROBE_F_FORGOT;
	__atomic_store(&memprof_probe_control.active_rate, &rate, __ATOMIC_RELAXED);
	__atomic_store_n(&memprof_probe_control.flags, flags, __ATOMIC_RELEASE);
}

/* 4.13: the rate of the one profile (5.x hands the rate of each sample). */
static double current_rate(void);

/* ---- The probes ---- */

/*
 * Fire memprof:sample for a Gc.Memprof allocation sampled at vrate (a
 * float; 0: the rate of the one 4.13 profile); returns its id, 0 if not
 * traced.
 */
CAMLprim value memprof_probe_sample(value alloc, value kind, value vrate)
{
	uint64_t stack[MEMPROF_CALLSTACK_BUF];
	uint64_t id, size, n, ks, sp, sl, inv_q16;
	double inv, rate;

	if (!PROBE_SEMAPHORE_UP(memprof_sample_semaphore) || !probe_sites_armed())
		return Val_long(0);
	id = atomic_fetch_add(&next_id, 1);
	if (!atomic_load(&tracer_seen)) {
		atomic_store(&first_id, id);
		atomic_store(&tracer_seen, 1);
	}
	n = (uint64_t)Long_val(Field(alloc, 0));
	size = (uint64_t)Long_val(Field(alloc, 1));
	ks = MEMPROF_PROBE_KIND_SOURCE(Long_val(kind), Long_val(Field(alloc, 2)));
	/* The profile asks Gc.Memprof for MEMPROF_CALLSTACK_BUF frames. */
	sl = memprof_callstack_entries(Field(alloc, 3), stack, &ks);
	sp = (uint64_t)(uintptr_t)stack;
	rate = Double_val(vrate) > 0 ? Double_val(vrate) : current_rate();
	inv = rate > 0 ? round((double)(1u << MEMPROF_PROBE_RATE_SHIFT) / rate) : 0;
	inv_q16 = inv >= 0x1p64 ? UINT64_MAX : (uint64_t)inv;
	DTRACE_PROBE7(memprof, sample, id, size, n, ks, sp, sl, inv_q16);
	__atomic_fetch_add(&memprof_probe_control.samples, 1, __ATOMIC_RELAXED);
	return Val_long((intnat)id);
}

static int id_traced(uint64_t id)
{
	return id && atomic_load(&tracer_seen) && id >= atomic_load(&first_id);
}

/*
 * Promotions and deaths go to the tracer in memprof:events batches: at the
 * end of each minor collection (the callbacks of the one before ran
 * since), when the buffer is full, and from the helper thread when events
 * wait longer than POLL_MS.  The OCaml callbacks run with the runtime
 * lock, the helper without it: the buffer has its own mutex.
 */
static struct probe_events events_queue;
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;

/* The probe's one site. */
static __attribute__((noinline)) void events_flush_locked(void)
{
	probe_events_flush(&events_queue);
}

static void events_add(uint64_t id, unsigned what)
{
	pthread_mutex_lock(&events_lock);
	if (probe_events_add(&events_queue, id, what))
		events_flush_locked();
	pthread_mutex_unlock(&events_lock);
}

static void events_flush(void)
{
	if (!events_queue.n)
		return;
	pthread_mutex_lock(&events_lock);
	events_flush_locked();
	pthread_mutex_unlock(&events_lock);
}

/* Queue a promote event; returns whether the tracer still follows the block. */
CAMLprim value memprof_probe_promote(value vid)
{
	uint64_t id = (uint64_t)Long_val(vid);

	if (!id_traced(id))
		return Val_false;
	events_add(id, MEMPROF_PROBE_EV_PROMOTE);
	return Val_true;
}

CAMLprim value memprof_probe_dealloc(value vid, value vkind)
{
	uint64_t id = (uint64_t)Long_val(vid);

	if (id_traced(id))
		events_add(id, Long_val(vkind) == MEMPROF_PROBE_KIND_MINOR
				   ? MEMPROF_PROBE_EV_DEALLOC_MINOR
				   : MEMPROF_PROBE_EV_DEALLOC_MAJOR);
	return Val_unit;
}

/* ---- Who samples ---- */

value __real_caml_memprof_start(value lv, value szv, value tracker);
value __real_caml_memprof_stop(value unit);

CAMLprim value memprof_probe_tracer_up(value unit)
{
	(void)unit;
	return Val_bool(tracer_up());
}

CAMLprim value memprof_probe_requested_rate(value unit)
{
	double want = *(volatile double *)&memprof_probe_control.requested_rate;

	(void)unit;
	if (isnan(want) || want <= 0 || want > 1)
		want = MEMPROF_PROBE_DEFAULT_RATE;
	return caml_copy_double(want);
}

/* The tracer's presence was acted on (up) or its departure (down). */
static void tracer_acked(int up)
{
	if (!up) {
		atomic_store(&tracer_seen, 0);
		if (atomic_exchange(&forgot, 0))
			publish();
	}
}

#if OCAML5
/* Per domain, the OCaml side keeps the owner and the profiles. */
static double current_rate(void)
{
	return 0;
}

/* Start a profile for real (raises as Gc.Memprof.start does). */
CAMLprim value memprof_probe_real_start(value lv, value szv, value tracker)
{
	return __real_caml_memprof_start(lv, szv, tracker);
}

CAMLprim value memprof_probe_real_stop(value unit)
{
	return __real_caml_memprof_stop(unit);
}

/* Whether a profile samples (a Gc.Memprof.t is a block whose field 0 is its
 * status, 0 while sampling: runtime/memprof.c). */
CAMLprim value memprof_probe_profile_sampling(value profile)
{
	return Val_bool(Is_block(profile) && Long_val(Field(profile, 0)) == 0);
}

/* A domain's owner went from old to now (at rate, for now != IDLE). */
CAMLprim value memprof_probe_owner_change(value vold, value vnow, value vrate)
{
	int old = Int_val(vold), now = Int_val(vnow);

	if (old == OWNER_TRACER)
		atomic_fetch_sub(&tracer_profiles, 1);
	else if (old == OWNER_PROGRAM)
		atomic_fetch_sub(&program_profiles, 1);
	if (now == OWNER_TRACER) {
		atomic_store(&tracer_rate, Double_val(vrate));
		atomic_fetch_add(&tracer_profiles, 1);
	} else if (now == OWNER_PROGRAM) {
		atomic_store(&program_rate, Double_val(vrate));
		atomic_fetch_add(&program_profiles, 1);
	}
	publish();
	return Val_unit;
}

/* Bumped when every domain should run the OCaml poll again. */
static atomic_uint poll_gen = 1;
static _Thread_local unsigned seen_gen;
static _Thread_local int in_poll;

static void request_poll(void)
{
	atomic_fetch_add(&poll_gen, 1);
	caml_interrupt_all_signal_safe();
}

CAMLprim value memprof_probe_request_poll(value unit)
{
	(void)unit;
	request_poll();
	return Val_unit;
}

CAMLprim value memprof_probe_ack(value vup)
{
	tracer_acked(Bool_val(vup));
	return Val_unit;
}

/* The program's Gc.Memprof.start and stop, through the OCaml side. */
value __wrap_caml_memprof_start(value lv, value szv, value tracker)
{
	const value *f = atomic_load(&installed) ? caml_named_value("memprof_probe.start") : NULL;
	value args[3] = {lv, szv, tracker};

	if (!f)
		return __real_caml_memprof_start(lv, szv, tracker);
	return caml_callbackN(*f, 3, args);
}

value __wrap_caml_memprof_stop(value unit)
{
	const value *f = atomic_load(&installed) ? caml_named_value("memprof_probe.stop") : NULL;

	if (!f)
		return __real_caml_memprof_stop(unit);
	return caml_callback(*f, unit);
}

static void *helper_main(void *arg)
{
	int last = 0, again = 0;

	(void)arg;
	for (;;) {
		struct timespec pause = {0, POLL_MS * 1000000L};
		int up;

		nanosleep(&pause, NULL);
		probe_events_service(&events_queue, POLL_MS * 1000000ull, events_flush);
		up = tracer_up();
		if (up != last) {
			last = up;
			again = 2;
			request_poll();
		} else if (again > 0) {
			/* Cheap insurance: interrupt again a domain that was mid-collection. */
			again--;
			caml_interrupt_all_signal_safe();
		}
	}
	return NULL;
}

static void fork_child_reset(void)
{
	/* The child polls again at its first pending action (its parent's
	 * profile may be sampling for a tracer the child does not have). */
	atomic_fetch_add(&poll_gen, 1);
}

caml_result __real_caml_final_do_calls_res(void);
static void helper_start(void);

caml_result __wrap_caml_final_do_calls_res(void)
{
	if (atomic_load(&installed)) {
		unsigned gen = atomic_load(&poll_gen);

		if (!atomic_load(&helper_running))
			helper_start(); /* a forked child: its parent's helper is gone */
		/* Not before Domain.spawn's body created the domain's storage
		 * (the OCaml poll reads it): until then dls_root is unit. */
		if (gen != seen_gen && !in_poll && Caml_state->dls_root != Val_unit) {
			const value *poll = caml_named_value("memprof_probe.poll");
			value done = Val_true;

			in_poll = 1;
			/* It catches everything; false: the domain's key is not set
			 * yet, poll again at the next pending action. */
			if (poll)
				done = caml_callback_exn(*poll, Val_unit);
			in_poll = 0;
			if (Is_exception_result(done) || Bool_val(done))
				seen_gen = gen;
		}
	}
	return __real_caml_final_do_calls_res();
}

#else /* OCaml 4.13 */

/* Written with the runtime lock held. */
static enum owner owner = OWNER_IDLE;
static double owner_rate;
static atomic_int acked = 0; /* what the OCaml side last acted on; -1: act again */
static atomic_int poll_requested;
static atomic_int in_poll;

static double current_rate(void)
{
	return owner_rate;
}

static void set_owner(enum owner now, double rate)
{
	atomic_store(&program_profiles, now == OWNER_PROGRAM);
	atomic_store(&tracer_profiles, now == OWNER_TRACER);
	atomic_store(now == OWNER_PROGRAM ? &program_rate : &tracer_rate, rate);
	owner = now;
	owner_rate = rate;
	publish();
}

/* 4.13's stop forgets every tracked block: those the tracer saw get no dealloc. */
static void stop_forgetting(void)
{
	__real_caml_memprof_stop(Val_unit);
	if (atomic_load(&tracer_seen) && !atomic_exchange(&forgot, 1))
		publish();
}

CAMLprim value memprof_probe_owner(value unit)
{
	(void)unit;
	return Val_int(owner);
}

/* Start Gc.Memprof for the tracer (raises as Gc.Memprof.start does). */
CAMLprim value memprof_probe_start_for_tracer(value lv, value szv, value tracker)
{
	CAMLparam3(lv, szv, tracker);
	__real_caml_memprof_start(lv, szv, tracker);
	set_owner(OWNER_TRACER, Double_val(lv));
	CAMLreturn(Val_unit);
}

CAMLprim value memprof_probe_stop_for_tracer(value unit)
{
	if (owner == OWNER_TRACER) {
		__real_caml_memprof_stop(unit);
		set_owner(OWNER_IDLE, 0);
	}
	return Val_unit;
}

/* The OCaml side acted on the tracer's presence `up`. */
CAMLprim value memprof_probe_ack(value vup)
{
	int up = Bool_val(vup);

	tracer_acked(up);
	atomic_store(&acked, up);
	return Val_unit;
}

value __wrap_caml_memprof_start(value lv, value szv, value tracker)
{
	CAMLparam3(lv, szv, tracker);
	CAMLlocal1(wrapped);
	const value *wrap;

	if (!atomic_load(&installed) || owner == OWNER_PROGRAM)
		CAMLreturn(__real_caml_memprof_start(lv, szv, tracker));
	if (owner == OWNER_TRACER) {
		stop_forgetting();
		set_owner(OWNER_IDLE, 0);
		/* If the program's start fails, the helper asks for a poll again. */
		atomic_store(&acked, -1);
	}
	wrap = caml_named_value("memprof_probe.wrap");
	wrapped = wrap ? caml_callback(*wrap, tracker) : tracker;
	__real_caml_memprof_start(lv, szv, wrapped);
	set_owner(OWNER_PROGRAM, Double_val(lv));
	CAMLreturn(Val_unit);
}

value __wrap_caml_memprof_stop(value unit)
{
	if (!atomic_load(&installed))
		return __real_caml_memprof_stop(unit);
	if (owner == OWNER_TRACER) /* what the program would see without the adapter */
		caml_failwith("Gc.Memprof.stop: not started.");
	if (owner == OWNER_PROGRAM) {
		stop_forgetting();
		set_owner(OWNER_IDLE, 0);
		atomic_store(&acked, -1); /* the tracer may want sampling back */
		return Val_unit;
	}
	return __real_caml_memprof_stop(unit);
}

static void *helper_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec pause = {0, POLL_MS * 1000000L};
		int up;

		nanosleep(&pause, NULL);
		probe_events_service(&events_queue, POLL_MS * 1000000ull, events_flush);
		up = tracer_up();
		if (up != atomic_load(&acked) && !atomic_load(&poll_requested)) {
			atomic_store(&poll_requested, 1);
			caml_set_action_pending();
		} else if (atomic_load(&poll_requested)) {
			/* Not served yet (the runtime may have overwritten the limit). */
			caml_set_action_pending();
		}
	}
	return NULL;
}

static void fork_child_reset(void)
{
}

value __real_caml_final_do_calls_exn(void);
static void helper_start(void);

value __wrap_caml_final_do_calls_exn(void)
{
	if (atomic_load(&installed) && !atomic_load(&helper_running))
		helper_start(); /* a forked child: its parent's helper is gone */
	if (atomic_load(&poll_requested) && !atomic_exchange(&in_poll, 1)) {
		const value *poll = caml_named_value("memprof_probe.poll");

		atomic_store(&poll_requested, 0);
		if (poll)
			caml_callback_exn(*poll, Val_unit); /* it catches everything */
		atomic_store(&in_poll, 0);
	}
	return __real_caml_final_do_calls_exn();
}
#endif

/* ---- Noticing attach and detach ---- */

static void helper_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;

	if (pthread_attr_init(&attr))
		return;
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!pthread_create(&t, &attr, helper_main, NULL))
		atomic_store(&helper_running, 1);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

static void fork_child(void)
{
	atomic_store(&helper_running, 0);
	pthread_mutex_init(&events_lock, NULL);
	events_queue.n = 0; /* the parent's events are the parent's */
	fork_child_reset();
	probe_sites_fork_child(any_semaphore_up());
	memprof_gc_fork_child(any_semaphore_up());
}

CAMLprim value memprof_probe_install(value unit)
{
	(void)unit;
	if (atomic_exchange(&installed, 1))
		return Val_unit;
	pthread_atfork(NULL, NULL, fork_child);
	atexit(events_flush); /* the deaths still queued reach the tracer */
	memprof_gc_hooks_install(events_flush);
	helper_start();
	return Val_unit;
}
#endif /* !MEMPROF_OCAML_NO_MEMPROF */
