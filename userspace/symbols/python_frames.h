/*
 * Python frames (memprof_probe_abi.h, MEMPROF_PROBE_PY_FRAME_V1): the
 * records of the Python host's frame table, read from the memfd the target
 * maps (held open by the symbolizer, so after the target exited too).
 */
#ifndef MEMPROF_PYTHON_FRAMES_H
#define MEMPROF_PYTHON_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#define PY_FRAME_NAME_MAX 1100

struct py_frame_loc {
	char qualname[PY_FRAME_NAME_MAX]; /* "Worker.run", "<module>" */
	char file[PY_FRAME_NAME_MAX];	  /* co_filename: "/srv/app/main.py" */
	int line, first_line;		  /* 0 if unknown */
};

/* Reads up to len bytes at user address addr into buf: the count, or -1. */
typedef long (*py_frame_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* The record at addr: 0, or -1 (unreadable or malformed). */
int py_frame_decode(uint64_t addr, py_frame_read_fn read, void *ctx, struct py_frame_loc *out);

#endif
