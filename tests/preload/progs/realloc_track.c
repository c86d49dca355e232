/*
 * realloc as the tracker sees it, at rate 1: a free of the old block and an
 * allocation of the new one; a failed realloc changes nothing.  Events are
 * kept in an array and printed after the profile stops.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memprof.h"

#define MAX_EVENTS 64

static char events[MAX_EVENTS][32];
static int n_events;
static int next_record = 1;

static void note(const char *what, long a)
{
	if (n_events < MAX_EVENTS)
		snprintf(events[n_events++], sizeof(events[0]), "%s%ld", what, a);
}

static int on_alloc(void *arg, const memprof_allocation *info, memprof_value *out)
{
	(void)arg;
	/* Rate 1 per word is 1/8 per byte: at most one sample per requested byte. */
	note(info->n_samples >= 1 && info->n_samples <= 8 * info->size ? "alloc:" : "inexact:",
	     (long)info->size);
	*out = (memprof_value)next_record++;
	return 0;
}

static int on_dealloc(void *arg, memprof_value v)
{
	(void)arg;
	note("dealloc:#", (long)v);
	return 0;
}

/* Keep tracking through promotions (a NULL promote would end it). */
static int on_promote(void *arg, memprof_value minor, memprof_value *major)
{
	(void)arg;
	*major = minor;
	return 0;
}

static const memprof_tracker tracker = {
    .alloc_minor = on_alloc,
    .alloc_major = on_alloc,
    .promote = on_promote,
    .dealloc_minor = on_dealloc,
    .dealloc_major = on_dealloc,
};

int main(void)
{
	if (memprof_start(1.0, 0, &tracker) != 0)
		return 1;
	volatile size_t half = SIZE_MAX / 2;
	/* Sampled at 1/8 per byte, these sizes are missed with probability
	 * (7/8)^200 = 2.6e-12 at most. */
	char *p = malloc(200);	    /* #1, 25 words */
	char *q = realloc(p, 1000); /* #1 dies, #2: 125 words */
	char *volatile kept = q;
	char *r = realloc(q, half);   /* fails: nothing */
	char *s = realloc(NULL, 400); /* #3, 50 words */
	char *t = realloc(s, 0);      /* #3 dies */
	free(kept);		      /* #2 dies */
	memprof_stop();
	printf("failed=%d zero=%d\n", r == NULL, t == NULL);
	printf("events=");
	for (int i = 0; i < n_events; i++)
		printf("%s%s", i ? " " : "", events[i]);
	printf("\n");
	return 0;
}
