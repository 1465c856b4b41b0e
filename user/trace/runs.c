// SPDX-License-Identifier: BSD-2-Clause
/* Sorted runs of trace events, merged; see runs.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/array.h"
#include "lib/json_writer.h"
#include "trace/runs.h"
#include "trace/trace_reader.h"

struct run {
	FILE *f;
	char *line;             /* its next event, NUL-terminated, no separator */
	size_t cap, len;
	int64_t ts, dur;
	bool done;
};

struct runs {
	char dir[PATH_MAX];
	struct run *run;
	size_t n, cap;
};

int runs_open(struct runs **r, const char *path)
{
	const char *slash = strrchr(path, '/');

	*r = calloc(1, sizeof(**r));
	if (!*r)
		return -ENOMEM;
	if (!slash)
		snprintf((*r)->dir, sizeof((*r)->dir), ".");
	else if (slash == path)
		snprintf((*r)->dir, sizeof((*r)->dir), "/");
	else
		snprintf((*r)->dir, sizeof((*r)->dir), "%.*s", (int)(slash - path), path);
	return 0;
}

/* An unnamed file in r's directory, or a named one unlinked at once. */
static int temp_fd(const struct runs *r)
{
	char name[PATH_MAX + 32];
	int fd = open(r->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	snprintf(name, sizeof(name), "%s/.gpubpf-run.XXXXXX", r->dir);
	fd = mkostemp(name, O_CLOEXEC);
	if (fd >= 0)
		unlink(name);
	return fd;
}

FILE *runs_add(struct runs *r)
{
	int fd;
	FILE *f;

	if (array_grow(&r->run, &r->cap, r->n + 1)) {
		errno = ENOMEM;
		return NULL;
	}
	fd = temp_fd(r);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w+");
	if (!f) {
		close(fd);
		return NULL;
	}
	memset(&r->run[r->n], 0, sizeof(r->run[r->n]));
	r->run[r->n].f = f;
	return r->run[r->n++].f;
}

/* The number after key ("\"ts\":") in line, as ns; -EINVAL if absent or bad. */
static int number_after(const char *line, const char *key, const char *at, int64_t *ns)
{
	const char *p = at ? at : strstr(line, key);
	size_t len;

	if (!p || strncmp(p, key, strlen(key)))
		return -EINVAL;
	p += strlen(key);
	len = strcspn(p, ",}");
	return tr_parse_us_ns(p, len, ns);
}

/* Read run's next event: 1, 0 at its end, -errno. */
static int run_next(struct run *run)
{
	ssize_t n;
	const char *dur;

	for (;;) {
		n = getline(&run->line, &run->cap, run->f);
		if (n < 0) {
			run->done = true;
			return ferror(run->f) ? -EIO : 0;
		}
		while (n && (run->line[n - 1] == '\n' || run->line[n - 1] == ','))
			run->line[--n] = 0;
		if (n && run->line[0] == '{')
			break;
	}
	run->len = n;
	/* ts, and dur right after it, as the exporter writes them: a raw
	 * '"' cannot be inside a JSON string, so the first match is the key */
	if (number_after(run->line, ",\"ts\":", NULL, &run->ts))
		return -EINVAL;
	dur = strstr(run->line, ",\"ts\":") + 6;
	dur += strcspn(dur, ",}");
	run->dur = 0;
	if (!strncmp(dur, ",\"dur\":", 7) && number_after(run->line, ",\"dur\":", dur, &run->dur))
		return -EINVAL;
	return 1;
}

/* Whether run a's head goes before run b's (b later than a in r->run). */
static bool before(const struct run *a, const struct run *b, bool a_later)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->dur != b->dur)
		return a->dur > b->dur;
	return a_later;
}

int runs_merge(struct runs *r, struct jw *jw)
{
	int ret = 0;

	for (size_t i = 0; i < r->n && !ret; i++) {
		if (fflush(r->run[i].f) || fseek(r->run[i].f, 0, SEEK_SET))
			return -errno;
		ret = run_next(&r->run[i]);
		ret = ret < 0 ? ret : 0;
	}
	/* a few dozen runs: the earliest head by a scan */
	while (!ret) {
		struct run *best = NULL;

		for (size_t i = 0; i < r->n; i++) {
			struct run *c = &r->run[i];

			if (!c->done && (!best || before(c, best, c > best)))
				best = c;
		}
		if (!best)
			break;
		ret = jw_raw(jw, best->line, best->len);
		if (!ret) {
			ret = run_next(best);
			ret = ret < 0 ? ret : 0;
		}
	}
	return ret;
}

unsigned long long runs_bytes(const struct runs *r)
{
	unsigned long long n = 0;

	for (size_t i = 0; i < r->n; i++) {
		long pos = ftell(r->run[i].f);

		n += pos > 0 ? (unsigned long long)pos : 0;
	}
	return n;
}

void runs_close(struct runs *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		if (r->run[i].f)
			fclose(r->run[i].f);
		free(r->run[i].line);
	}
	free(r->run);
	free(r);
}
