/*
 * Which OCaml runtime a process runs, read from its executable: native
 * code or bytecode, and the version.  A native OCaml program without
 * memprof probes is told apart from a C program before anything is
 * injected: the malloc host would only see the runtime's heap chunks
 * (docs/ocaml-host.md, "Programs not linked with memprof_probe").
 *
 * Native OCaml executables are linked with -Wl,-E, so the runtime's
 * symbols and the modules' data symbols are in .dynsym and survive strip.
 * The version is Sys.ocaml_version, a string constant of the module
 * Stdlib.Sys (between its data_begin and data_end symbols), whatever the
 * file is called.
 */
#ifndef MEMPROF_OCAML_RUNTIME_H
#define MEMPROF_OCAML_RUNTIME_H

#include <sys/types.h>

enum ocaml_kind {
	OCAML_NONE = 0, /* not an OCaml runtime */
	OCAML_NATIVE,	/* ocamlopt code: caml_start_program */
	OCAML_BYTECODE, /* ocamlrun, or a -custom bytecode executable: caml_interprete */
};

struct ocaml_runtime {
	enum ocaml_kind kind;
	int major, minor, patch; /* -1 when the version was not found */
	char version[32];	 /* as Sys.ocaml_version says it, "" if not found */
};

/* Read the runtime of the ELF file at path.  0, or -1 (not readable). */
int ocaml_runtime_of_file(const char *path, struct ocaml_runtime *out);
/* The same for the executable of process pid. */
int ocaml_runtime_of_pid(pid_t pid, struct ocaml_runtime *out);

/*
 * Why the loader cannot profile a process running rt without probes, in
 * one line into why: 5.0 to 5.2 (no working Gc.Memprof), bytecode, or a
 * version never tested.  0 when rt is not OCaml, or is a native runtime the
 * injectable OCaml host supports (4.13, 4.14, 5.3).
 */
int ocaml_runtime_refusal(pid_t pid, const struct ocaml_runtime *rt, char *why, size_t len);

/*
 * The injectable OCaml host for rt (runtime-probes/hosts/ocaml-attach): the
 * file name of the library the loader injects in place of the malloc host
 * (found as the malloc host is, next to the loader), or NULL when rt is
 * not a native runtime it supports.  docs/ocaml-host.md says how a version
 * is added.
 */
const char *ocaml_runtime_attach_host(const struct ocaml_runtime *rt);

#endif
