/* Strict command-line number parsing shared by the bundled workloads. */
#ifndef WORKLOAD_OPTIONS_H
#define WORKLOAD_OPTIONS_H

#include <stdint.h>

/*
 * Parse the value of option `name`.  On bad input (not a number, trailing
 * characters, outside [min, max]) print one line on stderr and return -1.
 */
int option_u64(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out);
int option_double(const char *name, const char *text, double min, double max, double *out);

/* Write the pid to path (through a temporary file and a rename). */
int write_ready_file(const char *path);

#endif
