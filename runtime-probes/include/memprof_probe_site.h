/*
 * The shape of a memprof probe site, shared by every host that fires the
 * probes of memprof_probe_abi.h itself (the core's probes.c, the OCaml
 * adapter's stubs).  Include it from exactly one C file of a host, after
 * <stdint.h>: it includes <sys/sdt.h> with semaphores and defines static
 * helpers.  The includer defines the semaphores
 * (memprof_<probe>_semaphore, section ".probes") and the control block.
 *
 * On x86-64 a site is a 5-byte nop, not the 1-byte nop of <sys/sdt.h>.  A
 * kernel with the uprobe syscall rewrites a uprobe on a 5-byte nop, after
 * its first hit, into a call to its [uprobes-trampoline], which skips the
 * int3 trap (the cost per hit of both: bench/results/hand-measured.md).
 * Older kernels trap on it as on any nop.
 *
 * That call and the trampoline push 32 bytes below the stack pointer, into
 * the red zone, where a leaf function may keep live data.  So each site
 * moves the stack pointer past the red zone around its nop (lea leaves the
 * flags alone), and the probe arguments are registers or constants only: an
 * operand relative to %rsp would be read 128 bytes off.  The leas sit inside
 * the semaphore-guarded block, so a detached site still costs one load and
 * one branch.  The bytes are spelled out because a comma cannot pass
 * through the macros of <sys/sdt.h>.
 *
 * Forks.  A child inherits the parent's text, where the kernel may have
 * rewritten an optimized site into a call to the trampoline, but not the
 * trampoline mapping (6.18): such a child would jump to an unmapped page.
 * So a process hits its sites only while they are armed: a page that fork
 * wipes (MADV_WIPEONFORK) holds PROBE_SITES_ARMED in the process that set
 * it up, and 0 in any child, however it was forked.  The atfork child
 * handler (probe_sites_fork_child) arms a child again when no semaphore was
 * raised at the fork (no site can have been rewritten for a tracer).  A
 * child forked while traced stays disarmed: its probes do not fire and the
 * host sees no tracer, as with int3 sites, whose semaphores the kernel
 * lowered in the child.  The page is set up at the first raised semaphore,
 * before any site is hit; if it cannot be, the sites stay disarmed.  All of
 * this is behind the semaphores: a detached site still costs one load and
 * one branch.
 */
#ifndef MEMPROF_PROBE_SITE_H
#define MEMPROF_PROBE_SITE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#if defined(__x86_64__)
/* clang-format off */
/* lea -128(%rsp), %rsp */
#define PROBE_SITE_SKIP_RED_ZONE .byte 0x48; .byte 0x8d; .byte 0x64; .byte 0x24; .byte 0x80
/* nopl 0x0(%rax,%rax,1): the 5-byte nop the kernel optimizes */
#define PROBE_SITE_NOP5 .byte 0x0f; .byte 0x1f; .byte 0x44; .byte 0x00; .byte 0x00
/* lea 128(%rsp), %rsp */
#define PROBE_SITE_RESTORE_RED_ZONE \
	.byte 0x48; .byte 0x8d; .byte 0xa4; .byte 0x24; .byte 0x80; .byte 0x00; .byte 0x00; .byte 0x00
/* <sys/sdt.h> writes "990:" before the nop; the note takes the last 990, the nop5. */
#undef _SDT_NOP
#define _SDT_NOP PROBE_SITE_SKIP_RED_ZONE; 990: PROBE_SITE_NOP5; PROBE_SITE_RESTORE_RED_ZONE
#undef STAP_SDT_ARG_CONSTRAINT
#define STAP_SDT_ARG_CONSTRAINT nr
/* clang-format on */
#endif

/* Is a semaphore raised (the kernel writes it while a uprobe is attached)? */
#define PROBE_SEMAPHORE_UP(s) (*(volatile unsigned short *)&(s) != 0)

#define PROBE_SITES_ARMED 1u

static _Atomic(volatile uint32_t *) probe_arm_page;

static inline volatile uint32_t *probe_arm_page_setup(void)
{
	long size = sysconf(_SC_PAGESIZE);
	void *p =
	    mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	volatile uint32_t *expected = NULL;

	if (p == MAP_FAILED)
		return NULL;
	if (madvise(p, (size_t)size, MADV_WIPEONFORK) != 0) {
		munmap(p, (size_t)size);
		return NULL;
	}
	*(volatile uint32_t *)p = PROBE_SITES_ARMED;
	if (!atomic_compare_exchange_strong(&probe_arm_page, &expected, (volatile uint32_t *)p)) {
		munmap(p, (size_t)size);
		return expected;
	}
	return p;
}

/* Called only once a semaphore is seen raised. */
static inline int probe_sites_armed(void)
{
	volatile uint32_t *page = atomic_load_explicit(&probe_arm_page, memory_order_acquire);

	if (!page)
		page = probe_arm_page_setup();
	return page && *page == PROBE_SITES_ARMED;
}

/* From the host's pthread_atfork child handler: any_up says whether a
 * semaphore is raised in the child. */
static inline void probe_sites_fork_child(int any_up)
{
	volatile uint32_t *page = atomic_load_explicit(&probe_arm_page, memory_order_acquire);

	if (page && !any_up)
		*page = PROBE_SITES_ARMED;
}

/*
 * The memprof:events buffer (memprof_probe_abi.h): promotions and deaths
 * are queued and handed over in one probe hit per collection, epoch or
 * full buffer.  The includer serialises the calls (its lock) and defines
 * memprof_events_semaphore.  Nothing is queued while no tracer listens.
 */
extern unsigned short memprof_events_semaphore;
extern struct memprof_probe_control memprof_probe_control;

struct probe_events {
	uint64_t ev[2 * MEMPROF_PROBE_EVENTS_MAX]; /* (event, CLOCK_MONOTONIC ns) pairs */
	volatile uint32_t n; /* queued; read without the lock to decide on a flush */
	uint64_t first_ns;   /* when the first one was queued, CLOCK_MONOTONIC_COARSE */
};

static inline uint64_t probe_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Hand the queued events to the tracer (one probe hit), empty the buffer. */
static inline void probe_events_flush(struct probe_events *b)
{
	uint64_t p = (uint64_t)(uintptr_t)b->ev, n = b->n, promotes = 0;

	if (n && PROBE_SEMAPHORE_UP(memprof_events_semaphore) && probe_sites_armed()) {
		DTRACE_PROBE2(memprof, events, p, n);
		for (uint64_t i = 0; i < n; i++)
			promotes +=
			    MEMPROF_PROBE_EVENT_WHAT(b->ev[2 * i]) == MEMPROF_PROBE_EV_PROMOTE;
		__atomic_fetch_add(&memprof_probe_control.promotes, promotes, __ATOMIC_RELAXED);
		__atomic_fetch_add(&memprof_probe_control.deallocs, n - promotes, __ATOMIC_RELAXED);
	}
	b->n = 0;
}

/*
 * Queue one event (MEMPROF_PROBE_EV_*); a death at death_ns
 * (CLOCK_MONOTONIC), or now when death_ns is 0.  Returns 1 when the buffer
 * is full: the caller flushes it (through its one probe_events_flush call,
 * so that the probe has one site per host).
 */
static inline int probe_events_add_at(struct probe_events *b, uint64_t id, unsigned what,
				      uint64_t death_ns)
{
	uint32_t n = b->n;

	if (!PROBE_SEMAPHORE_UP(memprof_events_semaphore))
		return 0;
	/* The age of the batch needs no precision: the coarse clock costs no
	 * time-stamp counter read. */
	if (n == 0)
		b->first_ns = probe_clock_ns(CLOCK_MONOTONIC_COARSE);
	b->ev[2 * n] = MEMPROF_PROBE_EVENT(id, what);
	/* A death ends a lifetime: its time, on bpf_ktime_get_ns's clock.  A
	 * promotion needs none. */
	b->ev[2 * n + 1] = what == MEMPROF_PROBE_EV_PROMOTE ? 0
			   : death_ns			    ? death_ns
							    : probe_clock_ns(CLOCK_MONOTONIC);
	b->n = n + 1;
	return n + 1 == MEMPROF_PROBE_EVENTS_MAX;
}

/* Queue one event, a death timed now. */
static inline int probe_events_add(struct probe_events *b, uint64_t id, unsigned what)
{
	return probe_events_add_at(b, id, what, 0);
}

/* Has a tracer asked for the queued events (memprof_probe_control.flush_request)? */
static inline int probe_flush_requested(void)
{
	return *(volatile __u64 *)&memprof_probe_control.flush_request !=
	       *(volatile __u64 *)&memprof_probe_control.flushed;
}

/* After flushing: the request read before it is served. */
static inline void probe_flush_served(__u64 request)
{
	__atomic_store_n(&memprof_probe_control.flushed, request, __ATOMIC_RELEASE);
}

/* Events queued for longer than max_ns (read without the lock)? */
/* Has a queue of n items whose first was queued at first_ns (coarse clock)
 * waited longer than max_ns?  Read without the queue's lock. */
static inline int probe_queue_stale(uint32_t n, uint64_t first_ns, uint64_t max_ns)
{
	return n && (int64_t)(probe_clock_ns(CLOCK_MONOTONIC_COARSE) - first_ns) > (int64_t)max_ns;
}

static inline int probe_events_stale(const struct probe_events *b, uint64_t max_ns)
{
	return probe_queue_stale(b->n, b->first_ns, max_ns);
}

/*
 * Between probe hits (a host's poll): serve a tracer's flush request, or
 * flush events queued for longer than max_ns.  flush is the includer's,
 * which takes its lock and calls probe_events_flush.
 */
static inline void probe_events_service(const struct probe_events *b, uint64_t max_ns,
					void (*flush)(void))
{
	if (__builtin_expect(probe_flush_requested(), 0)) {
		__u64 request = *(volatile __u64 *)&memprof_probe_control.flush_request;
		flush();
		probe_flush_served(request);
	} else if (__builtin_expect(probe_events_stale(b, max_ns), 0)) {
		flush();
	}
}

#endif
