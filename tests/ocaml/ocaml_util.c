#include "ocaml_util.h"
#include "testlib.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"

void ocaml_tmpdir(char *out, size_t len)
{
	snprintf(out, len, "/tmp/memprof-ocaml-XXXXXX");
	cr_assert_not_null(mkdtemp(out), "mkdtemp");
}

pid_t ocaml_spawn(const char *const argv[], const char *out, const char *err)
{
	pid_t pid = test_spawn(argv, NULL, out, err);

	cr_assert_geq(pid, 0, "fork");
	return pid;
}

int ocaml_wait(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

pid_t ocaml_start(const char *dir, const char *out, const char *const argv[])
{
	char ready[512];
	pid_t pid = ocaml_spawn(argv, out, NULL);

	snprintf(ready, sizeof(ready), "%s/ready", dir);
	if (wait_nonempty_file(ready, TEST_EVENT_TIMEOUT_S))
		cr_assert_fail("%s did not start", argv[0]);
	return pid;
}

void ocaml_touch(const char *dir, const char *name)
{
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0, "cannot create %s", path);
	close(fd);
}

pid_t ocaml_loader_start(pid_t pid, const char *const args[], const char *dir, int *code)
{
	char spid[32], err[512], ready[512];
	const char *argv[32] = {OCAML_LOADER, "attach", spid, "--ready-file", ready};
	int n = 5;
	pid_t loader;

	snprintf(spid, sizeof(spid), "%d", (int)pid);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(ready, sizeof(ready), "%s/loader.ready", dir);
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	loader = ocaml_spawn(argv, NULL, err);
	switch (wait_loader_ready(loader, ready, TEST_EVENT_TIMEOUT_S, code)) {
	case 0:
		ocaml_touch(dir, "ready.go");
		return loader;
	case 1:
		return 0;
	default:
		cr_assert_fail("the loader did not attach within %.0f s", TEST_EVENT_TIMEOUT_S);
		return -1;
	}
}

static int attach(pid_t pid, const char *seconds, const char *rate, const char *dir,
		  const char *extra)
{
	char views[512];
	int code;

	snprintf(views, sizeof(views), "%s/views", dir);
	const char *args[] = {"-d", seconds, "--rate", rate, "--all-views", views, extra, NULL};
	pid_t loader = ocaml_loader_start(pid, args, dir, &code);

	return loader ? ocaml_wait(loader) : code;
}

int ocaml_attach(pid_t pid, const char *seconds, const char *rate, const char *dir)
{
	return attach(pid, seconds, rate, dir, NULL);
}

int ocaml_attach_verbose(pid_t pid, const char *seconds, const char *rate, const char *dir)
{
	return attach(pid, seconds, rate, dir, "-v");
}

/* Sum of the weights of the lines whose innermost frame is frame (NULL: all). */
static double folded_sum(const char *path, const char *frame)
{
	char *text = read_file(path), *save = NULL;
	double sum = 0;

	cr_assert_not_null(text, "cannot read %s", path);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *inner;

		if (!sp)
			continue;
		*sp = '\0';
		inner = strrchr(line, ';');
		inner = inner ? inner + 1 : line;
		if (!frame || !strcmp(inner, frame))
			sum += strtod(sp + 1, NULL);
	}
	free(text);
	return sum;
}

double folded_frame_sum(const char *path, const char *frame)
{
	return folded_sum(path, frame);
}

double folded_total(const char *path)
{
	return folded_sum(path, NULL);
}

int file_has(const char *path, const char *needle)
{
	char *text = read_file(path);
	int found = text && strstr(text, needle);

	free(text);
	return found;
}

double out_value(const char *path, const char *key)
{
	double v;

	return file_value(path, key, &v) ? -1 : v;
}

/* The sites program's sites (tests/ocaml/progs/sites.ml), as it prints them. */
static const char *const dune_sites[OCAML_N_SITES] = {"Work.make_point", "Work.make_record",
						      "Work.make_entry", "Sites.entry"};

double ocaml_expect_printed_shares(const char *dir, const char *out, double rate,
				   double counts[OCAML_N_SITES])
{
	double truth[OCAML_N_SITES], n = 0, all = 0, named = 0;
	char path[600], key[64];

	snprintf(path, sizeof(path), "%s/views/alloc.folded", dir);
	for (int i = 0; i < OCAML_N_SITES; i++) {
		double bytes = folded_frame_sum(path, dune_sites[i]);

		snprintf(key, sizeof(key), "site %s", dune_sites[i]);
		truth[i] = out_value(out, key);
		cr_assert_gt(truth[i], 0, "the program did not print %s", key);
		all += truth[i];
		named += bytes;
		counts[i] = bytes * rate / 8; /* bytes * rate / 8: samples */
		n += counts[i];
	}
	cr_assert_gt(n, 500, "too few samples (%.0f)", n);
	cr_expect_geq(named, 0.99 * folded_total(path),
		      "frames not named as OCaml functions (%.0f of %.0f)", named,
		      folded_total(path));
	for (int i = 0; i < OCAML_N_SITES; i++)
		cr_expect(within_binomial(counts[i], n, truth[i] / all),
			  "%s: %.0f samples of %.0f, expected share %.4f", dune_sites[i], counts[i],
			  n, truth[i] / all);
	return n;
}

void ocaml_check_sites_exe(const char *dir, const char *exe)
{
	char out[512], ready[512], alloc[600], log[600];

	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	const char *argv[] = {exe, "300000", ready, "5e6", NULL};
	pid_t pid = ocaml_start(dir, out, argv);

	cr_assert_eq(ocaml_attach_verbose(pid, "1", "1e-4", dir), 0, "the loader failed");
	cr_assert_eq(ocaml_wait(pid), 0, "the program %s failed", exe);
	snprintf(log, sizeof(log), "%s/loader.err", dir);
	cr_expect(!file_has(log, "had no memprof probes"), "the program was injected: no probes");
	snprintf(alloc, sizeof(alloc), "%s/views/alloc.folded", dir);
	double total = folded_total(alloc), named = 0;
	for (size_t i = 0; i < OCAML_N_SITES; i++) {
		double w = folded_frame_sum(alloc, dune_sites[i]);

		cr_expect_gt(w, 0, "no samples at %s", dune_sites[i]);
		named += w;
	}
	cr_expect_gt(total, 0, "no samples");
	cr_expect_geq(named, 0.95 * total, "the sites hold %.0f of %.0f", named, total);
}

void ocaml_run_logged(const char *cmd, const char *log, const char *what)
{
	int rc = system(cmd);

	if (rc != 0) {
		char *text = read_file(log);
		size_t n = text ? strlen(text) : 0;

		cr_assert_fail("%s failed (%d): %s", what, rc,
			       text ? text + (n > 3000 ? n - 3000 : 0) : "");
	}
}

void ocaml_expect_injected(const char *dir, const char *host_lib)
{
	char err[600];
	char *text;

	snprintf(err, sizeof(err), "%s/loader.err", dir);
	text = read_file(err);
	cr_assert_not_null(text, "no %s", err);
	cr_expect(strstr(text, "had no memprof probes: loaded ") && strstr(text, host_lib),
		  "the OCaml host %s was not injected: %s", host_lib, text);
	free(text);
}
