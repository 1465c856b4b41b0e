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

/*
 * Runs merge in tiers, so that a long recording holds a few dozen files
 * at most, each event rewritten a few times: RUNS_FANIN runs of one level
 * become one of the next.
 */
#define RUNS_FANIN 16

struct run {
	FILE *f;
	char *line;             /* its next event, NUL-terminated, no separator */
	size_t cap, len;
	int64_t ts, dur;
	bool done;
	bool pick;              /* in the merge under way */
	unsigned level;         /* merged level times */
	uint64_t seq;           /* the last part it holds: later runs are newer */
};

struct runs {
	char dir[PATH_MAX];
	struct run *run;
	size_t n, cap;
	uint64_t seq;
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

/* A new run at the end of r (its FILE owned by r): 0 or -errno. */
static int new_run(struct runs *r, unsigned level, uint64_t seq)
{
	int fd;
	FILE *f;

	if (array_grow(&r->run, &r->cap, r->n + 1))
		return -ENOMEM;
	fd = temp_fd(r);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w+");
	if (!f) {
		close(fd);
		return -errno;
	}
	memset(&r->run[r->n], 0, sizeof(r->run[r->n]));
	r->run[r->n].f = f;
	r->run[r->n].level = level;
	r->run[r->n++].seq = seq;
	return 0;
}

static int merge_picked(struct runs *r, struct jw *jw);

/* Merge the runs of the lowest level that has RUNS_FANIN into one: 0 or -errno. */
static int compact(struct runs *r)
{
	unsigned count[64] = { 0 }, level = 64;
	uint64_t seq = 0;
	size_t k = 0;
	struct jw jw;
	int ret;

	for (size_t i = 0; i < r->n; i++)
		if (r->run[i].level < 64 && ++count[r->run[i].level] == RUNS_FANIN &&
		    r->run[i].level < level)
			level = r->run[i].level;
	if (level == 64)
		return 0;
	for (size_t i = 0; i < r->n; i++) {
		r->run[i].pick = r->run[i].level == level;
		if (r->run[i].pick && r->run[i].seq > seq)
			seq = r->run[i].seq;
	}
	ret = new_run(r, level + 1, seq) ?: jw_init_file(&jw, r->run[r->n - 1].f);
	if (ret)
		return ret;
	jw_arr_begin_lines(&jw);
	ret = merge_picked(r, &jw);
	if (!ret) {
		jw_arr_end(&jw);
		ret = jw_finish(&jw);
	}
	jw_release(&jw);
	if (ret)
		return ret;
	for (size_t i = 0; i < r->n; i++) {
		if (r->run[i].pick) {
			fclose(r->run[i].f);
			free(r->run[i].line);
		} else {
			r->run[k++] = r->run[i];
		}
	}
	r->n = k;
	return 0;
}

FILE *runs_add(struct runs *r)
{
	int ret = compact(r) ?: new_run(r, 0, ++r->seq);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	return r->run[r->n - 1].f;
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

/* Whether run a's head goes before run b's. */
static bool before(const struct run *a, const struct run *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->dur != b->dur)
		return a->dur > b->dur;
	return a->seq > b->seq;
}

/* The events of the runs picked, merged, into the array jw has open. */
static int merge_picked(struct runs *r, struct jw *jw)
{
	int ret = 0;

	for (size_t i = 0; i < r->n && !ret; i++) {
		if (!r->run[i].pick)
			continue;
		r->run[i].done = false;
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

			if (c->pick && !c->done && (!best || before(c, best)))
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

int runs_merge(struct runs *r, struct jw *jw)
{
	for (size_t i = 0; i < r->n; i++)
		r->run[i].pick = true;
	return merge_picked(r, jw);
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
