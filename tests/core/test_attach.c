/*
 * The attach protocol with a real kernel: uprobes with ref_ctr_offset on
 * this executable's memprof probes raise the USDT semaphores exactly as a
 * tracer's do, and count the probe hits.
 */
#include <criterion/criterion.h>
#include <linux/types.h>
#include <unistd.h>

#include "memprof.h"
#include "memprof_host.h"
#include "memprof_probe_abi.h"
#include "memprof_probes.h"
#include "toy_host.h"
#include "usdt_uprobe.h"

extern struct memprof_probe_control memprof_probe_control;
extern unsigned short memprof_sample_semaphore;

#define ALLOCS 2000

struct probes {
	int sample, events;
	uint64_t samples0, promotes0, deallocs0; /* the control block's counts at open */
};

static void probes_open(struct probes *p)
{
	p->sample = usdt_uprobe_open("sample");
	p->events = usdt_uprobe_open("events");
	p->samples0 = memprof_probe_control.samples;
	p->promotes0 = memprof_probe_control.promotes;
	p->deallocs0 = memprof_probe_control.deallocs;
	cr_assert(p->sample >= 0 && p->events >= 0, "uprobes attached");
	cr_assert_gt(*(volatile unsigned short *)&memprof_sample_semaphore, 0,
		     "the kernel raised the semaphore");
}

static void probes_close(struct probes *p)
{
	close(p->sample);
	close(p->events);
}

/* samples handed over in memprof:sample batches, promote and dealloc events
 * in memprof:events batches, since open */
#define SAMPLES(p) (memprof_probe_control.samples - (p).samples0)
#define PROMOTES(p) (memprof_probe_control.promotes - (p).promotes0)
#define DEALLOCS(p) (memprof_probe_control.deallocs - (p).deallocs0)

static void alloc_many(void)
{
	static const size_t sz = 3;
	uintptr_t base;

	for (int i = 0; i < ALLOCS; i++) {
		cr_assert_eq(toy_alloc(1, &sz, &base), 0);
		if (i % 500 == 0)
			toy_minor_gc();
	}
}

Test(attach, tracer_only_sampling_follows_the_semaphore)
{
	struct probes p;
	memprof_stats st;

	toy_init();
	memprof_probe_control.requested_rate = 0.25;
	cr_assert_eq(memprof_probe_control.magic, MEMPROF_PROBE_CONTROL_MAGIC);
	cr_assert_eq(memprof_probe_control.flags, 0);

	probes_open(&p);
	unsigned updates = toy.limit_updates;
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_gt(toy.limit_updates, updates, "attach recomputes the young limit");
	cr_assert_eq(memprof_probe_control.flags, MEMPROF_PROBE_F_TRACER);
	cr_assert_eq(memprof_probe_control.active_rate, 0.25);
	cr_assert_eq(memprof_current_rate(), 0.25);

	toy.survive = 0;
	alloc_many();
	toy_minor_gc();
	memprof_get_stats(&st);
	uint64_t fired = SAMPLES(p), hits = usdt_uprobe_count(p.sample);
	cr_assert_gt(fired, MEMPROF_PROBE_SAMPLES_MAX, "too few samples to see batching");
	cr_assert_eq(fired, st.samples, "every entry's sample handed over by the collection");
	/* One memprof:sample hit per collection (before its events), or per full buffer. */
	cr_assert_gt(hits, 0);
	cr_assert_leq(hits, ALLOCS / 500 + 1 + fired / MEMPROF_PROBE_SAMPLES_MAX,
		      "samples are batched: %llu hits for %llu samples", (unsigned long long)hits,
		      (unsigned long long)fired);
	cr_assert_eq(st.callbacks, 0, "no user profile: probes only");
	cr_assert_eq(DEALLOCS(p), fired, "every sampled block died young");
	cr_assert_eq(PROMOTES(p), 0);
	cr_assert_eq(st.tracked, 0);
	/* One memprof:events hit per collection (ALLOCS / 500 + 1 of them), or per full buffer. */
	cr_assert_leq(usdt_uprobe_count(p.events),
		      ALLOCS / 500 + 1 + fired / MEMPROF_PROBE_EVENTS_MAX, "events are batched");
	cr_assert_gt(usdt_uprobe_count(p.events), 0);

	toy.survive = 1;
	alloc_many();
	toy_minor_gc();
	memprof_get_stats(&st);
	uint64_t promoted = PROMOTES(p);
	cr_assert_eq(promoted, st.samples - fired, "every block of the second round promoted");
	cr_assert_eq(st.tracked, promoted);

	probes_close(&p);
	cr_assert_eq(*(volatile unsigned short *)&memprof_sample_semaphore, 0);
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(memprof_probe_control.flags, 0);
	cr_assert_eq(memprof_probe_control.active_rate, 0.0);
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "detach forgets the blocks tracked for the tracer");
	uint64_t before = st.samples;
	alloc_many();
	memprof_get_stats(&st);
	cr_assert_eq(st.samples, before, "no sampling once detached");
}

static unsigned user_allocs, user_deallocs;
static int none_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	(void)info;
	user_allocs++;
	*out = MEMPROF_NONE;
	return 0;
}
static int count_dealloc(void *arg, memprof_value d)
{
	(void)arg;
	(void)d;
	user_deallocs++;
	return 0;
}

Test(attach, tracer_sees_the_in_process_profile)
{
	memprof_tracker t = {.alloc_minor = none_alloc, .dealloc_minor = count_dealloc};
	struct probes p;
	memprof_stats st;

	toy_init();
	memprof_probe_control.requested_rate = 0.5;
	cr_assert_eq(memprof_start(0.1, 0, &t), 0);
	probes_open(&p);
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(memprof_probe_control.flags, MEMPROF_PROBE_F_IN_PROCESS);
	cr_assert_eq(memprof_probe_control.active_rate, 0.1, "the profile's rate stays in force");

	toy.survive = 0;
	alloc_many();
	memprof_get_stats(&st);
	cr_assert_gt(st.samples, 0);
	memprof_probe_flush();
	cr_assert_eq(SAMPLES(p), st.samples, "the tracer saw every sample of the profile");
	cr_assert_lt(usdt_uprobe_count(p.sample), st.samples, "in batches");
	cr_assert_eq(user_allocs, st.samples);
	cr_assert_eq(st.tracked, st.samples - DEALLOCS(p),
		     "NONE from the callback, but the tracer saw them: entries kept");
	toy_minor_gc();
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(DEALLOCS(p), st.samples);
	cr_assert_eq(user_deallocs, 0, "no callback after NONE");
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);

	cr_assert_eq(memprof_stop(), 0);
	cr_assert_eq(memprof_probe_control.flags, MEMPROF_PROBE_F_TRACER);
	cr_assert_eq(memprof_probe_control.active_rate, 0.5, "back to the tracer's rate");
	probes_close(&p);
	cr_assert_eq(memprof_run_postponed(), 0);
	cr_assert_eq(memprof_probe_control.flags, 0);
}

Test(attach, gc_probe_fires_only_while_attached)
{
	memprof_probe_gc(MEMPROF_PROBE_GC_MINOR_START, 1, 2);
	int fd = usdt_uprobe_open("gc");
	cr_assert(fd >= 0);
	memprof_probe_gc(MEMPROF_PROBE_GC_MINOR_START, 1, 2);
	memprof_probe_gc(MEMPROF_PROBE_GC_MINOR_END, 1, 2);
	cr_assert_eq(usdt_uprobe_count(fd), 2);
	close(fd);
}

Test(attach, malloc_host_under_a_tracer)
{
	struct probes p;
	uint64_t h1 = 0, h2 = 0;

	memprof_probe_control.requested_rate = 0; /* the default rate */
	cr_assert_eq(memprof_current_rate(), 0.0);
	probes_open(&p);
	cr_assert_eq(memprof_current_rate(), MEMPROF_PROBE_DEFAULT_RATE);
	cr_assert_eq(memprof_track_malloc(0x1000, 8, 1, 0, &h1), 0);
	cr_assert_eq(memprof_track_malloc(0x2000, 8, 1, 0, &h2), 0);
	cr_assert(h1 && h2, "tracer-only blocks get handles");
	cr_assert_eq(usdt_uprobe_count(p.sample), 0, "samples wait for a batch");
	memprof_block_freed(h1);
	memprof_epoch_end();
	cr_assert_eq(usdt_uprobe_count(p.sample), 1, "the samples go first, in one batch");
	cr_assert_eq(SAMPLES(p), 2);
	cr_assert_eq(usdt_uprobe_count(p.events), 1, "the epoch's end hands its events over");
	memprof_block_freed(h2);
	cr_assert_eq(usdt_uprobe_count(p.events), 1, "a death waits for the next batch");
	memprof_probe_flush();
	cr_assert_eq(usdt_uprobe_count(p.events), 2);
	cr_assert_eq(usdt_uprobe_count(p.sample), 1, "no sample since");
	cr_assert_eq(PROMOTES(p), 1);
	cr_assert_eq(DEALLOCS(p), 2);
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0);
	cr_assert_eq(st.callbacks, 0);
	probes_close(&p);
	cr_assert_eq(memprof_current_rate(), 0.0, "detached");
}

Test(attach, malloc_handles_of_a_gone_tracer_fire_nothing)
{
	struct probes p;
	uint64_t old = 0, young = 0, major = 0;

	memprof_probe_control.requested_rate = 0; /* the default rate */
	probes_open(&p);
	cr_assert_eq(memprof_current_rate(), MEMPROF_PROBE_DEFAULT_RATE);
	cr_assert_eq(memprof_track_malloc(0x1000, 8, 1, 0, &old), 0);
	cr_assert(old, "a tracer-only block gets a handle");
	probes_close(&p);
	cr_assert_eq(memprof_current_rate(), 0.0, "detached");

	probes_open(&p);
	cr_assert_eq(memprof_current_rate(), MEMPROF_PROBE_DEFAULT_RATE, "attached again");
	cr_assert_eq(memprof_track_malloc(0x2000, 8, 1, 0, &young), 0);
	cr_assert_eq(memprof_track_malloc(0x3000, 8, 1, 1, &major), 0);
	memprof_block_freed(old);
	memprof_block_freed(young);
	memprof_epoch_end();
	memprof_block_freed(major);
	memprof_probe_flush();
	cr_assert_eq(SAMPLES(p), 2, "the samples of this tracer");
	cr_assert_eq(DEALLOCS(p), 2, "the block of the first tracer dies unseen");
	cr_assert_eq(PROMOTES(p), 0, "a young block that died and a major one: no promotion");
	memprof_stats st;
	memprof_get_stats(&st);
	cr_assert_eq(st.tracked, 0, "tracer-only samples take no entry");
	probes_close(&p);
}
