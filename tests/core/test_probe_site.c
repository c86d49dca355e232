/*
 * The memprof probe sites in this executable's own ELF: each is a 5-byte nop
 * (the kind a kernel with the uprobe syscall turns into a trampoline call)
 * between two leas that keep that call out of the red zone, its semaphore
 * is in .probes, and no argument is read relative to %rsp.  Then a real
 * uprobe on memprof:gc counts every hit, and on a kernel that optimizes
 * uprobes the process gains its [uprobes-trampoline] mapping.  Children
 * forked then (through fork() and through the raw syscall, which skips the
 * atfork handlers) fire the probe and survive: the optimized site they
 * inherit would call a trampoline they do not have.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/types.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memprof_probe_abi.h"
#include "memprof_probes.h"
#include "usdt_uprobe.h"

#define NT_STAPSDT 3
#define N_PROBES 3
#define GC_HITS 1000
#define TRAMPOLINE_MAPPING "[uprobes-trampoline]"

/* lea -128(%rsp),%rsp; nopl 0x0(%rax,%rax,1); lea 128(%rsp),%rsp */
static const unsigned char skip_red_zone[] = {0x48, 0x8d, 0x64, 0x24, 0x80};
static const unsigned char nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
static const unsigned char restore_red_zone[] = {0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00};

static const char *const probe_names[N_PROBES] = {MEMPROF_PROBE_SAMPLE, MEMPROF_PROBE_EVENTS,
						  MEMPROF_PROBE_GC};

struct site {
	uint64_t pc, sem;
	const char *args;
	int seen;
};

static Elf_Scn *section_named(Elf *elf, const char *want, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, sh) && (name = elf_strptr(elf, shstrndx, sh->sh_name)) &&
		    strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}

/* Copy len bytes of the file image at virtual address addr. */
static int read_at(Elf *elf, uint64_t addr, unsigned char *out, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !sh.sh_addr ||
		    addr < sh.sh_addr || addr + len > sh.sh_addr + sh.sh_size)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			return -1;
		memcpy(out, (const unsigned char *)data->d_buf + (addr - sh.sh_addr), len);
		return 0;
	}
	return -1;
}

/* The memprof notes of .note.stapsdt, by probe_names index. */
static void find_sites(Elf *elf, struct site sites[N_PROBES])
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_named(elf, ".note.stapsdt", &sh);
	cr_assert_not_null(scn, "no .note.stapsdt section");
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off;

	while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *desc = (const char *)data->d_buf + desc_off;
		if (nh.n_type != NT_STAPSDT || strcmp(desc + 24, MEMPROF_PROBE_PROVIDER) != 0)
			continue;
		const char *name = desc + 24 + strlen(desc + 24) + 1;
		for (int i = 0; i < N_PROBES; i++) {
			if (strcmp(name, probe_names[i]) != 0)
				continue;
			cr_assert_eq(sites[i].seen, 0, "memprof:%s has one site", name);
			memcpy(&sites[i].pc, desc, 8);
			memcpy(&sites[i].sem, desc + 16, 8);
			sites[i].args = name + strlen(name) + 1;
			sites[i].seen = 1;
		}
	}
}

Test(probe_site, every_memprof_probe_is_a_nop5_clear_of_the_red_zone)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);

	GElf_Shdr probes;
	cr_assert_not_null(section_named(elf, ".probes", &probes), "no .probes section");
	struct site sites[N_PROBES];
	memset(sites, 0, sizeof(sites));
	find_sites(elf, sites);

	for (int i = 0; i < N_PROBES; i++) {
		const char *name = probe_names[i];
		unsigned char before[sizeof(skip_red_zone)], at[sizeof(nop5)],
		    after[sizeof(restore_red_zone)];
		cr_assert(sites[i].seen, "memprof:%s has a note", name);
		uint64_t pc = sites[i].pc;
		cr_assert_eq(read_at(elf, pc - sizeof(before), before, sizeof(before)), 0);
		cr_assert_eq(read_at(elf, pc, at, sizeof(at)), 0);
		cr_assert_eq(read_at(elf, pc + sizeof(at), after, sizeof(after)), 0);
		cr_assert_arr_eq(at, nop5, sizeof(nop5), "memprof:%s is not a 5-byte nop", name);
		cr_assert_arr_eq(before, skip_red_zone, sizeof(before),
				 "memprof:%s: no lea -128(%%rsp) before the nop", name);
		cr_assert_arr_eq(after, restore_red_zone, sizeof(after),
				 "memprof:%s: no lea 128(%%rsp) after the nop", name);
		cr_assert(sites[i].sem >= probes.sh_addr && sites[i].sem + sizeof(unsigned short) <=
								probes.sh_addr + probes.sh_size,
			  "memprof:%s: semaphore outside .probes", name);
		cr_assert_null(strstr(sites[i].args, "%rsp"), "memprof:%s reads %%rsp: %s", name,
			       sites[i].args);
	}
	elf_end(elf);
	close(fd);
}

static int trampoline_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, TRAMPOLINE_MAPPING))
			found = 1;
	fclose(f);
	return found;
}

/* The kernel optimizes uprobes on 5-byte nops (it has the uprobe syscall). */
static int kernel_optimizes_uprobes(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " arch_uprobe_optimize\n") != NULL;
	fclose(f);
	return found;
}

Test(probe_site, gc_probe_hits_are_counted_through_the_trampoline)
{
	int optimizes = kernel_optimizes_uprobes();
	cr_assert_not(trampoline_mapped(), "no uprobe was hit in this process yet");

	int fd = usdt_uprobe_open(MEMPROF_PROBE_GC);
	cr_assert_geq(fd, 0, "uprobe on memprof:gc");
	for (uint64_t i = 0; i < GC_HITS; i++)
		memprof_probe_gc(MEMPROF_PROBE_GC_MINOR_START, i, i);
	cr_assert_eq(usdt_uprobe_count(fd), GC_HITS);
	if (optimizes)
		cr_assert(trampoline_mapped(), "the kernel did not optimize the nop5 site");

	for (int raw = 0; raw <= 1; raw++) {
		fflush(NULL);
		pid_t child = raw ? (pid_t)syscall(SYS_fork) : fork();
		cr_assert_geq(child, 0);
		if (child == 0) {
			for (uint64_t i = 0; i < GC_HITS; i++)
				memprof_probe_gc(MEMPROF_PROBE_GC_MINOR_END, i, i);
			_exit(0);
		}
		int status;
		cr_assert_eq(waitpid(child, &status, 0), child);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "a child forked (%s) under the uprobe died: status %#x",
			  raw ? "raw syscall" : "fork()", status);
	}
	cr_assert_eq(usdt_uprobe_count(fd), GC_HITS, "only this process's hits count");
	close(fd);
}
