/*
 * OCaml native symbols as OCaml names: camlWork__make_point_550 is
 * Work.make_point, camlLib__Work__fun_12 is Lib.Work.fun, and
 * camlDune__exe__Work__f_3 (an executable built by dune) is Work.f.
 */
#ifndef MEMPROF_OCAML_NAMES_H
#define MEMPROF_OCAML_NAMES_H

#include <stddef.h>

/*
 * If sym is an OCaml function symbol (caml, then a capitalised compilation
 * unit), write its OCaml name to buf (cut to len) and return 1; else 0.
 */
int ocaml_name(const char *sym, char *buf, size_t len);

/*
 * dune compiles an executable's modules as units of its own wrapper,
 * Dune__exe__Work for the user's Work: the name past that prefix (unit
 * points at the unit's first character), the user's own module name.
 */
#define OCAML_DUNE_EXE_PREFIX "Dune__exe__"
const char *ocaml_skip_dune_exe(const char *unit);

#endif
