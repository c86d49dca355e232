/* A library that inject-sites dlopens after the injection: its own calls to
 * malloc must be redirected too. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void site_in_library(long rounds, unsigned long long *words)
{
	for (long i = 0; i < 4 * rounds; i++) {
		size_t bytes = 200 + (size_t)(i % 32) * 16;

		void *p = malloc(bytes);
		memset(p, 4, bytes);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		*words += (bytes + 7) / 8;
	}
}
