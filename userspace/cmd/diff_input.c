/* memprof-bpf diff: reading BASE and NEW, folded or pprof (diff.h). */
#include "diff.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"
#include "output/output.h"
#include "profile.pb-c.h"

/* pprof's name of each view's bytes and objects. */
static const char *const space_type[MEMPROF_N_VIEWS] = {
    "alloc_space", "inuse_space", "promoted_space", "short_space", "peak_space"};
static const char *const objects_type[MEMPROF_N_VIEWS] = {
    "alloc_objects", "inuse_objects", "promoted_objects", "short_objects", "peak_objects"};
#define MIB ((size_t)1 << 20)
#define INPUT_MAX_BYTES ((size_t)DIFF_MAX_INPUT_MIB * MIB)

/* ---- The stacks kept ---- */

/*
 * Why one more stack of that many frames passes a limit (a phrase for the
 * message), or NULL if it does not.
 */
static const char *over_limit(const struct input *in, size_t frames)
{
	static char why[96];

	if (frames > DIFF_MAX_FRAMES)
		snprintf(why, sizeof(why), "a stack of %zu frames (diff reads at most %d)", frames,
			 DIFF_MAX_FRAMES);
	else if (frames > DIFF_MAX_FRAMES_TOTAL - in->frames)
		snprintf(why, sizeof(why), "more than %d frames in all (diff's limit, see --help)",
			 DIFF_MAX_FRAMES_TOTAL);
	else if (in->n == DIFF_MAX_STACKS)
		snprintf(why, sizeof(why), "more than %d stacks (diff's limit, see --help)",
			 DIFF_MAX_STACKS);
	else
		return NULL;
	return why;
}

/*
 * One more stack, within the limits (over_limit): not copied, a folded
 * input's points into its text, a pprof input's into its blocks.  0, or -1
 * out of memory.
 */
static int add(struct input *in, char *stack, size_t frames, double bytes, double objects)
{
	if (in->n == in->cap) {
		size_t ncap = in->cap ? 2 * in->cap : 1024;
		struct entry *v;

		ncap = ncap > DIFF_MAX_STACKS ? DIFF_MAX_STACKS : ncap;
		v = realloc(in->e, ncap * sizeof(*v));
		if (!v)
			return -1;
		in->e = v;
		in->cap = ncap;
	}
	in->frames += frames;
	in->e[in->n++] = (struct entry){.stack = stack, .bytes = bytes, .objects = objects};
	in->total += bytes;
	return 0;
}

/* Text that never moves, for the stacks of a pprof input. */
struct text_block {
	struct text_block *next;
	size_t used, cap;
	char text[];
};

/* A copy of s[0..len) kept with the input, or NULL out of memory. */
static char *keep_text(struct input *in, const char *s, size_t len)
{
	struct text_block *b = in->blocks;
	char *d;

	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > MIB ? len + 1 : MIB;

		b = malloc(offsetof(struct text_block, text) + cap);
		if (!b)
			return NULL;
		*b = (struct text_block){.next = in->blocks, .cap = cap};
		in->blocks = b;
	}
	d = b->text + b->used;
	memcpy(d, s, len);
	d[len] = '\0';
	b->used += len + 1;
	return d;
}

/*
 * A frame name as diff writes it in every format: control characters
 * (below 0x20, and 0x7f) become spaces, ';' (the folded separator) ':', and
 * the spaces ending the name are dropped, so that no name breaks a folded
 * line, forges a frame or moves the weights.  Writes dst (which may be src,
 * or before it); returns the length written.
 */
static size_t clean_frame(char *dst, const char *src, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = (char)(c < 0x20 || c == 0x7f ? ' ' : c == ';' ? ':' : c);
		if (dst[i] != ' ')
			kept = i + 1;
	}
	return kept;
}

/* The same for each frame of a folded stack, in place. */
static void clean_stack(char *stack)
{
	char *w = stack;

	for (const char *r = stack;;) {
		const char *end = strchr(r, ';');
		size_t n = end ? (size_t)(end - r) : strlen(r);

		memmove(w, r, n);
		w += clean_frame(w, w, n);
		if (!end)
			break;
		*w++ = ';';
		r = end + 1;
	}
	*w = '\0';
}

/*
 * The whole input, gunzipped if it was gzipped (zlib reads both), at most
 * DIFF_MAX_INPUT_MIB: *out (NUL-terminated, malloc'ed), *len and *gzipped.
 * 0, or the exit code after the message.
 */
static int slurp(const char *path, unsigned char **out, size_t *len, int *gzipped)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char *buf = NULL;
	size_t cap, n = 0;
	struct stat st;
	gzFile z;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (fd < 0 || fstat(fd, &st)) {
		rc = cli_die(EXIT_USAGE, "cannot read %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	/* One descriptor, read once: a pipe works too. */
	z = gzdopen(fd, "rb");
	if (!z) {
		close(fd);
		return cli_die(EXIT_FAILED, "out of memory");
	}
	*gzipped = !gzdirect(z);
	if (!*gzipped && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > INPUT_MAX_BYTES) {
		rc = cli_die(EXIT_USAGE, "%s: more than %d MiB (diff's limit, see --help)", path,
			     DIFF_MAX_INPUT_MIB);
		goto out;
	}
	/* A plain file in one piece; else growing, up to one byte past the limit. */
	cap = !*gzipped && S_ISREG(st.st_mode) ? (size_t)st.st_size + 2 : MIB;
	for (;;) {
		size_t room;
		int got;

		if (n + 1 == cap) {
			unsigned char *v;

			if (n > INPUT_MAX_BYTES)
				break;
			cap = cap > (INPUT_MAX_BYTES + 2) / 2 ? INPUT_MAX_BYTES + 2 : 2 * cap;
			v = realloc(buf, cap);
			if (!v) {
				rc = cli_die(EXIT_FAILED, "out of memory");
				goto out;
			}
			buf = v;
		} else if (!buf) {
			buf = malloc(cap);
			if (!buf) {
				rc = cli_die(EXIT_FAILED, "out of memory");
				goto out;
			}
		}
		room = cap - 1 - n;
		got = gzread(z, buf + n, room > INT_MAX / 2 ? INT_MAX / 2 : (unsigned)room);
		if (got < 0) {
			int zerr;
			const char *msg = gzerror(z, &zerr);

			rc = cli_die(EXIT_USAGE, "cannot read %s: %s", path,
				     zerr == Z_ERRNO ? strerror(errno) : msg);
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	if (n > INPUT_MAX_BYTES) {
		rc = cli_die(EXIT_USAGE, "%s: more than %d MiB%s (diff's limit, see --help)", path,
			     DIFF_MAX_INPUT_MIB, *gzipped ? " once decompressed" : "");
		goto out;
	}
	buf[n] = '\0';
	if (cap - n > MIB) {
		/* Give the slack of the growth back: a folded input's text is kept. */
		unsigned char *v = realloc(buf, n + 1);

		buf = v ? v : buf;
	}
	*out = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	gzclose(z);
	return rc;
}

static unsigned long long gcd(unsigned long long a, unsigned long long b)
{
	while (b) {
		unsigned long long t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * Folded stacks carry no sample counts.  Every sample of one rate weighs
 * the same bytes (8 / rate, exact for the usual rates), so a stack's weight
 * is a multiple of it: the greatest common divisor of the weights is taken
 * as one sample, unless it is below a word (then unknown: no intervals).
 */
static int read_folded(struct input *in, char *text)
{
	unsigned long long g = 0;
	size_t lineno = 0;

	for (char *line = text, *next; line; line = next) {
		char *sp, *end;
		const char *why;
		size_t frames = 0;
		double w;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		sp = strrchr(line, ' ');
		if (*line == '#' || !sp)
			continue;
		*sp = '\0';
		clean_stack(line);
		w = strtod(sp + 1, &end);
		if (end == sp + 1 || (*end && *end != '\r'))
			return cli_die(EXIT_USAGE, "%s:%zu: not a folded profile (line '%.60s')",
				       in->path, lineno, line);
		/* Bytes: NaN, infinities and absurd sizes would wrap the sums. */
		if (!(w >= 0 && w <= DIFF_MAX_WEIGHT))
			return cli_die(
			    EXIT_USAGE, "%s:%zu: bad weight '%.*s' (bytes, from 0 to 2^62)",
			    in->path, lineno, (int)(end - sp - 1 < 40 ? end - sp - 1 : 40), sp + 1);
		if (in->total + w > DIFF_MAX_WEIGHT)
			return cli_die(EXIT_USAGE,
				       "%s:%zu: the weights add up to more than 2^62 bytes",
				       in->path, lineno);
		for (const char *c = line; *c; c++)
			frames += *c == ';';
		frames += *line != '\0';
		why = over_limit(in, frames);
		if (why)
			return cli_die(EXIT_USAGE, "%s:%zu: %s", in->path, lineno, why);
		if (add(in, line, frames, w, 0))
			return cli_die(EXIT_FAILED, "out of memory");
		if (w >= 1 && w < 1e18)
			g = gcd(g, (unsigned long long)llround(w));
	}
	in->period = g >= 8 ? (double)g : 0;
	return 0;
}

static int loc_cmp(const void *a, const void *b)
{
	uint64_t x = (*(Pprof__Location *const *)a)->id, y = (*(Pprof__Location *const *)b)->id;

	return x < y ? -1 : x > y;
}

static int fn_cmp(const void *a, const void *b)
{
	uint64_t x = (*(Pprof__Function *const *)a)->id, y = (*(Pprof__Function *const *)b)->id;

	return x < y ? -1 : x > y;
}

/* By id in arrays sorted by id (ids are usually 1..n: checked first). */
static const Pprof__Location *loc_by_id(Pprof__Location **sorted, size_t n, uint64_t id)
{
	Pprof__Location key = {.id = id}, *kp = &key, **hit;

	if (id >= 1 && id <= n && sorted[id - 1]->id == id)
		return sorted[id - 1];
	hit = bsearch(&kp, sorted, n, sizeof(*sorted), loc_cmp);
	return hit ? *hit : NULL;
}

static const Pprof__Function *fn_by_id(Pprof__Function **sorted, size_t n, uint64_t id)
{
	Pprof__Function key = {.id = id}, *kp = &key, **hit;

	if (id >= 1 && id <= n && sorted[id - 1]->id == id)
		return sorted[id - 1];
	hit = bsearch(&kp, sorted, n, sizeof(*sorted), fn_cmp);
	return hit ? *hit : NULL;
}

/*
 * Sample s's value of a type: 0 to 2^62, and so is the sum of that type's
 * values (total).  0, or the exit code after the message.
 */
static int check_value(const struct input *in, size_t s, const char *type, int64_t v, double *total)
{
	if (v < 0 || v > DIFF_MAX_WEIGHT)
		return cli_die(EXIT_USAGE,
			       "%s: sample %zu: %s %" PRId64 " out of range (0 to 2^62)", in->path,
			       s, type, v);
	if (*total + (double)v > DIFF_MAX_WEIGHT)
		return cli_die(EXIT_USAGE, "%s: sample %zu: the %s add up to more than 2^62",
			       in->path, s, type);
	*total += (double)v;
	return 0;
}

/*
 * protobuf-c's memory while it decodes a pprof input, at most
 * DIFF_MAX_DECODE_MIB: each block carries its size before it.
 */
struct budget {
	size_t used, max;
	int over;
};

#define BLOCK_HEAD sizeof(max_align_t)

static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;
	unsigned char *p;

	if (size > b->max || b->max - size < b->used + BLOCK_HEAD) {
		b->over = 1;
		return NULL;
	}
	p = malloc(BLOCK_HEAD + size);
	if (!p)
		return NULL;
	memcpy(p, &size, sizeof(size));
	b->used += BLOCK_HEAD + size;
	return p + BLOCK_HEAD;
}

static void budget_free(void *data, void *ptr)
{
	struct budget *b = data;
	unsigned char *p = ptr;
	size_t size;

	if (!p)
		return;
	p -= BLOCK_HEAD;
	memcpy(&size, p, sizeof(size));
	b->used -= BLOCK_HEAD + size;
	free(p);
}

/* The stacks of one pprof sample, spelled out root first into *stack. */
struct spelling {
	char *stack;
	size_t len, cap, frames;
};

/*
 * Append frame name to sp (cleaned).  0, or the exit code after the
 * message (a limit passed, out of memory).
 */
static int spell(struct input *in, size_t s, struct spelling *sp, const char *name)
{
	size_t nl = strlen(name);

	if (sp->frames == DIFF_MAX_FRAMES)
		return cli_die(EXIT_USAGE, "%s: sample %zu: more than %d frames (diff's limit)",
			       in->path, s, DIFF_MAX_FRAMES);
	if (nl + 2 > INPUT_MAX_BYTES - in->text_bytes - sp->len)
		return cli_die(EXIT_USAGE,
			       "%s: sample %zu: its stacks spelled out take more than %d MiB "
			       "(diff's limit, see --help)",
			       in->path, s, DIFF_MAX_INPUT_MIB);
	if (sp->len + nl + 2 > sp->cap) {
		size_t cap = sp->len + nl + 2;
		char *v;

		/* Doubling, but never past the limit itself. */
		cap = cap > INPUT_MAX_BYTES / 2 ? INPUT_MAX_BYTES + 2 : 2 * cap;
		v = realloc(sp->stack, cap);

		if (!v)
			return cli_die(EXIT_FAILED, "out of memory");
		sp->stack = v;
		sp->cap = cap;
	}
	if (sp->frames++)
		sp->stack[sp->len++] = ';';
	sp->len += clean_frame(sp->stack + sp->len, name, nl);
	sp->stack[sp->len] = '\0';
	return 0;
}

/*
 * The samples of an encoded profile, counted from its top-level fields
 * (field 2, length-delimited) without decoding it; SIZE_MAX if they do not
 * parse (the decoder then says why).
 */
static size_t count_samples(const unsigned char *buf, size_t len)
{
	size_t n = 0, i = 0;

	while (i < len) {
		uint64_t key = 0, v = 0;

		for (int shift = 0;; shift += 7) {
			if (i == len || shift > 63)
				return SIZE_MAX;
			key |= (uint64_t)(buf[i] & 0x7f) << shift;
			if (!(buf[i++] & 0x80))
				break;
		}
		switch (key & 7) {
		case 0: /* varint */
		case 2: /* length, then that many bytes */
			for (int shift = 0;; shift += 7) {
				if (i == len || shift > 63)
					return SIZE_MAX;
				v |= (uint64_t)(buf[i] & 0x7f) << shift;
				if (!(buf[i++] & 0x80))
					break;
			}
			if ((key & 7) == 2) {
				if (v > len - i)
					return SIZE_MAX;
				i += v;
				n += key >> 3 == 2;
			}
			break;
		case 1: /* fixed64 */
		case 5: /* fixed32 */
			v = (key & 7) == 1 ? 8 : 4;
			if (v > len - i)
				return SIZE_MAX;
			i += v;
			break;
		default:
			return SIZE_MAX;
		}
	}
	return n;
}

static int read_pprof(struct input *in, const unsigned char *buf, size_t len, int view)
{
	struct budget budget = {.max = (size_t)DIFF_MAX_DECODE_MIB * MIB};
	ProtobufCAllocator alloc = {budget_alloc, budget_free, &budget};
	size_t samples = count_samples(buf, len);
	Pprof__Profile *p;
	int bytes_i = -1, objects_i = -1, rc = 0;
	Pprof__Location **locs = NULL;
	Pprof__Function **funcs = NULL;
	struct spelling sp = {0};
	double total_bytes = 0, total_objects = 0;

	/* Counted first: their decoding would take the memory the limit spares. */
	if (samples != SIZE_MAX && samples > DIFF_MAX_STACKS)
		return cli_die(EXIT_USAGE, "%s: %zu samples, more than %d stacks (diff's limit)",
			       in->path, samples, DIFF_MAX_STACKS);
	p = pprof__profile__unpack(&alloc, len, buf);
	if (!p && budget.over)
		return cli_die(EXIT_USAGE,
			       "%s: decoding it takes more than %d MiB (diff's limit, see --help)",
			       in->path, DIFF_MAX_DECODE_MIB);
	if (!p)
		return cli_die(EXIT_USAGE, "%s: not a pprof profile (cannot decode it)", in->path);
	for (size_t i = 0; i < p->n_sample_type; i++) {
		int64_t t = p->sample_type[i]->type;
		const char *name =
		    t >= 0 && (size_t)t < p->n_string_table ? p->string_table[t] : "";

		if (!strcmp(name, space_type[view]))
			bytes_i = (int)i;
		if (!strcmp(name, objects_type[view]))
			objects_i = (int)i;
	}
	if (bytes_i < 0) {
		rc = cli_die(EXIT_USAGE, "%s: no %s sample type (see --view)", in->path,
			     space_type[view]);
		goto out;
	}
	if (p->n_sample > DIFF_MAX_STACKS) {
		rc = cli_die(EXIT_USAGE, "%s: %zu samples, more than %d stacks (diff's limit)",
			     in->path, p->n_sample, DIFF_MAX_STACKS);
		goto out;
	}
	in->is_pprof = 1;
	in->period = p->period > 0 && p->period <= DIFF_MAX_WEIGHT ? (double)p->period : 0;
	locs = malloc((p->n_location + 1) * sizeof(*locs));
	funcs = malloc((p->n_function + 1) * sizeof(*funcs));
	if (!locs || !funcs)
		goto oom;
	/* A profile without locations or functions has NULL arrays: no copy from them. */
	if (p->n_location)
		memcpy(locs, p->location, p->n_location * sizeof(*locs));
	if (p->n_function)
		memcpy(funcs, p->function, p->n_function * sizeof(*funcs));
	qsort(locs, p->n_location, sizeof(*locs), loc_cmp);
	qsort(funcs, p->n_function, sizeof(*funcs), fn_cmp);
	for (size_t s = 0; s < p->n_sample; s++) {
		const Pprof__Sample *smp = p->sample[s];
		const char *why;
		int64_t bytes, objects;
		char *kept;

		if ((size_t)bytes_i >= smp->n_value)
			continue;
		bytes = smp->value[bytes_i];
		objects =
		    objects_i >= 0 && (size_t)objects_i < smp->n_value ? smp->value[objects_i] : 0;
		rc = check_value(in, s + 1, space_type[view], bytes, &total_bytes);
		if (!rc)
			rc = check_value(in, s + 1, objects_type[view], objects, &total_objects);
		if (rc)
			goto out;
		sp.len = sp.frames = 0;
		/* Root first: the last location's last line is the root. */
		for (size_t l = smp->n_location_id; l-- > 0 && !rc;) {
			const Pprof__Location *loc =
			    loc_by_id(locs, p->n_location, smp->location_id[l]);

			for (size_t k = loc ? loc->n_line : 0; k-- > 0 && !rc;) {
				const Pprof__Function *fn =
				    fn_by_id(funcs, p->n_function, loc->line[k]->function_id);
				int64_t ni = fn ? fn->name : 0;

				rc = spell(in, s + 1, &sp,
					   ni > 0 && (size_t)ni < p->n_string_table
					       ? p->string_table[ni]
					       : "?");
			}
		}
		if (rc)
			goto out;
		if (!sp.frames)
			continue;
		why = over_limit(in, sp.frames);
		if (why) {
			rc = cli_die(EXIT_USAGE, "%s: sample %zu: %s", in->path, s + 1, why);
			goto out;
		}
		kept = keep_text(in, sp.stack, sp.len);
		if (!kept || add(in, kept, sp.frames, (double)bytes, (double)objects))
			goto oom;
		in->text_bytes += sp.len + 1;
	}
	goto out;
oom:
	rc = cli_die(EXIT_FAILED, "out of memory");
out:
	free(sp.stack);
	free(locs);
	free(funcs);
	pprof__profile__free_unpacked(p, &alloc);
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->stack, ((const struct entry *)b)->stack);
}

/* Sort by stack and merge equal stacks. */
static void merge(struct input *in)
{
	size_t k = 0;

	if (in->n)
		qsort(in->e, in->n, sizeof(*in->e), entry_cmp);
	for (size_t i = 0; i < in->n; i++) {
		if (k && !strcmp(in->e[k - 1].stack, in->e[i].stack)) {
			in->e[k - 1].bytes += in->e[i].bytes;
			in->e[k - 1].objects += in->e[i].objects;
			continue;
		}
		in->e[k++] = in->e[i];
	}
	in->n = k;
}

int diff_read_input(struct input *in, const char *path, const struct diff_opts *o)
{
	size_t len;
	int gz = 0, rc;
	unsigned char *buf;

	in->path = path;
	rc = slurp(path, &buf, &len, &gz);
	if (rc)
		return rc;
	if (gz || output_format_of_path(path) == FMT_PPROF || memchr(buf, '\0', len)) {
		rc = read_pprof(in, buf, len, o->view);
		free(buf);
	} else {
		/* The stacks point into the text: it stays. */
		in->text = (char *)buf;
		rc = read_folded(in, in->text);
	}
	if (rc)
		return rc;
	if (o->rate > 0 && !in->is_pprof)
		in->period = 8.0 / o->rate;
	merge(in);
	return 0;
}

void diff_input_free(struct input *in)
{
	while (in->blocks) {
		struct text_block *b = in->blocks;

		in->blocks = b->next;
		free(b);
	}
	free(in->text);
	free(in->e);
}
