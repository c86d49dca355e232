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

/*
 * Read the live view of every process (session_live.c): a timeline point
 * if one is due (or force), and a reading for the peaks.  Called as
 * sampling starts, at every poll and as it stops.
 */
void session_read_live(struct session *s, int force);
/* A reading for the --every snapshots' peak alone (the start of an interval). */
void session_read_snap_peak(struct session *s);

/* Statuses of session_scan_or_inject beyond target_scan's. */
enum {
	TARGET_INJECT_FAILED = 100,
	TARGET_INJECT_DENIED,
	TARGET_OCAML_REFUSED,
	TARGET_PYTHON_REFUSED
};

/*
 * Find p's probes; a process without them gets a host loaded into it (the
 * malloc host, or the OCaml or Python host its runtime needs), unless
 * --no-inject, and is scanned again (session_inject.c).  A target_status or
 * TARGET_INJECT_*, the reason in err.
 */
int session_scan_or_inject(const struct attach_opts *o, struct traced *p, char *err, size_t errlen);

/* The target took no sample: say why, in one note (session_notes.c). */
void session_note_empty(const struct session *s, const struct traced *p, double seconds);

#endif
