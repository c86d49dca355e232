/*
 * Symbolization of return addresses in the target: the module mapped at the
 * address (from /proc/PID/maps), its function symbols (.symtab, .dynsym)
 * and its load bias.  ELF images are read once and cached by path.
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

/*
 * The frame of return address pc: "function" or "module+0xOFF" (OFF the
 * address of the call in the module's ELF address space), never with ';'
 * or spaces.
 */
void symbolizer_frame(struct symbolizer *sym, uint64_t pc, char *buf, size_t len);

#endif
