/*
 * Debug information the loader finds away from the binary: MiniDebugInfo
 * (.gnu_debugdata) and a debuginfod server (Debian's debuginfod, serving
 * the debug file of a stripped program on 127.0.0.1), and a server that
 * never answers does not hold up the output beyond DSYM_DEBUGINFOD_BUDGET_S.
 * The stripped programs are copies of known_sites (userspace/build.mk); the
 * same stripped program without debuginfod is the control: no site names.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbols/dwarf_symbolize.h"
#include "output_util.h"

#define RATE "0.01"
#define SOURCE "tests/output/progs/known_sites.c"
#define STRIPPED "known_sites-stripped"
#define DEBUG_FILE PROGS_DIR "/debuginfod/known_sites.debug"

static const char *const sites[] = {"site_kept_small", "site_kept_large", "site_temporary"};
#define N_SITES 3

/* Run prog with the loader writing dir/NAME.folded and dir/NAME.pb.gz. */
static char *profile_folded(const char *prog, const char *dir, const char *name)
{
	char folded[256], pb[256];

	snprintf(folded, sizeof(folded), "%s/%s.folded", dir, name);
	snprintf(pb, sizeof(pb), "%s/%s.pb.gz", dir, name);
	const char *args[] = {"-v", "-o", folded, "-o", pb, NULL};
	cr_assert_eq(out_profile(prog, dir, RATE, args), 0, "the profiled run of %s failed", prog);
	return out_file(folded);
}

static void clear_debuginfod_env(void)
{
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_TIMEOUT");
	unsetenv("DEBUGINFOD_MAXTIME");
}

/* A free TCP port on 127.0.0.1 and, if keep, the socket listening on it. */
static int local_port(int keep, int *fd_out)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;

	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	if (keep) {
		cr_assert_eq(listen(fd, 64), 0);
		*fd_out = fd;
	} else {
		close(fd);
	}
	return port;
}

/* The control: a stripped binary names none of its own functions. */
static void expect_unnamed(const char *folded)
{
	for (int s = 0; s < N_SITES; s++)
		cr_expect(!strstr(folded, sites[s]), "%s named without debug information:\n%s",
			  sites[s], folded);
	cr_expect(strstr(folded, STRIPPED "+0x"), "no unnamed frame of the program:\n%s", folded);
}

Test(output_debuginfo, minidebuginfo_names_the_functions, .timeout = 120)
{
	char dir[128], cmd[512], *sections, *folded;

	clear_debuginfod_env();
	out_tmpdir(dir, sizeof(dir));
	/* The test program is what it should be: no .symtab, a .gnu_debugdata. */
	snprintf(cmd, sizeof(cmd), "readelf -SW %s/known_sites-minidebug", PROGS_DIR);
	sections = out_command(cmd);
	cr_assert(sections && strstr(sections, " .gnu_debugdata ") &&
		      !strstr(sections, " .symtab ") && !strstr(sections, " .debug_info "),
		  "known_sites-minidebug is not a stripped binary with MiniDebugInfo:\n%s",
		  sections ? sections : "");
	free(sections);

	folded = profile_folded("known_sites-minidebug", dir, "mini");
	cr_assert(folded && *folded);
	for (int s = 0; s < N_SITES; s++)
		cr_expect(strstr(folded, sites[s]), "no %s from MiniDebugInfo:\n%s", sites[s],
			  folded);
	cr_expect(strstr(folded, ";run_requests;") && strstr(folded, ";run_batch;"),
		  "callers not named:\n%s", folded);
	free(folded);

	folded = profile_folded(STRIPPED, dir, "control");
	cr_assert(folded && *folded);
	expect_unnamed(folded);
	free(folded);
}

static pid_t start_debuginfod(const char *dir, int port)
{
	char srv[256], db[256], portarg[16], cmd[1024], log[256];
	pid_t pid;

	snprintf(srv, sizeof(srv), "%s/srv", dir);
	snprintf(db, sizeof(db), "%s/debuginfod.sqlite", dir);
	snprintf(log, sizeof(log), "%s/debuginfod.log", dir);
	snprintf(portarg, sizeof(portarg), "%d", port);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s' '%s/'", srv, DEBUG_FILE, srv);
	cr_assert_eq(system(cmd), 0, "cannot copy %s", DEBUG_FILE);
	cr_assert_eq(system("command -v debuginfod >/dev/null && command -v debuginfod-find "
			    ">/dev/null"),
		     0, "debuginfod is not installed (Debian package debuginfod)");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		FILE *l = freopen(log, "w", stderr);

		(void)l;
		/* -F: index the ELF/DWARF files under srv; no rescans. */
		execlp("debuginfod", "debuginfod", "-F", srv, "-d", db, "-p", portarg, "-t", "0",
		       "-g", "0", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

Test(output_debuginfod, a_local_server_gives_names_and_lines, .timeout = 180)
{
	char dir[128], url[64], cache[256], probe[256], cmd[768], *folded, *lines;
	int port = local_port(0, NULL), ok = 0;
	pid_t server;

	clear_debuginfod_env();
	out_tmpdir(dir, sizeof(dir));
	server = start_debuginfod(dir, port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	snprintf(cache, sizeof(cache), "%s/client-cache", dir);
	snprintf(probe, sizeof(probe), "%s/probe-cache", dir);
	/*
	 * Ready once it serves the file: asked through a cache of its own,
	 * emptied before each try (the client caches a miss), so the
	 * loader's cache stays empty.
	 */
	snprintf(cmd, sizeof(cmd),
		 "rm -rf '%s' && DEBUGINFOD_URLS=%s DEBUGINFOD_CACHE_PATH='%s' debuginfod-find "
		 "debuginfo %s/" STRIPPED " >/dev/null 2>&1",
		 probe, url, probe, PROGS_DIR);
	for (int i = 0; i < 120 && !ok; i++) {
		const struct timespec pause = {0, 250000000};

		ok = system(cmd) == 0;
		if (!ok)
			nanosleep(&pause, NULL);
	}
	if (!ok) {
		char log[256];

		stop(server);
		snprintf(log, sizeof(log), "%s/debuginfod.log", dir);
		cr_assert_fail("debuginfod on port %d did not serve %s within 30 s:\n%s", port,
			       DEBUG_FILE, out_file(log));
	}

	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	folded = profile_folded(STRIPPED, dir, "served");
	clear_debuginfod_env();
	stop(server);
	cr_assert(folded && *folded);
	for (int s = 0; s < N_SITES; s++)
		cr_expect(strstr(folded, sites[s]), "no %s from debuginfod:\n%s", sites[s], folded);
	free(folded);

	/* Lines: go tool pprof -lines names each site's allocation line. */
	snprintf(cmd, sizeof(cmd),
		 "HOME=/tmp go tool pprof -sample_index=alloc_space -lines -top -nodecount=100 "
		 "'%s/served.pb.gz' 2>&1",
		 dir);
	lines = out_command(cmd);
	cr_assert(lines);
	out_expect_site_lines(lines, SOURCE, sites, N_SITES);
	free(lines);

	/* The control: the same program, no server. */
	folded = profile_folded(STRIPPED, dir, "control");
	cr_assert(folded && *folded);
	expect_unnamed(folded);
	free(folded);
}

/*
 * A server that accepts connections and never answers, with the client's
 * own timeout set far beyond the budget (the loader keeps a user's
 * DEBUGINFOD_TIMEOUT): only the loader's budget bounds the wait.
 */
Test(output_debuginfod, a_silent_server_does_not_hold_up_the_output, .timeout = 180)
{
	char dir[128], url[64], cache[256], err[256], *folded, *log, *line;
	int fd, port = local_port(1, &fd);
	double ms = -1;

	clear_debuginfod_env();
	out_tmpdir(dir, sizeof(dir));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	snprintf(cache, sizeof(cache), "%s/client-cache", dir);
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	setenv("DEBUGINFOD_TIMEOUT", "600", 1);
	folded = profile_folded(STRIPPED, dir, "silent");
	clear_debuginfod_env();
	close(fd);
	cr_assert(folded && *folded, "nothing written");
	expect_unnamed(folded);
	free(folded);

	snprintf(err, sizeof(err), "%s/loader.err", dir);
	log = out_file(err);
	cr_assert(log);
	line = strstr(log, "memprof-bpf: symbolization: ");
	cr_assert(line && (line = strstr(line, " ms wall")), "no -v line:\n%s", log);
	while (line > log && line[-1] != ' ')
		line--;
	ms = strtod(line, NULL);
	/* It did wait for the server (the test is real), within the budget. */
	cr_expect_geq(ms, 1000, "the server was not asked? %.0f ms", ms);
	cr_expect_leq(ms, DSYM_DEBUGINFOD_BUDGET_S * 1000.0 + 2000,
		      "symbolization took %.0f ms with a silent server (budget %d s)", ms,
		      DSYM_DEBUGINFOD_BUDGET_S);
	free(log);
}
