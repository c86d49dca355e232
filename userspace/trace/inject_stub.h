/*
 * The injector's call stub: position-independent x86-64 code, with its
 * data after it, that the injector copies into the target to run dlopen on
 * one thread and restore that thread by itself (inject_stub.c says how).
 */
#ifndef MEMPROF_INJECT_STUB_H
#define MEMPROF_INJECT_STUB_H

#include <stdint.h>

#define STUB_STR2(x) #x
#define STUB_STR(x) STUB_STR2(x)

/* The marker's system call number (rt_sigtimedwait on x86-64). */
#define STUB_MARKER_SYSCALL 128
/* How long the marker waits for the injector to read it (it cuts the wait
 * short); with no injector, the thread loses this much once. */
#define STUB_MARKER_WAIT_S 2
/* What the injector makes the marker's call return: no system call
 * returns it (rt_sigtimedwait gives a signal number or -errno). */
#define STUB_ACK 0x41434b
/* The marker's first use: the memfd is made, waiting for the library's
 * bytes (r9: its descriptor, r8: the stub's region, where the injector
 * writes the path to open, /proc/thread-self/fd/N, at STUB_REGION_PATH). */
#define STUB_MARKER_MEMFD 1
/* Its second: the result (r9: dlopen's handle, r8: dlerror's string, or
 * with handle 0, -errno of the stub's mmap or memfd_create, or
 * STUB_ERR_NOT_SEALED). */
#define STUB_MARKER_RESULT 2
/* The memfd was not sealed after the first marker: the injector did not
 * finish delivering the bytes, and the stub did not call dlopen. */
#define STUB_ERR_NOT_SEALED 1
/* Where the path to open goes in the stub's region (see inject_stub.c). */
#define STUB_REGION_PATH 64
/* The memfd's name (and, written by the injector, the path to open),
 * NUL-terminated, fits in this; memfd names are shorter still. */
#define STUB_PATH_BYTES 512
#define STUB_NAME_MAX 249
/* The stack the stub maps for dlopen (touched pages only cost). */
#define STUB_STACK_BYTES (1u << 20)
/* Bytes of the thread's own stack the stub uses below its stack pointer. */
#define STUB_THREAD_STACK_BYTES (128 + 17 * 8 + 8 + 32)

/* The stub's data, at memprof_inject_stub_data: written by the injector. */
struct inject_stub_data {
	uint64_t resume;	    /* where the thread goes on (a restarted call: its syscall) */
	uint64_t dlopen;	    /* the target's dlopen */
	uint64_t dlerror;	    /* the target's dlerror */
	uint64_t block_mask;	    /* signals blocked during the call (bit n-1: signal n) */
	uint64_t stack_len;	    /* STUB_STACK_BYTES */
	char name[STUB_PATH_BYTES]; /* the memfd's name (the library's file name) */
};

extern const unsigned char memprof_inject_stub[], memprof_inject_stub_data[],
    memprof_inject_stub_end[], memprof_inject_stub_marker_end[];

/* The marker's PC, from the stub's start (what /proc shows while it waits). */
static inline uint64_t inject_stub_marker_offset(void)
{
	return (uint64_t)(memprof_inject_stub_marker_end - memprof_inject_stub);
}

/* The whole stub (code, then data) and the offset of its data. */
static inline uint64_t inject_stub_size(void)
{
	return (uint64_t)(memprof_inject_stub_end - memprof_inject_stub);
}

static inline uint64_t inject_stub_data_offset(void)
{
	return (uint64_t)(memprof_inject_stub_data - memprof_inject_stub);
}

#endif
