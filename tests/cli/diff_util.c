/* Helpers of the diff tests: inputs written, outputs read, runs under a memory limit. */
#include "diff_util.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include "attach_util.h"

void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "cannot write %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* A pprof profile (alloc_objects, alloc_space) of n samples, gzipped or not. */
void write_pprof(const char *path, const struct psample *s, size_t n, int gz)
{
	Pprof__Profile p = PPROF__PROFILE__INIT;
	Pprof__ValueType types[2] = {PPROF__VALUE_TYPE__INIT, PPROF__VALUE_TYPE__INIT};
	Pprof__ValueType *type_ptrs[2] = {&types[0], &types[1]};
	char *strings[5 + 8 * 16] = {"", "alloc_objects", "count", "alloc_space", "bytes"};
	Pprof__Function fns[8 * 16], *fn_ptrs[8 * 16];
	Pprof__Location locs[8 * 16], *loc_ptrs[8 * 16];
	Pprof__Line lines[8 * 16], *line_ptrs[8 * 16];
	Pprof__Sample smps[16], *smp_ptrs[16];
	uint64_t ids[16][8];
	int64_t values[16][2];
	size_t nf = 0, len;
	unsigned char *buf;
	FILE *f;

	cr_assert_leq(n, 16);
	types[0].type = 1;
	types[0].unit = 2;
	types[1].type = 3;
	types[1].unit = 4;
	p.n_sample_type = 2;
	p.sample_type = type_ptrs;
	for (size_t i = 0; i < n; i++) {
		pprof__sample__init(&smps[i]);
		smp_ptrs[i] = &smps[i];
		for (size_t k = 0; k < 8 && s[i].frames[k]; k++, nf++) {
			strings[5 + nf] = (char *)s[i].frames[k];
			pprof__function__init(&fns[nf]);
			fns[nf].id = nf + 1;
			fns[nf].name = (int64_t)(5 + nf);
			fn_ptrs[nf] = &fns[nf];
			pprof__line__init(&lines[nf]);
			lines[nf].function_id = nf + 1;
			line_ptrs[nf] = &lines[nf];
			pprof__location__init(&locs[nf]);
			locs[nf].id = nf + 1;
			locs[nf].n_line = 1;
			locs[nf].line = &line_ptrs[nf];
			loc_ptrs[nf] = &locs[nf];
			ids[i][k] = nf + 1;
			smps[i].n_location_id = k + 1;
		}
		smps[i].location_id = ids[i];
		values[i][0] = 1;
		values[i][1] = s[i].bytes;
		smps[i].n_value = 2;
		smps[i].value = values[i];
	}
	p.n_sample = n;
	p.sample = smp_ptrs;
	p.n_function = p.n_location = nf;
	p.function = fn_ptrs;
	p.location = loc_ptrs;
	p.n_string_table = 5 + nf;
	p.string_table = strings;
	len = pprof__profile__get_packed_size(&p);
	buf = malloc(len ? len : 1);
	cr_assert(buf);
	pprof__profile__pack(&p, buf);
	if (gz) {
		gzFile z = gzopen(path, "wb");

		cr_assert(z);
		cr_assert_eq(gzwrite(z, buf, (unsigned)len), (int)len);
		cr_assert_eq(gzclose(z), Z_OK);
	} else {
		f = fopen(path, "wb");
		cr_assert(f);
		cr_assert_eq(fwrite(buf, 1, len, f), len);
		cr_assert_eq(fclose(f), 0);
	}
	free(buf);
}

Pprof__Profile *read_pprof(const char *path)
{
	static unsigned char buf[1 << 20];
	gzFile z = gzopen(path, "rb");
	int n = z ? gzread(z, buf, sizeof(buf)) : -1;
	Pprof__Profile *p;

	if (z)
		gzclose(z);
	cr_assert_gt(n, 0, "cannot read %s", path);
	p = pprof__profile__unpack(NULL, (size_t)n, buf);
	cr_assert(p, "%s: not pprof", path);
	return p;
}

static void redirect(const char *path, int fd)
{
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (f >= 0) {
		dup2(f, fd);
		close(f);
	}
}

int diff_run_limited(const char *out, const char *err, const char *const args[], size_t as_bytes)
{
	char *argv[32];
	size_t n = 0;
	pid_t pid;

	argv[n++] = (char *)loader_bin();
	while (args[n - 1] && n < 31) {
		argv[n] = (char *)args[n - 1];
		n++;
	}
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		struct rlimit r = {as_bytes, as_bytes};

		redirect(out, STDOUT_FILENO);
		redirect(err, STDERR_FILENO);
		if (setrlimit(RLIMIT_AS, &r))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	return wait_exit(pid);
}
