/* Return addresses -> frames with lines, through elfutils' libdwfl. */
#include "dwarf_symbolize.h"

#include <dwarf.h>
#include <fcntl.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "heap_idmap.h"
#include "debug_cache.h"
#include "demangle.h"
#include "memprof_probe_abi.h"
#include "ocaml_debuginfo.h"
#include "python_frames.h"

/* A function symbol of a module, at its runtime address. */
struct msym {
	uint64_t addr, size;
	const char *name; /* in libdwfl's string tables: lives as long as the Dwfl */
	int rank;	  /* binding: 0 global, 1 weak, 2 local (lower wins a tie) */
	int index;	  /* in the symbol table (lower wins a tie, as in libdwfl) */
};

struct dmod {
	struct dsym_module pub;
	Dwfl_Module *mod;
	uint64_t bias; /* runtime address - ELF address */
	/*
	 * The module's function symbols sorted by address, read once from the
	 * symbol table libdwfl chose (the file's .symtab, else the debug
	 * file's, else .dynsym, plus MiniDebugInfo's): a lookup is a binary
	 * search.  dwfl_module_addrinfo scans the whole table at every call,
	 * which on libLLVM's ~10^5 symbols cost about 1 ms per address.
	 */
	struct msym *syms;
	size_t n_syms;
	int syms_read;
};

/* A mapped file held open to read OCaml debuginfos from. */
struct open_file {
	char *path; /* the region's open_path */
	int fd;
};

struct dsym {
	struct symbolizer *sym;
	Dwfl *dwfl;
	Dwfl_Callbacks callbacks;
	unsigned flags;
	struct dmod *mods;
	size_t n_mods;
	/* The cache: every address resolved (pc - 1, plus one: idmap's keys are
	 * nonzero) -> its frame (struct dsym_frame *). */
	struct idmap frames;
	size_t n_addresses, n_lines;
	struct open_file *files; /* OCaml debuginfos' files */
	size_t n_files;
	char *ocaml_stdlib; /* the OCaml host's stdlib directory, once looked for */
	int ocaml_stdlib_read;
	int released; /* dsym_release_readers: only frames already resolved */
};

/* ---- debuginfod, bounded in time ---- */

static double debuginfod_spent;

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * libdwfl asks debuginfod (when DEBUGINFOD_URLS is set) after the local
 * places fail.  Each query is bounded by the client's DEBUGINFOD_TIMEOUT and
 * DEBUGINFOD_MAXTIME (set here when the user did not), and once the run's
 * budget is spent the servers are no longer asked: the output is never held
 * up by a slow or unreachable server.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	const unsigned char *bits;
	char *saved = NULL;
	GElf_Addr vaddr;
	double t0;
	int fd, n = dwfl_module_build_id(mod, &bits, &vaddr);

	/*
	 * A plain copy of a compressed system debug file (debug_cache.h), for
	 * the module's own debug file only: libdwfl asks this callback for a
	 * dwz alternate file too, with its name and a CRC of 0, and that one
	 * is looked for as libdwfl does.
	 */
	if (n > 0 && !(debuglink_file && !debuglink_crc) &&
	    (fd = debug_cache_find(bits, (size_t)n, debuginfo_file_name)) >= 0)
		return fd;
	if (urls && *urls) {
		/*
		 * The client checks DEBUGINFOD_MAXTIME from curl's progress
		 * callback, about once a second: a query may overrun it by a
		 * second, so it gets one second less than what is left.
		 */
		int maxtime = (int)(DSYM_DEBUGINFOD_BUDGET_S - debuginfod_spent) - 1;

		if (maxtime < 1) {
			saved = strdup(urls);
			unsetenv("DEBUGINFOD_URLS");
		} else {
			char v[32];

			snprintf(v, sizeof(v), "%d", maxtime);
			setenv("DEBUGINFOD_MAXTIME", v, 1);
			setenv("DEBUGINFOD_TIMEOUT", "5", 0);
		}
	}
	t0 = mono_now();
	fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	if (urls && *urls)
		debuginfod_spent += mono_now() - t0;
	if (saved) {
		setenv("DEBUGINFOD_URLS", saved, 1);
		free(saved);
	}
	return fd;
}

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

/* ---- Modules ---- */

static void module_build_id(struct dmod *m)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = m->mod ? dwfl_module_build_id(m->mod, &bits, &vaddr) : 0;

	m->pub.build_id[0] = '\0';
	if (n <= 0 || n > 64)
		return;
	for (int i = 0; i < n; i++)
		snprintf(m->pub.build_id + 2 * i, 3, "%02x", bits[i]);
}

struct dsym *dsym_new(struct symbolizer *sym, unsigned flags)
{
	const struct proc_maps *maps = symbolizer_maps(sym);
	struct dsym *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	idmap_init(&d->frames, &heap_idmap_allocator, 64);
	d->sym = sym;
	d->flags = flags;
	d->callbacks.find_elf = dwfl_build_id_find_elf;
	d->callbacks.find_debuginfo = flags & DSYM_NO_DWARF ? no_debuginfo : find_debuginfo;
	d->callbacks.section_address = dwfl_offline_section_address;
	d->dwfl = dwfl_begin(&d->callbacks);
	d->mods = calloc(maps->n ? maps->n : 1, sizeof(*d->mods));
	if (!d->dwfl || !d->mods) {
		dsym_free(d);
		return NULL;
	}
	dwfl_report_begin(d->dwfl);
	for (size_t i = 0; i < maps->n; i++) {
		const struct map_region *r = &maps->regions[i], *first;
		const struct elf_image *img;
		struct dmod *m;
		char err[1];

		first = proc_maps_first_of(maps, r->path);
		if (first != r || symbolizer_image(sym, r, &img, err, 0) != ELF_IMAGE_OK)
			continue;
		m = &d->mods[d->n_mods++];
		m->pub.path = strdup(r->path);
		if (!m->pub.path) {
			d->n_mods--;
			continue;
		}
		m->pub.name =
		    strrchr(m->pub.path, '/') ? strrchr(m->pub.path, '/') + 1 : m->pub.path;
		m->pub.start = r->start;
		m->pub.offset = r->offset;
		m->pub.limit = r->end;
		for (size_t j = i + 1; j < maps->n; j++)
			if (!strcmp(maps->regions[j].path, r->path) &&
			    maps->regions[j].end > m->pub.limit)
				m->pub.limit = maps->regions[j].end;
		m->bias = elf_image_bias(img, r->start, r->offset);
		m->mod = dwfl_report_elf(d->dwfl, m->pub.name, r->open_path, -1, m->bias, true);
		if (m->mod) {
			void **ud;

			dwfl_module_info(m->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
			*ud = m;
		}
		module_build_id(m);
	}
	dwfl_report_end(d->dwfl, NULL, NULL);
	return d;
}

static void frame_free(struct dsym_frame *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_lines; i++) {
		free(f->lines[i].function);
		free(f->lines[i].system_name);
		free(f->lines[i].file);
	}
	free(f->lines);
	free(f);
}

void dsym_free(struct dsym *d)
{
	if (!d)
		return;
	dsym_release_readers(d);
	for (size_t i = 0; i < d->n_mods; i++)
		free(d->mods[i].pub.path);
	for (size_t j = 0; j < d->frames.n_slots; j++)
		if (d->frames.slots[j].key)
			frame_free((struct dsym_frame *)(uintptr_t)d->frames.slots[j].value);
	idmap_clear(&d->frames);
	free(d->mods);
	free(d);
}

void dsym_release_readers(struct dsym *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_mods; i++) {
		free(d->mods[i].syms);
		d->mods[i].syms = NULL;
		d->mods[i].n_syms = 0;
		d->mods[i].mod = NULL;
	}
	for (size_t i = 0; i < d->n_files; i++) {
		if (d->files[i].fd >= 0)
			close(d->files[i].fd);
		free(d->files[i].path);
	}
	free(d->files);
	d->files = NULL;
	d->n_files = 0;
	free(d->ocaml_stdlib);
	d->ocaml_stdlib = NULL;
	if (d->dwfl)
		dwfl_end(d->dwfl);
	d->dwfl = NULL;
	d->released = 1;
}

size_t dsym_n_modules(const struct dsym *d)
{
	return d->n_mods;
}

const struct dsym_module *dsym_module(const struct dsym *d, size_t i)
{
	return &d->mods[i].pub;
}

void dsym_counts(const struct dsym *d, size_t *addresses, size_t *lines)
{
	*addresses = d->n_addresses;
	*lines = d->n_lines;
}

/* Longest source path of an OCaml frame. */
#define PATH_MAX_OCAML 4096

/* ---- Function symbols: one sorted table per module ---- */

static int msym_cmp(const void *a, const void *b)
{
	const struct msym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address: the sized symbol, the global one, the first one. */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->index - y->index;
}

/* Read m's function symbols once; without them lookups find nothing. */
static void module_symbols(struct dmod *m)
{
	int n;
	size_t kept = 0;

	m->syms_read = 1;
	n = m->mod ? dwfl_module_getsymtab(m->mod) : -1;
	if (n <= 1)
		return;
	m->syms = malloc((size_t)n * sizeof(*m->syms));
	if (!m->syms)
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name =
		    dwfl_module_getsym_info(m->mod, i, &s, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(s.st_info), bind = GELF_ST_BIND(s.st_info);

		if (!name || !*name || s.st_shndx == SHN_UNDEF || !s.st_value ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		m->syms[m->n_syms++] = (struct msym){
		    .addr = addr,
		    .size = s.st_size,
		    .name = name,
		    .rank = bind == STB_GLOBAL ? 0
			    : bind == STB_WEAK ? 1
					       : 2,
		    .index = i,
		};
	}
	qsort(m->syms, m->n_syms, sizeof(*m->syms), msym_cmp);
	/* One symbol per address: the first after sorting. */
	for (size_t i = 0; i < m->n_syms; i++)
		if (!kept || m->syms[kept - 1].addr != m->syms[i].addr)
			m->syms[kept++] = m->syms[i];
	m->n_syms = kept;
}

/* How far back a lookup looks for a sized symbol around a smaller one. */
#define MSYM_NESTED_BACK 8

/*
 * The function symbol holding runtime address addr: the nearest at or below
 * it whose size covers it, else a sizeless one directly below it (an
 * assembly function), else NULL.
 */
static const char *module_symbol(struct dmod *m, uint64_t addr)
{
	size_t lo = 0, hi;
	const struct msym *s;

	if (!m->syms_read)
		module_symbols(m);
	hi = m->n_syms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &m->syms[lo - 1];
	if (!s->size)
		return lo < m->n_syms ? s->name : NULL;
	for (size_t k = 0; k < MSYM_NESTED_BACK && k < lo; k++) {
		s = &m->syms[lo - 1 - k];
		if (s->size && addr < s->addr + s->size)
			return s->name;
	}
	return NULL;
}

/* ---- Resolution ---- */

static int push_line(struct dsym_frame *f, size_t *cap, char *function, const char *system,
		     const char *file, int line, int start_line, int inlined)
{
	struct dsym_line *l;

	if (!function)
		return -1;
	if (f->n_lines == *cap) {
		size_t ncap = *cap ? *cap * 2 : 2;
		struct dsym_line *nl = realloc(f->lines, ncap * sizeof(*nl));

		if (!nl) {
			free(function);
			return -1;
		}
		f->lines = nl;
		*cap = ncap;
	}
	l = &f->lines[f->n_lines++];
	*l = (struct dsym_line){
	    .function = function, .line = line, .start_line = start_line, .inlined = inlined};
	l->system_name = system ? strdup(system) : NULL;
	l->file = file ? strdup(file) : NULL;
	return 0;
}

static const char *die_string(Dwarf_Die *die, unsigned name)
{
	Dwarf_Attribute a;

	return dwarf_formstring(dwarf_attr_integrate(die, name, &a));
}

static const char *die_linkage_name(Dwarf_Die *die)
{
	const char *s = die_string(die, DW_AT_linkage_name);

	return s ? s : die_string(die, DW_AT_MIPS_linkage_name);
}

/* Inline chain at f->addr from the DWARF scopes, innermost first. */
static int dwarf_lines(struct dmod *m, struct dsym_frame *f, size_t *cap, const char *symname)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(m->mod, f->addr, &bias), *scopes = NULL;
	Dwfl_Line *src = dwfl_module_getsrc(m->mod, f->addr);
	const char *file = NULL;
	Dwarf_Files *files = NULL;
	size_t n_files = 0;
	int line = 0, n, rc = 0;

	if (src)
		file = dwfl_lineinfo(src, NULL, &line, NULL, NULL, NULL);
	if (!cu)
		return 0;
	if (dwarf_getsrcfiles(cu, &files, &n_files))
		files = NULL;
	/*
	 * The innermost function scope at the address (the scopes of an
	 * inlined body come from its abstract tree), then the concrete chain
	 * around it: inlined_subroutine ... subprogram.
	 */
	n = dwarf_getscopes(cu, f->addr - bias, &scopes);
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			Dwarf_Die innermost = scopes[i];

			free(scopes);
			scopes = NULL;
			n = dwarf_getscopes_die(&innermost, &scopes);
			break;
		}
		if (i == n - 1)
			n = 0;
	}
	for (int i = 0; i < n && !rc; i++) {
		Dwarf_Die *s = &scopes[i];
		int tag = dwarf_tag(s), start = 0;
		const char *linkage, *plain;
		Dwarf_Attribute a;
		Dwarf_Word v;
		char *name;

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		linkage = die_linkage_name(s);
		plain = die_string(s, DW_AT_name);
		if (tag == DW_TAG_subprogram && symname)
			linkage = symname; /* the symbol names clones too (foo.constprop.0) */
		if (linkage || plain) {
			name = demangle(linkage ? linkage : plain);
			dwarf_decl_line(s, &start);
			rc = push_line(f, cap, name, linkage, file, line, start,
				       tag == DW_TAG_inlined_subroutine);
		}
		if (tag == DW_TAG_subprogram)
			break;
		/* Where the inlined code was called from, in its caller. */
		file = NULL;
		line = 0;
		if (files && dwarf_formudata(dwarf_attr(s, DW_AT_call_file, &a), &v) == 0)
			file = dwarf_filesrc(files, v, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(s, DW_AT_call_line, &a), &v) == 0)
			line = (int)v;
	}
	free(scopes);
	/* No function DIE: the symbol, still with its line. */
	if (!rc && f->n_lines == 0 && symname && file)
		rc = push_line(f, cap, demangle(symname), symname, file, line, 0, 0);
	/* The last line is the outer function: not inlined. */
	if (f->n_lines)
		f->lines[f->n_lines - 1].inlined = 0;
	return rc;
}

static struct dsym_frame *resolve(struct dsym *d, struct dmod *m, uint64_t addr)
{
	struct dsym_frame *f = calloc(1, sizeof(*f));
	const char *symname = NULL;
	size_t cap = 0;
	char buf[320];

	if (!f)
		return NULL;
	f->addr = addr;
	f->module = m ? (int)(m - d->mods) : -1;
	if (m && m->mod) {
		Dwarf_Addr mbias = 0;

		symname = module_symbol(m, addr);
		if (!(d->flags & DSYM_NO_DWARF) && dwfl_module_getdwarf(m->mod, &mbias)) {
			m->pub.has_dwarf = 1;
			if (dwarf_lines(m, f, &cap, symname))
				goto fail;
		}
	}
	if (m) {
		f->rel = addr - m->bias;
	} else {
		f->rel = addr;
	}
	f->named = f->n_lines > 0 || symname;
	if (!f->n_lines) {
		if (symname) {
			if (push_line(f, &cap, demangle(symname), symname, NULL, 0, 0, 0))
				goto fail;
		} else {
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, m ? m->pub.name : "[unknown]",
				 f->rel);
			if (push_line(f, &cap, strdup(buf), NULL, NULL, 0, 0, 0))
				goto fail;
		}
	}
	d->n_addresses++;
	d->n_lines += f->n_lines;
	return f;
fail:
	frame_free(f);
	return NULL;
}

static struct dmod *module_of(struct dsym *d, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(d->dwfl, addr);

	if (mod) {
		void **ud;

		dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		if (*ud)
			return *ud;
	}
	for (size_t i = 0; i < d->n_mods; i++)
		if (addr >= d->mods[i].pub.start && addr < d->mods[i].pub.limit)
			return &d->mods[i];
	return NULL;
}

/* ---- OCaml debuginfos (memprof_probe_abi.h, MEMPROF_PROBE_STACK_OCAML) ---- */

/* The fd of path, opened once (-1 if it cannot be). */
static int open_file(struct dsym *d, const char *path)
{
	struct open_file *v;

	for (size_t i = 0; i < d->n_files; i++)
		if (!strcmp(d->files[i].path, path))
			return d->files[i].fd;
	v = realloc(d->files, (d->n_files + 1) * sizeof(*v));
	if (!v)
		return -1;
	d->files = v;
	v[d->n_files].path = strdup(path);
	if (!v[d->n_files].path)
		return -1;
	v[d->n_files].fd = open(path, O_RDONLY | O_CLOEXEC);
	return v[d->n_files++].fd;
}

/* Bytes at addr of the target, from the file mapped there (ocaml_dbg_read_fn). */
static long read_mapped(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct dsym *d = ctx;
	const struct map_region *r = proc_maps_find(symbolizer_maps(d->sym), addr);
	int fd;

	if (!r || !r->open_path)
		return -1;
	fd = open_file(d, r->open_path);
	if (fd < 0)
		return -1;
	if (len > r->end - addr)
		len = r->end - addr;
	return (long)pread(fd, buf, len, (off_t)(addr - r->start + r->offset));
}

/* The stdlib directory the OCaml host of the target recorded, or NULL. */
static const char *ocaml_stdlib(struct dsym *d)
{
	const struct proc_maps *maps = symbolizer_maps(d->sym);

	for (size_t i = 0; !d->ocaml_stdlib_read && i < maps->n; i++) {
		const struct elf_image *img;
		char err[1];

		if (symbolizer_image(d->sym, &maps->regions[i], &img, err, 0) == ELF_IMAGE_OK &&
		    img->ocaml_stdlib && img->ocaml_stdlib[0]) {
			d->ocaml_stdlib = strdup(img->ocaml_stdlib);
			break;
		}
	}
	d->ocaml_stdlib_read = 1;
	return d->ocaml_stdlib;
}

/*
 * The file to name for a location: an absolute path as it is; a stdlib
 * file in the stdlib directory when it is installed there, else its
 * basename; any other as OCaml recorded it (relative to where it was
 * compiled).
 */
static void ocaml_file(struct dsym *d, const struct ocaml_dbg_loc *l, char *buf, size_t len)
{
	const char *base = strrchr(l->file, '/') ? strrchr(l->file, '/') + 1 : l->file;
	const char *dir;

	if (l->file[0] != '/' && ocaml_dbg_is_stdlib(l->defname)) {
		dir = ocaml_stdlib(d);
		if (dir && (size_t)snprintf(buf, len, "%s/%s", dir, base) < len &&
		    access(buf, R_OK) == 0)
			return;
		snprintf(buf, len, "%s", base);
		return;
	}
	snprintf(buf, len, "%s", l->file);
}

/* The frame of OCaml debuginfo entry: a line per location of its chain. */
static struct dsym_frame *resolve_ocaml(struct dsym *d, uint64_t entry)
{
	struct ocaml_dbg_loc locs[OCAML_DBG_MAX_CHAIN];
	uint64_t addr = entry & MEMPROF_PROBE_STACK_ADDR_MASK;
	struct dmod *m = module_of(d, addr);
	struct dsym_frame *f = calloc(1, sizeof(*f));
	char name[OCAML_DBG_NAME_MAX + 8], file[PATH_MAX_OCAML];
	size_t cap = 0;
	int n;

	if (!f)
		return NULL;
	f->addr = addr;
	f->module = m ? (int)(m - d->mods) : -1;
	f->rel = m ? addr - m->bias : addr;
	n = ocaml_dbg_decode(MEMPROF_PROBE_STACK_FMT(entry), addr, read_mapped, d, locs,
			     OCAML_DBG_MAX_CHAIN);
	for (int i = 0; i < n; i++) {
		ocaml_dbg_name(locs[i].defname, name, sizeof(name));
		ocaml_file(d, &locs[i], file, sizeof(file));
		if (push_line(f, &cap, strdup(name), locs[i].defname, file, locs[i].line, 0,
			      locs[i].inlined))
			goto fail;
	}
	f->named = n > 0;
	if (n <= 0) {
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, m ? m->pub.name : "[unknown]",
			 f->rel);
		if (push_line(f, &cap, strdup(name), NULL, NULL, 0, 0, 0))
			goto fail;
	}
	d->n_addresses++;
	d->n_lines += f->n_lines;
	return f;
fail:
	frame_free(f);
	return NULL;
}

/* The frame of a Python frame record (python_frames.h): one line. */
static struct dsym_frame *resolve_python(struct dsym *d, uint64_t entry)
{
	static struct py_frame_loc loc; /* large; the symbolizer runs on one thread */
	uint64_t addr = entry & MEMPROF_PROBE_STACK_ADDR_MASK;
	struct dsym_frame *f = calloc(1, sizeof(*f));
	size_t cap = 0;
	int ok;

	if (!f)
		return NULL;
	f->addr = addr;
	f->module = -1;
	f->rel = addr;
	f->python = 1;
	ok = !py_frame_decode(addr, read_mapped, d, &loc);
	f->named = ok;
	if (!ok)
		snprintf(loc.qualname, sizeof(loc.qualname), "[python frame 0x%" PRIx64 "]", addr);
	if (push_line(f, &cap, strdup(loc.qualname), NULL, ok && loc.file[0] ? loc.file : NULL,
		      ok ? loc.line : 0, ok ? loc.first_line : 0, 0)) {
		frame_free(f);
		return NULL;
	}
	d->n_addresses++;
	d->n_lines += f->n_lines;
	return f;
}

int dsym_released(const struct dsym *d)
{
	return d->released;
}

const struct dsym_frame *dsym_frame(struct dsym *d, uint64_t pc)
{
	/* A return address points after the call: look the call up. */
	uint64_t addr = pc ? pc - 1 : 0;
	uint64_t key = addr + 1; /* never 0: addr is below UINT64_MAX */
	struct dsym_frame *f;
	uint64_t v;

	/* An OCaml debuginfo is its own key (return addresses never have the tag). */
	if (pc & MEMPROF_PROBE_STACK_OCAML)
		key = pc;
	if (idmap_get(&d->frames, key, &v))
		return (const struct dsym_frame *)(uintptr_t)v;
	if (d->released)
		return NULL;
	if (!(pc & MEMPROF_PROBE_STACK_OCAML))
		f = resolve(d, module_of(d, addr), addr);
	else if (MEMPROF_PROBE_STACK_FMT(pc) == MEMPROF_PROBE_PY_FRAME_V1)
		f = resolve_python(d, pc);
	else
		f = resolve_ocaml(d, pc);
	if (!f)
		return NULL;
	if (idmap_insert(&d->frames, key, (uint64_t)(uintptr_t)f)) {
		frame_free(f);
		return NULL;
	}
	return f;
}
