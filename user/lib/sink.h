/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Output files written atomically.  A sink writes into a temporary file
 * beside the final path (".<basename>.XXXXXX"); sink_commit() flushes,
 * fsyncs and renames it into place, sink_abort() removes it.  A half
 * written trace never appears under the final name.  A symbolic link to a
 * file is followed (the file it names is replaced); a device or FIFO
 * (/dev/null, /dev/stdout on a pipe) is written in place, never replaced.
 *
 * The format follows the extension: ".json" plain, ".json.gz" gzip,
 * ".pftrace" (Perfetto protobuf) plain.
 */
#ifndef GPUBPF_SINK_H
#define GPUBPF_SINK_H

#include <stddef.h>

enum sink_format {
	SINK_NONE,
	SINK_JSON,      /* .json */
	SINK_JSON_GZ,   /* .json.gz */
	SINK_PFTRACE,   /* .pftrace: Perfetto's protobuf trace */
	SINK_PLAIN,     /* any other file, written as it is (sink_open_plain) */
};

struct sink {
	char *path;             /* path as given, for messages */
	char *final;            /* where the temporary is renamed (a link followed) */
	char *tmp;              /* temporary path, NULL once renamed/removed */
	int fd;                 /* temporary file (or the device), -1 when closed */
	int direct;             /* a device or FIFO, written in place: no temporary */
	void *gz;               /* gzFile over a dup of fd, gzip format only */
	int format;             /* enum sink_format */
	char *buf;
	size_t len, cap;
	unsigned long long written;     /* bytes accepted by sink_write */
	int err;                /* sticky: first error, -errno */
	char msg[512];          /* one-line description of err */
};

/*
 * Output format for path by its extension, SINK_NONE if unsupported.
 * Extensions are matched case-insensitively.
 */
int sink_format(const char *path);

/*
 * Check early, before tracing starts, that path can be written: a supported
 * extension, an existing, writable directory, not a directory itself.
 * Returns 0, or -errno with a one-line message in err (no "gpubpf: "
 * prefix, no final period), e.g. "cannot write 'x/y.json': No such file
 * or directory" or "unsupported output format 'y.txt' (use .json,
 * .json.gz or .pftrace)".  err may be NULL.
 */
int sink_check_path(const char *path, char *err, size_t errlen);
/* The same for a file of any name (a report, an SVG): no extension check. */
int sink_check_path_plain(const char *path, char *err, size_t errlen);

/* 1 if paths a and b name one existing file (links followed), else 0. */
int sink_same_file(const char *a, const char *b);

/*
 * Open a temporary file for path.  Returns 0 or -errno (-EINVAL for an
 * unsupported extension); on error, sink_errmsg() describes it and the
 * sink holds nothing (sink_abort() is still safe to call).
 */
int sink_open(struct sink *s, const char *path);
/* The same for a file of any name, written as it is (SINK_PLAIN). */
int sink_open_plain(struct sink *s, const char *path);

/* Buffered write.  Returns 0 or the sticky -errno. */
int sink_write(struct sink *s, const void *data, size_t len);

/*
 * Flush, fsync and close the temporary; when running as root under sudo
 * (SUDO_UID/SUDO_GID), give the file to the invoking user; rename it onto
 * the final path.  The file mode is 0666 & ~umask, like a file created
 * with open().  On failure the temporary is removed.  Returns 0 or -errno;
 * the sink is released either way.
 */
int sink_commit(struct sink *s);

/* Close and remove the temporary and release the sink.  NULL-safe, idempotent. */
void sink_abort(struct sink *s);

/* The sticky error, 0 if none. */
int sink_error(const struct sink *s);

/* One-line description of the last error ("" if none). */
const char *sink_errmsg(const struct sink *s);

#endif
