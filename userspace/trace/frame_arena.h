/*
 * The frame arena of one tracer (bpf/memprof_maps.h): chunks the loader
 * creates as the kernel side needs them, each a one-element mmapable
 * array of struct memprof_frame_chunk put into the `frames` array of
 * maps, and mapped one after the other into one range reserved at the
 * start, so the arena reads as one array of frames (frames[i], i below
 * n_frames).  Chunks not created read as zeros: a range of anonymous
 * pages stands in for them.
 *
 * Invariant: a chunk is mapped before it is in the array of maps, so every
 * frame the kernel side stores is in a mapped chunk.
 */
#ifndef MEMPROF_FRAME_ARENA_H
#define MEMPROF_FRAME_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

struct frame_arena {
	int outer_fd;	       /* the `frames` array of maps */
	uint32_t main_chunks;  /* the stack table's part: chunks [0, main_chunks) */
	uint32_t inner_chunks; /* the inner table's: [main_chunks, + inner_chunks) */
	uint32_t created_main; /* the stack table's chunks created: [0, created_main) */
	int *fds;	       /* per chunk, -1 until created */
	const __u64 *frames;   /* the range: (main_chunks + inner_chunks) chunks */
	size_t bytes;	       /* its length */
};

/*
 * Reserve the range and create the inner table's chunks and the first
 * MEMPROF_FRAME_CHUNKS_FIRST of the stack table's: 0, or -errno (nothing
 * is left open then).
 */
int frame_arena_open(struct frame_arena *a, int outer_fd, uint32_t main_chunks,
		     uint32_t inner_chunks);
/* Create the stack table's chunks up to MEMPROF_FRAME_CHUNKS_AHEAD past
 * used, its chunks in use: 0, or -errno (those created so far stay). */
int frame_arena_grow(struct frame_arena *a, uint32_t used);
/* Frames the range holds (created or not). */
uint64_t frame_arena_frames(const struct frame_arena *a);
void frame_arena_close(struct frame_arena *a);

#endif
