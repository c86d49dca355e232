/*
 * memprof-bpf list: the processes that carry memprof probes, which host
 * fires them (the preload, an OCaml program, a runtime built on the core),
 * whether each is sampling and at what rate, and how many tracers hold its
 * sample probe (the kernel's count in the USDT semaphore).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>
#include "cli.h"
#include "cmd.h"
#include "trace/control.h"
#include "output/profile.h"
#include "symbols/symbolize.h"

static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: memprof-bpf list\n"
		   "Lists the processes whose mappings carry memprof USDT probes, one per line:\n"
		   "  PID, COMM, HOST     preload (libmemprof-preload.so), ocaml (the OCaml host)\n"
		   "                      or runtime (a runtime built on libmemprof)\n"
		   "  SAMPLING            no, tracer (sampling for tracers) or in-process (a\n"
		   "                      profile of the program's own)\n"
		   "  RATE                the rate in force, per word (- when not sampling)\n"
		   "  TRACERS             tracers attached to its sample probe\n"
		   "  FILE                the file carrying the probes\n"
		   "Processes this user may not read are left out, and a note counts them (run\n"
		   "as root to see all).\n");
}

static int has_symbol(const struct elf_image *img, const char *name)
{
	for (size_t i = 0; i < img->n_syms; i++)
		if (!strcmp(img->syms[i].name, name))
			return 1;
	return 0;
}

static const char *host_of(const char *path, const struct elf_image *img)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "libmemprof-preload", 18))
		return "preload";
	if (has_symbol(img, "caml_program") || has_symbol(img, "caml_start_program"))
		return "ocaml";
	return "runtime";
}

struct found {
	const char *host;
	const char *path;
	uint64_t control_addr, semaphore;
};

/*
 * The first mapped file of pid with a memprof:sample probe.  1 if found,
 * 0 if not, -1 when this user may not read its mappings.
 */
static int scan(pid_t pid, struct symbolizer *sym, struct found *f)
{
	const struct proc_maps *m;
	struct proc_maps maps;
	char err[256];
	int found = 0, rc;

	memset(f, 0, sizeof(*f));
	rc = proc_maps_read(pid, &maps);
	if (rc)
		return rc == -EACCES || rc == -EPERM ? -1 : 0;
	if (!maps.n) {
		proc_maps_free(&maps);
		return 0;
	}
	symbolizer_set_maps(sym, &maps);
	m = symbolizer_maps(sym);
	for (size_t i = 0; i < m->n; i++) {
		const struct map_region *r = &m->regions[i];
		const struct elf_image *img;

		if (symbolizer_image(sym, r, &img, err, sizeof(err)) != ELF_IMAGE_OK)
			continue;
		if (img->control_addr && !f->control_addr)
			f->control_addr =
			    img->control_addr + elf_image_bias(img, r->start, r->offset);
		if (!found && img->probes & (1u << ELF_PROBE_SAMPLE)) {
			found = 1;
			f->host = host_of(r->path, img);
			f->path = r->path;
			if (img->sample_semaphore)
				f->semaphore = img->sample_semaphore +
					       elf_image_bias(img, r->start, r->offset);
		}
	}
	return found;
}

static int is_pid(const char *s)
{
	for (const char *c = s; *c; c++)
		if (!isdigit((unsigned char)*c))
			return 0;
	return *s != '\0';
}

int cmd_list(int argc, char **argv)
{
	struct symbolizer *sym;
	DIR *proc;
	struct dirent *e;
	int c, n = 0, denied = 0;

	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return EXIT_OK;
		}
		return cli_getopt_error(c, argv, long_opts);
	}
	if (optind < argc)
		return cli_die(EXIT_USAGE, "list takes no operand ('%s'; see --help)",
			       argv[optind]);
	proc = opendir("/proc");
	sym = symbolizer_new();
	if (!proc || !sym) {
		if (proc)
			closedir(proc);
		symbolizer_free(sym);
		return cli_die(EXIT_FAILED, "cannot read /proc");
	}
	printf("%-8s %-16s %-8s %-11s %-9s %-7s %s\n", "PID", "COMM", "HOST", "SAMPLING", "RATE",
	       "TRACERS", "FILE");
	while ((e = readdir(proc))) {
		struct memprof_probe_control ctl;
		unsigned short tracers = 0;
		char name[64], comm[64], rate[32] = "-";
		const char *sampling = "?";
		struct found f;
		pid_t pid;

		if (!is_pid(e->d_name))
			continue;
		pid = (pid_t)atoi(e->d_name);
		if (pid == getpid())
			continue;
		switch (scan(pid, sym, &f)) {
		case 1:
			break;
		case -1:
			denied++;
			continue;
		default:
			continue;
		}
		if (f.control_addr && !control_read(pid, f.control_addr, &ctl) &&
		    ctl.magic == MEMPROF_PROBE_CONTROL_MAGIC) {
			sampling = !ctl.active_rate			    ? "no"
				   : ctl.flags & MEMPROF_PROBE_F_IN_PROCESS ? "in-process"
									    : "tracer";
			if (ctl.active_rate)
				snprintf(rate, sizeof(rate), "%g", ctl.active_rate);
		}
		if (f.semaphore && semaphore_read(pid, f.semaphore, &tracers))
			tracers = 0;
		profile_process_name(pid, name, sizeof(name));
		snprintf(comm, sizeof(comm), "%.*s", (int)(strrchr(name, ' ') - name), name);
		printf("%-8d %-16s %-8s %-11s %-9s %-7u %s\n", (int)pid, comm, f.host, sampling,
		       rate, tracers, f.path);
		n++;
	}
	closedir(proc);
	symbolizer_free(sym);
	if (!n)
		fprintf(stderr, "memprof-bpf: no process%s carries memprof probes\n",
			denied ? " this user may inspect" : "");
	if (denied)
		fprintf(stderr,
			"memprof-bpf: note: %d process%s could not be inspected (permission "
			"denied%s)\n",
			denied, denied == 1 ? "" : "es",
			geteuid() ? ": run as root, or with CAP_SYS_PTRACE, to see them" : "");
	return fflush(stdout) ? cli_die(EXIT_FAILED, "cannot write the list") : EXIT_OK;
}
