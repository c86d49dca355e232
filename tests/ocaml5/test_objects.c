/* The OCaml 5.3 run of tests/ocaml/test_objects.c (see runtime-probes/hosts/ocaml/build.mk). */
#include "../ocaml/test_objects.c"
