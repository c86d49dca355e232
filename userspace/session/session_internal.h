/*
 * What the files of the session share (session.c, session_notes.c,
 * session_write.c); its users include session.h.
 */
#ifndef MEMPROF_SESSION_INTERNAL_H
#define MEMPROF_SESSION_INTERNAL_H

#include <stdint.h>
#include <time.h>

#include "session.h"

/* CLOCK_MONOTONIC in nanoseconds, the clock of bpf_ktime_get_ns. */
static inline int64_t session_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The target took no sample: say why, in one note (session_notes.c). */
void session_note_empty(const struct session *s, const struct traced *p, double seconds);

#endif
