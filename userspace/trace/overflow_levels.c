/* The levels of the block map's overflow (overflow_levels.h). */
#include "trace/overflow_levels.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "trace/chunk_arena.h"

uint32_t overflow_levels_entries(const struct overflow_levels *o, uint32_t k)
{
	uint64_t n = (uint64_t)MEMPROF_OVERFLOW_FIRST << (2 * k);

	if (k + 1 >= MEMPROF_OVERFLOW_LEVELS || n > o->max_blocks)
		n = o->max_blocks;
	return (uint32_t)(n ? n : 1);
}

/* Create level k and put it into the array of maps (one update: a wait for
 * a kernel grace period, three times at the most): 0, or -errno. */
static int level_add(struct overflow_levels *o, uint32_t k)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "overflow_level", sizeof(__u64),
				sizeof(struct memprof_block), overflow_levels_entries(o, k), &opts);

	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(o->outer_fd, &k, &fd, BPF_ANY)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	o->fds[k] = fd;
	o->created = k + 1;
	return 0;
}

int overflow_levels_open(struct overflow_levels *o, int outer_fd, uint32_t max_blocks)
{
	int rc;

	memset(o, 0, sizeof(*o));
	o->outer_fd = outer_fd;
	o->max_blocks = max_blocks;
	for (uint32_t k = 0; k < MEMPROF_OVERFLOW_LEVELS; k++)
		o->fds[k] = -1;
	if ((rc = level_add(o, 0)))
		overflow_levels_close(o);
	return rc;
}

int overflow_levels_grow(struct overflow_levels *o, uint64_t n_overflow)
{
	uint64_t held = 0;

	if (o->created == 0 || o->created >= MEMPROF_OVERFLOW_LEVELS)
		return 0;
	for (uint32_t k = 0; k < o->created; k++)
		held += overflow_levels_entries(o, k);
	return 2 * n_overflow >= held ? level_add(o, o->created) : 0;
}

uint64_t overflow_levels_memory(const struct overflow_levels *o)
{
	uint64_t bytes = 0;

	for (uint32_t k = 0; k < o->created; k++)
		bytes += map_fd_memlock(o->fds[k]);
	return bytes;
}

void overflow_levels_close(struct overflow_levels *o)
{
	for (uint32_t k = 0; k < o->created && k < MEMPROF_OVERFLOW_LEVELS; k++)
		close(o->fds[k]);
	memset(o, 0, sizeof(*o));
	for (uint32_t k = 0; k < MEMPROF_OVERFLOW_LEVELS; k++)
		o->fds[k] = -1;
	o->outer_fd = -1;
}
