/*
 * rt: the reference generational runtime, memprof's first host.
 *
 * Compact but real: a bump-allocated minor heap (allocating downwards) with
 * the memprof trigger folded into its limit check, copying promotion into a
 * mark-and-sweep major heap, explicit roots, a write barrier with a
 * remembered set, combined allocation, bulk unmarshaling (intern), custom
 * blocks with finalizers and virtual size, and threads under one runtime
 * lock with blocking sections (the systhreads model).
 *
 * Values: a value with its low bit set is an immediate integer; any other
 * value is a pointer to the first field of a block, preceded by a one-word
 * header.  Fields are values.  A block allocated by rt_alloc* has every
 * field set to RT_UNIT.  Only values are scanned: a C local holding a
 * pointer into the heap must be registered as a root (RT_ROOTS) across any
 * call that may allocate.
 *
 * Every function must be called by a thread registered with the runtime
 * (the one that called rt_init, or one made by rt_thread_create) and holding
 * the runtime lock, which such a thread holds except inside a blocking
 * section.
 *
 * Errors: functions returning int return 0 or an error code: ENOMEM, or
 * the nonzero code a memprof callback returned (its "exception").
 */
#ifndef RT_H
#define RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uintptr_t rt_value;

#define RT_VAL_INT(n) ((rt_value)(((uintptr_t)(intptr_t)(n) << 1) | 1u))
#define RT_INT_VAL(v) ((intptr_t)(v) >> 1)
#define RT_IS_INT(v) (((v)&1u) != 0)
#define RT_UNIT RT_VAL_INT(0)

/* Largest block the minor heap takes; larger ones go to the major heap. */
#define RT_MAX_YOUNG_WOSIZE 256
/* Tags at or above this hold no values (not scanned). */
#define RT_NO_SCAN_TAG 251
#define RT_CUSTOM_TAG 255

typedef struct rt_config {
	size_t minor_heap_words; /* 0: 256 Ki words */
} rt_config;

/* Set up the runtime and register the calling thread.  0 or ENOMEM. */
int rt_init(const rt_config *config);
/* Free everything.  Only the main thread may remain. */
void rt_shutdown(void);
/* Resize the minor heap (empties it first). */
int rt_set_minor_heap_words(size_t words);

/* ---- Blocks ---- */
size_t rt_wosize(rt_value block);
unsigned rt_tag(rt_value block);
rt_value rt_field(rt_value block, size_t i);
/* Store with the write barrier. */
void rt_store_field(rt_value block, size_t i, rt_value v);
int rt_is_young(rt_value v);

/* ---- Allocation ---- */
/* A block of wosize >= 1 fields: young if wosize <= RT_MAX_YOUNG_WOSIZE. */
int rt_alloc(size_t wosize, unsigned tag, rt_value *out);
/* A block allocated directly in the major heap. */
int rt_alloc_major(size_t wosize, unsigned tag, rt_value *out);
/*
 * Combined allocation: n young blocks in one bump, as a compiler does for
 * an expression that builds several blocks.  out[i] gets block i.
 */
int rt_alloc_comb(size_t n, const size_t *wosizes, unsigned tag, rt_value *out);
/*
 * A custom block holding a C pointer (rt_custom_data) with mem_bytes of
 * out-of-heap memory.  finalize, if not NULL, runs when the block dies.
 * Sampled by its virtual size, mem_bytes.
 */
int rt_alloc_custom(void *data, size_t mem_bytes, void (*finalize)(void *data), rt_value *out);
void *rt_custom_data(rt_value block);

/* Serialize a value graph (a tree; sharing is duplicated). malloc'ed. */
int rt_marshal(rt_value v, void **data_out, size_t *len_out);
/* Rebuild it in one bulk allocation (memprof source MARSHAL): in the minor
 * heap if all its blocks, headers included, fit in RT_MAX_YOUNG_WOSIZE + 1
 * words (as OCaml does), else in the major heap. */
int rt_unmarshal(const void *data, size_t len, rt_value *out);

/* ---- Roots ----
 * Register the addresses of C variables holding values.  Frames nest:
 *   rt_value a = RT_UNIT, b = RT_UNIT;
 *   RT_ROOTS(2, &a, &b);
 *   ...
 *   RT_ROOTS_END();
 */
void rt_roots_push(size_t n, rt_value **roots);
void rt_roots_pop(void);
#define RT_ROOTS(n, ...)                                                                           \
	do {                                                                                       \
		rt_value *rt_roots__[] = {__VA_ARGS__};                                            \
		rt_roots_push((n), rt_roots__);                                                    \
	} while (0)
#define RT_ROOTS_END() rt_roots_pop()
/* A global root, alive until unregistered. */
void rt_register_global(rt_value *root);
void rt_unregister_global(rt_value *root);

/* ---- Collections, safe points ---- */
void rt_minor_gc(void);
/* Minor collection, then a full mark and sweep of the major heap. */
void rt_major_gc(void);
/* A safe point: runs postponed memprof callbacks; returns the first error. */
int rt_poll(void);

typedef struct rt_stats {
	uint64_t minor_collections;
	uint64_t major_collections;
	uint64_t minor_words; /* words allocated in the minor heap, headers included */
	uint64_t promoted_words;
	uint64_t major_words;	   /* words allocated directly in the major heap */
	uint64_t major_heap_words; /* current size of the major heap */
} rt_stats;
void rt_get_stats(rt_stats *out);

/* ---- Threads (one runtime lock, systhreads model) ---- */
typedef struct rt_thread rt_thread;
int rt_thread_create(rt_thread **out, void *(*fn)(void *arg), void *arg);
/* Joins inside a blocking section. */
int rt_thread_join(rt_thread *t, void **ret);
/* Exit the calling (non-main) thread; legal inside a memprof callback. */
_Noreturn void rt_thread_exit(void *ret);
void rt_enter_blocking_section(void);
void rt_leave_blocking_section(void);
void rt_yield(void);

#ifdef __cplusplus
}
#endif

#endif
