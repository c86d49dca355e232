/* The loader's ELF reader on real files: the trigger, a truncated copy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach_util.h"
#include "symbols/elfimage.h"

Test(elfimage, finds_the_probes_the_control_block_and_the_sites)
{
	struct elf_image img;
	char err[256];
	int found = 0;

	cr_assert_eq(elf_image_open(TRIGGER_BIN, &img, err, sizeof(err)), ELF_IMAGE_OK, "%s", err);
	cr_expect(img.probes & (1u << ELF_PROBE_SAMPLE));
	cr_expect(img.probes & (1u << ELF_PROBE_EVENTS));
	cr_expect_neq(img.control_addr, 0);
	cr_expect_eq(img.control_size, 80);
	for (size_t i = 0; i < img.n_syms; i++) {
		const struct elf_sym *s = &img.syms[i];

		if (!strcmp(s->name, "site_long_lived")) {
			found = 1;
			cr_expect_eq(elf_image_lookup(&img, s->addr + s->size - 1), s);
		}
	}
	cr_expect(found, "site_long_lived not in .symtab");
	elf_image_free(&img);
}

Test(elfimage, rejects_truncated_files)
{
	char dir[128], path[256], cmd[600], err[256];
	const long sizes[] = {20, 4096, -2};
	struct elf_image img;
	struct stat st;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/cut", dir);
	cr_assert_eq(stat(TRIGGER_BIN, &st), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		long size = sizes[i] > 0 ? sizes[i] : (long)st.st_size / -sizes[i];

		snprintf(cmd, sizeof(cmd), "cp %s %s && truncate -s %ld %s", TRIGGER_BIN, path,
			 size, path);
		cr_assert_eq(system(cmd), 0);
		cr_expect_eq(elf_image_open(path, &img, err, sizeof(err)), ELF_IMAGE_CORRUPT,
			     "a %ld-byte cut was accepted", size);
		cr_expect(strstr(err, "truncated") != NULL, "%s", err);
	}
}

Test(elfimage, skips_data_files)
{
	struct elf_image img;
	char err[256];

	cr_expect_eq(elf_image_open("Makefile", &img, err, sizeof(err)), ELF_IMAGE_NOT_ELF);
}
