/*
 * The injectable OCaml host (docs/ocaml-host.md, "Attaching to a program
 * never linked with memprof_probe"): what its two halves share.
 *
 * ocaml_attach.c holds what every runtime family has alike: the probes and
 * the control block, the tracker (five OCaml closures whose code is the
 * stub below, which reaches ocaml_attach_dispatch through the runtime's
 * caml_c_call), the helper thread, and the act of starting or stopping
 * Gc.Memprof at a safe point.  safepoint4.c and safepoint5.c say how the
 * call reaches the OCaml side in each runtime: a hook of the runtime that
 * its pending actions run, raised from the helper thread.
 *
 * Built once per runtime family, against that compiler's headers
 * (CAML_INTERNALS: the offsets of Caml_state's fields are that runtime's):
 * build/libmemprof-ocaml4-attach.so (4.13, 4.14) and
 * build/libmemprof-ocaml5-attach.so (5.3).  The runtime's symbols are
 * resolved when the library is loaded, from the executable's .dynsym
 * (ocamlopt links with -Wl,-E): one missing makes the dlopen fail, and
 * nothing runs.
 */
#ifndef MEMPROF_OCAML_ATTACH_H
#define MEMPROF_OCAML_ATTACH_H

#define CAML_NAME_SPACE
#define CAML_INTERNALS
#include <caml/version.h>
#if OCAML_VERSION_MAJOR >= 5
#define OCAML5 1
#else
#define OCAML5 0
#endif

#include <caml/mlvalues.h>

#define ATTACH_HIDDEN __attribute__((visibility("hidden")))

/* The helper thread reads the sample semaphore this often. */
#define ATTACH_POLL_MS 50

/* Is a tracer attached (the sample semaphore up, the sites armed)? */
ATTACH_HIDDEN int attach_tracer_up(void);

/*
 * At a safe point of the OCaml side (the runtime lock, or on 5.x the
 * domain's, held; OCaml code may run): start Gc.Memprof for the tracer if
 * one is attached and this domain does not sample for it yet, or stop and
 * discard the profile this domain started if the tracer is gone.  Returns
 * whether this domain (4.x: the program) still samples for the tracer, or
 * -1 when it could not act now (another domain is setting up the
 * tracker): the caller asks it again at a later safe point.
 */
ATTACH_HIDDEN int attach_act(void);

/* Whether any domain samples for the tracer (the control block's view). */
ATTACH_HIDDEN int attach_sampling(void);

/* Per runtime (safepoint4.c, safepoint5.c), called by the helper thread
 * alone: ask every domain to call attach_act at its next safe point
 * (installing the hook first), and take the hook back out once nothing
 * samples and no request is pending.  up: what the helper saw. */
ATTACH_HIDDEN void safepoint_request(int up);
ATTACH_HIDDEN void safepoint_idle(void);
/* Whether the last request was served by every domain it reached. */
ATTACH_HIDDEN int safepoint_served(void);

#endif
