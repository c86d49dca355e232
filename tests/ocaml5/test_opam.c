/* The OCaml 5.3 run of tests/ocaml/test_opam.c (see runtime-probes/hosts/ocaml/build.mk). */
#include "../ocaml/test_opam.c"
