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
 *   memprof:sample   (id, size, n_samples, kind_source,
 *                     stack_ptr, stack_len, inv_rate_q16)
 *       A block was sampled.  Fired once per tracked block, when its entry
 *       is created, before any callback runs.
 *         id            u64  nonzero, below 2^62, unique in the process,
 *                            never reused.
 *         size          u64  block size, in the sample's unit: words, header
 *                            excluded (runtime hosts: Gc.Memprof's size), or
 *                            requested bytes (MEMPROF_PROBE_F_BYTES: the
 *                            malloc host).
 *         n_samples     u64  >= 1: sample points in the block's span, the
 *                            units the sampler drew on: size + 1 words for a
 *                            word block of source NORMAL or MARSHAL (its
 *                            header included, as Gc.Memprof does), size for
 *                            source CUSTOM (a custom block's out-of-heap
 *                            words, no header) and for bytes.
 *         kind_source   u64  MEMPROF_PROBE_KIND(x) | MEMPROF_PROBE_SOURCE(x)
 *                            | MEMPROF_PROBE_F_* flags (unit, stack cut).
 *         stack_ptr     u64  user address of stack_len u64 stack entries
 *                            (return addresses, or OCaml debuginfos: see
 *                            MEMPROF_PROBE_STACK_OCAML), innermost first.
 *                            Valid only while the probe handler runs.
 *         stack_len     u64  <= MEMPROF_PROBE_MAX_STACK.  When the stack was
 *                            deeper, these are its innermost frames and
 *                            kind_source has MEMPROF_PROBE_F_STACK_CUT.
 *         inv_rate_q16  u64  round(65536 / lambda), lambda being the rate in
 *                            force for this sample, per unit (per word, or
 *                            per byte = rate per word / 8 with
 *                            MEMPROF_PROBE_F_BYTES).  The sample stands for
 *                            n_samples * inv_rate_q16 / 65536 units of its
 *                            span (a block's header word included), and
 *                            for that divided by the span objects: both
 *                            unbiased for any block, as E[n_samples] =
 *                            lambda * span (docs/design.md, "Estimates").
 *       The sample's time is the probe's (bpf_ktime_get_ns).
 *
 *   memprof:sample   (records_ptr, count)
 *       The batched form, told apart by its two arguments: count samples,
 *       in the order they were taken, in one probe hit, so that a traced
 *       sample does not pay a uprobe hit of its own.  A host fires it when
 *       its buffer is full, before every memprof:events (a block's sample
 *       comes before its events), at its polls once a sample has waited a
 *       while (the core: 10 ms), and when a tracer asks for a flush.  A
 *       host has one form of the probe, not both.
 *         records_ptr   u64  user address of count records of
 *                            MEMPROF_PROBE_REC_WORDS u64 each, at the
 *                            MEMPROF_PROBE_REC_* indexes: the seven values
 *                            above (stack_ptr pointing to host memory that
 *                            is valid while the handler runs) and the
 *                            sample's CLOCK_MONOTONIC time in ns.
 *         count         u64  1..MEMPROF_PROBE_SAMPLES_MAX.
 *
 *   memprof:events   (events_ptr, count)
 *       Promotions and deaths of tracked blocks, in the order they
 *       happened, batched: a host buffers them (at most
 *       MEMPROF_PROBE_EVENTS_MAX) and fires this probe once per minor
 *       collection, major collection, young epoch or full buffer (and
 *       before its sampling stops), never per event.
 *         events_ptr    u64  user address of count events of two u64
 *                            each: MEMPROF_PROBE_EVENT(id, what), then, for
 *                            a death, its CLOCK_MONOTONIC time in ns (the
 *                            clock of bpf_ktime_get_ns: lifetimes end when
 *                            the block died, not when its batch went); 0
 *                            for a promotion.
 *                            Valid only while the probe handler runs.
 *         count         u64  1..MEMPROF_PROBE_EVENTS_MAX.
 *       what is one of
 *         MEMPROF_PROBE_EV_PROMOTE       a tracked young block survived a
 *                                        minor collection (malloc host:
 *                                        outlived its young epoch).  At
 *                                        most once per id, after sample.
 *         MEMPROF_PROBE_EV_DEALLOC_MINOR a tracked block died young.
 *         MEMPROF_PROBE_EV_DEALLOC_MAJOR a tracked block died old.
 *       At most one dealloc per id.  A block whose tracking ends without a
 *       death (the profile was discarded, or the tracer detached) gets no
 *       dealloc; a host that forgets blocks so while a tracer is attached
 *       may say so with MEMPROF_PROBE_F_FORGOT.  An event follows its
 *       block's sample probe.
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
#define MEMPROF_PROBE_EVENTS "events"
#define MEMPROF_PROBE_GC "gc"

/* Longest call stack a sample probe hands over. */
#define MEMPROF_PROBE_MAX_STACK 128

/*
 * A stack entry is a return address, or, with MEMPROF_PROBE_STACK_OCAML
 * set, the user address of an OCaml debuginfo (the OCaml host, for frames
 * compiled with -g): the runtime's own record of the frame's location
 * (caml_debuginfo_extract of a Gc.Memprof callstack slot, the allocation's
 * own for the innermost frame), with the chain of the frames inlined there.
 * It is static data of the executable or shared object that holds the
 * code, with file-relative offsets only, so a tracer decodes it from the
 * mapped file, after the process has exited too; bits 56..62 say its
 * layout, which depends on the compiler's version:
 *   MEMPROF_PROBE_OCAML_DBG_V1  OCaml 4.11 to 5.1: two u32 words (line in
 *                               the second's bits 12..31, bit 0 of the
 *                               first: another debuginfo follows, inlined
 *                               into it), then a name record at the first
 *                               word's bits 2..25 (bytes from the debuginfo):
 *                               i32 offset of the file name from the record,
 *                               the defining function's name.
 *   MEMPROF_PROBE_OCAML_DBG_V2  OCaml 5.2 and later: the same, but the
 *                               second word's bit 31 set means a line in its
 *                               bits 12..30 and a record of i32, u16, u16,
 *                               i32 before the name; clear, the line is its
 *                               bits 19..31.
 * User addresses are below 2^56 (x86-64, 5-level paging included), so the
 * two kinds never meet.  Tracers store entries as opaque u64s.
 */
#define MEMPROF_PROBE_STACK_OCAML (1ull << 63)
#define MEMPROF_PROBE_STACK_FMT_SHIFT 56
#define MEMPROF_PROBE_STACK_ADDR_MASK ((1ull << MEMPROF_PROBE_STACK_FMT_SHIFT) - 1)
#define MEMPROF_PROBE_STACK_FMT(e) (((e) >> MEMPROF_PROBE_STACK_FMT_SHIFT) & 0x7fu)
#define MEMPROF_PROBE_OCAML_DBG_V1 1u
#define MEMPROF_PROBE_OCAML_DBG_V2 2u
#define MEMPROF_PROBE_STACK_OCAML_DBG(fmt, addr)                                                   \
	(MEMPROF_PROBE_STACK_OCAML | ((__u64)(fmt) << MEMPROF_PROBE_STACK_FMT_SHIFT) |             \
	 ((__u64)(addr)&MEMPROF_PROBE_STACK_ADDR_MASK))
/*
 * The outermost entry of a stack may instead name the domain that
 * allocated (the OCaml 5 host): MEMPROF_PROBE_STACK_DOMAIN(n), the tag bit
 * and format MEMPROF_PROBE_STACK_FMT_DOMAIN, the domain's id n (its
 * Domain.self ()) in the low bits.  It is not a frame: a tracer keeps it as
 * part of the stack (two domains' samples at one site are two stacks) and
 * shows it as a label.  At most one, always last; a full stack gives up
 * its outermost frame for it (and says MEMPROF_PROBE_F_STACK_CUT).
 */
#define MEMPROF_PROBE_STACK_FMT_DOMAIN 0x7fu
#define MEMPROF_PROBE_STACK_DOMAIN(n)                                                              \
	(MEMPROF_PROBE_STACK_OCAML |                                                               \
	 ((__u64)MEMPROF_PROBE_STACK_FMT_DOMAIN << MEMPROF_PROBE_STACK_FMT_SHIFT) |                \
	 ((__u64)(n)&MEMPROF_PROBE_STACK_ADDR_MASK))
#define MEMPROF_PROBE_STACK_IS_DOMAIN(e)                                                           \
	(((e)&MEMPROF_PROBE_STACK_OCAML) &&                                                        \
	 MEMPROF_PROBE_STACK_FMT(e) == MEMPROF_PROBE_STACK_FMT_DOMAIN)

/*
 * With the same tag, format MEMPROF_PROBE_PY_FRAME_V1 is a Python frame
 * (the Python host, runtime-probes/hosts/python/): the user address of a
 * frame record the host wrote, when it first met that (code object, line),
 * into its frame table, a shared mapping of a memfd named
 * MEMPROF_PROBE_PY_TABLE_NAME.  Records are written once, before any stack
 * names them, and never change or move, so a tracer reads them from that
 * file (held open: /proc/PID/map_files) after the code object died or the
 * process exited.  A record, 8-byte aligned:
 *   u32 line        the line being run (PyCode_Addr2Line), 0 if unknown
 *   u32 first_line  the code object's co_firstlineno
 *   u16 name_len    bytes of the qualified name (co_qualname), UTF-8
 *   u16 file_len    bytes of the file name (co_filename), UTF-8
 *   the name, a NUL, the file name, a NUL.
 */
#define MEMPROF_PROBE_PY_FRAME_V1 3u
#define MEMPROF_PROBE_PY_TABLE_NAME "memprof-python-frames"
#define MEMPROF_PROBE_PY_RECORD_HEADER 12u
/*
 * The Python host also exports this u32, written by a tracer before it
 * attaches: MEMPROF_PROBE_PY_NATIVE set, a stack holds every native frame
 * (interleaved with the Python frames); clear, only the native frames below
 * the innermost Python frame, then the Python frames (what a tracer without
 * --native shows), so the host unwinds only that far.  Set until a tracer
 * writes it.  With two tracers attached at once, the last one's holds.
 */
#define MEMPROF_PROBE_PY_OPTIONS_SYMBOL "memprof_probe_python_options"
#define MEMPROF_PROBE_PY_NATIVE 1u
/*
 * The OCaml host also exports this NUL-terminated string: the directory of
 * the standard library it was built against (the sources of stdlib frames
 * live there, when installed), "" if unknown.
 */
#define MEMPROF_PROBE_OCAML_STDLIB_SYMBOL "memprof_probe_ocaml_stdlib"

/*
 * A thread a host starts in the traced process (a flusher, a watcher, an
 * injected host's helper) is named with this prefix (pthread_setname_np):
 * a tracer counts the CPU time of the program's own threads without them.
 * A program's own thread must not take it.
 */
#define MEMPROF_PROBE_THREAD_PREFIX "memprof-"

/* A record of the batched memprof:sample: its u64 words. */
#define MEMPROF_PROBE_REC_ID 0
#define MEMPROF_PROBE_REC_SIZE 1
#define MEMPROF_PROBE_REC_N_SAMPLES 2
#define MEMPROF_PROBE_REC_KIND_SOURCE 3
#define MEMPROF_PROBE_REC_STACK_PTR 4
#define MEMPROF_PROBE_REC_STACK_LEN 5
#define MEMPROF_PROBE_REC_INV_RATE_Q16 6
#define MEMPROF_PROBE_REC_TIME_NS 7
#define MEMPROF_PROBE_REC_WORDS 8
/* Records per batched memprof:sample probe, at most. */
#define MEMPROF_PROBE_SAMPLES_MAX 256u

/* Events per memprof:events probe, at most. */
#define MEMPROF_PROBE_EVENTS_MAX 256u
/* An event: the block id (below 2^62) and what happened to it. */
#define MEMPROF_PROBE_EV_PROMOTE 0u
#define MEMPROF_PROBE_EV_DEALLOC_MINOR 1u
#define MEMPROF_PROBE_EV_DEALLOC_MAJOR 2u
#define MEMPROF_PROBE_EVENT(id, what) (((__u64)(id) << 2) | (__u64)(what))
#define MEMPROF_PROBE_EVENT_ID(ev) ((ev) >> 2)
#define MEMPROF_PROBE_EVENT_WHAT(ev) ((ev)&3u)

/* kind_source encoding. */
#define MEMPROF_PROBE_KIND_MINOR 0u
#define MEMPROF_PROBE_KIND_MAJOR 1u
#define MEMPROF_PROBE_KIND(ks) ((ks)&0xffu)
#define MEMPROF_PROBE_SOURCE(ks) (((ks) >> 8) & 0xffu)
#define MEMPROF_PROBE_KIND_SOURCE(kind, source) ((__u64)(kind) | ((__u64)(source) << 8))
/* kind_source flags. */
#define MEMPROF_PROBE_F_BYTES (1ull << 16)     /* size and rate are per byte, not per word */
#define MEMPROF_PROBE_F_STACK_CUT (1ull << 17) /* the stack was deeper than stack_len */

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
/* 2: memprof:events replaces memprof:promote and memprof:dealloc; units; 128 frames.
 * 3: memprof:sample may be batched (two arguments: records). */
#define MEMPROF_PROBE_ABI_VERSION 3u

/* flags, written by the host. */
#define MEMPROF_PROBE_F_IN_PROCESS 1u /* an in-process profile is sampling */
#define MEMPROF_PROBE_F_TRACER 2u     /* sampling was started for a tracer */
/*
 * Sticky until the tracer detaches: the host stopped following blocks it
 * had sampled for the tracer while they were still alive (an in-process
 * profile took over, and the runtime forgot them, as OCaml 4.13's
 * Gc.Memprof.stop does).  Those blocks get no dealloc: a tracer cannot tell
 * when they die.
 */
#define MEMPROF_PROBE_F_FORGOT 4u

/* The default rate a tracer requests, per word (a malloc host samples per byte at an
 * eighth of it). */
#define MEMPROF_PROBE_DEFAULT_RATE 1e-5

/*
 * The control block.  Layout is fixed: 8-byte aligned, 80 bytes, no
 * padding.  requested_rate and flush_request are written by tracers only;
 * every other field is written by the host only.
 *
 * Flush: before it detaches, a tracer adds 1 to flush_request and waits a
 * little until flushed equals it: at its next poll (a safe point, an
 * allocation slow path, the OCaml host's helper thread) the host fires
 * memprof:events with what it has queued, then stores flush_request in
 * flushed.  So the live view at detach lacks no death the host had seen.
 */
struct memprof_probe_control {
	__u64 magic;	       /* MEMPROF_PROBE_CONTROL_MAGIC */
	__u32 abi_version;     /* MEMPROF_PROBE_ABI_VERSION */
	__u32 flags;	       /* MEMPROF_PROBE_F_* */
	double requested_rate; /* 0 means MEMPROF_PROBE_DEFAULT_RATE */
	double active_rate;    /* rate in force, 0 when not sampling */
	__u64 samples;	       /* samples handed to memprof:sample so far (monotonic) */
	__u64 dropped;	       /* samples dropped (table growth failed) */
	__u64 promotes;	       /* promote events handed to memprof:events (monotonic) */
	__u64 deallocs;	       /* dealloc events handed to memprof:events (monotonic) */
	__u64 flush_request;   /* tracers: add 1 to get the queued events now */
	__u64 flushed;	       /* host: the flush_request it last served */
};

#endif
