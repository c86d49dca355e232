/* tests/ocaml/ocaml_util.c, for the versions tests (see runtime-probes/hosts/ocaml/build.mk). */
#include "../ocaml/ocaml_util.c"
