/*
 * memprof_probe (OCaml host): which runtime the package is compiled
 * against, from its caml/version.h.  Included first, with CAML_INTERNALS.
 *
 *   OCAML5                     the multicore runtime (5.x): domains, the
 *                              5.x runtime's hooks and headers
 *   MEMPROF_OCAML_NO_MEMPROF   5.0, 5.1 and 5.2: their Gc.Memprof keeps the
 *                              4.x interface but its primitives fail (it
 *                              returned in 5.3).  The package builds there
 *                              (memprof_probe.ml and
 *                              memprof_probe_unavailable.c alone; the other
 *                              C files compile to nothing) so that a
 *                              program linked with it builds and runs;
 *                              install () does nothing, and the program has
 *                              no probes, so the loader's attach refuses it
 *                              with the version's reason.
 */
#ifndef MEMPROF_PROBE_VERSION_H
#define MEMPROF_PROBE_VERSION_H

/* No short names from caml/compatibility.h (4.14 deprecates them). */
#ifndef CAML_NAME_SPACE
#define CAML_NAME_SPACE
#endif
#include <caml/version.h>

#if OCAML_VERSION_MAJOR >= 5
#define OCAML5 1
#else
#define OCAML5 0
#endif

#if OCAML_VERSION_MAJOR == 5 && OCAML_VERSION_MINOR < 3
#define MEMPROF_OCAML_NO_MEMPROF 1
#else
#define MEMPROF_OCAML_NO_MEMPROF 0
#endif

#endif
