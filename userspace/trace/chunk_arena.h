/*
 * A table of the kernel side that grows with its use (bpf/memprof_maps.h):
 * chunks the loader creates as the kernel side needs them, each a
 * one-element mmapable array of chunk_bytes put into the table's array of
 * maps, and mapped one after the other into one range reserved at the
 * start, so the table reads as one array (base, bytes long).  Chunks not
 * mapped read as zeros: a range of anonymous pages stands in for them.
 * The frame arena (`frames`), the stack table (`stack_chunks`) and its
 * aggregates (`agg_chunks`) are each one.
 *
 * The chunks are in two parts: the main table's [0, main_chunks), created
 * as used (first_chunks at the start, ahead_chunks past the last one in
 * use at each chunk_arena_grow), and the inner table's [main_chunks,
 * + inner_chunks), all created at the start.
 *
 * A chunk is mapped only once it is in use (chunk_arena_map): the kernel
 * maps every page of a BPF array at once, so each mapped chunk counts
 * whole in the loader's RSS, and the chunks created ahead are mostly
 * unused.  Invariant: the loader maps the chunks holding what it reads
 * before reading it (tracer_sync: the chunks of the stack ids and frames
 * in use, counted from the same reads that give the stacks to read).
 */
#ifndef MEMPROF_CHUNK_ARENA_H
#define MEMPROF_CHUNK_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

struct chunk_arena {
	const char *name;      /* the chunks' map name ("frame_chunk") */
	int outer_fd;	       /* the array of maps */
	size_t chunk_bytes;    /* one chunk: whole pages */
	uint32_t main_chunks;  /* the main table's part: chunks [0, main_chunks) */
	uint32_t inner_chunks; /* the inner table's: [main_chunks, + inner_chunks) */
	uint32_t first_chunks; /* main chunks created at the start (at least) */
	uint32_t ahead_chunks; /* main chunks kept created past the last in use */
	uint32_t created_main; /* the main table's chunks created: [0, created_main) */
	uint32_t mapped_main;  /* of those, mapped: [0, mapped_main) */
	uint32_t mapped_inner; /* the inner table's mapped: [main_chunks, + mapped_inner) */
	/* chunk_arena_unmap: what chunk_arena_remap maps again */
	uint32_t unmapped_main, unmapped_inner;
	int *fds;	  /* per chunk, -1 until created */
	const void *base; /* the range: (main_chunks + inner_chunks) chunks */
	size_t bytes;	  /* its length */
};

/* What a chunk_arena is made of, for chunk_arena_open. */
struct chunk_arena_shape {
	const char *name;
	size_t chunk_bytes;
	uint32_t main_chunks, inner_chunks, first_chunks, ahead_chunks;
};

/*
 * Reserve the range and create the inner table's chunks and the first
 * first_chunks of the main table's: 0, or -errno (nothing is left open
 * then).
 */
int chunk_arena_open(struct chunk_arena *a, int outer_fd, const struct chunk_arena_shape *shape);
/* Create the main table's chunks up to ahead_chunks past used, its chunks
 * in use: 0, or -errno (those created so far stay). */
int chunk_arena_grow(struct chunk_arena *a, uint32_t used);
/* Map the main table's first main_used chunks (those created) and the inner
 * table's first inner_used: 0, or -errno (those mapped so far stay). */
int chunk_arena_map(struct chunk_arena *a, uint32_t main_used, uint32_t inner_used);
/* Unmap the chunks mapped (the range reads as zeros again), to be mapped
 * again by chunk_arena_remap, called even when this fails: 0, or -errno
 * (some chunks may stay mapped then). */
int chunk_arena_unmap(struct chunk_arena *a);
/* Map again what chunk_arena_unmap unmapped: 0, or -errno. */
int chunk_arena_remap(struct chunk_arena *a);
/* Kernel memory of the chunks created (fdinfo's memlock), in bytes. */
uint64_t chunk_arena_memory(const struct chunk_arena *a);
/* fdinfo's memlock of map fd: the kernel memory the map holds, in bytes. */
uint64_t map_fd_memlock(int fd);
void chunk_arena_close(struct chunk_arena *a);

#endif
