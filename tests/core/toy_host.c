#include <stdlib.h>
#include <string.h>

#include "toy_host.h"

#define WORD sizeof(uintptr_t)

struct toy_host toy;

int toy_is_young(memprof_value v)
{
	return v >= toy.young_start && v < toy.young_end;
}

static int toy_young_survived(memprof_value v, memprof_value *moved)
{
	*moved = v + toy.moved_offset;
	if (toy.survive < 0)
		return rand_r(&toy.rand_seed) & 1;
	return toy.survive;
}

static int toy_major_is_dead(memprof_value v)
{
	(void)v;
	if (toy.major_dead < 0)
		return rand_r(&toy.rand_seed) & 1;
	return toy.major_dead;
}

static void toy_update_young_limit(void)
{
	toy.limit_updates++;
	toy.trigger = memprof_renew_minor_sample(toy.young_ptr, toy.young_start);
}

static void toy_request_safe_point(void)
{
	toy.safe_point_requests++;
}

static const memprof_host_ops toy_ops = {
    .is_young = toy_is_young,
    .young_survived = toy_young_survived,
    .major_is_dead = toy_major_is_dead,
    .update_young_limit = toy_update_young_limit,
    .request_safe_point = toy_request_safe_point,
};

void toy_init(void)
{
	memset(&toy, 0, sizeof(toy));
	toy.young_start = (uintptr_t)toy.heap;
	toy.young_end = (uintptr_t)(toy.heap + TOY_MINOR_WORDS);
	toy.young_ptr = toy.young_end;
	toy.survive = 1;
	toy.moved_offset = 1 << 20; /* promoted copies live elsewhere */
	memprof_host_init(&toy_ops);
	toy.trigger = memprof_renew_minor_sample(toy.young_ptr, toy.young_start);
}

void toy_set_own_code(uintptr_t start, uintptr_t end)
{
	memprof_host_ops ops = toy_ops;

	ops.own_code[0] = (memprof_code_range){start, end};
	memprof_host_init(&ops);
}

static void count_root(memprof_value *root, void *ctx)
{
	(*(size_t *)ctx)++;
	if (toy_is_young(*root))
		*root += toy.moved_offset; /* promoted with its block */
}

size_t toy_minor_gc(void)
{
	size_t roots = 0;

	memprof_scan_young_roots(count_root, &roots);
	memprof_minor_update();
	toy.young_ptr = toy.young_end;
	toy.trigger = memprof_renew_minor_sample(toy.young_ptr, toy.young_start);
	return roots;
}

struct toy_request {
	size_t words;
};

static uintptr_t toy_reserve(void *ctx)
{
	struct toy_request *req = ctx;

	if (toy.safe_point_in_reserve)
		memprof_run_postponed();

	if ((toy.young_ptr - toy.young_start) / WORD < req->words)
		toy_minor_gc();
	toy.young_ptr -= req->words * WORD;
	return toy.young_ptr;
}

int toy_alloc(size_t n, const size_t *wosizes, uintptr_t *base_out)
{
	struct toy_request req = {0};

	for (size_t i = 0; i < n; i++)
		req.words += wosizes[i] + 1;
	uintptr_t new_ptr = toy.young_ptr - req.words * WORD;
	if (toy.young_ptr - toy.young_start >= req.words * WORD && new_ptr >= toy.trigger) {
		toy.young_ptr = new_ptr;
		*base_out = new_ptr;
		return 0;
	}
	if (toy.young_ptr - toy.young_start < req.words * WORD) {
		toy_minor_gc();
		new_ptr = toy.young_ptr - req.words * WORD;
		if (new_ptr >= toy.trigger) {
			toy.young_ptr = new_ptr;
			*base_out = new_ptr;
			return 0;
		}
	}
	int err = memprof_track_young(toy.young_ptr, n, wosizes, toy_reserve, &req, base_out);
	toy.trigger = memprof_young_trigger();
	return err;
}
