/* memprof-bpf diff: reading BASE and NEW, folded or pprof (diff.h). */
#include "diff.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli.h"
#include "output/output.h"
#include "profile.pb-c.h"

/* pprof's name of each view's bytes and objects. */
static const char *const space_type[MEMPROF_N_VIEWS] = {"alloc_space", "inuse_space",
							"promoted_space", "short_space"};
static const char *const objects_type[MEMPROF_N_VIEWS] = {"alloc_objects", "inuse_objects",
							  "promoted_objects", "short_objects"};
#define DIFF_MAX_INPUT (1u << 30)

/* ---- Reading ---- */

static int add(struct input *in, const char *stack, double bytes, double objects)
{
	if (in->n == in->cap) {
		size_t ncap = in->cap ? 2 * in->cap : 256;
		struct entry *v = realloc(in->e, ncap * sizeof(*v));

		if (!v)
			return -1;
		in->e = v;
		in->cap = ncap;
	}
	in->e[in->n].stack = strdup(stack);
	if (!in->e[in->n].stack)
		return -1;
	in->e[in->n].bytes = bytes;
	in->e[in->n++].objects = objects;
	in->total += bytes;
	return 0;
}

/* The whole file, gunzipped if it was gzipped (zlib reads both). */
static unsigned char *slurp(const char *path, size_t *len, int *gzipped)
{
	unsigned char magic[2] = {0}, *buf = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "rb");
	gzFile z;

	*len = 0;
	if (!f)
		return NULL;
	*gzipped = fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
	fclose(f);
	z = gzopen(path, "rb");
	if (!z)
		return NULL;
	for (;;) {
		int got;

		if (*len + 65536 + 1 > cap) {
			unsigned char *v;

			cap = cap ? 2 * cap : 1 << 20;
			v = cap > DIFF_MAX_INPUT ? NULL : realloc(buf, cap);
			if (!v) {
				free(buf);
				gzclose(z);
				return NULL;
			}
			buf = v;
		}
		got = gzread(z, buf + *len, 65536);
		if (got < 0) {
			free(buf);
			gzclose(z);
			return NULL;
		}
		if (got == 0)
			break;
		*len += (size_t)got;
	}
	gzclose(z);
	buf[*len] = '\0';
	return buf;
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

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' '), *end;
		double w;

		if (*line == '#' || !sp)
			continue;
		*sp = '\0';
		w = strtod(sp + 1, &end);
		if (end == sp + 1 || (*end && *end != '\r'))
			return cli_die(EXIT_USAGE, "%s: not a folded profile (line '%.60s')",
				       in->path, line),
			       -1;
		if (add(in, line, w, 0))
			return cli_die(EXIT_FAILED, "out of memory"), -1;
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

static int read_pprof(struct input *in, const unsigned char *buf, size_t len, int view)
{
	Pprof__Profile *p = pprof__profile__unpack(NULL, len, buf);
	int bytes_i = -1, objects_i = -1, rc = 0;
	Pprof__Location **locs = NULL;
	Pprof__Function **funcs = NULL;
	char *stack = NULL;
	size_t cap = 0;

	if (!p)
		return cli_die(EXIT_USAGE, "%s: not a pprof profile (cannot decode it)", in->path),
		       -1;
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
		pprof__profile__free_unpacked(p, NULL);
		return cli_die(EXIT_USAGE, "%s: no %s sample type (see --view)", in->path,
			       space_type[view]),
		       -1;
	}
	in->is_pprof = 1;
	in->period = p->period > 0 ? (double)p->period : 0;
	locs = malloc((p->n_location + 1) * sizeof(*locs));
	funcs = malloc((p->n_function + 1) * sizeof(*funcs));
	if (!locs || !funcs)
		goto oom;
	memcpy(locs, p->location, p->n_location * sizeof(*locs));
	memcpy(funcs, p->function, p->n_function * sizeof(*funcs));
	qsort(locs, p->n_location, sizeof(*locs), loc_cmp);
	qsort(funcs, p->n_function, sizeof(*funcs), fn_cmp);
	for (size_t s = 0; s < p->n_sample; s++) {
		const Pprof__Sample *smp = p->sample[s];
		size_t o = 0;

		if ((size_t)bytes_i >= smp->n_value)
			continue;
		/* Root first: the last location's last line is the root. */
		for (size_t l = smp->n_location_id; l-- > 0;) {
			const Pprof__Location *loc =
			    loc_by_id(locs, p->n_location, smp->location_id[l]);

			for (size_t k = loc ? loc->n_line : 0; k-- > 0;) {
				const Pprof__Function *fn =
				    fn_by_id(funcs, p->n_function, loc->line[k]->function_id);
				int64_t ni = fn ? fn->name : 0;
				const char *name = ni > 0 && (size_t)ni < p->n_string_table
						       ? p->string_table[ni]
						       : "?";
				size_t nl = strlen(name);

				if (o + nl + 2 > cap) {
					char *v;

					cap = (o + nl + 2) * 2;
					v = realloc(stack, cap);
					if (!v)
						goto oom;
					stack = v;
				}
				if (o)
					stack[o++] = ';';
				for (size_t c = 0; c < nl; c++)
					stack[o++] = name[c] == ';' ? ':' : name[c];
			}
		}
		if (!o)
			continue;
		stack[o] = '\0';
		if (add(in, stack, (double)smp->value[bytes_i],
			objects_i >= 0 && (size_t)objects_i < smp->n_value
			    ? (double)smp->value[objects_i]
			    : 0))
			goto oom;
	}
	goto out;
oom:
	rc = cli_die(EXIT_FAILED, "out of memory");
out:
	free(stack);
	free(locs);
	free(funcs);
	pprof__profile__free_unpacked(p, NULL);
	return rc ? -1 : 0;
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
			free(in->e[i].stack);
			continue;
		}
		in->e[k++] = in->e[i];
	}
	in->n = k;
}

int diff_read_input(struct input *in, const char *path, const struct diff_opts *o)
{
	size_t len;
	int gz, rc;
	unsigned char *buf;

	in->path = path;
	buf = slurp(path, &len, &gz);
	if (!buf)
		return cli_die(EXIT_USAGE, "cannot read %s: %s", path,
			       errno ? strerror(errno) : "read error"),
		       -1;
	if (gz || output_format_of_path(path) == FMT_PPROF || memchr(buf, '\0', len))
		rc = read_pprof(in, buf, len, o->view);
	else
		rc = read_folded(in, (char *)buf);
	free(buf);
	if (rc)
		return -1;
	if (o->rate > 0 && !in->is_pprof)
		in->period = 8.0 / o->rate;
	merge(in);
	return 0;
}

void diff_input_free(struct input *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->e[i].stack);
	free(in->e);
}
