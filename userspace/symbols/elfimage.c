/* ELF reading with libelf: segments, function symbols, stapsdt notes. */
#include "elfimage.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/types.h>
#include "memprof_probe_abi.h"

const char *const elf_probe_names[ELF_N_PROBES] = {MEMPROF_PROBE_SAMPLE, MEMPROF_PROBE_EVENTS,
						   MEMPROF_PROBE_GC};

#define STAPSDT_NOTE_TYPE 3
#define STAPSDT_NOTE_NAME "stapsdt"
#define PAGE_MASK_4K (~(uint64_t)0xfff)

struct reader {
	Elf *elf;
	const char *path;
	uint64_t file_size;
	char *err;
	size_t errlen;
	size_t strings_len, strings_cap;
};

static enum elf_image_status fail(struct reader *r, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->err, r->errlen, "%s: ", r->path);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < r->errlen)
		vsnprintf(r->err + n, r->errlen - n, fmt, ap);
	va_end(ap);
	return ELF_IMAGE_CORRUPT;
}

static int in_file(const struct reader *r, uint64_t off, uint64_t size)
{
	return off <= r->file_size && size <= r->file_size - off;
}

/* Every header, segment and section must lie inside the file. */
static enum elf_image_status check_bounds(struct reader *r, const GElf_Ehdr *eh)
{
	size_t nsec, nphdr;
	Elf_Scn *scn = NULL;

	if (!in_file(r, eh->e_phoff, (uint64_t)eh->e_phnum * eh->e_phentsize) ||
	    !in_file(r, eh->e_shoff, (uint64_t)eh->e_shnum * eh->e_shentsize))
		return fail(r, "truncated ELF file (headers past its end)");
	if (elf_getshdrnum(r->elf, &nsec) || elf_getphdrnum(r->elf, &nphdr))
		return fail(r, "corrupt ELF file (%s)", elf_errmsg(-1));
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(r->elf, i, &ph))
			return fail(r, "corrupt ELF program header (%s)", elf_errmsg(-1));
		if (!in_file(r, ph.p_offset, ph.p_filesz))
			return fail(r, "truncated ELF file (segment %zu past its end)", i);
	}
	while ((scn = elf_nextscn(r->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return fail(r, "corrupt ELF section header (%s)", elf_errmsg(-1));
		if (sh.sh_type != SHT_NOBITS && !in_file(r, sh.sh_offset, sh.sh_size))
			return fail(r, "truncated ELF file (section %zu past its end)",
				    elf_ndxscn(scn));
	}
	return ELF_IMAGE_OK;
}

static enum elf_image_status read_loads(struct reader *r, struct elf_image *img)
{
	size_t nphdr;

	if (elf_getphdrnum(r->elf, &nphdr))
		return fail(r, "corrupt ELF file (%s)", elf_errmsg(-1));
	img->loads = calloc(nphdr ? nphdr : 1, sizeof(*img->loads));
	if (!img->loads)
		return fail(r, "out of memory");
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(r->elf, i, &ph))
			continue;
		if (ph.p_type == PT_INTERP)
			img->has_interp = 1;
		if (ph.p_type == PT_LOAD)
			img->loads[img->n_loads++] =
			    (struct elf_load){.vaddr = ph.p_vaddr,
					      .offset = ph.p_offset,
					      .memsz = ph.p_memsz,
					      .exec = (ph.p_flags & PF_X) != 0};
	}
	return ELF_IMAGE_OK;
}

static const char *strings_add(struct reader *r, struct elf_image *img, const char *s, size_t *at)
{
	size_t len = strlen(s) + 1;

	if (r->strings_len + len > r->strings_cap) {
		size_t ncap = r->strings_cap ? 2 * r->strings_cap : 4096;
		char *p;

		while (ncap < r->strings_len + len)
			ncap *= 2;
		p = realloc(img->strings, ncap);
		if (!p)
			return NULL;
		img->strings = p;
		r->strings_cap = ncap;
	}
	memcpy(img->strings + r->strings_len, s, len);
	*at = r->strings_len;
	r->strings_len += len;
	return img->strings + *at;
}

/* The NUL-terminated string at data symbol sym, malloc'ed into *out (left
 * NULL when it is not in the file's data); -1 when out of memory. */
static int read_string(struct reader *r, const GElf_Sym *sym, char **out)
{
	Elf_Scn *scn = elf_getscn(r->elf, sym->st_shndx);
	GElf_Shdr sh;
	Elf_Data *data;
	uint64_t off;
	const char *p;
	size_t n;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
	    !(data = elf_getdata(scn, NULL)) || !data->d_buf || sym->st_value < sh.sh_addr)
		return 0;
	off = sym->st_value - sh.sh_addr;
	if (off >= data->d_size)
		return 0;
	p = (const char *)data->d_buf + off;
	n = strnlen(p, data->d_size - off);
	if (n == data->d_size - off || n > 4096)
		return 0;
	*out = strndup(p, n);
	return *out ? 0 : -1;
}

static enum elf_image_status read_symtab(struct reader *r, struct elf_image *img, Elf_Scn *scn,
					 const GElf_Shdr *sh, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return fail(r, "corrupt symbol table (%s)", elf_errmsg(-1));
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		size_t at;
		int type;

		if (!gelf_getsym(data, i, &sym))
			return fail(r, "corrupt symbol %zu (%s)", i, elf_errmsg(-1));
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(r->elf, sh->sh_link, sym.st_name);
		if (!name)
			return fail(r, "corrupt symbol name (%s)", elf_errmsg(-1));
		if (type == STT_OBJECT && !strcmp(name, MEMPROF_PROBE_CONTROL_SYMBOL)) {
			img->control_addr = sym.st_value;
			img->control_size = sym.st_size;
			continue;
		}
		if (type == STT_OBJECT && !strcmp(name, MEMPROF_PROBE_PY_OPTIONS_SYMBOL)) {
			img->py_options = sym.st_value;
			continue;
		}
		if (type == STT_OBJECT && !strcmp(name, MEMPROF_PROBE_OCAML_STDLIB_SYMBOL)) {
			if (!img->ocaml_stdlib && read_string(r, &sym, &img->ocaml_stdlib))
				return fail(r, "out of memory");
			continue;
		}
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !*name)
			continue;
		if (img->n_syms == *cap) {
			size_t ncap = *cap ? 2 * *cap : 256;
			struct elf_sym *v = realloc(img->syms, ncap * sizeof(*v));

			if (!v)
				return fail(r, "out of memory");
			img->syms = v;
			*cap = ncap;
		}
		if (!strings_add(r, img, name, &at))
			return fail(r, "out of memory");
		/* name is set once strings stop moving */
		img->syms[img->n_syms++] =
		    (struct elf_sym){.addr = sym.st_value, .size = sym.st_size, .name_off = at};
	}
	return ELF_IMAGE_OK;
}

/* Arguments of a USDT argument string ("8@%rdi -8@%rsi"): its words. */
static int usdt_arg_count(const char *args)
{
	int n = 0;

	for (const char *p = args; *p; p++)
		if (*p != ' ' && (p == args || p[-1] == ' '))
			n++;
	return n;
}

/*
 * One USDT argument as x86-64 tracers read it (SIZE@OPERAND, SIZE a
 * signed byte count: %reg, $imm, (%reg), off(%reg)); len bytes of it.
 */
static int usdt_arg_ok(const char *arg, size_t len)
{
	const char *p = arg, *end = arg + len;
	long size;
	char *q;

	size = strtol(p, &q, 10);
	if (q == p || q >= end || *q != '@' || size == 0 || size < -8 || size > 8)
		return 0;
	p = q + 1;
	if (p < end && *p == '$') {
		strtol(p + 1, &q, 0);
		return q > p + 1 && q == end;
	}
	if (p < end && (*p == '-' || (*p >= '0' && *p <= '9'))) {
		strtol(p, &q, 0);
		if (q == p)
			return 0;
		p = q;
	}
	if (p < end && *p == '(') {
		if (end - p < 4 || p[1] != '%' || end[-1] != ')')
			return 0;
		for (const char *c = p + 2; c < end - 1; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
				return 0;
		return 1;
	}
	if (p + 2 > end || *p != '%')
		return 0;
	for (const char *c = p + 1; c < end; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
			return 0;
	return 1;
}

/* Every argument of a USDT argument string is one a tracer can read. */
static int usdt_args_ok(const char *args)
{
	for (const char *p = args; *p;) {
		const char *e;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		for (e = p; *e && *e != ' '; e++)
			;
		if (!usdt_arg_ok(p, (size_t)(e - p)))
			return 0;
		p = e;
	}
	return 1;
}

static enum elf_image_status read_stapsdt(struct reader *r, struct elf_image *img, Elf_Scn *scn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!data)
		return fail(r, "corrupt .note.stapsdt (%s)", elf_errmsg(-1));
	for (; (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0; off = next) {
		const char *desc = (const char *)data->d_buf + desc_off, *prov, *name;
		const size_t addrs = 3 * sizeof(uint64_t);

		if (nh.n_type != STAPSDT_NOTE_TYPE || nh.n_namesz != sizeof(STAPSDT_NOTE_NAME) ||
		    memcmp((const char *)data->d_buf + name_off, STAPSDT_NOTE_NAME,
			   sizeof(STAPSDT_NOTE_NAME)))
			continue;
		if (nh.n_descsz < addrs + 2 || !memchr(desc + addrs, '\0', nh.n_descsz - addrs))
			return fail(r, "corrupt stapsdt note");
		prov = desc + addrs;
		name = prov + strlen(prov) + 1;
		if (name >= desc + nh.n_descsz || !memchr(name, '\0', desc + nh.n_descsz - name))
			return fail(r, "corrupt stapsdt note");
		if (strcmp(prov, MEMPROF_PROBE_PROVIDER))
			continue;
		const char *argstr = name + strlen(name) + 1;
		if (argstr >= desc + nh.n_descsz ||
		    !memchr(argstr, '\0', desc + nh.n_descsz - argstr) || !usdt_args_ok(argstr))
			return fail(
			    r, "corrupt stapsdt note: the arguments of memprof:%s cannot be read",
			    name);
		for (int p = 0; p < ELF_N_PROBES; p++)
			if (!strcmp(name, elf_probe_names[p]))
				img->probes |= 1u << p;
		if (!strcmp(name, MEMPROF_PROBE_SAMPLE)) {
			const char *args = name + strlen(name) + 1;

			memcpy(&img->sample_semaphore, desc + 2 * sizeof(uint64_t),
			       sizeof(uint64_t));
			if (args < desc + nh.n_descsz &&
			    memchr(args, '\0', desc + nh.n_descsz - args) &&
			    usdt_arg_count(args) == 2)
				img->probes |= ELF_PROBE_SAMPLE_BATCHED;
		}
	}
	/* Notes are 4-byte aligned: more than padding left is a note that
	 * does not fit (a probe of ours may be in it). */
	if (off + 4 <= data->d_size)
		return fail(r, "corrupt .note.stapsdt: a note runs past the section's end");
	return ELF_IMAGE_OK;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Prefer the sized symbol, then the longer one. */
	return x->size > y->size ? -1 : x->size < y->size;
}

static enum elf_image_status read_sections(struct reader *r, struct elf_image *img)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, cap = 0, kept = 0;
	enum elf_image_status st;

	if (elf_getshdrstrndx(r->elf, &shstrndx))
		return fail(r, "corrupt ELF file (%s)", elf_errmsg(-1));
	while ((scn = elf_nextscn(r->elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return fail(r, "corrupt section header (%s)", elf_errmsg(-1));
		name = elf_strptr(r->elf, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			st = read_symtab(r, img, scn, &sh, &cap);
		else if (sh.sh_type == SHT_NOTE && name && !strcmp(name, ".note.stapsdt"))
			st = read_stapsdt(r, img, scn);
		else
			continue;
		if (st != ELF_IMAGE_OK)
			return st;
	}
	for (size_t i = 0; i < img->n_syms; i++)
		img->syms[i].name = img->strings + img->syms[i].name_off;
	if (img->n_syms)
		qsort(img->syms, img->n_syms, sizeof(*img->syms), sym_cmp);
	for (size_t i = 0; i < img->n_syms; i++)
		if (!kept || img->syms[kept - 1].addr != img->syms[i].addr)
			img->syms[kept++] = img->syms[i];
	img->n_syms = kept;
	return ELF_IMAGE_OK;
}

enum elf_image_status elf_image_open(const char *path, struct elf_image *out, char *err,
				     size_t errlen)
{
	struct reader r = {.path = path, .err = err, .errlen = errlen};
	enum elf_image_status st;
	unsigned char ident[EI_NIDENT];
	struct stat sb;
	GElf_Ehdr eh;
	int fd;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return ELF_IMAGE_IO;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ELF_IMAGE_IO;
	}
	r.file_size = sb.st_size;
	if (pread(fd, ident, sizeof(ident), 0) < SELFMAG || memcmp(ident, ELFMAG, SELFMAG)) {
		close(fd);
		return ELF_IMAGE_NOT_ELF;
	}
	r.elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!r.elf) {
		st = fail(&r, "corrupt ELF file (%s)", elf_errmsg(-1));
	} else if (r.file_size < sizeof(Elf64_Ehdr) || !gelf_getehdr(r.elf, &eh)) {
		st = fail(&r, "truncated ELF file (no complete ELF header)");
	} else if (gelf_getclass(r.elf) != ELFCLASS64) {
		st = fail(&r, "not a 64-bit ELF file");
	} else {
		st = check_bounds(&r, &eh);
		if (st == ELF_IMAGE_OK)
			st = read_loads(&r, out);
		if (st == ELF_IMAGE_OK)
			st = read_sections(&r, out);
	}
	if (r.elf)
		elf_end(r.elf);
	close(fd);
	if (st != ELF_IMAGE_OK)
		elf_image_free(out);
	return st;
}

void elf_image_free(struct elf_image *img)
{
	free(img->loads);
	free(img->syms);
	free(img->strings);
	free(img->ocaml_stdlib);
	memset(img, 0, sizeof(*img));
}

uint64_t elf_image_bias(const struct elf_image *img, uint64_t start, uint64_t offset)
{
	for (size_t i = 0; i < img->n_loads; i++) {
		const struct elf_load *l = &img->loads[i];

		if ((l->offset & PAGE_MASK_4K) == offset)
			return start - (l->vaddr & PAGE_MASK_4K);
	}
	return start - offset;
}

const struct elf_sym *elf_image_lookup(const struct elf_image *img, uint64_t vaddr)
{
	size_t lo = 0, hi = img->n_syms;
	const struct elf_sym *s;

	/* Last symbol with addr <= vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &img->syms[lo - 1];
	if (s->size ? vaddr < s->addr + s->size : lo < img->n_syms)
		return s;
	return NULL;
}
