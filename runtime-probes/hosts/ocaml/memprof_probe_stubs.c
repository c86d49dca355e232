/*
 * memprof_probe for OCaml 4.13 (native code): the memprof USDT probes of
 * memprof_probe_abi.h fired from the runtime's own Gc.Memprof, so that
 * `memprof-bpf attach PID` profiles an OCaml program that links this
 * library and calls Memprof_probe.install ().
 *
 * Who samples.  One Gc.Memprof profile runs at a time in 4.13.  The
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
 *
 * Noticing attach and detach.  install () starts a helper pthread (all
 * signals blocked, small stack) that reads the sample semaphore every
 * POLL_MS.  When it differs from what the OCaml side last acknowledged, the
 * thread sets a flag and asks the runtime for an asynchronous action
 * (caml_set_action_pending: the next allocation takes the slow path, as a
 * signal would make it).  The runtime then runs its pending actions on the
 * thread holding the runtime lock; the link wraps caml_final_do_calls_exn,
 * the last of them (where finalisers run, so OCaml code may run there),
 * and the wrapper calls the OCaml poll, which starts or stops Gc.Memprof.
 * No signal is used.  So attach is noticed within POLL_MS of the loader
 * raising the semaphore, or at the program's next allocation if it is idle.
 *
 * Stacks.  A sample's callstack holds frame descriptors (their retaddr is
 * the return address) and, with -g, a debuginfo pointer in the innermost
 * slot of a minor allocation; a table built once from the frame
 * descriptors maps those back to their frame's return address.
 */
#define CAML_INTERNALS
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
#include <caml/mlvalues.h>
#include <caml/signals.h>
#include <caml/stack.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"
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

/* Written with the runtime lock held. */
static enum owner owner = OWNER_IDLE;
static double owner_rate;
static uint64_t next_id = 1;
/* Blocks sampled since the tracer was last seen attached have id >= first_id. */
static uint64_t first_id = 1;
static int tracer_seen;

/* Shared with the helper thread. */
static atomic_int installed;
static atomic_int helper_running;
static atomic_int acked = 0; /* what the OCaml side last acted on; -1: act again */
static atomic_int poll_requested;
static atomic_int in_poll;

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

static void publish(void)
{
	uint32_t flags = 0;
	double rate = 0;

	if (owner == OWNER_PROGRAM)
		flags = MEMPROF_PROBE_F_IN_PROCESS;
	else if (owner == OWNER_TRACER)
		flags = MEMPROF_PROBE_F_TRACER;
	if (owner != OWNER_IDLE)
		rate = owner_rate;
	__atomic_store(&memprof_probe_control.active_rate, &rate, __ATOMIC_RELAXED);
	__atomic_store_n(&memprof_probe_control.flags, flags, __ATOMIC_RELEASE);
}

/* ---- Return addresses of a Gc.Memprof callstack ---- */

struct dbg_ra {
	uintptr_t dbg, ra;
};

static struct dbg_ra *dbg_map;
static size_t dbg_len;
static frame_descr **dbg_map_table; /* caml_frame_descriptors the map was built from */

static int dbg_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct dbg_ra *)a)->dbg, y = ((const struct dbg_ra *)b)->dbg;

	return x < y ? -1 : x > y;
}

static int dbg_add(size_t *cap, uintptr_t dbg, uintptr_t ra)
{
	if (dbg_len == *cap) {
		size_t ncap = *cap ? 2 * *cap : 1024;
		struct dbg_ra *m = realloc(dbg_map, ncap * sizeof(*m));

		if (!m)
			return -1;
		dbg_map = m;
		*cap = ncap;
	}
	dbg_map[dbg_len++] = (struct dbg_ra){dbg, ra};
	return 0;
}

/*
 * Every allocation point of a frame compiled with -g has a debuginfo
 * offset, relative to its own 32-bit slot after the allocation lengths;
 * memprof hands the innermost frame as that debuginfo.  Map each one back.
 */
static void dbg_map_build(void)
{
	size_t cap = 0;

	dbg_len = 0;
	dbg_map_table = caml_frame_descriptors;
	for (uintnat i = 0; caml_frame_descriptors && i <= caml_frame_descriptors_mask; i++) {
		frame_descr *d = caml_frame_descriptors[i];
		unsigned char *p;
		unsigned n;

		if (!d || d->frame_size == 0xffff || (d->frame_size & 3) != 3)
			continue;
		p = (unsigned char *)&d->live_ofs[d->num_live];
		n = *p;
		p += 1 + n;
		p = (unsigned char *)(((uintptr_t)p + 3) & ~(uintptr_t)3);
		for (unsigned k = 0; k < n; k++) {
			uint32_t off;

			memcpy(&off, p + 4 * k, sizeof(off));
			if (off && dbg_add(&cap, (uintptr_t)(p + 4 * k + off), d->retaddr))
				return;
		}
	}
	qsort(dbg_map, dbg_len, sizeof(*dbg_map), dbg_cmp);
}

static uintptr_t dbg_lookup(uintptr_t dbg)
{
	size_t lo = 0, hi;

	if (dbg_map_table != caml_frame_descriptors) /* first use, or frametables added */
		dbg_map_build();
	hi = dbg_len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dbg_map[mid].dbg == dbg)
			return dbg_map[mid].ra;
		if (dbg_map[mid].dbg < dbg)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static size_t callstack_pcs(value cs, uint64_t *out, size_t max)
{
	size_t n = Wosize_val(cs), k = 0;

	for (size_t i = 0; i < n && k < max; i++) {
		uintptr_t slot = (uintptr_t)Backtrace_slot_val(Field(cs, i));
		uintptr_t ra;

		if (slot & 2) /* a debuginfo: the innermost frame of a -g minor allocation */
			ra = dbg_lookup(slot - 2);
		else
			ra = slot ? ((frame_descr *)slot)->retaddr : 0;
		if (ra)
			out[k++] = ra;
	}
	return k;
}

/* ---- The probes ---- */

/* Fire memprof:sample for a Gc.Memprof allocation; returns its id, 0 if not traced. */
CAMLprim value memprof_probe_sample(value alloc, value kind)
{
	uint64_t stack[MEMPROF_PROBE_MAX_STACK + 1];
	uint64_t id, size, n, ks, sp, sl, inv_q16;
	double inv;

	if (!PROBE_SEMAPHORE_UP(memprof_sample_semaphore) || !probe_sites_armed())
		return Val_long(0);
	if (!tracer_seen) {
		tracer_seen = 1;
		first_id = next_id;
	}
	id = next_id++;
	n = (uint64_t)Long_val(Field(alloc, 0));
	size = (uint64_t)Long_val(Field(alloc, 1));
	ks = MEMPROF_PROBE_KIND_SOURCE(Long_val(kind), Long_val(Field(alloc, 2)));
	/* One frame more than the probe takes tells a cut stack (the profile
	 * asks Gc.Memprof for MEMPROF_PROBE_MAX_STACK + 1 frames). */
	sl = callstack_pcs(Field(alloc, 3), stack, MEMPROF_PROBE_MAX_STACK + 1);
	if (sl > MEMPROF_PROBE_MAX_STACK) {
		sl = MEMPROF_PROBE_MAX_STACK;
		ks |= MEMPROF_PROBE_F_STACK_CUT;
	}
	sp = (uint64_t)(uintptr_t)stack;
	inv = owner_rate > 0 ? round((double)(1u << MEMPROF_PROBE_RATE_SHIFT) / owner_rate) : 0;
	inv_q16 = inv >= 0x1p64 ? UINT64_MAX : (uint64_t)inv;
	DTRACE_PROBE7(memprof, sample, id, size, n, ks, sp, sl, inv_q16);
	__atomic_fetch_add(&memprof_probe_control.samples, 1, __ATOMIC_RELAXED);
	return Val_long((intnat)id);
}

static int id_traced(uint64_t id)
{
	return id && tracer_seen && id >= first_id;
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
static void (*prev_minor_gc_end_hook)(void);

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

static void events_minor_gc_end(void)
{
	events_flush();
	if (prev_minor_gc_end_hook)
		prev_minor_gc_end_hook();
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
value __real_caml_final_do_calls_exn(void);

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
	owner = OWNER_TRACER;
	owner_rate = Double_val(lv);
	publish();
	CAMLreturn(Val_unit);
}

CAMLprim value memprof_probe_stop_for_tracer(value unit)
{
	if (owner == OWNER_TRACER) {
		__real_caml_memprof_stop(unit);
		owner = OWNER_IDLE;
		publish();
	}
	return Val_unit;
}

/* The OCaml side acted on the tracer's presence `up`. */
CAMLprim value memprof_probe_ack(value vup)
{
	int up = Bool_val(vup);

	if (!up)
		tracer_seen = 0;
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
		__real_caml_memprof_stop(Val_unit);
		owner = OWNER_IDLE;
		publish();
		/* If the program's start fails, the helper asks for a poll again. */
		atomic_store(&acked, -1);
	}
	wrap = caml_named_value("memprof_probe.wrap");
	wrapped = wrap ? caml_callback(*wrap, tracker) : tracker;
	__real_caml_memprof_start(lv, szv, wrapped);
	owner = OWNER_PROGRAM;
	owner_rate = Double_val(lv);
	publish();
	CAMLreturn(Val_unit);
}

value __wrap_caml_memprof_stop(value unit)
{
	if (!atomic_load(&installed))
		return __real_caml_memprof_stop(unit);
	if (owner == OWNER_TRACER) /* what the program would see without the adapter */
		caml_failwith("Gc.Memprof.stop: not started.");
	if (owner == OWNER_PROGRAM) {
		__real_caml_memprof_stop(unit);
		owner = OWNER_IDLE;
		publish();
		atomic_store(&acked, -1); /* the tracer may want sampling back */
		return Val_unit;
	}
	return __real_caml_memprof_stop(unit);
}

/* ---- Noticing attach and detach ---- */

static void *helper_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec pause = {0, POLL_MS * 1000000L};
		int up;

		nanosleep(&pause, NULL);
		if (probe_events_stale(&events_queue, POLL_MS * 1000000ull))
			events_flush();
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
	probe_sites_fork_child(any_semaphore_up());
}

CAMLprim value memprof_probe_install(value unit)
{
	(void)unit;
	if (atomic_exchange(&installed, 1))
		return Val_unit;
	pthread_atfork(NULL, NULL, fork_child);
	prev_minor_gc_end_hook = caml_minor_gc_end_hook;
	caml_minor_gc_end_hook = events_minor_gc_end;
	helper_start();
	return Val_unit;
}

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
