// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record in bounded memory: past --memory bytes of events, the
 * part of the model older than a cutoff is finished and written out as a
 * sorted run beside each output (model_part.h, export.h's export_parts);
 * each output is written whole at the end from its runs.
 *
 * The cutoff (model_part_cutoff()) leaves in memory what may still
 * change: calls whose correlation announcement or GPU work has not arrived
 * yet, and calls still in flight, sent at their return.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/model_part.h"
#include "record/record.h"
#include "trace/export.h"

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
	ret = model_part_cutoff(m, now, probes_inflight_since(&r->probes), &cut) ?:
	      model_part_take(m, cut);
	if (ret)
		return parts_fail(r, r->outputs[0], ret);
	for (int i = 0; i < r->noutputs; i++)
		if ((ret = export_parts_add(r->parts[i], m)))
			return parts_fail(r, r->outputs[i], ret);
	if ((ret = model_part_next(m)))
		return parts_fail(r, r->outputs[0], ret);
	r->spill_at = model_part_next_at(m, r->o->memory);
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
	char err[600];
	int ret = export_parts_write(r->parts[i], &r->model, r->outputs[i], err, sizeof(err));

	if (ret)
		fprintf(stderr, "gpubpf: %s\n", err);
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
