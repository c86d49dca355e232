/*
 * The allocation site of a stack: its innermost frame that belongs to the
 * program, not to the allocator, the C++ standard library, an allocation
 * wrapper or a library whose frames all count as the call into it (site.c
 * lists them; userspace/output/README.md, "The allocation site", gives the
 * rule), nor to the frames --skip-frames names.  The text report, the
 * lifetimes, the timeline, top and diff group by it; pprof's drop_frames
 * says the same to pprof.
 */
#ifndef MEMPROF_SITE_H
#define MEMPROF_SITE_H

#include <stddef.h>

#include "profile.h"

enum site_kind {
	SITE_PROGRAM,	/* the program's own frame */
	SITE_ALLOCATOR, /* malloc and family, operator new and delete */
	SITE_STDLIB,	/* the C++ standard library and its runtime */
	SITE_WRAPPER,	/* an allocation wrapper (xmalloc, g_malloc, PyMem_*) */
	SITE_LIBRARY,	/* a library whose every frame is the call into it (SQLite) */
	SITE_SKIPPED,	/* a frame --skip-frames names */
};

/* The kind of a frame by its name alone. */
enum site_kind site_frame_kind(const char *name);
/* Not the program's (site_frame_kind() != SITE_PROGRAM). */
int site_allocator_frame(const char *name);

/*
 * The qualified name in a demangled name: past a function template's
 * return type ("double& std::vector<...>::emplace_back<double>(double&&)"
 * gives "std::vector<...>::emplace_back<double>(double&&)").  Within name.
 */
const char *site_qualified_name(const char *name);

/* A frame as the rule sees it. */
struct site_frame {
	const char *name;
	int module; /* its module's number; -1 unknown */
	int named;  /* 0: nothing names it ("module+0xOFF") */
};
/*
 * The site among f[0..n), innermost first: the first program frame, where
 * an unnamed frame next to a skipped named frame of its own module (a
 * static helper the wrapper calls, or one that calls the wrapper) is the
 * wrapper's.  0 when every frame is skipped.
 */
size_t site_index(const struct site_frame *f, size_t n);

/* The site of a stack: its name, and where in the source it calls. */
struct site {
	const char *name;
	const char *file; /* NULL: no line known */
	int line;
};
struct site site_of_stack_site(const struct profile_stack *s);
/* The same, its name only. */
const char *site_of_stack(const struct profile_stack *s);
/* The same from frame names, innermost first (modules from the unnamed
 * frames' names; a named frame's module unknown). */
const char *site_of_names(const char *const *names, size_t n);
/* Order of sites: by name, then file and line. */
int site_compare(const struct site *a, const struct site *b);
/* "name (file:line)", or "name" with no line known; flags PROFILE_NAME_*. */
void site_format(const struct site *st, unsigned flags, char *buf, size_t len);

/*
 * --skip-frames: frames whose function name without its parameter list
 * matches regex whole (POSIX extended) are not the program's either.  For
 * the whole run.  0, or -1 with a message in err.
 */
int site_skip_add(const char *regex, char *err, size_t len);
void site_skip_clear(void);

/*
 * pprof's drop_frames: the lists above and the --skip-frames regexes as
 * one regular expression (RE2, matched whole against a function name
 * without its parameters).  malloc'ed; NULL when out of memory.
 */
char *site_drop_frames(void);

#endif
