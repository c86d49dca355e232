/*
 * The call chain of a thread of the target, stopped under ptrace by us
 * (inject_unwind.c): its PC and return addresses, from its call frame
 * information.
 */
#ifndef MEMPROF_INJECT_UNWIND_H
#define MEMPROF_INJECT_UNWIND_H

#include <stdint.h>
#include <sys/types.h>

/* Deeper chains are judged by their first INJECT_CHAIN_MAX frames and a
 * word scan above them. */
#define INJECT_CHAIN_MAX 512

struct inject_chain {
	uint64_t pc[INJECT_CHAIN_MAX]; /* [0] the PC, then each call (return address - 1) */
	int n;			       /* frames in pc */
	int complete;		       /* the chain reached its outermost frame */
	uint64_t last_sp;	       /* the stack pointer of the last frame unwound (0: none) */
};

struct inject_unwinder;

/* The process's modules, reported and opened.  NULL: no unwinding (the
 * caller judges by the stack's words alone). */
struct inject_unwinder *inject_unwinder_open(pid_t pid);
void inject_unwinder_close(struct inject_unwinder *u);
/* Unwind thread tid (stopped): out's frames, their count. */
int inject_unwind(struct inject_unwinder *u, pid_t tid, struct inject_chain *out);

#endif
