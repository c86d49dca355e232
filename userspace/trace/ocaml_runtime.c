/* Which OCaml runtime a process runs (ocaml_runtime.h). */
#include "ocaml_runtime.h"
#include "symbols/procmaps.h"

#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The longest Stdlib.Sys data read for the version (4.13: 832 bytes). */
#define SYS_DATA_MAX (64 * 1024)

struct found {
	int native, bytecode;
	uint64_t sys_begin, sys_end; /* Stdlib.Sys's data, 0 if unknown */
};

static void note_symbol(struct found *f, const char *name, uint64_t value)
{
	if (!strcmp(name, "caml_start_program"))
		f->native = 1;
	else if (!strcmp(name, "caml_interprete"))
		f->bytecode = 1;
	/* 4.x names module symbols Module__sym, 5.1 and later Module.sym. */
	else if (!strcmp(name, "camlStdlib__Sys__data_begin") ||
		 !strcmp(name, "camlStdlib__Sys.data_begin"))
		f->sys_begin = value;
	else if (!strcmp(name, "camlStdlib__Sys__data_end") ||
		 !strcmp(name, "camlStdlib__Sys.data_end"))
		f->sys_end = value;
}

static void scan_symbols(Elf *e, struct found *f)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name)
				note_symbol(f, name, s.st_value);
		}
	}
}

/* The bytes of the file's sections at [begin, end), into buf.  Their number. */
static size_t read_vaddr(Elf *e, uint64_t begin, uint64_t end, char *buf, size_t len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || begin < sh.sh_addr ||
		    begin >= sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return 0;
		n = end - begin;
		if (n > sh.sh_addr + sh.sh_size - begin)
			n = sh.sh_addr + sh.sh_size - begin;
		if (n > len)
			n = len;
		memcpy(buf, (const char *)d->d_buf + (begin - sh.sh_addr), n);
		return n;
	}
	return 0;
}

/*
 * The first "MAJOR.MINOR.PATCH" string of the data (an OCaml string is
 * NUL-padded: it ends at a NUL), with any "+suffix" or "~suffix".
 */
static void find_version(const char *p, size_t n, struct ocaml_runtime *out)
{
	for (size_t i = 0; i < n; i++) {
		int maj, min, pat, used = 0;
		size_t end;

		if (!isdigit((unsigned char)p[i]) || (i && p[i - 1] != '\0'))
			continue;
		for (end = i; end < n && p[end] && end - i < sizeof(out->version) - 1; end++)
			if (!isprint((unsigned char)p[end]))
				break;
		if (end == n || p[end])
			continue;
		if (sscanf(p + i, "%d.%d.%d%n", &maj, &min, &pat, &used) != 3 ||
		    (p[i + used] && p[i + used] != '+' && p[i + used] != '~'))
			continue;
		out->major = maj, out->minor = min, out->patch = pat;
		memcpy(out->version, p + i, end - i);
		out->version[end - i] = '\0';
		return;
	}
}

int ocaml_runtime_of_file(const char *path, struct ocaml_runtime *out)
{
	static char data[SYS_DATA_MAX];
	struct found f = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	memset(out, 0, sizeof(*out));
	out->major = out->minor = out->patch = -1;
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		return e ? 0 : -1;
	}
	scan_symbols(e, &f);
	out->kind = f.native ? OCAML_NATIVE : f.bytecode ? OCAML_BYTECODE : OCAML_NONE;
	if (out->kind != OCAML_NONE && f.sys_begin && f.sys_end > f.sys_begin)
		find_version(data, read_vaddr(e, f.sys_begin, f.sys_end, data, sizeof(data)), out);
	elf_end(e);
	close(fd);
	return 0;
}

int ocaml_runtime_of_pid(pid_t pid, struct ocaml_runtime *out)
{
	char exe[64];

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)proc_live_tid(pid));
	return ocaml_runtime_of_file(exe, out);
}

/* The versions whose Gc.Memprof the OCaml host was tested with. */
static int tested(const struct ocaml_runtime *rt)
{
	return (rt->major == 4 && (rt->minor == 13 || rt->minor == 14)) ||
	       (rt->major == 5 && rt->minor == 3);
}

int ocaml_runtime_refusal(pid_t pid, const struct ocaml_runtime *rt, char *why, size_t len)
{
	const char *v = rt->version[0] ? rt->version : "of an unknown version";

	switch (rt->kind) {
	case OCAML_NONE:
		return 0;
	case OCAML_BYTECODE:
		snprintf(why, len,
			 "process %d runs OCaml bytecode%s%s%s: only native OCaml programs can be "
			 "profiled; --inject-malloc loads the malloc host anyway (it sees the "
			 "runtime's heap chunks, not OCaml values)",
			 (int)pid, rt->version[0] ? " (" : "", rt->version,
			 rt->version[0] ? ")" : "");
		return 1;
	case OCAML_NATIVE:
		break;
	}
	if (rt->major == 5 && rt->minor <= 2)
		snprintf(why, len,
			 "process %d is a native OCaml %s program: OCaml 5.0 to 5.2 have no "
			 "working Gc.Memprof (its primitives raise; it came back in 5.3), so it "
			 "cannot be sampled; --inject-malloc loads the malloc host anyway",
			 (int)pid, v);
	else if (!tested(rt))
		snprintf(why, len,
			 "process %d is a native OCaml program %s, a version memprof-bpf was "
			 "never tested with (4.13, 4.14, 5.3); --inject-malloc loads the malloc "
			 "host anyway",
			 (int)pid, v);
	else
		return 0; /* the injectable OCaml host: ocaml_runtime_attach_host */
	return 1;
}

const char *ocaml_runtime_attach_host(const struct ocaml_runtime *rt)
{
	if (rt->kind != OCAML_NATIVE || !tested(rt))
		return NULL;
	/* runtime-probes/hosts/ocaml-attach/build.mk: one per runtime family. */
	return rt->major == 4 ? "libmemprof-ocaml4-attach.so" : "libmemprof-ocaml5-attach.so";
}
