/*
 * Call stacks for the malloc host: libunwind's unw_backtrace (local-only
 * build) walks the DWARF call frame information, so stacks are complete
 * through code built without frame pointers (glibc, libstdc++).
 *
 * The frames of this library (the interposer and the core linked into it)
 * and of libunwind sit at the top of every capture: they are recognised by
 * address and skipped, so the first frame returned is the program's (or the
 * library's, e.g. operator new) call to malloc.
 */
#define UNW_LOCAL_ONLY
#include <link.h>
#include <libunwind.h>
#include <string.h>

#include "preload.h"

/* Frames captured beyond what is asked, to cover the skipped top frames. */
#define CALLSTACK_SKIP_SLACK 24
/* Longest stack handed to the core. */
#define CALLSTACK_MAX 256

struct code_range {
	uintptr_t start, end;
};

static struct code_range self_code, unwinder_code;

struct range_query {
	uintptr_t addr;
	struct code_range *out;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct range_query *q = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (s < lo)
			lo = s;
		if (s + ph->p_memsz > hi)
			hi = s + ph->p_memsz;
	}
	if (q->addr >= lo && q->addr < hi) {
		q->out->start = lo;
		q->out->end = hi;
		return 1;
	}
	return 0;
}

static void code_range_of(const void *addr, struct code_range *out)
{
	struct range_query q = {.addr = (uintptr_t)addr, .out = out};

	dl_iterate_phdr(find_object, &q);
}

void callstack_init(void)
{
	code_range_of((const void *)callstack_init, &self_code);
	code_range_of((const void *)unw_backtrace, &unwinder_code);
}

static int in_range(const struct code_range *r, uintptr_t ip)
{
	return ip - r->start < r->end - r->start;
}

size_t callstack_capture_user(uintptr_t *buf, size_t max)
{
	void *frames[CALLSTACK_MAX + CALLSTACK_SKIP_SLACK];

	if (max > CALLSTACK_MAX)
		max = CALLSTACK_MAX;
	if (max == 0)
		return 0;
	int n = unw_backtrace(frames, (int)(max + CALLSTACK_SKIP_SLACK));
	int first = 0;

	while (first < n && (in_range(&self_code, (uintptr_t)frames[first]) ||
			     in_range(&unwinder_code, (uintptr_t)frames[first])))
		first++;
	size_t len = (size_t)(n - first);
	if (len > max)
		len = max;
	memcpy(buf, frames + first, len * sizeof(uintptr_t));
	return len;
}
