/* Output files opened before tracing; a regular file is put in place whole or not at all
 * (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FALLBACK_PREFIX "memprof-bpf"

static mode_t file_mode(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return 0666 & ~mask;
}

static const char *name_of(const struct outfile *o)
{
	return o->path ? o->path : "standard output";
}

/* The directory part of path, malloc'ed. */
static char *dir_of(const char *path)
{
	char *copy = strdup(path), *d;

	if (!copy)
		return NULL;
	d = strdup(dirname(copy));
	free(copy);
	return d;
}

/* A name next to path for the file being written: DIR/.BASE.PID.N.tmp */
static char *temp_name(const char *path, int n)
{
	char *copy = strdup(path), *dir, *base, *out = NULL;
	size_t len;

	if (!copy)
		return NULL;
	base = strdup(basename(copy));
	dir = dir_of(path);
	if (base && dir) {
		len = strlen(dir) + strlen(base) + 64;
		out = malloc(len);
		if (out)
			snprintf(out, len, "%s/.%s.%d.%d.tmp", dir, base, (int)getpid(), n);
	}
	free(copy);
	free(base);
	free(dir);
	return out;
}

static int fail(char *err, size_t errlen, const char *what, int e)
{
	snprintf(err, errlen, "cannot write %s: %s", what, strerror(e));
	errno = e;
	return -1;
}

static int open_stdout(struct outfile *o, char *err, size_t errlen)
{
	int fl = fcntl(STDOUT_FILENO, F_GETFL);

	if (fl < 0)
		return fail(err, errlen, name_of(o), errno == EBADF ? EBADF : errno);
	if ((fl & O_ACCMODE) == O_RDONLY)
		return fail(err, errlen, name_of(o), EBADF);
	o->fd = STDOUT_FILENO;
	o->in_place = 1;
	return 0;
}

/* A regular file: an anonymous file in its directory, else a named one. */
static int open_temp(struct outfile *o, char *err, size_t errlen)
{
	char *dir = dir_of(o->path);
	int e;

	if (!dir)
		return fail(err, errlen, o->path, ENOMEM);
	o->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, file_mode());
	e = errno;
	free(dir);
	if (o->fd >= 0) {
		o->anonymous = 1;
		return 0;
	}
	if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL)
		return fail(err, errlen, o->path, e);
	/* No O_TMPFILE on this file system: a hidden named file. */
	for (int n = 0; n < 100 && o->fd < 0; n++) {
		free(o->tmp_path);
		o->tmp_path = temp_name(o->path, n);
		if (!o->tmp_path)
			return fail(err, errlen, o->path, ENOMEM);
		o->fd = open(o->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, file_mode());
		if (o->fd < 0 && errno != EEXIST)
			return fail(err, errlen, o->path, errno);
	}
	return o->fd < 0 ? fail(err, errlen, o->path, EEXIST) : 0;
}

int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen)
{
	struct stat st;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (!path || !strcmp(path, "-"))
		return open_stdout(o, err, errlen); /* "-": standard output */
	o->path = strdup(path);
	if (!o->path)
		return fail(err, errlen, path, ENOMEM);
	if (!*path)
		return fail(err, errlen, "''", ENOENT);
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			return fail(err, errlen, path, EISDIR);
		if (!S_ISREG(st.st_mode)) {
			/* A device or a FIFO: written in place. */
			o->fd = open(path, O_WRONLY | O_CLOEXEC);
			if (o->fd < 0)
				return fail(err, errlen, path, errno);
			o->in_place = 1;
			return 0;
		}
		if (access(path, W_OK))
			return fail(err, errlen, path, errno);
	} else if (errno != ENOENT) {
		return fail(err, errlen, path, errno);
	}
	return open_temp(o, err, errlen);
}

int outfile_make_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0777) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(errno));
		return -1;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "cannot write into %s: %s", dir,
			 strerror(errno && !S_ISDIR(st.st_mode) ? ENOTDIR : errno));
		return -1;
	}
	/* Can it take files?  (Read-only mounts, permissions.) */
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) {
		if (!access(dir, W_OK | X_OK))
			return 0;
	}
	snprintf(err, errlen, "cannot write into %s: %s", dir, strerror(errno));
	return -1;
}

/* Link the finished file into place.  0 or -1 with errno. */
static int commit(struct outfile *o)
{
	char proc[64];

	if (o->in_place)
		return 0;
	if (fsync(o->fd))
		return -1;
	if (o->anonymous) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
		for (int n = 0; !o->tmp_path && n < 100; n++) {
			o->tmp_path = temp_name(o->path, n);
			if (!o->tmp_path) {
				errno = ENOMEM;
				return -1;
			}
			if (!linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp_path, AT_SYMLINK_FOLLOW))
				break;
			free(o->tmp_path);
			o->tmp_path = NULL;
			if (errno != EEXIST)
				return -1;
		}
		if (!o->tmp_path) {
			errno = EEXIST;
			return -1;
		}
	}
	if (rename(o->tmp_path, o->path))
		return -1;
	free(o->tmp_path);
	o->tmp_path = NULL;
	return 0;
}

/*
 * The stream a writer writes into: the file's descriptor, every write
 * retried on EINTR and whole, and after the first error none at all, so
 * what reached the file is a prefix of the output, never one with a gap
 * (stdio itself drops a failed buffer and goes on with the next).
 */
struct sink {
	int fd;
	int err; /* the first write error's errno, 0 before */
};

static ssize_t sink_write(void *cookie, const char *buf, size_t len)
{
	struct sink *s = cookie;
	size_t done = 0;

	while (!s->err && done < len) {
		ssize_t n = write(s->fd, buf + done, len - done);

		if (n > 0)
			done += (size_t)n;
		else if (n < 0 && errno != EINTR)
			s->err = errno;
		else if (n == 0)
			s->err = EIO;
	}
	if (s->err)
		errno = s->err;
	return (ssize_t)done; /* short: stdio marks the stream in error */
}

/*
 * Run fn into a stream on fd.  0, or -1 with *write_failed set when the
 * bytes could not be written (errno then says why) and clear when fn itself
 * failed (what it wrote so far is in the file).
 */
static int run_into(int fd, outfile_writer fn, void *ctx, int *write_failed)
{
	struct sink s = {.fd = fd};
	FILE *f = fopencookie(&s, "w", (cookie_io_functions_t){.write = sink_write});
	int rc, e;

	*write_failed = 1;
	if (!f)
		return -1;
	errno = 0;
	rc = fn(f, ctx);
	e = errno;
	if (fclose(f) && !s.err)
		s.err = errno ? errno : EIO;
	if (s.err) {
		errno = s.err;
		return -1;
	}
	*write_failed = 0;
	errno = e;
	return rc ? -1 : 0;
}

/* Write the profile again into a new fallback file; its path (malloc'ed) or NULL. */
static char *write_fallback(outfile_writer fn, void *ctx, const char *tag)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	size_t plen;
	int fd, e, write_failed;

	if (!dir || !*dir)
		dir = "/tmp";
	plen = strlen(dir) + strlen(tag) + 64;
	path = malloc(plen);
	if (!path)
		return NULL;
	snprintf(path, plen, "%s/%s-%d-XXXXXX-%s", dir, FALLBACK_PREFIX, (int)getpid(), tag);
	fd = mkstemps(path, (int)strlen(tag) + 1);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	fchmod(fd, file_mode());
	if (run_into(fd, fn, ctx, &write_failed) || fsync(fd)) {
		e = errno;
		close(fd);
		unlink(path);
		free(path);
		errno = e;
		return NULL;
	}
	close(fd);
	return path;
}

int outfile_write(struct outfile *o, outfile_writer fn, void *ctx, const char *tag, char *err,
		  size_t errlen)
{
	int write_failed, e;

	if (run_into(o->fd, fn, ctx, &write_failed)) {
		e = errno;
		if (!write_failed) {
			/* The writer itself failed (out of memory): the partial
			 * temporary file is never put in place. */
			snprintf(err, errlen, "cannot produce the profile for %s: %s", name_of(o),
				 strerror(e ? e : ENOMEM));
			return -1;
		}
	} else if (commit(o)) {
		e = errno;
	} else {
		return 0;
	}
	free(o->fallback);
	o->fallback = write_fallback(fn, ctx, tag);
	if (o->fallback)
		snprintf(err, errlen, "cannot write %s: %s; the profile is in %s", name_of(o),
			 strerror(e ? e : EIO), o->fallback);
	else
		snprintf(err, errlen, "cannot write %s: %s; no fallback file either: %s",
			 name_of(o), strerror(e ? e : EIO), strerror(errno));
	return -1;
}

void outfile_close(struct outfile *o)
{
	if (o->fd >= 0 && o->fd != STDOUT_FILENO)
		close(o->fd);
	if (o->tmp_path)
		unlink(o->tmp_path);
	free(o->tmp_path);
	free(o->path);
	free(o->fallback);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}
