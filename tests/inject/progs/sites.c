/*
 * A multithreaded C program for injection: memprof-bpf attaches to it while
 * it runs, without LD_PRELOAD.
 *
 *   inject-sites GO_FILE ROUNDS [--fork] [--dlopen LIB] [--nss SERVICE]
 *
 * Before GO_FILE exists (before the injection) it allocates PRE_BLOCKS
 * blocks with every allocation function and fills them.  After: four
 * threads run ROUNDS rounds of four sites; the main thread checks, grows
 * (realloc), sizes (malloc_usable_size) and frees the blocks from before;
 * with --fork a child allocates and exits; with --dlopen the library LIB is
 * loaded and its site runs ROUNDS rounds; with --nss, the C library loads
 * the NSS module libnss_SERVICE.so.2 by itself to look a user up, and the
 * module's site runs ROUNDS rounds (nss_module.c).  Output (deterministic):
 *   site NAME words W        one per site, exact words allocated there
 *   pre_blocks=ok            the blocks from before were intact
 *   child=0                  (--fork) the child's exit status
 */
#include <dlfcn.h>
#include <malloc.h>
#include <nss.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "go_wait.h"

#define THREADS 4
#define PRE_BLOCKS 3000
#define KEPT 2048

enum { SMALL, MEDIUM, GROW, CALLOC, MEMALIGN, N_SITES };
static const char *const names[N_SITES] = {"site_small", "site_medium", "site_grow", "site_calloc",
					   "site_memalign"};
static atomic_ullong words[N_SITES];
static long rounds;

/* Keep an allocation the compiler could otherwise drop (malloc + free). */
static void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static unsigned long long words_of(size_t bytes)
{
	return (bytes + 7) / 8;
}

__attribute__((noinline)) void site_small(long i)
{
	size_t bytes = 16 + (size_t)(i % 16) * 8;

	void *p = malloc(bytes);
	memset(p, 1, bytes);
	keep(p);
	free(p);
	atomic_fetch_add(&words[SMALL], words_of(bytes));
}

__attribute__((noinline)) void site_medium(void **kept, long i)
{
	size_t bytes = 512 + (size_t)(i % 8) * 256;

	free(kept[i % KEPT]);
	kept[i % KEPT] = malloc(bytes);
	memset(kept[i % KEPT], 2, 64);
	atomic_fetch_add(&words[MEDIUM], words_of(bytes));
}

__attribute__((noinline)) void site_grow(long i)
{
	char *p = NULL;
	size_t n = 1 + (size_t)(i % 4);

	for (size_t k = 1; k <= n; k++) {
		p = realloc(p, k * 1000);
		memset(p, 3, k * 1000);
		atomic_fetch_add(&words[GROW], words_of(k * 1000));
	}
	free(p);
}

__attribute__((noinline)) void site_calloc(long i)
{
	size_t n = 10 + (size_t)(i % 10);

	void *p = calloc(n, 24);
	keep(p);
	free(p);
	atomic_fetch_add(&words[CALLOC], words_of(n * 24));
}

/* posix_memalign goes through the malloc host too. */
__attribute__((noinline)) void site_memalign(long i)
{
	size_t bytes = 128 + (size_t)(i % 8) * 32;
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes))
		return;
	memset(p, 5, bytes);
	keep(p);
	free(p);
	atomic_fetch_add(&words[MEMALIGN], words_of(bytes));
}

static void *worker(void *arg)
{
	void **kept = calloc(KEPT, sizeof(void *));

	(void)arg;
	for (long i = 0; i < rounds; i++) {
		site_small(i);
		site_medium(kept, i);
		if (i % 4 == 0)
			site_grow(i);
		site_calloc(i);
		if (i % 2 == 0)
			site_memalign(i);
	}
	for (int k = 0; k < KEPT; k++)
		free(kept[k]);
	free(kept);
	return NULL;
}

/* ---- Blocks from before the injection ---- */

struct pre {
	unsigned char *p;
	size_t size;
};
static struct pre pre[PRE_BLOCKS];

static void pre_allocate(void)
{
	for (int i = 0; i < PRE_BLOCKS; i++) {
		size_t size = 8 + (size_t)(i * 37 % 3000);
		void *p = NULL;

		switch (i % 5) {
		case 0:
			p = malloc(size);
			break;
		case 1:
			p = calloc(1, size);
			break;
		case 2:
			if (posix_memalign(&p, 64, size))
				p = NULL;
			break;
		case 3:
			p = realloc(malloc(size / 2 + 1), size);
			break;
		default:
			p = aligned_alloc(32, (size + 31) & ~(size_t)31);
			break;
		}
		if (!p)
			exit(1);
		memset(p, i & 0xff, size);
		pre[i] = (struct pre){p, size};
	}
}

static int pre_check(const struct pre *b, unsigned char v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (b->p[k] != v)
			return -1;
	return 0;
}

/* realloc, size and free every block from before; 0 if all were intact. */
static int pre_release(void)
{
	int bad = 0;

	for (int i = 0; i < PRE_BLOCKS; i++) {
		struct pre *b = &pre[i];
		unsigned char v = (unsigned char)(i & 0xff);

		bad |= pre_check(b, v, b->size);
		if (malloc_usable_size(b->p) < b->size)
			bad = 1;
		if (i % 3 == 0) {
			unsigned char *q = realloc(b->p, b->size * 2);
			if (!q)
				return -1;
			b->p = q;
			bad |= pre_check(b, v, b->size);
		} else if (i % 3 == 1) {
			unsigned char *q = realloc(b->p, b->size / 2 + 1);
			if (!q)
				return -1;
			b->p = q;
			bad |= pre_check(b, v, b->size / 2 + 1);
		}
		free(b->p);
	}
	return bad ? -1 : 0;
}

static int run_child(void)
{
	fflush(stdout);
	pid_t child = fork();

	if (child < 0)
		return -1;
	if (child == 0) {
		void **kept = calloc(KEPT, sizeof(void *));
		for (long i = 0; i < 4 * KEPT; i++) {
			free(kept[i % KEPT]);
			kept[i % KEPT] = malloc(100 + (size_t)i % 900);
		}
		for (int k = 0; k < KEPT; k++)
			free(kept[k]);
		free(kept);
		_exit(0);
	}
	int status;
	if (waitpid(child, &status, 0) != child)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	const char *lib = NULL, *nss = NULL;
	int do_fork = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: inject-sites GO_FILE ROUNDS [--fork] [--dlopen LIB] "
				"[--nss SERVICE]\n");
		return 2;
	}
	rounds = atol(argv[2]);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--fork"))
			do_fork = 1;
		else if (!strcmp(argv[i], "--dlopen") && i + 1 < argc)
			lib = argv[++i];
		else if (!strcmp(argv[i], "--nss") && i + 1 < argc)
			nss = argv[++i];
		else
			return 2;
	}
	pre_allocate();
	if (go_wait(argv[1])) {
		fprintf(stderr, "inject-sites: no %s\n", argv[1]);
		return 1;
	}
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	int pre_ok = pre_release() == 0;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	int child = do_fork ? run_child() : 0;
	unsigned long long lib_words = 0;
	if (lib) {
		void *h = dlopen(lib, RTLD_NOW);
		void (*run)(long, unsigned long long *) =
		    h ? (void (*)(long, unsigned long long *))dlsym(h, "site_in_library") : NULL;
		if (!run) {
			fprintf(stderr, "inject-sites: %s\n", dlerror());
			return 1;
		}
		run(rounds, &lib_words);
	}
	unsigned long long nss_words = 0;
	if (nss) {
		struct passwd pw, *found = NULL;
		char name[64], buf[256];

		void *slot;

		/* The program's own GOT slot for malloc: redirected once injected. */
		__asm__ volatile("movq malloc@GOTPCREL(%%rip), %0" : "=r"(slot));
		snprintf(name, sizeof(name), "rounds-%ld%s", rounds,
			 slot != dlsym(RTLD_DEFAULT, "malloc") ? "-wait" : "");
		if (__nss_configure_lookup("passwd", nss) ||
		    getpwnam_r(name, &pw, buf, sizeof(buf), &found) || !found ||
		    sscanf(pw.pw_gecos, "words %llu", &nss_words) != 1) {
			fprintf(stderr, "inject-sites: no user %s from NSS service %s\n", name,
				nss);
			return 1;
		}
	}
	if (lib || nss) {
		/* Stay a while: the loader names frames from the mappings it has seen. */
		const struct timespec stay = {0, 400000000};
		nanosleep(&stay, NULL);
	}
	for (int s = 0; s < N_SITES; s++)
		printf("site %s words %llu\n", names[s], (unsigned long long)words[s]);
	if (lib)
		printf("site site_in_library words %llu\n", lib_words);
	if (nss)
		printf("site site_in_nss words %llu\n", nss_words);
	printf("pre_blocks=%s\n", pre_ok ? "ok" : "DAMAGED");
	if (do_fork)
		printf("child=%d\n", child);
	return pre_ok && child == 0 ? 0 : 1;
}
