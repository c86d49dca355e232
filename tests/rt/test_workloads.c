/*
 * The bundled workloads as programs: they print their truth, stop cleanly
 * on SIGTERM, write the ready file, and reject bad options with one line on
 * stderr and a non-zero exit.  Run from the repository root (make test).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>

#define READY_POLL_US 10000
#define READY_POLLS 3000 /* a deadlock guard, not a timing assumption */

struct run {
	int status;
	char out[4096];
	char err[1024];
};

/* Run a shell command line, capturing its stdout and stderr. */
static void run(const char *cmd, struct run *r)
{
	char line[512];
	FILE *p;
	size_t n;

	snprintf(line, sizeof(line), "%s 2>/tmp/rt-workload-test.err.%d", cmd, (int)getpid());
	p = popen(line, "r");
	cr_assert_not_null(p);
	n = fread(r->out, 1, sizeof(r->out) - 1, p);
	r->out[n] = '\0';
	r->status = pclose(p);
	snprintf(line, sizeof(line), "/tmp/rt-workload-test.err.%d", (int)getpid());
	p = fopen(line, "r");
	cr_assert_not_null(p);
	n = fread(r->err, 1, sizeof(r->err) - 1, p);
	r->err[n] = '\0';
	fclose(p);
	unlink(line);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(rt_workloads, sites_prints_exact_truth)
{
	struct run r;
	unsigned long long words, live;
	char name[64];
	const char *line;
	int sites = 0;

	run("./build/workload-sites --iterations 4096", &r);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.out, "rounds 4096\n"));
	/* 4096 rounds: the counts follow from the header comment exactly. */
	cr_assert(strstr(r.out, "site site_short_lived words 327680 live_words 0\n"));
	cr_assert(strstr(r.out, "site site_medium_lived words 73728 live_words 73728\n"));
	cr_assert(strstr(r.out, "site site_long_lived words 17408 live_words 17408\n"));
	cr_assert(strstr(r.out, "site site_major_blocks words 128128 live_words 16016\n"));
	cr_assert(strstr(r.out, "site site_custom words 133120 live_words 16640\n"));
	for (line = r.out; line; line = strchr(line, '\n')) {
		line += *line == '\n';
		if (sscanf(line, "site %63s words %llu live_words %llu", name, &words, &live) == 3)
			sites++;
	}
	cr_assert_eq(sites, 5);
}

Test(rt_workloads, sites_stops_on_sigterm_after_ready_file)
{
	char ready[64], pidbuf[32] = "";
	struct stat st;
	FILE *f;
	pid_t pid;
	int status, polls = 0;

	snprintf(ready, sizeof(ready), "/tmp/rt-workload-ready.%d", (int)getpid());
	unlink(ready);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		freopen("/dev/null", "w", stdout);
		execl("./build/workload-sites", "workload-sites", "--ready-file", ready,
		      (char *)NULL);
		_exit(127);
	}
	while (stat(ready, &st) != 0 && polls++ < READY_POLLS)
		usleep(READY_POLL_US);
	cr_assert_lt(polls, READY_POLLS, "no ready file");
	f = fopen(ready, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(pidbuf, sizeof(pidbuf), f));
	fclose(f);
	unlink(ready);
	cr_assert_eq(atoi(pidbuf), pid);
	kill(pid, SIGTERM);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
}

Test(rt_workloads, seed_kinds_and_variants)
{
	struct run r;

	run("./build/workload-seed --kind long --iterations 1500000 --rate 0.001 --tracked 1", &r);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.out, "kind long tracked 1"));
	run("./build/workload-seed --kind short --iterations 100000", &r);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	run("./build/workload-seed --iterations 100000 --rate 0.01 --callstack 64 --depth 30", &r);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(!strstr(r.out, "samples 0\n"), "no sample: %s", r.out);
	run("./build/workload-seed-nohook --kind long --iterations 1500000", &r);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.out, "major_gcs"));
}

/*
 * workload-seed --fake-tracer R samples for a tracer with none attached:
 * every sample it takes is handed to the (bare) probe sites, and their
 * count is the Poisson count of the words allocated, less at most the
 * first minor heap (the core sees the raised semaphores at its first safe
 * point).  Table 2 times the in-process part of a traced sample with it.
 */
#define FAKE_RATE 0.01
#define FAKE_RECORDS 1000000
#define FAKE_WORDS (FAKE_RECORDS * 4.0) /* 3 fields and a header */
#define FAKE_FIRST_HEAP_WORDS (256.0 * 1024)
#define SIGMAS 5.7

Test(rt_workloads, seed_fake_tracer_hands_every_sample_to_the_sites)
{
	unsigned long long samples = 0, tracer = 0;
	const char *line;
	struct run r;

	run("./build/workload-seed --kind short --tracked 0 --rate 0 --iterations 1000000 "
	    "--fake-tracer 0.01",
	    &r);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	line = strstr(r.out, " samples ");
	cr_assert(line && sscanf(line, " samples %llu", &samples) == 1, "%s", r.out);
	line = strstr(r.out, "tracer_samples ");
	cr_assert(line && sscanf(line, "tracer_samples %llu", &tracer) == 1, "%s", r.out);
	cr_assert_eq(tracer, samples, "handed %llu of %llu samples", tracer, samples);
	double hi = FAKE_RATE * FAKE_WORDS, lo = FAKE_RATE * (FAKE_WORDS - FAKE_FIRST_HEAP_WORDS);
	cr_assert((double)tracer >= lo - SIGMAS * sqrt(lo) &&
		      (double)tracer <= hi + SIGMAS * sqrt(hi),
		  "%llu samples for %.0f words at %g", tracer, FAKE_WORDS, FAKE_RATE);
}

Test(rt_workloads, bad_options_one_line)
{
	static const char *const cmds[] = {
	    "./build/workload-sites --rate 2",
	    "./build/workload-sites --iterations x",
	    "./build/workload-sites --seconds",
	    "./build/workload-sites --nope 1",
	    "./build/workload-seed --kind medium",
	    "./build/workload-seed --tracked 2",
	    "./build/workload-seed-nohook --rate 0.1",
	    "./build/workload-seed --callstack 5000",
	    "./build/workload-seed-nohook --callstack 4",
	    "./build/workload-seed --depth -1",
	    "./build/workload-seed --rate 0.1 --fake-tracer 0.1",
	    "./build/workload-seed-nohook --fake-tracer 0.1",
	};
	struct run r;

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		run(cmds[i], &r);
		cr_assert_neq(r.status, 0, "%s", cmds[i]);
		cr_assert_eq(count_lines(r.err), 1, "%s printed: %s", cmds[i], r.err);
		cr_assert_str_empty(r.out, "%s", cmds[i]);
	}
}
