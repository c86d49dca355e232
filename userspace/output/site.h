/*
 * The allocation site of a stack: its innermost frame past the allocator's
 * own frames and the known allocation wrappers of common libraries and
 * runtimes (site.c lists them), the code that asked for the memory.  The
 * text report, the lifetimes, the timeline, top and diff group by it.
 */
#ifndef MEMPROF_SITE_H
#define MEMPROF_SITE_H

#include <stddef.h>

#include "profile.h"

/* Is name the allocator's own frame, or a known allocation wrapper's? */
int site_allocator_frame(const char *name);
/* The site of a stack: its innermost frame that is not an allocator's own
 * (nor a known wrapper's). */
const char *site_of_stack(const struct profile_stack *s);
/* The same from frame names, innermost first. */
const char *site_of_names(const char *const *names, size_t n);

#endif
