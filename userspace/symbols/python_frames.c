/* Python frame records (python_frames.h; the layout in memprof_probe_abi.h). */
#include "python_frames.h"

#include <string.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"

/* A name field of len bytes at addr, NUL-terminated in the record. */
static int read_name(py_frame_read_fn read, void *ctx, uint64_t addr, size_t len, char *out,
		     size_t max)
{
	if (len + 1 > max || read(ctx, addr, out, len + 1) != (long)(len + 1) || out[len] != '\0' ||
	    memchr(out, '\0', len))
		return -1;
	/* A frame name is one line: a control character would forge folded output. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = '?';
	return 0;
}

int py_frame_decode(uint64_t addr, py_frame_read_fn read, void *ctx, struct py_frame_loc *out)
{
	unsigned char h[MEMPROF_PROBE_PY_RECORD_HEADER];
	uint32_t words[2];
	uint16_t lens[2];

	if (addr & 7 || read(ctx, addr, h, sizeof(h)) != (long)sizeof(h))
		return -1;
	memcpy(words, h, sizeof(words));
	memcpy(lens, h + 8, sizeof(lens));
	out->line = (int)(words[0] & 0x7fffffffu);
	out->first_line = (int)(words[1] & 0x7fffffffu);
	uint64_t name_at = addr + MEMPROF_PROBE_PY_RECORD_HEADER;
	if (read_name(read, ctx, name_at, lens[0], out->qualname, sizeof(out->qualname)) ||
	    read_name(read, ctx, name_at + lens[0] + 1, lens[1], out->file, sizeof(out->file)))
		return -1;
	return out->qualname[0] ? 0 : -1;
}
