/*
 * The loader's exit codes, one rule for every command (also in its --help and
 * userspace/README.md).  The tests include this header.
 */
#ifndef MEMPROF_EXIT_CODES_H
#define MEMPROF_EXIT_CODES_H

enum exit_code {
	EXIT_OK = 0,
	EXIT_USAGE = 1,	 /* bad command line */
	EXIT_TARGET = 2, /* no such pid, no memprof probes, corrupt ELF, bad control block */
	EXIT_DENIED = 3, /* not privileged, kernel without BTF or uprobes */
	EXIT_FAILED = 4, /* BPF load/attach failure, output error */
};

#endif
