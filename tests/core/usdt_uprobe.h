/*
 * Attach a real uprobe (perf_event_open on the kernel's uprobe PMU, with
 * the USDT semaphore's ref_ctr_offset) to one memprof probe of the running
 * executable, as a tracer does, and count its hits.  No BPF program: the
 * kernel raises the semaphore and counts; that is all these tests need.
 */
#ifndef USDT_UPROBE_H
#define USDT_UPROBE_H

#include <stdint.h>

/* Open a counting uprobe on memprof:<name> in /proc/self/exe.  fd or -1. */
int usdt_uprobe_open(const char *name);
/* Hits so far. */
uint64_t usdt_uprobe_count(int fd);

#endif
