/*
 * The text report: per allocation site (and per stack with verbose), the
 * estimated bytes and objects of every view, the share of the view, and a
 * 95% interval from the sample counts, largest first.
 */
#ifndef MEMPROF_TEXT_REPORT_H
#define MEMPROF_TEXT_REPORT_H

#include <stdio.h>

#include "profile.h"

/* Is name the allocator's own frame, or a known allocation wrapper's? */
int text_report_allocator_frame(const char *name);
/* The site of a stack: its innermost frame that is not an allocator's own
 * (nor a known wrapper's: text_report.c lists them). */
const char *text_report_site(const struct profile_stack *s);
/* The same from frame names, innermost first. */
const char *text_report_site_of(const char *const *names, size_t n);

/* 0, or -1 on a write or memory error. */
int text_report_write(FILE *out, const struct profile *p);

#endif
