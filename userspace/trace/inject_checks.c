/*
 * The injector's steps 1 to 3 (inject.c says them all): what kind of
 * process it is, its libc and dynamic loader, and whether a stopped thread
 * is at a safe point.
 */
#include "inject_internal.h"
#include "inject_stub.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

#include "symbols/elfimage.h"
#include "symbols/procmaps.h"

/* Bytes of stack scanned above the stack pointer for return addresses. */
#define STACK_SCAN_BYTES ((size_t)1 << 20)

/* libc functions a call to dlopen must not interrupt (see the header comment). */
static const char *const unsafe_libc_functions[] = {
    "malloc",
    "free",
    "calloc",
    "realloc",
    "reallocarray",
    "memalign",
    "posix_memalign",
    "aligned_alloc",
    "valloc",
    "pvalloc",
    "cfree",
    "malloc_usable_size",
    "malloc_trim",
    "mallopt",
    "mallinfo",
    "mallinfo2",
    "malloc_stats",
    "malloc_info",
    "__libc_malloc",
    "__libc_free",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_memalign",
    "__libc_valloc",
    "__libc_pvalloc",
    "fork",
    "_Fork",
    "vfork",
    "__libc_fork",
    /* They hold the stack-cache lock while every thread takes SIGSETXID. */
    "setuid",
    "setgid",
    "seteuid",
    "setegid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setgroups",
    "pthread_create",
    "pthread_join",
    "pthread_tryjoin_np",
    "pthread_timedjoin_np",
    "pthread_clockjoin_np",
    "pthread_detach",
    "pthread_exit",
    "__cxa_thread_atexit_impl",
    "exit",
    "_exit",
    "quick_exit",
    "abort",
    "dlopen",
    "dlmopen",
    "dlclose",
    "dlsym",
    "dlvsym",
    "dladdr",
    "dladdr1",
    "dlinfo",
    "dlerror",
    "dl_iterate_phdr",
    "__libc_dlopen_mode",
    "__libc_dlsym",
    "__libc_dlvsym",
    "__libc_dlclose",
};

static int add_range(struct injector *in, uint64_t start, uint64_t end)
{
	struct range *v = realloc(in->unsafe, (in->n_unsafe + 1) * sizeof(*v));

	if (!v)
		return -1;
	in->unsafe = v;
	v[in->n_unsafe++] = (struct range){start, end};
	return 0;
}

/* ---- 1. What kind of process is it? ---- */

/* /proc/<where>/status: where is "PID" or "PID/task/TID". */
static int inject_read_status_at(const char *where, struct proc_status *st)
{
	char path[160], line[256];
	FILE *f;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "/proc/%s/status", where);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6))
			sscanf(line + 6, " %c", &st->state);
		else if (!strncmp(line, "TracerPid:", 10))
			st->tracer = strtol(line + 10, NULL, 10);
		else if (!strncmp(line, "Seccomp:", 8))
			st->seccomp = (int)strtol(line + 8, NULL, 10);
	}
	fclose(f);
	return 0;
}

int inject_read_thread_status(pid_t pid, pid_t tid, struct proc_status *st)
{
	char where[48];

	snprintf(where, sizeof(where), "%d/task/%d", (int)pid, (int)tid);
	return inject_read_status_at(where, st);
}

int inject_read_status(pid_t pid, struct proc_status *st)
{
	char where[32];

	snprintf(where, sizeof(where), "%d", (int)pid);
	return inject_read_status_at(where, st);
}

static const char *machine_name(unsigned m, int is64)
{
	switch (m) {
	case EM_386:
		return "i386 (32-bit x86)";
	case EM_X86_64:
		return is64 ? "x86-64" : "x32 (32-bit x86-64 ABI)";
	case EM_AARCH64:
		return "aarch64";
	case EM_ARM:
		return "32-bit ARM";
	case EM_RISCV:
		return "RISC-V";
	case EM_PPC64:
		return "ppc64";
	case EM_S390:
		return "s390x";
	default:
		return "a foreign architecture";
	}
}

/*
 * The executable: x86-64 ELF, dynamically linked, not Go.  Read through
 * /proc/PID/exe (works for a deleted or replaced file too).
 */
static enum inject_status check_executable(struct injector *in)
{
	char path[64];
	Elf64_Ehdr eh;
	int fd, has_interp = 0, is_go = 0;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)proc_live_tid(in->pid));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ESRCH)
			return inject_fail(in, INJECT_GONE, "process %d exited", (int)in->pid);
		return inject_fail(
		    in, errno == EACCES || errno == EPERM ? INJECT_DENIED : INJECT_FAILED,
		    "cannot open /proc/%d/exe: %s", (int)in->pid, strerror(errno));
	}
	if (pread(fd, &eh, sizeof(eh), 0) < (ssize_t)EI_NIDENT + 4 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		close(fd);
		return inject_fail(in, INJECT_REFUSED,
				   "process %d: its executable is not an ELF file; not injecting",
				   (int)in->pid);
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		/* e_machine sits at the same offset in both classes. */
		close(fd);
		return inject_fail(in, INJECT_REFUSED,
				   "process %d is a %s program; the injector handles x86-64 only "
				   "(start it with LD_PRELOAD instead)",
				   (int)in->pid,
				   machine_name(eh.e_machine, eh.e_ident[EI_CLASS] == ELFCLASS64));
	}
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			has_interp = 1;
	}
	/* Go: a .go.buildinfo or .note.go.buildid section. */
	if (eh.e_shoff && eh.e_shstrndx != SHN_UNDEF && eh.e_shstrndx < eh.e_shnum) {
		Elf64_Shdr strsh;

		if (pread(fd, &strsh, sizeof(strsh),
			  (off_t)(eh.e_shoff + (uint64_t)eh.e_shstrndx * eh.e_shentsize)) ==
		    (ssize_t)sizeof(strsh)) {
			for (unsigned i = 0; i < eh.e_shnum && !is_go; i++) {
				Elf64_Shdr sh;
				char name[24] = {0};

				if (pread(fd, &sh, sizeof(sh),
					  (off_t)(eh.e_shoff + (uint64_t)i * eh.e_shentsize)) !=
				    (ssize_t)sizeof(sh))
					break;
				if (pread(fd, name, sizeof(name) - 1,
					  (off_t)(strsh.sh_offset + sh.sh_name)) <= 0)
					continue;
				is_go = !strcmp(name, ".go.buildinfo") ||
					!strcmp(name, ".note.go.buildid");
			}
		}
	}
	close(fd);
	if (is_go)
		return inject_fail(
		    in, INJECT_REFUSED,
		    "process %d is a Go program: Go's runtime does not allocate through "
		    "malloc, there is nothing for the malloc host to see",
		    (int)in->pid);
	if (!has_interp)
		return inject_fail(
		    in, INJECT_REFUSED,
		    "process %d is statically linked: it has no dynamic loader to load the "
		    "malloc host with (rebuild it dynamically linked)",
		    (int)in->pid);
	return INJECT_OK;
}

struct filtered_thread {
	pid_t pid;
	pid_t tid;
	int mode; /* 1 strict, 2 filter */
};

static int note_seccomp(pid_t tid, char state, void *arg)
{
	struct filtered_thread *out = arg;
	struct proc_status st;

	(void)state;
	if (inject_read_thread_status(out->pid, tid, &st) || !st.seccomp)
		return 0;
	out->tid = tid;
	out->mode = st.seccomp;
	return 1;
}

/* 1 (and *out) when some thread of pid has a seccomp mode, else 0. */
static int thread_under_seccomp(pid_t pid, struct filtered_thread *out)
{
	out->pid = pid;
	return proc_for_each_thread(pid, note_seccomp, out) == 1;
}

enum inject_status inject_check_process(struct injector *in)
{
	struct filtered_thread filtered;
	struct proc_status st;
	char buf[16] = {0};
	FILE *f;

	/* Its state is its live threads' (proc_live_tid: the main thread may
	 * have exited while others run on). */
	if (inject_read_thread_status(in->pid, proc_live_tid(in->pid), &st))
		return inject_fail(in, INJECT_GONE, "no process with pid %d", (int)in->pid);
	if (st.state == 'Z' || st.state == 'X')
		return inject_fail(in, INJECT_GONE, "process %d exited", (int)in->pid);
	if (st.state == 'T' || st.state == 't')
		return inject_fail(
		    in, INJECT_REFUSED,
		    "process %d is stopped (job control or a debugger); continue it first",
		    (int)in->pid);
	if (st.tracer)
		return inject_fail(in, INJECT_REFUSED,
				   "process %d is already traced by process %ld", (int)in->pid,
				   st.tracer);
	if (st.seccomp)
		return inject_fail(
		    in, INJECT_DENIED,
		    "process %d runs under a seccomp %s: loading the malloc host into it "
		    "could get it killed; start it with LD_PRELOAD=%s instead",
		    (int)in->pid, st.seccomp == 1 ? "strict mode" : "filter", in->lib->path);
	/* Filters are per thread: the malloc host runs in every one. */
	if (thread_under_seccomp(in->pid, &filtered))
		return inject_fail(
		    in, INJECT_DENIED,
		    "thread %d of process %d runs under a seccomp %s: loading the malloc host "
		    "into the process could get it killed; start it with LD_PRELOAD=%s instead",
		    (int)filtered.tid, (int)in->pid, filtered.mode == 1 ? "strict mode" : "filter",
		    in->lib->path);
	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && atoi(buf) >= 3) {
			fclose(f);
			return inject_fail(
			    in, INJECT_DENIED,
			    "ptrace is disabled on this machine (YAMA ptrace_scope 3): cannot "
			    "inject into process %d; start it with LD_PRELOAD=%s instead",
			    (int)in->pid, in->lib->path);
		}
		fclose(f);
	}
	return check_executable(in);
}

/* ---- 2. The target's libc and dynamic loader ---- */

static int is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(base, "libc.so.6");
}

/* AT_BASE from /proc/PID/auxv: where ld.so is loaded. */
static uint64_t interpreter_base(pid_t pid)
{
	char path[64];
	uint64_t av[2], base = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)proc_live_tid(pid));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, av, sizeof(av)) == (ssize_t)sizeof(av) && av[0] != AT_NULL)
		if (av[0] == AT_BASE)
			base = av[1];
	close(fd);
	return base;
}

/*
 * The call stub's address: after the end of libc's text segment (aligned),
 * if the stub fits before the end of that page and the page is mapped
 * executable in the target.  0 when there is no such room.
 */
static uint64_t stub_place(const struct elf_image *img, uint64_t bias, const struct proc_maps *maps)
{
	const uint64_t page = 4096;

	for (size_t i = 0; i < img->n_loads; i++) {
		const struct elf_load *l = &img->loads[i];
		uint64_t end = l->vaddr + l->memsz + bias, at = (end + 63) & ~(uint64_t)63;
		uint64_t page_end = (end + page - 1) & ~(page - 1);
		const struct map_region *m;

		if (!l->exec || at + inject_stub_size() > page_end)
			continue;
		m = proc_maps_find(maps, at);
		if (m && m->exec && at + inject_stub_size() <= m->end)
			return at;
	}
	return 0;
}

/* glibc's internal signals in a signal mask (bit n - 1: signal n). */
#define GLIBC_SIGCANCEL_BIT (1ull << (32 - 1))
#define GLIBC_SIGSETXID_BIT (1ull << (33 - 1))

/* Wrappers this short are read for a tail jump (pthread_join is 15 bytes). */
#define WRAPPER_MAX_BYTES 64
/* A jump target's code is taken to end at the next symbol, or this far. */
#define JUMP_TARGET_MAX_BYTES 4096

/*
 * Some of glibc's entry points are short wrappers that end in a jump to a
 * function that has no symbol of its own (pthread_join jumps into the
 * internal __pthread_clockjoin_ex): a thread blocked in it shows return
 * addresses there, never in the wrapper.  Read each short unsafe function
 * in the target and make the code a jmp rel32 in it leads to unsafe too,
 * up to the next symbol.  A 0xe9 byte that is not a jump only makes a
 * little more code unsafe (conservative), and a target outside libc's
 * code is ignored.
 */
static int add_jump_targets(struct injector *in, const struct elf_image *img, uint64_t bias,
			    const struct elf_sym *fn, const struct proc_maps *maps, int mem_fd)
{
	unsigned char code[WRAPPER_MAX_BYTES];
	const struct map_region *text = proc_maps_find(maps, fn->addr + bias);
	ssize_t got;

	if (mem_fd < 0 || !fn->size || fn->size > sizeof(code) || !text || !text->exec)
		return 0;
	got = pread(mem_fd, code, fn->size, (off_t)(fn->addr + bias));
	for (ssize_t i = 0; i + 5 <= got; i++) {
		int32_t rel;
		uint64_t to, end;
		size_t k;

		if (code[i] != 0xe9)
			continue;
		memcpy(&rel, code + i + 1, sizeof(rel));
		to = fn->addr + (uint64_t)i + 5 + (uint64_t)(int64_t)rel; /* file address */
		if (to >= fn->addr && to < fn->addr + fn->size)
			continue;
		const struct map_region *m = proc_maps_find(maps, to + bias);
		if (!m || !m->exec || strcmp(m->path, text->path))
			continue;
		end = to + JUMP_TARGET_MAX_BYTES;
		for (k = 0; k < img->n_syms && img->syms[k].addr <= to; k++)
			;
		if (k < img->n_syms && img->syms[k].addr < end)
			end = img->syms[k].addr;
		if (add_range(in, to + bias, end + bias))
			return -1;
	}
	return 0;
}

enum inject_status inject_find_symbols(struct injector *in)
{
	struct proc_maps maps;
	const struct map_region *libc = NULL, *ldso;
	struct elf_image img;
	char elf_err[256], mem_path[64];
	uint64_t bias, at_base;
	int rc, mem_fd;

	rc = proc_maps_read(in->pid, &maps);
	if (rc == -ESRCH)
		return inject_fail(in, INJECT_GONE, "process %d exited", (int)in->pid);
	if (rc)
		return inject_fail(in,
				   rc == -EACCES || rc == -EPERM ? INJECT_DENIED : INJECT_FAILED,
				   "cannot read /proc/%d/maps: %s", (int)in->pid, strerror(-rc));
	for (size_t i = 0; i < maps.n && !libc; i++)
		if (is_libc(maps.regions[i].path))
			libc = proc_maps_first_of(&maps, maps.regions[i].path);
	if (!libc) {
		proc_maps_free(&maps);
		return inject_fail(
		    in, INJECT_REFUSED,
		    "process %d has no glibc (libc.so.6) mapped: only glibc programs can be "
		    "injected",
		    (int)in->pid);
	}
	if (elf_image_open(libc->open_path, &img, elf_err, sizeof(elf_err)) != ELF_IMAGE_OK) {
		proc_maps_free(&maps);
		return inject_fail(in, INJECT_FAILED, "cannot read the target's libc: %s", elf_err);
	}
	bias = elf_image_bias(&img, libc->start, libc->offset);
	in->stub_addr = stub_place(&img, bias, &maps);
	snprintf(mem_path, sizeof(mem_path), "/proc/%d/mem", (int)proc_live_tid(in->pid));
	mem_fd = open(mem_path, O_RDONLY | O_CLOEXEC); /* (-1: no jump targets) */
	for (size_t i = 0; i < img.n_syms; i++) {
		const struct elf_sym *s = &img.syms[i];

		if (!strcmp(s->name, "dlopen"))
			in->dlopen_addr = s->addr + bias;
		else if (!strcmp(s->name, "dlerror"))
			in->dlerror_addr = s->addr + bias;
		for (size_t k = 0;
		     k < sizeof(unsafe_libc_functions) / sizeof(unsafe_libc_functions[0]); k++)
			if (!strcmp(s->name, unsafe_libc_functions[k]) &&
			    (add_range(in, s->addr + bias,
				       s->addr + bias + (s->size ? s->size : 1)) ||
			     add_jump_targets(in, &img, bias, s, &maps, mem_fd))) {
				if (mem_fd >= 0)
					close(mem_fd);
				elf_image_free(&img);
				proc_maps_free(&maps);
				return inject_fail(in, INJECT_FAILED, "out of memory");
			}
	}
	if (mem_fd >= 0)
		close(mem_fd);
	elf_image_free(&img);
	if (!in->stub_addr) {
		proc_maps_free(&maps);
		return inject_fail(in, INJECT_REFUSED,
				   "process %d: its libc (%s) has no room after its code for the "
				   "injector's call stub",
				   (int)in->pid, libc->path);
	}
	if (!in->dlopen_addr || !in->dlerror_addr) {
		proc_maps_free(&maps);
		return inject_fail(
		    in, INJECT_REFUSED,
		    "process %d: its libc (%s) has no dlopen; glibc 2.34 or later is needed",
		    (int)in->pid, libc->path);
	}
	/* All of the dynamic loader's code is out of bounds. */
	at_base = interpreter_base(in->pid);
	ldso = at_base ? proc_maps_find(&maps, at_base) : NULL;
	if (!ldso) {
		proc_maps_free(&maps);
		return inject_fail(in, INJECT_REFUSED, "process %d: cannot find its dynamic loader",
				   (int)in->pid);
	}
	for (size_t i = 0; i < maps.n; i++)
		if (maps.regions[i].exec && !strcmp(maps.regions[i].path, ldso->path) &&
		    add_range(in, maps.regions[i].start, maps.regions[i].end)) {
			proc_maps_free(&maps);
			return inject_fail(in, INJECT_FAILED, "out of memory");
		}
	proc_maps_free(&maps);
	return INJECT_OK;
}

/* ---- 3. Is this thread at a safe point? ---- */

/* Where pc is in unsafe code: 1 inside a function, 2 at its first byte. */
static int unsafe_at(const struct injector *in, uint64_t pc)
{
	for (size_t i = 0; i < in->n_unsafe; i++)
		if (pc >= in->unsafe[i].start && pc < in->unsafe[i].end)
			return pc == in->unsafe[i].start ? 2 : 1;
	return 0;
}

/*
 * The end of the anonymous or file mapping holding addr (0: none), read
 * afresh for each thread judged: a snapshot taken before the threads
 * stopped may miss a stack mapped since, or show a freed one's end.
 */
static uint64_t mapping_end(pid_t pid, uint64_t addr)
{
	char path[64], line[512];
	uint64_t end = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)proc_live_tid(pid));
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t s, e;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &s, &e) == 2 && addr >= s && addr < e) {
			end = e;
			break;
		}
	}
	fclose(f);
	return end;
}

/*
 * 1 when the stopped thread may call dlopen: neither its PC nor any call of
 * its chain is in unsafe code.  The chain comes from its call frame
 * information (inject_unwind.c); where that cannot be followed to the end
 * (a frame without CFI, JIT code, a corrupt stack), every word of the
 * stack above the last frame unwound that is an address into unsafe code
 * (other than a function's first byte, a function pointer) counts as a
 * return address: conservative, a stale word makes us wait.  *how: which
 * way it was judged (INJECT_JUDGED_*).
 */
int inject_thread_is_safe(const struct injector *in, pid_t tid, const struct user_regs_struct *regs,
			  int *how)
{
	static uint64_t words[STACK_SCAN_BYTES / 8];
	static struct inject_chain chain;
	uint64_t sp = regs->rsp & ~(uint64_t)7, end, mask;
	struct iovec local, remote;
	ssize_t got;

	*how = INJECT_JUDGED_AT_ONCE;
	if (unsafe_at(in, regs->rip))
		return 0;
	/*
	 * glibc blocks its own SIGCANCEL and SIGSETXID only inside its
	 * critical sections and their handlers (the SIGSETXID handler runs
	 * while a set*id call in another thread holds the stack-cache lock
	 * that dlopen takes): such a thread never calls dlopen.
	 */
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(mask), &mask) ||
	    (mask & (GLIBC_SIGCANCEL_BIT | GLIBC_SIGSETXID_BIT)))
		return 0;
	*how = INJECT_JUDGED_SCAN;
	if (in->unwinder && inject_unwind(in->unwinder, tid, &chain) > 0) {
		*how = INJECT_JUDGED_CHAIN;
		for (int i = 0; i < chain.n; i++)
			if (unsafe_at(in, chain.pc[i]))
				return 0;
		if (chain.complete) {
			*how = INJECT_JUDGED_CHAIN;
			return 1;
		}
		*how = INJECT_JUDGED_PART;
		if (chain.last_sp > sp)
			sp = chain.last_sp & ~(uint64_t)7;
	}
	end = mapping_end(in->pid, sp);
	if (!end)
		return 0;
	if (end - sp > STACK_SCAN_BYTES)
		end = sp + STACK_SCAN_BYTES;
	local = (struct iovec){words, end - sp};
	remote = (struct iovec){(void *)(uintptr_t)sp, end - sp};
	got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	if (got <= 0)
		return 0;
	for (size_t i = 0; i < (size_t)got / 8; i++)
		if (unsafe_at(in, words[i]) == 1)
			return 0;
	return 1;
}
