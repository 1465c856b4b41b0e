// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record in bounded memory: past --memory bytes of events, the
 * part of the model older than a cutoff is finished and written out as a
 * sorted run beside the trace (model_part.h, export.h's export_parts);
 * the trace is written whole at the end from the runs.
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
#include <unistd.h>
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

/* The first JSON output, else a temporary JSON beside the first output. */
static void parts_path(struct record *r)
{
	const char *first = r->outputs[0], *slash = strrchr(first, '/');

	for (int i = 0; i < r->noutputs; i++) {
		int f = sink_format(r->outputs[i]);

		if (f == SINK_JSON || f == SINK_JSON_GZ) {
			snprintf(r->parts_path, sizeof(r->parts_path), "%s", r->outputs[i]);
			return;
		}
	}
	snprintf(r->parts_path, sizeof(r->parts_path), "%.*s.%s.json",
		 slash ? (int)(slash - first + 1) : 0, first, slash ? slash + 1 : first);
	r->parts_tmp = 1;
}

int record_parts_spill(struct record *r, uint64_t now)
{
	struct model *m = &r->model;
	uint64_t cut;
	int ret;

	if (r->parts_failed)
		return -EIO;
	if (!r->parts) {
		parts_path(r);
		ret = export_parts_open(&r->parts, r->parts_path, &r->o->export);
		if (ret)
			goto fail;
	}
	ret = cutoff(m, now, probes_inflight_since(&r->probes), &cut) ?: model_part_take(m, cut) ?: export_parts_add(r->parts, m) ?:
	      model_part_next(m);
	if (!ret) {
		/* what is kept may stay near --memory: half as much again first */
		r->spill_at = model_event_bytes(m) + r->o->memory / 2;
		if (r->spill_at < r->o->memory)
			r->spill_at = r->o->memory;
		if (r->o->verbose)
			fprintf(stderr, "gpubpf: part %llu written out (%llu events so far, %.1f MB "
				"on disk)\n", (unsigned long long)m->carry->parts,
				(unsigned long long)m->carry->events,
				export_parts_bytes(r->parts) / 1e6);
		return 0;
	}
fail:
	fprintf(stderr, "gpubpf: cannot write events out beside %s: %s; recording stops\n",
		r->parts_path, strerror(-ret));
	r->parts_failed = 1;
	return ret;
}

int record_parts_write(struct record *r)
{
	struct sink out;
	char err[600];
	int ret = model_finish(&r->model);

	if (!ret && !(ret = sink_open(&out, r->parts_path))) {
		ret = export_parts_finish(r->parts, &r->model, &out);
		if (ret) {
			snprintf(err, sizeof(err), "%s", sink_errmsg(&out)[0] ? sink_errmsg(&out)
							      : strerror(-ret));
			sink_abort(&out);
		} else if ((ret = sink_commit(&out))) {
			snprintf(err, sizeof(err), "%s", sink_errmsg(&out));
		}
	} else {
		snprintf(err, sizeof(err), "%.500s: %s", r->parts_path, strerror(-ret));
	}
	/* the runs are no longer needed: their disk space back */
	export_parts_free(r->parts);
	r->parts = NULL;
	for (int i = 0; i < r->noutputs && !ret; i++)
		if (strcmp(r->outputs[i], r->parts_path))
			ret = export_convert(r->parts_path, &r->o->export, r->outputs[i], err,
					     sizeof(err));
	if (ret)
		fprintf(stderr, "gpubpf: %s\n", err);
	return ret;
}

const char *record_parts_trace(const struct record *r)
{
	return r->parts_path[0] ? r->parts_path : NULL;
}

void record_parts_release(struct record *r)
{
	export_parts_free(r->parts);
	r->parts = NULL;
	if (r->parts_tmp)
		unlink(r->parts_path);
}
