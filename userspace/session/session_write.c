/* What a session writes (session.h): its profile, and the --every snapshots. */
#include "session_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sources_of(const struct session *s, struct output_source *src,
		       const struct memprof_stack_agg *const *aggs, const struct peak *pk)
{
	for (int i = 0; i < s->n; i++) {
		const struct traced *p = &s->procs[i];

		src[i] = (struct output_source){.pid = p->pid,
						.name = p->name,
						.stacks = p->tr.stacks,
						.frames = p->tr.frames,
						.n_frames = p->tr.n_frames,
						.aggs = aggs ? aggs[i] : p->tr.aggs,
						.n = tracer_n_stacks(&p->tr),
						.sym = p->sym};
		src[i].peak = peak_part(pk, (size_t)i, &src[i].n_peak);
	}
}

/* The tables of a traced process while its frames are resolved
 * (output_source.unmap_tables). */
static void unmap_tables(void *ctx)
{
	tracer_unmap_tables(&((struct traced *)ctx)->tr);
}

static int map_tables(void *ctx)
{
	return tracer_map_tables(&((struct traced *)ctx)->tr);
}

/* The lifetimes of a traced process, read from its tracer as the output
 * needs them (lifetime_hists_reader). */
static int read_lifetimes(void *ctx, lifetime_hist_fn each, void *arg)
{
	const struct traced *p = ctx;
	int rc = tracer_each_lifetime((struct tracer *)&p->tr, each, arg);

	if (rc)
		fprintf(stderr,
			"memprof-bpf: cannot read the lifetimes of process %d: %s "
			"(no lifetimes of blocks that died)\n",
			(int)p->pid, strerror(-rc));
	return rc;
}

static void fill_meta(const struct session *s, struct output_request *r,
		      const struct timespec *from, const struct peak *pk)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	r->dsym_flags = s->o->no_dwarf ? DSYM_NO_DWARF : 0;
	r->meta = (struct profile_meta){.pid = s->procs[0].pid,
					.rate = s->o->rate,
					.view = s->o->view,
					.verbose = s->o->verbose,
					.names = s->o->names};
	r->meta.time_ns = (int64_t)from->tv_sec * 1000000000 + from->tv_nsec;
	r->meta.duration_ns = ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec) - r->meta.time_ns;
	r->meta.poll_ns = SESSION_POLL_MS * 1000000LL;
	if (pk->total_bytes >= 0) {
		r->meta.peak_readings = pk->readings;
		r->meta.peak_t_ns = pk->t_ns;
	}
}

int session_write(struct session *s, struct output_request *r)
{
	struct output_source src[SESSION_MAX_PIDS];

	fill_meta(s, r, &s->start, &s->peak);
	sources_of(s, src, NULL, &s->peak);
	/*
	 * Lifetimes: the kernel's histograms of the blocks that died, and the
	 * blocks still in the block map, censored when sampling stopped (or
	 * when the process was seen gone, if it went first).
	 */
	for (int i = 0; i < s->n; i++) {
		const struct traced *p = &s->procs[i];
		uint64_t end = p->tr.detach_ns;

		if (p->exit_ns && (!end || p->exit_ns < end))
			end = p->exit_ns;
		src[i].life =
		    (struct lifetime_input){.read_hists = read_lifetimes,
					    .read_ctx = (void *)p,
					    .n_stacks = tracer_n_stacks(&p->tr),
					    .blocks = p->tr.blocks,
					    .n_blocks = p->tr.n_blocks,
					    .now_ns = end ? end : (uint64_t)session_mono_ns()};
		/* The session has stopped: nothing reads the tables meanwhile. */
		src[i].unmap_tables = unmap_tables;
		src[i].map_tables = map_tables;
		src[i].tables_ctx = (void *)p;
	}
	r->lifetimes_path = s->o->lifetimes_path;
	if (s->tl.pts) {
		r->timeline = &s->tl;
		r->timeline_path = s->o->timeline_path;
	}
	return output_write_sources(r, src, (size_t)s->n);
}

static const char *const format_ext[N_FORMATS] = {".folded", ".pb.gz", ".svg", ".txt", ".json"};

int session_snapshot(struct session *s, const struct timespec *from)
{
	const struct memprof_stack_agg *deltas[SESSION_MAX_PIDS];
	struct memprof_stack_agg *owned[SESSION_MAX_PIDS] = {0};
	struct output_source src[SESSION_MAX_PIDS];
	struct output_request r = {.n_paths = 1, .format = s->o->format};
	char name[64], path[PATH_MAX];
	enum output_format fmt = s->o->format == FMT_AUTO ? FMT_FOLDED : s->o->format;
	struct timespec now;
	struct tm tm;
	int code = EXIT_OK;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(name, sizeof(name), "%Y%m%dT%H%M%S", &tm);
	snprintf(path, sizeof(path), "%s/%s.%03ldZ%s", s->o->snapshot_dir, name,
		 now.tv_nsec / 1000000, format_ext[fmt]);
	/*
	 * alloc, promoted and short over the interval (the kernel's counts
	 * minus those at the last snapshot), live as it is now, peak the
	 * highest reading of the interval (snap_peak, started anew below).
	 */
	for (int i = 0; i < s->n && !code; i++) {
		struct traced *p = &s->procs[i];
		uint32_t n = tracer_n_stacks(&p->tr);
		struct memprof_stack_agg *cur = malloc((n ? n : 1) * sizeof(*cur));

		if (!p->snap_prev)
			p->snap_prev = calloc((size_t)p->tr.max_stacks + MEMPROF_INNER_STACKS,
					      sizeof(*p->snap_prev));
		owned[i] = cur;
		if (!cur || !p->snap_prev) {
			code = cli_die(EXIT_FAILED, "out of memory");
			break;
		}
		memcpy(cur, p->tr.aggs, n * sizeof(*cur));
		for (uint32_t k = 0; k < n; k++) {
			struct memprof_stack_agg d = cur[k];

			for (int v = 0; v < MEMPROF_N_KERNEL_VIEWS; v++) {
				if (v == MEMPROF_VIEW_LIVE)
					continue;
				d.samples[v] -= p->snap_prev[k].samples[v];
				d.bytes[v] -= p->snap_prev[k].bytes[v];
				d.objects_q16[v] -= p->snap_prev[k].objects_q16[v];
			}
			p->snap_prev[k] = cur[k];
			cur[k] = d;
		}
		deltas[i] = cur;
	}
	if (!code) {
		/* Written through a temporary file, linked into place whole (outfile.h). */
		r.paths[0] = path;
		r.format = fmt;
		fill_meta(s, &r, from, &s->snap_peak);
		r.meta.verbose = 0;
		sources_of(s, src, deltas, &s->snap_peak);
		code = output_write_sources(&r, src, (size_t)s->n);
	}
	/* The next interval's peak starts from the live view as it is now. */
	peak_reset(&s->snap_peak, s->snap_peak.start_ns);
	session_read_snap_peak(s);
	for (int i = 0; i < s->n; i++)
		free(owned[i]);
	return code;
}
