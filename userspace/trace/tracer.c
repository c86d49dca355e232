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

/* Entries fetched per bpf_map_lookup_batch call. */
#define BLOCKS_BATCH 4096

static enum tracer_status status_of(int err)
{
	err = err < 0 ? -err : err;
	return err == EPERM || err == EACCES ? TRACER_DENIED : TRACER_FAILED;
}

static void *map_array(struct bpf_map *map, size_t *bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size = (size_t)bpf_map__value_size(map) * bpf_map__max_entries(map);
	void *p;

	size = (size + page - 1) / page * page;
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);
	if (p == MAP_FAILED)
		return NULL;
	*bytes = size;
	return p;
}

uint64_t tracer_stack_memory(uint32_t max_stacks)
{
	uint64_t n = (uint64_t)max_stacks + MEMPROF_INNER_STACKS;

	/* The three arrays, and the dedupe hash (key, value, element header). */
	return n * (sizeof(struct memprof_stack) + sizeof(struct memprof_stack_agg) +
		    sizeof(struct memprof_lifetime_hist) + 8 + 8 + 48);
}

enum tracer_status tracer_open(struct tracer *tr, pid_t pid, uint32_t max_blocks,
			       uint32_t max_stacks, char *err, size_t errlen)
{
	int rc;

	memset(tr, 0, sizeof(*tr));
	tr->skel = memprof_bpf__open();
	if (!tr->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-rc));
		return status_of(rc);
	}
	tr->skel->rodata->target_tgid = (__u32)pid;
	{
		const char *hists = getenv("MEMPROF_BPF_LIFETIME_HISTS");

		tr->skel->rodata->lifetime_hists = !(hists && !strcmp(hists, "0"));
	}
	if (!max_blocks)
		max_blocks = MEMPROF_MAX_BLOCKS;
	tr->max_blocks = max_blocks;
	tr->skel->rodata->max_blocks = max_blocks;
	if ((rc = bpf_map__set_max_entries(tr->skel->maps.block_slots, max_blocks)) ||
	    (rc = bpf_map__set_max_entries(tr->skel->maps.blocks_overflow, max_blocks))) {
		snprintf(err, errlen, "cannot size the block map: %s", strerror(-rc));
		return TRACER_FAILED;
	}
	if (!max_stacks)
		max_stacks = MEMPROF_MAX_STACKS;
	tr->max_stacks = max_stacks;
	tr->skel->rodata->max_stacks = max_stacks;
	if ((rc = bpf_map__set_max_entries(tr->skel->maps.stacks,
					   max_stacks + MEMPROF_INNER_STACKS)) ||
	    (rc = bpf_map__set_max_entries(tr->skel->maps.stack_aggs,
					   max_stacks + MEMPROF_INNER_STACKS)) ||
	    (rc = bpf_map__set_max_entries(tr->skel->maps.stack_ids,
					   max_stacks + MEMPROF_INNER_STACKS)) ||
	    (rc = bpf_map__set_max_entries(tr->skel->maps.lifetimes,
					   max_stacks + MEMPROF_INNER_STACKS))) {
		snprintf(err, errlen, "cannot size the stack maps: %s", strerror(-rc));
		return TRACER_FAILED;
	}
	rc = memprof_bpf__load(tr->skel);
	if (rc) {
		snprintf(err, errlen, "cannot load the BPF programs: %s (run with -v for details)",
			 strerror(-rc));
		return status_of(rc);
	}
	tr->stacks = map_array(tr->skel->maps.stacks, &tr->stacks_bytes);
	tr->aggs = map_array(tr->skel->maps.stack_aggs, &tr->aggs_bytes);
	tr->lifetimes = map_array(tr->skel->maps.lifetimes, &tr->lifetimes_bytes);
	tr->block_slots = map_array(tr->skel->maps.block_slots, &tr->block_slots_bytes);
	if (!tr->stacks || !tr->aggs || !tr->lifetimes || !tr->block_slots) {
		rc = -errno;
		snprintf(err, errlen, "cannot mmap the BPF arrays: %s", strerror(-rc));
		return status_of(rc);
	}
	return TRACER_OK;
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

	for (int o = 0; o < ELF_N_PROBES; o++) {
		for (size_t f = 0; f < t->n_files; f++) {
			enum elf_probe p = order[o];
			struct bpf_link *link, **v;
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
			if (!v) {
				bpf_link__destroy(link);
				snprintf(err, errlen, "out of memory");
				return TRACER_FAILED;
			}
			tr->links = v;
			tr->links[tr->n_links++] = link;
		}
	}
	((volatile struct memprof_bpf__bss *)tr->skel->bss)->detaching = 0;
	return TRACER_OK;
}

void tracer_detach(struct tracer *tr)
{
	if (tr->skel && tr->skel->bss) {
		struct timespec ts;

		if (!tr->detach_ns) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			tr->detach_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		}
		((volatile struct memprof_bpf__bss *)tr->skel->bss)->detaching = 1;
	}
	/* Reverse order: the sample probe first, so no block is sampled after
	 * its promote or dealloc could no longer be seen. */
	for (size_t i = tr->n_links; i-- > 0;)
		bpf_link__destroy(tr->links[i]);
	free(tr->links);
	tr->links = NULL;
	tr->n_links = 0;
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
 * before and after it). */
static int read_block_slots(struct tracer *tr)
{
	for (uint32_t i = 0; i < tr->max_blocks; i++) {
		const struct memprof_block_slot *s = &tr->block_slots[i];
		uint64_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
		struct memprof_block b;

		if (!id || (id & MEMPROF_BLOCK_SLOT_BUSY))
			continue;
		memcpy(&b, (const void *)&s->b, sizeof(b));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->id, __ATOMIC_RELAXED) != id)
			continue; /* died (or was replaced) meanwhile */
		if (blocks_reserve(tr, 1))
			return -ENOMEM;
		tr->blocks[tr->n_blocks++] = (struct tracked_block){id, b};
	}
	return 0;
}

int tracer_read_blocks(struct tracer *tr)
{
	int fd = bpf_map__fd(tr->skel->maps.blocks_overflow);
	__u64 keys[BLOCKS_BATCH];
	struct memprof_block vals[BLOCKS_BATCH];
	__u32 cursor = 0;
	int first = 1, done = 0, rc;

	tr->n_blocks = 0;
	if ((rc = read_block_slots(tr)))
		return rc;
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

uint32_t tracer_n_stacks(const struct tracer *tr)
{
	uint32_t inner = tr->skel->bss->next_inner_slot;

	/* Ids up to the inner table's last used one; unused ids weigh nothing. */
	if (inner)
		return tr->max_stacks +
		       (inner > MEMPROF_INNER_STACKS ? MEMPROF_INNER_STACKS : inner);
	uint32_t n = tr->skel->data->next_stack_id;
	return n > tr->max_stacks ? tr->max_stacks : n;
}

uint64_t tracer_counter(const struct tracer *tr, enum memprof_counter c)
{
	return ((volatile __u64 *)tr->skel->bss->counters)[c];
}

void tracer_close(struct tracer *tr)
{
	tracer_detach(tr);
	if (tr->stacks)
		munmap((void *)tr->stacks, tr->stacks_bytes);
	if (tr->aggs)
		munmap((void *)tr->aggs, tr->aggs_bytes);
	if (tr->lifetimes)
		munmap((void *)tr->lifetimes, tr->lifetimes_bytes);
	if (tr->block_slots)
		munmap((void *)tr->block_slots, tr->block_slots_bytes);
	memprof_bpf__destroy(tr->skel);
	free(tr->blocks);
	memset(tr, 0, sizeof(*tr));
}
