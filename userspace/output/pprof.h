/* pprof output: a gzipped profile.proto with every view as sample types. */
#ifndef MEMPROF_PPROF_H
#define MEMPROF_PPROF_H

#include <stdio.h>

#include "profile.h"

/* 0, or -1 on a write or memory error. */
int pprof_write(FILE *out, const struct profile *p);

#endif
