/*
 * memprof-bpf: a statistical memory profiler for processes that carry the
 * memprof USDT probes.  main() only dispatches to the subcommands
 * (cmd_attach.c, cmd_top.c, cmd_list.c, cmd_diff.c); usage() lists them.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmd.h"

#ifndef MEMPROF_VERSION
#define MEMPROF_VERSION "0.1"
#endif

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *what;
} commands[] = {
    {"attach", cmd_attach, "attach PID [PID...]  profile running processes, write a profile"},
    {"top", cmd_top, "top PID              live view of the top allocation sites"},
    {"list", cmd_list, "list                 processes that carry memprof probes"},
    {"diff", cmd_diff, "diff BASE NEW        difference of two profiles (folded or pprof)"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: memprof-bpf COMMAND [ARGS]   (memprof-bpf COMMAND --help for its "
		   "options)\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  memprof-bpf %s\n", commands[i].what);
	fprintf(f, "Exit codes: 0 done, 1 bad usage, 2 target problem (no such process, no "
		   "memprof probes,\ncorrupt ELF), 3 not privileged or kernel without "
		   "BTF/uprobes, 4 BPF or output failure.\nSee memprof-bpf(1).\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd)
		return cli_die(EXIT_USAGE, "no command (attach, top, list, diff; see --help)");
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("memprof-bpf %s\n", MEMPROF_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	if (cmd[0] == '-')
		return cli_die(EXIT_USAGE, "unknown option '%s' before the command (see --help)",
			       cmd);
	return cli_die(EXIT_USAGE, "unknown command '%s' (attach, top, list, diff)", cmd);
}
