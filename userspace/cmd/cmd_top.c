/*
 * memprof-bpf top PID: attached to one process, a view of its top
 * allocation sites refreshed every second: allocation rate over the last
 * second, live bytes with their 95% interval, and the shares of the
 * site's allocations that were promoted and that died young.  On a
 * terminal it redraws in place and reads keys (a, l, p, s sort by the
 * view of that name, q quits); otherwise it prints the table every second.
 * A sparkline shows each site's live bytes over its last SPARK_POINTS
 * refreshes.  On quit it writes -o FILE like attach.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cmd.h"
#include "output/folded.h"
#include "session/session.h"
#include "output/site.h"
#include "output/timeline.h"

#define REFRESH_S 1.0
/* Refreshes the live sparkline covers (one column each). */
#define SPARK_POINTS 16

static const char short_opts[] = ":d:o:n:vh";
static const struct option long_opts[] = {
    ATTACH_SHARED_LONG_OPTS,
    {"rows", required_argument, NULL, 'n'},
    {"sort", required_argument, NULL, OPT_SORT},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memprof-bpf top PID [--rate R] [-n N] [--sort alloc|live|promoted|short]\n"
		"                       [-d SECONDS] [-o FILE [--format F] [--view V]] [-v]\n"
		"Attaches to PID and shows its top allocation sites, refreshed every second:\n"
		"ALLOC/s (estimated bytes allocated per second over the last second), LIVE\n"
		"(estimated bytes still alive, with its 95%% interval), PROM%% and SHORT%% (the\n"
		"shares of the site's sampled allocations promoted and freed while young),\n"
		"LIVE TREND (a sparkline of LIVE over the last %d refreshes, scaled to its\n"
		"own peak).\n"
		"Keys on a terminal: a, l, p, s sort by alloc rate, live, promoted, short; q\n"
		"quits.  Without a terminal the table is printed every second.\n"
		"  -n, --rows N   sites shown (default 20)\n"
		"  --sort V       the first sort (default live)\n"
		"  -d SECONDS     quit after SECONDS\n"
		"  -o FILE        on quit, write the profile as attach does (--format, --view)\n"
		"  --rate R, --max-blocks N, --max-stacks N, --no-dwarf, --no-inject,\n"
		"  --inject-malloc, --preload LIB, --ready-file FILE, --skip-frames REGEX,\n"
		"  --lines, --short-names, --by-domain, --native, -v: as for attach\n",
		SPARK_POINTS);
}

struct site_row {
	const char *site; /* borrowed from the profile's dsym */
	double alloc, live, promoted, short_, rate;
	int64_t live_samples, alloc_samples;
};

struct prev_site {
	char *site;
	double alloc;
	double live[SPARK_POINTS]; /* live bytes at the last n_live refreshes, oldest first */
	size_t n_live;
};

struct top {
	struct session *s;
	const struct attach_opts *o;
	struct dsym *dsym;
	size_t dsym_regions;
	struct prev_site *prev;
	size_t n_prev;
	double prev_t;
	int sort, tty;
	struct termios saved;
};

static int row_by_site(const void *a, const void *b)
{
	return strcmp(((const struct site_row *)a)->site, ((const struct site_row *)b)->site);
}

static int sort_view;
static double key_of(const struct site_row *r)
{
	switch (sort_view) {
	case MEMPROF_VIEW_ALLOC:
		return r->rate;
	case MEMPROF_VIEW_PROMOTED:
		return r->promoted;
	case MEMPROF_VIEW_SHORT:
		return r->short_;
	default:
		return r->live;
	}
}

static int row_by_key(const void *a, const void *b)
{
	double x = key_of(a), y = key_of(b);

	return x < y ? 1 : x > y ? -1 : row_by_site(a, b);
}

static int prev_cmp(const void *key, const void *p)
{
	return strcmp(key, ((const struct prev_site *)p)->site);
}

static void human(char *buf, size_t len, double b)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

/*
 * Keep this refresh's alloc totals for the next rate, and its live bytes
 * after the site's last ones (rows sorted by site: so is the new array).
 */
static void keep_prev(struct top *t, const struct site_row *rows, size_t n)
{
	struct prev_site *v = calloc(n ? n : 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; v && i < n; i++) {
		const struct prev_site *old =
		    bsearch(rows[i].site, t->prev, t->n_prev, sizeof(*t->prev), prev_cmp);
		struct prev_site *p = &v[k];

		p->site = strdup(rows[i].site);
		if (!p->site)
			continue;
		p->alloc = rows[i].alloc;
		if (old) {
			size_t keep = old->n_live < SPARK_POINTS ? old->n_live : SPARK_POINTS - 1;

			memcpy(p->live, old->live + (old->n_live - keep), keep * sizeof(double));
			p->n_live = keep;
		}
		p->live[p->n_live++] = rows[i].live;
		k++;
	}
	for (size_t i = 0; i < t->n_prev; i++)
		free(t->prev[i].site);
	free(t->prev);
	t->prev = v;
	t->n_prev = v ? k : 0;
}

/* Cut s (UTF-8) after width characters. */
static void cut_columns(char *s, int width)
{
	int cols = 0;

	for (; *s; s++) {
		/* A character starts at every byte but the continuation bytes. */
		if (((unsigned char)*s & 0xc0) != 0x80 && cols++ == width) {
			*s = '\0';
			return;
		}
	}
}

static void draw(struct top *t, struct site_row *rows, size_t n, double rate_in_force)
{
	struct winsize ws = {0};
	unsigned long max_rows = t->o->rows;
	int width = 0;
	uint64_t samples, live, drops;
	double el = session_now() - t->s->start_mono;
	static const char *const sort_names[MEMPROF_N_KERNEL_VIEWS] = {"alloc rate", "live",
								       "promoted", "short"};
	char a[32], l[32], lo[32], hi[32], spark[SPARK_POINTS * 4 + 1];
	const char *nl = t->tty ? "\033[K\r\n" : "\n";

	if (t->tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row > 5) {
		if (max_rows > (unsigned long)ws.ws_row - 4)
			max_rows = ws.ws_row - 4;
		width = ws.ws_col;
	}
	session_totals(t->s, &samples, &live, &drops);
	if (t->tty)
		fputs("\033[H", stdout);
	printf("memprof-bpf top: %s, rate %g, %02d:%02d:%02d, %llu samples, %llu live blocks, "
	       "%llu drops%s",
	       t->s->procs[0].name, rate_in_force, (int)(el / 3600), (int)(el / 60) % 60,
	       (int)el % 60, (unsigned long long)samples, (unsigned long long)live,
	       (unsigned long long)drops, nl);
	printf("sort: %s   keys: a alloc rate, l live, p promoted, s short, q quit%s",
	       sort_names[t->sort], nl);
	printf("%11s  %10s  %-25s  %6s  %6s  %-*s  %s%s", "ALLOC/s", "LIVE", "[95% interval]",
	       "PROM%", "SHORT%", SPARK_POINTS, "LIVE TREND", "SITE", nl);
	for (size_t i = 0; i < n && i < max_rows; i++) {
		const struct site_row *r = &rows[i];
		double per = r->live_samples > 0 ? r->live / (double)r->live_samples
			     : rate_in_force > 0 ? 8.0 / rate_in_force
						 : 0;
		const struct prev_site *ps =
		    bsearch(r->site, t->prev, t->n_prev, sizeof(*t->prev), prev_cmp);
		double ilo, ihi;
		char line[1024];
		size_t cols = 0;
		int len;

		poisson_interval95((double)r->live_samples, &ilo, &ihi);
		human(a, sizeof(a), r->rate);
		human(l, sizeof(l), r->live);
		human(lo, sizeof(lo), ilo * per);
		human(hi, sizeof(hi), ihi * per);
		spark[0] = '\0';
		if (ps)
			cols = timeline_sparkline(ps->live, ps->n_live, SPARK_POINTS, spark,
						  sizeof(spark));
		/* The sparkline's characters are 3 bytes each: pad by columns. */
		len = snprintf(line, sizeof(line),
			       "%9s/s  %10s  [%10s, %10s]  %6.1f  %6.1f  %s%*s  %s", a, l, lo, hi,
			       r->alloc > 0 ? 100 * r->promoted / r->alloc : 0.0,
			       r->alloc > 0 ? 100 * r->short_ / r->alloc : 0.0, spark,
			       (int)(SPARK_POINTS - cols), "", r->site);
		if (width > 0 && len > width)
			cut_columns(line, width);
		printf("%s%s", line, nl);
	}
	if (!n)
		printf("    (nothing sampled yet)%s", nl);
	if (t->tty)
		fputs("\033[J", stdout);
	else
		putchar('\n');
	fflush(stdout);
}

/* One refresh: symbolize, aggregate by site, rates against the last one. */
static int refresh(struct top *t)
{
	struct traced *p = &t->s->procs[0];
	const struct proc_maps *maps = symbolizer_maps(p->sym);
	struct profile_meta meta = {.pid = p->pid, .rate = t->o->rate};
	struct site_row *rows;
	struct profile prof;
	double now = session_now(), dt = now - t->prev_t, rate = t->o->rate;
	size_t n = 0, k = 0;

	/* New mappings (dlopen): a fresh symbolization cache. */
	if (!t->dsym || maps->n != t->dsym_regions) {
		dsym_free(t->dsym);
		t->dsym = dsym_new(p->sym, t->o->no_dwarf ? DSYM_NO_DWARF : 0);
		t->dsym_regions = maps->n;
		if (!t->dsym)
			return -1;
	}
	if (profile_build(&prof, p->tr.stacks, p->tr.frames, p->tr.n_frames, p->tr.aggs,
			  tracer_n_stacks(&p->tr), t->dsym, &meta)) {
		profile_free(&prof);
		return -1;
	}
	if (prof.total_samples[MEMPROF_VIEW_ALLOC] > 0 && prof.total_bytes[MEMPROF_VIEW_ALLOC] > 0)
		rate = 8.0 * (double)prof.total_samples[MEMPROF_VIEW_ALLOC] /
		       (double)prof.total_bytes[MEMPROF_VIEW_ALLOC];
	rows = calloc(prof.n_stacks ? prof.n_stacks : 1, sizeof(*rows));
	if (!rows) {
		profile_free(&prof);
		return -1;
	}
	for (size_t i = 0; i < prof.n_stacks; i++) {
		const struct profile_stack *s = &prof.stacks[i];

		rows[n] = (struct site_row){.site = site_of_stack(s),
					    .alloc = (double)s->bytes[MEMPROF_VIEW_ALLOC],
					    .live = (double)s->bytes[MEMPROF_VIEW_LIVE],
					    .promoted = (double)s->bytes[MEMPROF_VIEW_PROMOTED],
					    .short_ = (double)s->bytes[MEMPROF_VIEW_SHORT],
					    .live_samples = s->samples[MEMPROF_VIEW_LIVE],
					    .alloc_samples = s->samples[MEMPROF_VIEW_ALLOC]};
		n++;
	}
	if (n)
		qsort(rows, n, sizeof(*rows), row_by_site);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(rows[k - 1].site, rows[i].site)) {
			rows[k - 1].alloc += rows[i].alloc;
			rows[k - 1].live += rows[i].live;
			rows[k - 1].promoted += rows[i].promoted;
			rows[k - 1].short_ += rows[i].short_;
			rows[k - 1].live_samples += rows[i].live_samples;
			rows[k - 1].alloc_samples += rows[i].alloc_samples;
			continue;
		}
		rows[k++] = rows[i];
	}
	n = k;
	for (size_t i = 0; i < n; i++) {
		const struct prev_site *ps =
		    bsearch(rows[i].site, t->prev, t->n_prev, sizeof(*t->prev), prev_cmp);
		double before = ps ? ps->alloc : 0;

		rows[i].rate = dt > 0 ? (rows[i].alloc - before) / dt : 0;
		if (rows[i].rate < 0)
			rows[i].rate = 0;
	}
	keep_prev(t, rows, n);
	t->prev_t = now;
	sort_view = t->sort;
	if (n)
		qsort(rows, n, sizeof(*rows), row_by_key);
	draw(t, rows, n, rate);
	free(rows);
	profile_free(&prof);
	return 0;
}

/* Wait up to ms for a key; returns it, 0 for none. */
static int read_key(const struct top *t, int ms)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	unsigned char c;

	if (!t->tty) {
		struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};

		nanosleep(&pause, NULL);
		return 0;
	}
	if (poll(&pfd, 1, ms) <= 0 || read(STDIN_FILENO, &c, 1) != 1)
		return 0;
	return c;
}

/* A key within one poll's time (0: none), the stack tables of s grown every
 * SESSION_GROW_MS meanwhile (session_grow). */
static int wait_key(const struct top *t, struct session *s)
{
	int steps = SESSION_POLL_MS / SESSION_GROW_MS, key = 0;

	for (int k = 0; k < steps && !key && !session_stop_requested; k++) {
		key = read_key(t, SESSION_GROW_MS);
		if (!key && k + 1 < steps)
			session_grow(s);
	}
	return key;
}

static int parse(int argc, char **argv, struct attach_opts *o)
{
	int rc = attach_opts_parse(o, argc, argv, short_opts, long_opts, usage);

	if (rc != EXIT_OK)
		return rc;
	if (optind >= argc)
		return cli_die(EXIT_USAGE, "top needs a PID (see memprof-bpf top --help)");
	if (argc - optind > 1)
		return cli_die(EXIT_USAGE, "top takes one PID ('%s' is one too many)",
			       argv[optind + 1]);
	if (attach_opts_pids(o, argc, argv, 1) || attach_opts_outputs(o, 1))
		return EXIT_USAGE;
	return EXIT_OK;
}

int cmd_top(int argc, char **argv)
{
	struct output_request r = {0};
	struct output_files files;
	struct attach_opts o;
	struct session s;
	struct top t = {0};
	double end, next_refresh;
	int redraw = 0;
	int code = parse(argc, argv, &o), quit = 0;

	if (code)
		return code;
	/* -o files are written on quit, but opened now: a bad path fails at once. */
	code = session_open(&s, &o, &r, &files, 0);
	if (code == SESSION_INTERRUPTED)
		return EXIT_OK;
	if (code)
		return code;
	t.s = &s;
	t.o = &o;
	t.sort = o.sort;
	t.prev_t = s.start_mono;
	t.tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (t.tty && !tcgetattr(STDIN_FILENO, &t.saved)) {
		struct termios raw = t.saved;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		fputs("\033[?1049h\033[H\033[2J", stdout); /* the alternate screen */
	} else {
		t.tty = 0;
	}
	end = o.seconds > 0 ? s.start_mono + o.seconds : 0;
	next_refresh = s.start_mono + REFRESH_S;
	for (unsigned poll = 1; !session_stop_requested && !quit; poll++) {
		int key = wait_key(&t, &s), v;
		double now;

		if (key == 'q' || key == 'Q' || key == 3)
			break;
		v = key == 'a'	 ? MEMPROF_VIEW_ALLOC
		    : key == 'l' ? MEMPROF_VIEW_LIVE
		    : key == 'p' ? MEMPROF_VIEW_PROMOTED
		    : key == 's' ? MEMPROF_VIEW_SHORT
				 : -1;
		if (v >= 0 && v != t.sort) {
			t.sort = v;
			redraw = 1;
		}
		if (!session_poll(&s, poll))
			quit = 1;
		now = session_now();
		if (now >= next_refresh || quit || redraw) {
			if (refresh(&t)) {
				code = cli_die(EXIT_FAILED, "out of memory");
				break;
			}
			redraw = 0;
			/* On the second from the attach: a slow refresh (the first
			 * symbolizes) does not shift the ones after it. */
			while (next_refresh <= now)
				next_refresh += REFRESH_S;
		}
		if (end && now >= end)
			break;
	}
	if (t.tty) {
		fputs("\033[?1049l", stdout);
		fflush(stdout);
		tcsetattr(STDIN_FILENO, TCSANOW, &t.saved);
	}
	session_detach(&s);
	if (!code && o.n_out)
		code = session_write(&s, &r);
	output_files_close(&files);
	if (o.verbose)
		session_report(&s);
	dsym_free(t.dsym);
	for (size_t i = 0; i < t.n_prev; i++)
		free(t.prev[i].site);
	free(t.prev);
	session_free(&s);
	return code;
}
