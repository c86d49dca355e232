/*
 * libFuzzer target: the loader's /proc/PID/maps parser (procmaps.c) on
 * arbitrary text, then lookups in what it kept.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "symbols/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps m;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		abort();
	if (proc_maps_parse(f, -1, &m) == 0) {
		for (size_t i = 0; i < m.n; i++) {
			const struct map_region *r = &m.regions[i];

			if (!r->path || !r->open_path || r->end < r->start)
				abort();
			(void)proc_maps_find(&m, r->start);
			(void)proc_maps_first_of(&m, r->path);
		}
		proc_maps_free(&m);
	}
	fclose(f);
	return 0;
}
