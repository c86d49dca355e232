/*
 * Sampling at a rate below 1 under the preload, one thread, fixed seed:
 * prints the words allocated and the samples the tracker saw, for a
 * binomial bound in the test.
 *
 *   rate RATE OPS
 */
#include <stdio.h>

#include "tracker.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: rate RATE OPS\n");
		return 2;
	}
	double rate = atof(argv[1]);
	long ops = atol(argv[2]);
	if (!(rate > 0 && rate <= 1) || ops <= 0) {
		fprintf(stderr, "rate: bad RATE or OPS\n");
		return 2;
	}
	void *slot[128] = {0};
	unsigned long long words = 0, bytes = 0;
	uint64_t rng = 88172645463325252ull;

	tracker_tag = 1;
	memprof_set_seed(42);
	if (memprof_start(rate, 0, &checking_tracker) != 0)
		return 1;
	for (long i = 0; i < ops; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		size_t k = rng % 128;
		size_t size = 1 + (rng >> 20) % (rng % 13 == 0 ? 100000 : 300);
		free(slot[k]);
		slot[k] = malloc(size);
		words += (size + 7) / 8;
		bytes += size;
	}
	tracker_tag = 0;
	for (size_t k = 0; k < 128; k++)
		free(slot[k]);
	memprof_stop();
	printf("words=%llu\n", words);
	printf("bytes=%llu\n", bytes);
	printf("samples=%llu\n", (unsigned long long)tracker_counts.samples[1]);
	printf("blocks=%llu\n",
	       (unsigned long long)(tracker_counts.alloc_minor + tracker_counts.alloc_major));
	printf("live=%llu\n", tracker_live(1));
	printf("order_errors=%llu\n", (unsigned long long)tracker_counts.order_errors);
	return 0;
}
