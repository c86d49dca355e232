/*
 * Lines and frames as OCaml reports them (tests/ocaml/progs/lines.ml):
 * three allocations on three lines of one function, a helper inlined into
 * its caller, two anonymous functions, an allocation in the standard
 * library.  The ground truth is the program's own Gc.Memprof at rate 1
 * (its callstacks read with Printexc, in a run of their own); the traced
 * run, attached with the real loader, must show each of those stacks, with
 * the same frames, files and lines, in folded --lines output, and each
 * site as "name (file:line)" in the text report.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"
#include "ocaml_util.h"
#include "testlib.h"

#define LINES_SRC "tests/ocaml/progs/lines.ml"
#define N_SITES 7
static const char *const sites[N_SITES] = {"pair",    "triple",	 "quad",  "helper",
					   "lambda1", "lambda2", "stdlib"};

/* The line of "@site NAME" in the program's source. */
static int site_line(const char *name)
{
	char *text = read_file(LINES_SRC), needle[64];
	int line = 1, found = 0;

	cr_assert_not_null(text, "cannot read %s", LINES_SRC);
	snprintf(needle, sizeof(needle), "@site %s *)", name);
	for (char *p = text; *p && !found; p++) {
		if (!strncmp(p, needle, strlen(needle)))
			found = line;
		if (*p == '\n')
			line++;
	}
	free(text);
	cr_assert_gt(found, 0, "no @site %s in %s", name, LINES_SRC);
	return found;
}

/* The standard library's directory of the compiler under test, resolved. */
static void stdlib_dir(char *out, size_t len)
{
	char buf[PATH_MAX] = "", cwd[PATH_MAX / 2];
#if OCAML_UNDER_TEST == 5
	/* The build records it as an absolute path, symbolic links kept. */
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)), "getcwd");
	snprintf(out, len, "%s/build/ocaml5/ocaml/lib/ocaml", cwd);
	cr_assert_eq(access(out, R_OK), 0, "no stdlib directory %s", out);
	(void)buf;
#else
	(void)cwd;
	FILE *f = popen("ocamlfind ocamlc -where", "r");

	cr_assert_not_null(f, "ocamlfind");
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	pclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	cr_assert_not_null(realpath(buf, out), "no stdlib directory %s", buf);
	(void)len;
#endif
}

/*
 * A frame of the truth ("Stdlib__List.map list.ml:92[ inlined]") as the
 * loader writes it in folded --lines: "Stdlib.List.map (DIR/list.ml:92)".
 */
static void loader_frame(const char *truth, const char *stdlib, char *out, size_t len)
{
	char name[256], file[256], unit[256];
	const char *sp = strchr(truth, ' '), *colon;
	size_t o = 0;

	cr_assert_not_null(sp, "truth frame %s", truth);
	snprintf(name, sizeof(name), "%.*s", (int)(sp - truth), truth);
	colon = strrchr(sp + 1, ':');
	cr_assert_not_null(colon, "truth frame %s", truth);
	snprintf(file, sizeof(file), "%.*s", (int)(colon - sp - 1), sp + 1);
	for (const char *p = name; *p && o + 1 < sizeof(unit); p++) {
		if (!strncmp(p, "__", 2) && strchr(p, '.') && p[2] >= 'A' && p[2] <= 'Z') {
			unit[o++] = '.';
			p++;
			continue;
		}
		unit[o++] = *p;
	}
	unit[o] = '\0';
	if (!strchr(unit, '.'))
		strcat(unit, ".entry");
	if (!strncmp(name, "Stdlib", 6))
		snprintf(out, len, "%s (%s/%s:%d)", unit, stdlib, file, atoi(colon + 1));
	else
		snprintf(out, len, "%s (%s:%d)", unit, file, atoi(colon + 1));
}

/*
 * Each truth stack that goes through Lines.round, innermost frame up to
 * that one, as the end of a folded stack ("outer;...;inner").
 */
static size_t truth_stacks(const char *out_path, const char *stdlib, char (*exp)[2048], size_t max)
{
	char *text = read_file(out_path), *save = NULL;
	size_t n = 0;

	cr_assert_not_null(text, "cannot read %s", out_path);
	for (char *l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save)) {
		char *frames[16], *fs = NULL, *stack;
		size_t k = 0, o = 0;
		int round = -1;

		if (strncmp(l, "stack ", 6) || !(stack = strchr(l + 6, ' ')))
			continue;
		for (char *f = strtok_r(stack + 1, "|", &fs); f && k < 16;
		     f = strtok_r(NULL, "|", &fs))
			frames[k++] = f;
		for (size_t i = 0; i < k && round < 0; i++)
			if (!strncmp(frames[i], "Lines.round ", 12))
				round = (int)i;
		if (round < 0)
			continue;
		exp[n][0] = '\0';
		for (int i = round; i >= 0; i--) {
			char fr[PATH_MAX + 600];

			loader_frame(frames[i], stdlib, fr, sizeof(fr));
			o += (size_t)snprintf(exp[n] + o, 2048 - o, "%s%s", i == round ? "" : ";",
					      fr);
		}
		n++;
	}
	free(text);
	return n;
}

/* Whether some stack of a folded file ends with tail (before its weight). */
static int folded_has_tail(const char *path, const char *tail)
{
	char *text = read_file(path), *save = NULL;
	size_t tl = strlen(tail);
	int found = 0;

	cr_assert_not_null(text, "cannot read %s", path);
	for (char *l = strtok_r(text, "\n", &save); l && !found; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' ');
		size_t n;

		if (!sp)
			continue;
		n = (size_t)(sp - l);
		found =
		    n >= tl && !memcmp(l + n - tl, tail, tl) && (n == tl || l[n - tl - 1] == ';');
	}
	free(text);
	return found;
}

static int sampling_on(const struct memprof_probe_control *c)
{
	return c->active_rate > 0;
}

Test(ocaml_lines, frames_and_lines_as_gc_memprof_reports_them, .timeout = 120)
{
	char dir[256], truth_out[512], out[512], ready[512], folded[600], report[600],
	    stdlib[PATH_MAX];
	static char expected[64][2048];
	int lines[N_SITES], code;
	size_t n_exp;

	stdlib_dir(stdlib, sizeof(stdlib));
	for (int i = 0; i < N_SITES; i++)
		lines[i] = site_line(sites[i]);

	/* The truth: Gc.Memprof at rate 1, in the program. */
	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(truth_out, sizeof(truth_out), "%s/truth", dir);
	const char *targv[] = {OCAML_PROG("lines"), "truth", "1", NULL};
	cr_assert_eq(ocaml_wait(ocaml_spawn(targv, truth_out, NULL)), 0, "the truth run failed");
	n_exp = truth_stacks(truth_out, stdlib, expected, 64);
	cr_assert_geq(n_exp, N_SITES, "%zu stacks through Lines.round in the truth", n_exp);

	/* Printexc says what the source says (a check of the truth itself). */
	for (int i = 0; i < N_SITES; i++) {
		char want[64];
		int seen = 0;

		snprintf(want, sizeof(want), "(lines.ml:%d)", lines[i]);
		for (size_t j = 0; j < n_exp && !seen; j++)
			seen = strstr(expected[j], want) != NULL;
		cr_expect(seen, "the truth has no frame at %s (@site %s)", want, sites[i]);
	}

	/* The traced run: the program exits before the loader writes. */
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	snprintf(report, sizeof(report), "%s/report.txt", dir);
	const char *argv[] = {OCAML_PROG("lines"), ready, "100000", NULL};
	pid_t pid = ocaml_start(dir, out, argv);
	const char *args[] = {"-d", "60",   "--rate", "1e-2", "--lines",
			      "-o", folded, "-o",     report, NULL};
	pid_t loader = ocaml_loader_start(pid, args, dir, &code);

	cr_assert_gt(loader, 0, "the loader exited (%d)", code);
	/* The host starts sampling at its next poll: the rounds counted start then. */
	cr_assert_eq(wait_target_control(pid, sampling_on), 0, "sampling never started");
	ocaml_touch(dir, "ready.stop");
	cr_assert_eq(ocaml_wait(pid), 0, "the OCaml program failed");
	cr_assert_eq(ocaml_wait(loader), 0, "the loader failed");

	/* Every truth stack, frame by frame, in the folded output. */
	for (size_t j = 0; j < n_exp; j++)
		cr_expect(folded_has_tail(folded, expected[j]), "%s lacks ...;%s", folded,
			  expected[j]);

	/* Each site in the text report, "name (file:line)". */
	static const char *const names[N_SITES] = {
	    "Lines.three",	   "Lines.three",	  "Lines.three",      "Lines.helper",
	    "Lines.lambdas.(fun)", "Lines.lambdas.(fun)", "Lines.stdlib_site"};
	for (int i = 0; i < N_SITES; i++) {
		char site[PATH_MAX + 64];

		if (!strcmp(sites[i], "stdlib")) /* the site is List.map's own line */
			snprintf(site, sizeof(site), "Stdlib.List.map (%s/list.ml:", stdlib);
		else
			snprintf(site, sizeof(site), "%s (lines.ml:%d)\n", names[i], lines[i]);
		cr_expect(file_has(report, site), "%s has no site %s", report, site);
	}
}
