/*
 * Fork-per-test runner of the TSan build (tests/tsan/shim/criterion/
 * criterion.h): each test runs in its own child; a failed assertion, a
 * crash or a ThreadSanitizer report (exit code TSAN_EXITCODE) fails it.
 * Ends with Criterion's synthesis line, which tests/run-tests.sh reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 64

struct test {
	const char *suite, *name;
	void (*fn)(void);
};
static struct test tests[MAX_TESTS];
static int n_tests;

void tsan_test_register(const char *suite, const char *name, void (*fn)(void))
{
	if (n_tests < MAX_TESTS)
		tests[n_tests++] = (struct test){suite, name, fn};
}

void tsan_test_failed(const char *file, int line, const char *expr)
{
	fprintf(stderr, "[----] %s:%d: Assertion Failed: %s\n", file, line, expr);
	exit(1);
}

int main(void)
{
	int passed = 0, failed = 0, crashed = 0;

	for (int i = 0; i < n_tests; i++) {
		pid_t pid;
		int st;

		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			tests[i].fn();
			exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) < 0) {
			crashed++;
			continue;
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			passed++;
			printf("[PASS] %s::%s\n", tests[i].suite, tests[i].name);
		} else if (WIFEXITED(st)) {
			failed++;
			printf("[FAIL] %s::%s (exit %d)\n", tests[i].suite, tests[i].name,
			       WEXITSTATUS(st));
		} else {
			crashed++;
			printf("[CRASH] %s::%s (signal %d)\n", tests[i].suite, tests[i].name,
			       WTERMSIG(st));
		}
	}
	printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d \n",
	       n_tests, passed, failed, crashed);
	return failed || crashed;
}
