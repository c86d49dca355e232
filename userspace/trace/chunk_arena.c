/* Tables of the kernel side that grow with their use (chunk_arena.h). */
#include "trace/chunk_arena.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

/* The kernel's own "not supported" (an errno user space has no name for). */
#define KERNEL_ENOTSUPP 524

/* Create chunk i (not yet in the array of maps, not mapped): 0, or -errno. */
static int chunk_create(struct chunk_arena *a, uint32_t i)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, a->name, sizeof(__u32), (__u32)a->chunk_bytes,
				1, &opts);

	if (fd < 0)
		return -errno;
	a->fds[i] = fd;
	return 0;
}

/* Map chunk i, created, at its place in the range: 0, or -errno. */
static int chunk_map(struct chunk_arena *a, uint32_t i)
{
	void *at = (char *)a->base + (size_t)i * a->chunk_bytes;

	if (mmap(at, a->chunk_bytes, PROT_READ, MAP_SHARED | MAP_FIXED, a->fds[i], 0) == MAP_FAILED)
		return -errno;
	return 0;
}

/* Chunk i closed (it never was in the array of maps, nor mapped). */
static void chunk_drop(struct chunk_arena *a, uint32_t i)
{
	close(a->fds[i]);
	a->fds[i] = -1;
}

/* Whether err says the kernel has no batch update for an array of maps. */
static int batch_unsupported(int err)
{
	return err == -EINVAL || err == -KERNEL_ENOTSUPP || err == -EOPNOTSUPP;
}

/*
 * Create chunks [from, to), then put them into the array of maps: in one batch, since each update
 * of an array of maps waits for a grace period of the kernel's (about 12 ms here), the batch once;
 * one by one where the kernel has no batch update for it.  0, or -errno.  *added: how many of them,
 * from `from` on, are in the array of maps (they stay: the kernel side may store into them); the
 * others are dropped.
 */
static int chunks_add(struct chunk_arena *a, uint32_t from, uint32_t to, uint32_t *added)
{
	uint32_t n = to - from, done = 0;
	__u32 keys[64];
	int fds[64], rc = 0;

	*added = 0;
	if (n > 64) {
		uint32_t more = 0;

		rc = chunks_add(a, from, from + 64, added);
		if (!rc)
			rc = chunks_add(a, from + 64, to, &more);
		*added += more;
		return rc;
	}
	for (uint32_t i = from; i < to && !rc; i++)
		rc = chunk_create(a, i);
	if (!rc) {
		for (uint32_t i = from; i < to; i++) {
			keys[i - from] = i;
			fds[i - from] = a->fds[i];
		}
		done = n;
		if (n && bpf_map_update_batch(a->outer_fd, keys, fds, &done, NULL)) {
			rc = -errno;
			if (done > n)
				done = 0;
		}
		for (; batch_unsupported(rc) && done < n; done++)
			if (bpf_map_update_elem(a->outer_fd, &keys[done], &fds[done], BPF_ANY))
				break;
		if (done == n)
			rc = 0;
		else if (batch_unsupported(rc))
			rc = -errno;
	}
	for (uint32_t i = from + done; i < to; i++)
		if (a->fds[i] >= 0)
			chunk_drop(a, i);
	*added = done;
	return rc;
}

int chunk_arena_open(struct chunk_arena *a, int outer_fd, const struct chunk_arena_shape *shape)
{
	uint32_t all = shape->main_chunks + shape->inner_chunks;
	uint32_t added;
	void *range;
	int rc = 0;

	memset(a, 0, sizeof(*a));
	a->name = shape->name;
	a->outer_fd = outer_fd;
	a->chunk_bytes = shape->chunk_bytes;
	a->main_chunks = shape->main_chunks;
	a->inner_chunks = shape->inner_chunks;
	a->first_chunks = shape->first_chunks;
	a->ahead_chunks = shape->ahead_chunks;
	if (a->chunk_bytes % 4096) /* not whole pages: cannot be mapped side by side */
		return -EINVAL;
	a->fds = malloc((all ? all : 1) * sizeof(*a->fds));
	if (!a->fds)
		return -ENOMEM;
	for (uint32_t i = 0; i < all; i++)
		a->fds[i] = -1;
	a->bytes = (size_t)all * a->chunk_bytes;
	/* Anonymous pages read as zeros and take no memory until written;
	 * nothing writes them. */
	range = mmap(NULL, a->bytes ? a->bytes : a->chunk_bytes, PROT_READ,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (range == MAP_FAILED) {
		rc = -errno;
		free(a->fds);
		memset(a, 0, sizeof(*a));
		return rc;
	}
	a->base = range;
	rc = chunks_add(a, a->main_chunks, all, &added);
	if (!rc)
		rc = chunk_arena_grow(a, 0);
	if (rc)
		chunk_arena_close(a);
	return rc;
}

int chunk_arena_grow(struct chunk_arena *a, uint32_t used)
{
	uint64_t want = (uint64_t)used + a->ahead_chunks;

	if (want < a->first_chunks)
		want = a->first_chunks;
	if (want > a->main_chunks)
		want = a->main_chunks;
	if (a->created_main < want) {
		uint32_t added;
		int rc = chunks_add(a, a->created_main, (uint32_t)want, &added);

		/* Those in the array of maps count, whatever failed after them. */
		a->created_main += added;
		return rc;
	}
	return 0;
}

int chunk_arena_map(struct chunk_arena *a, uint32_t main_used, uint32_t inner_used)
{
	int rc = 0;

	if (main_used > a->created_main)
		main_used = a->created_main;
	if (inner_used > a->inner_chunks)
		inner_used = a->inner_chunks;
	for (; a->mapped_main < main_used && !rc; a->mapped_main += !rc)
		rc = chunk_map(a, a->mapped_main);
	for (; a->mapped_inner < inner_used && !rc; a->mapped_inner += !rc)
		rc = chunk_map(a, a->main_chunks + a->mapped_inner);
	return rc;
}

/* Anonymous pages again over chunks [from, from + n): 0, or -errno. */
static int chunks_unmap(struct chunk_arena *a, uint32_t from, uint32_t n)
{
	void *at = (char *)a->base + (size_t)from * a->chunk_bytes;

	if (n && mmap(at, (size_t)n * a->chunk_bytes, PROT_READ,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
		return -errno;
	return 0;
}

int chunk_arena_unmap(struct chunk_arena *a)
{
	int rc = chunks_unmap(a, 0, a->mapped_main);

	if (rc)
		return rc;
	a->unmapped_main += a->mapped_main;
	a->mapped_main = 0;
	rc = chunks_unmap(a, a->main_chunks, a->mapped_inner);
	if (rc)
		return rc;
	a->unmapped_inner += a->mapped_inner;
	a->mapped_inner = 0;
	return 0;
}

int chunk_arena_remap(struct chunk_arena *a)
{
	int rc = chunk_arena_map(a, a->unmapped_main, a->unmapped_inner);

	if (!rc)
		a->unmapped_main = a->unmapped_inner = 0;
	return rc;
}

uint64_t map_fd_memlock(int fd)
{
	char path[64], line[128];
	uint64_t bytes = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "memlock:", 8))
			bytes = strtoull(line + 8, NULL, 10);
	fclose(f);
	return bytes;
}

uint64_t chunk_arena_memory(const struct chunk_arena *a)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; a->fds && i < a->main_chunks + a->inner_chunks; i++)
		if (a->fds[i] >= 0)
			bytes += map_fd_memlock(a->fds[i]);
	return bytes;
}

void chunk_arena_close(struct chunk_arena *a)
{
	if (a->base)
		munmap((void *)a->base, a->bytes ? a->bytes : a->chunk_bytes);
	for (uint32_t i = 0; a->fds && i < a->main_chunks + a->inner_chunks; i++)
		if (a->fds[i] >= 0)
			close(a->fds[i]);
	free(a->fds);
	memset(a, 0, sizeof(*a));
	a->outer_fd = -1;
}
