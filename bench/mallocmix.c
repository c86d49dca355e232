/*
 * mallocmix: a malloc-heavy workload with known exact per-site totals, for
 * comparing malloc profilers (memprof-bpf's preload host and its peers).
 *
 * Five allocation sites, each a non-inlined function with its own size
 * range and lifetime.  A fixed-seed generator makes every run allocate the
 * same sizes in the same order, and the program counts exactly what each
 * site asked for.  Only the work phase is timed (CLOCK_MONOTONIC), so a
 * tracer's start-up cost is not part of the figure.
 *
 * Output (stdout, one fact per line):
 *   work_ns <ns>                 wall time of the work phase
 *   work_cpu_ns <ns>             CPU time of the process during it (all threads)
 *   memprof_samples <n>          (only when the preload host is loaded)
 *
 * --fake-tracer RATE (under the preload) raises the preload's sample and
 * events semaphores itself and asks for RATE, as an attaching tracer would,
 * but attaches nothing: the host samples, captures stacks, queues records
 * and fires its probe sites exactly as when traced, and the sites are bare
 * nops.  That is the in-process part of a traced sample alone, and valgrind
 * can run it (a process with live uprobes it cannot).
 *   site <name> calls <n> bytes <requested bytes> live_bytes <bytes live at the end>
 *
 * --idle-thread starts one thread that only sleeps, before the work: the C
 * library then runs as in any multi-threaded process (its malloc takes the
 * arena's lock where a single-threaded process skips it), as it does once
 * the preload's flusher thread has started under a tracer.  Against a plain
 * detached run it measures that part of attaching alone.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "memprof_probe_abi.h"

#define NOINLINE __attribute__((noinline))

enum { DEFAULT_ITERATIONS = 300000 };
enum { KEEP_RING_SLOTS = 4096 };    /* medium blocks outlive 4096 medium allocations */
enum { BUFFER_RING_SLOTS = 16384 }; /* buffers outlive 16384 buffer allocations */
enum { WAIT_TRACER_POLL_US = 1000 };
/* The preload polls for a tracer every so many allocated bytes. */
enum { WAIT_TRACER_BLOCK_BYTES = 64 * 1024 };
enum { DEFAULT_WAIT_TRACER_S = 60 };

enum site_id { SITE_TINY, SITE_SMALL, SITE_MEDIUM, SITE_LARGE, SITE_BUFFER, SITE_COUNT };

static const char *const site_names[SITE_COUNT] = {
    "site_tiny_temp", "site_small_temp", "site_medium_keep", "site_large_temp", "site_buffer_keep",
};

struct site_total {
	uint64_t calls;
	uint64_t bytes;
	uint64_t live_bytes;
};

static struct site_total totals[SITE_COUNT];
static void *medium_ring[KEEP_RING_SLOTS];
static size_t medium_ring_size[KEEP_RING_SLOTS];
static void *buffer_ring[BUFFER_RING_SLOTS];
static size_t buffer_ring_size[BUFFER_RING_SLOTS];
static volatile unsigned char sink;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
	/* xorshift64*: fixed seed, so every run allocates the same sizes. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t size_between(size_t lo, size_t hi)
{
	return lo + (size_t)(rng_next() % (hi - lo + 1));
}

static void *counted_malloc(enum site_id site, size_t size)
{
	void *p = malloc(size);

	if (!p) {
		fprintf(stderr, "mallocmix: out of memory at %s (%zu bytes)\n", site_names[site],
			size);
		exit(1);
	}
	((volatile unsigned char *)p)[0] = (unsigned char)size;
	totals[site].calls++;
	totals[site].bytes += size;
	return p;
}

static void touch_and_free(void *p)
{
	sink ^= ((volatile unsigned char *)p)[0];
	free(p);
}

NOINLINE static void site_tiny_temp(void)
{
	touch_and_free(counted_malloc(SITE_TINY, size_between(16, 64)));
}

NOINLINE static void site_small_temp(void)
{
	touch_and_free(counted_malloc(SITE_SMALL, size_between(64, 512)));
}

NOINLINE static void site_large_temp(void)
{
	touch_and_free(counted_malloc(SITE_LARGE, size_between(8192, 65536)));
}

NOINLINE static void site_medium_keep(uint64_t i)
{
	size_t slot = i % KEEP_RING_SLOTS;
	size_t size = size_between(256, 4096);

	if (medium_ring[slot]) {
		totals[SITE_MEDIUM].live_bytes -= medium_ring_size[slot];
		touch_and_free(medium_ring[slot]);
	}
	medium_ring[slot] = counted_malloc(SITE_MEDIUM, size);
	medium_ring_size[slot] = size;
	totals[SITE_MEDIUM].live_bytes += size;
}

NOINLINE static void site_buffer_keep(uint64_t i)
{
	size_t slot = i % BUFFER_RING_SLOTS;
	size_t size = size_between(1024, 2048);

	if (buffer_ring[slot]) {
		totals[SITE_BUFFER].live_bytes -= buffer_ring_size[slot];
		touch_and_free(buffer_ring[slot]);
	}
	buffer_ring[slot] = counted_malloc(SITE_BUFFER, size);
	buffer_ring_size[slot] = size;
	totals[SITE_BUFFER].live_bytes += size;
}

NOINLINE static void run_work(uint64_t iterations)
{
	for (uint64_t i = 0; i < iterations; i++) {
		site_tiny_temp();
		if (i % 2 == 0)
			site_small_temp();
		if (i % 4 == 0)
			site_medium_keep(i / 4);
		if (i % 16 == 0)
			site_buffer_keep(i / 16);
		if (i % 64 == 0)
			site_large_temp();
	}
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* The preload host's control block, when the preload is loaded. */
static const struct memprof_probe_control *find_control(void)
{
	const struct memprof_probe_control *ctl = dlsym(RTLD_DEFAULT, MEMPROF_PROBE_CONTROL_SYMBOL);

	if (ctl && ctl->magic != MEMPROF_PROBE_CONTROL_MAGIC)
		return NULL;
	return ctl;
}

/*
 * The address of local symbol `name` (in .symtab) of the object holding
 * `inside`, or NULL.  The semaphores are not exported: the tracer finds
 * them in the ELF file, as here.
 */
static void *find_local_symbol(const void *inside, const char *name)
{
	Dl_info info;
	struct stat st;
	void *found = NULL;

	if (!dladdr(inside, &info) || !info.dli_fname)
		return NULL;
	int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	const unsigned char *img = MAP_FAILED;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(Elf64_Ehdr))
		img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return NULL;
	const Elf64_Ehdr *eh = (const void *)img;
	const Elf64_Shdr *sh = (const void *)(img + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		const Elf64_Sym *sym = (const void *)(img + sh[i].sh_offset);
		const char *str = (const char *)(img + sh[sh[i].sh_link].sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (!strcmp(str + sym[k].st_name, name)) {
				found = (char *)info.dli_fbase + sym[k].st_value;
				break;
			}
	}
	munmap((void *)img, (size_t)st.st_size);
	return found;
}

/* Raise the preload's semaphores and ask for `rate` (see the top comment). */
static int fake_tracer(double rate)
{
	struct memprof_probe_control *ctl = (struct memprof_probe_control *)find_control();
	static const char *const semaphores[] = {"memprof_sample_semaphore",
						 "memprof_events_semaphore"};

	if (!ctl) {
		fprintf(stderr, "mallocmix: --fake-tracer needs the memprof preload\n");
		return -1;
	}
	ctl->requested_rate = rate;
	for (size_t i = 0; i < sizeof(semaphores) / sizeof(*semaphores); i++) {
		volatile unsigned short *sem = find_local_symbol(ctl, semaphores[i]);
		if (!sem) {
			fprintf(stderr, "mallocmix: no %s in the preload\n", semaphores[i]);
			return -1;
		}
		(*sem)++;
	}
	/* The host sees it at its next slow path. */
	while (!(*(volatile double *)&ctl->active_rate > 0)) {
		void *volatile p = malloc(WAIT_TRACER_BLOCK_BYTES);

		free(p);
	}
	return 0;
}

static void wait_for_signal(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
}

/* Allocate a little until the preload host reports a tracer's sampling. */
static int wait_for_tracer(unsigned timeout_s)
{
	const struct memprof_probe_control *ctl = find_control();
	uint64_t deadline = now_ns() + (uint64_t)timeout_s * 1000000000ull;

	if (!ctl) {
		fprintf(stderr, "mallocmix: --wait-tracer needs the memprof preload (no %s)\n",
			MEMPROF_PROBE_CONTROL_SYMBOL);
		return -1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!(*(volatile double *)&ctl->active_rate > 0)) {
		if (now_ns() > deadline) {
			fprintf(stderr, "mallocmix: no tracer attached within %u s\n", timeout_s);
			return -1;
		}
		void *volatile p = malloc(WAIT_TRACER_BLOCK_BYTES);

		free(p);
		usleep(WAIT_TRACER_POLL_US);
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: mallocmix [--iterations N] [--wait-signal | --wait-tracer[=S]] "
			"[--hold S] [--fake-tracer RATE] [--idle-thread]\n");
}

static void *idle_thread_main(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* One more thread, asleep for the process's life.  0, or -1 with a message. */
static int start_idle_thread(void)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, idle_thread_main, NULL);

	if (rc) {
		fprintf(stderr, "mallocmix: --idle-thread: %s\n", strerror(rc));
		return -1;
	}
	pthread_detach(t);
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t iterations = DEFAULT_ITERATIONS, hold_s = 0, wait_tracer_s = 0;
	int wait_signal = 0, idle_thread = 0;
	double fake_rate = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--iterations") && i + 1 < argc) {
			if (parse_u64(argv[++i], &iterations) || iterations == 0) {
				fprintf(stderr, "mallocmix: bad --iterations '%s'\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--hold") && i + 1 < argc) {
			if (parse_u64(argv[++i], &hold_s)) {
				fprintf(stderr, "mallocmix: bad --hold '%s'\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--fake-tracer") && i + 1 < argc) {
			fake_rate = strtod(argv[++i], NULL);
			if (!(fake_rate > 0 && fake_rate <= 1)) {
				fprintf(stderr, "mallocmix: bad --fake-tracer '%s'\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--idle-thread")) {
			idle_thread = 1;
		} else if (!strcmp(a, "--wait-signal")) {
			wait_signal = 1;
		} else if (!strcmp(a, "--wait-tracer")) {
			wait_tracer_s = DEFAULT_WAIT_TRACER_S;
		} else if (!strncmp(a, "--wait-tracer=", 14)) {
			if (parse_u64(a + 14, &wait_tracer_s) || wait_tracer_s == 0) {
				fprintf(stderr, "mallocmix: bad %s\n", a);
				return 2;
			}
		} else {
			fprintf(stderr, "mallocmix: unknown argument '%s'\n", a);
			usage();
			return 2;
		}
	}

	if (wait_signal)
		wait_for_signal();
	if (wait_tracer_s && wait_for_tracer((unsigned)wait_tracer_s))
		return 1;
	if (fake_rate > 0 && fake_tracer(fake_rate))
		return 1;
	if (idle_thread && start_idle_thread())
		return 1;

	uint64_t t0 = now_ns(), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	run_work(iterations);
	uint64_t t1 = now_ns(), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);

	printf("work_ns %" PRIu64 "\n", t1 - t0);
	printf("work_cpu_ns %" PRIu64 "\n", c1 - c0);
	const struct memprof_probe_control *ctl = find_control();
	if (ctl)
		printf("memprof_samples %" PRIu64 "\n", (uint64_t)ctl->samples);
	for (int s = 0; s < SITE_COUNT; s++)
		printf("site %s calls %" PRIu64 " bytes %" PRIu64 " live_bytes %" PRIu64 "\n",
		       site_names[s], totals[s].calls, totals[s].bytes, totals[s].live_bytes);
	fflush(stdout);
	if (hold_s)
		sleep((unsigned)hold_s);

	for (size_t i = 0; i < KEEP_RING_SLOTS; i++)
		free(medium_ring[i]);
	for (size_t i = 0; i < BUFFER_RING_SLOTS; i++)
		free(buffer_ring[i]);
	return 0;
}
