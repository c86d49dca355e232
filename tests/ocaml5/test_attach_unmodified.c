/* The OCaml 5.3 run of tests/ocaml/test_attach_unmodified.c. */
#include "../ocaml/test_attach_unmodified.c"
