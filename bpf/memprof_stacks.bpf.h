/*
 * The stack table's hashing and its frame arena (memprof_maps.h: struct
 * memprof_stack, the arena's chunks): a part of memprof.bpf.c, included
 * there after the maps it uses, never on its own.
 */
#ifndef MEMPROF_STACKS_BPF_H
#define MEMPROF_STACKS_BPF_H

/* Multiplier of the second hash (another odd constant, of the digits of pi). */
#define STACK_CHECK_MULT 0xc90fdaa22168c235ull

/* The two hashes of a stack's first frames (memprof_maps.h, struct memprof_stack). */
struct stack_hashes {
	__u64 key, check;
};

/*
 * The hashes of a stack's first len frames, computed by one bpf_loop over
 * them, STACK_WALK_STEP frames a step: the verifier checks the step once,
 * not once per frame and per caller, and a step's call is paid once per
 * STACK_WALK_STEP frames.
 */
#define STACK_WALK_STEP 4
struct stack_walk {
	const struct stack_scratch *st;
	__u32 len;
	struct stack_hashes h;
};

static __always_inline void hashes_start(struct stack_hashes *h, __u32 len, __u32 flags)
{
	h->key = (len * STACK_HASH_MULT + 1) ^ ((__u64)flags << 56);
	h->check = (len * STACK_CHECK_MULT + 3) ^ ((__u64)flags << 48);
}

static __always_inline void hashes_add(struct stack_hashes *h, __u64 pc)
{
	h->key = (h->key ^ pc) * STACK_HASH_MULT;
	h->key ^= h->key >> 29;
	h->check = (h->check + pc) * STACK_CHECK_MULT;
	h->check ^= h->check >> 31;
}

static long stack_walk_step(__u32 i, void *ctx)
{
	struct stack_walk *w = ctx;

#pragma unroll
	for (__u32 k = 0; k < STACK_WALK_STEP; k++) {
		__u32 j = i * STACK_WALK_STEP + k;

		if (j >= w->len || j >= MEMPROF_STACK_DEPTH)
			return 1;
		hashes_add(&w->h, w->st->pcs[j]);
	}
	return 0;
}

/* The two hashes of (st's first len frames, flags). */
static __always_inline void stack_hashes_of(struct stack_hashes *h, const struct stack_scratch *st,
					    __u32 len, __u32 flags)
{
	struct stack_walk w = {.st = st, .len = len};

	hashes_start(&w.h, len, flags);
	bpf_loop((len + STACK_WALK_STEP - 1) / STACK_WALK_STEP, stack_walk_step, &w, 0);
	*h = w.h;
}

/* Stack id's entry in the stack table, or NULL if its chunk is not created. */
static __always_inline struct memprof_stack *stack_entry(__u32 id)
{
	__u32 key = id / MEMPROF_STACK_CHUNK_IDS, zero = 0;
	void *chunk = bpf_map_lookup_elem(&stack_chunks, &key);
	struct memprof_stack_chunk *c = chunk ? bpf_map_lookup_elem(chunk, &zero) : NULL;

	return c ? &c->stacks[id & (MEMPROF_STACK_CHUNK_IDS - 1)] : NULL;
}

/* Stack id's aggregates, or NULL if its chunk is not created. */
static __always_inline struct memprof_stack_agg *stack_agg(__u32 id)
{
	__u32 key = id / MEMPROF_STACK_CHUNK_IDS, zero = 0;
	void *chunk = bpf_map_lookup_elem(&agg_chunks, &key);
	struct memprof_agg_chunk *c = chunk ? bpf_map_lookup_elem(chunk, &zero) : NULL;

	return c ? &c->aggs[id & (MEMPROF_STACK_CHUNK_IDS - 1)] : NULL;
}

/* Whether stack id's chunks (its entry and its aggregates) are created. */
static __always_inline int stack_chunks_created(__u32 id)
{
	__u32 key = id / MEMPROF_STACK_CHUNK_IDS;

	return bpf_map_lookup_elem(&stack_chunks, &key) && bpf_map_lookup_elem(&agg_chunks, &key);
}

/* The known stack's id if its check is the sample's; else a collision. */
static __always_inline __u32 stacks_check(const struct memprof_stack_ref *known, __u64 check)
{
	if (known->check == (__u32)check)
		return known->id;
	count(MEMPROF_CNT_DROP_STACK_COLLIDE);
	return MEMPROF_STACK_UNKNOWN;
}

/*
 * Reserve len frames (1 <= len <= MEMPROF_STACK_DEPTH) of the arena's
 * chunks [base, base + n_chunks) through the counter *next, and write st's
 * first len into them (memprof_maps.h).  Their index in the arena, -1 when
 * the chunks are used up, -2 when the chunk is not created yet.
 */
/* Chunk key of the frame arena, or NULL if the loader has not created it. */
static __always_inline struct memprof_frame_chunk *frame_chunk(__u32 key)
{
	__u32 zero = 0;
	void *chunk = bpf_map_lookup_elem(&frames, &key);

	return chunk ? bpf_map_lookup_elem(chunk, &zero) : NULL;
}

static __always_inline __s64 frames_store(const struct stack_scratch *st, __u32 len, __u32 *next,
					  __u32 base, __u32 n_chunks)
{
	__u32 at, chunk, off, key;
	struct memprof_frame_chunk *c;

	if (*next >= n_chunks * MEMPROF_FRAME_CHUNK)
		return -1;
	/* Nothing reserved where the loader has not created the chunk yet. */
	if (!frame_chunk(base + *next / MEMPROF_FRAME_CHUNK))
		return -2;
	at = __sync_fetch_and_add(next, len);
	chunk = at / MEMPROF_FRAME_CHUNK;
	off = at % MEMPROF_FRAME_CHUNK;
	/* For the verifier, which does not bound a remainder by a divisor
	 * other than a power of two (the compiler would drop the check). */
	asm volatile("" : "+r"(off));
	if (chunk >= n_chunks || off >= MEMPROF_FRAME_CHUNK)
		return -1;
	key = base + chunk;
	/* NULL: another CPU reserved before this one, into the next chunk,
	 * not created yet; those len frames stay unused. */
	c = frame_chunk(key);
	if (!c)
		return -2;
	bpf_probe_read_kernel(&c->pcs[off], (len & (2 * MEMPROF_STACK_DEPTH - 1)) * sizeof(__u64),
			      st->pcs);
	return (__s64)key * MEMPROF_CHUNK_FRAMES + off;
}

/*
 * Stack id of (st's first len PCs, flags), stored on first sight in the
 * id range [first, limit) through the counter *next (ids first + *next),
 * known by its hash in ids (stack_ids, or inner_stack_ids for the inner table),
 * its frames in the arena's chunks [frame_base, + n_frame_chunks) through
 * *frame_next; MEMPROF_STACK_UNKNOWN if it cannot be, with *full set
 * when the range or the frames are used up (2: the frames; 3: the chunk
 * its frames would start in, or the chunk of its id, is not created yet).
 */
static __always_inline __u32 stacks_intern(void *ids, const struct stack_scratch *st,
					   const struct stack_hashes *hs, __u32 len, __u32 flags,
					   __u32 *next, __u32 first, __u32 limit, __u32 *frame_next,
					   __u32 frame_base, __u32 n_frame_chunks, int *full)
{
	__u64 h = hs->key;
	struct memprof_stack_ref *known, ref;
	__u32 id;
	struct memprof_stack *slot;
	__s64 at;

	*full = 0;
	known = bpf_map_lookup_elem(ids, &h);
	if (known)
		return stacks_check(known, hs->check);
	if (first + *next >= limit) {
		*full = 1;
		return MEMPROF_STACK_UNKNOWN;
	}
	if (len > MEMPROF_STACK_DEPTH)
		len = MEMPROF_STACK_DEPTH;
	/* Nothing taken where the loader has not created the id's chunks yet. */
	if (!stack_chunks_created(first + *next)) {
		*full = 3;
		return MEMPROF_STACK_UNKNOWN;
	}
	/* The frames before the id (memprof_maps.h's invariant). */
	at = frames_store(st, len, frame_next, frame_base, n_frame_chunks);
	if (at < 0) {
		*full = at == -2 ? 3 : 2;
		return MEMPROF_STACK_UNKNOWN;
	}
	id = first + __sync_fetch_and_add(next, 1);
	if (id >= limit) {
		*full = 1;
		return MEMPROF_STACK_UNKNOWN;
	}
	/* NULL: another CPU took the ids before this one, past the last
	 * chunk created; this id stays unused (memprof_maps.h). */
	slot = stack_entry(id);
	if (!slot || !stack_chunks_created(id)) {
		*full = 3;
		return MEMPROF_STACK_UNKNOWN;
	}
	/* The frames first, then len: the slot is published by the hash insert. */
	slot->first_frame = (__u32)at;
	slot->flags = flags;
	slot->check = hs->check;
	slot->len = len;
	ref.id = id;
	ref.check = (__u32)hs->check;
	if (bpf_map_update_elem(ids, &h, &ref, BPF_NOEXIST) == 0)
		return id;
	/* Another CPU interned it first (our slot stays unused), or full. */
	known = bpf_map_lookup_elem(ids, &h);
	if (known)
		return stacks_check(known, hs->check);
	count(MEMPROF_CNT_DROP_STACK_HASH);
	return MEMPROF_STACK_UNKNOWN;
}

#endif
