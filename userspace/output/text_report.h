/*
 * The text report: per allocation site (and per stack with verbose), the
 * estimated bytes and objects of every view, the share of the view, and a
 * 95% interval from the sample counts, largest first.
 */
#ifndef MEMPROF_TEXT_REPORT_H
#define MEMPROF_TEXT_REPORT_H

#include <stdio.h>

#include "profile.h"

/* 0, or -1 on a write or memory error. */
int text_report_write(FILE *out, const struct profile *p);

#endif
