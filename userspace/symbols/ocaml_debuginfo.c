/*
 * OCaml debuginfo records (the layouts of runtime/backtrace_nat.c's
 * caml_debuginfo_location, summed up in memprof_probe_abi.h), read through
 * a callback: every offset is relative to the record, so the mapped file's
 * bytes are the process's.
 */
#include "ocaml_debuginfo.h"
#include "ocaml_names.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"

/* The NUL-terminated string at addr into buf; -1 if unreadable or empty. */
static int read_string(ocaml_dbg_read_fn read, void *ctx, uint64_t addr, char *buf, size_t len)
{
	long n = read(ctx, addr, buf, len - 1);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return buf[0] ? 0 : -1;
}

static int decode_one(unsigned fmt, uint64_t dbg, ocaml_dbg_read_fn read, void *ctx,
		      struct ocaml_dbg_loc *loc, int *more)
{
	uint32_t w[2];
	int32_t file_off;
	uint64_t rec, name;

	if (read(ctx, dbg, w, sizeof(w)) != (long)sizeof(w))
		return -1;
	rec = dbg + (w[0] & 0x3FFFFFCu);
	name = rec + 4;
	if (fmt == MEMPROF_PROBE_OCAML_DBG_V1) {
		loc->line = (int)(w[1] >> 12);
	} else if (w[1] & 0x80000000u) { /* the record holds the columns too */
		loc->line = (int)((w[1] >> 12) & 0x7FFFFu);
		name = rec + 12;
	} else {
		loc->line = (int)(w[1] >> 19);
	}
	if (read(ctx, rec, &file_off, sizeof(file_off)) != (long)sizeof(file_off) ||
	    read_string(read, ctx, name, loc->defname, sizeof(loc->defname)) ||
	    read_string(read, ctx, rec + (uint64_t)(int64_t)file_off, loc->file, sizeof(loc->file)))
		return -1;
	*more = w[0] & 1;
	return 0;
}

int ocaml_dbg_decode(unsigned fmt, uint64_t addr, ocaml_dbg_read_fn read, void *ctx,
		     struct ocaml_dbg_loc *out, int max)
{
	int n = 0, more = 1;

	if (fmt != MEMPROF_PROBE_OCAML_DBG_V1 && fmt != MEMPROF_PROBE_OCAML_DBG_V2)
		return -1;
	/* Each next debuginfo follows its two words. */
	for (uint64_t dbg = addr; more && n < max; dbg += 8, n++) {
		if (decode_one(fmt, dbg, read, ctx, &out[n], &more))
			return n ? n : -1;
		out[n].inlined = more;
	}
	if (n)
		out[n - 1].inlined = 0;
	return n;
}

void ocaml_dbg_name(const char *defname, char *buf, size_t len)
{
	defname = ocaml_skip_dune_exe(defname);
	const char *dot = strchr(defname, '.');
	const char *unit_end = dot ? dot : defname + strlen(defname);
	size_t o = 0;

	if (!len)
		return;
	for (const char *p = defname; *p && o + 1 < len; p++) {
		/* A unit "A__B" is module B of A (packs, dune's wrapped libraries). */
		if (p < unit_end && p[0] == '_' && p[1] == '_' && p + 2 < unit_end &&
		    isupper((unsigned char)p[2])) {
			buf[o++] = '.';
			p++;
			continue;
		}
		buf[o++] = *p;
	}
	buf[o] = '\0';
	if (!dot && isupper((unsigned char)defname[0]))
		snprintf(buf + o, len - o, ".entry");
}

int ocaml_dbg_is_stdlib(const char *defname)
{
	/* Its units: Stdlib, Stdlib__List..., CamlinternalFormat..., Std_exit. */
	const char *unit_end = defname + strcspn(defname, ".");

	if (!strncmp(defname, "Stdlib", 6))
		return defname + 6 == unit_end || !strncmp(defname + 6, "__", 2);
	if (!strncmp(defname, "Camlinternal", 12))
		return isupper((unsigned char)defname[12]);
	return !strncmp(defname, "Std_exit", 8) && defname + 8 == unit_end;
}
