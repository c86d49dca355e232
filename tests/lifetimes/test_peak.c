/*
 * The peak view (userspace/output/peak.c): a program whose live memory
 * rises to a known peak (tests/lifetimes/progs/lifetimes_prog.c, "peak":
 * 8 MiB at site_hold, then 64 MiB at site_peak), released before the end,
 * after which 4 MiB more come at site_after.  The peak view holds site_peak
 * and site_hold as they were at the peak (every sample of theirs: exactly
 * their alloc view, and within 5.7 sigma of 64 and 8 MiB), and nothing of
 * site_after; the live view holds site_hold and site_after, nothing of
 * site_peak.
 *
 * No fixed wait: the program holds its peak until the test creates a file,
 * which the test does once it has seen the loader poll with the whole peak
 * in the kernel's maps.  The loader's --every snapshots show its polls: a
 * snapshot is written right after a poll, so the second snapshot to appear
 * after the program said it holds its peak comes from a poll that began
 * after the first was written, hence after the peak was complete.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lifetimes_util.h"

#define RATE "0.001"
#define RATE_NUM 0.001
#define MIB (1024.0 * 1024)

/* TEST_SIGMAS of the estimated bytes of a site of b bytes (Poisson samples, scaled). */
static double bytes_bound(double b)
{
	return poisson_bound(b / 8 * RATE_NUM) * 8 / RATE_NUM;
}

/* The weight of the folded lines whose leaf frame is site; -1 if unreadable. */
static double folded_site(const char *path, const char *site)
{
	char *text = read_file(path), *line, *save = NULL;
	double sum = 0;

	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *leaf;

		if (!sp)
			continue;
		*sp = '\0';
		leaf = strrchr(line, ';');
		if (!strcmp(leaf ? leaf + 1 : line, site))
			sum += strtod(sp + 1, NULL);
	}
	free(text);
	return sum;
}

/* Files in dir (not the hidden ones: a snapshot being written). */
static int n_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait until path exists (1), or TEST_EVENT_TIMEOUT_S (0). */
static int wait_exists(const char *path)
{
	const struct timespec pause = {0, 5000000};
	double until = mono_s() + TEST_EVENT_TIMEOUT_S;

	while (access(path, F_OK) && mono_s() < until)
		nanosleep(&pause, NULL);
	return access(path, F_OK) == 0;
}

/* Wait until dir holds at least n files (1), or TEST_EVENT_TIMEOUT_S (0). */
static int wait_files(const char *dir, int n)
{
	const struct timespec pause = {0, 5000000};
	double until = mono_s() + TEST_EVENT_TIMEOUT_S;

	while (n_files(dir) < n && mono_s() < until)
		nanosleep(&pause, NULL);
	return n_files(dir) >= n;
}

Test(peak, peak_view_holds_the_highest_point, .timeout = 180)
{
	char dir[64], views[128], snaps[128], txt[128], path[256], held[128], release[128];
	const char *extra[] = {"--all-views",	 views, "-o", txt, "--every", "0.1",
			       "--snapshot-dir", snaps, NULL};
	const char *modes[] = {"peak"};
	double hold = 8 * MIB, peak = 64 * MIB, after = 4 * MIB, v[5][3];
	const char *sites[3] = {"site_hold", "site_peak", "site_after"};
	const char *names[5] = {"alloc", "live", "promoted", "short", "peak"};
	char *report, *at;
	pid_t p[1], l;
	int code, seen;
	FILE *f;

	lt_tmpdir(dir, sizeof(dir));
	snprintf(views, sizeof(views), "%s/views", dir);
	snprintf(snaps, sizeof(snaps), "%s/snaps", dir);
	snprintf(txt, sizeof(txt), "%s/report.txt", dir);
	snprintf(held, sizeof(held), "%s/ready.peak", dir);
	snprintf(release, sizeof(release), "%s/ready.release", dir);
	cr_assert_eq(lt_start_progs(modes, 1, dir, p), 0);
	l = lt_start_loader(p, 1, dir, RATE, extra);
	cr_assert_gt(l, 0);
	snprintf(path, sizeof(path), "%s/loader.err", dir);
	/* The program holds its peak, every sample of it handed to the kernel. */
	if (!wait_exists(held)) {
		kill(l, SIGKILL);
		lt_finish(l, p, 1);
		cr_assert_fail("the program never held its peak: %s", read_file(path));
	}
	/* Two snapshots later the loader has polled since. */
	seen = n_files(snaps);
	cr_assert(wait_files(snaps, seen + 2), "the loader wrote no snapshot");
	f = fopen(release, "w");
	cr_assert(f && !fclose(f));
	code = lt_finish(l, p, 1);
	cr_assert_eq(code, 0, "loader exit %d: %s", code, read_file(path));

	for (int k = 0; k < 5; k++)
		for (int s = 0; s < 3; s++) {
			snprintf(path, sizeof(path), "%s/%s.folded", views, names[k]);
			v[k][s] = folded_site(path, sites[s]);
			cr_assert_geq(v[k][s], 0, "no %s", path);
		}
	/* At the peak, every sampled block of site_hold and site_peak was live. */
	cr_expect_eq(v[4][0], v[0][0], "peak site_hold %g, alloc %g", v[4][0], v[0][0]);
	cr_expect_eq(v[4][1], v[0][1], "peak site_peak %g, alloc %g", v[4][1], v[0][1]);
	cr_expect(fabs(v[4][1] - peak) <= bytes_bound(peak), "peak site_peak %g MiB",
		  v[4][1] / MIB);
	cr_expect(fabs(v[4][0] - hold) <= bytes_bound(hold), "peak site_hold %g MiB",
		  v[4][0] / MIB);
	cr_expect_eq(v[4][2], 0, "site_after came after the peak: %g in it", v[4][2]);
	/* At the end: site_peak freed, site_hold and site_after live. */
	cr_expect_eq(v[1][1], 0, "live site_peak %g", v[1][1]);
	cr_expect_eq(v[1][0], v[0][0], "live site_hold %g, alloc %g", v[1][0], v[0][0]);
	cr_expect(fabs(v[1][0] - hold) <= bytes_bound(hold), "live site_hold %g MiB",
		  v[1][0] / MIB);
	cr_expect(fabs(v[1][2] - after) <= bytes_bound(after), "live site_after %g MiB",
		  v[1][2] / MIB);

	/* The text report's peak table: site_peak first, and when it was read. */
	report = read_file(txt);
	cr_assert(report);
	at = strstr(report, "\n== peak (");
	cr_assert(at, "no peak table");
	cr_expect(strstr(at, "   read at ") == strchr(at + 1, '\n') + 1, "no reading time");
	at = strstr(at, "-- by site\n");
	cr_assert(at && (at = strchr(at + 11, '\n')), "no peak rows");
	cr_expect(strstr(at, "site_peak (") && strstr(at, "site_peak (") < strchr(at + 1, '\n'),
		  "site_peak is not the first site of the peak table: %.300s", at);
	/* The live table's "at peak" column: site_hold's bytes in the peak view
	 * (11 characters and two spaces before the site). */
	at = strstr(report, "\n== live (");
	cr_assert(at, "no live table");
	at = strstr(at, "-- by site\n");
	cr_assert(at);
	cr_expect(strstr(at, "at peak  site\n") == strchr(at + 11, '\n') - strlen("at peak  site"),
		  "no at peak column: %.200s", at);
	at = strstr(at, "site_hold (");
	cr_assert(at && at - report > 13, "no site_hold row in the live table");
	{
		char *end;
		double x = strtod(at - 13, &end), unit = 1;

		if (!strncmp(end, " KiB", 4))
			unit = 1024;
		else if (!strncmp(end, " MiB", 4))
			unit = MIB;
		cr_expect(fabs(x * unit - v[4][0]) <= 0.001 * v[4][0] + 1,
			  "site_hold at peak: %.13s, the peak view %g", at - 13, v[4][0]);
	}
	/* site_after, live now, came after the peak: nothing of it there. */
	at = strstr(strstr(report, "\n== live ("), "site_after (");
	cr_assert(at && at - report > 13, "no site_after row in the live table");
	cr_expect(!strncmp(at - 13, "        0 B  ", 13), "site_after at peak: '%.13s'", at - 13);
	free(report);
}
