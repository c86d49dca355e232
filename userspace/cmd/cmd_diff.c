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
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd.h"
#include "diff.h"
#include "output/output.h"

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

/* ---- The difference ---- */

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
	return w->o->format == FMT_PPROF ? diff_write_pprof(f, w->c, w->n, w->o, w->base, w->nw)
	       : w->o->format == FMT_TEXT
		   ? diff_write_text(f, w->c, w->n, w->o, w->base, w->nw, w->scale)
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
	if (diff_read_input(&base, o.base, &o) || diff_read_input(&nw, o.new_, &o)) {
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
	diff_input_free(&base);
	diff_input_free(&nw);
	return code;
}
