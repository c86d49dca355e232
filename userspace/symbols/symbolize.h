/*
 * The target's address space as the loader sees it: a snapshot of its maps
 * (/proc/PID/maps) and the ELF image of each mapped file (probes, control
 * block, load segments), read once and cached by path.  Frames are named
 * from it by dwarf_symbolize.h, the one symbolizer.
 */
#ifndef MEMPROF_SYMBOLIZE_H
#define MEMPROF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "elfimage.h"
#include "procmaps.h"

struct symbolizer;

struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *sym);

/* Replace the address-space snapshot used for lookups (sym takes maps). */
void symbolizer_set_maps(struct symbolizer *sym, struct proc_maps *maps);
const struct proc_maps *symbolizer_maps(const struct symbolizer *sym);

/*
 * The cached image of region r's file (read from r->open_path the first
 * time).  Returns its status; *img is set when it is ELF_IMAGE_OK.  err
 * gets the reason of a failure (the first time only).
 */
enum elf_image_status symbolizer_image(struct symbolizer *sym, const struct map_region *r,
				       const struct elf_image **img, char *err, size_t errlen);

#endif
