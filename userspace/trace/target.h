/*
 * The traced process: which mapped ELF files carry memprof probes, and
 * where its memprof_probe_control block lives.
 */
#ifndef MEMPROF_TARGET_H
#define MEMPROF_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols/symbolize.h"

struct probe_file {
	char *path;		   /* the file to attach to (a map_files path once deleted) */
	unsigned probes;	   /* 1u << ELF_PROBE_* */
	uint64_t sample_semaphore; /* runtime address, 0 if the probe has none */
};

struct target {
	pid_t pid;
	struct probe_file *files;
	size_t n_files;
	uint64_t control_addr; /* runtime address, 0 if none was found */
	int ocaml_host;	       /* a probe file is the OCaml host (its stdlib symbol) */
	uint64_t py_options;   /* runtime address of the Python host's options, 0 if none */
};

enum target_status {
	TARGET_OK = 0,
	TARGET_NO_PROCESS, /* no such pid */
	TARGET_NO_ACCESS,  /* /proc/PID/maps not readable */
	TARGET_NO_PROBES,  /* no mapped ELF has a memprof:sample probe */
	TARGET_BAD_ELF,	   /* a mapped ELF is truncated or corrupt */
	TARGET_ERROR,	   /* other failure */
};

/* Scan the target's mappings; fills sym's maps.  err gets one line. */
enum target_status target_scan(pid_t pid, struct symbolizer *sym, struct target *t, char *err,
			       size_t errlen);
void target_free(struct target *t);

#endif
