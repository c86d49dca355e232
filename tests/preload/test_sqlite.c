/*
 * A real Debian program under the preload with memprof-bpf attached:
 * sqlite3 (malloc, realloc, free and malloc_usable_size through libsqlite3)
 * runs a generated workload and prints exactly what it prints unprofiled,
 * while the tracer collects samples inside libsqlite3.
 *
 * The workload's first command waits (in a .shell loop) until the test has
 * seen the tracer attach, so the whole workload runs traced.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SQLITE "/usr/bin/sqlite3"
#define LOADER PRELOAD_BUILD_DIR "/memprof-bpf"
#define WORKLOAD "tests/preload/data/sqlite-workload.sql"
#define WAIT_S 60

/* Write the workload with its handshake in front: READY, then wait for GO. */
static void write_script(const char *path, const char *ready, const char *go, int handshake)
{
	FILE *out = fopen(path, "w");
	char *body = read_file(WORKLOAD);

	cr_assert(out && body, "cannot write %s or read %s", path, WORKLOAD);
	if (handshake)
		fprintf(out, ".shell echo ready > %s; while [ ! -e %s ]; do sleep 0.01; done\n",
			ready, go);
	fputs(body, out);
	fclose(out);
	free(body);
}

static int wait_text(const char *path, const char *needle)
{
	const struct timespec pause = {0, 10000000};

	for (int i = 0; i < WAIT_S * 100; i++) {
		char *text = read_file(path);
		int found = text && strstr(text, needle);
		free(text);
		if (found)
			return 0;
		nanosleep(&pause, NULL);
	}
	return -1;
}

Test(sqlite, traced_sqlite3_output_unchanged_and_sampled)
{
	char dir[] = "/tmp/preload-sqlite-XXXXXX";
	char plain_sql[80], traced_sql[80], ready[80], go[80], out[80], err[80], lerr[80];
	char folded[80], pid[16];
	struct stat st;

	cr_assert(stat(SQLITE, &st) == 0, "%s is not installed", SQLITE);
	cr_assert(stat(LOADER, &st) == 0, "%s is not built", LOADER);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(plain_sql, sizeof(plain_sql), "%s/plain.sql", dir);
	snprintf(traced_sql, sizeof(traced_sql), "%s/traced.sql", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	write_script(plain_sql, ready, go, 0);
	write_script(traced_sql, ready, go, 1);

	/* Unprofiled reference. */
	const char *plain_argv[] = {SQLITE, "-init", plain_sql, ":memory:", ".quit", NULL};
	struct run_result ref;
	run_program(plain_argv, NULL, 0, &ref);
	cr_assert(run_ok(&ref));

	const char *argv[] = {SQLITE, "-init", traced_sql, ":memory:", ".quit", NULL};
	pid_t db = spawn_program(argv, NULL, 1, out, err);
	cr_assert_eq(wait_nonempty_file(ready, WAIT_S), 0, "sqlite3 never reached its handshake");
	snprintf(pid, sizeof(pid), "%d", (int)db);
	const char *largs[] = {LOADER, "attach", pid, "--rate", "0.0001", "-o", folded, "-v", NULL};
	pid_t loader = spawn_program(largs, NULL, 0, "/dev/null", lerr);
	cr_assert_eq(wait_text(lerr, "memprof-bpf: attached to"), 0, "the loader never attached");
	FILE *g = fopen(go, "w");
	cr_assert_not_null(g);
	fclose(g);

	int dstatus = wait_program(db);
	int lstatus = wait_program(loader);
	cr_assert(WIFEXITED(dstatus) && WEXITSTATUS(dstatus) == 0, "sqlite3 status %#x", dstatus);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == 0, "loader status %#x", lstatus);

	char *traced_out = read_file(out);
	cr_expect_str_eq(traced_out, ref.out);
	free(traced_out);

	/* Samples were taken, inside libsqlite3, and every id was consistent. */
	char *stacks = read_file(folded), *log = read_file(lerr);
	cr_assert_not_null(stacks);
	cr_expect_not_null(strstr(stacks, "libsqlite3"), "no libsqlite3 frame in:\n%.2000s",
			   stacks);
	cr_expect_not_null(strstr(log, "orphan_ids 0 "), "%s", log);
	cr_expect_not_null(strstr(log, "duplicate_ids 0 "), "%s", log);
	long long total = 0;
	for (char *line = strtok(stacks, "\n"); line; line = strtok(NULL, "\n")) {
		char *space = strrchr(line, ' ');
		if (space)
			total += atoll(space + 1);
	}
	/* The workload allocates hundreds of megabytes: far more than nothing. */
	cr_expect_gt(total, 10 * 1024 * 1024, "estimated %lld bytes", total);
	free(stacks);
	free(log);
	run_result_free(&ref);

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}
