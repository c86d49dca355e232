/*
 * Exit under the preload with sampling on and sampled blocks alive: atexit
 * handlers and thread-specific-data destructors allocate and free (sampled
 * blocks among them) while the process and its threads go away, and a
 * detached thread is still allocating when main returns.  It must exit 0,
 * with no crash, whatever the order of destructors.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracker.h"

#define KEEP 256

void *kept[KEEP];
static pthread_key_t key;
static void *volatile sink;

static void free_kept_at_exit(void)
{
	for (int i = 0; i < KEEP; i++) {
		free(kept[i]);
		sink = malloc(48);
		free(sink);
	}
	/* Allocate again, after the preload's destructor may have run. */
	kept[0] = strdup("still allocating at exit");
}

static void tsd_destructor(void *p)
{
	free(p);
	sink = calloc(3, 100);
	free(sink);
}

static void *short_thread(void *arg)
{
	(void)arg;
	pthread_setspecific(key, malloc(1000));
	for (int i = 0; i < 1000; i++) {
		sink = malloc(16 + (size_t)i);
		free(sink);
	}
	return NULL;
}

static void *endless_thread(void *arg)
{
	(void)arg;
	pthread_setspecific(key, malloc(500));
	for (;;) {
		void *p = malloc(64);
		sink = p;
		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;

	pthread_key_create(&key, tsd_destructor);
	atexit(free_kept_at_exit);
	if (memprof_start(1.0, 16, &checking_tracker) != 0)
		return 1;
	for (int i = 0; i < KEEP; i++)
		kept[i] = malloc(32 + (size_t)i);
	for (int i = 0; i < 8; i++) {
		pthread_create(&t, NULL, short_thread, NULL);
		pthread_join(t, NULL);
	}
	pthread_create(&t, NULL, endless_thread, NULL);
	pthread_detach(t);
	pthread_setspecific(key, malloc(200));
	printf("order_errors=%llu\n", (unsigned long long)tracker_counts.order_errors);
	fflush(stdout);
	return 0; /* still sampling */
}
