/*
 * diff's limits (userspace/cmd/diff.h), each passed by an input generated
 * here and read with the loader's address space limited to 512 MiB: a gzip
 * bomb, a plain file too large, too many stacks (folded and pprof), a stack
 * too deep, too many frames in all, a pprof profile whose decoding takes too
 * much memory, one whose stacks spelled out would.  Each gives one line naming the file and the
 * limit, and exit 1, never an allocation failure.  And a 20 MB folded profile, within the limits,
 * diffs to pprof under the same 512 MiB.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli_util.h"
#include "cmd/diff.h"
#include "diff_util.h"
#include "exit_codes.h"

#define AS_LIMIT ((size_t)512 << 20)

static char dir[128], out[256], err[256], base[256], input[256];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(base, sizeof(base), "%s/base.folded", dir);
	write_text(base, "main;a 800\n");
}

/* diff BASE path under AS_LIMIT: exit 1, one line on stderr holding want. */
static void expect_limit(const char *path, const char *want)
{
	const char *args[] = {"diff", base, path, "-o", out, NULL};
	int code = diff_run_limited(out, err, args, AS_LIMIT);
	char *text = read_file(err);

	cr_expect_eq(code, EXIT_USAGE, "exit %d: %s", code, text);
	cr_expect_eq(file_lines(err), 1, "not one line: %s", text);
	cr_expect(text && strstr(text, want), "'%s' is not in: %s", want, text);
	cr_expect(text && strstr(text, path), "the file is not named: %s", text);
	free(text);
}

/* count copies of chunk[0..len) into path, gzipped (level 9) or not. */
static void write_repeated(const char *path, const void *chunk, size_t len, size_t count, int gz)
{
	if (gz) {
		gzFile z = gzopen(path, "wb9");

		cr_assert(z);
		for (size_t i = 0; i < count; i++)
			cr_assert_eq(gzwrite(z, chunk, (unsigned)len), (int)len);
		cr_assert_eq(gzclose(z), Z_OK);
	} else {
		FILE *f = fopen(path, "wb");

		cr_assert(f);
		for (size_t i = 0; i < count; i++)
			cr_assert_eq(fwrite(chunk, 1, len, f), len);
		cr_assert_eq(fclose(f), 0);
	}
}

/*
 * Zeros, one MiB past the limit once decompressed: gzip members of 1 MiB of
 * zeros each, one after the other (zlib reads them as one stream), about
 * 260 KiB in all.
 */
Test(cli_diff_limits, gzip_bomb, .init = setup)
{
	static unsigned char zeros[1 << 20], member[1 << 16];
	z_stream zs = {0};
	char want[128];

	cr_assert_eq(deflateInit2(&zs, 9, Z_DEFLATED, 16 + 15, 9, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = zeros;
	zs.avail_in = sizeof(zeros);
	zs.next_out = member;
	zs.avail_out = sizeof(member);
	cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	snprintf(input, sizeof(input), "%s/bomb.pb.gz", dir);
	write_repeated(input, member, zs.total_out, DIFF_MAX_INPUT_MIB + 1, 0);
	deflateEnd(&zs);
	snprintf(want, sizeof(want), "more than %d MiB once decompressed", DIFF_MAX_INPUT_MIB);
	expect_limit(input, want);
}

/* A plain file past the limit (sparse: no disk used) is refused before it is read. */
Test(cli_diff_limits, plain_file_too_large, .init = setup)
{
	FILE *f;
	char want[128];

	snprintf(input, sizeof(input), "%s/large.folded", dir);
	f = fopen(input, "w");
	cr_assert(f);
	cr_assert_eq(ftruncate(fileno(f), ((off_t)DIFF_MAX_INPUT_MIB << 20) + 1), 0);
	fclose(f);
	snprintf(want, sizeof(want), "more than %d MiB", DIFF_MAX_INPUT_MIB);
	expect_limit(input, want);
}

Test(cli_diff_limits, folded_too_many_stacks, .init = setup)
{
	char want[128];

	snprintf(input, sizeof(input), "%s/huge.folded", dir);
	write_repeated(input, "main;a 8\n", 9, DIFF_MAX_STACKS + 1, 0);
	snprintf(want, sizeof(want), ":%d: more than %d stacks", DIFF_MAX_STACKS + 1,
		 DIFF_MAX_STACKS);
	expect_limit(input, want);
}

/* Samples of two bytes each ("12 00": an empty sample). */
Test(cli_diff_limits, pprof_too_many_stacks, .init = setup)
{
	static const unsigned char head[] = {0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, /* type */
					     0x32, 0x00, 0x32, 0x0b, 'a',  'l',	 'l', 'o',
					     'c',  '_',	 's',  'p',  'a',  'c',	 'e', 0x32,
					     0x05, 'b',	 'y',  't',  'e',  's'};
	char want[128];
	gzFile z;

	snprintf(input, sizeof(input), "%s/samples.pb.gz", dir);
	z = gzopen(input, "wb9");
	cr_assert(z);
	cr_assert_eq(gzwrite(z, head, sizeof(head)), (int)sizeof(head));
	for (int i = 0; i <= DIFF_MAX_STACKS; i++)
		cr_assert_eq(gzwrite(z, "\x12\x00", 2), 2);
	cr_assert_eq(gzclose(z), Z_OK);
	snprintf(want, sizeof(want), "%d samples, more than %d stacks", DIFF_MAX_STACKS + 1,
		 DIFF_MAX_STACKS);
	expect_limit(input, want);
}

/* One sample of 300 frames, each a 1 MiB name: 300 MiB spelled out, from a 1 MiB file. */
Test(cli_diff_limits, pprof_stacks_spelled_out_too_large, .init = setup)
{
	Pprof__Profile p = PPROF__PROFILE__INIT;
	Pprof__ValueType type = PPROF__VALUE_TYPE__INIT, *type_ptr = &type;
	Pprof__Function fn = PPROF__FUNCTION__INIT, *fn_ptr = &fn;
	Pprof__Line line = PPROF__LINE__INIT, *line_ptr = &line;
	Pprof__Location loc = PPROF__LOCATION__INIT, *loc_ptr = &loc;
	Pprof__Sample smp = PPROF__SAMPLE__INIT, *smp_ptr = &smp;
	char *name = malloc(1 << 20), *strings[4] = {"", "alloc_space", "bytes", name}, want[160];
	uint64_t ids[300];
	int64_t value = 8;
	size_t len;
	unsigned char *buf;

	cr_assert(name);
	memset(name, 'x', (1 << 20) - 1);
	name[(1 << 20) - 1] = '\0';
	type.type = 1;
	type.unit = 2;
	fn.id = 1;
	fn.name = 3;
	line.function_id = 1;
	loc.id = 1;
	loc.n_line = 1;
	loc.line = &line_ptr;
	for (size_t i = 0; i < 300; i++)
		ids[i] = 1;
	smp.n_location_id = 300;
	smp.location_id = ids;
	smp.n_value = 1;
	smp.value = &value;
	p.n_sample_type = 1;
	p.sample_type = &type_ptr;
	p.n_function = p.n_location = p.n_sample = 1;
	p.function = &fn_ptr;
	p.location = &loc_ptr;
	p.sample = &smp_ptr;
	p.n_string_table = 4;
	p.string_table = strings;
	len = pprof__profile__get_packed_size(&p);
	buf = malloc(len);
	cr_assert(buf);
	pprof__profile__pack(&p, buf);
	snprintf(input, sizeof(input), "%s/names.pprof", dir);
	write_repeated(input, buf, len, 1, 0);
	free(buf);
	free(name);
	snprintf(want, sizeof(want), "sample 1: its stacks spelled out take more than %d MiB",
		 DIFF_MAX_INPUT_MIB);
	expect_limit(input, want);
}

/* Empty strings, two bytes each on the wire, about 25 in memory. */
Test(cli_diff_limits, pprof_decoding_too_large, .init = setup)
{
	static unsigned char strings[1 << 20];
	char want[128];

	for (size_t i = 0; i < sizeof(strings); i += 2) {
		strings[i] = 0x32;
		strings[i + 1] = 0x00;
	}
	snprintf(input, sizeof(input), "%s/strings.pb.gz", dir);
	write_repeated(input, strings, sizeof(strings), 24, 1);
	snprintf(want, sizeof(want), "decoding it takes more than %d MiB", DIFF_MAX_DECODE_MIB);
	expect_limit(input, want);
}

Test(cli_diff_limits, stack_too_deep, .init = setup)
{
	char want[128], *line = malloc(2 * (DIFF_MAX_FRAMES + 1) + 16);
	size_t n = 0;

	cr_assert(line);
	for (int i = 0; i <= DIFF_MAX_FRAMES; i++)
		n += (size_t)sprintf(line + n, "%sf", i ? ";" : "");
	strcpy(line + n, " 8\n");
	snprintf(input, sizeof(input), "%s/deep.folded", dir);
	write_text(input, line);
	free(line);
	snprintf(want, sizeof(want), ":1: a stack of %d frames", DIFF_MAX_FRAMES + 1);
	expect_limit(input, want);
}

/* Stacks of DIFF_MAX_FRAMES frames, one more than the total allows. */
Test(cli_diff_limits, too_many_frames_in_all, .init = setup)
{
	size_t len = 2 * DIFF_MAX_FRAMES + 3, lines = DIFF_MAX_FRAMES_TOTAL / DIFF_MAX_FRAMES + 1;
	char want[128], *line = malloc(len);

	cr_assert(line);
	for (size_t i = 0; i < DIFF_MAX_FRAMES; i++)
		memcpy(line + 2 * i, "f;", 2);
	memcpy(line + 2 * DIFF_MAX_FRAMES - 1, " 8\n", 3);
	snprintf(input, sizeof(input), "%s/frames.folded", dir);
	write_repeated(input, line, len - 1, lines, 0);
	free(line);
	snprintf(want, sizeof(want), ":%zu: more than %d frames in all", lines,
		 DIFF_MAX_FRAMES_TOTAL);
	expect_limit(input, want);
}

/*
 * 20 MB of folded stacks (20 to 40 frames among 500 names), diffed to
 * pprof, the hungriest output: within 512 MiB (it took more than 512 MiB,
 * and 9 s, when every frame of every stack was a copy of its own).
 */
Test(cli_diff_limits, twenty_megabytes_within_512_mib, .init = setup)
{
	char pb[256];
	FILE *f;
	long size = 0;
	unsigned x = 1;

	snprintf(input, sizeof(input), "%s/big.folded", dir);
	snprintf(pb, sizeof(pb), "%s/diff.pb.gz", dir);
	f = fopen(input, "w");
	cr_assert(f);
	while (size < 20000000) {
		int depth;

		x = x * 1103515245u + 12345u;
		depth = 20 + (int)((x >> 16) % 21);
		size += fprintf(f, "main");
		for (int i = 0; i < depth; i++) {
			x = x * 1103515245u + 12345u;
			size += fprintf(f, ";f%u", (x >> 16) % 500);
		}
		size += fprintf(f, " %u\n", 800 * (1 + (x >> 8) % 100));
	}
	cr_assert_eq(fclose(f), 0);
	const char *args[] = {"diff", base, input, "-o", pb, NULL};
	int code = diff_run_limited(out, err, args, AS_LIMIT);
	char *text = read_file(err);
	struct stat st;

	cr_expect_eq(code, EXIT_OK, "exit %d: %s", code, text);
	cr_expect_eq(file_lines(err), 0, "%s", text);
	cr_expect(stat(pb, &st) == 0 && st.st_size > 0, "no %s", pb);
	free(text);
}
