/*
 * Per-site byte totals from two tracers of the same program: heaptrack's
 * raw data (every allocation, exact) and memprof-bpf's folded stacks
 * (sampled estimates).  A stack's site is its innermost named frame that
 * is not an allocator wrapper (no "alloc" in its name, any case): both
 * tools see the same return addresses, so the same rule gives the same
 * sites.
 */
#ifndef PRELOAD_SITES_COMPARE_H
#define PRELOAD_SITES_COMPARE_H

#define SITES_MAX 512

struct site_totals {
	int n;
	char *name[SITES_MAX];
	double exact[SITES_MAX];    /* bytes, heaptrack */
	double estimate[SITES_MAX]; /* bytes, memprof-bpf */
};

/* Add heaptrack's data file (.zst or .gz); 0, or -1 if unreadable. */
int sites_add_heaptrack(struct site_totals *t, const char *path);
/* Add a folded file's weights as estimates; 0, or -1 if unreadable. */
int sites_add_folded(struct site_totals *t, const char *path);
double sites_total_exact(const struct site_totals *t);

#endif
