// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf merge: traces of several hosts into one timeline.
 *
 * Streaming: each input is read one event at a time (trace_reader) and
 * the inputs are merged by timestamp (merge_engine.c), so memory does not
 * grow with the traces; our exporter writes events sorted, metadata
 * first.  This file is the command's flow; merge.h names the files that
 * do each part.
 *
 * Events are copied as they are (any "ph", any "cat", unknown keys kept),
 * with these rewrites:
 *   ts          + the host's shift: (realtime_offset_ns of the host minus
 *               that of the first trace, the reference), minus the skew
 *               found by --align-collectives; the merged clock is the
 *               reference host's CLOCK_MONOTONIC, written after the merged
 *               ts_base_ns (each input's own base is in its host entry);
 *   pid, tid    host i's values below 10^7 become i * 10^7 + value (the
 *               first host keeps its own), larger ones (synthetic track
 *               ids) get fresh values above every host's range, the same
 *               mapping for pid and tid so a main thread stays pid == tid;
 *   id, bind_id flow and async ids of host i > 0 move by i << 40 (numbers,
 *               "0x" strings) or get an "h<i>:" prefix (other strings);
 *   process_name "<host>: <name>", with "host" and "host_pid" in args.
 * Processes without a name get one ("<host>: pid N").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>

#include "commands.h"
#include "lib/sink.h"
#include "merge/merge.h"
#include "model/model_part.h"
#include "trace/export.h"

static int alloc_inputs(struct merge *m)
{
	m->nin = m->o->npaths;
	m->in = calloc(m->nin, sizeof(*m->in));
	m->heap = calloc(m->nin, sizeof(*m->heap));
	if (!m->in || !m->heap) {
		fprintf(stderr, "gpubpf: out of memory\n");
		return -ENOMEM;
	}
	for (int i = 0; i < m->nin; i++)
		m->in[i].path = m->o->paths[i];
	return 0;
}

/* The merge could not be written: name the output, not its JSON stage (tmp). */
static void write_failed(struct merge *m, const struct merge_opts *o, const char *tmp, int ret)
{
	if (!sink_error(&m->sink))
		fprintf(stderr, "gpubpf: %s\n", strerror(-ret));
	else if (tmp[0])
		fprintf(stderr, "gpubpf: cannot write '%s': %s\n", o->output,
			strerror(-sink_error(&m->sink)));
	else
		fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&m->sink));
}

int cmd_merge(int argc, char **argv)
{
	struct merge_opts o = {};
	struct merge m = { .o = &o };
	char err[600], tmp[PATH_MAX] = "";
	int ret, status = 1;
	bool sink_open_ = false;

	if (merge_opts_parse(&o, argc, argv))
		return 1;
	if (alloc_inputs(&m))
		goto cleanup;
	if (sink_check_path(o.output, err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		goto cleanup;
	}
	/*
	 * -o X.pftrace: the merge is written as JSON under a temporary name
	 * beside X, then read back into the model and exported (the model of
	 * the whole merge is held in memory for that).
	 */
	if (sink_format(o.output) == SINK_PFTRACE && merge_temp_json(o.output, tmp, sizeof(tmp)))
		goto cleanup;
	for (int i = 0; i < m.nin; i++)
		if (sink_same_file(o.output, m.in[i].path)) {
			fprintf(stderr, "gpubpf: -o '%s' is also an input: write the merge "
				"elsewhere\n", o.output);
			goto cleanup;
		}
	for (int i = 0; i < m.nin; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(m.in[i].path, m.in[j].path)) {
				fprintf(stderr, "gpubpf: %s given twice\n", m.in[i].path);
				goto cleanup;
			}
	if (merge_open_inputs(&m))
		goto cleanup;
	if (o.align && merge_align_pass(&m))
		goto cleanup;
	if (merge_rebase(&m))
		goto cleanup;
	ret = sink_open(&m.sink, tmp[0] ? tmp : o.output);
	if (ret) {
		fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&m.sink));
		goto cleanup;
	}
	sink_open_ = true;
	ret = merge_write_header(&m);
	if (!ret)
		ret = merge_events(&m);
	if (ret == -EINVAL || ret == -EOVERFLOW)
		goto cleanup;           /* already reported */
	if (!ret)
		ret = merge_write_missing_names(&m);
	if (!ret)
		ret = sink_write(&m.sink, "\n]}\n", 4);
	if (ret) {
		write_failed(&m, &o, tmp, ret);
		goto cleanup;
	}
	sink_open_ = false;
	ret = sink_commit(&m.sink);
	if (ret) {
		write_failed(&m, &o, tmp, ret);
		goto cleanup;
	}
	if (tmp[0] && export_convert(tmp, &(struct export_opts){ 0 }, MODEL_PART_MEMORY, 0,
				     o.output, err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		goto cleanup;
	}
	if (!o.quiet && m.clock_added_ns)
		fprintf(stderr, "gpubpf: %s's trace begins before %s's clock's zero: the merged "
			"clock is %s's CLOCK_MONOTONIC + %" PRId64 " s\n",
			m.in[m.earliest].label, m.in[0].label, m.in[0].label,
			m.clock_added_ns / 1000000000);
	if (!o.quiet) {
		fprintf(stderr, "gpubpf: merged %d trace%s (", m.nin, m.nin == 1 ? "" : "s");
		for (int i = 0; i < m.nin; i++)
			fprintf(stderr, "%s%s", i ? ", " : "", m.in[i].label);
		fprintf(stderr, "), %" PRIu64 " events, written to %s\n", m.nevents, o.output);
	}
	status = 0;
cleanup:
	if (sink_open_)
		sink_abort(&m.sink);
	for (int i = 0; m.in && i < m.nin; i++) {
		merge_window_release(&m.in[i]);
		trace_reader_close(&m.in[i].r);
	}
	free(m.in);
	free(m.heap);
	free(m.ids);
	hashmap_release(&m.id_index);
	free(m.ob);
	if (tmp[0])
		unlink(tmp);
	return status;
}
