/* The target's address space: its maps and a per-path cache of ELF images. */
#include "symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cached_image {
	char *path;
	enum elf_image_status status;
	struct elf_image img;
};

struct symbolizer {
	struct proc_maps maps;
	struct cached_image *cache;
	size_t n_cache, cap_cache;
};

struct symbolizer *symbolizer_new(void)
{
	return calloc(1, sizeof(struct symbolizer));
}

void symbolizer_free(struct symbolizer *sym)
{
	if (!sym)
		return;
	proc_maps_free(&sym->maps);
	for (size_t i = 0; i < sym->n_cache; i++) {
		elf_image_free(&sym->cache[i].img);
		free(sym->cache[i].path);
	}
	free(sym->cache);
	free(sym);
}

void symbolizer_set_maps(struct symbolizer *sym, struct proc_maps *maps)
{
	proc_maps_free(&sym->maps);
	sym->maps = *maps;
	maps->regions = NULL;
	maps->n = 0;
}

const struct proc_maps *symbolizer_maps(const struct symbolizer *sym)
{
	return &sym->maps;
}

enum elf_image_status symbolizer_image(struct symbolizer *sym, const struct map_region *r,
				       const struct elf_image **img, char *err, size_t errlen)
{
	const char *path = r->path;
	struct cached_image *c;

	if (errlen)
		err[0] = '\0';
	for (size_t i = 0; i < sym->n_cache; i++) {
		c = &sym->cache[i];
		if (!strcmp(c->path, path)) {
			*img = c->status == ELF_IMAGE_OK ? &c->img : NULL;
			return c->status;
		}
	}
	if (sym->n_cache == sym->cap_cache) {
		size_t ncap = sym->cap_cache ? 2 * sym->cap_cache : 16;
		struct cached_image *v = realloc(sym->cache, ncap * sizeof(*v));

		if (!v) {
			snprintf(err, errlen, "out of memory");
			return ELF_IMAGE_IO;
		}
		sym->cache = v;
		sym->cap_cache = ncap;
	}
	c = &sym->cache[sym->n_cache];
	c->path = strdup(path);
	if (!c->path) {
		snprintf(err, errlen, "out of memory");
		return ELF_IMAGE_IO;
	}
	c->status = elf_image_open(r->open_path, &c->img, err, errlen);
	sym->n_cache++;
	*img = c->status == ELF_IMAGE_OK ? &c->img : NULL;
	return c->status;
}
