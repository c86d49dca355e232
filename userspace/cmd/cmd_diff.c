/*
 * memprof-bpf diff BASE NEW: the difference of two profiles of one view.
 *
 * Inputs are folded stacks ("root;...;leaf WEIGHT" per line) or pprof
 * (gzipped or plain profile.proto, the view's "<view>_space" sample type).
 * Stacks are matched by their frame names, root first.  Every name, from
 * either kind of input, is written alike in every output: control
 * characters become spaces, ';' in a pprof name ':', and the spaces ending a
 * name are dropped (diff_input.c, clean_frame).
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
    {"skip-frames", required_argument, NULL, OPT_SKIP_FRAMES},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: memprof-bpf diff BASE NEW [-o FILE] [--format folded|text|pprof]\n"
	    "                        [--view alloc|live|promoted|short|peak] [--rate R] "
	    "[--normalize] [-n N]\n"
	    "                        [--skip-frames REGEX]\n"
	    "The difference NEW - BASE of two profiles (folded stacks or pprof, as attach\n"
	    "writes them), stacks matched by frame names.\n"
	    "  -o, --output FILE  write FILE (default stdout, also -); a known extension\n"
	    "             wins over --format (.pb.gz/.pprof pprof, .txt text, .folded)\n"
	    "  --format folded  flamegraph.pl's differential input, \"stack BASE NEW\" per line\n"
	    "             (flamegraph.pl draws NEW and colours by NEW - BASE: red grew, blue\n"
	    "             shrank); pprof: signed weights NEW - BASE (go tool pprof -top);\n"
	    "             text: the sites that grew and shrank most, with 95%% intervals,\n"
	    "             and which changes are within the noise of sampling\n"
	    "  --view V   the view of pprof inputs (default alloc; live reads inuse_space)\n"
	    "  --rate R   the rate folded inputs were sampled at (for the intervals; default:\n"
	    "             the greatest common divisor of each input's weights is one sample)\n"
	    "  --normalize  scale BASE to NEW's total first (runs of different lengths)\n"
	    "  -n, --rows N  sites listed per direction in text (default 20)\n"
	    "  --skip-frames REGEX  text: frames whose function name without its parameters\n"
	    "             matches REGEX whole (POSIX extended; repeatable) are not sites, as\n"
	    "             for attach\n"
	    "Frame names are written alike in every format: control characters become\n"
	    "spaces, ';' in a pprof name ':', spaces ending a name are dropped.\n"
	    "Limits, each input (past one: one line naming it, exit 1): %d MiB once\n"
	    "decompressed (for pprof, its stacks spelled out as folded text too), %d MiB\n"
	    "of memory to decode a pprof input, %d stacks (folded lines, pprof samples),\n"
	    "%d frames a stack and %d in all; weights from 0 to 2^62 bytes in all.\n",
	    DIFF_MAX_INPUT_MIB, DIFF_MAX_DECODE_MIB, DIFF_MAX_STACKS, DIFF_MAX_FRAMES,
	    DIFF_MAX_FRAMES_TOTAL);
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
				return cli_die(
				    EXIT_USAGE,
				    "unknown view '%s' (alloc, live, promoted, short, peak)",
				    optarg);
			o->view = v;
			break;
		case OPT_SKIP_FRAMES:
			if (cli_skip_frames(optarg))
				return EXIT_USAGE;
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
	/* As attach: a known extension wins over --format. */
	if (o->out && !output_is_stdout(o->out)) {
		enum output_format f = output_format_of_ext(o->out);

		if (f == FMT_SVG)
			return cli_die(EXIT_USAGE,
				       "diff writes folded, pprof or text, not SVG (%s): write "
				       "folded and give it to flamegraph.pl",
				       o->out);
		if (f == FMT_JSON)
			return cli_die(EXIT_USAGE,
				       "diff writes folded, pprof or text, not JSON (%s)", o->out);
		if (f != FMT_AUTO) {
			const char *paths[] = {o->out};

			output_note_formats(paths, 1, o->format);
			o->format = f;
		}
	}
	if (o->format == FMT_AUTO)
		o->format = FMT_FOLDED;
	return EXIT_OK;
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
		   : diff_write_folded(f, w->c, w->n);
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
	code = diff_read_input(&base, o.base, &o);
	if (!code)
		code = diff_read_input(&nw, o.new_, &o);
	if (code)
		goto out;
	/* From a byte up, the scale is finite and BASE scaled weighs at most NEW. */
	if (o.normalize && base.total >= 1)
		scale = nw.total / base.total;
	c = diff_join(&base, &nw, scale, &n);
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
