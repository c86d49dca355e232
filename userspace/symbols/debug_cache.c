/*
 * The cache of plain debug files (debug_cache.h).  A copy is named by the
 * build id it must carry and is used only when its own build id note says
 * so and none of its sections is compressed: a stale, truncated or foreign
 * file there is made again, never read as the module's.  The folder must be
 * this user's and writable by no one else, since the loader runs as root.
 * A copy is written under a temporary name and renamed into place, so two
 * loaders racing make it twice but neither reads half of one.
 */
#include "debug_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

/* Does e have a compressed section? */
static int has_compressed(Elf *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			return 1;
	}
	return 0;
}

/* Is the file at fd an ELF file with no compressed section and this build id? */
static int plain_copy_of(int fd, const unsigned char *id, size_t id_len)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got = NULL;
	int ok;

	if (!e)
		return 0;
	ok = dwelf_elf_gnu_build_id(e, &got) == (ssize_t)id_len && !memcmp(got, id, id_len) &&
	     !has_compressed(e);
	elf_end(e);
	return ok;
}

/* Make dir and its parents (mode 0700); the fd of dir if it is then a
 * folder of this user's that no one else may write to, else -1.  The
 * files in it are opened relative to that fd: a folder swapped for
 * another after the check is not used. */
static int cache_dir_open(char *dir)
{
	struct stat st;
	int fd;

	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -1;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The cache's folder (debug_cache.h): its path in buf and its fd, or -1
 * when there is none. */
static int cache_dir(char *buf, size_t len)
{
	const char *env = getenv(DEBUG_CACHE_ENV), *base;
	int n;

	if (env)
		n = *env ? snprintf(buf, len, "%s", env) : -1;
	else if (geteuid() == 0)
		n = snprintf(buf, len, "%s", DEBUG_CACHE_ROOT_DIR);
	else if ((base = getenv("XDG_CACHE_HOME")) && *base == '/')
		n = snprintf(buf, len, "%s/memprof-bpf/debug", base);
	else if ((base = getenv("HOME")) && *base == '/')
		n = snprintf(buf, len, "%s/.cache/memprof-bpf/debug", base);
	else
		n = -1;
	if (n <= 0 || (size_t)n >= len || buf[0] != '/')
		return -1;
	return cache_dir_open(buf);
}

/* Copy src (from its start) into the new file tmp of folder dfd and
 * decompress its sections there; 0 or -1 (tmp removed). */
static int make_plain(int src, int dfd, const char *tmp)
{
	struct stat st;
	off_t off = 0;
	int dst, ok = 0;
	Elf *e = NULL;

	if (fstat(src, &st))
		return -1;
	dst = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (dst < 0)
		return -1;
	while (off < st.st_size) {
		ssize_t n = sendfile(dst, src, &off, (size_t)(st.st_size - off));

		if (n <= 0)
			break;
	}
	if (off == st.st_size && (e = elf_begin(dst, ELF_C_RDWR, NULL))) {
		Elf_Scn *scn = NULL;

		ok = 1;
		while (ok && (scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
				ok = elf_compress(scn, 0, 0) >= 0;
		}
		ok = ok && elf_update(e, ELF_C_WRITE) >= 0;
		elf_end(e);
	}
	if (close(dst))
		ok = 0;
	if (!ok)
		unlinkat(dfd, tmp, 0);
	return ok ? 0 : -1;
}

/* Open name in folder dfd if it is the plain copy of build id; else -1. */
static int open_plain(int dfd, const char *name, const unsigned char *id, size_t id_len)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && !plain_copy_of(fd, id, id_len)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The plain copy name of folder dfd, made from the system's debug file
 * hex names when that is compressed; its fd or -1. */
static int make_copy(int dfd, const char *name, const char *hex, const unsigned char *id,
		     size_t id_len)
{
	char sysfile[PATH_MAX], tmp[300];
	int src, compressed, made;
	Elf *e;

	snprintf(sysfile, sizeof(sysfile), "%s/.build-id/%.2s/%s.debug", DEBUG_CACHE_SYSTEM_DIR,
		 hex, hex + 2);
	src = open(sysfile, O_RDONLY | O_CLOEXEC);
	if (src < 0)
		return -1;
	e = elf_begin(src, ELF_C_READ_MMAP, NULL);
	compressed = e && has_compressed(e);
	elf_end(e);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", name, (int)getpid());
	made = compressed && !make_plain(src, dfd, tmp);
	close(src);
	if (!made)
		return -1;
	if (renameat(dfd, tmp, dfd, name)) {
		unlinkat(dfd, tmp, 0);
		return -1;
	}
	return open_plain(dfd, name, id, id_len);
}

int debug_cache_find(const unsigned char *build_id, size_t build_id_len, char **path)
{
	char dir[PATH_MAX - 256], hex[2 * 64 + 1], name[2 * 64 + 16];
	int dfd, fd;

	if (!build_id_len || build_id_len > 64 || (dfd = cache_dir(dir, sizeof(dir))) < 0)
		return -1;
	for (size_t i = 0; i < build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", build_id[i]);
	snprintf(name, sizeof(name), "%s.debug", hex);
	fd = open_plain(dfd, name, build_id, build_id_len);
	if (fd < 0)
		fd = make_copy(dfd, name, hex, build_id, build_id_len);
	close(dfd);
	if (fd < 0)
		return -1;
	if (asprintf(path, "%s/%s", dir, name) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}
