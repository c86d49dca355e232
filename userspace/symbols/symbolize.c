/* The target's address space: its maps and a per-path cache of ELF images. */
#include "symbolize.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cached_image {
	char *path;
	enum elf_image_status status;
	struct elf_image img;
};

/*
 * A file the target maps that this loader reaches only through the target
 * (/proc/PID/root/..., /proc/PID/map_files/...): held open, so that it can
 * still be read once the target has exited (the symbolizer runs after the
 * tracing), through /proc/self/fd/N.
 */
struct held_file {
	char *path;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	int fd;
};

struct symbolizer {
	struct proc_maps maps;
	struct cached_image *cache;
	size_t n_cache, cap_cache;
	struct held_file *held;
	size_t n_held, cap_held;
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
	for (size_t i = 0; i < sym->n_held; i++) {
		close(sym->held[i].fd);
		free(sym->held[i].path);
	}
	free(sym->held);
	free(sym);
}

/* The fd holding r's file open, or -1 (r is read at a path of its own). */
static int hold_file(struct symbolizer *sym, const struct map_region *r)
{
	struct held_file *h;
	int fd;

	if (strncmp(r->open_path, "/proc/", 6) || !strncmp(r->open_path, "/proc/self/", 11))
		return -1;
	for (size_t i = 0; i < sym->n_held; i++) {
		h = &sym->held[i];
		if (h->inode == r->inode && h->dev_major == r->dev_major &&
		    h->dev_minor == r->dev_minor && !strcmp(h->path, r->path))
			return h->fd;
	}
	if (sym->n_held == sym->cap_held) {
		size_t ncap = sym->cap_held ? 2 * sym->cap_held : 8;
		struct held_file *v = realloc(sym->held, ncap * sizeof(*v));

		if (!v)
			return -1;
		sym->held = v;
		sym->cap_held = ncap;
	}
	fd = open(r->open_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	h = &sym->held[sym->n_held];
	*h = (struct held_file){.path = strdup(r->path),
				.inode = r->inode,
				.dev_major = r->dev_major,
				.dev_minor = r->dev_minor,
				.fd = fd};
	if (!h->path) {
		close(fd);
		return -1;
	}
	sym->n_held++;
	return fd;
}

void symbolizer_set_maps(struct symbolizer *sym, struct proc_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		struct map_region *r = &maps->regions[i];
		int fd = hold_file(sym, r);
		char held[32], *p;

		if (fd < 0)
			continue;
		snprintf(held, sizeof(held), "/proc/self/fd/%d", fd);
		p = strdup(held);
		if (p) {
			free(r->open_path);
			r->open_path = p;
		}
	}
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
