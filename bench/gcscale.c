/*
 * gcscale: does a minor collection cost more when memprof tracks many old
 * blocks?  (Table 4 of make bench.)
 *
 * usage: gcscale OLD_BLOCKS [track|notrack]
 *
 * Builds OLD_BLOCKS one-field records kept alive in a major-heap array.
 * With "track" they are sampled at rate 1 with a tracker that keeps them
 * (every one gets a table entry), then sampling stops: the blocks stay
 * tracked, new allocations are not sampled.  With "notrack" memprof never
 * starts (the same heap, no entries).  Then minor_phase() runs a fixed
 * number of minor collections, each after filling part of the minor heap
 * with garbage.  Run under
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=minor_phase
 * its instruction count is the price of those collections.
 *
 * Prints: tracked N, last_minor_scan N (entries the last minor update
 * visited), heap_bytes_in_use N (malloc'ed bytes after the build phase,
 * for the per-entry memory figure: track minus notrack, divided by N).
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memprof.h"
#include "rt.h"

#define NOINLINE __attribute__((noinline))

enum { MINOR_COLLECTIONS = 50 };
enum { GARBAGE_RECORDS_PER_MINOR = 2000 };
enum { RECORD_FIELDS = 1 };
static const uint64_t SEED = 42;

static int keep(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	*out = RT_VAL_INT(1);
	return 0;
}

static int keep_promoted(void *arg, memprof_value minor, memprof_value *out)
{
	(void)arg;
	*out = minor;
	return 0;
}

NOINLINE static int minor_phase(void)
{
	rt_value garbage = RT_UNIT;
	int err = 0;

	RT_ROOTS(1, &garbage);
	for (int c = 0; !err && c < MINOR_COLLECTIONS; c++) {
		for (int i = 0; !err && i < GARBAGE_RECORDS_PER_MINOR; i++)
			err = rt_alloc(RECORD_FIELDS, 0, &garbage);
		rt_minor_gc();
	}
	RT_ROOTS_END();
	return err;
}

int main(int argc, char **argv)
{
	char *end;
	int track;

	if (argc != 3 || (strcmp(argv[2], "track") && strcmp(argv[2], "notrack"))) {
		fprintf(stderr, "usage: gcscale OLD_BLOCKS track|notrack\n");
		return 2;
	}
	track = !strcmp(argv[2], "track");
	errno = 0;
	unsigned long long n = strtoull(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || n == 0 || n > (1ull << 26)) {
		fprintf(stderr, "gcscale: bad OLD_BLOCKS '%s' (1 .. 67108864)\n", argv[1]);
		return 2;
	}
	if (rt_init(NULL)) {
		fprintf(stderr, "gcscale: rt_init failed\n");
		return 1;
	}
	memprof_tracker tracker = {
	    .alloc_minor = keep,
	    .alloc_major = keep,
	    .promote = keep_promoted,
	};
	rt_value slots = RT_UNIT, rec = RT_UNIT;
	int err;

	RT_ROOTS(2, &slots, &rec);
	err = rt_alloc_major(n, 0, &slots);
	memprof_set_seed(SEED);
	if (!err && track && memprof_start(1.0, 0, &tracker)) {
		fprintf(stderr, "gcscale: memprof_start failed\n");
		return 1;
	}
	for (unsigned long long i = 0; !err && i < n; i++) {
		err = rt_alloc(RECORD_FIELDS, 0, &rec);
		if (!err)
			rt_store_field(slots, i, rec);
	}
	if (track)
		memprof_stop();
	if (!err)
		err = rt_poll();
	rt_minor_gc();
	if (!err)
		err = rt_poll();
	struct mallinfo2 mi = mallinfo2();

	if (!err)
		err = minor_phase();
	if (err) {
		fprintf(stderr, "gcscale: allocation failed (error %d)\n", err);
		return 1;
	}
	memprof_stats st;
	memprof_get_stats(&st);
	RT_ROOTS_END();
	printf("tracked %llu\n", (unsigned long long)st.tracked);
	printf("last_minor_scan %llu\n", (unsigned long long)st.last_minor_scan);
	printf("heap_bytes_in_use %zu\n", mi.uordblks + mi.hblkhd);
	return 0;
}
