/*
 * Injected mode: the library was dlopen'ed into a running process (by
 * `memprof-bpf attach`, see userspace/trace/inject.c), not preloaded.  Symbol
 * lookup still finds the program's allocator first, so every object's
 * calls to the malloc family must be pointed at ours by hand: each object's
 * GOT slots for them are rewritten.
 *
 * For every loaded object but this library, the dynamic loader and the
 * vDSO: parse its dynamic section, walk its R_X86_64_JUMP_SLOT and
 * R_X86_64_GLOB_DAT relocations (DT_JMPREL, DT_RELA) and find the slots of
 * malloc, free, calloc, realloc, reallocarray, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc, malloc_usable_size and dlopen.
 * A slot is rewritten when it holds the allocator we delegate to (the first
 * definition in the global scope, next.*) or, for an undefined symbol not
 * bound yet (lazy binding), an address inside the object itself (its PLT).
 * A slot bound to anything else (a private allocator of that object, another
 * namespace) is left alone: blocks always go back to the allocator that
 * made them.  A slot in the object's RELRO pages is written between two
 * mprotect calls that restore PROT_READ exactly as the loader left it.
 * Other threads run meanwhile: each store is one aligned 8-byte atomic
 * store, so a call through the slot sees the old or the new function.
 *
 * C++'s operator new and delete reach malloc and free through libstdc++'s
 * own GOT slots, so they are covered with it.
 *
 * Blocks allocated before the injection: the interposer owns no memory.
 * Every call is delegated to the very functions those slots held, so a
 * block allocated before is freed, reallocated and sized by the allocator
 * that made it.  A block is treated as sampled only if its address is in
 * the sampled-blocks table, where only blocks this library sampled (and
 * that are still live) are entered; a pre-injection block is live at an
 * address no sampled live block has, so it is never mistaken for one.
 *
 * Objects loaded later: dlopen's slots point at got_dlopen_thunk.  For a
 * path (with a '/' and no '$'), it calls the real dlopen and then rescans.
 * A bare name or a name with $ORIGIN is searched from the caller's
 * DT_RPATH/DT_RUNPATH, which dlopen finds from its return address, so the
 * thunk jumps to the real dlopen in the caller's place and asks for a
 * rescan at the next slow path.  Every slow path (got_poll) also compares
 * the loader's count of objects added, which catches objects loaded by
 * libc itself (NSS, iconv) and through dlmopen, and now and then rescans
 * all objects anyway (a lazy binding racing with a rewrite may put an old
 * value back).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload.h"

#if !defined(__x86_64__)
#error "GOT redirection is written for x86-64 relocations"
#endif

/* Slow paths between two full rescans. */
#define GOT_RESCAN_POLLS 1024

atomic_int preload_injected;

/* The real dlopen (set by got_redirect_init), jumped to by the thunk. */
__attribute__((visibility("hidden"))) void *(*got_real_dlopen)(const char *, int);
void *got_dlopen_thunk(const char *file, int mode);

struct redirect {
	const char *name;
	uintptr_t ours;
	uintptr_t theirs;
};

enum { N_REDIRECTS = 12 };
static struct redirect redirects[N_REDIRECTS];
static uintptr_t self_lo;
static pthread_mutex_t rescan_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int rescan_pending;
static atomic_ullong objects_added; /* dlpi_adds at the last rescan */
static atomic_uint polls;
static size_t page_size;

/* ---- The dlopen thunk ---- */

/*
 * got_dlopen_thunk(file, mode): asks got_dlopen_keep_caller(file, return
 * address) whether dlopen must see its caller; if so jumps to the real
 * dlopen (the caller's return address untouched), else jumps to
 * got_dlopen_and_rescan, which returns to the caller itself.
 */
__asm__(".text\n"
	".globl got_dlopen_thunk\n"
	".hidden got_dlopen_thunk\n"
	".type got_dlopen_thunk, @function\n"
	"got_dlopen_thunk:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	push %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	push %rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	sub $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	mov 24(%rsp), %rsi\n"
	"	call got_dlopen_keep_caller\n"
	"	add $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop %rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	test %eax, %eax\n"
	"	jnz 1f\n"
	"	jmp got_dlopen_and_rescan\n"
	"1:	jmp *got_real_dlopen(%rip)\n"
	"	.cfi_endproc\n"
	".size got_dlopen_thunk, .-got_dlopen_thunk\n");

static int object_has_search_path(const void *caller)
{
	struct link_map *lm = NULL;
	Dl_info info;

	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !lm->l_ld)
		return 1; /* unknown caller: keep it */
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_RPATH || d->d_tag == DT_RUNPATH)
			return 1;
	return 0;
}

__attribute__((visibility("hidden"), used)) int got_dlopen_keep_caller(const char *file,
								       const void *caller)
{
	struct preload_thread *t = &preload_self;
	int keep;

	if (!file)
		return 0;
	preload_enter(t);
	keep = strchr(file, '$') || (!strchr(file, '/') && object_has_search_path(caller));
	preload_leave(t);
	if (keep) {
		/* Rescan at this thread's next allocation. */
		atomic_store_explicit(&rescan_pending, 1, memory_order_release);
		sampler_force_poll(t);
	}
	return keep;
}

__attribute__((visibility("hidden"), used)) void *got_dlopen_and_rescan(const char *file, int mode)
{
	void *h = got_real_dlopen(file, mode);
	int saved = errno;

	if (h)
		got_rescan();
	errno = saved;
	return h;
}

/* ---- Reading a loaded object ---- */

struct object_view {
	uintptr_t bias, lo, hi;	      /* load bias, extent of the PT_LOAD segments */
	uintptr_t relro_lo, relro_hi; /* pages the loader made read-only */
	const ElfW(Dyn) * dyn;
	const ElfW(Sym) * symtab;
	const char *strtab;
	size_t strsz;
	const uint32_t *gnu_hash, *sysv_hash;
	const ElfW(Rela) * jmprel, *rela;
	size_t jmprel_sz, rela_sz;
	int pltrel_is_rela;
};

/* A d_ptr: relocated in place by the loader, except in some objects. */
static uintptr_t dyn_ptr(const struct object_view *o, ElfW(Addr) p)
{
	return p < o->bias ? o->bias + p : p;
}

/* 0, or -1 for an object without what we read (no dynamic symbols). */
static int object_view_init(const struct dl_phdr_info *info, struct object_view *o)
{
	*o = (struct object_view){.bias = info->dlpi_addr, .lo = UINTPTR_MAX, .pltrel_is_rela = 1};
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = o->bias + ph->p_vaddr;

		if (ph->p_type == PT_LOAD) {
			if (s < o->lo)
				o->lo = s;
			if (s + ph->p_memsz > o->hi)
				o->hi = s + ph->p_memsz;
		} else if (ph->p_type == PT_DYNAMIC) {
			o->dyn = (const ElfW(Dyn) *)s;
		} else if (ph->p_type == PT_GNU_RELRO) {
			o->relro_lo = s & ~(page_size - 1);
			o->relro_hi = (s + ph->p_memsz) & ~(page_size - 1);
		}
	}
	if (!o->dyn || o->lo == getauxval(AT_SYSINFO_EHDR))
		return -1; /* nothing dynamic, or the vDSO */
	for (const ElfW(Dyn) *d = o->dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			o->symtab = (const ElfW(Sym) *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			o->strtab = (const char *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_STRSZ:
			o->strsz = d->d_un.d_val;
			break;
		case DT_GNU_HASH:
			o->gnu_hash = (const uint32_t *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_HASH:
			o->sysv_hash = (const uint32_t *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_JMPREL:
			o->jmprel = (const ElfW(Rela) *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			o->jmprel_sz = d->d_un.d_val;
			break;
		case DT_PLTREL:
			o->pltrel_is_rela = d->d_un.d_val == DT_RELA;
			break;
		case DT_RELA:
			o->rela = (const ElfW(Rela) *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_RELASZ:
			o->rela_sz = d->d_un.d_val;
			break;
		default:
			break;
		}
	}
	return o->symtab && o->strtab ? 0 : -1;
}

static int symbol_is(const struct object_view *o, const ElfW(Sym) * s, const char *name)
{
	return s->st_name < o->strsz && !strcmp(o->strtab + s->st_name, name);
}

/* The object's own definition of a function (not an undefined reference,
 * even one with a value: a canonical PLT entry), or NULL. */
static const ElfW(Sym) * object_definition(const struct object_view *o, const char *name)
{
	const ElfW(Sym) *found = NULL;

	if (o->gnu_hash) {
		uint32_t h = 5381;
		for (const unsigned char *c = (const unsigned char *)name; *c; c++)
			h = h * 33 + *c;
		uint32_t nbuckets = o->gnu_hash[0], symoffset = o->gnu_hash[1];
		uint32_t bloom_size = o->gnu_hash[2];
		const uint32_t *buckets =
		    o->gnu_hash + 4 + bloom_size * (sizeof(ElfW(Addr)) / sizeof(uint32_t));
		const uint32_t *chain = buckets + nbuckets;
		uint32_t i = nbuckets ? buckets[h % nbuckets] : 0;
		for (; i >= symoffset && i != 0; i++) {
			uint32_t ch = chain[i - symoffset];
			if ((ch | 1) == (h | 1) && symbol_is(o, &o->symtab[i], name)) {
				found = &o->symtab[i];
				break;
			}
			if (ch & 1)
				break;
		}
	} else if (o->sysv_hash) {
		uint32_t h = 0;
		for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
			h = (h << 4) + *c;
			uint32_t g = h & 0xf0000000u;
			h = (h ^ (g >> 24)) & ~g;
		}
		uint32_t nbucket = o->sysv_hash[0];
		const uint32_t *bucket = o->sysv_hash + 2, *chain = bucket + nbucket;
		for (uint32_t i = nbucket ? bucket[h % nbucket] : 0; i; i = chain[i])
			if (symbol_is(o, &o->symtab[i], name)) {
				found = &o->symtab[i];
				break;
			}
	}
	if (!found || found->st_shndx == SHN_UNDEF || found->st_value == 0 ||
	    (ELF64_ST_TYPE(found->st_info) != STT_FUNC &&
	     ELF64_ST_TYPE(found->st_info) != STT_GNU_IFUNC))
		return NULL;
	return found;
}

struct definition_query {
	const char *name;
	uintptr_t addr;
	int self;
	int skip_self;
};

static int find_definition(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct definition_query *q = arg;
	struct object_view o;
	const ElfW(Sym) * s;

	(void)size;
	if (object_view_init(info, &o))
		return 0;
	int is_self = self_lo >= o.lo && self_lo < o.hi;
	if (is_self && q->skip_self)
		return 0;
	s = object_definition(&o, q->name);
	if (!s)
		return 0;
	if (ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC)
		return 0; /* not the malloc family: leave it to dlsym */
	q->addr = o.bias + s->st_value;
	q->self = is_self;
	return 1;
}

uintptr_t got_first_definition(const char *name, int skip_self, int *is_self)
{
	struct definition_query q = {.name = name, .skip_self = skip_self};

	if (!page_size)
		got_self_init();
	dl_iterate_phdr(find_definition, &q);
	if (is_self)
		*is_self = q.self;
	return q.addr;
}

/* ---- Rewriting one object's slots ---- */

static const struct redirect *redirect_of(const struct object_view *o, uint32_t sym)
{
	const ElfW(Sym) *s = &o->symtab[sym];

	if (s->st_name >= o->strsz)
		return NULL;
	const char *name = o->strtab + s->st_name;
	for (int i = 0; i < N_REDIRECTS; i++)
		if (redirects[i].ours && !strcmp(name, redirects[i].name))
			return &redirects[i];
	return NULL;
}

struct slot_batch {
	_Atomic uintptr_t *slot[64];
	uintptr_t value[64];
	int n, in_relro;
};

static void batch_flush(const struct object_view *o, struct slot_batch *b)
{
	int writable = 1;

	if (b->n == 0)
		return;
	if (b->in_relro)
		writable = mprotect((void *)o->relro_lo, o->relro_hi - o->relro_lo,
				    PROT_READ | PROT_WRITE) == 0;
	for (int i = 0; i < b->n; i++) {
		uintptr_t s = (uintptr_t)b->slot[i];

		if (writable || s < o->relro_lo || s >= o->relro_hi)
			atomic_store_explicit(b->slot[i], b->value[i], memory_order_release);
	}
	if (b->in_relro && writable)
		mprotect((void *)o->relro_lo, o->relro_hi - o->relro_lo, PROT_READ);
	b->n = 0;
	b->in_relro = 0;
}

static void consider_relocs(const struct object_view *o, const ElfW(Rela) * rel, size_t bytes,
			    struct slot_batch *b)
{
	for (size_t i = 0; i < bytes / sizeof(*rel); i++) {
		uint32_t type = ELF64_R_TYPE(rel[i].r_info), sym = ELF64_R_SYM(rel[i].r_info);
		const struct redirect *r;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || sym == 0)
			continue;
		r = redirect_of(o, sym);
		if (!r)
			continue;
		_Atomic uintptr_t *slot = (_Atomic uintptr_t *)(o->bias + rel[i].r_offset);
		uintptr_t v = atomic_load_explicit(slot, memory_order_relaxed);
		/* Not bound yet (lazy binding: its PLT), or a canonical PLT entry. */
		int own = o->symtab[sym].st_shndx == SHN_UNDEF && v >= o->lo && v < o->hi;

		if (v == r->ours || (v != r->theirs && !own))
			continue;
		if (b->n == (int)(sizeof(b->slot) / sizeof(b->slot[0])))
			batch_flush(o, b);
		b->slot[b->n] = slot;
		b->value[b->n++] = r->ours;
		if ((uintptr_t)slot >= o->relro_lo && (uintptr_t)slot < o->relro_hi)
			b->in_relro = 1;
	}
}

static int redirect_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_view o;
	struct slot_batch batch = {.n = 0};

	(void)size;
	(void)arg;
	/* The loader's count of objects added, as of this rescan. */
	atomic_store_explicit(&objects_added, info->dlpi_adds, memory_order_relaxed);
	if (object_view_init(info, &o))
		return 0;
	if ((self_lo >= o.lo && self_lo < o.hi) || o.bias == getauxval(AT_BASE))
		return 0; /* this library, the dynamic loader */
	if (o.jmprel && o.pltrel_is_rela)
		consider_relocs(&o, o.jmprel, o.jmprel_sz, &batch);
	if (o.rela)
		consider_relocs(&o, o.rela, o.rela_sz, &batch);
	batch_flush(&o, &batch);
	return 0;
}

static int first_object_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* ---- Entry points ---- */

static void rescan_all(void)
{
	struct preload_thread *t = &preload_self;
	int saved = errno;

	preload_enter(t);
	atomic_store_explicit(&rescan_pending, 1, memory_order_release);
	/* Whoever holds the lock rescans again if asked meanwhile. */
	while (atomic_load_explicit(&rescan_pending, memory_order_acquire)) {
		if (pthread_mutex_trylock(&rescan_lock))
			break;
		atomic_store_explicit(&rescan_pending, 0, memory_order_relaxed);
		dl_iterate_phdr(redirect_object, NULL);
		pthread_mutex_unlock(&rescan_lock);
	}
	preload_leave(t);
	errno = saved;
}

void got_rescan(void)
{
	rescan_all();
}

void got_poll_slow(void)
{
	unsigned long long adds = 0;
	struct preload_thread *t = &preload_self;

	if (atomic_load_explicit(&rescan_pending, memory_order_acquire) ||
	    atomic_fetch_add_explicit(&polls, 1, memory_order_relaxed) % GOT_RESCAN_POLLS == 0) {
		rescan_all();
		return;
	}
	preload_enter(t);
	dl_iterate_phdr(first_object_adds, &adds);
	preload_leave(t);
	if (adds != atomic_load_explicit(&objects_added, memory_order_relaxed))
		rescan_all();
}

void got_fork_child(void)
{
	/* Only this thread survives: a rescan another thread was making holds
	 * no lock here, and is made again at the next poll. */
	rescan_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	atomic_store_explicit(&rescan_pending, 1, memory_order_release);
}

void got_self_init(void)
{
	Dl_info info;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (dladdr((void *)got_self_init, &info))
		self_lo = (uintptr_t)info.dli_fbase;
}

/* Our end of each redirection (the hidden aliases of interpose.c), and the
 * program's: the allocator we delegate to. */
static void set_redirect(int i, const char *name, void *ours, void *theirs)
{
	redirects[i].name = name;
	redirects[i].theirs = (uintptr_t)theirs;
	/* Nothing of that name in the process: nothing to redirect. */
	redirects[i].ours = theirs ? (uintptr_t)ours : 0;
}

void got_redirect_init(void)
{
	int i = 0;

	if (!page_size)
		got_self_init();
	set_redirect(i++, "malloc", (void *)preload_malloc, (void *)next.malloc);
	set_redirect(i++, "free", (void *)preload_free, (void *)next.free);
	set_redirect(i++, "calloc", (void *)preload_calloc, (void *)next.calloc);
	set_redirect(i++, "realloc", (void *)preload_realloc, (void *)next.realloc);
	set_redirect(i++, "reallocarray", (void *)preload_reallocarray,
		     (void *)got_first_definition("reallocarray", 1, NULL));
	set_redirect(i++, "posix_memalign", (void *)preload_posix_memalign,
		     (void *)next.posix_memalign);
	set_redirect(i++, "aligned_alloc", (void *)preload_aligned_alloc,
		     (void *)next.aligned_alloc);
	set_redirect(i++, "memalign", (void *)preload_memalign, (void *)next.memalign);
	set_redirect(i++, "valloc", (void *)preload_valloc, (void *)next.valloc);
	set_redirect(i++, "pvalloc", (void *)preload_pvalloc, (void *)next.pvalloc);
	set_redirect(i++, "malloc_usable_size", (void *)preload_malloc_usable_size,
		     (void *)next.malloc_usable_size);
	got_real_dlopen = (void *(*)(const char *, int))got_first_definition("dlopen", 1, NULL);
	set_redirect(i++, "dlopen", (void *)got_dlopen_thunk, (void *)got_real_dlopen);
}
