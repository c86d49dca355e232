/*
 * The idle flusher (runtime-probes/hosts/preload/flusher.c): a program
 * that allocates a burst smaller than a sample queue and then stops
 * allocating still shows the burst to the tracer, while it idles and at
 * detach.  Without the flusher its samples stay queued until a poll that
 * never comes, and the flush asked for at detach is never served.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

#define LOADER "build/memprof-bpf"
/* Fewer samples than a queue holds (MEMPROF_PROBE_SAMPLES_MAX, 256). */
#define BLOCKS 100
#define BLOCK_BYTES 1000

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot create %s", path);
	fclose(f);
}

/* The bytes of the folded lines whose innermost frame is site_burst. */
static long long burst_bytes(const char *folded)
{
	char *text = read_file(folded), *line, *save = NULL;
	long long sum = 0;

	cr_assert_not_null(text, "no %s", folded);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *w = strrchr(line, ' ');

		if (w && w - line >= 10 && !strncmp(w - 10, "site_burst", 10))
			sum += atoll(w + 1);
	}
	free(text);
	return sum;
}

Test(flusher, an_idle_program_shows_its_last_burst)
{
	char dir[] = "/tmp/memprof-flusher-XXXXXX", ready[256], path[300], lready[256], lerr[256],
	     folded[256], blocks[16], bytes[16];
	int lstatus, pstatus;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(lready, sizeof(lready), "%s/loader.ready", dir);
	snprintf(lerr, sizeof(lerr), "%s/loader.err", dir);
	snprintf(folded, sizeof(folded), "%s/alloc.folded", dir);
	snprintf(blocks, sizeof(blocks), "%d", BLOCKS);
	snprintf(bytes, sizeof(bytes), "%d", BLOCK_BYTES);
	const char *argv[] = {preload_prog("idle_burst"), ready, blocks, bytes, NULL};
	snprintf(path, sizeof(path), "%s/prog.out", dir);
	pid_t prog = spawn_program(argv, NULL, 1, path, "/dev/null");
	cr_assert_eq(wait_nonempty_file(ready, TEST_EVENT_TIMEOUT_S), 0,
		     "the program never started");
	char *pid = read_file(ready);
	cr_assert_not_null(pid);
	pid[strcspn(pid, "\n")] = 0;
	const char *largs[] = {LOADER,	       "attach", pid,  "--rate", "1",
			       "--ready-file", lready,	 "-o", folded,	 NULL};
	pid_t loader = spawn_program(largs, NULL, 0, "/dev/null", lerr);
	cr_assert_eq(wait_nonempty_file(lready, TEST_EVENT_TIMEOUT_S), 0,
		     "the loader never attached");
	snprintf(path, sizeof(path), "%s.go", ready);
	touch(path);
	snprintf(path, sizeof(path), "%s.done", ready);
	cr_assert_eq(wait_nonempty_file(path, TEST_EVENT_TIMEOUT_S), 0, "the burst never ended");
	/* The program idles now: its burst must reach the tracer all the same. */
	kill(loader, SIGINT);
	lstatus = wait_program(loader);
	snprintf(path, sizeof(path), "%s.stop", ready);
	touch(path);
	pstatus = wait_program(prog);
	cr_assert(WIFEXITED(lstatus) && WEXITSTATUS(lstatus) == 0, "loader status %#x: %s", lstatus,
		  read_file(lerr));
	cr_assert(WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0, "program status %#x", pstatus);
	/*
	 * Rate 1 per word is 1/8 per byte: the burst's samples are
	 * Binomial(BLOCKS * BLOCK_BYTES, 1/8), each standing for 8 bytes.
	 */
	long long got = burst_bytes(folded), want = (long long)BLOCKS * BLOCK_BYTES;

	cr_expect(fabs(got / 8.0 - want / 8.0) <= binomial_bound((double)want, 1.0 / 8),
		  "the idle program's last burst did not reach the tracer: %lld of %lld bytes", got,
		  want);
	free(pid);
}
