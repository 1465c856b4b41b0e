// SPDX-License-Identifier: BSD-2-Clause
/* Output files written atomically: see sink.h. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/sink.h"

#define SINK_BUFSZ (256 * 1024)
#define SINK_GZBUFSZ (256 * 1024)
#define SINK_GZMODE "wb1"     /* level 1: ~2x faster than 6, ~15% larger */

static const struct {
	const char *ext;
	int format;
} formats[] = {
	{ ".json.gz", SINK_JSON_GZ },
	{ ".json", SINK_JSON },
	{ ".pftrace", SINK_PFTRACE },
};

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

int sink_format(const char *path)
{
	if (!path)
		return SINK_NONE;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (ends_with(path, formats[i].ext))
			return formats[i].format;
	return SINK_NONE;
}

static void fmt_msg(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fmt_msg(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static void unsupported_msg(char *buf, size_t len, const char *path)
{
	fmt_msg(buf, len, "unsupported output format '%s' (use .json, .json.gz or .pftrace)",
		path);
}

/* The directory part of path ("." if none); malloc'd, NULL on ENOMEM. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, slash - path);
}

/*
 * Where to write path: a device or FIFO (/dev/null, /dev/stdout on a
 * pipe) is written in place (*direct; replacing it with a file would
 * destroy it); a symbolic link is followed, to the file it names, which
 * is replaced or created (the link kept); anything else is replaced as
 * named.  A malloc'd path; NULL with errno set (ENOMEM, or ELOOP where
 * links still follow after 40, as open() says).
 */
static char *final_path(const char *path, int *direct)
{
	char *p = strdup(path), target[PATH_MAX];
	struct stat st;

	*direct = 0;
	if (p && !stat(p, &st) && !S_ISREG(st.st_mode)) {
		*direct = 1;
		return p;
	}
	/* link by link (the last may name a file not there yet), as open() would */
	for (int hops = 0; p && !lstat(p, &st) && S_ISLNK(st.st_mode); hops++) {
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		char *dir, *next;

		if (hops == 40) {
			free(p);
			errno = ELOOP;
			return NULL;
		}
		if (n <= 0)
			break;
		target[n] = '\0';
		dir = target[0] == '/' ? NULL : dir_of(p);
		if (target[0] != '/' && !dir)
			next = NULL;
		else if (asprintf(&next, "%s%s%s", dir ? dir : "", dir ? "/" : "", target) < 0)
			next = NULL;
		if (!next)
			errno = ENOMEM;
		free(dir);
		free(p);
		p = next;
	}
	return p;
}

/* The checks of sink_check_path(), the extension's only with by_extension. */
static int check_path(const char *path, int by_extension, char *err, size_t errlen)
{
	struct stat st;
	char *dir = NULL, *final = NULL;
	const char *base;
	int direct, ret = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!path || !*path) {
		fmt_msg(err, errlen, "empty output path");
		return -EINVAL;
	}
	if (by_extension && sink_format(path) == SINK_NONE) {
		unsupported_msg(err, errlen, path);
		return -EINVAL;
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		goto cleanup;
	}
	final = final_path(path, &direct);
	if (!final) {
		ret = -errno;
		goto cleanup;
	}
	if (direct) {
		if (access(final, W_OK) < 0)
			ret = -errno;
		goto cleanup;
	}
	base = strrchr(final, '/');
	base = base ? base + 1 : final;
	if (strlen(base) > NAME_MAX || strlen(final) >= PATH_MAX) {
		ret = -ENAMETOOLONG;
		goto cleanup;
	}
	dir = dir_of(final);
	if (!dir) {
		ret = -ENOMEM;
		goto cleanup;
	}
	if (stat(dir, &st) < 0) {
		ret = -errno;
		goto cleanup;
	}
	if (!S_ISDIR(st.st_mode)) {
		ret = -ENOTDIR;
		goto cleanup;
	}
	if (access(dir, W_OK | X_OK) < 0)
		ret = -errno;
cleanup:
	if (ret)
		fmt_msg(err, errlen, "cannot write '%s': %s", path, strerror(-ret));
	free(final);
	free(dir);
	return ret;
}

int sink_check_path(const char *path, char *err, size_t errlen)
{
	return check_path(path, 1, err, errlen);
}

int sink_check_path_plain(const char *path, char *err, size_t errlen)
{
	return check_path(path, 0, err, errlen);
}

int sink_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void release(struct sink *s);

static int set_err(struct sink *s, int err, const char *what)
{
	if (!s->err) {
		s->err = err;
		fmt_msg(s->msg, sizeof(s->msg), "cannot %s '%s': %s", what,
			s->path ? s->path : "?", strerror(-err));
	}
	return s->err;
}

/* sink_open() with the format given (SINK_NONE: from the extension). */
static int open_as(struct sink *s, const char *path, int format)
{
	const char *base;
	char *dir = NULL, *final = NULL;
	mode_t mask;
	int fd2 = -1;
	int ret;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	if (!path || !*path) {
		s->err = -EINVAL;
		fmt_msg(s->msg, sizeof(s->msg), "empty output path");
		return s->err;
	}
	s->format = format != SINK_NONE ? format : sink_format(path);
	if (s->format == SINK_NONE) {
		s->err = -EINVAL;
		unsupported_msg(s->msg, sizeof(s->msg), path);
		return s->err;
	}
	s->path = strdup(path);
	final = final_path(path, &s->direct);
	if (!final) {
		ret = -errno;
		goto fail;
	}
	s->cap = SINK_BUFSZ;
	s->buf = malloc(s->cap);
	if (!s->path || !s->buf) {
		ret = -ENOMEM;
		goto fail;
	}
	if (s->direct) {
		s->fd = open(final, O_WRONLY | O_CLOEXEC);
		if (s->fd < 0) {
			ret = -errno;
			goto fail;
		}
	} else {
		dir = dir_of(final);
		base = strrchr(final, '/');
		base = base ? base + 1 : final;
		/* a name near NAME_MAX would be too long with the dot and suffix */
		if (!dir || asprintf(&s->tmp, "%s/.%s.XXXXXX", dir,
				     strlen(base) + 8 > NAME_MAX ? "gpubpf" : base) < 0) {
			s->tmp = NULL;
			ret = -ENOMEM;
			goto fail;
		}
		s->fd = mkostemp(s->tmp, O_CLOEXEC);
		if (s->fd < 0) {
			ret = -errno;
			free(s->tmp);
			s->tmp = NULL;
			goto fail;
		}
		/*
		 * mkstemp creates 0600: give it the mode open(O_CREAT, 0666)
		 * would.  umask can only be read by setting it (process-wide,
		 * not thread-safe).
		 */
		mask = umask(0);
		umask(mask);
		if (fchmod(s->fd, 0666 & ~mask) < 0) {
			ret = -errno;
			goto fail;
		}
		s->final = final;
		final = NULL;
	}
	if (s->format == SINK_JSON_GZ) {
		/* gzclose() closes its fd; keep ours for fsync and fchown */
		fd2 = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
		if (fd2 < 0) {
			ret = -errno;
			goto fail;
		}
		s->gz = gzdopen(fd2, SINK_GZMODE);
		if (!s->gz) {
			close(fd2);
			ret = -ENOMEM;
			goto fail;
		}
		gzbuffer(s->gz, SINK_GZBUFSZ);
	}
	free(dir);
	free(final);
	return 0;
fail:
	free(dir);
	free(final);
	ret = set_err(s, ret, "write");
	release(s);
	return ret;
}

/* Write len bytes to the file (through gzip if so). */
static int raw_write(struct sink *s, const void *data, size_t len)
{
	const char *p = data;

	if (s->err)
		return s->err;
	if (s->gz) {
		while (len) {
			unsigned chunk = len > (1u << 30) ? 1u << 30 : (unsigned)len;
			int n = gzwrite(s->gz, p, chunk);

			if (n <= 0) {
				int zerr;

				gzerror(s->gz, &zerr);
				return set_err(s, zerr == Z_ERRNO && errno ? -errno : -EIO,
					       "write");
			}
			p += n;
			len -= n;
		}
		return 0;
	}
	while (len) {
		ssize_t n = write(s->fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return set_err(s, -errno, "write");
		}
		if (n == 0)
			return set_err(s, -EIO, "write");
		p += n;
		len -= n;
	}
	return 0;
}

static int flush_buf(struct sink *s)
{
	int ret;

	if (!s->len)
		return s->err;
	ret = raw_write(s, s->buf, s->len);
	s->len = 0;
	return ret;
}

int sink_open(struct sink *s, const char *path)
{
	return open_as(s, path, SINK_NONE);
}

int sink_open_plain(struct sink *s, const char *path)
{
	return open_as(s, path, SINK_PLAIN);
}

int sink_write(struct sink *s, const void *data, size_t len)
{
	if (s->err)
		return s->err;
	if (s->fd < 0)
		return set_err(s, -EBADF, "write");
	s->written += len;
	/* large writes (a JSON writer's whole buffer) skip the copy */
	if (len < s->cap / 8 && len <= s->cap - s->len) {
		memcpy(s->buf + s->len, data, len);
		s->len += len;
		return 0;
	}
	if (flush_buf(s))
		return s->err;
	if (len >= s->cap / 8)
		return raw_write(s, data, len);
	memcpy(s->buf, data, len);
	s->len = len;
	return 0;
}

/* Under sudo, hand the file to the user who ran sudo.  Best effort. */
static void chown_to_sudo_user(int fd)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	unsigned long uid, gid;
	char *end;

	if (geteuid() != 0 || !u || !g || !*u || !*g)
		return;
	/* digits only, and ids that fit (-1 is no id: fchown's "unchanged") */
	errno = 0;
	uid = strtoul(u, &end, 10);
	if (errno || *end || *u < '0' || *u > '9' || uid >= (uid_t)-1)
		return;
	gid = strtoul(g, &end, 10);
	if (errno || *end || *g < '0' || *g > '9' || gid >= (gid_t)-1)
		return;
	if (fchown(fd, (uid_t)uid, (gid_t)gid) < 0) {
		/* the trace is still written, owned by root */
	}
}

static void fsync_dir(const char *path)
{
	char *dir = dir_of(path);
	int fd;

	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

int sink_commit(struct sink *s)
{
	int ret;

	if (s->fd < 0) {
		ret = s->err ? s->err : -EBADF;
		goto cleanup;
	}
	ret = flush_buf(s);
	if (ret)
		goto cleanup;
	if (s->gz) {
		int zret = gzclose(s->gz);

		s->gz = NULL;
		if (zret != Z_OK) {
			ret = set_err(s, zret == Z_ERRNO && errno ? -errno : -EIO,
				      "write");
			goto cleanup;
		}
	}
	if (s->direct) {
		ret = close(s->fd) < 0 ? set_err(s, -errno, "write") : 0;
		s->fd = -1;
		goto cleanup;
	}
	if (fsync(s->fd) < 0) {
		ret = set_err(s, -errno, "write");
		goto cleanup;
	}
	chown_to_sudo_user(s->fd);
	if (close(s->fd) < 0) {
		s->fd = -1;
		ret = set_err(s, -errno, "write");
		goto cleanup;
	}
	s->fd = -1;
	if (rename(s->tmp, s->final) < 0) {
		ret = set_err(s, -errno, "write");
		goto cleanup;
	}
	free(s->tmp);
	s->tmp = NULL;
	fsync_dir(s->final);
	ret = 0;
cleanup:
	release(s);
	return ret;
}

void sink_abort(struct sink *s)
{
	if (!s)
		return;
	release(s);
	s->err = 0;
	s->msg[0] = '\0';
}

/* Close and remove the temporary, free everything; keeps err and msg. */
static void release(struct sink *s)
{
	if (s->gz) {
		gzclose(s->gz);
		s->gz = NULL;
	}
	if (s->fd >= 0)
		close(s->fd);
	if (s->tmp) {
		unlink(s->tmp);
		free(s->tmp);
		s->tmp = NULL;
	}
	s->fd = -1;
	free(s->final);
	s->final = NULL;
	free(s->buf);
	s->buf = NULL;
	s->len = s->cap = 0;
	free(s->path);
	s->path = NULL;
}

int sink_error(const struct sink *s)
{
	return s->err;
}

const char *sink_errmsg(const struct sink *s)
{
	return s->msg;
}
