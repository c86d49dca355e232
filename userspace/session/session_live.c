/*
 * The live view read while attached (session_internal.h): every process's
 * live aggregates, straight from the mmapped arrays, for the timeline
 * (timeline.h) and the peak view (peak.h).
 */
#include "session_internal.h"

/* The live arrays of every process; 0 when there is nothing to read. */
static int live_sources(const struct session *s, struct peak_source *src, uint64_t *gcs)
{
	*gcs = 0;
	/* An exited process keeps its last aggregates (the mmapped arrays stay). */
	if (s->detached || !s->n)
		return 0;
	int any = 0;

	for (int i = 0; i < s->n; i++) {
		const struct tracer *tr = &s->procs[i].tr;

		/* A process whose attach failed (or not done yet) has no arrays. */
		src[i] = (struct peak_source){0};
		if (!s->procs[i].opened || !tr->skel || !tr->aggs)
			continue;
		src[i] = (struct peak_source){.aggs = tr->aggs, .n_stacks = tracer_n_stacks(tr)};
		*gcs += tracer_counter(tr, MEMPROF_CNT_GCS);
		any = 1;
	}
	return any;
}

static void offer(struct session *s, struct peak *pk, int64_t now, const struct peak_source *src,
		  int64_t total)
{
	if (peak_offer(pk, now, src, (size_t)s->n, total) < 0 && !s->peak_noted) {
		s->peak_noted = 1;
		session_note(s, "note: out of memory: the peak view keeps the highest total "
				"read before");
	}
}

void session_read_live(struct session *s, int force)
{
	struct timeline_source tsrc[SESSION_MAX_PIDS];
	struct peak_source src[SESSION_MAX_PIDS];
	int64_t now = session_mono_ns(), total;
	uint64_t gcs;

	if (!live_sources(s, src, &gcs))
		return;
	for (int i = 0; i < s->n; i++)
		tsrc[i] =
		    (struct timeline_source){.aggs = src[i].aggs, .n_stacks = src[i].n_stacks};
	if (s->tl.pts && timeline_sample_parts(&s->tl, now, tsrc, (size_t)s->n, gcs, force) < 0 &&
	    !s->tl_noted) {
		s->tl_noted = 1;
		session_note(s, "note: out of memory: the timeline stops here");
	}
	/* One sum serves both peaks; each copies only a new maximum. */
	total = peak_live_total(src, (size_t)s->n);
	offer(s, &s->peak, now, src, total);
	if (s->o->every)
		offer(s, &s->snap_peak, now, src, total);
}

void session_read_snap_peak(struct session *s)
{
	struct peak_source src[SESSION_MAX_PIDS];
	uint64_t gcs;

	if (live_sources(s, src, &gcs))
		offer(s, &s->snap_peak, session_mono_ns(), src, peak_live_total(src, (size_t)s->n));
}
