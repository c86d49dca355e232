/* memprof_probe (OCaml host): the stack entries of a Gc.Memprof callstack. */
#ifndef MEMPROF_PROBE_CALLSTACK_H
#define MEMPROF_PROBE_CALLSTACK_H

#include <stddef.h>
#include <stdint.h>

#include <caml/mlvalues.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"

/*
 * The stack entries of callstack cs (a Gc.Memprof callstack value),
 * innermost first, at most max into out; their number: tagged debuginfos
 * (MEMPROF_PROBE_STACK_OCAML) for frames compiled with -g, else return
 * addresses.  Slots without either are left out.  Allocates nothing;
 * domains may call it in parallel (5.x); 4.13 calls it with the runtime
 * lock held.
 */
__attribute__((visibility("hidden"))) size_t memprof_callstack_pcs(value cs, uint64_t *out,
								   size_t max);

/* Entries of a sample's stack: at most MEMPROF_PROBE_MAX_STACK, one more
 * for the callstack's extra frame that tells a cut stack. */
#define MEMPROF_CALLSTACK_BUF (MEMPROF_PROBE_MAX_STACK + 1)
/*
 * The stack a memprof:sample hands over for callstack cs (Gc.Memprof asked
 * for MEMPROF_CALLSTACK_BUF frames): its entries into out, their number;
 * MEMPROF_PROBE_F_STACK_CUT added to *kind_source when frames were left
 * out.  On OCaml 5 the last entry names the allocating domain (the
 * callback runs on it: MEMPROF_PROBE_STACK_DOMAIN) by its unique id, that
 * of Domain.self (), never its slot, which later domains reuse.
 */
__attribute__((visibility("hidden"))) size_t
memprof_callstack_entries(value cs, uint64_t out[MEMPROF_CALLSTACK_BUF], uint64_t *kind_source);

#endif
