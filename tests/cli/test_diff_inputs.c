/*
 * diff on hostile inputs: weights that are not numbers of bytes (NaN,
 * infinities, negative, beyond 2^62) are refused with one line naming the
 * file and the line or sample, and pprof values at the edge of what is
 * accepted come out exact.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli_util.h"
#include "diff_util.h"
#include "exit_codes.h"
#include "profile.pb-c.h"

static char dir[128], out[256], err[256], base[256];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(base, sizeof(base), "%s/base.folded", dir);
	write_text(base, "main;a 800\n");
}

/* diff BASE input: exit 1, and stderr is one line holding want. */
static void expect_refused(const char *input, const char *want)
{
	const char *args[] = {"diff", base, input, "--format=pprof", "-o", out, NULL};

	cr_expect_eq(cli_run(out, err, args), EXIT_USAGE, "%s: not exit 1", want);
	cr_expect_eq(file_lines(err), 1, "%s: stderr is not one line", want);
	cr_expect(file_contains(err, want), "stderr lacks '%s'", want);
}

Test(cli_diff_inputs, folded_weights_not_bytes_are_refused, .init = setup)
{
	static const char *const bad[] = {"nan", "-nan", "inf", "-inf", "-8", "1e300", "5e18"};
	char path[256], text[128], want[320];

	snprintf(path, sizeof(path), "%s/bad.folded", dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "# a comment\nmain;ok 800\nmain;b %s\nmain;c 8\n",
			 bad[i]);
		write_text(path, text);
		snprintf(want, sizeof(want), "%s:3: bad weight '%s'", path, bad[i]);
		expect_refused(path, want);
	}
	/* Each one in range, the sum not. */
	write_text(path, "main;a 3e18\nmain;b 1\nmain;c 3e18\n");
	snprintf(want, sizeof(want), "%s:3: the weights add up to more than 2^62 bytes", path);
	expect_refused(path, want);
}

Test(cli_diff_inputs, pprof_values_beyond_2_62_are_refused, .init = setup)
{
	char path[256], want[320];

	snprintf(path, sizeof(path), "%s/bad.pb.gz", dir);
	write_pprof(
	    path, (struct psample[]){{{"site", "main"}, 800}, {{"huge", "main"}, INT64_MAX}}, 2, 1);
	snprintf(want, sizeof(want), "%s: sample 2: alloc_space 9223372036854775807 out of range",
		 path);
	expect_refused(path, want);
	write_pprof(path, (struct psample[]){{{"neg", "main"}, -800}}, 1, 1);
	snprintf(want, sizeof(want), "%s: sample 1: alloc_space -800 out of range", path);
	expect_refused(path, want);
	write_pprof(path,
		    (struct psample[]){{{"a", "main"}, INT64_C(1) << 62},
				       {{"b", "main"}, INT64_C(1) << 62}},
		    2, 1);
	snprintf(want, sizeof(want), "%s: sample 2: the alloc_space add up to more than 2^62",
		 path);
	expect_refused(path, want);
}

/* 2^62 bytes in one stack is accepted, and the signed difference is exact. */
Test(cli_diff_inputs, pprof_value_at_2_62_is_exact, .init = setup)
{
	char path[256], pb[256];
	Pprof__Profile *p;
	int64_t sum = 0;

	snprintf(path, sizeof(path), "%s/edge.pprof", dir);
	snprintf(pb, sizeof(pb), "%s/diff.pb.gz", dir);
	write_pprof(path, (struct psample[]){{{"huge", "main"}, INT64_C(1) << 62}}, 1, 0);
	const char *args[] = {"diff", base, path, "-o", pb, NULL};
	cr_assert_eq(cli_run(out, err, args), EXIT_OK);
	p = read_pprof(pb);
	/* main;a shrank by 800 bytes, main;huge grew by 2^62, each exact. */
	cr_assert_eq(p->n_sample, 2);
	for (size_t i = 0; i < p->n_sample; i++) {
		int64_t v = p->sample[i]->value[1];

		cr_expect(v == -800 || v == INT64_C(1) << 62, "%lld", (long long)v);
		sum += v;
	}
	cr_expect_eq(sum, (INT64_C(1) << 62) - 800, "%lld", (long long)sum);
	pprof__profile__free_unpacked(p, NULL);
}

/* No byte below 0x20 (but the line ends) nor 0x7f in a file. */
static int control_free(const char *path)
{
	char *text = read_file(path);
	int ok = text != NULL;

	for (const char *c = text; ok && *c; c++)
		ok = *c == '\n' || !((unsigned char)*c < 0x20 || *c == 0x7f);
	free(text);
	return ok;
}

/*
 * Frame names with a line break, ';', tabs, escape sequences and trailing
 * spaces, from pprof and from folded: every output holds them as spaces and
 * ':', no name forges a stack line or a frame.
 */
Test(cli_diff_inputs, frame_names_are_escaped_in_every_output, .init = setup)
{
	char pb[256], folded[256], diff_pb[256];
	const char *want = "del x;trail 0 64\n"
			   "main;a 800 0\n"
			   "main;a ]0;title;b 8 0\n"
			   "main;evil main:forged 999999 0 800\n"
			   "main;tab here;esc [31mred 0 1600\n"
			   "main;x;y 16 0\n";
	char *text;

	snprintf(pb, sizeof(pb), "%s/names.pb.gz", dir);
	snprintf(folded, sizeof(folded), "%s/names.folded", dir);
	snprintf(diff_pb, sizeof(diff_pb), "%s/diff.pb.gz", dir);
	write_pprof(pb,
		    (struct psample[]){{{"evil\nmain;forged 999999", "main"}, 800},
				       {{"esc\x1b[31mred", "tab\there", "main"}, 1600},
				       {{"trail  ", "del\x7fx"}, 64}},
		    3, 1);
	write_text(folded, "main;a 800\nmain;a\x1b]0;title\x07;b 8\r\nmain;x  ;y 16\n");
	const char *args[] = {"diff", folded, pb, NULL};
	cr_assert_eq(cli_run(out, err, args), EXIT_OK);
	text = read_file(out);
	cr_assert(text);
	cr_expect_str_eq(text, want);
	free(text);

	const char *txt[] = {"diff", folded, pb, "--format=text", NULL};
	cr_assert_eq(cli_run(out, err, txt), EXIT_OK);
	cr_expect(control_free(out), "control characters in the text output");
	cr_expect(file_contains(out, "esc [31mred"));

	const char *ppr[] = {"diff", folded, pb, "-o", diff_pb, NULL};
	cr_assert_eq(cli_run(out, err, ppr), EXIT_OK);
	Pprof__Profile *p = read_pprof(diff_pb);
	int forged = 0;

	for (size_t i = 0; i < p->n_string_table; i++) {
		for (const char *c = p->string_table[i]; *c; c++)
			cr_expect(!((unsigned char)*c < 0x20 || *c == 0x7f || *c == ';'),
				  "pprof string '%s'", p->string_table[i]);
		forged += !strcmp(p->string_table[i], "evil main:forged 999999");
	}
	cr_expect_eq(forged, 1);
	pprof__profile__free_unpacked(p, NULL);
}
