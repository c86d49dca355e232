/*
 * memprof debug hooks: exported by libmemprof for tests, not for production
 * use.  Internal-but-exported: the names may change with the core.
 */
#ifndef MEMPROF_DEBUG_H
#define MEMPROF_DEBUG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Cap the tracked-block table at max_entries entries (0: no cap, the
 * default).  When the table is full and cannot grow, a new sample is
 * dropped and counted in memprof_stats.dropped and in the probe control
 * block's dropped counter, exactly as when realloc fails.
 */
void memprof_debug_set_table_limit(size_t max_entries);

/* Check every table invariant (see docs/design.md).  0, or EFAULT. */
int memprof_debug_check(void);

/* The table's indexes, for tests of the young-suffix argument. */
struct memprof_debug_indexes {
	size_t len, cap, young, callback, delete;
};
void memprof_debug_get_indexes(struct memprof_debug_indexes *out);

#ifdef __cplusplus
}
#endif

#endif
