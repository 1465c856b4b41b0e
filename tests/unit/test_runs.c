// SPDX-License-Identifier: BSD-2-Clause
/*
 * Sorted runs (trace/runs.h): records put into 40 runs come back merged
 * by start, the longer first at one instant, then the newer run first, a
 * run's own in the order put; their bytes intact (empty ones too); runs
 * merged 16 into one as they are added; the handler's error stops the
 * merge; nothing to put into before the first run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "model_util.h"
#include "trace/runs.h"

#define NRUNS 40
#define PER_RUN 50

struct rec {
	uint64_t ts, dur;
	int run, k;             /* the k-th put into run */
};

static struct rec recs[NRUNS * PER_RUN], got[NRUNS * PER_RUN];
static size_t ngot;
static int bad_bytes;

/* The merge's order: start, longer first, newer run first, the order put. */
static int cmp_merged(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	if (x->run != y->run)
		return x->run > y->run ? -1 : 1;
	return x->k - y->k;
}

static int collect(void *ctx, uint64_t ts, uint64_t dur, const void *rec, size_t len)
{
	struct rec r;

	if (len == 0) {         /* the empty records: run 0's first */
		r = (struct rec){ .ts = ts, .dur = dur, .run = 0, .k = 0 };
	} else if (len != sizeof(r)) {
		bad_bytes++;
		return 0;
	} else {
		memcpy(&r, rec, sizeof(r));
	}
	if (r.ts != ts || r.dur != dur)
		bad_bytes++;
	got[ngot++] = r;
	return 0;
}

static int stop_at_third(void *ctx, uint64_t ts, uint64_t dur, const void *rec, size_t len)
{
	return ++*(int *)ctx == 3 ? -ENOSPC : 0;
}

int main(void)
{
	struct runs *r;
	size_t n = 0;
	int calls = 0, ret = 0, fds;

	if (unit_mkdtemp("runs")) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	ok(runs_open(&r, in_dir("trace.json")) == 0, "open");
	is_int(runs_put(r, 1, 0, "x", 1), -EINVAL, "nothing to put into before the first run");
	srand(7);
	fds = open_fds();
	for (int run = 0; run < NRUNS && !ret; run++) {
		uint64_t ts = 1000;

		ret = runs_add(r);
		for (int k = 0; k < PER_RUN && !ret; k++) {
			struct rec *x = &recs[n++];

			/* overlapping runs, ties in start and in duration */
			if (k)
				ts += rand() % 3;
			*x = (struct rec){ .ts = ts, .dur = 10 - k % 3 * 5, .run = run, .k = k };
			if (k && ts == x[-1].ts && x->dur > x[-1].dur)
				x->dur = x[-1].dur;     /* each run in the merge's order */
			ret = runs_put(r, x->ts, x->dur, x, run || k ? sizeof(*x) : 0);
		}
	}
	ok(!ret, "%d runs of %d records put", NRUNS, PER_RUN);
	ok(open_fds() - fds <= 16 + 2, "runs merged 16 into one as they come (%d files open)",
	   open_fds() - fds);
	ok(runs_bytes(r) >= (NRUNS * PER_RUN - 1) * sizeof(struct rec), "bytes on disk: %llu",
	   runs_bytes(r));
	ok(runs_merge(r, collect, NULL) == 0, "merged");
	is_int(ngot, NRUNS * PER_RUN, "every record back");
	is_int(bad_bytes, 0, "each with its bytes and key");
	qsort(recs, n, sizeof(*recs), cmp_merged);
	ok(!memcmp(recs, got, sizeof(recs)), "in the merge's order");
	is_int(runs_merge(r, stop_at_third, &calls), -ENOSPC, "the handler's error stops the merge");
	is_int(calls, 3, "at the record that failed");
	runs_close(r);
	runs_close(NULL);
	ok(open_fds() == fds, "closed: no file left open");
	remove(unit_dir);
	return done_testing();
}
