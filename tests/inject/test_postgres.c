/*
 * PostgreSQL, as a user runs it: Debian's server started by the test (the
 * postgres user, initdb, pg_ctl, a Unix socket in the test's folder).  A
 * backend idle in pg_sleep and a backend under pgbench are each injected
 * and attached (their large frames hold stale words from earlier calls
 * into the allocator: only their real call chain says they are safe); the
 * profile names PostgreSQL's functions, pgbench reports no failed
 * transaction, the server log has no error and no crashed backend, and the
 * server stops cleanly.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject_util.h"
#include "testlib.h"

#define PG_BIN "/usr/lib/postgresql/15/bin"
/* pgbench's work: long enough to be attached to (about 1 ms each). */
#define PGBENCH_TRANSACTIONS "8000"

static char dir[64], sock[96];
static int port;

/* Run a shell command (printf format): its exit status. */
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/* As the postgres user. */
#define PG "runuser -u postgres -- " PG_BIN

/* The pid of the backend whose pg_stat_activity row matches `where`, waited for. */
static pid_t backend(const char *where)
{
	char cmd[512], line[64];

	snprintf(cmd, sizeof(cmd),
		 PG "/psql -h %s -p %d -U postgres -At -c \"select pid from pg_stat_activity "
		    "where %s\" postgres",
		 sock, port, where);
	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.05) {
		FILE *p = popen(cmd, "r");
		long pid = 0;

		if (p && fgets(line, sizeof(line), p))
			pid = strtol(line, NULL, 10);
		if (p)
			pclose(p);
		if (pid > 0)
			return (pid_t)pid;
		const struct timespec tick = {0, 50000000};
		nanosleep(&tick, NULL);
	}
	cr_assert_fail("no backend where %s", where);
	return 0;
}

/* Attach to pid (injecting), the folded alloc view into folded: the log. */
static char *attach(pid_t pid, const char *folded)
{
	char cmd[512], log[128];

	snprintf(log, sizeof(log), "%s/loader.log", dir);
	snprintf(cmd, sizeof(cmd), INJECT_LOADER " attach %d -v -d 1 --rate 1e-3 -o %s 2> %s",
		 (int)pid, folded, log);
	int rc = system(cmd);
	char *text = slurp(log);
	cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == EXIT_OK, "loader status %#x: %s", rc, text);
	cr_expect_not_null(strstr(text, "had no memprof probes: loaded "), "not injected: %s",
			   text);
	return text;
}

static void server_start(void)
{
	snprintf(dir, sizeof(dir), "/tmp/inject-pg-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s", dir);
	port = 20000 + (int)(getpid() % 20000);
	cr_assert_eq(
	    sh("chmod 755 %s && mkdir %s/data && chown postgres %s %s/data", dir, dir, dir, dir),
	    0);
	cr_assert_eq(
	    sh(PG "/initdb -D %s/data -A trust -U postgres > %s/initdb.log 2>&1", dir, dir), 0,
	    "initdb failed");
	cr_assert_eq(sh(PG "/pg_ctl -D %s/data -o \"-k %s -c listen_addresses= -p %d\" -w -l "
			   "%s/server.log start > /dev/null",
			dir, sock, port, dir),
		     0, "the server did not start");
}

/* The server log: no error, no backend that died of a signal. */
static void server_stop(void)
{
	char log[128];

	cr_expect_eq(sh(PG "/pg_ctl -D %s/data -m fast -w stop > /dev/null", dir), 0,
		     "the server did not stop cleanly");
	snprintf(log, sizeof(log), "%s/server.log", dir);
	char *text = slurp(log);
	cr_expect_null(strstr(text, "ERROR:"), "an error in the server log: %s", text);
	cr_expect_null(strstr(text, "terminated by signal"), "a backend crashed: %s", text);
	cr_expect_null(strstr(text, "PANIC"), "%s", text);
	free(text);
	sh("rm -rf %s", dir);
}

/* A failed test leaves no server behind. */
static void teardown(void)
{
	if (!dir[0] || access(dir, F_OK))
		return;
	sh(PG "/pg_ctl -D %s/data -m immediate -w stop > /dev/null 2>&1", dir);
	sh("rm -rf %s", dir);
}

Test(inject_postgres, an_idle_backend_and_a_busy_one, .timeout = 600, .fini = teardown)
{
	char folded[128], bench_log[128];

	server_start();
	/* Idle: a backend sleeping in pg_sleep (ended by the fast stop). */
	cr_assert_eq(sh("(" PG "/psql -h %s -p %d -U postgres -At -c 'select pg_sleep(600)' "
			"postgres > /dev/null 2>&1 &)",
			sock, port),
		     0);
	pid_t idle = backend("query like 'select pg_sleep%'");
	snprintf(folded, sizeof(folded), "%s/idle.folded", dir);
	free(attach(idle, folded));
	cr_expect_eq(kill(idle, 0), 0, "the idle backend is gone");

	/* Busy: pgbench's backend, attached while it runs. */
	snprintf(bench_log, sizeof(bench_log), "%s/pgbench.log", dir);
	cr_assert_eq(sh(PG "/pgbench -h %s -p %d -U postgres -i -s 1 postgres > %s/init.log 2>&1",
			sock, port, dir),
		     0, "pgbench -i failed");
	cr_assert_eq(sh("(" PG "/pgbench -n -h %s -p %d -U postgres -c 1 -t " PGBENCH_TRANSACTIONS
			" postgres > %s 2>&1; echo done >> %s) &",
			sock, port, bench_log, bench_log),
		     0);
	/* pgbench's first connection only reads the scale and ends: the
	 * backend to attach is the one running the transactions' statements. */
	pid_t busy = backend("application_name = 'pgbench' and state <> 'idle' and "
			     "(query like 'UPDATE pgbench_%' or query like 'SELECT abalance%' or "
			     "query like 'INSERT INTO pgbench_history%' or query like 'BEGIN%' or "
			     "query like 'END%')");
	snprintf(folded, sizeof(folded), "%s/busy.folded", dir);
	free(attach(busy, folded));
	char *profile = slurp(folded);
	cr_expect_not_null(strstr(profile, "PostgresMain"),
			   "the profile names no PostgreSQL function: %.2000s", profile);
	free(profile);
	cr_assert_eq(wait_nonempty_file(bench_log, TEST_EVENT_TIMEOUT_S), 0);
	for (double waited = 0; waited < TEST_EVENT_TIMEOUT_S; waited += 0.05) {
		char *text = slurp(bench_log);
		int done = strstr(text, "done\n") != NULL;

		free(text);
		if (done)
			break;
		const struct timespec tick = {0, 50000000};
		nanosleep(&tick, NULL);
	}
	char *bench = slurp(bench_log);
	cr_expect_not_null(strstr(bench, "number of failed transactions: 0 "), "%s", bench);
	cr_expect_not_null(
	    strstr(bench, "number of transactions actually processed: " PGBENCH_TRANSACTIONS), "%s",
	    bench);
	free(bench);
	server_stop();
}
