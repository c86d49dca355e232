/*
 * Sampling: the minor-heap trigger, the combined allocation with
 * placeholder entries (alloc_minor runs before the blocks exist), and the
 * samples taken inside the runtime, whose callbacks are postponed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define WORD sizeof(uintptr_t)
/* Sampled blocks of a combined allocation kept on the C stack. */
#define YOUNG_LOCAL_SAMPLES 8

/* The next sampled word of the minor heap, and the heap start it was drawn
 * for.  trigger == start means "no sample in what is left of the heap". */
static _Atomic uintptr_t young_trigger;
static _Atomic uintptr_t young_start_seen;

size_t sample_new_locked(memprof_value block, size_t wosize, size_t bytes, size_t n_samples,
			 unsigned source, unsigned flags, const uintptr_t *stack, size_t stack_len,
			 const struct rate *r)
{
	int traced = SEMAPHORE_UP(memprof_sample_semaphore);
	struct profile *p = memprof_core.sampling;

	if (!p && !traced)
		return NO_INDEX;
	size_t i = entries_new();
	if (i == NO_INDEX) {
		probe_count_dropped();
		return NO_INDEX;
	}
	struct entry *e = &memprof_core.tbl.t[i];
	if ((flags & SAMPLE_MALLOC) && handles_put(e->id, i) != 0) {
		entries_delete(i);
		probe_count_dropped();
		return NO_INDEX;
	}
	e->block = block;
	e->wosize = wosize;
	e->n_samples = n_samples;
	e->source = source & 3u;
	e->young = (flags & SAMPLE_YOUNG) != 0;
	e->malloc_style = (flags & SAMPLE_MALLOC) != 0;
	e->unbound = (flags & SAMPLE_UNBOUND) != 0;
	if (p) {
		e->prof = p;
		p->refs++;
		size_t keep = stack_len < p->callstack_size ? stack_len : p->callstack_size;
		if ((flags & SAMPLE_KEEP_STACK) && keep) {
			e->stack = malloc(keep * sizeof(uintptr_t));
			if (e->stack) {
				memcpy(e->stack, stack, keep * sizeof(uintptr_t));
				e->stack_len = keep;
			}
		}
		atomic_store_explicit(&memprof_core.maybe_pending, 1, memory_order_relaxed);
	} else {
		e->alloc_done = 1; /* tracer only: no callback */
	}
	if (traced) {
		e->traced = 1;
		probe_fire_sample(e->id, bytes ? bytes : wosize, n_samples,
				  e->young ? MEMPROF_PROBE_KIND_MINOR : MEMPROF_PROBE_KIND_MAJOR,
				  e->source, stack, stack_len, bytes ? r->lambda / 8 : r->lambda,
				  bytes != 0);
	}
	return i;
}

static uintptr_t trigger_draw(uintptr_t young_ptr, uintptr_t young_start)
{
	struct rate r;
	uintptr_t trig = young_start;

	rate_read(&r);
	atomic_store_explicit(&young_start_seen, young_start, memory_order_relaxed);
	if (r.lambda > 0 && !memprof_ts.in_callback && young_ptr > young_start) {
		size_t gap = rng_geometric(&r);
		size_t room = (young_ptr - young_start) / WORD;
		/* The gap-th word below young_ptr is sampled: an allocation
		 * taking the host's pointer below trig covers it. */
		if (gap <= room)
			trig = young_ptr - (gap - 1) * WORD;
	}
	atomic_store_explicit(&young_trigger, trig, memory_order_relaxed);
	return trig;
}

uintptr_t memprof_renew_minor_sample(uintptr_t young_ptr, uintptr_t young_start)
{
	probe_poll();
	return trigger_draw(young_ptr, young_start);
}

uintptr_t memprof_young_trigger(void)
{
	return atomic_load_explicit(&young_trigger, memory_order_relaxed);
}

/* Words from young_ptr (downwards) to the first sampled word, >= 1. */
static size_t young_first_gap(uintptr_t young_ptr, const struct rate *r)
{
	uintptr_t trig = atomic_load_explicit(&young_trigger, memory_order_relaxed);
	uintptr_t start = atomic_load_explicit(&young_start_seen, memory_order_relaxed);

	if (trig > start && trig <= young_ptr)
		return (young_ptr - trig) / WORD + 1;
	if (trig == start && start != 0 && start <= young_ptr) {
		/* The drawn gap overshot the heap: by memorylessness, what is
		 * left beyond the room is a fresh geometric gap. */
		size_t room = (young_ptr - start) / WORD;
		size_t gap = rng_geometric(r);
		return gap > GAP_NEVER - room ? GAP_NEVER : room + gap;
	}
	return rng_geometric(r);
}

struct young_sample {
	size_t block;  /* index in the combined allocation */
	size_t offset; /* word offset of its header from the base */
	size_t n;      /* samples in it */
	size_t idx;    /* its entry (NO_INDEX: dropped); pinned while we hold it */
};

/* Count the sampled words of each block; ascending block order. */
static size_t young_count(size_t nallocs, const size_t *wosizes, size_t total, size_t first,
			  const struct rate *r, struct young_sample *out)
{
	size_t n_out = 0;
	size_t b = nallocs - 1;
	size_t off_b = total - (wosizes[b] + 1);

	for (size_t p = first; p <= total;) {
		size_t off = total - p; /* word offset of the sampled word */
		while (off < off_b) {
			b--;
			off_b -= wosizes[b] + 1;
		}
		if (n_out == 0 || out[n_out - 1].block != b)
			out[n_out++] = (struct young_sample){.block = b, .offset = off_b, .n = 0};
		out[n_out - 1].n++;
		size_t gap = rng_geometric(r);
		if (gap > total)
			break;
		p += gap;
	}
	for (size_t i = 0, j = n_out ? n_out - 1 : 0; i < j; i++, j--) {
		struct young_sample tmp = out[i];
		out[i] = out[j];
		out[j] = tmp;
	}
	return n_out;
}

/* Run block k's alloc_minor.  Returns its error. */
static int young_alloc_callback(struct young_sample *s, const size_t *wosizes,
				const struct stack_buf *sb)
{
	struct thread_state *ts = &memprof_ts;

	pthread_mutex_lock(&memprof_core.lock);
	struct entry *e = &memprof_core.tbl.t[s->idx];
	MEMPROF_ASSERT(e->unbound && e->idx_ptr == &s->idx);
	e->alloc_done = 1;
	/* A stopped profile runs no alloc callback, not even for the rest of
	 * the combined allocation whose callback stopped it. */
	if (!e->prof || e->prof->stopped || !e->prof->tracker.alloc_minor) {
		entry_drop_profile(e);
		pthread_mutex_unlock(&memprof_core.lock);
		return 0;
	}
	memprof_alloc_callback fn = e->prof->tracker.alloc_minor;
	void *arg = e->prof->tracker.arg;
	size_t keep = e->prof->callstack_size < sb->len ? e->prof->callstack_size : sb->len;
	memprof_allocation info = {
	    .id = e->id,
	    .n_samples = s->n,
	    .size = wosizes[s->block],
	    .source = MEMPROF_SRC_NORMAL,
	    .callstack = sb->buf,
	    .callstack_len = keep,
	};
	pthread_mutex_unlock(&memprof_core.lock);

	memprof_value out = MEMPROF_NONE;
	ts->in_callback = 1;
	int err = fn(arg, &info, &out);
	ts->in_callback = 0;

	pthread_mutex_lock(&memprof_core.lock);
	memprof_core.stats.callbacks++;
	e = &memprof_core.tbl.t[s->idx];
	if (e->prof) {
		if (err || out == MEMPROF_NONE) {
			entry_drop_profile(e);
		} else {
			e->data = out;
			if (memprof_core.ops.is_young && memprof_core.ops.is_young(out))
				entries_make_young(s->idx);
		}
	}
	pthread_mutex_unlock(&memprof_core.lock);
	return err;
}

/* The combined allocation will not happen: simulated dealloc_minor for the
 * blocks whose alloc callback ran, then every entry goes. */
static void young_rollback(struct young_sample *smp, size_t n_smp)
{
	struct thread_state *ts = &memprof_ts;

	for (size_t k = 0; k < n_smp; k++) {
		if (smp[k].idx == NO_INDEX)
			continue;
		pthread_mutex_lock(&memprof_core.lock);
		struct entry *e = &memprof_core.tbl.t[smp[k].idx];
		MEMPROF_ASSERT(e->idx_ptr == &smp[k].idx);
		if (e->prof && e->alloc_done && e->data != MEMPROF_NONE &&
		    e->prof->tracker.dealloc_minor) {
			memprof_dealloc_callback fn = e->prof->tracker.dealloc_minor;
			void *arg = e->prof->tracker.arg;
			memprof_value data = e->data;
			pthread_mutex_unlock(&memprof_core.lock);
			ts->in_callback = 1;
			fn(arg, data);
			ts->in_callback = 0;
			pthread_mutex_lock(&memprof_core.lock);
			memprof_core.stats.callbacks++;
			e = &memprof_core.tbl.t[smp[k].idx];
		}
		e->idx_ptr = NULL;
		e->unbound = 0;
		e->block = 0;
		if (!e->deleted)
			entries_mark_dead(smp[k].idx);
		entries_delete(smp[k].idx);
		smp[k].idx = NO_INDEX;
		pthread_mutex_unlock(&memprof_core.lock);
	}
}

static void young_bind(struct young_sample *smp, size_t n_smp, uintptr_t base)
{
	pthread_mutex_lock(&memprof_core.lock);
	for (size_t k = 0; k < n_smp; k++) {
		if (smp[k].idx == NO_INDEX)
			continue;
		size_t i = smp[k].idx;
		struct entry *e = &memprof_core.tbl.t[i];
		MEMPROF_ASSERT(i < memprof_core.tbl.len && e->unbound && e->idx_ptr == &smp[k].idx);
		e->unbound = 0;
		e->block = base + (smp[k].offset + 1) * WORD;
		if (!e->deleted)
			i = entries_make_young(i);
		entries_release(i);
		smp[k].idx = NO_INDEX;
	}
	pthread_mutex_unlock(&memprof_core.lock);
}

/*
 * The next trigger below young_ptr, after an allocation that crossed the
 * last one, and the host's limit.  A host with update_young_limit renews
 * the trigger there (memprof_host.h asks it to call
 * memprof_renew_minor_sample), so the core draws only for a host without
 * one: one draw a sample, not a draw the host's renewal throws away.
 */
static void trigger_renew(uintptr_t young_ptr)
{
	if (memprof_core.ops.update_young_limit)
		host_update_young_limit();
	else
		trigger_draw(young_ptr,
			     atomic_load_explicit(&young_start_seen, memory_order_relaxed));
}

static uintptr_t young_reserve(uintptr_t (*reserve)(void *), void *ctx, uintptr_t *base_out)
{
	uintptr_t base = reserve(ctx);

	*base_out = base;
	trigger_renew(base);
	return base;
}

int memprof_track_young(uintptr_t young_ptr, size_t nallocs, const size_t *wosizes,
			uintptr_t (*reserve)(void *ctx), void *ctx, uintptr_t *base_out)
{
	struct thread_state *ts = &memprof_ts;
	struct young_sample local[YOUNG_LOCAL_SAMPLES];
	size_t *local_held[YOUNG_LOCAL_SAMPLES];
	struct young_sample *smp = local;
	size_t **held = local_held;
	size_t n_smp = 0, total = 0;
	struct rate r;

	rate_read(&r);
	for (size_t i = 0; i < nallocs; i++)
		total += wosizes[i] + 1;
	if (r.lambda > 0 && !ts->in_callback && nallocs > 0) {
		size_t first = young_first_gap(young_ptr, &r);
		if (first <= total && nallocs > YOUNG_LOCAL_SAMPLES) {
			smp = malloc(nallocs * sizeof(*smp));
			held = malloc(nallocs * sizeof(*held));
			if (!smp || !held) {
				free(smp);
				free(held);
				smp = NULL;
				pthread_mutex_lock(&memprof_core.lock);
				probe_count_dropped();
				pthread_mutex_unlock(&memprof_core.lock);
			}
		}
		if (smp && first <= total)
			n_smp = young_count(nallocs, wosizes, total, first, &r, smp);
	}
	if (n_smp == 0) {
		young_reserve(reserve, ctx, base_out);
		return 0;
	}

	struct stack_buf sb;
	stack_buf_init(&sb);
	sb.len = callstack_capture(sb.buf, sb.want);

	/* Placeholders: entries for blocks that do not exist yet, busy from
	 * now on, so that while one of their callbacks blocks no other
	 * thread's safe point runs the others (they are this thread's). */
	pthread_mutex_lock(&memprof_core.lock);
	for (size_t k = 0; k < n_smp; k++) {
		smp[k].idx = sample_new_locked(smp[k].offset, wosizes[smp[k].block], 0, smp[k].n,
					       MEMPROF_SRC_NORMAL, SAMPLE_YOUNG | SAMPLE_UNBOUND,
					       sb.buf, sb.len, &r);
		if (smp[k].idx != NO_INDEX)
			memprof_core.tbl.t[smp[k].idx].idx_ptr = &smp[k].idx;
		held[k] = &smp[k].idx;
	}
	pthread_mutex_unlock(&memprof_core.lock);
	struct held_set hs = {.idx = held, .n = n_smp, .prev = ts->held};
	ts->held = &hs;

	int err = 0;
	for (size_t k = 0; k < n_smp && !err; k++)
		if (smp[k].idx != NO_INDEX)
			err = young_alloc_callback(&smp[k], wosizes, &sb);
	stack_buf_free(&sb);

	uintptr_t base = 0;
	if (!err) {
		base = reserve(ctx);
		if (!base)
			err = ENOMEM;
	}
	if (err) {
		young_rollback(smp, n_smp);
		*base_out = 0;
	} else {
		young_bind(smp, n_smp, base);
		*base_out = base;
	}
	ts->held = hs.prev;
	if (smp != local) {
		free(smp);
		free(held);
	}
	trigger_renew(err ? young_ptr : base);
	return err;
}

/* A postponed sample: entry now, alloc callback at the next safe point. */
static void sample_postponed(memprof_value block, size_t wosize, size_t n_samples, unsigned source,
			     unsigned flags, const struct stack_buf *sb, const struct rate *r)
{
	pthread_mutex_lock(&memprof_core.lock);
	size_t i = sample_new_locked(block, wosize, 0, n_samples, source, flags | SAMPLE_KEEP_STACK,
				     sb->buf, sb->len, r);
	int pending = i != NO_INDEX && entry_pending(&memprof_core.tbl.t[i]);
	pthread_mutex_unlock(&memprof_core.lock);
	if (pending)
		host_request_safe_point();
}

/* young for track_runtime: ask the host. */
#define TRACK_ASK_HOST (-1)

/*
 * One runtime sample of `words` sampled words (binomial count), recorded
 * with `size` as its size and its alloc callback postponed.
 */
static void track_runtime(memprof_value block, size_t size, size_t words, unsigned source,
			  int young)
{
	struct rate r;

	rate_read(&r);
	if (r.lambda <= 0 || memprof_ts.in_callback)
		return;
	size_t n = rng_binomial(&r, words);
	if (!n)
		return;
	if (young < 0)
		young = memprof_core.ops.is_young && memprof_core.ops.is_young(block);
	struct stack_buf sb;
	stack_buf_init(&sb);
	sb.len = callstack_capture(sb.buf, sb.want);
	sample_postponed(block, size, n, source, young ? SAMPLE_YOUNG : 0, &sb, &r);
	stack_buf_free(&sb);
}

void memprof_track_major(memprof_value block, size_t wosize)
{
	track_runtime(block, wosize, wosize + 1, MEMPROF_SRC_NORMAL, 0);
}

void memprof_track_young_runtime(memprof_value block, size_t wosize)
{
	track_runtime(block, wosize, wosize + 1, MEMPROF_SRC_NORMAL, 1);
}

void memprof_track_custom(memprof_value block, size_t mem_bytes)
{
	size_t words = mem_bytes / WORD;

	track_runtime(block, words, words, MEMPROF_SRC_CUSTOM, TRACK_ASK_HOST);
}

void memprof_track_intern(size_t nblocks, const memprof_value *blocks, const size_t *wosizes)
{
	struct rate r;
	struct stack_buf sb;
	int captured = 0;

	rate_read(&r);
	if (r.lambda <= 0 || memprof_ts.in_callback)
		return;
	for (size_t i = 0; i < nblocks; i++) {
		size_t n = rng_binomial(&r, wosizes[i] + 1);
		if (!n)
			continue;
		if (!captured) {
			stack_buf_init(&sb);
			sb.len = callstack_capture(sb.buf, sb.want);
			captured = 1;
		}
		/* Small values may be unmarshaled into the minor heap. */
		int young = memprof_core.ops.is_young && memprof_core.ops.is_young(blocks[i]);
		sample_postponed(blocks[i], wosizes[i], n, MEMPROF_SRC_MARSHAL,
				 young ? SAMPLE_YOUNG : 0, &sb, &r);
	}
	if (captured)
		stack_buf_free(&sb);
}
