/*
 * The fast unwinder's rules (unwind.c says what they are for): the rule of
 * an address read from its object's .eh_frame, as libunwind 1.6 reads it
 * (the FDE found through .eh_frame_hdr's sorted table; the CIE's initial
 * instructions, then the FDE's up to the address), and classified as
 * libunwind's fast trace classifies a frame (src/x86_64/Gstash_frame.c):
 * standard (CFA = %rsp or %rbp + c, the return address at CFA - 8, %rbp
 * unchanged or at CFA + c), the last one (the return address or %rbp
 * undefined: unw_step's end of the stack), or any other (a fallback).
 * Runs on a cache miss only.
 */
#include <link.h>
#include <string.h>

#include "core.h"

#if UNWIND_FAST

#include "unwind.h"

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
void unwind_counts_of(const struct dl_phdr_info *info, size_t size, struct loader_counts *lc)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		lc->adds = info->dlpi_adds;
		lc->subs = info->dlpi_subs;
	}
}
static int find_hdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct hdr_query *q = arg;
	const ElfW(Phdr) *eh = NULL;
	int holds = 0;

	unwind_counts_of(info, size, &q->counts);
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

/* The FDE covering q->pc, through the header's sorted table.  NULL: none. */
static const uint8_t *find_fde(struct hdr_query *q)
{
	uintptr_t eh_frame, count, hdr, pc = q->pc;
	const uint8_t *p;

	dl_iterate_phdr(find_hdr, q);
	if (!q->hdr || q->hdr[0] != 1)
		return NULL;
	hdr = (uintptr_t)q->hdr;
	p = q->hdr + 4;
	/* The table: (initial location, FDE) pairs, datarel sdata4, sorted. */
	if (q->hdr[1] == PE_OMIT || q->hdr[2] == PE_OMIT || q->hdr[3] != (PE_DATAREL | PE_SDATA4) ||
	    read_encoded(&p, q->hdr[1], hdr, &eh_frame) ||
	    read_encoded(&p, q->hdr[2], hdr, &count) || count == 0)
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

void unwind_rule_parse(struct hdr_query *q, struct unwind_rule *out)
{
	const uint8_t *fde = find_fde(q), *p, *end;
	uintptr_t pc = q->pc;
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

#endif
