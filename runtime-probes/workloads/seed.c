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
 *   --fake-tracer R  raise the sample and events semaphores and ask for
 *                  rate R, as an attaching tracer does, but attach nothing:
 *                  the core samples for a tracer, captures call stacks and
 *                  queues its records, and the probe sites are bare nops.
 *                  The in-process part of a traced sample alone (valgrind
 *                  can run it; a process with live uprobes it cannot).
 *                  Needs --rate 0.  A second line then says
 *                  "tracer_samples N", the samples handed to the sites.
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
#include <linux/types.h>

#include "memprof.h"
#include "memprof_probe_abi.h"
#include "memprof_probes.h"

/* The core's (runtime-probes/core/probes.c), which a tracer finds by symbol. */
extern unsigned short memprof_sample_semaphore;
extern unsigned short memprof_events_semaphore;
extern struct memprof_probe_control memprof_probe_control;
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
	double fake_tracer;
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
		} else if (!strcmp(arg, "--fake-tracer")) {
			if (option_double(arg, val, 0, 1, &o->fake_tracer))
				return -1;
		} else {
			fprintf(
			    stderr,
			    "workload-seed: unknown option '%s' (options: --kind short|long, "
			    "--tracked 0|1, --rate R, --iterations N, --callstack N, --depth D, "
			    "--fake-tracer R)\n",
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
	if (o->fake_tracer > 0) {
		if (o->rate > 0) {
			fprintf(stderr, "workload-seed: --fake-tracer needs --rate 0\n");
			return -1;
		}
		/* The core sees them at its first safe point, as it sees a tracer's. */
		*(volatile double *)&memprof_probe_control.requested_rate = o->fake_tracer;
		(*(volatile unsigned short *)&memprof_sample_semaphore)++;
		(*(volatile unsigned short *)&memprof_events_semaphore)++;
	}
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

static void print_tracer_samples(const struct seed_options *o)
{
	if (o->fake_tracer > 0) {
		memprof_probe_flush();
		printf("tracer_samples %llu\n",
		       (unsigned long long)__atomic_load_n(&memprof_probe_control.samples,
							   __ATOMIC_RELAXED));
	}
}
#else
static void print_tracer_samples(const struct seed_options *o)
{
	(void)o;
}

static unsigned long long profile_samples(void)
{
	return 0;
}

static int start_profile(const struct seed_options *o)
{
	if (o->rate > 0 || o->tracked || o->callstack || o->fake_tracer > 0) {
		fprintf(stderr, "workload-seed-nohook: built without memprof: --rate, "
				"--tracked, --callstack and --fake-tracer must be 0\n");
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
	print_tracer_samples(&o);
	return 0;
}
