/*
 * memprof probes a host may fire itself.  The sample and events probes are
 * fired by the core (promotions and deaths batched, one events hit per
 * collection, epoch or full buffer); the gc probe belongs to the host's
 * collector.  Each sits behind its USDT semaphore: while no tracer is
 * attached a call costs one load and one branch.  On x86-64 the sites are
 * 5-byte nops, which a kernel with the uprobe syscall turns into a call to
 * its trampoline (memprof_probe_site.h says why and at what price).  A child
 * forked while its parent is traced does not fire them.
 */
#ifndef MEMPROF_PROBES_H
#define MEMPROF_PROBES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fire memprof:gc (phase is one of MEMPROF_PROBE_GC_* in memprof_probe_abi.h). */
void memprof_probe_gc(unsigned phase, uint64_t minor_heap_bytes, uint64_t major_heap_bytes);
/*
 * Hand the queued promote/dealloc events to the tracer now.  The core does
 * it at the end of each collection and epoch, and when events wait longer
 * than 10 ms at a poll; a host calls it before it exits.
 */
void memprof_probe_flush(void);
/*
 * What a poll does for the tracer, from a thread that need not allocate:
 * serve a flush a tracer asked for, and hand over samples and events that
 * waited longer than 10 ms.  1 while a tracer is attached, else 0.  For a
 * host's idle flusher (the malloc host's flusher.c): queues otherwise wait
 * for the next poll, which a program that stopped allocating never makes.
 */
int memprof_probe_service(void);

#ifdef __cplusplus
}
#endif

#endif
