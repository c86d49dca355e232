/*
 * The library to inject, checked and read once (inject.h: struct
 * inject_lib).  Only these bytes reach the target: the stub makes an empty
 * memfd in the target, the injector writes them into it and seals it, and
 * the target opens /proc/thread-self/fd/N.  Nothing is opened by path inside the
 * target's mount namespace, where a container could have planted any file.
 *
 * The file is trusted as the loader itself is: it and every directory
 * above it belong to root, and none is writable by group or others (a
 * directory writable by all with the sticky bit, such as /tmp, is allowed:
 * nobody but root can rename or remove root's entries in it).  The checks
 * are made on the file actually opened (fstat of the descriptor the bytes
 * are read from), and on the directories of its real path.
 */
#include "inject.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Larger than this is not a malloc host. */
#define INJECT_LIB_MAX_BYTES (64u << 20)

/* Why st (of what) is not trusted, or NULL. */
static const char *untrusted(const struct stat *st, int is_dir)
{
	if (st->st_uid != 0)
		return "is not owned by root";
	if ((st->st_mode & S_IWGRP) || (st->st_mode & S_IWOTH)) {
		if (is_dir && (st->st_mode & S_ISVTX) && (st->st_mode & S_IWOTH))
			return NULL; /* sticky: others cannot touch root's entries */
		return "is writable by group or others";
	}
	return NULL;
}

static int lib_fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errlen, fmt, a, b);
	return INJECT_LIB_UNREADABLE;
}

static int lib_untrusted(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errlen, fmt, a, b);
	return INJECT_LIB_UNTRUSTED;
}

/* Every directory above path (a real path): trusted.  0 or -1. */
static int check_dirs(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
		struct stat st;
		const char *why;

		slash[slash == dir] = '\0'; /* "/a/b" -> "/a" -> "/" */
		if (lstat(dir, &st))
			return lib_fail(err, errlen, "cannot check the directory %.300s: %s", dir,
					strerror(errno));
		why = S_ISDIR(st.st_mode) ? untrusted(&st, 1) : "is not a directory";
		if (why)
			return lib_untrusted(err, errlen,
					     "not injecting: the directory %.300s %s (the library "
					     "and every directory above it must be root's alone)",
					     dir, why);
		if (slash == dir)
			break;
	}
	return 0;
}

int inject_lib_open(const char *path, struct inject_lib *lib, char *err, size_t errlen)
{
	struct stat st;
	const char *why, *base;
	ssize_t got;
	size_t done = 0;
	int fd;

	memset(lib, 0, sizeof(*lib));
	if (!realpath(path, lib->path))
		return lib_fail(err, errlen, "the library %.300s: %s", path, strerror(errno));
	int rc = check_dirs(lib->path, err, errlen);

	if (rc)
		return rc;
	fd = open(lib->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return lib_fail(err, errlen, "cannot open the library %.300s: %s", lib->path,
				strerror(errno));
	if (fstat(fd, &st)) {
		close(fd);
		return lib_fail(err, errlen, "cannot check the library %.300s: %s", lib->path,
				strerror(errno));
	}
	why = S_ISREG(st.st_mode) ? untrusted(&st, 0) : "is not a regular file";
	if (!why && (st.st_size < (off_t)sizeof(Elf64_Ehdr) || st.st_size > INJECT_LIB_MAX_BYTES))
		why = "has not the size of a shared library";
	if (why) {
		close(fd);
		return lib_untrusted(
		    err, errlen, "not injecting: the library %.300s %s (it must be root's alone)",
		    lib->path, why);
	}
	lib->len = (size_t)st.st_size;
	lib->bytes = malloc(lib->len);
	while (lib->bytes && done < lib->len &&
	       (got = pread(fd, lib->bytes + done, lib->len - done, (off_t)done)) > 0)
		done += (size_t)got;
	close(fd);
	if (!lib->bytes || done != lib->len) {
		inject_lib_free(lib);
		return lib_fail(err, errlen, "cannot read the library %.300s%s", path,
				done ? ": it changed while read" : "");
	}
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)lib->bytes;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_type != ET_DYN || eh->e_machine != EM_X86_64) {
		inject_lib_free(lib);
		return lib_untrusted(err, errlen,
				     "not injecting: %.300s is not an x86-64 shared library%s",
				     path, "");
	}
	base = strrchr(lib->path, '/') + 1;
	snprintf(lib->name, sizeof(lib->name), "%s", base);
	return 0;
}

void inject_lib_free(struct inject_lib *lib)
{
	free(lib->bytes);
	lib->bytes = NULL;
	lib->len = 0;
}

/*
 * Loaders take this lock on a process from before they look for its probes
 * until the injection is over: a second loader waits, then finds the
 * probes the first one loaded, and never injects a second copy.
 */
#define INJECT_LOCK_DIR "/run/memprof-bpf"
#define INJECT_LOCK_POLL_NS 10000000L

int inject_lock(pid_t pid, double timeout_s, char *err, size_t errlen)
{
	char path[64];
	double waited = 0;

	if (mkdir(INJECT_LOCK_DIR, 0700) && errno != EEXIST)
		return INJECT_LOCK_NONE;
	snprintf(path, sizeof(path), INJECT_LOCK_DIR "/%d.lock", (int)pid);
	for (;;) {
		const struct timespec tick = {0, INJECT_LOCK_POLL_NS};
		struct stat held, named;
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd < 0)
			return INJECT_LOCK_NONE;
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			/* The holder before us removes the file: ours must still be it. */
			if (!fstat(fd, &held) && !stat(path, &named) &&
			    held.st_ino == named.st_ino && held.st_dev == named.st_dev)
				return fd;
		} else if (errno != EWOULDBLOCK) {
			close(fd);
			return INJECT_LOCK_NONE;
		}
		close(fd);
		if (waited > timeout_s) {
			snprintf(
			    err, errlen,
			    "another memprof-bpf has been injecting into process %d for %.0f s; "
			    "not injecting",
			    (int)pid, timeout_s);
			return -1;
		}
		nanosleep(&tick, NULL);
		waited += INJECT_LOCK_POLL_NS * 1e-9;
	}
}

void inject_unlock(int fd, pid_t pid)
{
	char path[64];

	if (fd < 0)
		return;
	/* Removed while held (a loader that opened it meanwhile sees that it
	 * locked a removed file, and starts again). */
	snprintf(path, sizeof(path), INJECT_LOCK_DIR "/%d.lock", (int)pid);
	unlink(path);
	close(fd);
}
