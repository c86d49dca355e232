/* Build the symbolized profile, shared by every output format. */
#include "profile.h"

#include "peak.h"
#include "memprof_probe_abi.h"
#include "heap_idmap.h"

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

int profile_build(struct profile *p, const struct memprof_stack *stacks, const __u64 *frames,
		  uint64_t n_frames, const struct memprof_stack_agg *aggs, uint32_t n,
		  struct dsym *dsym, const struct profile_meta *meta)
{
	struct profile_part part = {.pid = meta->pid,
				    .stacks = stacks,
				    .frames = frames,
				    .n_frames = n_frames,
				    .aggs = aggs,
				    .n = n,
				    .dsym = dsym};

	return profile_build_parts(p, &part, 1, meta);
}

/* A Python frame entry (memprof_probe_abi.h), not a return address. */
static int is_python_frame(uint64_t entry)
{
	return (entry & MEMPROF_PROBE_STACK_OCAML) &&
	       MEMPROF_PROBE_STACK_FMT(entry) == MEMPROF_PROBE_PY_FRAME_V1;
}

/* The addresses of one part's frames: keys of set, and 0 apart. */
struct part_pcs {
	struct idmap set;
	int has_zero;
};

struct profile_pcs {
	struct part_pcs parts[PROFILE_MAX_PARTS];
	size_t n_parts;
};

static int pcs_add(struct part_pcs *set, uint64_t pc)
{
	uint64_t v;

	if (!pc) {
		set->has_zero = 1;
		return 0;
	}
	if (idmap_get(&set->set, pc, &v))
		return 0;
	return idmap_insert(&set->set, pc, 0);
}

/*
 * The stacks of part with some weight, into p (set NULL), or only the
 * addresses of the frames they keep, into set (p is then read for its
 * meta alone).  -1 when out of memory.
 */
static int add_part(struct profile *p, const struct profile_part *part, size_t part_index,
		    struct part_pcs *set)
{
	int build = !set;

	const struct memprof_stack *stacks = part->stacks;
	const struct memprof_stack_agg *aggs = part->aggs;
	struct dsym *dsym = part->dsym;
	uint32_t n = part->n;
	struct profile_stack scratch;

	for (uint32_t id = 0; id < n; id++) {
		const struct memprof_stack *st = &stacks[id];
		struct profile_stack *s = build ? &p->stacks[p->n_stacks] : &scratch;
		uint32_t depth = st->len > MEMPROF_STACK_DEPTH ? MEMPROF_STACK_DEPTH : st->len;
		const __u64 *pcs = part->frames + st->first_frame;
		int any = 0;

		/* Not possible by the tracer's invariant (tracer.h): a stack's
		 * frames are in the part's arena. */
		if ((uint64_t)st->first_frame + depth > part->n_frames)
			depth = 0;

		for (int v = 0; v < MEMPROF_N_VIEWS; v++) {
			if (v < MEMPROF_N_KERNEL_VIEWS) {
				/* Live is raised and lowered concurrently: read it as signed. */
				s->bytes[v] = (int64_t)aggs[id].bytes[v];
				s->samples[v] = (int64_t)aggs[id].samples[v];
				s->objects[v] = (double)(int64_t)aggs[id].objects_q16[v] / 65536.0;
			} else if (v == MEMPROF_VIEW_PEAK && id < part->n_peak) {
				s->bytes[v] = part->peak[id].bytes;
				s->samples[v] = part->peak[id].samples;
				s->objects[v] = (double)part->peak[id].objects_q16 / 65536.0;
			} else {
				s->bytes[v] = s->samples[v] = 0, s->objects[v] = 0;
			}
			if (s->bytes[v] <= 0 || s->samples[v] <= 0)
				s->bytes[v] = s->samples[v] = 0, s->objects[v] = 0;
			any |= s->bytes[v] > 0;
		}
		if (!any)
			continue;
		/* The allocating domain: the outermost entry, not a frame. */
		s->domain = 0;
		s->domain_root[0] = '\0';
		if (depth && MEMPROF_PROBE_STACK_IS_DOMAIN(pcs[depth - 1])) {
			depth--;
			s->domain = (int)(pcs[depth] & 0xffffu) + 1;
			if (p->meta.names & PROFILE_NAME_BY_DOMAIN)
				snprintf(s->domain_root, sizeof(s->domain_root), "domain %d",
					 s->domain - 1);
		}
		s->frames = build ? calloc(depth ? depth : 1, sizeof(*s->frames)) : NULL;
		if (build && !s->frames)
			return -1;
		uint32_t kept = 0;
		int python_seen = 0;
		for (uint32_t i = 0; i < depth; i++) {
			int python = is_python_frame(pcs[i]);
			const struct dsym_frame *f;

			/* Past the innermost Python frame, native ones only with --native. */
			if (python_seen && !python && !(p->meta.names & PROFILE_NAME_NATIVE))
				continue;
			python_seen |= python;
			if (!build) {
				if (pcs_add(set, pcs[i]))
					return -1;
				continue;
			}
			f = dsym_frame(dsym, pcs[i]);
			if (!f && !dsym_released(dsym))
				return -1;
			if (!f) {
				/* Not among the addresses resolved before the readers
				 * went: the stack gained weight after they were read
				 * (the kernel side freezes its views at the detach, so
				 * this is not expected).  Its frames are unknown. */
				kept = 0;
				break;
			}
			s->frames[kept++] = f;
		}
		if (!build)
			continue;
		s->n_frames = kept;
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
		if (add_part(p, &p->parts[i], i, NULL))
			return -1;
	return 0;
}

struct profile_pcs *profile_collect_pcs(const struct profile_part *parts, size_t n_parts,
					const struct profile_meta *meta)
{
	struct profile p = {.meta = *meta};
	struct profile_pcs *pcs = calloc(1, sizeof(*pcs));

	if (!pcs)
		return NULL;
	pcs->n_parts = n_parts < PROFILE_MAX_PARTS ? n_parts : PROFILE_MAX_PARTS;
	for (size_t i = 0; i < pcs->n_parts; i++)
		idmap_init(&pcs->parts[i].set, &heap_idmap_allocator, 1024);
	for (size_t i = 0; i < pcs->n_parts; i++)
		if (add_part(&p, &parts[i], i, &pcs->parts[i])) {
			profile_pcs_free(pcs);
			return NULL;
		}
	return pcs;
}

int profile_resolve_pcs(const struct profile_part *parts, size_t n_parts,
			const struct profile_pcs *pcs)
{
	for (size_t i = 0; i < n_parts && i < pcs->n_parts; i++) {
		const struct part_pcs *set = &pcs->parts[i];

		if (set->has_zero && !dsym_frame(parts[i].dsym, 0))
			return -1;
		for (size_t k = 0; k < set->set.n_slots; k++)
			if (set->set.slots[k].key &&
			    !dsym_frame(parts[i].dsym, set->set.slots[k].key))
				return -1;
	}
	return 0;
}

void profile_pcs_free(struct profile_pcs *pcs)
{
	if (!pcs)
		return;
	for (size_t i = 0; i < pcs->n_parts; i++)
		idmap_clear(&pcs->parts[i].set);
	free(pcs);
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

size_t profile_stack_entries(const struct profile_stack *s, struct profile_name *out, size_t max)
{
	size_t n = 0;

	if (!s->n_frames)
		out[n++] = (struct profile_name){PROFILE_UNKNOWN_STACK, NULL, NULL};
	/* Room for the root markers. */
	if (max && (s->flags & (MEMPROF_STACK_F_INNER | MEMPROF_STACK_F_CUT)))
		max--;
	if (max && s->root)
		max--;
	if (max && s->domain_root[0])
		max--;
	for (size_t i = 0; i < s->n_frames; i++)
		for (size_t j = 0; j < s->frames[i]->n_lines && n < max; j++)
			out[n++] = (struct profile_name){s->frames[i]->lines[j].function,
							 &s->frames[i]->lines[j], s->frames[i]};
	if (s->flags & MEMPROF_STACK_F_INNER)
		out[n++] = (struct profile_name){PROFILE_INNER_STACK, NULL, NULL};
	else if (s->flags & MEMPROF_STACK_F_CUT)
		out[n++] = (struct profile_name){PROFILE_CUT_STACK, NULL, NULL};
	if (s->domain_root[0])
		out[n++] = (struct profile_name){s->domain_root, NULL, NULL};
	if (s->root)
		out[n++] = (struct profile_name){s->root, NULL, NULL};
	return n;
}

size_t profile_stack_names(const struct profile_stack *s, const char **names, size_t max)
{
	struct profile_name e[PROFILE_MAX_NAMES];
	size_t n = profile_stack_entries(s, e, max < PROFILE_MAX_NAMES ? max : PROFILE_MAX_NAMES);

	for (size_t i = 0; i < n; i++)
		names[i] = e[i].name;
	return n;
}

/* Is name[i] the '<' or '>' of an operator's name (operator<, operator<<=, operator->)? */
static int in_operator(const char *name, size_t i)
{
	size_t k = i;

	while (k > 0 && strchr("<>=-", name[k - 1]))
		k--;
	return k >= 8 && !strncmp(name + k - 8, "operator", 8);
}

/* name with its template arguments as <...>, into out (at most len - 1 bytes). */
static size_t short_name(const char *name, char *out, size_t len)
{
	size_t o = 0;
	int depth = 0;

	for (size_t i = 0; name[i] && o + 1 < len; i++) {
		char c = name[i];

		if ((c == '<' || c == '>') && in_operator(name, i)) {
			if (!depth)
				out[o++] = c;
			continue;
		}
		if (c == '<') {
			if (!depth++) {
				out[o++] = '<';
				for (const char *d = "..."; *d && o + 1 < len; d++)
					out[o++] = *d;
			}
			continue;
		}
		if (c == '>' && depth) {
			if (!--depth && o + 1 < len)
				out[o++] = '>';
			continue;
		}
		if (!depth)
			out[o++] = c;
	}
	out[o] = '\0';
	return o;
}

void profile_name_format(const char *name, const char *file, int line, unsigned flags, char *buf,
			 size_t len)
{
	size_t o;

	if (!len)
		return;
	if (flags & PROFILE_NAME_SHORT)
		o = short_name(name, buf, len);
	else
		o = (size_t)snprintf(buf, len, "%s", name);
	if (o >= len)
		o = len - 1;
	if ((flags & PROFILE_NAME_LINES) && file && line > 0)
		snprintf(buf + o, len - o, " (%s:%d)", file, line);
}

char *profile_name_dup(const struct profile_name *n, unsigned flags)
{
	size_t len = strlen(n->name) + 32 + (n->line && n->line->file ? strlen(n->line->file) : 0);
	char *out = malloc(len);

	if (out)
		profile_name_format(n->name, n->line ? n->line->file : NULL,
				    n->line ? n->line->line : 0, flags, out, len);
	return out;
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
