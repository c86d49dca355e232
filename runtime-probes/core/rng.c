/*
 * Per-thread random draws: xoshiro256+ (state in thread-local storage, never
 * behind a lock), geometric gaps by inversion, binomial counts as the number
 * of geometric gaps that fit.
 */
#include <math.h>

#include "core.h"

/* Seed of the first thread; later threads get it mixed with their rank,
 * so runs are reproducible without memprof_set_seed. */
#define RNG_DEFAULT_SEED 0x6d656d70726f6631ull

_Thread_local struct thread_state memprof_ts;
static atomic_uint_fast64_t thread_rank;

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void memprof_set_seed(uint64_t seed)
{
	struct thread_state *ts = &memprof_ts;

	for (int i = 0; i < 4; i++)
		ts->rng[i] = splitmix64(&seed);
	ts->seeded = 1;
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(void)
{
	struct thread_state *ts = &memprof_ts;

	if (!ts->seeded) {
		uint64_t rank = atomic_fetch_add_explicit(&thread_rank, 1, memory_order_relaxed);
		memprof_set_seed(RNG_DEFAULT_SEED + rank * 0x9e3779b97f4a7c15ull);
	}
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
static double rng_uniform(void)
{
	return 1.0 - (double)(rng_next() >> 11) * 0x1.0p-53;
}

size_t rng_geometric(const struct rate *r)
{
	if (r->lambda <= 0)
		return GAP_NEVER;
	/* P(gap > k) = (1 - lambda)^k, so gap = 1 + floor(log u / log(1 - lambda)). */
	double x = log(rng_uniform()) * r->inv_log1m;
	if (!(x < (double)GAP_NEVER))
		return GAP_NEVER;
	return 1 + (size_t)x;
}

size_t rng_binomial(const struct rate *r, size_t words)
{
	if (r->lambda <= 0 || words == 0)
		return 0;
	if (r->lambda >= 1)
		return words;
	size_t n = 0;
	for (size_t pos = rng_geometric(r); pos <= words; pos += rng_geometric(r))
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

size_t memprof_draw_gap(void)
{
	struct rate r;

	probe_poll();
	rate_read(&r);
	return rng_geometric(&r);
}

size_t memprof_draw_binomial(size_t words)
{
	struct rate r;

	rate_read(&r);
	return rng_binomial(&r, words);
}

int memprof_sampling_here(void)
{
	struct rate r;

	if (memprof_ts.in_callback)
		return 0;
	rate_read(&r);
	return r.lambda > 0;
}
