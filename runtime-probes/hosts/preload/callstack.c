/*
 * Call stacks for the malloc host: the core unwinds (libunwind, DWARF, so
 * stacks are complete through code built without frame pointers, such as
 * glibc and libstdc++) and drops the frames at the top that lie in the
 * profiler's own code.  The malloc host's own code is this whole shared
 * object (the interposer and the core linked into it): its executable
 * range, found here, is the host's own_code.  So the first frame is the
 * program's (or a library's, e.g. operator new) call to malloc.
 */
#include <link.h>

#include "memprof_host.h"
#include "preload.h"

struct range_query {
	uintptr_t addr;
	memprof_code_range *out;
};

/* The executable segments of the object holding q->addr. */
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

void callstack_own_code(memprof_code_range *out)
{
	struct range_query q = {.addr = (uintptr_t)callstack_own_code, .out = out};

	out->start = out->end = 0;
	dl_iterate_phdr(find_object, &q);
}
