/*
 * The cache of plain debug files (userspace/symbols/debug_cache.h).  The
 * system's debug file of libc (Debian's libc6-dbg) has compressed
 * sections, which libdw decompresses whole into the loader's heap; the
 * loader reads a decompressed copy from the cache instead, made on first
 * use.  The profile names libc's lines the same either way, the copy is
 * reused, a copy of another file under libc's name is made again, and a
 * cache folder others may write to is not used.  The cache is a folder of
 * the test's (MEMPROF_DEBUG_CACHE).
 */
#include <criterion/criterion.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output_util.h"

#define RATE "0.01"
#define PROG "known_sites"
#define SYSTEM_DEBUG_DIR "/usr/lib/debug/.build-id"
#define OTHER_DEBUG_FILE PROGS_DIR "/debuginfod/known_sites.debug"
/* A line of libc's own source, which only its DWARF names. */
#define LIBC_SOURCE "libc-start.c"

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (strstr(info->dlpi_name, "/libc.so")) {
		snprintf(arg, 256, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* The build id readelf reads in the file at path ("" if none). */
static void file_build_id(const char *path, char *hex, size_t len)
{
	char cmd[400], *notes, *at;

	cr_assert_geq(len, 128, "room for %%127 below");
	snprintf(cmd, sizeof(cmd), "readelf -n %s 2>/dev/null", path);
	notes = out_command(cmd);
	hex[0] = '\0';
	if (notes && (at = strstr(notes, "Build ID: ")))
		sscanf(at + 10, "%127[0-9a-f]", hex);
	free(notes);
}

/* libc's build id in hex (this process maps the libc the program does). */
static void libc_build_id(char *hex, size_t len)
{
	char path[256] = "";

	dl_iterate_phdr(find_libc, path);
	cr_assert(*path, "no libc mapped");
	file_build_id(path, hex, len);
	cr_assert(*hex, "no build id in %s", path);
}

/* Whether the ELF file at path has a compressed section (readelf's C flag). */
static int has_compressed_section(const char *path)
{
	char cmd[400], *sections;
	int yes;

	snprintf(cmd, sizeof(cmd), "readelf -SW %s 2>/dev/null | grep -c ' \\.debug_info .* C '",
		 path);
	sections = out_command(cmd);
	cr_assert_not_null(sections);
	yes = atoi(sections) > 0;
	free(sections);
	return yes;
}

/* Profile PROG into dir/NAME.json with -v; the JSON's text. */
static char *profile(const char *dir, const char *name)
{
	char json[300];

	snprintf(json, sizeof(json), "%s/%s.json", dir, name);
	const char *args[] = {"-v", "-o", json, NULL};
	cr_assert_eq(out_profile(PROG, dir, RATE, args), 0, "the profiled run failed");
	return out_file(json);
}

/* The loader's peak RSS while symbolizing (its -v line), KiB. */
static long symbolization_rss_kib(const char *dir)
{
	char err[300], *text, *at;
	long kib = -1;

	snprintf(err, sizeof(err), "%s/loader.err", dir);
	text = out_file(err);
	cr_assert(text && (at = strstr(text, "symbolization: ")), "no symbolization line");
	at = strstr(at, "max rss ");
	cr_assert(at && sscanf(at, "max rss %ld KiB", &kib) == 1, "no max rss: %s", text);
	free(text);
	return kib;
}

/* The system's libc debug file, skipping the test where it is not compressed. */
static void system_debug_file(char *hex, size_t hex_len, char *path, size_t path_len)
{
	libc_build_id(hex, hex_len);
	snprintf(path, path_len, "%s/%.2s/%s.debug", SYSTEM_DEBUG_DIR, hex, hex + 2);
	if (access(path, R_OK) || !has_compressed_section(path))
		cr_skip_test("no compressed debug file of libc at %s", path);
}

Test(output_debug_cache, libc_is_read_from_a_plain_copy_made_once, .timeout = 180)
{
	char dir[128], cache[200], hex[128], sysdebug[300], copy[400], got[128], *json;
	struct stat first, again;
	long cached_kib, uncached_kib;

	out_tmpdir(dir, sizeof(dir));
	system_debug_file(hex, sizeof(hex), sysdebug, sizeof(sysdebug));
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(copy, sizeof(copy), "%s/%s.debug", cache, hex);
	setenv("MEMPROF_DEBUG_CACHE", cache, 1);

	json = profile(dir, "cold");
	cr_expect(json && strstr(json, LIBC_SOURCE), "libc's lines not named (cold cache)");
	free(json);
	cr_assert_eq(stat(copy, &first), 0, "no copy of libc's debug file in the cache");
	cr_expect_not(has_compressed_section(copy), "the copy is still compressed");
	file_build_id(copy, got, sizeof(got));
	cr_expect_str_eq(got, hex, "the copy's build id");

	json = profile(dir, "warm");
	cr_expect(json && strstr(json, LIBC_SOURCE), "libc's lines not named (warm cache)");
	free(json);
	cr_assert_eq(stat(copy, &again), 0);
	cr_expect(first.st_ino == again.st_ino && first.st_mtime == again.st_mtime,
		  "the copy was made again");
	cached_kib = symbolization_rss_kib(dir);

	setenv("MEMPROF_DEBUG_CACHE", "", 1);
	json = profile(dir, "none");
	cr_expect(json && strstr(json, LIBC_SOURCE), "libc's lines not named (no cache)");
	free(json);
	uncached_kib = symbolization_rss_kib(dir);
	unsetenv("MEMPROF_DEBUG_CACHE");
	/* libdw's heap copy of the decompressed sections is what the copy saves. */
	cr_expect_gt(uncached_kib - cached_kib, 4096,
		     "peak RSS %ld KiB with the cache, %ld KiB without", cached_kib, uncached_kib);
}

Test(output_debug_cache, another_file_under_its_name_is_made_again, .timeout = 180)
{
	char dir[128], cache[200], hex[128], sysdebug[300], copy[400], cmd[900], got[128], *json;

	out_tmpdir(dir, sizeof(dir));
	system_debug_file(hex, sizeof(hex), sysdebug, sizeof(sysdebug));
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(copy, sizeof(copy), "%s/%s.debug", cache, hex);
	cr_assert_eq(mkdir(cache, 0700), 0);
	/* A plain debug file, but of another program. */
	snprintf(cmd, sizeof(cmd), "cp %s %s", OTHER_DEBUG_FILE, copy);
	cr_assert_eq(system(cmd), 0);
	setenv("MEMPROF_DEBUG_CACHE", cache, 1);
	json = profile(dir, "stale");
	unsetenv("MEMPROF_DEBUG_CACHE");
	cr_expect(json && strstr(json, LIBC_SOURCE), "libc's lines not named");
	free(json);
	file_build_id(copy, got, sizeof(got));
	cr_expect_str_eq(got, hex, "the other file was not replaced by libc's copy");
}

Test(output_debug_cache, a_folder_others_may_write_to_is_not_used, .timeout = 180)
{
	char dir[128], cache[200], hex[128], sysdebug[300], copy[400], *json;

	out_tmpdir(dir, sizeof(dir));
	system_debug_file(hex, sizeof(hex), sysdebug, sizeof(sysdebug));
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(copy, sizeof(copy), "%s/%s.debug", cache, hex);
	cr_assert_eq(mkdir(cache, 0700), 0);
	cr_assert_eq(chmod(cache, 0777), 0);
	setenv("MEMPROF_DEBUG_CACHE", cache, 1);
	json = profile(dir, "open");
	unsetenv("MEMPROF_DEBUG_CACHE");
	cr_expect(json && strstr(json, LIBC_SOURCE), "libc's lines not named");
	free(json);
	cr_expect_neq(access(copy, F_OK), 0, "a copy was written to a folder anyone may write to");
}
