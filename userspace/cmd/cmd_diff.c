/*
 * memprof-bpf diff BASE NEW: the difference of two profiles of one view.
 *
 * Inputs are folded stacks ("root;...;leaf WEIGHT" per line) or pprof
 * (gzipped or plain profile.proto, the view's "<view>_space" sample type).
 * Stacks are matched by their frame names, root first.
 *
 * Outputs:
 *   folded  flamegraph.pl's differential input: "stack BASE NEW" per line
 *           (a stack missing on one side weighs 0 there); flamegraph.pl
 *           draws NEW's widths and colours each frame by NEW - BASE
 *   pprof   one sample per stack with the signed weight NEW - BASE
 *   text    the sites (innermost frame outside the allocator) that grew and
 *           shrank most, with the 95% interval of each change and whether
 *           it is within the noise of sampling
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli.h"
#include "cmd.h"
#include "output/folded.h"
#include "output/output.h"
#include "output/pprof.h"
#include "profile.pb-c.h"
#include "output/site.h"

/* pprof's name of each view's bytes and objects. */
static const char *const space_type[MEMPROF_N_VIEWS] = {"alloc_space", "inuse_space",
							"promoted_space", "short_space"};
static const char *const objects_type[MEMPROF_N_VIEWS] = {"alloc_objects", "inuse_objects",
							  "promoted_objects", "short_objects"};
#define DIFF_MAX_INPUT (1u << 30)

struct entry {
	char *stack; /* root;...;leaf */
	double bytes, objects;
};

struct input {
	const char *path;
	struct entry *e;
	size_t n, cap;
	double total;
	double period; /* bytes one sample stands for (0: unknown) */
	int is_pprof;
};

struct diff_opts {
	const char *base, *new_, *out;
	int format; /* FMT_FOLDED, FMT_PPROF or FMT_TEXT */
	enum memprof_view view;
	double rate; /* for folded inputs: the rate they were sampled at (0: inferred) */
	int normalize;
	unsigned long rows;
};

static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"view", required_argument, NULL, OPT_VIEW},
    {"rate", required_argument, NULL, OPT_RATE},
    {"normalize", no_argument, NULL, 'N'},
    {"rows", required_argument, NULL, 'n'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: memprof-bpf diff BASE NEW [-o FILE] [--format folded|text|pprof]\n"
	    "                        [--view alloc|live|promoted|short] [--rate R] "
	    "[--normalize] [-n N]\n"
	    "The difference NEW - BASE of two profiles (folded stacks or pprof, as attach\n"
	    "writes them), stacks matched by frame names.\n"
	    "  -o, --output FILE  write FILE (default stdout); its extension picks the format\n"
	    "             when --format is not given (.pb.gz/.pprof pprof, .txt text)\n"
	    "  --format folded  flamegraph.pl's differential input, \"stack BASE NEW\" per line\n"
	    "             (flamegraph.pl draws NEW and colours by NEW - BASE: red grew, blue\n"
	    "             shrank); pprof: signed weights NEW - BASE (go tool pprof -top);\n"
	    "             text: the sites that grew and shrank most, with 95%% intervals,\n"
	    "             and which changes are within the noise of sampling\n"
	    "  --view V   the view of pprof inputs (default alloc; live reads inuse_space)\n"
	    "  --rate R   the rate folded inputs were sampled at (for the intervals; default:\n"
	    "             the greatest common divisor of each input's weights is one sample)\n"
	    "  --normalize  scale BASE to NEW's total first (runs of different lengths)\n"
	    "  -n, --rows N  sites listed per direction in text (default 20)\n");
}

static int parse(int argc, char **argv, struct diff_opts *o)
{
	int c;

	*o = (struct diff_opts){.format = FMT_AUTO, .view = MEMPROF_VIEW_ALLOC, .rows = 20};
	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, ":o:n:h", long_opts, NULL)) != -1) {
		char *end;
		int v;

		switch (c) {
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		case 'o':
			o->out = optarg;
			break;
		case 'N':
			o->normalize = 1;
			break;
		case 'n':
			if (cli_parse_count(optarg, "row count", 100000, &o->rows))
				return EXIT_USAGE;
			break;
		case OPT_FORMAT:
			v = output_format_parse(optarg);
			if (v != FMT_FOLDED && v != FMT_PPROF && v != FMT_TEXT)
				return cli_die(EXIT_USAGE,
					       "unknown diff format '%s' (folded, pprof, text)",
					       optarg);
			o->format = v;
			break;
		case OPT_VIEW:
			v = memprof_view_parse(optarg);
			if (v < 0)
				return cli_die(EXIT_USAGE,
					       "unknown view '%s' (alloc, live, promoted, short)",
					       optarg);
			o->view = v;
			break;
		case OPT_RATE:
			errno = 0;
			o->rate = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(o->rate > 0 && o->rate <= 1))
				return cli_die(EXIT_USAGE,
					       "bad rate '%s' (a rate per word, in (0, 1])",
					       optarg);
			break;
		default:
			return cli_getopt_error(c, argv, long_opts);
		}
	}
	if (argc - optind != 2)
		return cli_die(EXIT_USAGE, "diff needs two profiles, BASE and NEW (see memprof-bpf "
					   "diff --help)");
	o->base = argv[optind];
	o->new_ = argv[optind + 1];
	if (o->format == FMT_AUTO) {
		enum output_format f = o->out ? output_format_of_path(o->out) : FMT_FOLDED;

		o->format = f == FMT_PPROF || f == FMT_TEXT ? (int)f : FMT_FOLDED;
	}
	return EXIT_OK;
}

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

static int read_input(struct input *in, const char *path, const struct diff_opts *o)
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

static void input_free(struct input *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->e[i].stack);
	free(in->e);
}

/* ---- The difference ---- */

struct change {
	const char *stack; /* borrowed from an input */
	double base, new_, base_objects, new_objects;
};

static struct change *join(const struct input *a, const struct input *b, double scale,
			   size_t *n_out)
{
	struct change *c = calloc(a->n + b->n + 1, sizeof(*c));
	size_t i = 0, j = 0, n = 0;

	if (!c)
		return NULL;
	while (i < a->n || j < b->n) {
		int cmp = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->e[i].stack, b->e[j].stack);

		if (cmp <= 0) {
			c[n].stack = a->e[i].stack;
			c[n].base = a->e[i].bytes * scale;
			c[n].base_objects = a->e[i].objects * scale;
			i++;
		}
		if (cmp >= 0) {
			c[n].stack = b->e[j].stack;
			c[n].new_ = b->e[j].bytes;
			c[n].new_objects = b->e[j].objects;
			j++;
		}
		n++;
	}
	*n_out = n;
	return c;
}

static int write_folded(FILE *f, const struct change *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %.0f %.0f\n", c[i].stack, c[i].base, c[i].new_);
	return ferror(f) ? -1 : 0;
}

/* ---- pprof: a profile of signed weights, frames by name ---- */

struct name_frame {
	char *name;
	struct dsym_line line;
	struct dsym_frame frame;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, ((const struct name_frame *)b)->name);
}

static int frame_sort(const void *a, const void *b)
{
	return strcmp(((const struct name_frame *)a)->name, ((const struct name_frame *)b)->name);
}

static int write_pprof(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		       const struct input *base, const struct input *nw)
{
	struct name_frame *frames = NULL;
	size_t n_frames = 0, cap = 0, k;
	struct profile p = {0};
	char title[1024];
	int rc = -1;

	/* The distinct frame names, each a frame of one line. */
	for (size_t i = 0; i < n; i++) {
		char *copy = strdup(c[i].stack);

		if (!copy)
			goto out;
		for (char *t = strtok(copy, ";"); t; t = strtok(NULL, ";")) {
			if (n_frames == cap) {
				struct name_frame *v;

				cap = cap ? 2 * cap : 256;
				v = realloc(frames, cap * sizeof(*v));
				if (!v) {
					free(copy);
					goto out;
				}
				frames = v;
			}
			frames[n_frames++].name = strdup(t);
		}
		free(copy);
	}
	if (n_frames)
		qsort(frames, n_frames, sizeof(*frames), frame_sort);
	k = 0;
	for (size_t i = 0; i < n_frames; i++) {
		if (!frames[i].name) {
			for (size_t j = 0; j < k; j++)
				free(frames[j].name);
			for (size_t j = i; j < n_frames; j++)
				free(frames[j].name);
			n_frames = 0;
			goto out;
		}
		if (k && !strcmp(frames[k - 1].name, frames[i].name)) {
			free(frames[i].name);
			continue;
		}
		frames[k++] = frames[i];
	}
	n_frames = k;
	for (size_t i = 0; i < n_frames; i++) {
		frames[i].line = (struct dsym_line){.function = frames[i].name};
		frames[i].frame = (struct dsym_frame){.module = -1, .n_lines = 1};
	}
	for (size_t i = 0; i < n_frames; i++)
		frames[i].frame.lines = &frames[i].line;
	p.stacks = calloc(n ? n : 1, sizeof(*p.stacks));
	if (!p.stacks)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct profile_stack *s = &p.stacks[p.n_stacks];
		char *copy = strdup(c[i].stack);
		size_t depth = 1;

		if (!copy)
			goto out;
		for (const char *q = copy; *q; q++)
			depth += *q == ';';
		s->frames = calloc(depth, sizeof(*s->frames));
		if (!s->frames) {
			free(copy);
			goto out;
		}
		p.n_stacks++;
		/* Root first in the folded stack, innermost first in the profile. */
		k = depth;
		for (char *t = strtok(copy, ";"); t && k; t = strtok(NULL, ";")) {
			const char *key = t;
			struct name_frame *nf =
			    bsearch(&key, frames, n_frames, sizeof(*frames), name_cmp);

			s->frames[--k] = &nf->frame;
		}
		free(copy);
		/* Empty frames ("a;;b") leave holes: close them up. */
		s->n_frames = 0;
		for (size_t q = k; q < depth; q++)
			s->frames[s->n_frames++] = s->frames[q];
		s->bytes[o->view] = llround(c[i].new_ - c[i].base);
		s->objects[o->view] = c[i].new_objects - c[i].base_objects;
		p.total_bytes[o->view] += s->bytes[o->view];
	}
	snprintf(title, sizeof(title),
		 "memprof-bpf diff: %s view, %s minus %s (signed: negative values shrank)",
		 memprof_view_names[o->view], nw->path, base->path);
	p.meta = (struct profile_meta){
	    .view = o->view, .title = title, .rate = nw->period > 0 ? 8.0 / nw->period : 0};
	rc = pprof_write(f, &p);
out:
	for (size_t i = 0; i < p.n_stacks; i++)
		free(p.stacks[i].frames);
	free(p.stacks);
	for (size_t i = 0; i < n_frames; i++)
		free(frames[i].name);
	free(frames);
	return rc;
}

/* ---- text: by site, with intervals ---- */

struct site_change {
	const char *site;
	double base, new_, lo, hi; /* change interval, bytes */
	int noise;
};

static int site_cmp(const void *a, const void *b)
{
	return strcmp(((const struct site_change *)a)->site, ((const struct site_change *)b)->site);
}

static int change_desc(const void *a, const void *b)
{
	double x = ((const struct site_change *)a)->new_ - ((const struct site_change *)a)->base;
	double y = ((const struct site_change *)b)->new_ - ((const struct site_change *)b)->base;

	return x < y ? 1 : x > y ? -1 : site_cmp(a, b);
}

static void human(char *buf, size_t len, double b, int sign)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double a = fabs(b);
	int u = 0;

	while (a >= 1024 && u < 4) {
		a /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%s%.4g %s" : "%s%.0f %s",
		 b < 0	? "-"
		 : sign ? "+"
			: "",
		 a, units[u]);
}

/*
 * The 95% interval of NEW - BASE: each side's Poisson interval of its
 * sample count, scaled by its bytes per sample, the extremes combined
 * (conservative: wider than the interval of the difference).
 */
static void change_interval(double base, double new_, double pb, double pn, double *lo, double *hi)
{
	double bl, bh, nl, nh;

	if (!(pb > 0) || !(pn > 0)) {
		*lo = *hi = new_ - base;
		return;
	}
	poisson_interval95(base / pb, &bl, &bh);
	poisson_interval95(new_ / pn, &nl, &nh);
	/* With nothing on one side, its interval's upper end stays that of 0 samples. */
	*lo = nl * pn - bh * pb;
	*hi = nh * pn - bl * pb;
}

static void print_sites(FILE *f, const struct site_change *s, size_t n, int grew,
			unsigned long rows)
{
	unsigned long shown = 0;
	char d[32], lo[32], hi[32], b[32], w[32];

	fprintf(f, "\n%s most\n", grew ? "grew" : "shrank");
	fprintf(f, "%12s  %-27s  %11s  %11s  %-6s  %s\n", "change", "[95% interval]", "base", "new",
		"noise?", "site");
	for (size_t k = 0; k < n && shown < rows; k++) {
		const struct site_change *c = grew ? &s[k] : &s[n - 1 - k];
		double delta = c->new_ - c->base;

		if (grew ? !(delta > 0) : !(delta < 0))
			break;
		human(d, sizeof(d), delta, 1);
		human(lo, sizeof(lo), c->lo, 1);
		human(hi, sizeof(hi), c->hi, 1);
		human(b, sizeof(b), c->base, 0);
		human(w, sizeof(w), c->new_, 0);
		fprintf(f, "%12s  [%11s, %11s]  %11s  %11s  %-6s  %s\n", d, lo, hi, b, w,
			c->noise ? "noise" : "real", c->site);
		shown++;
	}
	if (!shown)
		fprintf(f, "    (none)\n");
}

static int write_text(FILE *f, const struct change *c, size_t n, const struct diff_opts *o,
		      const struct input *base, const struct input *nw, double scale)
{
	struct site_change *s = calloc(n ? n : 1, sizeof(*s));
	const char *names[PROFILE_MAX_NAMES];
	char **copies = calloc(n ? n : 1, sizeof(*copies));
	double pb = base->period * scale, pn = nw->period, lo, hi;
	size_t m = 0, noise = 0, k = 0;
	char t1[32], t2[32], t3[32], t4[32], t5[32];
	int rc = -1;

	if (!s || !copies)
		goto out;
	for (size_t i = 0; i < n; i++) {
		size_t nn = 0, len;

		copies[i] = strdup(c[i].stack);
		if (!copies[i])
			goto out;
		/* Innermost first: split the root-first stack, then reverse. */
		for (char *t = strtok(copies[i], ";"); t && nn < PROFILE_MAX_NAMES;
		     t = strtok(NULL, ";"))
			names[nn++] = t;
		for (size_t a = 0, z = nn; a + 1 < z; a++, z--) {
			const char *x = names[a];

			names[a] = names[z - 1];
			names[z - 1] = x;
		}
		s[m].site = nn ? site_of_names(names, nn) : "(empty stack)";
		len = strlen(s[m].site);
		(void)len;
		s[m].base = c[i].base;
		s[m].new_ = c[i].new_;
		m++;
	}
	if (m)
		qsort(s, m, sizeof(*s), site_cmp);
	for (size_t i = 0; i < m; i++) {
		if (k && !strcmp(s[k - 1].site, s[i].site)) {
			s[k - 1].base += s[i].base;
			s[k - 1].new_ += s[i].new_;
			continue;
		}
		s[k++] = s[i];
	}
	m = k;
	for (size_t i = 0; i < m; i++) {
		change_interval(s[i].base, s[i].new_, pb, pn, &s[i].lo, &s[i].hi);
		s[i].noise = s[i].lo <= 0 && s[i].hi >= 0;
		noise += s[i].noise && s[i].new_ != s[i].base;
	}
	if (m)
		qsort(s, m, sizeof(*s), change_desc);
	human(t1, sizeof(t1), base->total * scale, 0);
	human(t2, sizeof(t2), nw->total, 0);
	fprintf(f, "memprof-bpf diff: %s view, NEW %s minus BASE %s\n", memprof_view_names[o->view],
		nw->path, base->path);
	fprintf(f, "base %s%s, new %s", t1, scale != 1 ? " (normalized to new's total)" : "", t2);
	human(t3, sizeof(t3), nw->total - base->total * scale, 1);
	change_interval(base->total * scale, nw->total, pb, pn, &lo, &hi);
	human(t4, sizeof(t4), lo, 1);
	human(t5, sizeof(t5), hi, 1);
	fprintf(f, ", change %s [95%% interval %s, %s]\n", t3, t4, t5);
	if (pb > 0 && pn > 0) {
		human(t1, sizeof(t1), pb, 0);
		human(t2, sizeof(t2), pn, 0);
		fprintf(f,
			"One sample stands for %s in base, %s in new%s.  A change is noise when "
			"its interval holds 0:\nsampling alone could have made it.\n",
			t1, t2,
			base->is_pprof && nw->is_pprof ? ""
			: o->rate > 0		       ? " (--rate)"
				      : " (folded: the common divisor of each one's weights)");
	} else {
		fprintf(f, "The sampling period is unknown: no intervals.\n");
	}
	print_sites(f, s, m, 1, o->rows);
	print_sites(f, s, m, 0, o->rows);
	fprintf(f, "\n%zu site(s) changed within the noise of sampling\n", noise);
	rc = ferror(f) ? -1 : 0;
out:
	for (size_t i = 0; copies && i < n; i++)
		free(copies[i]);
	free(copies);
	free(s);
	return rc;
}

/* What writes the diff into its output file (outfile_write). */
struct diff_writer {
	const struct change *c;
	size_t n;
	const struct diff_opts *o;
	const struct input *base, *nw;
	double scale;
};

static int diff_write(FILE *f, void *ctx)
{
	const struct diff_writer *w = ctx;

	errno = 0;
	return w->o->format == FMT_PPROF ? write_pprof(f, w->c, w->n, w->o, w->base, w->nw)
	       : w->o->format == FMT_TEXT
		   ? write_text(f, w->c, w->n, w->o, w->base, w->nw, w->scale)
		   : write_folded(f, w->c, w->n);
}

int cmd_diff(int argc, char **argv)
{
	struct input base = {0}, nw = {0};
	struct diff_opts o;
	struct change *c = NULL;
	struct outfile out;
	struct diff_writer w;
	size_t n = 0;
	double scale = 1;
	char err[2 * PATH_MAX + 256];
	int code = parse(argc, argv, &o);

	if (code)
		return code;
	/* The output first: a bad path fails before the inputs are read. */
	signal(SIGPIPE, SIG_IGN);
	if (outfile_open(&out, o.out, err, sizeof(err))) {
		outfile_close(&out);
		return cli_die(EXIT_FAILED, "%s", err);
	}
	if (read_input(&base, o.base, &o) || read_input(&nw, o.new_, &o)) {
		code = EXIT_USAGE;
		goto out;
	}
	if (o.normalize && base.total > 0)
		scale = nw.total / base.total;
	c = join(&base, &nw, scale, &n);
	if (!c) {
		code = cli_die(EXIT_FAILED, "out of memory");
		goto out;
	}
	w = (struct diff_writer){c, n, &o, &base, &nw, scale};
	if (outfile_write(&out, diff_write, &w,
			  o.format == FMT_PPROF	 ? "diff.pb.gz"
			  : o.format == FMT_TEXT ? "diff.txt"
						 : "diff.folded",
			  err, sizeof(err)))
		code = cli_die(EXIT_FAILED, "%s", err);
out:
	outfile_close(&out);
	free(c);
	input_free(&base);
	input_free(&nw);
	return code;
}
