/* OCaml native-code symbol names, as a person writes them: Module.function. */
#ifndef MEMPROF_OCAML_NAMES_H
#define MEMPROF_OCAML_NAMES_H

#include <stddef.h>

/*
 * If sym is an OCaml function symbol (camlWork__make_point_550, or the
 * camlWork$make_point_550 / camlWork.make_point_550 of newer compilers),
 * write "Work.make_point" to out (len bytes) and return 1; else return 0.
 * Runtime functions (caml_alloc_shr: lower case after "caml") are not
 * translated.
 */
int ocaml_name(const char *sym, char *out, size_t len);

#endif
