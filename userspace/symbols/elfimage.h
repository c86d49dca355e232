/*
 * What the loader needs from one ELF file: its PT_LOAD segments (for the
 * load bias), its function symbols (for symbolization), the memprof USDT
 * probes of its .note.stapsdt, the address of memprof_probe_control and the
 * OCaml host's stdlib directory.
 */
#ifndef MEMPROF_ELFIMAGE_H
#define MEMPROF_ELFIMAGE_H

#include <stddef.h>
#include <stdint.h>

/* Bits of elf_image.probes, one per memprof probe name. */
enum elf_probe { ELF_PROBE_SAMPLE, ELF_PROBE_EVENTS, ELF_PROBE_GC, ELF_N_PROBES };
extern const char *const elf_probe_names[ELF_N_PROBES];
/* Also in elf_image.probes: memprof:sample is the batched form (two arguments). */
#define ELF_PROBE_SAMPLE_BATCHED (1u << ELF_N_PROBES)

struct elf_load {
	uint64_t vaddr, offset;
	uint64_t memsz; /* bytes in memory from vaddr */
	int exec;	/* PF_X: a text segment */
};

struct elf_sym {
	uint64_t addr, size;
	size_t name_off;  /* offset in elf_image.strings */
	const char *name; /* elf_image.strings + name_off */
};

struct elf_image {
	struct elf_load *loads;
	size_t n_loads;
	struct elf_sym *syms; /* functions, sorted by addr */
	size_t n_syms;
	char *strings;
	unsigned probes;       /* 1u << ELF_PROBE_* present (provider memprof) */
	uint64_t control_addr; /* vaddr of memprof_probe_control, 0 if none */
	uint64_t control_size;
	uint64_t sample_semaphore; /* vaddr of memprof:sample's semaphore, 0 if none */
	int has_interp;		   /* has a PT_INTERP (a dynamically linked program) */
	char *ocaml_stdlib;	   /* MEMPROF_PROBE_OCAML_STDLIB_SYMBOL's string, or NULL */
	uint64_t py_options;	   /* vaddr of MEMPROF_PROBE_PY_OPTIONS_SYMBOL, 0 if none */
};

enum elf_image_status {
	ELF_IMAGE_OK = 0,
	ELF_IMAGE_NOT_ELF = 1,	/* not an ELF file (a data file): skip it */
	ELF_IMAGE_CORRUPT = -1, /* truncated or malformed: err says why */
	ELF_IMAGE_IO = -2,	/* cannot open or read: err says why */
};

/* Read path.  On failure err (errlen bytes) holds one line. */
enum elf_image_status elf_image_open(const char *path, struct elf_image *out, char *err,
				     size_t errlen);
void elf_image_free(struct elf_image *img);

/*
 * Load bias of a region mapping file offset `offset` at address `start`:
 * runtime address = vaddr + bias.
 */
uint64_t elf_image_bias(const struct elf_image *img, uint64_t start, uint64_t offset);

/* The function holding vaddr, or NULL. */
const struct elf_sym *elf_image_lookup(const struct elf_image *img, uint64_t vaddr);

#endif
