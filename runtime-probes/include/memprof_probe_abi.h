/*
 * memprof probe ABI: the contract between a memprof host (the code that
 * fires the USDT probes) and a tracer (bpf/memprof.bpf.c and the loader).
 *
 * This header is include-free on purpose: it is included by C11 user-space
 * code (after <linux/types.h>) and by BPF code (after vmlinux.h).  It uses
 * only the fixed-width types __u8/__u16/__u32/__u64, which both define;
 * <stdint.h> does not.
 *
 * Provider: "memprof".  Every probe sits behind its USDT semaphore, so a
 * probe site costs one load and one predictable branch while no tracer is
 * attached.  The kernel raises a semaphore when a uprobe with
 * ref_ctr_offset is attached to that probe, and lowers it on detach.
 *
 * Probes and their arguments (in USDT argument order):
 *
 *   memprof:sample   (id, size_words, n_samples, kind_source,
 *                     stack_ptr, stack_len, inv_rate_q16)
 *       A block was sampled.  Fired once per tracked block, when its entry
 *       is created, before any callback runs.
 *         id            u64  nonzero, unique in the process, never reused.
 *         size_words    u64  block size in words, header excluded
 *                            (malloc host: bytes rounded up to words).
 *         n_samples     u64  >= 1.
 *         kind_source   u64  MEMPROF_PROBE_KIND(x) | MEMPROF_PROBE_SOURCE(x)
 *         stack_ptr     u64  user address of stack_len u64 return
 *                            addresses, innermost first.  Valid only while
 *                            the probe handler runs.
 *         stack_len     u64  <= MEMPROF_PROBE_MAX_STACK.
 *         inv_rate_q16  u64  round(65536 / lambda), lambda being the rate in
 *                            force for this sample.  The estimated words this
 *                            sample stands for are
 *                            n_samples * inv_rate_q16 / 65536.
 *
 *   memprof:promote  (id)
 *       A tracked young block survived a minor collection (or, in the malloc
 *       host, outlived its young epoch).  At most once per id, after sample.
 *
 *   memprof:dealloc  (id, kind)
 *       A tracked block died.  kind is MEMPROF_PROBE_KIND_MINOR when it died
 *       young, MEMPROF_PROBE_KIND_MAJOR otherwise.  At most once per id.
 *       A block whose tracking ends without a death (the profile was
 *       discarded, or the tracer detached) gets no dealloc.
 *
 *   memprof:gc       (phase, minor_heap_bytes, major_heap_bytes)
 *       Optional, for timelines.  phase is one of MEMPROF_PROBE_GC_*.
 *
 * Attach protocol:
 *   The host exports a struct memprof_probe_control under the ELF symbol
 *   MEMPROF_PROBE_CONTROL_SYMBOL.  A tracer first writes requested_rate
 *   (process_vm_writev), then attaches its uprobes.  At its next safe point
 *   the host sees the sample semaphore raised and, if no in-process profile
 *   is sampling, starts sampling at requested_rate.  When the semaphore
 *   drops back to zero the host stops that sampling and forgets the blocks
 *   it tracked for the tracer.  The host keeps active_rate and flags up to
 *   date so a tracer can report what is in force.
 */
#ifndef MEMPROF_PROBE_ABI_H
#define MEMPROF_PROBE_ABI_H

#define MEMPROF_PROBE_PROVIDER "memprof"
#define MEMPROF_PROBE_SAMPLE "sample"
#define MEMPROF_PROBE_PROMOTE "promote"
#define MEMPROF_PROBE_DEALLOC "dealloc"
#define MEMPROF_PROBE_GC "gc"

/* Longest call stack a sample probe hands over. */
#define MEMPROF_PROBE_MAX_STACK 64

/* kind_source encoding. */
#define MEMPROF_PROBE_KIND_MINOR 0u
#define MEMPROF_PROBE_KIND_MAJOR 1u
#define MEMPROF_PROBE_KIND(ks) ((ks)&0xffu)
#define MEMPROF_PROBE_SOURCE(ks) (((ks) >> 8) & 0xffu)
#define MEMPROF_PROBE_KIND_SOURCE(kind, source) ((__u64)(kind) | ((__u64)(source) << 8))

/* Sources, equal to enum memprof_source in memprof.h. */
#define MEMPROF_PROBE_SRC_NORMAL 0u
#define MEMPROF_PROBE_SRC_MARSHAL 1u
#define MEMPROF_PROBE_SRC_CUSTOM 2u

/* Fixed-point scale of inv_rate_q16. */
#define MEMPROF_PROBE_RATE_SHIFT 16

/* gc phases. */
#define MEMPROF_PROBE_GC_MINOR_START 0u
#define MEMPROF_PROBE_GC_MINOR_END 1u
#define MEMPROF_PROBE_GC_MAJOR_START 2u
#define MEMPROF_PROBE_GC_MAJOR_END 3u

#define MEMPROF_PROBE_CONTROL_SYMBOL "memprof_probe_control"
#define MEMPROF_PROBE_CONTROL_MAGIC 0x4d454d50524f4631ull /* "MEMPROF1" */
#define MEMPROF_PROBE_ABI_VERSION 1u

/* flags, written by the host. */
#define MEMPROF_PROBE_F_IN_PROCESS 1u /* an in-process profile is sampling */
#define MEMPROF_PROBE_F_TRACER 2u     /* sampling was started for a tracer */

/* The default rate a tracer requests, per word. */
#define MEMPROF_PROBE_DEFAULT_RATE 1e-5

/*
 * The control block.  Layout is fixed: 8-byte aligned, 48 bytes, no
 * padding.  requested_rate is written by tracers only; every other field is
 * written by the host only.
 */
struct memprof_probe_control {
	__u64 magic;	       /* MEMPROF_PROBE_CONTROL_MAGIC */
	__u32 abi_version;     /* MEMPROF_PROBE_ABI_VERSION */
	__u32 flags;	       /* MEMPROF_PROBE_F_* */
	double requested_rate; /* 0 means MEMPROF_PROBE_DEFAULT_RATE */
	double active_rate;    /* rate in force, 0 when not sampling */
	__u64 samples;	       /* sample probes fired so far (monotonic) */
	__u64 dropped;	       /* samples dropped (table growth failed) */
};

#endif
