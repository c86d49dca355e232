/*
 * OCaml debuginfos (memprof_probe_abi.h, MEMPROF_PROBE_STACK_OCAML): the
 * runtime's records of a frame's function, file and line, decoded from the
 * file that maps them, as Printexc reads them in the process.
 */
#ifndef MEMPROF_OCAML_DEBUGINFO_H
#define MEMPROF_OCAML_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

/* Locations of one stack entry at most (inlined frames, then the frame). */
#define OCAML_DBG_MAX_CHAIN 16
#define OCAML_DBG_NAME_MAX 256

struct ocaml_dbg_loc {
	char defname[OCAML_DBG_NAME_MAX]; /* "Work.make_point", "Stdlib__List.map" */
	char file[OCAML_DBG_NAME_MAX];	  /* as compiled: "work.ml", "list.ml" */
	int line;
	int inlined; /* inlined into the next location of the chain */
};

/* Reads up to len bytes at user address addr into buf: the count, or -1. */
typedef long (*ocaml_dbg_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * The chain of debuginfo addr of layout fmt (MEMPROF_PROBE_OCAML_DBG_*),
 * innermost first, at most max locations into out: their number, or -1
 * (unknown layout, unreadable or malformed).
 */
int ocaml_dbg_decode(unsigned fmt, uint64_t addr, ocaml_dbg_read_fn read, void *ctx,
		     struct ocaml_dbg_loc *out, int max);

/*
 * The frame name the loader prints for defname, as ocaml_names.c names
 * symbols: the unit's modules joined by '.' (Stdlib__List.map is
 * Stdlib.List.map), and a module initialiser (defname the unit alone)
 * Unit.entry.  Into buf (cut to len).
 */
void ocaml_dbg_name(const char *defname, char *buf, size_t len);

/* Whether defname is a function of OCaml's standard library. */
int ocaml_dbg_is_stdlib(const char *defname);

#endif
