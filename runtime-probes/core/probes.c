/*
 * USDT probes (provider "memprof", see memprof_probe_abi.h), their
 * semaphores, the control block a tracer finds by ELF symbol, and the attach
 * protocol: a raised sample semaphore turns tracer-only sampling on when no
 * in-process profile samples; a lowered one turns it off and forgets the
 * blocks tracked only for the tracer.
 */
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"
#include "memprof_probes.h"

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#if defined(__x86_64__)
/*
 * Probe sites are 5-byte nops, not the 1-byte nop of <sys/sdt.h>.  A kernel
 * with the uprobe syscall (6.18 here) rewrites a uprobe on a 5-byte nop,
 * after its first hit, into a call to its [uprobes-trampoline], which skips
 * the int3 trap: one hit with a BPF program attached went from ~780 ns to
 * ~435 ns on this machine.  Older kernels trap on it as on any nop.
 *
 * That call and the trampoline push 32 bytes below the stack pointer, into
 * the red zone, where a leaf function may keep live data.  So each site moves
 * the stack pointer past the red zone around its nop (lea leaves the flags
 * alone), and the probe arguments are registers or constants only: an
 * operand relative to %rsp would be read 128 bytes off.  The leas sit inside
 * the semaphore-guarded block, so a detached site still costs one load and
 * one branch.  The bytes are spelled out because a comma cannot pass through
 * the macros of <sys/sdt.h>.
 */
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

/* The kernel increments these (uprobe ref_ctr_offset) while a probe is attached. */
unsigned short memprof_sample_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_promote_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_dealloc_semaphore __attribute__((section(".probes"), used));
unsigned short memprof_gc_semaphore __attribute__((section(".probes"), used));

__attribute__((used, visibility("default"))) struct memprof_probe_control memprof_probe_control = {
    .magic = MEMPROF_PROBE_CONTROL_MAGIC,
    .abi_version = MEMPROF_PROBE_ABI_VERSION,
};

/* Mirror of memprof_core.tracer_on, read without the lock by probe_poll. */
static atomic_int tracer_seen;

/*
 * Forks.  A child inherits the parent's text, where the kernel may have
 * rewritten an optimized site into a call to the trampoline, but not the
 * trampoline mapping (6.18): such a child would jump to an unmapped page.
 * So a process hits its sites only while they are armed: a page that fork
 * wipes (MADV_WIPEONFORK) holds PROBE_SITES_ARMED in the process that set
 * it up, and 0 in any child, however it was forked.  The atfork child
 * handler arms a child again when no semaphore was raised at the fork (no
 * site can have been rewritten for a tracer).  A child forked while traced
 * stays disarmed: its probes do not fire and probe_poll sees no tracer,
 * as with int3 sites, whose semaphores the kernel lowered in the child.
 * The page is set up at the first raised semaphore, before any site is hit;
 * if it cannot be, the sites stay disarmed.  All of this is behind the
 * semaphores: a detached site still costs one load and one branch.
 */
#define PROBE_SITES_ARMED 1u

static _Atomic(volatile uint32_t *) probe_arm_page;

static volatile uint32_t *probe_arm_page_setup(void)
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
static int probe_sites_armed(void)
{
	volatile uint32_t *page = atomic_load_explicit(&probe_arm_page, memory_order_acquire);

	if (!page)
		page = probe_arm_page_setup();
	return page && *page == PROBE_SITES_ARMED;
}

static int probe_any_semaphore_up(void)
{
	return SEMAPHORE_UP(memprof_sample_semaphore) || SEMAPHORE_UP(memprof_promote_semaphore) ||
	       SEMAPHORE_UP(memprof_dealloc_semaphore) || SEMAPHORE_UP(memprof_gc_semaphore);
}

static void probe_fork_child(void)
{
	volatile uint32_t *page = atomic_load_explicit(&probe_arm_page, memory_order_acquire);

	if (page && !probe_any_semaphore_up())
		*page = PROBE_SITES_ARMED;
}

__attribute__((constructor)) static void probe_sites_init(void)
{
	pthread_atfork(NULL, NULL, probe_fork_child);
}

void probe_fire_sample(uint64_t id, size_t wosize, size_t n_samples, unsigned kind, unsigned source,
		       const uintptr_t *stack, size_t stack_len, double lambda)
{
	double inv = lambda > 0 ? round((double)(1u << MEMPROF_PROBE_RATE_SHIFT) / lambda) : 0;
	uint64_t inv_q16 = inv >= 0x1p64 ? UINT64_MAX : (uint64_t)inv;
	uint64_t ks = MEMPROF_PROBE_KIND_SOURCE(kind, source);
	uint64_t sp = (uint64_t)(uintptr_t)stack;
	uint64_t sl = stack_len > MEMPROF_PROBE_MAX_STACK ? MEMPROF_PROBE_MAX_STACK : stack_len;
	uint64_t size = wosize, n = n_samples;

	if (SEMAPHORE_UP(memprof_sample_semaphore) && probe_sites_armed()) {
		DTRACE_PROBE7(memprof, sample, id, size, n, ks, sp, sl, inv_q16);
		__atomic_fetch_add(&memprof_probe_control.samples, 1, __ATOMIC_RELAXED);
	}
}

void probe_fire_promote(uint64_t id)
{
	if (SEMAPHORE_UP(memprof_promote_semaphore) && probe_sites_armed())
		DTRACE_PROBE1(memprof, promote, id);
}

void probe_fire_dealloc(uint64_t id, unsigned kind)
{
	uint64_t k = kind;

	if (SEMAPHORE_UP(memprof_dealloc_semaphore) && probe_sites_armed())
		DTRACE_PROBE2(memprof, dealloc, id, k);
}

void memprof_probe_gc(unsigned phase, uint64_t minor_heap_bytes, uint64_t major_heap_bytes)
{
	uint64_t p = phase;

	if (SEMAPHORE_UP(memprof_gc_semaphore) && probe_sites_armed())
		DTRACE_PROBE3(memprof, gc, p, minor_heap_bytes, major_heap_bytes);
}

void probe_count_dropped(void)
{
	memprof_core.stats.dropped++;
	__atomic_fetch_add(&memprof_probe_control.dropped, 1, __ATOMIC_RELAXED);
}

void probe_publish_locked(void)
{
	struct rate r;
	uint32_t flags = 0;

	if (memprof_core.sampling)
		flags = MEMPROF_PROBE_F_IN_PROCESS;
	else if (memprof_core.tracer_on)
		flags = MEMPROF_PROBE_F_TRACER;
	rate_read(&r);
	__atomic_store(&memprof_probe_control.active_rate, &r.lambda, __ATOMIC_RELAXED);
	__atomic_store_n(&memprof_probe_control.flags, flags, __ATOMIC_RELEASE);
}

static double probe_requested_rate(void)
{
	double want = *(volatile double *)&memprof_probe_control.requested_rate;

	if (isnan(want) || want <= 0 || want > 1)
		return MEMPROF_PROBE_DEFAULT_RATE;
	return want;
}

/* The tracer went away: entries kept only for it go, the others stop firing. */
static void probe_forget_locked(void)
{
	for (size_t i = 0; i < memprof_core.tbl.len; i++) {
		struct entry *e = &memprof_core.tbl.t[i];
		if (!e->traced)
			continue;
		e->traced = 0;
		entries_settle(i);
	}
	entries_compact();
}

int probe_poll(void)
{
	int up = SEMAPHORE_UP(memprof_sample_semaphore) && probe_sites_armed();

	if (up == atomic_load_explicit(&tracer_seen, memory_order_relaxed))
		return 0;
	int changed = 0;
	pthread_mutex_lock(&memprof_core.lock);
	if (up != memprof_core.tracer_on) {
		memprof_core.tracer_on = up;
		atomic_store_explicit(&tracer_seen, up, memory_order_relaxed);
		if (up)
			memprof_core.tracer_rate = probe_requested_rate();
		else
			probe_forget_locked();
		changed = memprof_core.sampling == NULL;
		rate_update_locked();
	}
	pthread_mutex_unlock(&memprof_core.lock);
	return changed;
}
