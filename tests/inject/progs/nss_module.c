/*
 * An NSS module, libnss_memproftest.so.2: the C library loads it by itself
 * (its own dlopen, not the program's) when inject-sites --nss memproftest
 * looks a user up.  Its calls to malloc must be redirected too: the malloc
 * host learns of the object from the loader's count of objects added.
 *
 * getpwnam_r("rounds-N") runs site_in_nss N rounds and returns the exact
 * words allocated in pw_gecos ("words W").  "rounds-N-wait" (the program's
 * own malloc was redirected: the host is loaded) first waits, up to
 * NSS_REDIRECT_WAIT_S, until this object's GOT slot for malloc no longer
 * holds the C library's malloc.
 */
#include <dlfcn.h>
#include <nss.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NSS_REDIRECT_WAIT_S 10

/* This object's GOT slot for malloc, read afresh each time. */
static void *malloc_slot(void)
{
	void *p;

	__asm__ volatile("movq malloc@GOTPCREL(%%rip), %0" : "=r"(p));
	return p;
}

static void wait_redirected(void)
{
	void *libc_malloc = dlsym(RTLD_DEFAULT, "malloc");
	const struct timespec tick = {0, 1000000};

	for (long i = 0; i < NSS_REDIRECT_WAIT_S * 1000L && malloc_slot() == libc_malloc; i++)
		nanosleep(&tick, NULL);
}

__attribute__((noinline)) void site_in_nss(long rounds, unsigned long long *words)
{
	for (long i = 0; i < 4 * rounds; i++) {
		size_t bytes = 300 + (size_t)(i % 32) * 16;

		void *p = malloc(bytes);
		memset(p, 6, bytes);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		*words += (bytes + 7) / 8;
	}
}

enum nss_status _nss_memproftest_getpwnam_r(const char *name, struct passwd *pw, char *buf,
					    size_t buflen, int *errnop)
{
	unsigned long long words = 0;
	long rounds;
	int n = 0;

	if (sscanf(name, "rounds-%ld%n", &rounds, &n) != 1 || buflen < 64) {
		*errnop = 0;
		return NSS_STATUS_NOTFOUND;
	}
	if (!strcmp(name + n, "-wait"))
		wait_redirected();
	site_in_nss(rounds, &words);
	snprintf(buf, buflen, "words %llu", words);
	memset(pw, 0, sizeof(*pw));
	pw->pw_name = pw->pw_passwd = pw->pw_dir = pw->pw_shell = buf + strlen(buf);
	pw->pw_gecos = buf;
	return NSS_STATUS_SUCCESS;
}
