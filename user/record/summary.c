// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf record's closing lines: events written, dropped and missed, and
 * the warnings the recording gathered.
 */
#include <stdio.h>
#include "record/record.h"

void record_summary(struct record *r)
{
	uint64_t gpu_dropped = 0;
	char missed[64] = "";
	int nmissed = 0;

	/* the traced command printed its own; a -p or -a target's stderr is elsewhere */
	for (size_t i = 0; i < r->model.nprocs && r->o->mode != MODE_CMD; i++)
		if (r->model.procs[i].gpu_error && !targets_late_failed(r, r->model.procs[i].pid))
			fprintf(stderr, "gpubpf: pid %u: GPU timing off: %s\n", r->model.procs[i].pid,
				strtab_get(&r->model.strs, r->model.procs[i].gpu_error));
	if (r->model.skewed)
		fprintf(stderr, "gpubpf: warning: %llu GPU records start before the call that "
			"launched them (by up to %.3f us): host and GPU clocks disagree\n",
			(unsigned long long)r->model.skewed, r->model.max_skew_ns / 1e3);
	for (size_t i = 0; i < r->model.nprocs; i++) {
		gpu_dropped += r->model.procs[i].gpu_dropped;
		nmissed += !!r->model.procs[i].missed;
	}
	if (nmissed)
		snprintf(missed, sizeof(missed), ", calls of %d process%s may be missing", nmissed,
			 nmissed > 1 ? "es" : "");
	fprintf(stderr, "gpubpf: %llu events, %llu dropped%s, written to %s",
		(unsigned long long)(r->coll.calls + r->coll.gpu_records),
		(unsigned long long)(r->model.dropped_total + gpu_dropped), missed, r->outputs[0]);
	for (int i = 1; i < r->noutputs; i++)
		fprintf(stderr, " and %s", r->outputs[i]);
	fputc('\n', stderr);
	for (size_t i = 0; i < r->model.nprocs; i++)
		if (r->model.procs[i].missed)
			fprintf(stderr, "gpubpf: pid %u: calls may be missing: %s\n",
				r->model.procs[i].pid,
				strtab_get(&r->model.strs, r->model.procs[i].missed));
	if (gpu_dropped)
		fprintf(stderr, "gpubpf: of the dropped, %llu GPU records were lost in the traced "
			"process (CUPTI or the injection library)\n", (unsigned long long)gpu_dropped);
	if (r->coll.bad)
		fprintf(stderr, "gpubpf: %llu malformed records skipped\n",
			(unsigned long long)r->coll.bad);
	if (r->coll.py_unresolved)
		fprintf(stderr, "gpubpf: %llu Python frames could not be named (their process had "
			"exited or changed); they read \"?\"\n",
			(unsigned long long)r->coll.py_unresolved);
}
