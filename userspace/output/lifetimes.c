/* Lifetimes per stack and per site: percentiles, CSV, text histograms. */
#include "lifetimes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "site.h"

/* Quantiles every output gives. */
static const double quantiles[] = {0.5, 0.9, 0.99};
static const char *const quantile_names[] = {"p50", "p90", "p99"};
#define N_QUANTILES 3
/* Width of a histogram bar in characters. */
#define BAR_WIDTH 40

uint32_t lifetime_slot(uint64_t us)
{
	uint32_t slot = 0;

	while (us) { /* floor(log2(us)) + 1 */
		slot++;
		us >>= 1;
	}
	return slot < MEMPROF_LIFETIME_SLOTS ? slot : MEMPROF_LIFETIME_SLOTS - 1;
}

void lifetime_slot_range(uint32_t slot, uint64_t *lo, uint64_t *hi)
{
	*lo = slot ? 1ull << (slot - 1) : 0;
	*hi = slot + 1 < MEMPROF_LIFETIME_SLOTS ? 1ull << slot : 0;
}

void lifetime_dist_merge(struct lifetime_dist *to, const struct lifetime_dist *from)
{
	uint64_t had_live = lifetime_dist_live(to), from_live = lifetime_dist_live(from);

	for (int s = 0; s < MEMPROF_LIFETIME_SLOTS; s++) {
		for (int k = 0; k < MEMPROF_N_DEATHS; k++)
			to->died[k][s] += from->died[k][s];
		to->live[s] += from->live[s];
	}
	if (!from_live)
		return;
	if (!had_live || from->youngest_live_us < to->youngest_live_us)
		to->youngest_live_us = from->youngest_live_us;
	if (from->oldest_live_us > to->oldest_live_us)
		to->oldest_live_us = from->oldest_live_us;
}

uint64_t lifetime_dist_died(const struct lifetime_dist *d, int kind)
{
	uint64_t n = 0;

	for (int k = 0; k < MEMPROF_N_DEATHS; k++)
		if (kind < 0 || kind == k)
			for (int s = 0; s < MEMPROF_LIFETIME_SLOTS; s++)
				n += d->died[k][s];
	return n;
}

uint64_t lifetime_dist_live(const struct lifetime_dist *d)
{
	uint64_t n = 0;

	for (int s = 0; s < MEMPROF_LIFETIME_SLOTS; s++)
		n += d->live[s];
	return n;
}

static uint64_t slot_count(const struct lifetime_dist *d, int s)
{
	return d->died[MEMPROF_DIED_YOUNG][s] + d->died[MEMPROF_DIED_OLD][s] + d->live[s];
}

int lifetime_quantile(const struct lifetime_dist *d, double q, double *ms)
{
	uint64_t total = lifetime_dist_died(d, -1) + lifetime_dist_live(d), seen = 0,
		 live_below = 0;
	double rank = q * (double)total;

	*ms = 0;
	if (!total)
		return -1;
	for (int s = 0; s < MEMPROF_LIFETIME_SLOTS; s++) {
		uint64_t c = slot_count(d, s), lo, hi;

		live_below += d->live[s];
		if (!c || (double)(seen + c) < rank) {
			seen += c;
			continue;
		}
		lifetime_slot_range((uint32_t)s, &lo, &hi);
		/*
		 * A slot of still-live blocks alone: their exact ages bound it, so a
		 * lower bound never claims more than the oldest age seen.
		 */
		if (c == d->live[s]) {
			if (d->youngest_live_us > lo)
				lo = d->youngest_live_us;
			if (!hi || d->oldest_live_us + 1 < hi)
				hi = d->oldest_live_us + 1;
			if (hi < lo)
				hi = lo;
		}
		if (hi)
			*ms = ((double)lo + (double)(hi - lo) * (rank - (double)seen) / (double)c) /
			      1000.0;
		else
			*ms = (double)lo / 1000.0;
		return live_below ? 1 : 0;
	}
	return -1; /* not reached: the counts add up to total */
}

/* The stacks' lifetimes of one part, by stack id (NULL: none in the profile). */
struct by_id {
	struct lifetime_dist **life;
	uint32_t n;
};

static void hist_of(void *arg, uint32_t stack_id, const struct memprof_lifetime_counts *h)
{
	const struct by_id *b = arg;

	if (stack_id < b->n && b->life[stack_id])
		memcpy(b->life[stack_id]->died, h->slots, sizeof(b->life[stack_id]->died));
}

/* The lifetimes of the stacks of part k of p. */
static int attach_part(struct profile *p, size_t k, const struct lifetime_input *in)
{
	struct lifetime_dist **by_id;
	uint32_t n = in->n_stacks;
	struct by_id b;

	by_id = calloc(n ? n : 1, sizeof(*by_id));
	if (!by_id)
		return -1;
	for (size_t i = 0; i < p->n_stacks; i++) {
		struct profile_stack *s = &p->stacks[i];

		if (s->part != k || s->life || s->id >= n)
			continue;
		s->life = calloc(1, sizeof(*s->life));
		if (!s->life) {
			free(by_id);
			return -1;
		}
		by_id[s->id] = s->life;
	}
	b = (struct by_id){by_id, n};
	/* A reader that fails says so itself; the stacks keep their live ages. */
	in->read_hists(in->read_ctx, hist_of, &b);
	for (size_t i = 0; i < in->n_blocks; i++) {
		const struct memprof_block *b = &in->blocks[i].b;
		struct lifetime_dist *d = b->stack_id < n ? by_id[b->stack_id] : NULL;
		uint64_t age_us;

		if (!d)
			continue;
		age_us = in->now_ns > b->alloc_ns ? (in->now_ns - b->alloc_ns) / 1000 : 0;
		if (!lifetime_dist_live(d) || age_us < d->youngest_live_us)
			d->youngest_live_us = age_us;
		if (age_us > d->oldest_live_us)
			d->oldest_live_us = age_us;
		d->live[lifetime_slot(age_us)] += b->n_samples;
	}
	free(by_id);
	return 0;
}

int lifetimes_attach(struct profile *p, const struct lifetime_input *in, size_t n_in)
{
	for (size_t k = 0; k < n_in && k < p->n_parts; k++)
		if (in[k].read_hists && attach_part(p, k, &in[k]))
			return -1;
	return 0;
}

void lifetime_site_label(const struct profile *p, size_t part, const char *site, char *buf,
			 size_t len)
{
	if (p->n_parts > 1 && part < p->n_parts)
		snprintf(buf, len, "%s [%s]", site, p->parts[part].root);
	else
		snprintf(buf, len, "%s", site);
}

/* A duration in microseconds, in the unit that suits it. */
static void human_us(char *buf, size_t len, double us)
{
	if (us < 1000)
		snprintf(buf, len, "%.0f us", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.3g ms", us / 1e3);
	else if (us < 600e6)
		snprintf(buf, len, "%.3g s", us / 1e6);
	else
		snprintf(buf, len, "%.3g min", us / 60e6);
}

void lifetime_summary(const struct lifetime_dist *d, char *buf, size_t len)
{
	size_t o = 0;
	uint64_t live = lifetime_dist_live(d);

	if (!len)
		return;
	buf[0] = '\0';
	if (lifetime_dist_died(d, -1) + live == 0) {
		snprintf(buf, len, "lifetime unknown (no tracked block)");
		return;
	}
	o += (size_t)snprintf(buf + o, len - o, "lifetime");
	for (int i = 0; i < N_QUANTILES && o < len; i++) {
		double ms;
		char t[32];
		int lower = lifetime_quantile(d, quantiles[i], &ms);

		human_us(t, sizeof(t), ms * 1e3);
		o += (size_t)snprintf(buf + o, len - o, "%s %s %s%s", i ? "," : "",
				      quantile_names[i], lower ? ">= " : "", t);
	}
	if (live && o < len) {
		char t[32];

		human_us(t, sizeof(t), (double)d->youngest_live_us);
		snprintf(buf + o, len - o, "; %llu samples still live, each >= %s old",
			 (unsigned long long)live, t);
	}
}

static int lifetime_site_cmp(const void *a, const void *b)
{
	const struct lifetime_site *x = a, *y = b;
	struct site sx = {x->name, x->file, x->line}, sy = {y->name, y->file, y->line};
	uint64_t nx = lifetime_dist_died(&x->d, -1) + lifetime_dist_live(&x->d);
	uint64_t ny = lifetime_dist_died(&y->d, -1) + lifetime_dist_live(&y->d);

	if (nx != ny)
		return nx < ny ? 1 : -1;
	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	return site_compare(&sx, &sy);
}

struct lifetime_site *lifetime_sites(const struct profile *p, size_t *n_out)
{
	struct lifetime_site *sites = calloc(p->n_stacks ? p->n_stacks : 1, sizeof(*sites));
	size_t n = 0;

	if (!sites)
		return NULL;
	for (size_t i = 0; i < p->n_stacks; i++) {
		const struct profile_stack *s = &p->stacks[i];
		struct site st;
		size_t j;

		if (!s->life || lifetime_dist_died(s->life, -1) + lifetime_dist_live(s->life) == 0)
			continue;
		st = site_of_stack_site(s);
		for (j = 0; j < n; j++) {
			struct site sj = {sites[j].name, sites[j].file, sites[j].line};

			if (sites[j].part == s->part && !site_compare(&sj, &st))
				break;
		}
		if (j == n) {
			sites[n].part = s->part;
			sites[n].file = st.file;
			sites[n].line = st.line;
			sites[n++].name = st.name;
		}
		lifetime_dist_merge(&sites[j].d, s->life);
	}
	qsort(sites, n, sizeof(*sites), lifetime_site_cmp);
	*n_out = n;
	return sites;
}

void csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

int lifetimes_csv_write(FILE *out, const struct profile *p)
{
	size_t n;
	struct lifetime_site *sites = lifetime_sites(p, &n);

	if (!sites)
		return -1;
	/*
	 * bound_from: the first percentile that is only a lower bound (blocks
	 * still alive at or below it), "none" if all are exact to their slot.
	 */
	fprintf(out, LIFETIMES_CSV_HEADER ",died_young,died_old,bound_from,youngest_live_ms,"
					  "oldest_live_ms,pid,file,line\n");
	for (size_t i = 0; i < n; i++) {
		const struct lifetime_dist *d = &sites[i].d;
		uint64_t live = lifetime_dist_live(d);
		const char *bound = "none";
		char name[LIFETIME_LABEL_LEN];

		profile_name_format(sites[i].name, NULL, 0, p->meta.names & PROFILE_NAME_SHORT,
				    name, sizeof(name));
		csv_field(out, name);
		fprintf(out, ",%llu",
			(unsigned long long)(lifetime_dist_died(d, -1) + lifetime_dist_live(d)));
		for (int q = 0; q < N_QUANTILES; q++) {
			double ms;
			int lower = lifetime_quantile(d, quantiles[q], &ms);

			if (lower > 0 && !strcmp(bound, "none"))
				bound = quantile_names[q];
			fprintf(out, ",%.3f", ms);
		}
		fprintf(out, ",%llu,%llu,%llu,%s", (unsigned long long)live,
			(unsigned long long)lifetime_dist_died(d, MEMPROF_DIED_YOUNG),
			(unsigned long long)lifetime_dist_died(d, MEMPROF_DIED_OLD), bound);
		if (live)
			fprintf(out, ",%.3f,%.3f", (double)d->youngest_live_us / 1e3,
				(double)d->oldest_live_us / 1e3);
		else
			fprintf(out, ",,");
		fprintf(out, ",%d,", (int)p->parts[sites[i].part].pid);
		if (sites[i].file)
			csv_field(out, sites[i].file);
		if (sites[i].line > 0)
			fprintf(out, ",%d\n", sites[i].line);
		else
			fprintf(out, ",\n");
	}
	free(sites);
	return ferror(out) ? -1 : 0;
}

int lifetimes_text_table(FILE *out, const struct profile *p)
{
	size_t n;
	struct lifetime_site *sites = lifetime_sites(p, &n);

	if (!sites)
		return -1;
	fprintf(out, "\n== lifetimes (sampled blocks from sample to death; \">=\": a lower bound, "
		     "blocks still alive at the end)\n");
	fprintf(out, "%8s  %8s  %8s  %8s  %13s  %13s  %13s  %s\n", "samples", "young", "old",
		"live", "p50", "p90", "p99", "site");
	for (size_t i = 0; i < n; i++) {
		const struct lifetime_dist *d = &sites[i].d;
		char cell[N_QUANTILES][40], label[LIFETIME_LABEL_LEN], name[LIFETIME_LABEL_LEN];
		struct site st = {sites[i].name, sites[i].file, sites[i].line};

		site_format(&st, p->meta.names, name, sizeof(name));
		lifetime_site_label(p, sites[i].part, name, label, sizeof(label));
		for (int q = 0; q < N_QUANTILES; q++) {
			double ms;
			char t[32];
			int lower = lifetime_quantile(d, quantiles[q], &ms);

			human_us(t, sizeof(t), ms * 1e3);
			snprintf(cell[q], sizeof(cell[q]), "%s%s", lower > 0 ? ">=" : "", t);
		}
		fprintf(out, "%8llu  %8llu  %8llu  %8llu  %13s  %13s  %13s  %s\n",
			(unsigned long long)(lifetime_dist_died(d, -1) + lifetime_dist_live(d)),
			(unsigned long long)lifetime_dist_died(d, MEMPROF_DIED_YOUNG),
			(unsigned long long)lifetime_dist_died(d, MEMPROF_DIED_OLD),
			(unsigned long long)lifetime_dist_live(d), cell[0], cell[1], cell[2],
			label);
	}
	if (!n)
		fprintf(out, "    (no tracked block)\n");
	free(sites);
	return ferror(out) ? -1 : 0;
}

/* A slot's bounds as "lo -> hi" in fixed-width human units. */
static void slot_label(char *buf, size_t len, uint32_t slot)
{
	uint64_t lo, hi;
	char a[32], b[32];

	lifetime_slot_range(slot, &lo, &hi);
	human_us(a, sizeof(a), (double)lo);
	if (hi) {
		human_us(b, sizeof(b), (double)hi);
		snprintf(buf, len, "%9s .. %-9s", a, b);
	} else {
		snprintf(buf, len, "%9s .. %-9s", a, "");
	}
}

int lifetimes_hist_write(FILE *out, const struct profile *p, size_t top)
{
	size_t n;
	struct lifetime_site *sites = lifetime_sites(p, &n);

	if (!sites)
		return -1;
	for (size_t i = 0; i < n && i < top; i++) {
		const struct lifetime_dist *d = &sites[i].d;
		int first = -1, last = -1;
		uint64_t max = 0;
		char sum[256], label[LIFETIME_LABEL_LEN];

		for (int s = 0; s < MEMPROF_LIFETIME_SLOTS; s++) {
			uint64_t c = slot_count(d, s);

			if (c) {
				if (first < 0)
					first = s;
				last = s;
			}
			if (c > max)
				max = c;
		}
		lifetime_summary(d, sum, sizeof(sum));
		lifetime_site_label(p, sites[i].part, sites[i].name, label, sizeof(label));
		fprintf(out, "\nsite %s: %s\n", label, sum);
		fprintf(out, "  %-22s : %8s %8s %8s  %-*s\n", "lifetime", "young", "old", "live",
			BAR_WIDTH + 2, "distribution");
		for (int s = first; s >= 0 && s <= last; s++) {
			uint64_t c = slot_count(d, s);
			int stars = max ? (int)((c * BAR_WIDTH + max - 1) / max) : 0;
			char range[80];

			slot_label(range, sizeof(range), (uint32_t)s);
			fprintf(out, "  %-22s : %8llu %8llu %8llu  |", range,
				(unsigned long long)d->died[MEMPROF_DIED_YOUNG][s],
				(unsigned long long)d->died[MEMPROF_DIED_OLD][s],
				(unsigned long long)d->live[s]);
			for (int k = 0; k < BAR_WIDTH; k++)
				fputc(k < stars ? '*' : ' ', out);
			fputs("|\n", out);
		}
	}
	free(sites);
	return ferror(out) ? -1 : 0;
}
