/*
 * probeloop: the cost of a detached USDT probe site, for callgrind.
 *
 * Two loops that differ only by one semaphore-guarded probe with the
 * argument count of memprof:sample.  Run under
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=loop_*
 * the instruction counts (Ir) of loop_with_probe and loop_without_probe,
 * divided by the iteration count, give the exact per-iteration price of a
 * probe site while no tracer is attached (the semaphore is zero).
 *
 * usage: probeloop probe|plain ITERATIONS
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

unsigned short benchloop_site_semaphore __attribute__((section(".probes")));

static volatile uint64_t sink;
static uint64_t stack_buf[4];

NOINLINE static uint64_t loop_with_probe(uint64_t n)
{
	uint64_t acc = 0;

	for (uint64_t i = 0; i < n; i++) {
		acc += i ^ (acc >> 3);
		if (__builtin_expect(benchloop_site_semaphore, 0))
			DTRACE_PROBE7(benchloop, site, i, acc, 1, 0, stack_buf, 0, 65536);
		sink = acc;
	}
	return acc;
}

NOINLINE static uint64_t loop_without_probe(uint64_t n)
{
	uint64_t acc = 0;

	for (uint64_t i = 0; i < n; i++) {
		acc += i ^ (acc >> 3);
		sink = acc;
	}
	return acc;
}

int main(int argc, char **argv)
{
	char *end;

	if (argc != 3 || (strcmp(argv[1], "probe") && strcmp(argv[1], "plain"))) {
		fprintf(stderr, "usage: probeloop probe|plain ITERATIONS\n");
		return 2;
	}
	errno = 0;
	unsigned long long n = strtoull(argv[2], &end, 10);
	if (errno || end == argv[2] || *end || n == 0) {
		fprintf(stderr, "probeloop: bad ITERATIONS '%s'\n", argv[2]);
		return 2;
	}
	uint64_t r = strcmp(argv[1], "probe") ? loop_without_probe(n) : loop_with_probe(n);
	printf("%llu\n", (unsigned long long)(r & 1));
	return 0;
}
