/* libbpf skeleton handling: load, USDT attach, mmapped arrays, batch reads. */
#include "tracer.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "memprof.skel.h"
#include "memprof_probe_abi.h"

_Static_assert(MEMPROF_STACK_DEPTH == MEMPROF_PROBE_MAX_STACK,
	       "bpf/memprof_maps.h and the probe ABI disagree on the stack depth");
/* An array map's element is at most KMALLOC_MAX_SIZE (4 MiB on x86-64). */
_Static_assert(sizeof(struct memprof_frame_chunk) <= 4u << 20, "a frame chunk is too large");
_Static_assert(sizeof(struct memprof_frame_chunk) % 4096 == 0 &&
		   sizeof(struct memprof_stack_chunk) % 4096 == 0 &&
		   sizeof(struct memprof_agg_chunk) % 4096 == 0,
	       "a chunk is not whole pages: the chunks cannot be mapped side by side");
/* A stack's first_frame (a __u32) holds any index of the largest arena
 * (--max-stacks at most 1 << 24, session_opts.c). */
_Static_assert((((1ull << 24) * MEMPROF_FRAMES_PER_STACK) / MEMPROF_FRAME_CHUNK + 1 +
		MEMPROF_INNER_CHUNKS) *
		       MEMPROF_CHUNK_FRAMES <
		   (1ull << 32),
	       "frame indexes overflow struct memprof_stack's first_frame");

/* Entries fetched per bpf_map_lookup_batch call. */
#define BLOCKS_BATCH 4096
/* A hash map's bucket and element header in the kernel (struct bucket,
 * struct htab_elem on 64-bit machines), for the memory figures. */
#define HTAB_BUCKET_BYTES 16
#define HTAB_ELEM_BYTES 48
/* Home slots of the block map mapped at a time to read them (1 MiB). */
#define BLOCK_SLOTS_WINDOW 16384
/* Room for the verifier's statistics (log level 4: a few lines; what some
 * kernels count against the log's size besides is more: tracer_open_with). */
#define VERIFIER_STATS_LEN 16384

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The verifier's statistics of one program, from its log (level 4). */
static void prog_cost_of(struct tracer_prog_cost *c, const struct bpf_program *prog,
			 const char *log)
{
	const char *at;

	c->name = bpf_program__name(prog);
	c->insns = (uint32_t)bpf_program__insn_cnt(prog);
	if ((at = strstr(log, "processed ")))
		c->insns_verified = (uint32_t)strtoul(at + strlen("processed "), NULL, 10);
	if ((at = strstr(log, "verification time ")))
		c->verify_us = strtoull(at + strlen("verification time "), NULL, 10);
}

static enum tracer_status status_of(int err)
{
	err = err < 0 ? -err : err;
	return err == EPERM || err == EACCES ? TRACER_DENIED : TRACER_FAILED;
}

/*
 * Entries of an mmapable array map from offset, read-only, or NULL.  The
 * kernel maps every page of the range at once (so they all count in the
 * loader's RSS): the loader maps a window at a time (read_block_slots).
 */
static void *map_array(const struct bpf_map *map, uint64_t offset, uint32_t entries, size_t *bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size = (size_t)bpf_map__value_size(map) * entries;
	void *p;

	size = (size + page - 1) / page * page;
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, bpf_map__fd(map), (off_t)offset);
	if (p == MAP_FAILED)
		return NULL;
	*bytes = size;
	return p;
}

/* Stack ids the kernel side has handed out: all of the stack table and the
 * inner table's used ones once that is in use; unused ids weigh nothing. */
static uint32_t stacks_in_use(const struct tracer *tr)
{
	uint32_t inner = __atomic_load_n(&tr->skel->bss->next_inner_slot, __ATOMIC_ACQUIRE);
	uint32_t n = __atomic_load_n(&tr->skel->data->next_stack_id, __ATOMIC_ACQUIRE);

	if (inner)
		return tr->max_stacks +
		       (inner > MEMPROF_INNER_STACKS ? MEMPROF_INNER_STACKS : inner);
	return n > tr->max_stacks ? tr->max_stacks : n;
}

/* Chunks of the frame arena holding the frames counted by *next (read
 * after stacks_in_use: memprof_maps.h's invariant), at most max. */
static uint32_t frame_chunks_in_use(const __u32 *next, uint32_t max)
{
	uint32_t frames = __atomic_load_n(next, __ATOMIC_ACQUIRE);
	uint32_t chunks =
	    (uint32_t)(((uint64_t)frames + MEMPROF_FRAME_CHUNK - 1) / MEMPROF_FRAME_CHUNK);

	return chunks < max ? chunks : max;
}

/* Chunks of the stack table (and of its aggregates) in use: those holding
 * the ids handed out in the stack table proper. */
static uint32_t stack_chunks_in_use(const struct tracer *tr)
{
	uint32_t n = __atomic_load_n(&tr->skel->data->next_stack_id, __ATOMIC_ACQUIRE);

	return (uint32_t)(((uint64_t)n + MEMPROF_STACK_CHUNK_IDS - 1) / MEMPROF_STACK_CHUNK_IDS);
}

int tracer_sync(struct tracer *tr)
{
	uint32_t used = stacks_in_use(tr);
	uint32_t stack_chunks = stack_chunks_in_use(tr);
	/* Every chunk of the ids below used (chunk i holds ids from
	 * i * MEMPROF_STACK_CHUNK_IDS on): the stack table's, then the inner
	 * table's. */
	uint32_t id_chunks =
	    (uint32_t)(((uint64_t)used + MEMPROF_STACK_CHUNK_IDS - 1) / MEMPROF_STACK_CHUNK_IDS);
	uint32_t id_main = tr->stack_arena.main_chunks;
	uint32_t id_inner = id_chunks > id_main ? id_chunks - id_main : 0;
	/* The frames of those stacks, below the counters read after used. */
	uint32_t frames_main = frame_chunks_in_use(&tr->skel->bss->next_frame, tr->frame_chunks);
	uint32_t frames_inner =
	    frame_chunks_in_use(&tr->skel->bss->next_inner_frame, MEMPROF_INNER_CHUNKS);
	int rc;

	/* Grow the tables ahead of their use, and map what is in use. */
	if ((rc = chunk_arena_grow(&tr->stack_arena, stack_chunks)) ||
	    (rc = chunk_arena_grow(&tr->agg_arena, stack_chunks)) ||
	    (rc = chunk_arena_grow(&tr->frame_arena, frames_main)) ||
	    (rc = chunk_arena_map(&tr->stack_arena, id_chunks, id_inner)) ||
	    (rc = chunk_arena_map(&tr->agg_arena, id_chunks, id_inner)) ||
	    (rc = chunk_arena_map(&tr->frame_arena, frames_main, frames_inner)) ||
	    (rc = overflow_levels_grow(
		 &tr->overflow, __atomic_load_n(&tr->skel->bss->n_overflow, __ATOMIC_RELAXED))))
		return rc;
	/* Invariant (tracer.h): the stacks below synced_stacks are mapped, their frames too. */
	tr->synced_stacks = used;
	return 0;
}

int tracer_unmap_tables(struct tracer *tr)
{
	int rc = chunk_arena_unmap(&tr->stack_arena);
	int rc_aggs = chunk_arena_unmap(&tr->agg_arena);
	int rc_frames = chunk_arena_unmap(&tr->frame_arena);

	return rc ? rc : rc_aggs ? rc_aggs : rc_frames;
}

int tracer_map_tables(struct tracer *tr)
{
	int rc = chunk_arena_remap(&tr->stack_arena);

	if (!rc)
		rc = chunk_arena_remap(&tr->agg_arena);
	if (!rc)
		rc = chunk_arena_remap(&tr->frame_arena);
	return rc;
}

/* Chunks of the frame arena for a stack table of max_stacks. */
static uint32_t frame_chunks_of(uint32_t max_stacks)
{
	return (
	    uint32_t)(((uint64_t)max_stacks * MEMPROF_FRAMES_PER_STACK + MEMPROF_FRAME_CHUNK - 1) /
		      MEMPROF_FRAME_CHUNK);
}

/* The stack table's chunks (and its aggregates'): those of the stack
 * table proper, and from the one holding id max_stacks on, the inner
 * table's (memprof_maps.h). */
static uint32_t stack_main_chunks(uint32_t max_stacks)
{
	return max_stacks / MEMPROF_STACK_CHUNK_IDS;
}

static uint32_t stack_all_chunks(uint32_t max_stacks)
{
	return (
	    uint32_t)(((uint64_t)max_stacks + MEMPROF_INNER_STACKS + MEMPROF_STACK_CHUNK_IDS - 1) /
		      MEMPROF_STACK_CHUNK_IDS);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t tracer_stack_memory(uint32_t max_stacks)
{
	uint64_t buckets = 1;
	uint32_t main = stack_main_chunks(max_stacks);

	while (buckets < max_stacks)
		buckets *= 2;
	/* The chunks created at the start (chunk_arena.h): the stack table's
	 * and its aggregates' first and the inner table's, the frame arena's
	 * first and the inner table's; and the buckets of the four hashes
	 * (HTAB_BUCKET_BYTES each: stack_ids and lifetimes, and the inner
	 * table's two). */
	return (min_u64(main, MEMPROF_STACK_CHUNKS_FIRST) + stack_all_chunks(max_stacks) - main) *
		   (sizeof(struct memprof_stack_chunk) + sizeof(struct memprof_agg_chunk)) +
	       (min_u64(frame_chunks_of(max_stacks), MEMPROF_FRAME_CHUNKS_FIRST) +
		MEMPROF_INNER_CHUNKS) *
		   sizeof(struct memprof_frame_chunk) +
	       2 * (buckets + MEMPROF_INNER_STACKS) * HTAB_BUCKET_BYTES;
}

uint64_t tracer_stack_memory_used(void)
{
	/* Its elements of the two hashes, stack_ids and lifetimes (the
	 * kernel's element header, the key and the value, each rounded to 8
	 * bytes), as fdinfo's memlock counts them, and its frames in the
	 * arena's chunks, created as they are used (MEMPROF_FRAMES_PER_STACK
	 * on average), and its entry and aggregates in the stack table's
	 * chunks, created as they are used too. */
	return 2 * HTAB_ELEM_BYTES + 8 + 8 + 8 + sizeof(struct memprof_lifetime_hist) +
	       MEMPROF_FRAMES_PER_STACK * sizeof(__u64) + sizeof(struct memprof_stack) +
	       sizeof(struct memprof_stack_agg);
}

/*
 * Load only the programs the target's probe files need: the verifier's time
 * is most of the start-up, and a host fires one form of memprof:sample (a
 * file with the batched form, ELF_PROBE_SAMPLE_BATCHED, gets
 * memprof_samples; one without, memprof_sample).  program_of picks among
 * those loaded.
 */
static void autoload_needed(struct memprof_bpf *skel, const struct target *t)
{
	int plain = 0, batched = 0, events = 0, gc = 0;

	for (size_t f = 0; f < t->n_files; f++) {
		unsigned p = t->files[f].probes;

		if (p & (1u << ELF_PROBE_SAMPLE)) {
			batched |= (p & ELF_PROBE_SAMPLE_BATCHED) != 0;
			plain |= !(p & ELF_PROBE_SAMPLE_BATCHED);
		}
		events |= (p & (1u << ELF_PROBE_EVENTS)) != 0;
		gc |= (p & (1u << ELF_PROBE_GC)) != 0;
	}
	bpf_program__set_autoload(skel->progs.memprof_sample, plain);
	bpf_program__set_autoload(skel->progs.memprof_samples, batched);
	bpf_program__set_autoload(skel->progs.memprof_events, events);
	bpf_program__set_autoload(skel->progs.memprof_gc, gc);
}

/*
 * tracer_open's work; stats: ask the verifier for its statistics (log
 * level 4).  Some kernels (6.18 here) count more than the statistics
 * against the log's size, and fail with ENOSPC a load that verified when
 * that overflows: the caller then opens again without them.
 */
static enum tracer_status tracer_open_with(struct tracer *tr, const struct target *t,
					   uint32_t max_blocks, uint32_t home_slots,
					   uint32_t max_stacks, int stats, char *err, size_t errlen)
{
	pid_t pid = t->pid;

	static char logs[TRACER_MAX_PROGS][VERIFIER_STATS_LEN];
	struct bpf_program *prog;
	uint64_t t0 = mono_ns(), t1;
	int rc, n_progs = 0;

	memset(tr, 0, sizeof(*tr));
	tr->skel = memprof_bpf__open();
	if (!tr->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-rc));
		return status_of(rc);
	}
	tr->skel->rodata->target_tgid = (__u32)pid;
	autoload_needed(tr->skel, t);
	{
		const char *hists = getenv("MEMPROF_BPF_LIFETIME_HISTS");

		tr->skel->rodata->lifetime_hists = !(hists && !strcmp(hists, "0"));
	}
	if (!max_blocks)
		max_blocks = MEMPROF_MAX_BLOCKS;
	if (!home_slots || home_slots > max_blocks)
		home_slots = max_blocks;
	tr->max_blocks = max_blocks;
	tr->home_slots = home_slots;
	tr->skel->rodata->max_blocks = max_blocks;
	tr->skel->rodata->home_slots = home_slots;
	if ((rc = bpf_map__set_max_entries(tr->skel->maps.block_slots, home_slots))) {
		snprintf(err, errlen, "cannot size the block map: %s", strerror(-rc));
		return TRACER_FAILED;
	}
	if (!max_stacks)
		max_stacks = MEMPROF_MAX_STACKS;
	tr->max_stacks = max_stacks;
	tr->skel->rodata->max_stacks = max_stacks;
	tr->frame_chunks = frame_chunks_of(max_stacks);
	tr->skel->rodata->frame_chunks = tr->frame_chunks;
	if ((rc = bpf_map__set_max_entries(tr->skel->maps.stack_chunks,
					   stack_all_chunks(max_stacks))) ||
	    (rc = bpf_map__set_max_entries(tr->skel->maps.agg_chunks,
					   stack_all_chunks(max_stacks))) ||
	    (rc = bpf_map__set_max_entries(tr->skel->maps.stack_ids, max_stacks)) ||
	    (rc = bpf_map__set_max_entries(tr->skel->maps.lifetimes, max_stacks)) ||
	    (rc = bpf_map__set_max_entries(tr->skel->maps.frames,
					   frame_chunks_of(max_stacks) + MEMPROF_INNER_CHUNKS))) {
		snprintf(err, errlen, "cannot size the stack maps: %s", strerror(-rc));
		return TRACER_FAILED;
	}
	bpf_object__for_each_program(prog, tr->skel->obj)
	{
		if (n_progs == TRACER_MAX_PROGS || !bpf_program__autoload(prog))
			continue;
		logs[n_progs][0] = 0;
		if (stats) {
			bpf_program__set_log_buf(prog, logs[n_progs], VERIFIER_STATS_LEN);
			bpf_program__set_log_level(prog, 4); /* statistics only */
		}
		n_progs++;
	}
	t1 = mono_ns();
	tr->costs.open_ns = t1 - t0;
	rc = memprof_bpf__load(tr->skel);
	t0 = mono_ns();
	tr->costs.load_ns = t0 - t1;
	n_progs = 0;
	bpf_object__for_each_program(prog, tr->skel->obj)
	{
		if (n_progs < TRACER_MAX_PROGS && bpf_program__autoload(prog)) {
			prog_cost_of(&tr->costs.progs[n_progs], prog, logs[n_progs]);
			n_progs++;
		}
	}
	if (rc) {
		snprintf(err, errlen, "cannot load the BPF programs: %s (run with -v for details)",
			 strerror(-rc));
		return rc == -ENOSPC && stats ? TRACER_LOG_FULL : status_of(rc);
	}
	{
		uint32_t main = stack_main_chunks(max_stacks);
		const struct chunk_arena_shape stacks = {"stack_chunk",
							 sizeof(struct memprof_stack_chunk),
							 main,
							 stack_all_chunks(max_stacks) - main,
							 MEMPROF_STACK_CHUNKS_FIRST,
							 MEMPROF_STACK_CHUNKS_AHEAD};
		struct chunk_arena_shape aggs = stacks;
		const struct chunk_arena_shape frames = {"frame_chunk",
							 sizeof(struct memprof_frame_chunk),
							 tr->frame_chunks,
							 MEMPROF_INNER_CHUNKS,
							 MEMPROF_FRAME_CHUNKS_FIRST,
							 MEMPROF_FRAME_CHUNKS_AHEAD};

		aggs.name = "agg_chunk";
		aggs.chunk_bytes = sizeof(struct memprof_agg_chunk);
		if (!(rc = chunk_arena_open(&tr->stack_arena,
					    bpf_map__fd(tr->skel->maps.stack_chunks), &stacks)) &&
		    !(rc = chunk_arena_open(&tr->agg_arena, bpf_map__fd(tr->skel->maps.agg_chunks),
					    &aggs)))
			rc = chunk_arena_open(&tr->frame_arena, bpf_map__fd(tr->skel->maps.frames),
					      &frames);
	}
	if (rc) {
		snprintf(err, errlen, "cannot create the stack table's chunks: %s", strerror(-rc));
		return status_of(rc);
	}
	rc = overflow_levels_open(&tr->overflow, bpf_map__fd(tr->skel->maps.blocks_overflow),
				  max_blocks);
	if (rc) {
		snprintf(err, errlen, "cannot create the block map's overflow: %s", strerror(-rc));
		return status_of(rc);
	}
	tr->stacks = tr->stack_arena.base;
	tr->aggs = tr->agg_arena.base;
	tr->frames = tr->frame_arena.base;
	tr->n_frames = (uint64_t)(tr->frame_chunks + MEMPROF_INNER_CHUNKS) * MEMPROF_CHUNK_FRAMES;
	rc = tracer_sync(tr);
	if (rc) {
		snprintf(err, errlen, "cannot mmap the BPF arrays: %s", strerror(-rc));
		return status_of(rc);
	}
	tr->costs.mmap_ns = mono_ns() - t0;
	return TRACER_OK;
}

uint32_t tracer_home_slots(uint64_t resident_bytes, double rate)
{
	/* Live samples expected: a rate per word (the malloc host's per byte
	 * at rate / 8 gives the same), over the resident memory. */
	double want = 4.0 * (double)resident_bytes / 8.0 * rate;
	uint32_t n = MEMPROF_BLOCK_HOME_SLOTS_MIN;

	while (n < MEMPROF_MAX_BLOCKS && (double)n < want)
		n *= 2;
	return n;
}

enum tracer_status tracer_open(struct tracer *tr, const struct target *t, uint32_t max_blocks,
			       uint32_t home_slots, uint32_t max_stacks, int verifier_stats,
			       char *err, size_t errlen)
{
	enum tracer_status st = tracer_open_with(tr, t, max_blocks, home_slots, max_stacks,
						 verifier_stats, err, errlen);

	if (st == TRACER_LOG_FULL) {
		tracer_close(tr);
		st = tracer_open_with(tr, t, max_blocks, home_slots, max_stacks, 0, err, errlen);
	}
	/* Nothing is left open: the session's later steps skip this tracer. */
	if (st != TRACER_OK)
		tracer_close(tr);
	return st;
}

static struct bpf_program *program_of(struct tracer *tr, enum elf_probe p, unsigned probes)
{
	switch (p) {
	case ELF_PROBE_SAMPLE:
		return probes & ELF_PROBE_SAMPLE_BATCHED ? tr->skel->progs.memprof_samples
							 : tr->skel->progs.memprof_sample;
	case ELF_PROBE_EVENTS:
		return tr->skel->progs.memprof_events;
	default:
		return tr->skel->progs.memprof_gc;
	}
}

enum tracer_status tracer_attach(struct tracer *tr, const struct target *t, char *err,
				 size_t errlen)
{
	/*
	 * The sample probe goes last: its semaphore starts the host sampling,
	 * and by then the events program is in place.
	 */
	static const enum elf_probe order[ELF_N_PROBES] = {ELF_PROBE_GC, ELF_PROBE_EVENTS,
							   ELF_PROBE_SAMPLE};
	uint64_t t0 = mono_ns();

	for (int o = 0; o < ELF_N_PROBES; o++) {
		for (size_t f = 0; f < t->n_files; f++) {
			enum elf_probe p = order[o];
			struct bpf_link *link, **v;
			char *is_sample;
			int rc;

			if (!(t->files[f].probes & (1u << p)))
				continue;
			link = bpf_program__attach_usdt(
			    program_of(tr, p, t->files[f].probes), t->pid, t->files[f].path,
			    MEMPROF_PROBE_PROVIDER, elf_probe_names[p], NULL);
			if (!link) {
				rc = -errno;
				snprintf(err, errlen, "cannot attach to memprof:%s in %s: %s",
					 elf_probe_names[p], t->files[f].path, strerror(-rc));
				return status_of(rc);
			}
			v = realloc(tr->links, (tr->n_links + 1) * sizeof(*v));
			if (v)
				tr->links = v;
			is_sample = v ? realloc(tr->link_is_sample, tr->n_links + 1) : NULL;
			if (!is_sample) {
				bpf_link__destroy(link);
				snprintf(err, errlen, "out of memory");
				return TRACER_FAILED;
			}
			tr->link_is_sample = is_sample;
			tr->link_is_sample[tr->n_links] = p == ELF_PROBE_SAMPLE;
			tr->links[tr->n_links++] = link;
		}
	}
	((volatile struct memprof_bpf__bss *)tr->skel->bss)->detaching = 0;
	tr->costs.attach_ns = mono_ns() - t0;
	return TRACER_OK;
}

/* Destroy the links that are (sample 1) or are not memprof:sample's; 1 if any was. */
static int links_destroy(struct tracer *tr, int sample)
{
	size_t kept = 0;
	int any = 0;

	for (size_t i = 0; i < tr->n_links; i++) {
		if (tr->link_is_sample[i] == sample) {
			bpf_link__destroy(tr->links[i]);
			any = 1;
			continue;
		}
		tr->link_is_sample[kept] = tr->link_is_sample[i];
		tr->links[kept++] = tr->links[i];
	}
	tr->n_links = kept;
	return any;
}

void tracer_detach(struct tracer *tr)
{
	if (tr->skel && tr->skel->bss) {
		if (!tr->detach_ns)
			tr->detach_ns = mono_ns();
		((volatile struct memprof_bpf__bss *)tr->skel->bss)->detaching = 1;
	}
	/*
	 * The links stay until tracer_close, after the output is written:
	 * each link's end waits for a grace period of the kernel's (about
	 * 100 ms here, one link after the other).  From the moment detaching
	 * is raised no program changes a view (a sample counts as a late
	 * sample, a promote or dealloc as a late event or a late orphan), so
	 * what the loader reads then is what it would read once they are gone.
	 */
}

/* Room in tr->blocks for n more. */
static int blocks_reserve(struct tracer *tr, size_t n)
{
	size_t ncap = tr->cap_blocks ? 2 * tr->cap_blocks : BLOCKS_BATCH;
	struct tracked_block *v;

	if (tr->n_blocks + n <= tr->cap_blocks)
		return 0;
	while (ncap < tr->n_blocks + n)
		ncap *= 2;
	v = realloc(tr->blocks, ncap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	tr->blocks = v;
	tr->cap_blocks = ncap;
	return 0;
}

/* The blocks in their home slots, read while the kernel side changes them
 * (memprof_maps.h: a copy is kept when the slot's id is the same plain id
 * before and after it), through a window of BLOCK_SLOTS_WINDOW slots mapped
 * at a time: the loader's RSS does not hold the whole block map. */
static int read_block_slots(struct tracer *tr)
{
	const struct bpf_map *map = tr->skel->maps.block_slots;

	for (uint32_t from = 0; from < tr->home_slots; from += BLOCK_SLOTS_WINDOW) {
		uint32_t n = tr->home_slots - from < BLOCK_SLOTS_WINDOW ? tr->home_slots - from
									: BLOCK_SLOTS_WINDOW;
		size_t bytes;
		const struct memprof_block_slot *w =
		    map_array(map, (uint64_t)from * sizeof(*w), n, &bytes);
		int rc = 0;

		if (!w)
			return -errno;
		for (uint32_t i = 0; i < n && !rc; i++) {
			const struct memprof_block_slot *s = &w[i];
			uint64_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
			struct memprof_block b;

			if (!id || (id & MEMPROF_BLOCK_SLOT_BUSY))
				continue;
			memcpy(&b, (const void *)&s->b, sizeof(b));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&s->id, __ATOMIC_RELAXED) != id)
				continue; /* died (or was replaced) meanwhile */
			if (blocks_reserve(tr, 1))
				rc = -ENOMEM;
			else
				tr->blocks[tr->n_blocks++] = (struct tracked_block){id, b};
		}
		munmap((void *)w, bytes);
		if (rc)
			return rc;
	}
	return 0;
}

/* The blocks of one level of the overflow (fd), by batch lookups. */
static int read_overflow_level(struct tracer *tr, int fd)
{
	__u64 keys[BLOCKS_BATCH];
	struct memprof_block vals[BLOCKS_BATCH];
	__u32 cursor = 0;
	int first = 1, done = 0;

	while (!done) {
		__u32 count = BLOCKS_BATCH;
		int rc = bpf_map_lookup_batch(fd, first ? NULL : &cursor, &cursor, keys, vals,
					      &count, NULL);

		if (rc) {
			if (errno != ENOENT)
				return -errno;
			done = 1;
		}
		first = 0;
		if (blocks_reserve(tr, count))
			return -ENOMEM;
		for (__u32 i = 0; i < count; i++)
			tr->blocks[tr->n_blocks++] = (struct tracked_block){keys[i], vals[i]};
	}
	return 0;
}

int tracer_read_blocks(struct tracer *tr)
{
	int rc;

	tr->n_blocks = 0;
	if ((rc = read_block_slots(tr)))
		return rc;
	for (uint32_t k = 0; k < tr->overflow.created; k++)
		if ((rc = read_overflow_level(tr, tr->overflow.fds[k])))
			return rc;
	return 0;
}

uint32_t tracer_n_stacks(const struct tracer *tr)
{
	return tr->synced_stacks;
}

uint64_t tracer_counter(const struct tracer *tr, enum memprof_counter c)
{
	return ((volatile __u64 *)tr->skel->bss->counters)[c];
}

void tracer_close(struct tracer *tr)
{
	uint64_t t0 = mono_ns();

	tracer_detach(tr);
	/* The sample links first: the host stops sampling. */
	if (links_destroy(tr, 1) | links_destroy(tr, 0))
		tr->costs.detach_ns = mono_ns() - t0;
	free(tr->links);
	free(tr->link_is_sample);
	if (tr->stack_arena.base)
		chunk_arena_close(&tr->stack_arena);
	if (tr->agg_arena.base)
		chunk_arena_close(&tr->agg_arena);
	if (tr->frame_arena.base)
		chunk_arena_close(&tr->frame_arena);
	overflow_levels_close(&tr->overflow);
	memprof_bpf__destroy(tr->skel);
	free(tr->blocks);
	memset(tr, 0, sizeof(*tr));
}

void tracer_describe_costs(const struct tracer *tr, char *buf, size_t len)
{
	const struct tracer_costs *c = &tr->costs;
	int n =
	    snprintf(buf, len, "open %.1f ms, load %.1f ms (", c->open_ns / 1e6, c->load_ns / 1e6);

	for (int i = 0; i < TRACER_MAX_PROGS && c->progs[i].name && n >= 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%s: %u insns, %u verified in %.1f ms",
			      i ? "; " : "", c->progs[i].name, c->progs[i].insns,
			      c->progs[i].insns_verified, c->progs[i].verify_us / 1e3);
	if (n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "), mmap %.1f ms, attach %.1f ms",
			 c->mmap_ns / 1e6, c->attach_ns / 1e6);
}

int tracer_describe_run_times(const struct tracer *tr, char *buf, size_t len)
{
	struct bpf_program *prog;
	uint64_t samples = tracer_counter(tr, MEMPROF_CNT_SAMPLES),
		 events = tracer_counter(tr, MEMPROF_CNT_PROMOTES) +
			  tracer_counter(tr, MEMPROF_CNT_DEALLOCS);
	int n = 0, any = 0;

	if (len)
		buf[0] = 0;
	bpf_object__for_each_program(prog, tr->skel->obj)
	{
		struct bpf_prog_info info = {0};
		__u32 info_len = sizeof(info);
		const char *name = bpf_program__name(prog);
		int fd = bpf_program__fd(prog), is_events = !strcmp(name, "memprof_events");
		uint64_t per = is_events ? events : samples;

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &info_len) || !info.run_cnt ||
		    n < 0 || (size_t)n >= len)
			continue;
		any |= info.run_time_ns > 0;
		n += snprintf(buf + n, len - (size_t)n, "%s%s %.1f ms in %llu runs", n ? "; " : "",
			      name, info.run_time_ns / 1e6, (unsigned long long)info.run_cnt);
		if (per && n >= 0 && (size_t)n < len && strcmp(name, "memprof_gc"))
			n += snprintf(buf + n, len - (size_t)n, " (%.0f ns %s)",
				      (double)info.run_time_ns / per,
				      is_events ? "an event" : "a sample");
	}
	return any;
}

uint64_t tracer_map_memory(const struct tracer *tr, char *buf, size_t len)
{
	const struct bpf_map *map;
	uint64_t total = 0;
	size_t n = 0;

	if (buf && len)
		buf[0] = 0;
	if (!tr->skel)
		return 0;
	bpf_object__for_each_map(map, tr->skel->obj)
	{
		uint64_t bytes = map_fd_memlock(bpf_map__fd(map));

		/* The chunks are maps of their own. */
		if (map == tr->skel->maps.frames)
			bytes += chunk_arena_memory(&tr->frame_arena);
		else if (map == tr->skel->maps.stack_chunks)
			bytes += chunk_arena_memory(&tr->stack_arena);
		else if (map == tr->skel->maps.agg_chunks)
			bytes += chunk_arena_memory(&tr->agg_arena);
		else if (map == tr->skel->maps.blocks_overflow)
			bytes += overflow_levels_memory(&tr->overflow);
		total += bytes;
		if (buf && n < len && bytes >= 1 << 16) {
			int w = snprintf(buf + n, len - n, "%s%s %.1f MiB", n ? ", " : "",
					 bpf_map__name(map), bytes / 1048576.0);
			n += w > 0 ? (size_t)w : 0;
		}
	}
	return total;
}
