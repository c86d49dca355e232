/*
 * The JSON output (--format json, .json): the whole profile in one
 * document, every view (peak included), every stack with its frames
 * (function, file, line), the rate, the 95% intervals and the lifetimes.
 * The schema is documented in userspace/output/README.md ("JSON").
 */
#ifndef MEMPROF_JSON_H
#define MEMPROF_JSON_H

#include <stdio.h>

#include "profile.h"

/* The "version" of the schema; raised when a field changes meaning or goes. */
#define JSON_SCHEMA_VERSION 1

/* 0, or -1 on a write or memory error. */
int json_write(FILE *out, const struct profile *p);

#endif
