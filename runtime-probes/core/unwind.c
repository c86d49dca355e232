/*
 * The fast path of the core's call stacks on x86-64: the walk of
 * libunwind's own fast trace (unw_backtrace's, libunwind 1.6
 * src/x86_64/Gtrace.c), with the unwind rule of each return address kept
 * in a per-thread cache, so that a frame seen before costs one cache probe
 * and two loads.
 *
 * What must hold: a walk gives exactly the frames unw_backtrace would have
 * given from the same point (callstack.c compares the two on every capture
 * in the sanitized build, and tests/core/test_callstack.c checks them on
 * stacks of several shapes).  So it takes only the frames libunwind's fast
 * trace takes the same way, "standard" frames:
 *   - the CFA is %rsp or %rbp plus a constant (|offset| < 2^28);
 *   - the return address is saved at CFA - 8;
 *   - %rbp is unchanged, or saved at CFA + a constant (|c| < 2^14, c != -1),
 *     %rsp unchanged, undefined or saved likewise (the CFA is the new %rsp);
 * and stops where libunwind's unw_step says the stack ends: the return
 * address or %rbp undefined (the outermost frame: _start, a thread's
 * start), or a return address below UNWIND_MIN_RA.  Any other frame (a
 * signal frame, no unwind information, a CFA expression, a register saved
 * in another register) sends the whole capture back to unw_backtrace,
 * which may take it through libunwind's slow path.
 *
 * The rules come from the objects' .eh_frame (found through
 * .eh_frame_hdr's binary search table), as libunwind reads them: the CIE's
 * initial instructions, then the FDE's up to the address (the return
 * address - 1 for every frame but the first, as libunwind).
 *
 * The cache is per thread (no lock, no torn entry), two-way set
 * associative, keyed by the looked-up address, and cleared when the
 * loader's counts of objects added or removed (dl_iterate_phdr's
 * dlpi_adds/dlpi_subs) changed since it was filled.  It looks at them at
 * every miss (the miss's own dl_iterate_phdr gives them) and every
 * UNWIND_RECHECK_WALKS walks, not at every walk: dl_iterate_phdr first
 * finds its caller's object among all the loaded ones, 500 instructions in
 * a Python process.  So a rule may outlive its object's unloading (dlclose)
 * by up to that many walks of a thread that meets no new address, and is
 * wrong then only if another object was mapped where the first one was and
 * the stack runs through it.  (libunwind's own fast-trace cache is never
 * emptied at a dlclose.)
 */
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#if UNWIND_FAST

/* Sets of two slots in a thread's cache, log2.  The sanitized build's is
 * tiny, so that its tests see addresses share slots. */
#ifdef MEMPROF_DEBUG
#define UNWIND_CACHE_SET_BITS 1
#else
#define UNWIND_CACHE_SET_BITS 9
#endif
#define UNWIND_CACHE_SETS ((size_t)1 << UNWIND_CACHE_SET_BITS)
/* Walks between two looks at the loader's counts (a miss looks too). */
#define UNWIND_RECHECK_WALKS 64
/* libunwind's fast trace takes a return address below this as the end. */
#define UNWIND_MIN_RA 0x4000

#include "unwind.h"

struct unwind_cache {
	unsigned long long adds, subs; /* the loader's counts the slots were filled under */
	size_t fast, fallbacks;	       /* captures of each kind (memprof_debug_unwind_stats) */
	/* A walk runs on this thread: a capture nested in it (a signal
	 * handler's) must not see a slot half written, so it falls back. */
	volatile int busy;
	unsigned long long walks; /* walks so far (UNWIND_RECHECK_WALKS) */
	/* Bit k % 8 of victim[k / 8]: the way of set k to fill next. */
	uint8_t victim[(UNWIND_CACHE_SETS + 7) / 8];
	struct unwind_rule slot[2 * UNWIND_CACHE_SETS];
};

/* ---- The walk ---- */

static int read_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unwind_counts_of(info, size, arg);
	return 1; /* the first object is enough: the counts are the loader's */
}

/*
 * A thread's cache goes at its exit: memprof_thread_exit frees it, and a
 * thread-specific key's destructor does if the host never called that.
 */
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t cache_key;
static int cache_key_ok;

static void cache_release(void *c)
{
	if (memprof_ts.unwind == c)
		memprof_ts.unwind = NULL;
	free(c);
}

static void cache_key_create(void)
{
	cache_key_ok = pthread_key_create(&cache_key, cache_release) == 0;
}

/* Empty the cache if objects came or went since it was filled. */
static void cache_check(struct unwind_cache *c, const struct loader_counts *lc)
{
	if (c->adds == lc->adds && c->subs == lc->subs)
		return;
	memset(c->slot, 0, sizeof(c->slot));
	c->adds = lc->adds;
	c->subs = lc->subs;
}

/* The calling thread's cache; the loader's counts looked at every
 * UNWIND_RECHECK_WALKS walks (and at every miss, in rule_get). */
static struct unwind_cache *cache_get(void)
{
	struct thread_state *ts = &memprof_ts;
	struct unwind_cache *c = ts->unwind;
	struct loader_counts lc = {0, 0};

	if (c && c->walks++ % UNWIND_RECHECK_WALKS != 0)
		return c;
	dl_iterate_phdr(read_counts, &lc);
	if (!c) {
		pthread_once(&cache_key_once, cache_key_create);
		if (!cache_key_ok)
			return NULL;
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		if (pthread_setspecific(cache_key, c) != 0) {
			free(c);
			return NULL;
		}
		ts->unwind = c;
		c->walks = 1;
	}
	cache_check(c, &lc);
	return c;
}

/* Two ways per set: an address is in one of the two slots of its set. */
static const struct unwind_rule *rule_get(struct unwind_cache *c, uintptr_t pc)
{
	size_t set = (size_t)((pc * 0x9e3779b97f4a7c15ull) >> (64 - UNWIND_CACHE_SET_BITS));
	struct unwind_rule *r = &c->slot[2 * set], *way;
	struct hdr_query q = {.pc = pc};
	struct unwind_rule parsed;

	/* An empty slot has pc 0, which no look-up has (pc >= UNWIND_MIN_RA - 1). */
	if (r[0].pc == pc)
		return &r[0];
	if (r[1].pc == pc)
		return &r[1];
	unwind_rule_parse(&q, &parsed);
	parsed.pc = pc;
	/* The miss looked at every object up to pc's: the counts are fresh. */
	cache_check(c, &q.counts);
	/* The way not used last goes; the other becomes the older. */
	way = &r[c->victim[set / 8] >> (set % 8) & 1];
	c->victim[set / 8] ^= (uint8_t)(1u << (set % 8));
	*way = parsed;
	return way;
}

size_t unwind_walk(uintptr_t *buf, size_t want, uintptr_t pc, uintptr_t sp, uintptr_t fp,
		   enum unwind_first first)
{
	struct unwind_cache *c;
	uintptr_t lookup = first == UNWIND_FIRST_RA ? pc - 1 : pc;
	size_t n = 0;

	if (want == 0)
		return 0;
	c = memprof_ts.unwind;
	if (c && c->busy)
		return UNWIND_FALLBACK;
	c = cache_get();
	if (!c)
		return UNWIND_FALLBACK;
	c->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (first != UNWIND_SKIP_FIRST)
		buf[n++] = pc;
	while (n < want) {
		const struct unwind_rule *r = rule_get(c, lookup);
		if (r->kind == RULE_LAST)
			break;
		if (r->kind != RULE_RSP && r->kind != RULE_RBP) {
			c->fallbacks++;
			atomic_signal_fence(memory_order_seq_cst);
			c->busy = 0;
			return UNWIND_FALLBACK;
		}
		uintptr_t cfa = (r->kind == RULE_RSP ? sp : fp) + (intptr_t)r->cfa_off;
		uintptr_t ra = *(const uintptr_t *)(cfa - 8);
		if (r->rbp_saved)
			fp = *(const uintptr_t *)(cfa + (intptr_t)r->rbp_off);
		sp = cfa;
		if (ra < UNWIND_MIN_RA)
			break;
		buf[n++] = ra;
		/* A return address follows its call: the call's rule is the one before. */
		lookup = ra - 1;
	}
	c->fast++;
	atomic_signal_fence(memory_order_seq_cst);
	c->busy = 0;
	return n;
}

void unwind_thread_exit(void)
{
	struct unwind_cache *c = memprof_ts.unwind;

	if (!c)
		return;
	pthread_setspecific(cache_key, NULL);
	cache_release(c);
}

void memprof_debug_unwind_stats(size_t *fast, size_t *fallbacks)
{
	const struct unwind_cache *c = memprof_ts.unwind;

	*fast = c ? c->fast : 0;
	*fallbacks = c ? c->fallbacks : 0;
}

#else

void unwind_thread_exit(void)
{
}

void memprof_debug_unwind_stats(size_t *fast, size_t *fallbacks)
{
	*fast = 0;
	*fallbacks = 0;
}

#endif
