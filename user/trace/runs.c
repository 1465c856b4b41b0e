// SPDX-License-Identifier: BSD-2-Clause
/* Sorted runs of trace records, merged; see runs.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/array.h"
#include "trace/runs.h"

/*
 * Runs merge in tiers, so that a long recording holds a few dozen files
 * at most, each event rewritten a few times: RUNS_FANIN runs of one level
 * become one of the next.
 */
#define RUNS_FANIN 16

/* A record's head in a run file (the file is this process's own). */
struct rec_head {
	uint64_t ts, dur;
	uint32_t len;
	uint32_t pad;           /* 0: no byte of the file is left unset */
};

struct run {
	FILE *f;
	struct rec_head head;   /* its next record's */
	uint8_t *rec;           /* and bytes */
	size_t cap;
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

static int merge_picked(struct runs *r, runs_fn fn, void *ctx);

static int put_newest(void *r, uint64_t ts, uint64_t dur, const void *rec, size_t len)
{
	return runs_put(r, ts, dur, rec, len);
}

/* Merge the runs of the lowest level that has RUNS_FANIN into one: 0 or -errno. */
static int compact(struct runs *r)
{
	unsigned count[64] = { 0 }, level = 64;
	uint64_t seq = 0;
	size_t k = 0;
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
	ret = new_run(r, level + 1, seq) ?: merge_picked(r, put_newest, r);
	if (ret)
		return ret;
	for (size_t i = 0; i < r->n; i++) {
		if (r->run[i].pick) {
			fclose(r->run[i].f);
			free(r->run[i].rec);
		} else {
			r->run[k++] = r->run[i];
		}
	}
	r->n = k;
	return 0;
}

int runs_add(struct runs *r)
{
	return compact(r) ?: new_run(r, 0, ++r->seq);
}

int runs_put(struct runs *r, uint64_t ts, uint64_t dur, const void *rec, size_t len)
{
	struct rec_head h = { .ts = ts, .dur = dur, .len = len };
	FILE *f = r->n ? r->run[r->n - 1].f : NULL;

	if (!f || len > UINT32_MAX)
		return -EINVAL;
	errno = 0;
	if (fwrite(&h, sizeof(h), 1, f) != 1 || (len && fwrite(rec, len, 1, f) != 1))
		return errno ? -errno : -EIO;
	return 0;
}

/* Read run's next record: 1, 0 at its end, -errno (-EIO: cut short). */
static int run_next(struct run *run)
{
	if (fread(&run->head, sizeof(run->head), 1, run->f) != 1) {
		run->done = true;
		return ferror(run->f) || !feof(run->f) ? -EIO : 0;
	}
	if (array_grow_bytes((void **)&run->rec, &run->cap, run->head.len ? run->head.len : 1, 1))
		return -ENOMEM;
	if (run->head.len && fread(run->rec, run->head.len, 1, run->f) != 1)
		return -EIO;
	return 1;
}

/* Whether run a's head goes before run b's. */
static bool before(const struct run *a, const struct run *b)
{
	if (a->head.ts != b->head.ts)
		return a->head.ts < b->head.ts;
	if (a->head.dur != b->head.dur)
		return a->head.dur > b->head.dur;
	return a->seq > b->seq;
}

/* The records of the runs picked, merged, to fn. */
static int merge_picked(struct runs *r, runs_fn fn, void *ctx)
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
		ret = fn(ctx, best->head.ts, best->head.dur, best->rec, best->head.len);
		if (!ret) {
			ret = run_next(best);
			ret = ret < 0 ? ret : 0;
		}
	}
	return ret;
}

int runs_merge(struct runs *r, runs_fn fn, void *ctx)
{
	for (size_t i = 0; i < r->n; i++)
		r->run[i].pick = true;
	return merge_picked(r, fn, ctx);
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
		free(r->run[i].rec);
	}
	free(r->run);
	free(r);
}
