/*
 * OCaml programs never linked with memprof_probe (userspace/trace/
 * ocaml_runtime.c): the loader recognises their runtime and version from
 * the executable, and injects the OCaml host of a native runtime it
 * supports, or refuses with one line and exit 2 rather than load the
 * malloc host (which sees only the runtime's heap chunks), unless
 * --inject-malloc; the program runs on unharmed.  Native 4.13 (the bench's
 * sites program without the adapter: the OCaml host), bytecode, and
 * stand-ins for native 5.1 (no working Gc.Memprof) and 4.12 (never
 * tested).  And a program
 * linked with the package that never calls Memprof_probe.install (): a
 * note says so.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocaml_util.h"
#include "trace/ocaml_runtime.h"

#define PLAIN_NATIVE "build/bench/ocaml-sites-plain"
#define PLAIN_BYTE OCAML_PROG("sites-plain.byte")
#define FAKE_5_1 OCAML_PROG("fake-ocaml-5.1.1")
#define FAKE_4_12 OCAML_PROG("fake-ocaml-4.12.0")
#define OCAMLRUN "/usr/bin/ocamlrun"
/* The version of Debian's compiler, which builds tests/ocaml/progs. */
#define DEBIAN_OCAML "4.13.1"

static void expect_runtime(const char *path, enum ocaml_kind kind, const char *version)
{
	struct ocaml_runtime rt;

	cr_assert_eq(ocaml_runtime_of_file(path, &rt), 0, "cannot read %s", path);
	cr_expect_eq(rt.kind, kind, "%s: kind %d", path, rt.kind);
	cr_expect_str_eq(rt.version, version, "%s", path);
}

Test(ocaml_unmodified, runtimes_are_recognised)
{
	expect_runtime(PLAIN_NATIVE, OCAML_NATIVE, DEBIAN_OCAML);
	expect_runtime(OCAML_PROG("sites"), OCAML_NATIVE, DEBIAN_OCAML);
	expect_runtime(FAKE_5_1, OCAML_NATIVE, "5.1.1");
	expect_runtime(FAKE_4_12, OCAML_NATIVE, "4.12.0");
	expect_runtime(OCAMLRUN, OCAML_BYTECODE, "");
	/* A bytecode file is a script of ocamlrun, not ELF; a C program. */
	expect_runtime(PLAIN_BYTE, OCAML_NONE, "");
	expect_runtime("/bin/sh", OCAML_NONE, "");
}

/*
 * Start bin with args ("@READY": the file it writes its pid into, then
 * waits for READY.go), run the loader on it with extra args, and expect
 * its exit code and a phrase of its stderr (one line when it fails); then
 * let the program finish: exit 0.
 */
static void attach_expect(const char *bin, const char *const args[], const char *const extra[],
			  int code, const char *needle)
{
	char dir[256], err[512], out[512], ready[512], pid[16];
	const char *argv[8] = {bin};
	const char *largs[16] = {OCAML_LOADER, "attach", pid, "-d", "0.5", "-o", "/dev/null"};
	int n = 7, got;
	pid_t prog, loader;
	char *text;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(out, sizeof(out), "%s/prog.out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	for (int i = 0; args[i] && i < 6; i++)
		argv[i + 1] = strcmp(args[i], "@READY") ? args[i] : ready;
	prog = ocaml_start(dir, out, argv);
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	for (int i = 0; extra && extra[i] && n < 15; i++)
		largs[n++] = extra[i];
	largs[n] = NULL;
	loader = ocaml_spawn(largs, NULL, err);
	got = ocaml_wait(loader);
	text = read_file(err);
	cr_assert_not_null(text);
	cr_expect_eq(got, code, "exit %d: %s", got, text);
	cr_expect(strstr(text, needle), "no \"%s\" in: %s", needle, text);
	if (code) {
		const char *nl = strchr(text, '\n');

		cr_expect(nl && !nl[1], "not one line: %s", text);
	}
	free(text);
	ocaml_touch(dir, "ready.go");
	got = ocaml_wait(prog);
	cr_expect_eq(got, 0, "the program ended with %d", got);
}

static const char *const sites_args[] = {"20000", "@READY", NULL};
static const char *const fake_args[] = {"@READY", NULL};

/* The OCaml host is injected (test_attach_unmodified.c checks its profile). */
Test(ocaml_unmodified, a_native_program_gets_the_ocaml_host_and_runs_on)
{
	attach_expect(PLAIN_NATIVE, sites_args, NULL, 0, "/libmemprof-ocaml4-attach.so into it");
}

Test(ocaml_unmodified, inject_malloc_loads_the_malloc_host)
{
	const char *const extra[] = {"--inject-malloc", NULL};

	attach_expect(PLAIN_NATIVE, sites_args, extra, 0, "had no memprof probes: loaded ");
}

Test(ocaml_unmodified, no_inject_still_names_the_runtime)
{
	const char *const extra[] = {"--no-inject", NULL};

	attach_expect(PLAIN_NATIVE, sites_args, extra, 2,
		      "; --no-inject: not loading the OCaml host");
}

Test(ocaml_unmodified, bytecode_is_refused)
{
	attach_expect(PLAIN_BYTE, sites_args, NULL, 2, "runs OCaml bytecode");
}

Test(ocaml_unmodified, ocaml_5_1_has_no_gc_memprof)
{
	attach_expect(FAKE_5_1, fake_args, NULL, 2,
		      "is a native OCaml 5.1.1 program: OCaml 5.0 to 5.2 have no working "
		      "Gc.Memprof");
}

Test(ocaml_unmodified, an_untested_version_is_refused)
{
	attach_expect(FAKE_4_12, fake_args, NULL, 2,
		      "4.12.0, a version memprof-bpf was never tested");
}

Test(ocaml_unmodified, a_program_without_install_gets_a_note)
{
	char dir[256], err[512], out[512], ready[512], pid[16];
	const char *argv[] = {OCAML_PROG("no_install"), ready, NULL};
	const char *largs[] = {OCAML_LOADER, "attach", pid, "-d", "1", "-o", "/dev/null", NULL};
	pid_t prog, loader;
	char *text;
	int got;

	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(out, sizeof(out), "%s/prog.out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	prog = ocaml_start(dir, out, argv);
	snprintf(pid, sizeof(pid), "%d", (int)prog);
	ocaml_touch(dir, "ready.go"); /* it allocates from now on */
	loader = ocaml_spawn(largs, NULL, err);
	got = ocaml_wait(loader);
	ocaml_touch(dir, "ready.stop");
	cr_expect_eq(ocaml_wait(prog), 0, "the program failed");
	text = read_file(err);
	cr_assert_not_null(text);
	cr_expect_eq(got, 0, "exit %d: %s", got, text);
	cr_expect(strstr(text, "has not called Memprof_probe.install ()"), "%s", text);
	free(text);
}
