/*
 * memprof:gc for both OCaml hosts (the linked package and the injectable
 * host, runtime-probes/hosts/ocaml-attach): the probe fires from the
 * runtime's timing hooks, chained to the hooks set before.  Minor
 * collections begin and end; on 4.x the major slices too.  5.x calls its
 * major slice hooks for every opportunistic slice as well, which a domain
 * runs each time it polls while it waits at a barrier: 740,000 memprof:gc
 * hits (uprobe traps) in 3.5 s of four domains on two cores, about a
 * tenth of the program's CPU time, for a count the timeline shows per
 * reading; so 5.x fires at minor collections only.  A hook costs one
 * indirect call and one load per event while no tracer is attached.
 *
 * Each host defines memprof_gc_semaphore (the probe's USDT semaphore).
 */
#ifndef MEMPROF_PROBE_GC_H
#define MEMPROF_PROBE_GC_H

/*
 * Set the hooks (once: a second call does nothing while they are set).
 * on_minor_end, if not NULL, runs at the end of each minor collection
 * before the probe fires (the host's events flush: the promotions and
 * deaths of the collection before, whose callbacks ran since).  4.x: call
 * with the runtime lock held.
 */
__attribute__((visibility("hidden"))) void memprof_gc_hooks_install(void (*on_minor_end)(void));

/*
 * Put back the hooks install replaced, if every one is still ours.  A
 * hook set over ours since (by the program or another library, chaining
 * to ours) is not undone: ours then stays set, and fires nothing once the
 * semaphore is down.  4.x: call with the runtime lock held.
 */
__attribute__((visibility("hidden"))) void memprof_gc_hooks_remove(void);

/* From the host's pthread_atfork child handler, as probe_sites_fork_child. */
__attribute__((visibility("hidden"))) void memprof_gc_fork_child(int any_up);

#endif
