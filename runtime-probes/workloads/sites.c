/*
 * workload-sites: the bundled demo workload, with allocation sites of known
 * sizes and lifetimes.  Each site is its own non-inlined function, so a
 * symbolizer attributes sampled words to it by name.
 *
 * One round of work (r = 0, 1, 2, ...), words counted with headers:
 *   site_short_lived   every round, 16 blocks of 4 fields (80 words); dropped
 *                      at once: they die young.
 *   site_medium_lived  every round, 2 blocks of 8 fields (18 words) into a
 *                      ring of 8192 roots: promoted, overwritten 4096 rounds
 *                      later, then freed by a major collection.
 *   site_long_lived    every 4th round, 1 block of 16 fields (17 words) into
 *                      a ring of 262144 roots: promoted, and (for runs under
 *                      about a million rounds) alive at the end.
 *   site_major_blocks  every 32nd round, 1 block of 1000 fields (1001 words)
 *                      allocated directly in the major heap, into a ring of
 *                      16 roots.
 *   site_custom        every 8th round, 1 custom block (3 fields, 4 words)
 *                      holding 2048 malloc'ed bytes (256 words of virtual
 *                      size, sampled as such), 260 words in all, into a ring
 *                      of 64 roots; its finalizer frees the bytes.
 * About 166 words per round: 48% short, 11% medium, 3% long, 19% major,
 * 19% custom.
 *
 * The sites are reached as a small server would reach them, through shared
 * helpers several frames deep (every function below is a real frame):
 *   run_round -> handle_request -> parse_request -> tokenize -> short (8)
 *                               -> build_response -> render_row -> short (4),
 *                                                                  medium (1)
 *                               -> build_response -> remember_session -> long
 *                                  (rounds 4 mod 12)
 *                               -> audit -> long (rounds 8 mod 12)
 *                               -> attach_blob -> custom (rounds 0 mod 16)
 *   run_round -> background_tasks -> refresh_cache -> short (4), medium (1)
 *                                 -> persist -> store_record -> long (0 mod 12)
 *                                 -> compact -> major (0 mod 32)
 *                                 -> snapshot -> attach_blob -> custom
 *                                    (rounds 8 mod 16)
 * so every view holds several stacks, and site_short_lived and
 * site_custom are each reached by more than one path.
 *
 * At exit (after --iterations rounds, --seconds seconds, or SIGINT/SIGTERM)
 * it prints, for each site, `site <name> words <N> live_words <M>`: N the
 * words it allocated, M the words of its blocks still reachable.  With
 * --rate R it samples in process with a counting tracker and also prints
 * `inprocess samples <n> minor <n> major <n> promotes <n> deallocs <n>`.
 * --ready-file F gets the pid once the rings are set up.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memprof.h"
#include "options.h"
#include "rt.h"

#define SHORT_PER_ROUND 16
#define SHORT_FIELDS 4
#define MEDIUM_PER_ROUND 2
#define MEDIUM_FIELDS 8
#define MEDIUM_RING 8192
#define LONG_EVERY 4
#define LONG_FIELDS 16
#define LONG_RING 262144
#define MAJOR_EVERY 32
#define MAJOR_FIELDS 1000
#define MAJOR_RING 16
#define CUSTOM_EVERY 8
#define CUSTOM_BYTES 2048
#define CUSTOM_RING 64
#define POLL_EVERY 1024 /* rounds between explicit safe points and clock reads */
#define SEED 42
#define CALLSTACK_DEPTH 16

enum site { SHORT, MEDIUM, LONG, MAJOR, CUSTOM, N_SITES };

static const char *const site_names[N_SITES] = {
    "site_short_lived", "site_medium_lived", "site_long_lived", "site_major_blocks", "site_custom",
};

static uint64_t site_words[N_SITES];
static rt_value rings[N_SITES]; /* global roots; SHORT has none */
static size_t ring_next[N_SITES];
static volatile sig_atomic_t stop_requested;

static int store_in_ring(enum site s, rt_value v)
{
	size_t len = rt_wosize(rings[s]);

	rt_store_field(rings[s], ring_next[s], v);
	ring_next[s] = (ring_next[s] + 1) % len;
	return 0;
}

/* After a call: the call is not the last instruction, so it is never turned
 * into a jump and its caller stays a frame of the stack. */
#define KEEP_FRAME() __asm__ volatile("")
/* noipa: not inlined, cloned, or folded with an identical function. */
#define FRAME __attribute__((noipa))

FRAME int site_short_lived(int n)
{
	rt_value v;
	int err;

	for (int i = 0; i < n; i++) {
		err = rt_alloc(SHORT_FIELDS, 0, &v);
		if (err)
			return err;
		rt_store_field(v, 0, RT_VAL_INT(i));
		site_words[SHORT] += SHORT_FIELDS + 1;
	}
	return 0;
}

FRAME int site_medium_lived(int n)
{
	rt_value v;
	int err;

	for (int i = 0; i < n; i++) {
		err = rt_alloc(MEDIUM_FIELDS, 1, &v);
		if (err)
			return err;
		site_words[MEDIUM] += MEDIUM_FIELDS + 1;
		store_in_ring(MEDIUM, v);
	}
	return 0;
}

FRAME int site_long_lived(void)
{
	rt_value v;
	int err = rt_alloc(LONG_FIELDS, 2, &v);

	if (err)
		return err;
	site_words[LONG] += LONG_FIELDS + 1;
	return store_in_ring(LONG, v);
}

FRAME int site_major_blocks(void)
{
	rt_value v;
	int err = rt_alloc_major(MAJOR_FIELDS, 3, &v);

	if (err)
		return err;
	site_words[MAJOR] += MAJOR_FIELDS + 1;
	return store_in_ring(MAJOR, v);
}

static void free_custom_bytes(void *data)
{
	free(data);
}

FRAME int site_custom(void)
{
	void *bytes = malloc(CUSTOM_BYTES);
	rt_value v;
	int err;

	if (!bytes)
		return 12; /* ENOMEM */
	memset(bytes, 0x5a, CUSTOM_BYTES);
	err = rt_alloc_custom(bytes, CUSTOM_BYTES, free_custom_bytes, &v);
	if (err) {
		free(bytes);
		return err;
	}
	site_words[CUSTOM] += rt_wosize(v) + 1 + CUSTOM_BYTES / 8;
	return store_in_ring(CUSTOM, v);
}

/* ---- The call tree above the sites ---- */

FRAME static int tokenize(void)
{
	int err = site_short_lived(SHORT_PER_ROUND / 2);

	KEEP_FRAME();
	return err;
}

FRAME static int parse_request(void)
{
	int err = tokenize();

	KEEP_FRAME();
	return err;
}

FRAME static int render_row(void)
{
	int err = site_short_lived(SHORT_PER_ROUND / 4);

	if (!err)
		err = site_medium_lived(MEDIUM_PER_ROUND / 2);
	KEEP_FRAME();
	return err;
}

FRAME static int remember_session(void)
{
	int err = site_long_lived();

	KEEP_FRAME();
	return err;
}

FRAME static int build_response(uint64_t r)
{
	int err = render_row();

	if (!err && r % (3 * LONG_EVERY) == LONG_EVERY)
		err = remember_session();
	KEEP_FRAME();
	return err;
}

FRAME static int attach_blob(void)
{
	int err = site_custom();

	KEEP_FRAME();
	return err;
}

FRAME static int audit(void)
{
	int err = site_long_lived();

	KEEP_FRAME();
	return err;
}

FRAME static int handle_request(uint64_t r)
{
	int err = parse_request();

	if (!err)
		err = build_response(r);
	if (!err && r % (3 * LONG_EVERY) == 2 * LONG_EVERY)
		err = audit();
	if (!err && r % (2 * CUSTOM_EVERY) == 0)
		err = attach_blob();
	KEEP_FRAME();
	return err;
}

FRAME static int refresh_cache(void)
{
	int err = site_short_lived(SHORT_PER_ROUND / 4);

	if (!err)
		err = site_medium_lived(MEDIUM_PER_ROUND / 2);
	KEEP_FRAME();
	return err;
}

FRAME static int store_record(void)
{
	int err = site_long_lived();

	KEEP_FRAME();
	return err;
}

FRAME static int persist(void)
{
	int err = store_record();

	KEEP_FRAME();
	return err;
}

FRAME static int compact(void)
{
	int err = site_major_blocks();

	KEEP_FRAME();
	return err;
}

FRAME static int snapshot(void)
{
	int err = attach_blob();

	KEEP_FRAME();
	return err;
}

FRAME static int background_tasks(uint64_t r)
{
	int err = refresh_cache();

	if (!err && r % (3 * LONG_EVERY) == 0)
		err = persist();
	if (!err && r % MAJOR_EVERY == 0)
		err = compact();
	if (!err && r % (2 * CUSTOM_EVERY) == CUSTOM_EVERY)
		err = snapshot();
	KEEP_FRAME();
	return err;
}

FRAME static int run_round(uint64_t r)
{
	int err = handle_request(r);

	if (!err)
		err = background_tasks(r);
	if (!err && r % POLL_EVERY == 0)
		err = rt_poll();
	KEEP_FRAME();
	return err;
}

/* ---- In-process profile (--rate): a counting tracker ---- */

static struct {
	uint64_t samples, minor, major, promotes, deallocs;
} counts;

static int count_alloc_minor(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	counts.samples += info->n_samples;
	counts.minor++;
	*out = RT_VAL_INT(1);
	return 0;
}

static int count_alloc_major(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	counts.samples += info->n_samples;
	counts.major++;
	*out = RT_VAL_INT(1);
	return 0;
}

static int count_promote(void *arg, memprof_value minor, memprof_value *out)
{
	(void)arg;
	counts.promotes++;
	*out = minor;
	return 0;
}

static int count_dealloc(void *arg, memprof_value data)
{
	(void)arg, (void)data;
	counts.deallocs++;
	return 0;
}

static const memprof_tracker counting_tracker = {
    .alloc_minor = count_alloc_minor,
    .alloc_major = count_alloc_major,
    .promote = count_promote,
    .dealloc_minor = count_dealloc,
    .dealloc_major = count_dealloc,
};

/* ---- Main ---- */

struct sites_options {
	double seconds;	     /* 0: until a signal */
	uint64_t iterations; /* 0: no limit */
	double rate;	     /* 0: no in-process profile */
	const char *ready_file;
};

static int parse(int argc, char **argv, struct sites_options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *val;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			printf("usage: workload-sites [--seconds S] [--iterations N] [--rate R] "
			       "[--ready-file F]\n");
			exit(0);
		}
		val = i + 1 < argc ? argv[++i] : NULL;
		if (!val) {
			fprintf(stderr, "workload-sites: %s needs a value\n", arg);
			return -1;
		}
		if (!strcmp(arg, "--seconds")) {
			if (option_double(arg, val, 0, 1e9, &o->seconds))
				return -1;
		} else if (!strcmp(arg, "--iterations")) {
			if (option_u64(arg, val, 1, UINT64_MAX >> 1, &o->iterations))
				return -1;
		} else if (!strcmp(arg, "--rate")) {
			if (option_double(arg, val, 0, 1, &o->rate))
				return -1;
		} else if (!strcmp(arg, "--ready-file")) {
			o->ready_file = val;
		} else {
			fprintf(stderr,
				"workload-sites: unknown option '%s' (options: --seconds S, "
				"--iterations N, --rate R, --ready-file F)\n",
				arg);
			return -1;
		}
	}
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int setup_rings(void)
{
	static const size_t ring_len[N_SITES] = {0, MEDIUM_RING, LONG_RING, MAJOR_RING,
						 CUSTOM_RING};

	for (int s = 0; s < N_SITES; s++) {
		rings[s] = RT_UNIT;
		rt_register_global(&rings[s]);
		if (ring_len[s] && rt_alloc_major(ring_len[s], 0, &rings[s]))
			return -1;
	}
	return 0;
}

static uint64_t live_words(enum site s)
{
	uint64_t words = 0;

	if (s == SHORT)
		return 0;
	for (size_t i = 0; i < rt_wosize(rings[s]); i++) {
		rt_value v = rt_field(rings[s], i);

		if (v == RT_UNIT)
			continue;
		words += rt_wosize(v) + 1;
		if (s == CUSTOM)
			words += CUSTOM_BYTES / 8;
	}
	return words;
}

int main(int argc, char **argv)
{
	struct sites_options o = {0};
	struct sigaction sa = {.sa_handler = on_signal};
	double deadline;
	uint64_t r;
	int err = 0;

	if (parse(argc, argv, &o))
		return 2; /* parse printed the one line */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (rt_init(NULL) || setup_rings()) {
		fprintf(stderr, "workload-sites: out of memory setting up\n");
		return 1;
	}
	memprof_set_seed(SEED);
	if (o.rate > 0 && memprof_start(o.rate, CALLSTACK_DEPTH, &counting_tracker)) {
		fprintf(stderr, "workload-sites: cannot start the in-process profile\n");
		return 1;
	}
	if (o.ready_file && write_ready_file(o.ready_file))
		return 1;
	deadline = o.seconds > 0 ? now() + o.seconds : 0;
	for (r = 0; !err && !stop_requested; r++) {
		if (o.iterations && r >= o.iterations)
			break;
		if (deadline && r % POLL_EVERY == 0 && now() >= deadline)
			break;
		err = run_round(r);
	}
	if (err) {
		fprintf(stderr, "workload-sites: allocation failed (error %d)\n", err);
		return 1;
	}
	rt_major_gc();
	if (rt_poll()) /* the last postponed callbacks */
		fprintf(stderr, "workload-sites: a callback failed at exit\n");
	printf("rounds %llu\n", (unsigned long long)r);
	for (int s = 0; s < N_SITES; s++)
		printf("site %s words %llu live_words %llu\n", site_names[s],
		       (unsigned long long)site_words[s], (unsigned long long)live_words(s));
	if (o.rate > 0)
		printf("inprocess samples %llu minor %llu major %llu promotes %llu deallocs %llu\n",
		       (unsigned long long)counts.samples, (unsigned long long)counts.minor,
		       (unsigned long long)counts.major, (unsigned long long)counts.promotes,
		       (unsigned long long)counts.deallocs);
	fflush(stdout);
	return 0;
}
