/*
 * Native OCaml programs nobody here wrote, attached as a user would: Debian's
 * own OCaml compiler (/usr/bin/ocamlopt.opt, OCaml 4.13, never linked with
 * memprof_probe) compiling a generated module of GEN_FUNCTIONS functions.
 * The loader injects the OCaml host while it compiles and ends when it
 * exits; the compiler finishes with the same object file as a compile with
 * no tracer, and the text report's leading sites are the compiler's own
 * functions with their lines (typing/…, lambda/…), not the runtime's C.
 * Only on 4.13: Debian ships no OCaml 5 program.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocaml_util.h"
#include "testlib.h"

#define OCAMLOPT "/usr/bin/ocamlopt.opt"
/* About 3 s of compiling here. */
#define GEN_FUNCTIONS 2500
/* The sites checked: the report's first ones. */
#define TOP_SITES 5
/* CPU time the compiler has used before the attach, in clock ticks: it is
 * past its start-up and compiling. */
#define STARTED_TICKS 10

static void write_module(const char *path)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	for (int i = 0; i < GEN_FUNCTIONS; i++)
		fprintf(f,
			"let f%d x = let l = List.init (x mod 7 + %d) (fun j -> (j, x + %d)) in "
			"List.fold_left (fun a (b, c) -> a + b * c + %d) 0 l\n",
			i, i % 13, i, i);
	fprintf(f, "let () = print_int (f0 1 + f%d 2)\n", GEN_FUNCTIONS - 1);
	cr_assert_eq(fclose(f), 0);
}

/* CPU ticks pid has used (user + system), or -1 once it is gone. */
static long cpu_ticks(pid_t pid)
{
	char path[64], *text, *p;
	unsigned long ut, st;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	text = read_file(path);
	if (!text)
		return -1;
	p = strrchr(text, ')');
	/* After "pid (comm)": state and 10 fields, then utime and stime. */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		ut = st = 0;
	free(text);
	return (long)(ut + st);
}

static int same_file(const char *a, const char *b)
{
	char *x, *y;
	struct stat sa, sb;
	int same;

	if (stat(a, &sa) || stat(b, &sb) || sa.st_size != sb.st_size)
		return 0;
	x = read_file(a);
	y = read_file(b);
	same = x && y && !memcmp(x, y, (size_t)sa.st_size);
	free(x);
	free(y);
	return same;
}

Test(debian_programs, the_ocaml_compiler_compiling, .timeout = 300)
{
	char dir[256], src[300], report[300], err[300], pidbuf[16];
	char obj_clean[300], obj_traced[300], line[1024];
	struct timespec pause = {0, 5 * 1000 * 1000};
	int sites = 0, code;
	long ticks;
	FILE *f;

	if (access(OCAMLOPT, X_OK))
		cr_skip_test("no %s", OCAMLOPT);
	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(src, sizeof(src), "%s/gen.ml", dir);
	snprintf(obj_traced, sizeof(obj_traced), "%s/gen.o", dir);
	snprintf(obj_clean, sizeof(obj_clean), "%s/gen.o.clean", dir);
	write_module(src);
	/* The same path both times: the object file names its source. */
	const char *clean_argv[] = {OCAMLOPT, "-c", src, NULL};
	cr_assert_eq(ocaml_wait(ocaml_spawn(clean_argv, NULL, NULL)), 0,
		     "the clean compile failed");
	cr_assert_eq(rename(obj_traced, obj_clean), 0);

	const char *argv[] = {OCAMLOPT, "-c", src, NULL};
	pid_t comp = ocaml_spawn(argv, NULL, NULL);

	cr_assert_gt(comp, 0);
	while ((ticks = cpu_ticks(comp)) >= 0 && ticks < STARTED_TICKS)
		nanosleep(&pause, NULL);
	cr_assert_geq(ticks, STARTED_TICKS, "the compiler ended before it was attached");
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)comp);
	snprintf(report, sizeof(report), "%s/report.txt", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	const char *largv[] = {OCAML_LOADER, "attach", pidbuf, "-d",   "600",
			       "--rate",     "1e-4",   "-o",   report, NULL};
	pid_t loader = ocaml_spawn(largv, NULL, err);

	cr_assert_eq(ocaml_wait(comp), 0, "the compiler failed while attached");
	code = ocaml_wait(loader);
	cr_assert_eq(code, 0, "the loader ended with %d: %s", code, read_file(err));
	ocaml_expect_injected(dir, "libmemprof-ocaml4-attach.so");
	cr_expect(same_file(obj_clean, obj_traced), "the compiler's object file changed");

	/* The alloc table's first sites: "  share  bytes [..] objects [..] samples  site". */
	f = fopen(report, "r");
	cr_assert_not_null(f, "no report");
	while (fgets(line, sizeof(line), f) && !strstr(line, "-- by site"))
		;
	cr_assert(fgets(line, sizeof(line), f), "no site table"); /* its header */
	while (sites < TOP_SITES && fgets(line, sizeof(line), f) && strchr(line, '%')) {
		char *site = strrchr(line, '(');

		cr_expect(site && strstr(site, ".ml:"), "site %d has no OCaml line: %s", sites + 1,
			  line);
		cr_expect(!strstr(line, "caml_"), "site %d is the runtime's: %s", sites + 1, line);
		sites++;
	}
	fclose(f);
	cr_expect_eq(sites, TOP_SITES, "the report has %d sites", sites);
}
