/*
 * OCaml versions beyond make test's 4.13 and 5.3 (docs/ocaml-host.md,
 * "Versions"), with MEMPROF_TEST_LONG=1 (make test-long; skipped
 * otherwise: each compiler takes minutes to build once).  OCaml 4.14.1 and
 * 5.1.0 are built from the npm registry (scripts/build-ocaml.sh, kept in
 * build/ocaml-VERSION), and the package for each by this tree's Makefile as
 * a packager builds it (make ocaml-package install-ocaml-package, with that
 * compiler first on PATH and Debian's ocamlfind configured for it: destdir
 * a folder of the test's).  Then:
 * - 4.14.1: the sites program linked with the package is attached through
 *   its probes, and the same program without it (bench/ocaml/no_probe's
 *   stand-in) is attached by injecting the 4.x OCaml host; both name the
 *   sites, whose shares are within 5.7 sd of the words the program printed.
 * - 5.1.0: the program linked with the package runs to the end with its
 *   own output, untraced; attach refuses it (exit 2) naming the version.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ocaml_util.h"
#include "testlib.h"

#define SITES_SRCS "tests/ocaml/progs/gate.ml tests/ocaml/progs/work.ml tests/ocaml/progs/sites.ml"

struct version {
	char dir[256];	/* the test's folder */
	char env[2048]; /* env -i ..., the compiler first on PATH */
};

/* The compiler, and the package built for it into v->dir/lib. */
static void version_setup(struct version *v, const char *version, int metas_in_compiler)
{
	char root[512], prefix[700], cmd[8192], log[600], conf[600];
	FILE *f;

	if (!getenv("MEMPROF_TEST_LONG"))
		cr_skip_test(
		    "OCaml %s: MEMPROF_TEST_LONG=1 (make test-long) builds it and runs this",
		    version);
	cr_assert_not_null(getcwd(root, sizeof(root)));
	ocaml_tmpdir(v->dir, sizeof(v->dir));
	snprintf(prefix, sizeof(prefix), "%s/build/ocaml-%s", root, version);
	snprintf(log, sizeof(log), "%s/build-ocaml.log", v->dir);
	snprintf(cmd, sizeof(cmd), "scripts/build-ocaml.sh %s %s > %s 2>&1", version, prefix, log);
	ocaml_run_logged(cmd, log, "building the compiler");

	/* 5.x installs its libraries' METAs; 4.14's are Debian's (directory "^"). */
	snprintf(conf, sizeof(conf), "%s/findlib.conf", v->dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "destdir=\"%s/lib\"\npath=\"%s/lib:%s%s\"\n", v->dir, v->dir,
		metas_in_compiler ? prefix : "/usr/lib/ocaml",
		metas_in_compiler ? "/lib/ocaml" : "");
	fclose(f);
	snprintf(v->env, sizeof(v->env),
		 "env -i PATH=%s/bin:/usr/bin:/bin HOME=%s OCAMLFIND_CONF=%s", prefix, v->dir,
		 conf);
	snprintf(log, sizeof(log), "%s/make.log", v->dir);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/lib && %s make MEMPROF_DEPS=none BUILD=%s/build OCAML_DESTDIR=%s/lib "
		 "ocaml-package install-ocaml-package > %s 2>&1",
		 v->dir, v->env, v->dir, v->dir, log);
	ocaml_run_logged(cmd, log, "make ocaml-package");
}

/* Compile srcs (with flags) into v->dir/name; its path in exe. */
static void version_compile(const struct version *v, const char *name, const char *flags,
			    const char *srcs, char *exe, size_t len)
{
	char cmd[8192], log[600], names[1024] = "";
	const char *p = srcs;

	/* The sources' file names, in order: compiled in a folder of their own. */
	while (*p) {
		const char *end = strchr(p, ' '), *slash;
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char one[256];

		snprintf(one, sizeof(one), "%.*s", (int)n, p);
		slash = strrchr(one, '/');
		strncat(names, slash ? slash + 1 : one, sizeof(names) - strlen(names) - 2);
		strcat(names, " ");
		p += n;
		while (*p == ' ')
			p++;
	}
	snprintf(exe, len, "%s/%s.d/%s", v->dir, name, name);
	snprintf(log, sizeof(log), "%s/%s.log", v->dir, name);
	snprintf(cmd, sizeof(cmd),
		 "mkdir %s/%s.d && cp %s %s/%s.d/ && cd %s/%s.d && %s ocamlfind ocamlopt -g %s %s "
		 "-o %s > %s 2>&1",
		 v->dir, name, srcs, v->dir, name, v->dir, name, v->env, flags, names, name, log);
	ocaml_run_logged(cmd, log, name);
}

Test(ocaml_versions, ocaml_4_14_linked_and_unmodified, .timeout = 1200)
{
	struct version v;
	char linked[700], plain[700], dir[256], out[512], ready[512];
	double counts[OCAML_N_SITES];

	version_setup(&v, "4.14.1", 0);
	version_compile(&v, "sites", "-package memprof_probe -linkpkg unix.cmxa", SITES_SRCS,
			linked, sizeof(linked));
	version_compile(&v, "sites-plain", "unix.cmxa",
			"bench/ocaml/no_probe/memprof_probe.ml " SITES_SRCS, plain, sizeof(plain));

	/* Linked: through its own probes. */
	ocaml_tmpdir(dir, sizeof(dir));
	ocaml_check_sites_exe(dir, linked);

	/* Unmodified: the 4.x OCaml host injected. */
	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	const char *argv[] = {plain, "1000000", ready, "5e6", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach(pid, "3", "1e-4", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0, "the 4.14 program failed");
	cr_expect_eq(out_value(out, "iterations"), 1000000, "the program's output is not whole");
	ocaml_expect_injected(dir, "libmemprof-ocaml4-attach.so");
	ocaml_expect_printed_shares(dir, out, 1e-4, counts);
}

Test(ocaml_versions, ocaml_5_1_links_runs_and_is_refused, .timeout = 1200)
{
	struct version v;
	char linked[700], dir[256], out[512], ready[512], err[600], *text;
	int code;

	version_setup(&v, "5.1.0", 1);
	version_compile(&v, "sites", "-package memprof_probe,unix -linkpkg", SITES_SRCS, linked,
			sizeof(linked));

	/* Untraced, it does its work and prints it. */
	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	const char *argv[] = {linked, "100000", ready, "5e6", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	ocaml_touch(dir, "ready.go");
	cr_assert_eq(ocaml_wait(pid), 0, "the 5.1 program failed");
	cr_expect_eq(out_value(out, "iterations"), 100000, "the program's output is not whole");

	/* Attached: refused with the version, and the program unharmed. */
	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	const char *argv2[] = {linked, "100000", ready, "5e6", NULL};
	pid = ocaml_start(dir, out, argv2);
	const char *args[] = {"-d", "1", NULL};
	pid_t loader = ocaml_loader_start(pid, args, dir, &code);

	cr_assert_eq(loader, 0, "the loader attached to an OCaml 5.1 program");
	cr_expect_eq(code, 2, "the loader exited with %d, not 2", code);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	text = read_file(err);
	cr_assert_not_null(text);
	cr_expect(strstr(text, "5.1.0") != NULL, "the refusal does not name the version: %s", text);
	free(text);
	ocaml_touch(dir, "ready.go");
	cr_assert_eq(ocaml_wait(pid), 0, "the 5.1 program failed after the refusal");
	cr_expect_eq(out_value(out, "iterations"), 100000, "the program's output is not whole");
}
