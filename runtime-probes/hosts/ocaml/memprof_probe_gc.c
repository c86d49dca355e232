/* memprof:gc from the runtime's timing hooks (memprof_probe_gc.h). */
#define CAML_INTERNALS
#include "memprof_probe_version.h"
#if !MEMPROF_OCAML_NO_MEMPROF /* to the end: memprof_probe_version.h */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <caml/misc.h>
#include <caml/mlvalues.h>
#if OCAML5
#include <caml/domain_state.h>
#include <caml/shared_heap.h>
#endif

#include <linux/types.h>

#include "memprof_probe_abi.h"
#include "memprof_probe_gc.h"
#include "memprof_probe_site.h"

extern unsigned short memprof_gc_semaphore;

static caml_timing_hook prev_minor_begin, prev_minor_end;
#if !OCAML5
static caml_timing_hook prev_major_begin, prev_major_end;
#endif
static void (*minor_end_first)(void);
/* Whether our hooks are set (install and remove run one at a time: under
 * the runtime lock on 4.x, at a domain's safe point or at install () on 5.x). */
static atomic_int hooks_set;

static void fire_gc(uint64_t phase)
{
	uint64_t minor, major;

	if (!PROBE_SEMAPHORE_UP(memprof_gc_semaphore) || !probe_sites_armed())
		return;
	minor =
	    (uint64_t)((char *)Caml_state_field(young_end) - (char *)Caml_state_field(young_ptr));
#if OCAML5
	major = (uint64_t)caml_heap_size(Caml_state_field(shared_heap));
#else
	major = (uint64_t)Caml_state_field(stat_heap_wsz) * sizeof(value);
#endif
	DTRACE_PROBE3(memprof, gc, phase, minor, major);
}

static void gc_minor_begin(void)
{
	fire_gc(MEMPROF_PROBE_GC_MINOR_START);
	if (prev_minor_begin)
		prev_minor_begin();
}

static void gc_minor_end(void)
{
	if (minor_end_first)
		minor_end_first();
	fire_gc(MEMPROF_PROBE_GC_MINOR_END);
	if (prev_minor_end)
		prev_minor_end();
}

void memprof_gc_fork_child(int any_up)
{
	probe_sites_fork_child(any_up);
}

#if OCAML5
void memprof_gc_hooks_install(void (*on_minor_end)(void))
{
	if (atomic_load(&hooks_set))
		return;
	minor_end_first = on_minor_end;
	prev_minor_begin = atomic_exchange(&caml_minor_gc_begin_hook, gc_minor_begin);
	prev_minor_end = atomic_exchange(&caml_minor_gc_end_hook, gc_minor_end);
	atomic_store(&hooks_set, 1);
}

void memprof_gc_hooks_remove(void)
{
	caml_timing_hook ours_begin = gc_minor_begin, ours_end = gc_minor_end;

	if (!atomic_load(&hooks_set))
		return;
	if (atomic_load(&caml_minor_gc_begin_hook) != ours_begin ||
	    atomic_load(&caml_minor_gc_end_hook) != ours_end)
		return;
	/* One at a time: nobody else writes them between the check and here,
	 * or the hook set over ours is kept by the exchange failing. */
	if (atomic_compare_exchange_strong(&caml_minor_gc_begin_hook, &ours_begin,
					   prev_minor_begin) &&
	    atomic_compare_exchange_strong(&caml_minor_gc_end_hook, &ours_end, prev_minor_end))
		atomic_store(&hooks_set, 0);
}
#else
static void gc_major_begin(void)
{
	fire_gc(MEMPROF_PROBE_GC_MAJOR_START);
	if (prev_major_begin)
		prev_major_begin();
}

static void gc_major_end(void)
{
	fire_gc(MEMPROF_PROBE_GC_MAJOR_END);
	if (prev_major_end)
		prev_major_end();
}

void memprof_gc_hooks_install(void (*on_minor_end)(void))
{
	if (atomic_load(&hooks_set))
		return;
	minor_end_first = on_minor_end;
	prev_minor_begin = caml_minor_gc_begin_hook;
	caml_minor_gc_begin_hook = gc_minor_begin;
	prev_minor_end = caml_minor_gc_end_hook;
	caml_minor_gc_end_hook = gc_minor_end;
	prev_major_begin = caml_major_slice_begin_hook;
	caml_major_slice_begin_hook = gc_major_begin;
	prev_major_end = caml_major_slice_end_hook;
	caml_major_slice_end_hook = gc_major_end;
	atomic_store(&hooks_set, 1);
}

void memprof_gc_hooks_remove(void)
{
	if (!atomic_load(&hooks_set) || caml_minor_gc_begin_hook != gc_minor_begin ||
	    caml_minor_gc_end_hook != gc_minor_end ||
	    caml_major_slice_begin_hook != gc_major_begin ||
	    caml_major_slice_end_hook != gc_major_end)
		return;
	caml_minor_gc_begin_hook = prev_minor_begin;
	caml_minor_gc_end_hook = prev_minor_end;
	caml_major_slice_begin_hook = prev_major_begin;
	caml_major_slice_end_hook = prev_major_end;
	atomic_store(&hooks_set, 0);
}
#endif
#endif /* !MEMPROF_OCAML_NO_MEMPROF */
