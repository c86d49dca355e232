/* The OCaml 5.3 run of tests/ocaml/ocaml_util.c (see runtime-probes/hosts/ocaml/build.mk). */
#include "../ocaml/ocaml_util.c"
