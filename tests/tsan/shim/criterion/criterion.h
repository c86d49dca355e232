/*
 * A fork-per-test stand-in for the part of Criterion the core's threaded
 * tests use, for their ThreadSanitizer build: Criterion itself does not
 * start under TSan.  Test(suite, name) registers a test; tests/tsan/runner.c
 * runs each in a child process and prints Criterion's synthesis line.
 */
#ifndef TSAN_CRITERION_SHIM_H
#define TSAN_CRITERION_SHIM_H

#include <stdio.h>
#include <stdlib.h>

void tsan_test_register(const char *suite, const char *name, void (*fn)(void));
void tsan_test_failed(const char *file, int line, const char *expr);

#define Test(suite, name, ...)                                                                     \
	static void suite##_##name(void);                                                          \
	__attribute__((constructor)) static void suite##_##name##_register(void)                   \
	{                                                                                          \
		tsan_test_register(#suite, #name, suite##_##name);                                 \
	}                                                                                          \
	static void suite##_##name(void)

#define cr_assert(e, ...)                                                                          \
	do {                                                                                       \
		if (!(e)) {                                                                        \
			fprintf(stderr, "" __VA_ARGS__);                                           \
			tsan_test_failed(__FILE__, __LINE__, #e);                                  \
		}                                                                                  \
	} while (0)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b))
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b))
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b))
#define cr_assert_null(a, ...) cr_assert((a) == NULL)
#define cr_assert_not_null(a, ...) cr_assert((a) != NULL)
#define cr_log_info(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))

#endif
