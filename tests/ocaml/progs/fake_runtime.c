/*
 * A stand-in for a native OCaml program of another runtime version (one
 * that cannot be built here: 5.0 to 5.2, or a version never tested): just
 * the symbols memprof-bpf reads to recognise a native OCaml runtime
 * (caml_start_program) and Stdlib.Sys's data holding Sys.ocaml_version
 * (OCAML_VERSION_TEXT, given at build time), exported as ocamlopt's -Wl,-E
 * does.  It has no memprof probes.
 *
 *   fake-ocaml-VERSION READY
 *
 * writes its pid into READY, then waits until READY.go exists (exit 0), as
 * tests/ocaml/progs/gate.ml does; 3 after 120 s without it.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* 5.1 and later name module symbols Module.sym: quoted for the assembler. */
__asm__(".data\n"
	".globl \"camlStdlib__Sys.data_begin\"\n"
	"\"camlStdlib__Sys.data_begin\":\n"
	".quad 0\n"
	".asciz \"" OCAML_VERSION_TEXT "\"\n"
	".balign 8\n"
	".globl \"camlStdlib__Sys.data_end\"\n"
	"\"camlStdlib__Sys.data_end\":\n"
	".quad 0\n"
	".text\n");

void caml_start_program(void)
{
}

int main(int argc, char **argv)
{
	const struct timespec pause = {0, 1000000};
	char go[512];
	FILE *f;

	if (argc < 2 || !(f = fopen(argv[1], "w")) || fprintf(f, "%d\n", (int)getpid()) < 0 ||
	    fclose(f))
		return 2;
	snprintf(go, sizeof(go), "%s.go", argv[1]);
	for (int i = 0; i < 120000 && access(go, F_OK); i++)
		nanosleep(&pause, NULL);
	return access(go, F_OK) ? 3 : 0;
}
