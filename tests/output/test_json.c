/*
 * --format json (userspace/output/json.c): the document of one run of
 * known_sites, read by python3's json module, holds the same stacks and
 * bytes as the folded files of every view of that run (--all-views), frames
 * with function, file and line, intervals that hold their estimates, the
 * peak's reading, and the lifetimes of the --lifetimes CSV.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "output/output.h"
#include "output_util.h"

/* The checks, in python3 (argv[1]: the run's directory); prints "ok" at the end. */
static const char check_py[] =
    "import csv, json, sys\n"
    "d = sys.argv[1]\n"
    "with open(d + '/p.json', encoding='utf-8') as f:\n"
    "    j = json.load(f)\n"
    "assert j['schema'] == 'memprof-bpf-profile' and j['version'] == 1, j['schema']\n"
    "views = ['alloc', 'live', 'promoted', 'short', 'peak']\n"
    "assert j['views'] == views, j['views']\n"
    "assert j['rate'] > 0 and abs(j['bytes_per_sample'] * j['rate'] - 8) < 1e-9\n"
    "procs = j['processes']\n"
    "assert len(procs) == 1 and procs[0]['pid'] > 0\n"
    "assert j['peak'] and j['peak']['readings'] >= 2, j['peak']\n"
    "assert j['peak']['poll_interval_s'] > 0 and j['peak']['time_s'] >= 0\n"
    "clean = lambda s: s.replace(';', ':').replace('\\n', ' ').replace('\\t', ' ')\n"
    "named = set()\n"
    "for s in j['stacks']:\n"
    "    for fr in s['frames']:\n"
    "        assert set(fr) >= {'function', 'file', 'line', 'module', 'address'}, fr\n"
    "        if fr['file'] and fr['line']: named.add(fr['function'])\n"
    "    assert set(s['views']) == set(views)\n"
    "    assert s['site']['function']\n"
    "for site in ('site_kept_small', 'site_kept_large', 'site_temporary', 'main'):\n"
    "    assert site in named, (site, 'has no file:line')\n"
    "for v in views:\n"
    "    want, got = {}, {}\n"
    "    for s in j['stacks']:\n"
    "        e = s['views'][v]\n"
    "        if e['samples'] > 0:\n"
    "            lo, hi = e['bytes_interval95']\n"
    "            assert lo <= e['bytes'] <= hi, (v, e)\n"
    "            lo, hi = e['objects_interval95']\n"
    "            assert lo <= e['objects'] <= hi, (v, e)\n"
    "        if e['bytes'] <= 0: continue\n"
    "        names = [s['marker']] if s['marker'] else []\n"
    "        names += [fr['function'] for fr in reversed(s['frames'])]\n"
    "        key = ';'.join(clean(n) for n in names)\n"
    "        want[key] = want.get(key, 0) + e['bytes']\n"
    "    with open(d + '/views/' + v + '.folded', encoding='utf-8') as f:\n"
    "        for line in f:\n"
    "            stack, _, w = line.rstrip('\\n').rpartition(' ')\n"
    "            got[stack] = got.get(stack, 0) + int(w)\n"
    "    assert got == want, (v, sorted(set(got) ^ set(want))[:4])\n"
    "    assert j['totals'][v]['bytes'] == sum(want.values()), v\n"
    "    assert v == 'peak' or sum(want.values()) > 0 or v in ('promoted', 'short'), v\n"
    "rows = list(csv.DictReader(open(d + '/lifetimes.csv', encoding='utf-8')))\n"
    "life = {(l['site'], l['file'] or '', str(l['line'] or '')): l for l in j['lifetimes']}\n"
    "assert rows and len(rows) == len(life), (len(rows), len(life))\n"
    "for r in rows:\n"
    "    l = life[(r['site'], r['file'], r['line'])]\n"
    "    assert int(r['samples']) == l['samples'] and int(r['still_live']) == l['still_live'], r\n"
    "    for q in ('p50_ms', 'p90_ms', 'p99_ms'):\n"
    "        assert abs(float(r[q]) - l[q]) <= 0.0005 + 1e-9 * l[q], (q, r[q], l[q])\n"
    "    assert (r['bound_from'] if r['bound_from'] != 'none' else None) == l['bound_from']\n"
    "print('ok', len(j['stacks']), 'stacks')\n";

/* Run python3 -c check_py dir, its output into out: its exit code. */
static int run_check(const char *dir, const char *out)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execlp("python3", "python3", "-c", check_py, dir, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(output_json, parsed_and_cross_checked_with_folded, .timeout = 120)
{
	char dir[128], json[256], views[256], life[256], out[256], err[256], *text;
	int code;

	out_tmpdir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/p.json", dir);
	snprintf(views, sizeof(views), "%s/views", dir);
	snprintf(life, sizeof(life), "%s/lifetimes.csv", dir);
	snprintf(out, sizeof(out), "%s/check.out", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	const char *args[] = {"-o", json, "--all-views", views, "--lifetimes", life, NULL};
	code = out_profile("known_sites", dir, "0.01", args);
	cr_assert_eq(code, 0, "loader exit %d: %s", code, out_file(err));
	code = run_check(dir, out);
	text = out_file(out);
	cr_assert_eq(code, 0, "python3 check failed (%d): %s", code, text ? text : "");
	cr_expect(text && !strncmp(text, "ok ", 3), "%s", text ? text : "");
	free(text);
}

Test(output_json, the_extension_and_the_format_choose_it)
{
	cr_expect_eq(output_format_parse("json"), FMT_JSON);
	cr_expect_str_eq(output_format_name(FMT_JSON), "json");
	cr_expect_eq(output_format_of_ext("run.json"), FMT_JSON);
	/* A known extension wins over --format; --format decides for the rest. */
	cr_expect_eq(output_format_for("run.json", FMT_TEXT), FMT_JSON);
	cr_expect_eq(output_format_for("run.data", FMT_JSON), FMT_JSON);
	cr_expect_eq(output_format_for(OUTPUT_STDOUT, FMT_JSON), FMT_JSON);
}
