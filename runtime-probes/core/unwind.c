/*
 * The fast path of the core's call stacks on x86-64: the walk of
 * libunwind's own fast trace (unw_backtrace's, libunwind 1.6
 * src/x86_64/Gtrace.c), with the unwind rule of each return address kept
 * in a per-thread cache, so that a frame seen before costs one cache probe
 * and two loads.
 *
 * What must hold: a walk gives exactly the frames unw_backtrace would have
 * given from the same point (callstack.c compares the two on every capture
 * in the sanitized build, and tests/core/test_callstack.c checks them on
 * stacks of several shapes).  So it takes only the frames libunwind's fast
 * trace takes the same way, "standard" frames:
 *   - the CFA is %rsp or %rbp plus a constant (|offset| < 2^28);
 *   - the return address is saved at CFA - 8;
 *   - %rbp is unchanged, or saved at CFA + a constant (|c| < 2^14, c != -1),
 *     %rsp unchanged, undefined or saved likewise (the CFA is the new %rsp);
 * and stops where libunwind's unw_step says the stack ends: the return
 * address or %rbp undefined (the outermost frame: _start, a thread's
 * start), or a return address below UNWIND_MIN_RA.  Any other frame (a
 * signal frame, no unwind information, a CFA expression, a register saved
 * in another register) sends the whole capture back to unw_backtrace,
 * which may take it through libunwind's slow path.
 *
 * The rules come from the objects' .eh_frame (found through
 * .eh_frame_hdr's binary search table), as libunwind reads them: the CIE's
 * initial instructions, then the FDE's up to the address (the return
 * address - 1 for every frame but the first, as libunwind).
 *
 * The cache is per thread (no lock, no torn entry), direct-mapped, keyed
 * by the looked-up address, and cleared whenever the loader's counts of
 * objects added or removed (dl_iterate_phdr's dlpi_adds/dlpi_subs) changed
 * since it was filled: a cached rule never outlives its object's mapping.
 */
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#if UNWIND_FAST

/* Slots of a thread's cache, a power of two.  The sanitized build's is tiny,
 * so that its tests see addresses share slots. */
#ifdef MEMPROF_DEBUG
#define UNWIND_CACHE_SLOTS 4
#else
#define UNWIND_CACHE_SLOTS 1024
#endif
/* libunwind's fast trace takes a return address below this as the end. */
#define UNWIND_MIN_RA 0x4000
/* libunwind's bounds on a standard frame's offsets (Gstash_frame.c). */
#define UNWIND_MAX_CFA_OFFSET (1L << 28)
#define UNWIND_MAX_SAVE_OFFSET (1L << 14)
/* DW_CFA_remember_state nesting followed. */
#define UNWIND_STATE_DEPTH 8

/* DWARF register numbers on x86-64. */
#define DW_RBP 6
#define DW_RSP 7
#define DW_RIP 16

/* Pointer encodings (DW_EH_PE_*). */
#define PE_OMIT 0xff
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_DATAREL 0x30
#define PE_INDIRECT 0x80

enum rule_kind {
	RULE_EMPTY,    /* slot unused */
	RULE_RSP,      /* standard frame, CFA = %rsp + cfa_off */
	RULE_RBP,      /* standard frame, CFA = %rbp + cfa_off */
	RULE_LAST,     /* the outermost frame: the walk ends here */
	RULE_FALLBACK, /* anything else: unw_backtrace takes the capture */
};

struct unwind_rule {
	uintptr_t pc; /* the looked-up address (a return address - 1, or the first pc) */
	int32_t cfa_off;
	int16_t rbp_off;   /* where %rbp is saved, from the CFA (rbp_saved) */
	uint8_t rbp_saved; /* else %rbp is unchanged */
	uint8_t kind;	   /* enum rule_kind */
};

struct unwind_cache {
	unsigned long long adds, subs; /* the loader's counts the slots were filled under */
	size_t fast, fallbacks;	       /* captures of each kind (memprof_debug_unwind_stats) */
	/* A walk runs on this thread: a capture nested in it (a signal
	 * handler's) must not see a slot half written, so it falls back. */
	volatile int busy;
	struct unwind_rule slot[UNWIND_CACHE_SLOTS];
};

/* ---- Reading .eh_frame ---- */

static uint64_t read_uleb(const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		b = *p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*pp = p;
	return v;
}

static int64_t read_sleb(const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		b = *p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*pp = p;
	return (int64_t)v;
}

/* An encoded pointer (no indirection).  0, or -1 for an encoding not handled. */
static int read_encoded(const uint8_t **pp, uint8_t enc, uintptr_t datarel, uintptr_t *out)
{
	const uint8_t *p = *pp;
	uintptr_t base;
	uint64_t v;

	switch (enc & 0x70) {
	case PE_ABSPTR:
		base = 0;
		break;
	case PE_PCREL:
		base = (uintptr_t)p;
		break;
	case PE_DATAREL:
		base = datarel;
		break;
	default:
		return -1;
	}
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		memcpy(&v, p, 8);
		p += 8;
		break;
	case PE_ULEB128:
		v = read_uleb(&p);
		break;
	case PE_SLEB128:
		v = (uint64_t)read_sleb(&p);
		break;
	case PE_UDATA2: {
		uint16_t x;
		memcpy(&x, p, 2);
		v = x;
		p += 2;
		break;
	}
	case PE_SDATA2: {
		int16_t x;
		memcpy(&x, p, 2);
		v = (uint64_t)(int64_t)x;
		p += 2;
		break;
	}
	case PE_UDATA4: {
		uint32_t x;
		memcpy(&x, p, 4);
		v = x;
		p += 4;
		break;
	}
	case PE_SDATA4: {
		int32_t x;
		memcpy(&x, p, 4);
		v = (uint64_t)(int64_t)x;
		p += 4;
		break;
	}
	default:
		return -1;
	}
	*pp = p;
	*out = base + (uintptr_t)v;
	return 0;
}

/* The .eh_frame_hdr of the loaded object holding pc. */
struct hdr_query {
	uintptr_t pc;
	const uint8_t *hdr; /* NULL: no object, or it has none */
};

static int find_hdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct hdr_query *q = arg;
	const ElfW(Phdr) *eh = NULL;
	int holds = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && q->pc - start < ph->p_memsz)
			holds = 1;
		else if (ph->p_type == PT_GNU_EH_FRAME)
			eh = ph;
	}
	if (!holds)
		return 0;
	q->hdr = eh ? (const uint8_t *)(info->dlpi_addr + eh->p_vaddr) : NULL;
	return 1;
}

/* The FDE covering pc, through the header's sorted table.  NULL: none. */
static const uint8_t *find_fde(uintptr_t pc)
{
	struct hdr_query q = {.pc = pc};
	uintptr_t eh_frame, count, hdr;
	const uint8_t *p;

	dl_iterate_phdr(find_hdr, &q);
	if (!q.hdr || q.hdr[0] != 1)
		return NULL;
	hdr = (uintptr_t)q.hdr;
	p = q.hdr + 4;
	/* The table: (initial location, FDE) pairs, datarel sdata4, sorted. */
	if (q.hdr[1] == PE_OMIT || q.hdr[2] == PE_OMIT || q.hdr[3] != (PE_DATAREL | PE_SDATA4) ||
	    read_encoded(&p, q.hdr[1], hdr, &eh_frame) || read_encoded(&p, q.hdr[2], hdr, &count) ||
	    count == 0)
		return NULL;
	const int32_t *table = (const int32_t *)(const void *)p;
	size_t lo = 0, hi = count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (hdr + (intptr_t)table[2 * mid] <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (pc < hdr + (intptr_t)table[2 * lo])
		return NULL;
	return (const uint8_t *)(hdr + (intptr_t)table[2 * lo + 1]);
}

/* ---- The CFA program ---- */

enum where { W_SAME, W_UNDEF, W_CFAREL, W_OTHER };

struct reg_rule {
	uint8_t where; /* enum where */
	int64_t off;   /* W_CFAREL: saved at CFA + off */
};

struct row {
	uint64_t cfa_reg;
	int64_t cfa_off;
	int cfa_expr; /* the CFA is a DWARF expression */
	struct reg_rule rbp, rsp, rip;
};

struct cie {
	int has_z; /* its FDEs carry an augmentation length */
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	const uint8_t *insns, *end;
};

static struct reg_rule *row_reg(struct row *r, uint64_t reg)
{
	switch (reg) {
	case DW_RBP:
		return &r->rbp;
	case DW_RSP:
		return &r->rsp;
	case DW_RIP:
		return &r->rip;
	default:
		return NULL; /* registers the walk does not read */
	}
}

static void set_reg(struct row *r, uint64_t reg, uint8_t where, int64_t off)
{
	struct reg_rule *rr = row_reg(r, reg);

	if (rr) {
		rr->where = where;
		rr->off = off;
	}
}

static int parse_cie(const uint8_t *p, struct cie *c)
{
	uint32_t len;
	const char *aug;
	const uint8_t *aug_end = NULL;

	memcpy(&len, p, 4);
	if (len == 0 || len == 0xffffffffu)
		return -1;
	c->end = p + 4 + len;
	p += 8; /* length, CIE id */
	uint8_t version = *p++;
	if (version != 1 && version != 3)
		return -1;
	aug = (const char *)p;
	p += strlen(aug) + 1;
	c->code_align = read_uleb(&p);
	c->data_align = read_sleb(&p);
	uint64_t ra_reg = version == 1 ? *p++ : read_uleb(&p);
	if (ra_reg != DW_RIP)
		return -1;
	c->fde_enc = PE_ABSPTR;
	c->has_z = aug[0] == 'z';
	if (c->has_z) {
		uint64_t n = read_uleb(&p);
		aug_end = p + n;
		for (const char *a = aug + 1; *a; a++) {
			uintptr_t ignored;
			switch (*a) {
			case 'R':
				c->fde_enc = *p++;
				break;
			case 'L':
				p++;
				break;
			case 'P': {
				uint8_t enc = *p++;
				if (read_encoded(&p, enc & (uint8_t)~PE_INDIRECT, 0, &ignored))
					return -1;
				break;
			}
			default: /* 'S' (a signal frame) and the rest */
				return -1;
			}
		}
		p = aug_end;
	} else if (aug[0]) {
		return -1;
	}
	c->insns = p;
	return 0;
}

/* Run instructions [p, end) from loc; stop before the first row past pc.
 * init: the CIE's row (DW_CFA_restore), NULL while running the CIE's. */
static int run_cfa(const uint8_t *p, const uint8_t *end, const struct cie *c, uintptr_t loc,
		   uintptr_t pc, struct row *r, const struct row *init)
{
	struct row stack[UNWIND_STATE_DEPTH];
	unsigned depth = 0;

	while (p < end) {
		uint8_t op = *p++;
		uint64_t reg, delta = 0;
		int64_t off;
		int advance = 0;

		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			delta = op & 0x3f;
			advance = 1;
			break;
		case 2: /* DW_CFA_offset */
			set_reg(r, op & 0x3f, W_CFAREL, (int64_t)read_uleb(&p) * c->data_align);
			continue;
		case 3: /* DW_CFA_restore */
			if (!init)
				return -1;
			if (row_reg(r, op & 0x3f))
				*row_reg(r, op & 0x3f) = *row_reg((struct row *)init, op & 0x3f);
			continue;
		default:
			break;
		}
		if (!advance) {
			switch (op) {
			case 0x00: /* nop */
				continue;
			case 0x02: /* advance_loc1 */
				delta = *p++;
				break;
			case 0x03: { /* advance_loc2 */
				uint16_t x;
				memcpy(&x, p, 2);
				p += 2;
				delta = x;
				break;
			}
			case 0x04: { /* advance_loc4 */
				uint32_t x;
				memcpy(&x, p, 4);
				p += 4;
				delta = x;
				break;
			}
			case 0x05: /* offset_extended */
				reg = read_uleb(&p);
				set_reg(r, reg, W_CFAREL, (int64_t)read_uleb(&p) * c->data_align);
				continue;
			case 0x06: /* restore_extended */
				reg = read_uleb(&p);
				if (!init)
					return -1;
				if (row_reg(r, reg))
					*row_reg(r, reg) = *row_reg((struct row *)init, reg);
				continue;
			case 0x07: /* undefined */
				set_reg(r, read_uleb(&p), W_UNDEF, 0);
				continue;
			case 0x08: /* same_value */
				set_reg(r, read_uleb(&p), W_SAME, 0);
				continue;
			case 0x09: /* register */
				reg = read_uleb(&p);
				(void)read_uleb(&p);
				set_reg(r, reg, W_OTHER, 0);
				continue;
			case 0x0a: /* remember_state */
				if (depth == UNWIND_STATE_DEPTH)
					return -1;
				stack[depth++] = *r;
				continue;
			case 0x0b: /* restore_state */
				if (depth == 0)
					return -1;
				*r = stack[--depth];
				continue;
			case 0x0c: /* def_cfa */
				r->cfa_reg = read_uleb(&p);
				r->cfa_off = (int64_t)read_uleb(&p);
				r->cfa_expr = 0;
				continue;
			case 0x0d: /* def_cfa_register */
				r->cfa_reg = read_uleb(&p);
				r->cfa_expr = 0;
				continue;
			case 0x0e: /* def_cfa_offset */
				r->cfa_off = (int64_t)read_uleb(&p);
				continue;
			case 0x0f: /* def_cfa_expression */
				off = (int64_t)read_uleb(&p);
				p += off;
				r->cfa_expr = 1;
				continue;
			case 0x10: /* expression */
			case 0x16: /* val_expression */
				reg = read_uleb(&p);
				off = (int64_t)read_uleb(&p);
				p += off;
				set_reg(r, reg, W_OTHER, 0);
				continue;
			case 0x11: /* offset_extended_sf */
				reg = read_uleb(&p);
				set_reg(r, reg, W_CFAREL, read_sleb(&p) * c->data_align);
				continue;
			case 0x12: /* def_cfa_sf */
				r->cfa_reg = read_uleb(&p);
				r->cfa_off = read_sleb(&p) * c->data_align;
				r->cfa_expr = 0;
				continue;
			case 0x13: /* def_cfa_offset_sf */
				r->cfa_off = read_sleb(&p) * c->data_align;
				continue;
			case 0x14: /* val_offset */
				reg = read_uleb(&p);
				(void)read_uleb(&p);
				set_reg(r, reg, W_OTHER, 0);
				continue;
			case 0x15: /* val_offset_sf */
				reg = read_uleb(&p);
				(void)read_sleb(&p);
				set_reg(r, reg, W_OTHER, 0);
				continue;
			case 0x2e: /* GNU_args_size */
				(void)read_uleb(&p);
				continue;
			case 0x2f: /* GNU_negative_offset_extended */
				reg = read_uleb(&p);
				set_reg(r, reg, W_CFAREL, -(int64_t)read_uleb(&p) * c->data_align);
				continue;
			default: /* set_loc and anything unknown */
				return -1;
			}
		}
		/* An advance: rows at or below pc apply. */
		if (!init)
			return -1; /* no advance in a CIE */
		uintptr_t next = loc + delta * c->code_align;
		if (next > pc)
			return 0;
		loc = next;
	}
	return 0;
}

static int small(int64_t v, long bound)
{
	return v > -bound && v < bound;
}

/* The rule for address pc, as libunwind's fast trace would classify it. */
static void rule_parse(uintptr_t pc, struct unwind_rule *out)
{
	const uint8_t *fde = find_fde(pc), *p, *end;
	struct cie c;
	struct row init = {0}, r; /* every register W_SAME */
	uintptr_t start, range;
	uint32_t len, cie_off;

	out->kind = RULE_FALLBACK;
	out->rbp_saved = 0;
	out->cfa_off = 0;
	out->rbp_off = 0;
	if (!fde)
		return;
	memcpy(&len, fde, 4);
	memcpy(&cie_off, fde + 4, 4);
	if (len == 0 || len == 0xffffffffu || cie_off == 0 || parse_cie(fde + 4 - cie_off, &c) != 0)
		return;
	end = fde + 4 + len;
	p = fde + 8;
	if (read_encoded(&p, c.fde_enc, 0, &start) ||
	    read_encoded(&p, c.fde_enc & 0x0f, 0, &range) || pc - start >= range)
		return;
	if (c.has_z) {
		uint64_t n = read_uleb(&p);
		p += n;
	}
	if (run_cfa(c.insns, c.end, &c, start, pc, &init, NULL) != 0)
		return;
	r = init;
	if (run_cfa(p, end, &c, start, pc, &r, &init) != 0)
		return;
	if (r.cfa_expr || (r.cfa_reg != DW_RSP && r.cfa_reg != DW_RBP) ||
	    !small(r.cfa_off, UNWIND_MAX_CFA_OFFSET))
		return;
	/* unw_step's end of the stack: the return address or %rbp undefined. */
	if (r.rip.where == W_UNDEF || r.rbp.where == W_UNDEF) {
		out->kind = RULE_LAST;
		return;
	}
	if (r.rip.where != W_CFAREL || r.rip.off != -8)
		return;
	if (r.rsp.where == W_CFAREL ? !small(r.rsp.off, UNWIND_MAX_SAVE_OFFSET) || r.rsp.off == -1
				    : r.rsp.where != W_SAME && r.rsp.where != W_UNDEF)
		return;
	if (r.rbp.where == W_CFAREL) {
		if (!small(r.rbp.off, UNWIND_MAX_SAVE_OFFSET) || r.rbp.off == -1)
			return;
		out->rbp_saved = 1;
		out->rbp_off = (int16_t)r.rbp.off;
	} else if (r.rbp.where != W_SAME) {
		return;
	}
	out->cfa_off = (int32_t)r.cfa_off;
	out->kind = r.cfa_reg == DW_RSP ? RULE_RSP : RULE_RBP;
}

/* ---- The walk ---- */

struct loader_counts {
	unsigned long long adds, subs;
};

static int read_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct loader_counts *lc = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		lc->adds = info->dlpi_adds;
		lc->subs = info->dlpi_subs;
	}
	return 1; /* the first object is enough: the counts are the loader's */
}

/*
 * A thread's cache goes at its exit: memprof_thread_exit frees it, and a
 * thread-specific key's destructor does if the host never called that.
 */
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t cache_key;
static int cache_key_ok;

static void cache_release(void *c)
{
	if (memprof_ts.unwind == c)
		memprof_ts.unwind = NULL;
	free(c);
}

static void cache_key_create(void)
{
	cache_key_ok = pthread_key_create(&cache_key, cache_release) == 0;
}

/* The calling thread's cache, emptied if objects came or went since it was filled. */
static struct unwind_cache *cache_get(void)
{
	struct thread_state *ts = &memprof_ts;
	struct unwind_cache *c = ts->unwind;
	struct loader_counts lc = {0, 0};

	dl_iterate_phdr(read_counts, &lc);
	if (!c) {
		pthread_once(&cache_key_once, cache_key_create);
		if (!cache_key_ok)
			return NULL;
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		if (pthread_setspecific(cache_key, c) != 0) {
			free(c);
			return NULL;
		}
		ts->unwind = c;
	} else if (c->adds == lc.adds && c->subs == lc.subs) {
		return c;
	} else {
		memset(c->slot, 0, sizeof(c->slot));
	}
	c->adds = lc.adds;
	c->subs = lc.subs;
	return c;
}

static const struct unwind_rule *rule_get(struct unwind_cache *c, uintptr_t pc)
{
	struct unwind_rule *r =
	    &c->slot[(pc * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctz(UNWIND_CACHE_SLOTS))];

	if (r->kind == RULE_EMPTY || r->pc != pc) {
		rule_parse(pc, r);
		r->pc = pc;
	}
	return r;
}

size_t unwind_walk(uintptr_t *buf, size_t want, uintptr_t pc, uintptr_t sp, uintptr_t fp)
{
	struct unwind_cache *c;
	uintptr_t lookup = pc;
	size_t n = 0;

	if (want == 0)
		return 0;
	c = memprof_ts.unwind;
	if (c && c->busy)
		return UNWIND_FALLBACK;
	c = cache_get();
	if (!c)
		return UNWIND_FALLBACK;
	c->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	buf[n++] = pc;
	while (n < want) {
		const struct unwind_rule *r = rule_get(c, lookup);
		if (r->kind == RULE_LAST)
			break;
		if (r->kind != RULE_RSP && r->kind != RULE_RBP) {
			c->fallbacks++;
			atomic_signal_fence(memory_order_seq_cst);
			c->busy = 0;
			return UNWIND_FALLBACK;
		}
		uintptr_t cfa = (r->kind == RULE_RSP ? sp : fp) + (intptr_t)r->cfa_off;
		uintptr_t ra = *(const uintptr_t *)(cfa - 8);
		if (r->rbp_saved)
			fp = *(const uintptr_t *)(cfa + (intptr_t)r->rbp_off);
		sp = cfa;
		if (ra < UNWIND_MIN_RA)
			break;
		buf[n++] = ra;
		/* A return address follows its call: the call's rule is the one before. */
		lookup = ra - 1;
	}
	c->fast++;
	atomic_signal_fence(memory_order_seq_cst);
	c->busy = 0;
	return n;
}

void unwind_thread_exit(void)
{
	struct unwind_cache *c = memprof_ts.unwind;

	if (!c)
		return;
	pthread_setspecific(cache_key, NULL);
	cache_release(c);
}

void memprof_debug_unwind_stats(size_t *fast, size_t *fallbacks)
{
	const struct unwind_cache *c = memprof_ts.unwind;

	*fast = c ? c->fast : 0;
	*fallbacks = c ? c->fallbacks : 0;
}

#else

void unwind_thread_exit(void)
{
}

void memprof_debug_unwind_stats(size_t *fast, size_t *fallbacks)
{
	*fast = 0;
	*fallbacks = 0;
}

#endif
