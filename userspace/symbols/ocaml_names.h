/*
 * OCaml native symbols as OCaml names: camlWork__make_point_550 is
 * Work.make_point, camlLib__Work__fun_12 is Lib.Work.fun.
 */
#ifndef MEMPROF_OCAML_NAMES_H
#define MEMPROF_OCAML_NAMES_H

#include <stddef.h>

/*
 * If sym is an OCaml function symbol (caml, then a capitalised compilation
 * unit), write its OCaml name to buf (cut to len) and return 1; else 0.
 */
int ocaml_name(const char *sym, char *buf, size_t len);

#endif
