/*
 * Multi-threaded stress under the preload, at rate 1 with an in-process
 * tracker: every word allocated must be sampled exactly once, and every
 * tracked block must get exactly one dealloc or still be alive at the end.
 *
 *   stress THREADS OPS
 *
 * Workers (tag 1) mix malloc, calloc, realloc, posix_memalign,
 * aligned_alloc and free over their own slots, and swap blocks through a
 * shared exchange so that many blocks are freed by another thread.  At the
 * end each worker keeps its slots; the main thread frees the exchange.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tracker.h"

#define SLOTS 64
#define EXCHANGE 256
#define WORKER_TAG 1
/* A block at least this big is born major (MEMPROF_MAJOR_THRESHOLD_BYTES). */
#define BIG_BYTES 20000

static _Atomic(void *) exchange[EXCHANGE];
static int ops_per_thread;

struct worker {
	pthread_t thread;
	uint64_t rng;
	unsigned long long bytes; /* allocated (requested), by our count */
	unsigned long long kept;  /* blocks left alive at the end */
};

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t random_size(uint64_t *rng)
{
	uint64_t r = next_rand(rng);

	if (r % 97 == 0)
		return BIG_BYTES + r % 4096;
	return 1 + (r >> 8) % 600;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	void *slot[SLOTS] = {0};

	tracker_tag = WORKER_TAG;
	for (int i = 0; i < ops_per_thread; i++) {
		uint64_t r = next_rand(&w->rng);
		size_t k = r % SLOTS;
		size_t size = random_size(&w->rng);
		void *p = NULL;

		switch ((r >> 16) % 8) {
		case 0:
		case 1:
			free(slot[k]);
			slot[k] = NULL;
			break;
		case 2:
			p = calloc(1 + size % 7, 1 + size / 7);
			if (p)
				w->bytes += ((1 + size % 7) * (1 + size / 7));
			break;
		case 3:
			if (!slot[k])
				break;
			p = realloc(slot[k], size);
			if (p) {
				w->bytes += (size);
				slot[k] = p;
				p = NULL;
			}
			break;
		case 4:
			if (posix_memalign(&p, 64, size) == 0)
				w->bytes += (size);
			break;
		case 5:
			p = aligned_alloc(32, (size + 31) & ~(size_t)31);
			if (p)
				w->bytes += ((size + 31) & ~(size_t)31);
			break;
		case 6: {
			/* Hand a block to whichever thread takes this exchange slot. */
			void *mine = malloc(size);
			if (mine)
				w->bytes += (size);
			void *theirs = atomic_exchange(&exchange[(r >> 24) % EXCHANGE], mine);
			free(theirs);
			break;
		}
		default:
			p = malloc(size);
			if (p)
				w->bytes += (size);
			break;
		}
		if (p) {
			free(slot[k]);
			slot[k] = p;
		}
	}
	for (size_t k = 0; k < SLOTS; k++)
		w->kept += slot[k] != NULL;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: stress THREADS OPS\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	ops_per_thread = atoi(argv[2]);
	if (threads <= 0 || threads > 64 || ops_per_thread <= 0) {
		fprintf(stderr, "stress: bad THREADS or OPS\n");
		return 2;
	}
	struct worker workers[64];
	memset(workers, 0, sizeof(workers));

	tracker_exact = 1;
	if (memprof_start(1.0, 0, &checking_tracker) != 0) {
		fprintf(stderr, "stress: memprof_start failed\n");
		return 1;
	}
	for (int i = 0; i < threads; i++) {
		workers[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
	}
	unsigned long long bytes = 0, kept = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(workers[i].thread, NULL);
		bytes += workers[i].bytes;
		kept += workers[i].kept;
	}
	for (size_t k = 0; k < EXCHANGE; k++)
		free(atomic_exchange(&exchange[k], NULL));
	memprof_stop();

	struct tracker_counts *c = &tracker_counts;
	printf("bytes=%llu\n", bytes);
	printf("samples=%llu\n", (unsigned long long)c->samples[WORKER_TAG]);
	printf("sampled_words=%llu\n", (unsigned long long)c->words[WORKER_TAG]);
	printf("kept=%llu\n", kept);
	printf("live=%llu\n", tracker_live(WORKER_TAG));
	printf("alloc_minor=%llu\n", (unsigned long long)c->alloc_minor);
	printf("alloc_major=%llu\n", (unsigned long long)c->alloc_major);
	printf("promote=%llu\n", (unsigned long long)c->promote);
	printf("dealloc_minor=%llu\n", (unsigned long long)c->dealloc_minor);
	printf("dealloc_major=%llu\n", (unsigned long long)c->dealloc_major);
	printf("not_exact=%llu\n", (unsigned long long)c->not_exact);
	printf("order_errors=%llu\n", (unsigned long long)c->order_errors);
	return 0;
}
