/* The OCaml 5.3 run of tests/ocaml/test_lines.c (see runtime-probes/hosts/ocaml/build.mk). */
#include "../ocaml/test_lines.c"
