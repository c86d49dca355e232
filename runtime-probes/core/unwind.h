/*
 * The fast unwinder's two halves (unwind.c: the cache and the walk;
 * unwind_cfi.c: the rule of an address, read from .eh_frame).  Private to
 * the core.
 */
#ifndef MEMPROF_UNWIND_H
#define MEMPROF_UNWIND_H

#include <link.h>
#include <stdint.h>

enum rule_kind {
	RULE_EMPTY,    /* slot unused (its pc is 0) */
	RULE_RSP,      /* standard frame, CFA = %rsp + cfa_off */
	RULE_RBP,      /* standard frame, CFA = %rbp + cfa_off */
	RULE_LAST,     /* the outermost frame: the walk ends here */
	RULE_FALLBACK, /* anything else: unw_backtrace takes the capture */
};

struct unwind_rule {
	uintptr_t pc; /* the looked-up address (a return address - 1, or the first pc); 0: empty */
	int32_t cfa_off;
	int16_t rbp_off;   /* where %rbp is saved, from the CFA (rbp_saved) */
	uint8_t rbp_saved; /* else %rbp is unchanged */
	uint8_t kind;	   /* enum rule_kind */
};

/* The loader's counts of objects added and removed (dl_iterate_phdr's). */
struct loader_counts {
	unsigned long long adds, subs;
};

/* The .eh_frame_hdr of the loaded object holding pc, and the loader's counts. */
struct hdr_query {
	uintptr_t pc;
	const uint8_t *hdr; /* NULL: no object, or it has none */
	struct loader_counts counts;
};

/* The loader's counts, from an object dl_iterate_phdr handed over. */
void unwind_counts_of(const struct dl_phdr_info *info, size_t size, struct loader_counts *lc);
/* The rule for q->pc, as libunwind's fast trace would classify it; the
 * loader's counts in q->counts (the search for pc's object reads them). */
void unwind_rule_parse(struct hdr_query *q, struct unwind_rule *out);

#endif
