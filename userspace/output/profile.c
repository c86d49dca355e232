/* Build the symbolized profile, shared by every output format. */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const memprof_view_names[MEMPROF_N_VIEWS] = MEMPROF_VIEW_NAMES;

int memprof_view_parse(const char *s)
{
	for (int v = 0; v < MEMPROF_N_VIEWS; v++)
		if (!strcmp(s, memprof_view_names[v]))
			return v;
	return -1;
}

int profile_build(struct profile *p, const struct memprof_stack *stacks,
		  const struct memprof_stack_agg *aggs, uint32_t n, struct dsym *dsym,
		  const struct profile_meta *meta)
{
	struct profile_part part = {
	    .pid = meta->pid, .stacks = stacks, .aggs = aggs, .n = n, .dsym = dsym};

	return profile_build_parts(p, &part, 1, meta);
}

static int add_part(struct profile *p, size_t part_index)
{
	const struct profile_part *part = &p->parts[part_index];
	const struct memprof_stack *stacks = part->stacks;
	const struct memprof_stack_agg *aggs = part->aggs;
	struct dsym *dsym = part->dsym;
	uint32_t n = part->n;

	for (uint32_t id = 0; id < n; id++) {
		const struct memprof_stack *st = &stacks[id];
		struct profile_stack *s = &p->stacks[p->n_stacks];
		uint32_t depth = st->len > MEMPROF_STACK_DEPTH ? MEMPROF_STACK_DEPTH : st->len;
		int any = 0;

		for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
			/* Live is raised and lowered concurrently: read it as signed. */
			s->bytes[v] = (int64_t)aggs[id].bytes[v];
			s->samples[v] = (int64_t)aggs[id].samples[v];
			s->objects[v] = (double)(int64_t)aggs[id].objects_q16[v] / 65536.0;
			if (s->bytes[v] <= 0 || s->samples[v] <= 0)
				s->bytes[v] = s->samples[v] = 0, s->objects[v] = 0;
			any |= s->bytes[v] > 0;
		}
		if (!any)
			continue;
		s->frames = calloc(depth ? depth : 1, sizeof(*s->frames));
		if (!s->frames)
			return -1;
		for (uint32_t i = 0; i < depth; i++) {
			s->frames[i] = dsym_frame(dsym, st->pcs[i]);
			if (!s->frames[i])
				return -1;
		}
		s->n_frames = depth;
		s->flags = st->flags;
		s->part = part_index;
		s->root = p->n_parts > 1 ? part->root : NULL;
		s->id = id;
		for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
			p->total_bytes[v] += s->bytes[v];
			p->total_samples[v] += s->samples[v];
			p->total_objects[v] += s->objects[v];
		}
		p->n_stacks++;
	}
	return 0;
}

int profile_build_parts(struct profile *p, const struct profile_part *parts, size_t n_parts,
			const struct profile_meta *meta)
{
	size_t total = 0;

	memset(p, 0, sizeof(*p));
	p->meta = *meta;
	if (n_parts > PROFILE_MAX_PARTS)
		n_parts = PROFILE_MAX_PARTS;
	for (size_t i = 0; i < n_parts; i++) {
		p->parts[i] = parts[i];
		if (!p->parts[i].root[0])
			snprintf(p->parts[i].root, sizeof(p->parts[i].root), "? (%d)",
				 (int)parts[i].pid);
		total += parts[i].n;
	}
	p->n_parts = n_parts;
	p->dsym = n_parts ? parts[0].dsym : NULL;
	p->stacks = calloc(total ? total : 1, sizeof(*p->stacks));
	if (!p->stacks)
		return -1;
	for (size_t i = 0; i < n_parts; i++)
		if (add_part(p, i))
			return -1;
	return 0;
}

void profile_process_name(pid_t pid, char *buf, size_t len)
{
	char path[64], comm[32] = "?";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	for (char *c = comm; *c; c++)
		if (*c == ';')
			*c = ':';
	snprintf(buf, len, "%s (%d)", comm, (int)pid);
}

void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->n_stacks; i++) {
		free(p->stacks[i].frames);
		free(p->stacks[i].life);
	}
	free(p->stacks);
	p->stacks = NULL;
	p->n_stacks = 0;
}

size_t profile_stack_names(const struct profile_stack *s, const char **names, size_t max)
{
	size_t n = 0;

	if (!s->n_frames)
		names[n++] = PROFILE_UNKNOWN_STACK;
	/* Room for the root markers. */
	if (max && (s->flags & (MEMPROF_STACK_F_INNER | MEMPROF_STACK_F_CUT)))
		max--;
	if (max && s->root)
		max--;
	for (size_t i = 0; i < s->n_frames; i++)
		for (size_t j = 0; j < s->frames[i]->n_lines && n < max; j++)
			names[n++] = s->frames[i]->lines[j].function;
	if (s->flags & MEMPROF_STACK_F_INNER)
		names[n++] = PROFILE_INNER_STACK;
	else if (s->flags & MEMPROF_STACK_F_CUT)
		names[n++] = PROFILE_CUT_STACK;
	if (s->root)
		names[n++] = s->root;
	return n;
}

double profile_bytes_per_sample(const struct profile *p, int64_t bytes, int64_t samples)
{
	if (samples > 0)
		return (double)bytes / (double)samples;
	return p->meta.rate > 0 ? 8.0 / p->meta.rate : 0;
}

void poisson_interval95(double n, double *lo, double *hi)
{
	const double z = 1.959963984540054;

	if (n <= 0) {
		*lo = 0;
		*hi = -log(0.025); /* P(0 events) = 2.5% */
		return;
	}
	*lo = n * pow(1 - 1 / (9 * n) - z / (3 * sqrt(n)), 3);
	if (*lo < 0)
		*lo = 0;
	*hi = (n + 1) * pow(1 - 1 / (9 * (n + 1)) + z / (3 * sqrt(n + 1)), 3);
}
