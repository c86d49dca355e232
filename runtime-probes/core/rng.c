/*
 * Per-thread random draws: xoshiro256+ (state in thread-local storage, never
 * behind a lock), geometric gaps by inversion, binomial counts as the number
 * of geometric gaps that fit.
 */
#include <math.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

/*
 * Seeds.  Each process draws a random seed (getrandom) the first time a
 * thread draws, unless MEMPROF_SEED=N fixes it; a thread's seed is that
 * seed mixed with its rank.  memprof_set_seed fixes the calling thread's.
 */
#define RNG_ENV_SEED "MEMPROF_SEED"

_Thread_local struct thread_state memprof_ts CORE_TLS_MODEL;
static atomic_uint_fast64_t thread_rank;
static atomic_uint_fast64_t process_seed;
static atomic_int process_seed_set;

static uint64_t rng_process_seed(void)
{
	if (atomic_load_explicit(&process_seed_set, memory_order_acquire))
		return atomic_load_explicit(&process_seed, memory_order_relaxed);
	uint64_t seed = 0;
	const char *env = getenv(RNG_ENV_SEED);
	char *end;
	if (env && *env) {
		seed = strtoull(env, &end, 0);
		if (*end)
			env = NULL;
	}
	if (!env || !*env) {
		struct timespec ts;
		if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
			clock_gettime(CLOCK_REALTIME, &ts);
			seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
			       ((uint64_t)getpid() << 48);
		}
	}
	/* Racing threads may both draw: the first store wins. */
	int unset = 0;
	if (atomic_compare_exchange_strong(&process_seed_set, &unset, 2)) {
		atomic_store_explicit(&process_seed, seed, memory_order_relaxed);
		atomic_store_explicit(&process_seed_set, 1, memory_order_release);
		return seed;
	}
	while (atomic_load_explicit(&process_seed_set, memory_order_acquire) != 1)
		;
	return atomic_load_explicit(&process_seed, memory_order_relaxed);
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed_thread(uint64_t seed)
{
	struct thread_state *ts = &memprof_ts;

	for (int i = 0; i < 4; i++)
		ts->rng[i] = splitmix64(&seed);
	ts->seeded = 1;
}

void memprof_set_seed(uint64_t seed)
{
	int unset = 0;

	rng_seed_thread(seed);
	/* Threads that have not drawn yet derive theirs from it too. */
	if (atomic_compare_exchange_strong(&process_seed_set, &unset, 2)) {
		atomic_store_explicit(&process_seed, seed, memory_order_relaxed);
		atomic_store_explicit(&process_seed_set, 1, memory_order_release);
	}
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* A thread's first draw: its seed, from the process's and its rank. */
static __attribute__((noinline, cold)) void rng_seed_first(void)
{
	uint64_t rank = atomic_fetch_add_explicit(&thread_rank, 1, memory_order_relaxed);

	rng_seed_thread(rng_process_seed() + rank * 0x9e3779b97f4a7c15ull);
}

/* Inline: a sample draws two or three times (the draws were a tenth of a
 * traced malloc sample's instructions, calls and all). */
static inline __attribute__((always_inline)) uint64_t rng_next(void)
{
	struct thread_state *ts = &memprof_ts;

	if (__builtin_expect(!ts->seeded, 0))
		rng_seed_first();
	uint64_t *s = ts->rng;
	uint64_t result = s[0] + s[3];
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in (0, 1]: the top 53 bits, shifted away from 0. */
static inline __attribute__((always_inline)) double rng_uniform(void)
{
	return 1.0 - (double)(rng_next() >> 11) * 0x1.0p-53;
}

static inline __attribute__((always_inline)) size_t geometric(const struct rate *r)
{
	if (r->lambda <= 0)
		return GAP_NEVER;
	/* P(gap > k) = (1 - lambda)^k, so gap = 1 + floor(log u / log(1 - lambda)). */
	double x = log(rng_uniform()) * r->inv_log1m;
	if (!(x < (double)GAP_NEVER))
		return GAP_NEVER;
	return 1 + (size_t)x;
}

size_t rng_geometric(const struct rate *r)
{
	return geometric(r);
}

/* Above this many expected samples a binomial count is drawn from its normal
 * approximation: counting gaps would take that many draws (a 1 GiB block
 * at 1/8 per byte, 2^27). */
#define RNG_BINOMIAL_NORMAL_MEAN 1024.0

size_t rng_binomial(const struct rate *r, size_t words)
{
	if (r->lambda <= 0 || words == 0)
		return 0;
	if (r->lambda >= 1)
		return words;
	double mean = (double)words * r->lambda;
	if (mean > RNG_BINOMIAL_NORMAL_MEAN) {
		/* Box-Muller; mean and variance exact, the rounding symmetric. */
		double z = sqrt(-2 * log(rng_uniform())) * cos(2 * M_PI * rng_uniform());
		double x = floor(mean + z * sqrt(mean * (1 - r->lambda)) + 0.5);
		return x <= 0 ? 0 : x >= (double)words ? words : (size_t)x;
	}
	size_t n = 0;
	for (size_t pos = geometric(r); pos <= words; pos += geometric(r))
		n++;
	return n;
}

double memprof_current_rate(void)
{
	struct rate r;

	probe_poll();
	rate_read(&r);
	return r.lambda;
}

double memprof_rate_in_force(void)
{
	struct rate r;

	rate_read(&r);
	return r.lambda;
}

size_t memprof_draw_gap(void)
{
	struct rate r;

	probe_poll();
	rate_read(&r);
	return geometric(&r);
}

size_t memprof_draw_binomial(size_t words)
{
	struct rate r;

	rate_read(&r);
	return rng_binomial(&r, words);
}

/* The rate per byte of r (lambda / 8), cached per thread. */
static void rate_bytes(struct rate *r)
{
	struct thread_state *ts = &memprof_ts;

	rate_read(r);
	if (r->lambda != ts->bytes_for_lambda) {
		ts->bytes_for_lambda = r->lambda;
		ts->bytes_inv_log1m = r->lambda > 0 ? 1.0 / log1p(-r->lambda / 8) : 0.0;
	}
	r->lambda /= 8;
	r->inv_log1m = ts->bytes_inv_log1m;
}

/* No poll here: the malloc host's slow path polled (memprof_run_postponed)
 * just before, and one poll per slow path is enough. */
size_t memprof_draw_gap_bytes(void)
{
	struct rate r;

	rate_bytes(&r);
	return geometric(&r);
}

size_t memprof_draw_binomial_bytes(size_t bytes)
{
	struct rate r;

	rate_bytes(&r);
	return rng_binomial(&r, bytes);
}

/*
 * Counting the gaps that fit in `bytes` draws one gap past its end: by the
 * memorylessness of the per-byte process, what it overshoots the end by is
 * distributed as a fresh gap, independent of the count, so it is the next
 * gap itself (one logarithm less per sample than a fresh draw).  Above
 * RNG_BINOMIAL_NORMAL_MEAN expected points the count is rng_binomial's and
 * the gap a fresh draw.
 */
size_t memprof_draw_points_bytes(size_t bytes, size_t *next_gap)
{
	struct rate r;
	size_t n = 0, pos;

	rate_bytes(&r);
	if (r.lambda <= 0) {
		*next_gap = GAP_NEVER;
		return 0;
	}
	if ((double)bytes * r.lambda > RNG_BINOMIAL_NORMAL_MEAN) {
		n = rng_binomial(&r, bytes);
		*next_gap = geometric(&r);
		return n;
	}
	for (pos = geometric(&r); pos <= bytes; n++) {
		size_t gap = geometric(&r);
		if (gap > SIZE_MAX - pos) {
			*next_gap = GAP_NEVER;
			return n + 1;
		}
		pos += gap;
	}
	*next_gap = pos - bytes;
	return n;
}

int memprof_sampling_here(void)
{
	struct rate r;

	if (memprof_ts.in_callback)
		return 0;
	rate_read(&r);
	return r.lambda > 0;
}
