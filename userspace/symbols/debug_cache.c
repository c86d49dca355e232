/*
 * The cache of plain debug files (debug_cache.h).  A copy is named by the
 * build id it must carry and is used only when its own build id note says
 * so and none of its sections is compressed: a stale or foreign file there
 * is made again, never read as the module's.  A copy is written under a
 * temporary name, flushed to disk and renamed into place, so two loaders
 * racing make it twice but neither reads half of one, and a crash leaves no
 * copy whose notes are right and whose DWARF is not.  The loader runs as
 * root: the folder is reached one component at a time without following
 * links, through folders owned by this user or root that no one else may
 * write to (sticky ones aside), and used through its fd.
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

/* Does the ELF file at fd carry this build id, and (compressed: 1) some
 * compressed section or (compressed: 0) none? */
static int elf_is(int fd, const unsigned char *id, size_t id_len, int compressed)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got = NULL;
	int ok;

	if (!e)
		return 0;
	ok = dwelf_elf_gnu_build_id(e, &got) == (ssize_t)id_len && !memcmp(got, id, id_len) &&
	     has_compressed(e) == compressed;
	elf_end(e);
	return ok;
}

/* May a folder with this stat be trusted by this user: its owner is this
 * user or root, and no one else may write to it unless it is sticky (as
 * /tmp is: others cannot rename or remove what is in it)? */
static int trusted_folder(const struct stat *st, int last)
{
	if (!S_ISDIR(st->st_mode) || (st->st_uid != geteuid() && st->st_uid != 0))
		return 0;
	if (last)
		return st->st_uid == geteuid() && !(st->st_mode & 022);
	return !(st->st_mode & 022) || (st->st_mode & S_ISVTX);
}

/*
 * Open dir (absolute), making what is missing of it (mode 0700), one
 * component at a time from the root without following symbolic links: its
 * fd if every folder on the way may be trusted (trusted_folder) and dir
 * itself is this user's and writable by no one else; else -1.  The files
 * in it are opened relative to that fd.
 */
static int cache_dir_open(const char *dir)
{
	char part[NAME_MAX + 1];
	const char *p = dir;
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	while (fd >= 0) {
		struct stat st;
		size_t n;
		int next;

		if (fstat(fd, &st) || !trusted_folder(&st, *p == '\0')) {
			close(fd);
			return -1;
		}
		while (*p == '/')
			p++;
		if (!*p)
			return fd;
		n = strcspn(p, "/");
		if (n > NAME_MAX || (n <= 2 && !strncmp(p, "..", n))) {
			close(fd);
			return -1;
		}
		memcpy(part, p, n);
		part[n] = '\0';
		p += n;
		if (mkdirat(fd, part, 0700) && errno != EEXIST) {
			close(fd);
			return -1;
		}
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		while (*p == '/')
			p++;
	}
	return -1;
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
	/* On disk before it takes its name: a crash never leaves a copy whose
	 * notes are right and whose DWARF is not. */
	if (ok && fsync(dst))
		ok = 0;
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

	if (fd >= 0 && !elf_is(fd, id, id_len, 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The plain copy name of folder dfd, made from the system's debug file
 * hex names when that has this build id and compressed sections; its fd
 * or -1. */
static int make_copy(int dfd, const char *name, const char *hex, const unsigned char *id,
		     size_t id_len)
{
	char sysfile[PATH_MAX], tmp[300];
	int src, made;

	snprintf(sysfile, sizeof(sysfile), "%s/.build-id/%.2s/%s.debug", DEBUG_CACHE_SYSTEM_DIR,
		 hex, hex + 2);
	src = open(sysfile, O_RDONLY | O_CLOEXEC);
	if (src < 0)
		return -1;
	/* A temporary name of this process's: one a killed loader of the same
	 * pid left is removed first. */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", name, (int)getpid());
	unlinkat(dfd, tmp, 0);
	made = elf_is(src, id, id_len, 1) && !make_plain(src, dfd, tmp);
	close(src);
	if (!made)
		return -1;
	if (renameat(dfd, tmp, dfd, name)) {
		unlinkat(dfd, tmp, 0);
		return -1;
	}
	fsync(dfd);
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
