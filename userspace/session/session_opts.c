/* The options of attach and top (session.h): defaults, parsing, the PIDs. */
#include "session.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memprof_probe_abi.h"
#include "output/profile.h"

void attach_opts_init(struct attach_opts *o)
{
	*o = (struct attach_opts){.view = MEMPROF_VIEW_ALLOC,
				  .rate = MEMPROF_PROBE_DEFAULT_RATE,
				  .format = FMT_AUTO,
				  .rows = 20,
				  .sort = MEMPROF_VIEW_LIVE};
}

int attach_opts_set(struct attach_opts *o, int c, const char *arg)
{
	unsigned long n;
	char *end;
	int v;

	switch (c) {
	case 'd':
		return cli_parse_seconds(arg, &o->seconds);
	case 'o':
		if (o->n_out == OUTPUT_MAX_FILES)
			return cli_die(EXIT_USAGE, "at most %d -o files", OUTPUT_MAX_FILES), -1;
		o->out_paths[o->n_out++] = arg;
		return 0;
	case 'v':
		o->verbose = 1;
		return 0;
	case 'n':
		return cli_parse_count(arg, "row count", 10000, &o->rows);
	case OPT_FORMAT:
		v = output_format_parse(arg);
		if (v < 0)
			return cli_die(EXIT_USAGE,
				       "unknown format '%s' (folded, pprof, svg, text, json)", arg),
			       -1;
		o->format = v;
		return 0;
	case OPT_ALL_VIEWS:
		o->all_views_dir = arg;
		return 0;
	case OPT_VIEW:
	case OPT_SORT:
		v = memprof_view_parse(arg);
		if (c == OPT_SORT && v >= MEMPROF_N_KERNEL_VIEWS)
			return cli_die(EXIT_USAGE,
				       "unknown sort '%s' (alloc, live, promoted, short)", arg),
			       -1;
		if (v < 0)
			return cli_die(EXIT_USAGE,
				       "unknown view '%s' (alloc, live, promoted, short, peak)",
				       arg),
			       -1;
		if (c == OPT_VIEW)
			o->view = v;
		else
			o->sort = v;
		return 0;
	case OPT_RATE:
		errno = 0;
		o->rate = strtod(arg, &end);
		if (errno || *end || end == arg || !(o->rate > 0 && o->rate <= 1))
			return cli_die(EXIT_USAGE, "bad rate '%s' (a rate per word, in (0, 1])",
				       arg),
			       -1;
		return 0;
	case OPT_MAX_BLOCKS:
		if (cli_parse_count(arg, "block count", UINT32_MAX, &n))
			return -1;
		o->max_blocks = (uint32_t)n;
		return 0;
	case OPT_MAX_STACKS:
		if (cli_parse_count(arg, "stack count", 1u << 24, &n))
			return -1;
		if (n < 2)
			return cli_die(EXIT_USAGE, "bad stack count '%s' (2 to %u)", arg, 1u << 24),
			       -1;
		o->max_stacks = (uint32_t)n;
		return 0;
	case OPT_NO_DWARF:
		o->no_dwarf = 1;
		return 0;
	case OPT_NO_INJECT:
		o->no_inject = 1;
		return 0;
	case OPT_INJECT_MALLOC:
		o->inject_malloc = 1;
		return 0;
	case OPT_PRELOAD:
		o->preload = arg;
		return 0;
	case OPT_READY_FILE:
		o->ready_file = arg;
		return 0;
	case OPT_SKIP_FRAMES:
		return cli_skip_frames(arg);
	case OPT_LINES:
		o->names |= PROFILE_NAME_LINES;
		return 0;
	case OPT_SHORT_NAMES:
		o->names |= PROFILE_NAME_SHORT;
		return 0;
	case OPT_BY_DOMAIN:
		o->names |= PROFILE_NAME_BY_DOMAIN;
		return 0;
	case OPT_NATIVE:
		o->names |= PROFILE_NAME_NATIVE;
		return 0;
	case OPT_EVERY:
		if (cli_parse_seconds(arg, &o->every))
			return -1;
		if (o->every < 0.1)
			return cli_die(EXIT_USAGE, "bad interval '%s' (at least 0.1 seconds)", arg),
			       -1;
		return 0;
	case OPT_SNAPSHOT_DIR:
		o->snapshot_dir = arg;
		return 0;
	case OPT_LIFETIMES:
		o->lifetimes_path = arg;
		return 0;
	case OPT_TIMELINE:
		o->timeline_path = arg;
		return 0;
	default:
		return 1;
	}
}

int attach_opts_parse(struct attach_opts *o, int argc, char **argv, const char *short_opts,
		      const struct option *long_opts, void (*usage)(FILE *))
{
	int c;

	attach_opts_init(o);
	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		int rc;

		if (c == 'h') {
			usage(stdout);
			exit(EXIT_OK);
		}
		if (c == '?' || c == ':')
			return cli_getopt_error(c, argv, long_opts);
		rc = attach_opts_set(o, c, optarg);
		if (rc < 0)
			return EXIT_USAGE;
		if (rc > 0)
			return cli_getopt_error('?', argv, long_opts);
	}
	return EXIT_OK;
}

int attach_opts_pids(struct attach_opts *o, int argc, char *const argv[], int max)
{
	for (int i = optind; i < argc; i++) {
		pid_t pid;

		if (cli_parse_pid(argv[i], &pid))
			return -1;
		if (pid == getpid())
			return cli_die(EXIT_USAGE,
				       "pid %d is this memprof-bpf itself: it cannot trace itself",
				       (int)pid),
			       -1;
		for (int k = 0; k < o->n_pids; k++)
			if (o->pids[k] == pid)
				return cli_die(EXIT_USAGE, "pid %d given twice", (int)pid), -1;
		if (o->n_pids == max)
			return cli_die(EXIT_USAGE, "at most %d pids", max), -1;
		o->pids[o->n_pids++] = pid;
	}
	return 0;
}

int attach_opts_outputs(const struct attach_opts *o, int stdout_taken)
{
	const char *to_stdout = NULL;
	const char *const named[] = {"--lifetimes", "--timeline"};
	const char *const paths[] = {o->lifetimes_path, o->timeline_path};
	enum output_format f;
	int n = 0;

	for (int i = 0; i < o->n_out; i++)
		if (output_is_stdout(o->out_paths[i])) {
			n++;
			to_stdout = "-o -";
			f = output_format_for(o->out_paths[i], o->format);
			if (f == FMT_PPROF && isatty(STDOUT_FILENO))
				return cli_die(EXIT_USAGE,
					       "-o - --format pprof: standard output is a terminal "
					       "and pprof is gzipped binary (redirect it, or give "
					       "-o FILE)"),
				       -1;
		}
	for (int i = 0; i < 2; i++)
		if (paths[i] && output_is_stdout(paths[i])) {
			n++;
			to_stdout = named[i];
		}
	if (n && stdout_taken)
		return cli_die(EXIT_USAGE,
			       "%s: this command draws on standard output; give a file instead",
			       to_stdout),
		       -1;
	if (n > 1)
		return cli_die(EXIT_USAGE,
			       "standard output (-) can take one output, and %d were given", n),
		       -1;
	output_note_formats(o->out_paths, o->n_out, o->format);
	return 0;
}
