/*
 * memprof_probe for OCaml 4.13 and 5.3: the stack entries of a Gc.Memprof
 * callstack.  Part of memprof_probe_stubs.c's library.
 *
 * A slot of a frame compiled with -g becomes its debuginfo, tagged
 * (MEMPROF_PROBE_STACK_OCAML in memprof_probe_abi.h): the runtime's own
 * record of the frame's function, file and line, and of the frames inlined
 * there, the one Printexc reads.  The innermost slot of a minor allocation
 * is that allocation's own debuginfo, so each allocation keeps its line
 * (a return address would be the function's shared call to the GC, at its
 * end).  The tracer decodes the debuginfo from the mapped file, later.  A
 * slot without debuginfo (no -g) becomes its frame's return address.
 *
 * Cost: caml_debuginfo_extract is a few loads per slot; nothing is
 * allocated and nothing is locked, so domains call it in parallel.
 */
#define CAML_INTERNALS
#include "memprof_probe_version.h"
#if !MEMPROF_OCAML_NO_MEMPROF /* to the end: memprof_probe_version.h */

#include <stdint.h>

#include <caml/backtrace_prim.h>
#include <caml/mlvalues.h>
#if OCAML5
#include <caml/domain_state.h>
#include <caml/frame_descriptors.h>
#else
#include <caml/stack.h>
#endif

#include <linux/types.h>

#include "memprof_probe_abi.h"
#include "memprof_probe_callstack.h"

/* The debuginfo layout of the compiler this library is built with. */
#if OCAML_VERSION_MAJOR > 5 || (OCAML_VERSION_MAJOR == 5 && OCAML_VERSION_MINOR >= 2)
#define DBG_FORMAT MEMPROF_PROBE_OCAML_DBG_V2
#else
#define DBG_FORMAT MEMPROF_PROBE_OCAML_DBG_V1
#endif

/* Where the sources of stdlib frames are (build.mk passes the compiler's). */
#ifndef MEMPROF_OCAML_STDLIB_DIR
#define MEMPROF_OCAML_STDLIB_DIR ""
#endif
__attribute__((used, visibility("default"))) const char memprof_probe_ocaml_stdlib[] =
    MEMPROF_OCAML_STDLIB_DIR;

size_t memprof_callstack_pcs(value cs, uint64_t *out, size_t max)
{
	size_t n = Wosize_val(cs), k = 0;

	for (size_t i = 0; i < n && k < max; i++) {
		backtrace_slot slot = Backtrace_slot_val(Field(cs, i));
		debuginfo dbg = slot ? caml_debuginfo_extract(slot) : NULL;

		if (dbg)
			out[k++] = MEMPROF_PROBE_STACK_OCAML_DBG(DBG_FORMAT, (uintptr_t)dbg);
		else if (slot && !((uintptr_t)slot & 2)) /* a frame descriptor */
			out[k++] = ((frame_descr *)slot)->retaddr;
	}
	return k;
}

size_t memprof_callstack_entries(value cs, uint64_t out[MEMPROF_CALLSTACK_BUF],
				 uint64_t *kind_source)
{
	size_t sl = memprof_callstack_pcs(cs, out, MEMPROF_CALLSTACK_BUF);

	if (sl > MEMPROF_PROBE_MAX_STACK) {
		sl = MEMPROF_PROBE_MAX_STACK;
		*kind_source |= MEMPROF_PROBE_F_STACK_CUT;
	}
#if OCAML5
	if (sl == MEMPROF_PROBE_MAX_STACK) {
		sl--;
		*kind_source |= MEMPROF_PROBE_F_STACK_CUT;
	}
	out[sl++] = MEMPROF_PROBE_STACK_DOMAIN((uint64_t)Caml_state->unique_id);
#endif
	return sl;
}
#endif /* !MEMPROF_OCAML_NO_MEMPROF */
