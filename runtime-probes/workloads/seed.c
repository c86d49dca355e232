/*
 * workload-seed: the micro-benchmark of the statmemprof "new API"
 * discussion, on rt.
 *
 *   --kind short   allocate a 3-field record in a loop and drop it
 *   --kind long    store each new record into a 1,000,000-slot array, so
 *                  records are promoted and die in the major heap
 *   --tracked 0|1  the tracker's alloc callback returns NONE (0) or data (1)
 *   --rate R       sampling rate per word; 0: core present, not sampling
 *   --iterations N records to allocate (default 10,000,000)
 *   --callstack N  frames captured per sample (default 0: none), to
 *                  measure the unwinder's cost per sample
 *   --depth D      allocate from D nested calls below main (default 0),
 *                  for deeper stacks to unwind
 *
 * Built twice: build/workload-seed, and build/workload-seed-nohook with
 * -DRT_NO_MEMPROF where rt has no memprof hook at all (--rate,
 * --tracked and --callstack must then be 0).  Prints one summary line; its "samples" is
 * the entries the profile created (0 without the hook).
 */
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "rt.h"
#ifndef RT_NO_MEMPROF
#include "memprof.h"
#endif

#define RECORD_FIELDS 3
#define LONG_SLOTS 1000000
#define DEFAULT_ITERATIONS 10000000
#define SEED 42
/* Deepest --callstack (the core captures at most this many frames). */
#define MAX_CALLSTACK 4096
#define MAX_DEPTH 10000

struct seed_options {
	int long_lived;
	uint64_t tracked;
	double rate;
	uint64_t iterations;
	uint64_t callstack;
	uint64_t depth;
};

static int parse(int argc, char **argv, struct seed_options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val) {
			fprintf(stderr, "workload-seed: %s needs a value\n", arg);
			return -1;
		}
		i++;
		if (!strcmp(arg, "--kind")) {
			if (strcmp(val, "short") && strcmp(val, "long")) {
				fprintf(stderr, "--kind: expected short or long, got '%s'\n", val);
				return -1;
			}
			o->long_lived = !strcmp(val, "long");
		} else if (!strcmp(arg, "--tracked")) {
			if (option_u64(arg, val, 0, 1, &o->tracked))
				return -1;
		} else if (!strcmp(arg, "--rate")) {
			if (option_double(arg, val, 0, 1, &o->rate))
				return -1;
		} else if (!strcmp(arg, "--iterations")) {
			if (option_u64(arg, val, 1, UINT64_MAX >> 1, &o->iterations))
				return -1;
		} else if (!strcmp(arg, "--callstack")) {
			if (option_u64(arg, val, 0, MAX_CALLSTACK, &o->callstack))
				return -1;
		} else if (!strcmp(arg, "--depth")) {
			if (option_u64(arg, val, 0, MAX_DEPTH, &o->depth))
				return -1;
		} else {
			fprintf(
			    stderr,
			    "workload-seed: unknown option '%s' (options: --kind short|long, "
			    "--tracked 0|1, --rate R, --iterations N, --callstack N, --depth D)\n",
			    arg);
			return -1;
		}
	}
	return 0;
}

#ifndef RT_NO_MEMPROF
static int on_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)info;
	*out = *(const int *)arg ? RT_VAL_INT(1) : MEMPROF_NONE;
	return 0;
}

static int on_promote(void *arg, memprof_value minor, memprof_value *out)
{
	(void)arg;
	*out = minor;
	return 0;
}

static int start_profile(const struct seed_options *o)
{
	static int tracked;
	memprof_tracker t = {
	    .alloc_minor = on_alloc,
	    .alloc_major = on_alloc,
	    .promote = on_promote,
	    .arg = &tracked,
	};

	tracked = (int)o->tracked;
	memprof_set_seed(SEED);
	if (o->rate > 0 && memprof_start(o->rate, (size_t)o->callstack, &t)) {
		fprintf(stderr, "workload-seed: memprof_start failed\n");
		return -1;
	}
	return 0;
}

static unsigned long long profile_samples(void)
{
	memprof_stats st;

	memprof_get_stats(&st);
	return (unsigned long long)st.samples;
}
#else
static unsigned long long profile_samples(void)
{
	return 0;
}

static int start_profile(const struct seed_options *o)
{
	if (o->rate > 0 || o->tracked || o->callstack) {
		fprintf(stderr, "workload-seed-nohook: built without memprof: --rate, "
				"--tracked and --callstack must be 0\n");
		return -1;
	}
	return 0;
}
#endif

static int run(const struct seed_options *o)
{
	rt_value slots = RT_UNIT, rec = RT_UNIT;
	int err = 0;

	RT_ROOTS(2, &slots, &rec);
	if (o->long_lived)
		err = rt_alloc_major(LONG_SLOTS, 0, &slots);
	for (uint64_t i = 0; !err && i < o->iterations; i++) {
		err = rt_alloc(RECORD_FIELDS, 0, &rec);
		if (err)
			break;
		rt_store_field(rec, 0, RT_VAL_INT(i));
		if (o->long_lived)
			rt_store_field(slots, i % LONG_SLOTS, rec);
	}
	RT_ROOTS_END();
	return err;
}

/* run() below `depth` real call frames (no inlining, no tail calls). */
__attribute__((noinline, noclone)) static int run_at_depth(const struct seed_options *o,
							   uint64_t depth)
{
	volatile int err;

	err = depth ? run_at_depth(o, depth - 1) : run(o);
	return err;
}

int main(int argc, char **argv)
{
	struct seed_options o = {.iterations = DEFAULT_ITERATIONS};
	rt_stats st;
	int err;

	if (parse(argc, argv, &o))
		return 2; /* parse printed the one line */
	if (rt_init(NULL)) {
		fprintf(stderr, "workload-seed: rt_init failed\n");
		return 1;
	}
	if (start_profile(&o))
		return 1;
	err = run_at_depth(&o, o.depth);
	if (err) {
		fprintf(stderr, "workload-seed: allocation failed (error %d)\n", err);
		return 1;
	}
	rt_get_stats(&st);
	printf("kind %s tracked %d rate %g iterations %llu minor_gcs %llu major_gcs %llu "
	       "samples %llu\n",
	       o.long_lived ? "long" : "short", (int)o.tracked, o.rate,
	       (unsigned long long)o.iterations, (unsigned long long)st.minor_collections,
	       (unsigned long long)st.major_collections, profile_samples());
	return 0;
}
