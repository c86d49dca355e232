#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "usdt_uprobe.h"

#define UPROBE_TYPE_FILE "/sys/bus/event_source/devices/uprobe/type"
#define REF_CTR_SHIFT 32 /* format/ref_ctr_offset: config:32-63 */
#define NT_STAPSDT 3

struct usdt_site {
	uint64_t pc, base, sem;
};

/* File offset of a virtual address, through the section that holds it. */
static int addr_to_offset(Elf *elf, uint64_t addr, uint64_t *off)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_addr)
			continue;
		if (addr >= sh.sh_addr && addr < sh.sh_addr + sh.sh_size) {
			*off = sh.sh_offset + (addr - sh.sh_addr);
			return 0;
		}
	}
	return -1;
}

static int section_addr(Elf *elf, const char *want, uint64_t *addr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    strcmp(name, want) == 0) {
			*addr = sh.sh_addr;
			return 0;
		}
	}
	return -1;
}

static int find_site(Elf *elf, const char *probe, struct usdt_site *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const char *desc = (const char *)data->d_buf + desc_off;
			if (nh.n_type != NT_STAPSDT || nh.n_descsz < 3 * 8 + 2 ||
			    strcmp((const char *)data->d_buf + name_off, "stapsdt") != 0)
				continue;
			const char *prov = desc + 24;
			const char *name = prov + strlen(prov) + 1;
			if (strcmp(prov, "memprof") != 0 || strcmp(name, probe) != 0)
				continue;
			memcpy(&out->pc, desc, 8);
			memcpy(&out->base, desc + 8, 8);
			memcpy(&out->sem, desc + 16, 8);
			return 0;
		}
	}
	return -1;
}

int usdt_uprobe_open(const char *name)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	FILE *f = fopen(UPROBE_TYPE_FILE, "r");
	int type = -1, fd = -1;

	if (n <= 0 || !f) {
		if (f)
			fclose(f);
		fprintf(stderr, "usdt_uprobe: no uprobe PMU or no /proc/self/exe\n");
		return -1;
	}
	path[n] = '\0';
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);

	elf_version(EV_CURRENT);
	int efd = open(path, O_RDONLY);
	Elf *elf = efd >= 0 ? elf_begin(efd, ELF_C_READ, NULL) : NULL;
	struct usdt_site site;
	uint64_t base_now, pc_off, sem_off;
	if (elf && type >= 0 && find_site(elf, name, &site) == 0 &&
	    section_addr(elf, ".stapsdt.base", &base_now) == 0 &&
	    addr_to_offset(elf, site.pc + (base_now - site.base), &pc_off) == 0 &&
	    addr_to_offset(elf, site.sem, &sem_off) == 0) {
		struct perf_event_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = (uint32_t)type;
		attr.config = sem_off << REF_CTR_SHIFT;
		attr.uprobe_path = (uint64_t)(uintptr_t)path;
		attr.probe_offset = pc_off;
		fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			perror("usdt_uprobe: perf_event_open");
	} else {
		fprintf(stderr, "usdt_uprobe: memprof:%s not found in %s\n", name, path);
	}
	if (elf)
		elf_end(elf);
	if (efd >= 0)
		close(efd);
	return fd;
}

uint64_t usdt_uprobe_count(int fd)
{
	uint64_t count = 0;

	if (read(fd, &count, sizeof(count)) != sizeof(count))
		return UINT64_MAX;
	return count;
}
