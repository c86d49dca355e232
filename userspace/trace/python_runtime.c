/* Which CPython a process runs (python_runtime.h). */
#include "python_runtime.h"
#include "symbols/procmaps.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The value of the 4-byte (or 8-byte) datum at vaddr, from the file's sections. */
static int read_ulong(Elf *e, uint64_t vaddr, uint64_t size, unsigned long *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr + size > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return -1;
		const unsigned char *p = (const unsigned char *)d->d_buf + (vaddr - sh.sh_addr);
		if (size == 8) {
			uint64_t v;
			memcpy(&v, p, 8);
			*out = (unsigned long)v;
		} else {
			uint32_t v;
			memcpy(&v, p, 4);
			*out = v;
		}
		return 0;
	}
	return -1;
}

/* Does the ELF file at path export the CPython API?  Fills out if so. */
static int scan_file(const char *open_path, const char *path, struct python_runtime *out)
{
	int fd = open(open_path, O_RDONLY | O_CLOEXEC);
	uint64_t version_at = 0, version_size = 0;
	int has_api = 0;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		return 0;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || name[0] != 'P')
				continue;
			if (!strcmp(name, "PyMem_SetAllocator"))
				has_api = 1;
			else if (!strcmp(name, "Py_Version"))
				version_at = s.st_value, version_size = s.st_size;
		}
	}
	if (has_api) {
		unsigned long v;

		out->found = 1;
		out->major = out->minor = out->micro = -1;
		snprintf(out->path, sizeof(out->path), "%s", path);
		if (version_at && (version_size == 4 || version_size == 8) &&
		    !read_ulong(e, version_at, version_size, &v)) {
			out->major = (int)((v >> 24) & 0xff);
			out->minor = (int)((v >> 16) & 0xff);
			out->micro = (int)((v >> 8) & 0xff);
		}
	}
	elf_end(e);
	close(fd);
	return has_api;
}

int python_runtime_of_pid(pid_t pid, struct python_runtime *out)
{
	struct proc_maps maps;
	char exe_link[64], exe[PATH_MAX];
	ssize_t n;

	memset(out, 0, sizeof(*out));
	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", (int)proc_live_tid(pid));
	n = readlink(exe_link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (proc_maps_read(pid, &maps))
		return -1;
	for (size_t i = 0; i < maps.n && !out->found; i++) {
		const struct map_region *r = &maps.regions[i];
		const char *base = strrchr(r->path, '/') ? strrchr(r->path, '/') + 1 : r->path;

		/* One look per file: its first mapping. */
		if (i && !strcmp(maps.regions[i - 1].path, r->path))
			continue;
		if (strcmp(r->path, exe) && strncmp(base, "libpython", 9))
			continue;
		scan_file(r->open_path, r->path, out);
	}
	proc_maps_free(&maps);
	return 0;
}

int python_runtime_supported(const struct python_runtime *py)
{
	return py->found && py->major == 3 && py->minor == 11;
}

int python_runtime_refusal(pid_t pid, const struct python_runtime *py, char *why, size_t len)
{
	if (!py->found || python_runtime_supported(py))
		return 0;
	if (py->major < 0)
		snprintf(why, len,
			 "process %d runs a CPython older than 3.11 (%s exports no Py_Version): "
			 "the Python host reads the frames of CPython 3.11 only; --inject-malloc "
			 "loads the malloc host anyway (it does not see pymalloc's arenas)",
			 (int)pid, py->path);
	else
		snprintf(why, len,
			 "process %d runs CPython %d.%d.%d: the Python host reads the frames of "
			 "CPython 3.11 only; --inject-malloc loads the malloc host anyway (it does "
			 "not see pymalloc's arenas)",
			 (int)pid, py->major, py->minor, py->micro);
	return 1;
}
