/*
 * libFuzzer target: the loader's ELF reader (elfimage.c) on arbitrary
 * bytes: segments, symbols, .note.stapsdt probes, the control symbol.
 * Any input must give OK, NOT_ELF or CORRUPT, never a crash or a leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbols/elfimage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[256];
	struct elf_image img;
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (elf_image_open(path, &img, err, sizeof(err)) == ELF_IMAGE_OK) {
		/* Use what was read: bias and lookups over every segment. */
		for (size_t i = 0; i < img.n_loads; i++)
			(void)elf_image_bias(&img, img.loads[i].vaddr, img.loads[i].offset);
		for (size_t i = 0; i < img.n_syms; i++)
			(void)elf_image_lookup(&img, img.syms[i].addr);
		(void)elf_image_lookup(&img, img.control_addr);
		elf_image_free(&img);
	}
	close(fd);
	return 0;
}
