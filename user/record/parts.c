// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record in bounded memory: past --memory bytes of events, the
 * part of the model older than a cutoff is finished and written out as a
 * sorted run beside each output (model_part.h, export.h's export_parts);
 * each output is written whole at the end from its runs.
 *
 * The cutoff leaves in memory what may still change: calls whose
 * correlation announcement or GPU work has not arrived yet (the injection
 * library delivers every 50 ms, GPU work may run seconds after its
 * launch), so it is PARTS_LAG_NS before now, or, when events come faster
 * than --memory holds for that long, the time that halves them; and calls
 * still in flight, sent at their return (see cutoff()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/array.h"
#include "lib/sink.h"
#include "model/model_part.h"
#include "record/record.h"
#include "trace/export.h"

#define PARTS_LAG_NS 5000000000ULL
#define PARTS_MIN_LAG_NS 250000000ULL   /* the injection library delivers every 50 ms */

/*
 * PARTS_LAG_NS before now, or later, the median event time, when that
 * holds less than half the events, but PARTS_MIN_LAG_NS before now at
 * the latest; and not after the entry of a call still in flight
 * (inflight), whose record and announcements come at its return.  Unless
 * that would leave more than three quarters of the events: then the
 * first quartile's time (memory first).
 */
static int cutoff(const struct model *m, uint64_t now, uint64_t inflight, uint64_t *cut)
{
	uint64_t *ts, lag = now > PARTS_LAG_NS ? now - PARTS_LAG_NS : 0;
	uint64_t latest = now > PARTS_MIN_LAG_NS ? now - PARTS_MIN_LAG_NS : 0;
	size_t n = m->nev, older = 0;

	ts = malloc((n ? n : 1) * sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ts[i] = m->ev[i].ts;
	qsort(ts, n, sizeof(*ts), array_cmp_u64);
	*cut = n && ts[n / 2] > lag ? ts[n / 2] : lag;
	if (latest < *cut)
		*cut = latest;
	if (inflight < *cut)
		*cut = inflight;
	while (older < n && ts[older] < *cut)
		older++;
	if (n && older < n / 4)
		*cut = ts[n / 4];
	free(ts);
	return 0;
}

/* Say why parts cannot be written beside path; the recording stops. */
static int parts_fail(struct record *r, const char *path, int err)
{
	fprintf(stderr, "gpubpf: cannot write events out beside %s: %s; recording stops\n", path,
		strerror(-err));
	r->parts_failed = 1;
	return err;
}

int record_parts_spill(struct record *r, uint64_t now)
{
	struct model *m = &r->model;
	uint64_t cut;
	int ret;

	if (r->parts_failed)
		return -EIO;
	for (int i = 0; i < r->noutputs && !r->in_parts; i++)
		if ((ret = export_parts_open(&r->parts[i], r->outputs[i], &r->o->export)))
			return parts_fail(r, r->outputs[i], ret);
	r->in_parts = 1;
	ret = cutoff(m, now, probes_inflight_since(&r->probes), &cut) ?: model_part_take(m, cut);
	if (ret)
		return parts_fail(r, r->outputs[0], ret);
	for (int i = 0; i < r->noutputs; i++)
		if ((ret = export_parts_add(r->parts[i], m)))
			return parts_fail(r, r->outputs[i], ret);
	if ((ret = model_part_next(m)))
		return parts_fail(r, r->outputs[0], ret);
	/* what is kept may stay near --memory: half as much again first */
	r->spill_at = model_event_bytes(m) + r->o->memory / 2;
	if (r->spill_at < r->o->memory)
		r->spill_at = r->o->memory;
	if (r->o->verbose) {
		unsigned long long bytes = 0;

		for (int i = 0; i < r->noutputs; i++)
			bytes += export_parts_bytes(r->parts[i]);
		fprintf(stderr, "gpubpf: part %llu written out (%llu events so far, %.1f MB on "
			"disk)\n", (unsigned long long)m->carry->parts,
			(unsigned long long)m->carry->events, bytes / 1e6);
	}
	return 0;
}

/* Write the finished model's last part, then output i whole. */
static int write_output(struct record *r, int i)
{
	const char *path = r->outputs[i];
	struct sink out;
	int ret = sink_open(&out, path) ?: export_parts_finish(r->parts[i], &r->model, &out);

	if (ret) {
		if (sink_errmsg(&out)[0])
			fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&out));
		else
			fprintf(stderr, "gpubpf: %s: %s\n", path, strerror(-ret));
		sink_abort(&out);
	} else if ((ret = sink_commit(&out))) {
		fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&out));
	}
	/* the runs are no longer needed: their disk space back */
	export_parts_free(r->parts[i]);
	r->parts[i] = NULL;
	return ret;
}

int record_parts_write(struct record *r)
{
	int ret = model_finish(&r->model);

	if (ret)
		fprintf(stderr, "gpubpf: %s\n", strerror(-ret));
	for (int i = 0; i < r->noutputs && !ret; i++)
		ret = write_output(r, i);
	return ret;
}

const char *record_parts_trace(const struct record *r)
{
	return r->in_parts ? r->outputs[0] : NULL;
}

void record_parts_release(struct record *r)
{
	for (int i = 0; i < r->noutputs; i++) {
		export_parts_free(r->parts[i]);
		r->parts[i] = NULL;
	}
}
