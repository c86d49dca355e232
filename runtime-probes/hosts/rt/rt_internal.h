/*
 * rt internals shared by the files of runtime-probes/hosts/rt/: block headers,
 * the one runtime state, growable word vectors, and the entry points each
 * file offers the others.  Not a public header.
 */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"
#include "rt_memprof.h"

#define RT_WORD ((size_t)sizeof(rt_value))

/*
 * Header word: wosize in bits 10.., colour in bits 8-9, tag in bits 0-7.
 * A young block whose header is 0 was promoted: its field 0 holds the new
 * address (forwarding pointer).  Real headers are never 0 (wosize >= 1).
 */
#define RT_HDR(v) (((uintptr_t *)(v))[-1])
#define RT_MAKE_HDR(wosize, color, tag)                                                            \
	(((uintptr_t)(wosize) << 10) | ((uintptr_t)(color) << 8) | (uintptr_t)(tag))
#define RT_HDR_WOSIZE(h) ((size_t)((h) >> 10))
#define RT_HDR_TAG(h) ((unsigned)((h)&0xffu))
#define RT_HDR_COLOR(h) ((unsigned)(((h) >> 8) & 3u))
#define RT_WHITE 0u /* major block not (yet) marked */
#define RT_BLACK 3u /* major block marked live */
#define RT_FORWARDED 0u
#define RT_FIELDS(v) ((rt_value *)(v))

/* Custom block layout: field 0 the C pointer, field 1 the finalizer, field 2
 * its out-of-heap bytes (an integer value). */
#define RT_CUSTOM_WOSIZE 3
#define RT_CUSTOM_MEM_FIELD 2

/* Default minor heap, and the smallest one rt_set_minor_heap_words takes. */
#define RT_DEFAULT_MINOR_WORDS ((size_t)256 * 1024)
#define RT_MIN_MINOR_WORDS ((size_t)4096)
/* A major collection runs when the major heap (plus the out-of-heap words of
 * the custom blocks promoted since the last one) has grown past
 * max(RT_MAJOR_MIN_WORDS, live words after the last one * RT_MAJOR_GROWTH). */
#define RT_MAJOR_MIN_WORDS ((size_t)1 << 20)
#define RT_MAJOR_GROWTH 2

/* A growable array of words (addresses or values). */
struct rt_vec {
	uintptr_t *items;
	size_t len;
	size_t cap;
};
int rt_vec_push(struct rt_vec *v, uintptr_t x); /* 0 or ENOMEM */
void rt_vec_free(struct rt_vec *v);

struct rt_thread {
	pthread_t tid;
	struct rt_thread *next; /* list of registered threads */
	struct rt_vec roots;	/* addresses of rooted C variables */
	struct rt_vec frames;	/* number of roots in each pushed frame */
	void *(*fn)(void *arg);
	void *arg;
	int is_main;
};

struct rt_state {
	int initialized;
	/* Minor heap: [young_start, young_end), allocated downwards. */
	uintptr_t *minor_base;
	size_t minor_words;
	uintptr_t young_start;
	uintptr_t young_end;
	uintptr_t young_ptr;
	uintptr_t young_limit;	     /* atomic: request_safe_point may write it */
	uintptr_t young_trigger;     /* memprof's next sampled word */
	int safe_point_requested;    /* atomic */
	struct rt_vec ref_table;     /* major fields that may hold young values */
	struct rt_vec young_customs; /* custom blocks allocated young */
	/* Major heap: the block store is private to major_alloc.c. */
	size_t major_live_after_gc;
	size_t custom_pressure_words; /* out-of-heap words promoted since */
	struct rt_vec mark_stack;
	struct rt_vec globals;
	struct rt_thread *threads;
	int in_gc;
	rt_stats stats;
};

extern struct rt_state rt;
extern _Thread_local struct rt_thread *rt_self;

_Noreturn void rt_fatal(const char *what);

static inline int rt_is_young_value(rt_value v)
{
	return !RT_IS_INT(v) && v > rt.young_start && v < rt.young_end;
}

/* runtime.c */
void rt_update_young_limit(void); /* limit = max(gc, memprof trigger), or a safe point */
void rt_renew_minor_sample(void); /* fresh trigger, then the limit */
void rt_request_safe_point(void);
int rt_safe_point(void); /* run postponed callbacks, return the error */

/* minor.c */
int rt_minor_init(size_t words);
void rt_minor_free(void);
void rt_remember_field(rt_value *field);
/* Allocate young blocks (one bump); runs the safe point and sampling. */
int rt_alloc_young(size_t n, const size_t *wosizes, unsigned tag, rt_value *out);
/* One bump of whsize young words, unsampled, no safe point (0: too big). */
uintptr_t rt_young_alloc_raw(size_t whsize);

/* major_alloc.c: the block store */
rt_value rt_major_alloc_raw(size_t wosize, unsigned tag); /* 0 on ENOMEM; never collects */
void rt_major_sweep(void);				  /* free white blocks, whiten black ones */
void rt_major_free_all(void);

/* major.c: marking and collection policy */
void rt_major_maybe_collect(void);

/* roots.c: call f on every root of the registered threads and globals. */
void rt_scan_local_roots(rt_root_visitor f, void *ctx);
void rt_roots_free(struct rt_thread *t);

/* custom.c */
void rt_custom_finalize(rt_value block);

/* threads.c */
int rt_threads_init(void);
void rt_threads_shutdown(void);
void rt_master_acquire(void);
void rt_master_release(void);

#endif
