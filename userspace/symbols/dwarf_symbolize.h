/*
 * Symbolization with elfutils (libdwfl/libdw): a return address becomes a
 * frame with one or more lines, innermost first (inline frames of their
 * own), each a function name (C++ demangled, OCaml as Module.function), a
 * source file and line from DWARF.  Debug information is found as the
 * debugger would: in the file itself, by build-id and .gnu_debuglink under
 * /usr/lib/debug (Debian's -dbgsym packages), in MiniDebugInfo
 * (.gnu_debugdata), and through debuginfod when DEBUGINFOD_URLS is set
 * (bounded in time, see DSYM_DEBUGINFOD_BUDGET_S).  Each address is
 * resolved once per run, cached (core/idmap.h).
 */
#ifndef MEMPROF_DWARF_SYMBOLIZE_H
#define MEMPROF_DWARF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize.h"

/* Seconds a run may spend waiting on debuginfod servers, all modules together. */
#define DSYM_DEBUGINFOD_BUDGET_S 20

struct dsym_line {
	char *function;	   /* readable name; never NULL ("module+0xOFF" if unknown) */
	char *system_name; /* the name in the binary (mangled), or NULL */
	char *file;	   /* source file, or NULL */
	int line;	   /* 0 if unknown */
	int start_line;	   /* first line of the function, 0 if unknown */
	int inlined;	   /* inlined into the function of the next line */
};

struct dsym_frame {
	uint64_t addr;		 /* runtime address looked up: the call, pc - 1 */
	int module;		 /* index in the modules, -1 if none */
	uint64_t rel;		 /* the address in the module's ELF address space */
	int named;		 /* 0 if no symbol or DWARF names it */
	int python;		 /* a Python frame (MEMPROF_PROBE_PY_FRAME_V1), not code */
	size_t n_lines;		 /* >= 1 */
	struct dsym_line *lines; /* innermost first */
};

struct dsym_module {
	char *path;		       /* as mapped */
	const char *name;	       /* basename of path */
	uint64_t start, limit, offset; /* lowest mapping of the file */
	char build_id[2 * 64 + 1];     /* hex, "" if none */
	int has_dwarf;		       /* debug information found */
};

enum dsym_flags {
	DSYM_NO_DWARF = 1, /* symbol tables only: no debug files, lines or inline frames */
};

struct dsym;

/* For the address space of sym (its current maps); NULL when out of memory. */
struct dsym *dsym_new(struct symbolizer *sym, unsigned flags);
void dsym_free(struct dsym *d);
/*
 * Drop what resolving needs (libdwfl with its decompressed debug sections,
 * the symbol tables, the files held open) and keep the frames resolved so
 * far and the modules: once a profile's stacks are symbolized, the rest of
 * the output reads only those.  dsym_frame then gives only cached frames
 * (NULL for any other address).
 */
void dsym_release_readers(struct dsym *d);

/* Whether dsym_release_readers ran: only cached frames are given since. */
int dsym_released(const struct dsym *d);
/* The frame of return address pc (cached).  NULL when out of memory, or
 * after dsym_release_readers for an address not resolved before. */
const struct dsym_frame *dsym_frame(struct dsym *d, uint64_t pc);

size_t dsym_n_modules(const struct dsym *d);
const struct dsym_module *dsym_module(const struct dsym *d, size_t i);

/* Distinct addresses resolved and lines produced so far. */
void dsym_counts(const struct dsym *d, size_t *addresses, size_t *lines);

#endif
