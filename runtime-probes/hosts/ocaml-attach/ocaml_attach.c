/*
 * The injectable OCaml host: Gc.Memprof started inside a running native
 * OCaml program that was never linked with memprof_probe, by a library the
 * loader injects (ocaml_attach.h says how it is split and built).
 *
 * It fires the probes of memprof_probe_abi.h as the linked OCaml host
 * (runtime-probes/hosts/ocaml) does, with the same stack entries (that
 * host's memprof_probe_callstack.c, compiled in), so the loader decodes
 * its samples with no special case.
 *
 * The tracker.  Gc.Memprof calls five OCaml closures.  They are built here,
 * in C: a Closure_tag block of arity 1 whose code pointer is
 * attach_closure_code (below) and whose one environment field is the
 * callback's number, an OCaml int.  The code moves its argument and that
 * number into the C argument registers and calls the runtime's own
 * caml_c_call with ocaml_attach_dispatch, as compiled OCaml calls an
 * external that allocates; 4.x's caml_c_call leaves the allocation pointer
 * to its caller, so the code reloads it from Caml_state (5.x's reloads it
 * itself).  The call's return address has a frame descriptor of its own
 * (no live values, 16 bytes of frame), registered with the runtime, so a
 * collection inside the callback walks past the stub.  The same closure
 * code, with the number CB_CONTROL, is how the safe point calls
 * caml_memprof_start and caml_memprof_stop under caml_callback_exn: an
 * exception they raise (a profile the program started itself) comes back
 * as a result, not as a jump out of the runtime's pending actions.
 *
 * A block's tracker data is its probe id; a block sampled before the
 * tracer was last seen is not followed (its id is older than first_id).
 */
#include "ocaml_attach.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <caml/alloc.h>
#include <caml/callback.h>
#include <caml/memory.h>
#include <caml/misc.h>
#include <caml/signals.h>
#if OCAML5
#include <caml/domain_state.h>
#include <caml/frame_descriptors.h>
#else
#include <caml/domain_state.h>
#include <caml/stack.h>
#endif

#include <linux/types.h>

#include "memprof_probe_abi.h"
#include "memprof_probe_callstack.h"
#include "memprof_probe_gc.h"
#include "memprof_probe_site.h"

/* The kernel increments these (uprobe ref_ctr_offset) while a probe is attached. */
unsigned short memprof_sample_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_events_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_gc_semaphore __attribute__((section(".probes"), used));

__attribute__((used, visibility("default"))) struct memprof_probe_control memprof_probe_control = {
    .magic = MEMPROF_PROBE_CONTROL_MAGIC,
    .abi_version = MEMPROF_PROBE_ABI_VERSION,
};

/* Values of memprof_probe_abi.h's kinds, and the callbacks' numbers. */
enum {
	CB_ALLOC_MINOR,
	CB_ALLOC_MAJOR,
	CB_PROMOTE,
	CB_DEALLOC_MINOR,
	CB_DEALLOC_MAJOR,
	CB_CONTROL, /* not a tracker callback: start or stop, under caml_callback_exn */
	N_CB
};
enum { OP_START, OP_STOP };

static _Atomic uint64_t next_id = 1;
/* Blocks sampled since the tracer was last seen attached have id >= first_id. */
static _Atomic uint64_t first_id = 1;
static atomic_int tracer_seen;
/* Domains (4.x: 0 or 1) sampling for the tracer, at rate. */
static atomic_int sampling_domains;
static double rate;

int attach_tracer_up(void)
{
	return PROBE_SEMAPHORE_UP(memprof_sample_semaphore) && probe_sites_armed();
}

int attach_sampling(void)
{
	return atomic_load(&sampling_domains) > 0;
}

/* Set when the program's own Gc.Memprof kept the host from starting one
 * for a tracer (start raised, and no domain samples for the tracer), until
 * a later attach starts one: the control block says IN_PROCESS at rate 0,
 * a rate this host cannot know, and the loader says the program was left
 * alone. */
static atomic_int program_owns;

static void publish(void)
{
	int on = attach_sampling();
	double r = on ? rate : 0;
	uint32_t flags = on			      ? MEMPROF_PROBE_F_TRACER
			 : atomic_load(&program_owns) ? MEMPROF_PROBE_F_IN_PROCESS
						      : 0;

	__atomic_store(&memprof_probe_control.active_rate, &r, __ATOMIC_RELAXED);
	__atomic_store_n(&memprof_probe_control.flags, flags, __ATOMIC_RELEASE);
}

/* ---- The probes ---- */

/* Fire memprof:sample for a Gc.Memprof allocation record; its id, 0 if not traced. */
static uint64_t fire_sample(value alloc, int kind)
{
	uint64_t stack[MEMPROF_CALLSTACK_BUF];
	uint64_t id, size, n, ks, sp, sl, inv_q16;
	double inv;

	if (!attach_tracer_up())
		return 0;
	id = atomic_fetch_add(&next_id, 1);
	if (!atomic_load(&tracer_seen)) {
		atomic_store(&first_id, id);
		atomic_store(&tracer_seen, 1);
	}
	n = (uint64_t)Long_val(Field(alloc, 0));
	size = (uint64_t)Long_val(Field(alloc, 1));
	ks = MEMPROF_PROBE_KIND_SOURCE(kind, Long_val(Field(alloc, 2)));
	sl = memprof_callstack_entries(Field(alloc, 3), stack, &ks);
	sp = (uint64_t)(uintptr_t)stack;
	inv = rate > 0 ? round((double)(1u << MEMPROF_PROBE_RATE_SHIFT) / rate) : 0;
	inv_q16 = inv >= 0x1p64 ? UINT64_MAX : (uint64_t)inv;
	DTRACE_PROBE7(memprof, sample, id, size, n, ks, sp, sl, inv_q16);
	__atomic_fetch_add(&memprof_probe_control.samples, 1, __ATOMIC_RELAXED);
	return id;
}

static int id_traced(uint64_t id)
{
	return id && atomic_load(&tracer_seen) && id >= atomic_load(&first_id);
}

/*
 * Promotions and deaths go to the tracer in memprof:events batches: when
 * the buffer is full, when the tracer asks, and from the helper thread
 * when events wait longer than ATTACH_POLL_MS.  Callbacks run on OCaml
 * threads (5.x: domains in parallel), the helper on its own: the buffer
 * has a mutex.
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

/* ---- The closures ---- */

/* Some id (an allocation: the stub's frame descriptor covers it). */
static value some_id(uint64_t id)
{
	value v = caml_alloc_small(1, 0);

	Field(v, 0) = Val_long((intnat)id);
	return v;
}

static value tracker = Val_unit, control = Val_unit;

/* The runtime's primitives behind Gc.Memprof (5.x: start returns the profile). */
CAMLextern value caml_memprof_start(value lv, value szv, value tracker);
CAMLextern value caml_memprof_stop(value unit);
#if OCAML5
CAMLextern value caml_memprof_discard(value profile);
#endif

/*
 * Gc.Memprof.start at rate with the tracker.  The rate's box is allocated
 * before the tracker is read: an allocation may run a minor collection
 * (in 5.x whenever another domain asks for one), which moves a young
 * tracker, and a value read before it would be the old copy, whose
 * fields are the collector's forwarding words.  (A crash seen here in
 * about one attach of eleven to four domains: the profile's callbacks
 * were the tracker's forwarding pointer and a header.)
 */
static value control_start(void)
{
	CAMLparam0();
	CAMLlocal1(lv);

	lv = caml_copy_double(rate);
	CAMLreturn(caml_memprof_start(lv, Val_long(MEMPROF_CALLSTACK_BUF), tracker));
}

/* Called by attach_closure_code through caml_c_call, as an OCaml external. */
ATTACH_HIDDEN value ocaml_attach_dispatch(value arg, value which);
value ocaml_attach_dispatch(value arg, value which)
{
	uint64_t id;

	switch (Int_val(which)) {
	case CB_ALLOC_MINOR:
	case CB_ALLOC_MAJOR:
		id = fire_sample(arg, Int_val(which) == CB_ALLOC_MINOR ? MEMPROF_PROBE_KIND_MINOR
								       : MEMPROF_PROBE_KIND_MAJOR);
		return id ? some_id(id) : Val_int(0);
	case CB_PROMOTE:
		id = (uint64_t)Long_val(arg);
		if (!id_traced(id))
			return Val_int(0);
		events_add(id, MEMPROF_PROBE_EV_PROMOTE);
		return some_id(id);
	case CB_DEALLOC_MINOR:
	case CB_DEALLOC_MAJOR:
		id = (uint64_t)Long_val(arg);
		if (id_traced(id))
			events_add(id, Int_val(which) == CB_DEALLOC_MINOR
					   ? MEMPROF_PROBE_EV_DEALLOC_MINOR
					   : MEMPROF_PROBE_EV_DEALLOC_MAJOR);
		return Val_unit;
	case CB_CONTROL:
		if (Int_val(arg) == OP_START)
			return control_start();
		return caml_memprof_stop(Val_unit);
	}
	return Val_unit;
}

/*
 * The closures' code: OCaml's calling convention (argument in %rax, the
 * closure in %rbx, Caml_state in %r14, the allocation pointer in %r15).
 * 16 bytes of frame: the pad keeps %rsp 16-aligned at the call, as the
 * frame descriptor (frame size 16, nothing live) says.
 */
#if OCAML5
#define RELOAD_YOUNG_PTR ""
#else
/* 4.x: compiled OCaml reloads the allocation pointer after caml_c_call. */
#define YOUNG_PTR_OFFSET 8
_Static_assert(offsetof(caml_domain_state, young_ptr) == YOUNG_PTR_OFFSET,
	       "Caml_state's young_ptr offset");
#define RELOAD_YOUNG_PTR "	movq 8(%r14), %r15\n"
#endif
__asm__(".text\n"
	".p2align 4\n"
	".type attach_closure_code, @function\n"
	"attach_closure_code:\n"
	"	subq $8, %rsp\n"
	"	movq %rax, %rdi\n"
	"	movq 16(%rbx), %rsi\n"
	"	leaq ocaml_attach_dispatch(%rip), %rax\n"
	"	call caml_c_call@PLT\n"
	"attach_closure_return:\n" RELOAD_YOUNG_PTR "	addq $8, %rsp\n"
	"	ret\n"
	".size attach_closure_code, .-attach_closure_code\n");
extern char attach_closure_code[], attach_closure_return[];

/* A frametable of one descriptor: its count, then the descriptor. */
static struct {
	intnat count;
	uintnat retaddr;
	uint16_t frame_size, num_live;
	uint32_t pad;
} frametable;

static value closure(int which)
{
	value c = caml_alloc_small(3, Closure_tag);

	Field(c, 0) = (value)attach_closure_code;
	Field(c, 1) = Make_closinfo(1, 2);
	Field(c, 2) = Val_int(which);
	return c;
}

#if OCAML5
/* The profile each domain started for the tracer (Val_unit: none), by
 * domain index; a domain spawned while its parent samples shares the
 * parent's (5.3's Gc.Memprof semantics) and starts none. */
#define MAX_DOMAINS 128
static value profiles[MAX_DOMAINS];
/*
 * Profiles whose domain exited while they sampled (Val_unit: a free
 * slot).  The domains it spawned meanwhile share such a profile and go on
 * sampling with it, but its own slot never acts again: at the detach the
 * first domain that acts stops and discards it (orphans_release).  The
 * exiting domain moves it here (domain_terminated: 5.3 calls that hook
 * where no OCaml code may run, so Gc.Memprof.stop cannot be called there).
 * Counted in sampling_domains until released.  Under orphans_lock.
 */
static value orphans[MAX_DOMAINS];
static atomic_int n_orphans;
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;
static caml_timing_hook prev_terminated;
static atomic_int terminated_hook_set;
#endif

/*
 * Once, at the first safe point: the frametable, the closures, the roots.
 * 5.x: domains reach it in parallel, and one that waited here could hold
 * up a collection the maker needs (every domain takes part): the others
 * do not wait, they act at a later safe point.  1 when made, else 0.
 */
static atomic_int made; /* 0, 1 being made, 2 made */

static int closures_make(void)
{
	CAMLparam0();
	CAMLlocal2(t, c);
	int none = 0;

	if (atomic_load(&made) == 2)
		CAMLreturnT(int, 1);
	if (!atomic_compare_exchange_strong(&made, &none, 1))
		CAMLreturnT(int, 0);
	frametable.count = 1;
	frametable.retaddr = (uintnat)attach_closure_return;
	frametable.frame_size = 16;
	frametable.num_live = 0;
	caml_register_frametable((void *)&frametable);
	t = caml_alloc_small(5, 0);
	for (int i = 0; i < 5; i++)
		Field(t, i) = Val_unit;
	for (int i = 0; i < 5; i++) {
		/* The closure first: its allocation may move t. */
		c = closure(i);
		caml_modify(&Field(t, i), c);
	}
	tracker = t;
	caml_register_generational_global_root(&tracker);
	control = closure(CB_CONTROL);
	caml_register_generational_global_root(&control);
#if OCAML5
	for (int i = 0; i < MAX_DOMAINS; i++) {
		profiles[i] = orphans[i] = Val_unit;
		caml_register_generational_global_root(&profiles[i]);
		caml_register_generational_global_root(&orphans[i]);
	}
#endif
	atomic_store(&made, 2);
	CAMLreturnT(int, 1);
}

/* ---- Starting and stopping, at a safe point ---- */

static double requested_rate(void)
{
	double want = *(volatile double *)&memprof_probe_control.requested_rate;

	if (isnan(want) || want <= 0 || want > 1)
		want = MEMPROF_PROBE_DEFAULT_RATE;
	return want;
}

#if OCAML5
/* runtime/memprof.c: a profile's field 0 is its status, 0 while sampling,
 * 1 stopped, 2 discarded. */
#define PROFILE_SAMPLING 0
#define PROFILE_STOPPED 1
static int profile_status(value p)
{
	return (int)Long_val(atomic_load((_Atomic value *)&Field(p, 0)));
}

/* caml_domain_terminated_hook, on the exiting domain: its profile, if it
 * started one, becomes an orphan. */
static void domain_terminated(void)
{
	intnat d = Caml_state->id;

	if (d >= 0 && d < MAX_DOMAINS && atomic_load(&made) == 2 && profiles[d] != Val_unit) {
		pthread_mutex_lock(&orphans_lock);
		for (int k = 0; k < MAX_DOMAINS; k++)
			if (orphans[k] == Val_unit) {
				caml_modify_generational_global_root(&orphans[k], profiles[d]);
				caml_modify_generational_global_root(&profiles[d], Val_unit);
				atomic_fetch_add(&n_orphans, 1);
				break;
			}
		pthread_mutex_unlock(&orphans_lock);
	}
	if (prev_terminated)
		prev_terminated();
}

/* Installed with the first profile, put back once none is left. */
static void terminated_hook_install(void)
{
	if (!atomic_exchange(&terminated_hook_set, 1))
		prev_terminated = atomic_exchange(&caml_domain_terminated_hook, domain_terminated);
}

static void terminated_hook_remove(void)
{
	if (atomic_exchange(&terminated_hook_set, 0))
		atomic_store(&caml_domain_terminated_hook, prev_terminated);
}

/* At a safe point while detached: stop and discard the orphans.  Stopping
 * is what Gc.Memprof.stop does to a profile, setting its status, the one
 * field the domains sharing it read (runtime/memprof.c). */
static void orphans_release(void)
{
	pthread_mutex_lock(&orphans_lock);
	for (int k = 0; k < MAX_DOMAINS; k++) {
		if (orphans[k] == Val_unit)
			continue;
		if (profile_status(orphans[k]) == PROFILE_SAMPLING)
			Store_field(orphans[k], 0, Val_long(PROFILE_STOPPED));
		if (profile_status(orphans[k]) == PROFILE_STOPPED)
			caml_memprof_discard(orphans[k]);
		caml_modify_generational_global_root(&orphans[k], Val_unit);
		atomic_fetch_sub(&n_orphans, 1);
		if (atomic_fetch_sub(&sampling_domains, 1) == 1)
			atomic_store(&tracer_seen, 0);
	}
	pthread_mutex_unlock(&orphans_lock);
	publish();
}

int attach_act(void)
{
	intnat d = Caml_state->id;
	int up = attach_tracer_up();
	value r;

	if (d < 0 || d >= MAX_DOMAINS)
		return 0;
	if (!closures_make())
		return -1;
	if (up && profiles[d] == Val_unit) {
		if (!attach_sampling())
			rate = requested_rate();
		r = caml_callback_exn(control, Val_int(OP_START));
		/* An exception: this domain samples already, for its parent's
		 * profile (ours) or for the program's own. */
		if (!Is_exception_result(r)) {
			caml_modify_generational_global_root(&profiles[d], r);
			terminated_hook_install();
			memprof_gc_hooks_install(events_flush);
			atomic_fetch_add(&sampling_domains, 1);
			atomic_store(&program_owns, 0);
			publish();
		} else if (!attach_sampling()) {
			atomic_store(&program_owns, 1);
			publish();
		}
	}
	if (!up && profiles[d] != Val_unit) {
		/* Read from its root after the callback, which may collect. */
		if (profile_status(profiles[d]) == PROFILE_SAMPLING)
			caml_callback_exn(control, Val_int(OP_STOP));
		if (profile_status(profiles[d]) == PROFILE_STOPPED)
			caml_memprof_discard(profiles[d]);
		caml_modify_generational_global_root(&profiles[d], Val_unit);
		if (atomic_fetch_sub(&sampling_domains, 1) == 1)
			atomic_store(&tracer_seen, 0);
		publish();
	}
	if (!up && atomic_load(&n_orphans))
		orphans_release();
	if (!up && !attach_sampling()) {
		terminated_hook_remove();
		memprof_gc_hooks_remove();
	}
	return profiles[d] != Val_unit;
}
#else
/* 4.x: one profile per process, and the runtime lock. */
static int started;

int attach_act(void)
{
	int up = attach_tracer_up();
	value r;

	if (!closures_make())
		return -1;
	if (up && !started) {
		rate = requested_rate();
		r = caml_callback_exn(control, Val_int(OP_START));
		/* An exception: the program runs its own profile. */
		if (!Is_exception_result(r)) {
			started = 1;
			memprof_gc_hooks_install(events_flush);
			atomic_store(&sampling_domains, 1);
			atomic_store(&program_owns, 0);
		} else {
			atomic_store(&program_owns, 1);
		}
		publish();
	} else if (!up && started) {
		/* 4.x's stop forgets every tracked block. */
		caml_callback_exn(control, Val_int(OP_STOP));
		started = 0;
		memprof_gc_hooks_remove();
		atomic_store(&sampling_domains, 0);
		atomic_store(&tracer_seen, 0);
		publish();
	}
	return started;
}
#endif

/* ---- The helper thread ---- */

static void *helper_main(void *arg)
{
	int last = 0;

	(void)arg;
	/* Its wake-ups are not the program's CPU time (memprof_probe_abi.h). */
	pthread_setname_np(pthread_self(), MEMPROF_PROBE_THREAD_PREFIX "ocaml");
	for (;;) {
		struct timespec pause = {0, ATTACH_POLL_MS * 1000000L};
		int up;

		nanosleep(&pause, NULL);
		probe_events_service(&events_queue, ATTACH_POLL_MS * 1000000ull, events_flush);
		up = attach_tracer_up();
		/* Asked again until every domain it reached acted on it. */
		if (up != last || !safepoint_served()) {
			last = up;
			safepoint_request(up);
		} else if (!up && !attach_sampling()) {
			/* Not before: a domain blocked through the detach acts
			 * once it wakes, through the hook (safepoint5.c). */
			safepoint_idle();
		}
	}
	return NULL;
}

static void fork_child(void)
{
	/* The child has no helper thread: it neither samples nor is asked to.
	 * Its sites stay disarmed if it was forked while traced. */
	pthread_mutex_init(&events_lock, NULL);
	events_queue.n = 0;
	int any_up = PROBE_SEMAPHORE_UP(memprof_sample_semaphore) ||
		     PROBE_SEMAPHORE_UP(memprof_events_semaphore) ||
		     PROBE_SEMAPHORE_UP(memprof_gc_semaphore);

	probe_sites_fork_child(any_up);
	memprof_gc_fork_child(any_up);
}

/*
 * Run by dlopen, in the thread the injector borrowed (any thread, all its
 * asynchronous signals blocked): no OCaml runtime call here, only the
 * helper thread's start.
 */
__attribute__((constructor)) static void attach_init(void)
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
	pthread_create(&t, &attr, helper_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	pthread_atfork(NULL, NULL, fork_child);
}
