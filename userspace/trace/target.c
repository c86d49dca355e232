/* Find the memprof probes and the control block in a process's mappings. */
#include "target.h"
#include "symbols/procmaps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static int seen_path(const struct proc_maps *m, size_t upto, const char *path)
{
	for (size_t i = 0; i < upto; i++)
		if (!strcmp(m->regions[i].path, path))
			return 1;
	return 0;
}

static enum target_status add_file(struct target *t, const char *path, unsigned probes,
				   uint64_t sample_semaphore)
{
	struct probe_file *v = realloc(t->files, (t->n_files + 1) * sizeof(*v));

	if (!v)
		return TARGET_ERROR;
	t->files = v;
	v[t->n_files].path = strdup(path);
	if (!v[t->n_files].path)
		return TARGET_ERROR;
	v[t->n_files].sample_semaphore = sample_semaphore;
	v[t->n_files++].probes = probes;
	return TARGET_OK;
}

/* Why pid has no probes: a kernel thread, a static program, or none mapped. */
static void no_probes_reason(pid_t pid, struct symbolizer *sym, char *err, size_t errlen)
{
	const struct proc_maps *m = symbolizer_maps(sym);
	char link[64], exe[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)proc_live_tid(pid));
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n < 0 && m->n == 0) {
		snprintf(err, errlen,
			 "process %d is a kernel thread: it has no user memory and no memprof "
			 "probes to trace",
			 (int)pid);
		return;
	}
	if (n > 0) {
		exe[n] = '\0';
		for (size_t i = 0; i < m->n; i++) {
			const struct elf_image *img;
			char ignored[8];

			if (strncmp(exe, m->regions[i].path, strlen(m->regions[i].path)))
				continue;
			if (symbolizer_image(sym, &m->regions[i], &img, ignored, sizeof(ignored)) ==
				ELF_IMAGE_OK &&
			    !img->has_interp) {
				snprintf(err, errlen,
					 "process %d runs a statically linked program (%s) without "
					 "memprof probes: LD_PRELOAD cannot add them; link it with "
					 "the memprof core",
					 (int)pid, m->regions[i].path);
				return;
			}
			break;
		}
	}
	snprintf(err, errlen,
		 "process %d has no memprof probes (no mapped ELF file has a "
		 "memprof:sample USDT note)",
		 (int)pid);
}

enum target_status target_scan(pid_t pid, struct symbolizer *sym, struct target *t, char *err,
			       size_t errlen)
{
	struct proc_maps maps;
	const struct proc_maps *m;
	int rc;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	rc = proc_maps_read(pid, &maps);
	if (rc == -ESRCH) {
		snprintf(err, errlen, "no process with pid %d", (int)pid);
		return TARGET_NO_PROCESS;
	}
	if (rc) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s", (int)pid, strerror(-rc));
		return rc == -EACCES || rc == -EPERM ? TARGET_NO_ACCESS : TARGET_ERROR;
	}
	symbolizer_set_maps(sym, &maps);
	m = symbolizer_maps(sym);
	for (size_t i = 0; i < m->n; i++) {
		const struct map_region *r = &m->regions[i];
		const struct elf_image *img;
		enum elf_image_status st;

		if (seen_path(m, i, r->path))
			continue;
		st = symbolizer_image(sym, r, &img, err, errlen);
		if (st == ELF_IMAGE_NOT_ELF || st == ELF_IMAGE_IO)
			continue; /* data files; files we cannot open are not probed */
		if (st == ELF_IMAGE_CORRUPT)
			return TARGET_BAD_ELF;
		if (img->probes & (1u << ELF_PROBE_SAMPLE) &&
		    add_file(t, r->open_path, img->probes,
			     img->sample_semaphore
				 ? img->sample_semaphore + elf_image_bias(img, r->start, r->offset)
				 : 0) != TARGET_OK) {
			snprintf(err, errlen, "out of memory");
			return TARGET_ERROR;
		}
		if (img->probes & (1u << ELF_PROBE_SAMPLE) && img->ocaml_stdlib)
			t->ocaml_host = 1;
		if (img->control_addr && !t->control_addr)
			t->control_addr =
			    img->control_addr + elf_image_bias(img, r->start, r->offset);
		if (img->py_options && !t->py_options)
			t->py_options = img->py_options + elf_image_bias(img, r->start, r->offset);
	}
	if (!t->n_files) {
		no_probes_reason(pid, sym, err, errlen);
		return TARGET_NO_PROBES;
	}
	return TARGET_OK;
}

void target_free(struct target *t)
{
	for (size_t i = 0; i < t->n_files; i++)
		free(t->files[i].path);
	free(t->files);
	memset(t, 0, sizeof(*t));
}
