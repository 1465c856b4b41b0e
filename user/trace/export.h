/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Exporters: each turns a finished model (see model_finish()) into one
 * output format, streaming into a sink.  Exporters only read the model.
 *
 *	struct sink out;
 *	if (sink_open(&out, path) < 0) -> sink_errmsg(&out)
 *	struct export_opts opts = { .mem_sample_rate = 0 };
 *	err = export_chrome.write(model, &opts, &out);
 *	err ? sink_abort(&out) : (err = sink_commit(&out));
 */
#ifndef GPUBPF_EXPORT_H
#define GPUBPF_EXPORT_H

struct model;
struct sink;

/* What the user chose about the output, passed to every exporter. */
struct export_opts {
	/*
	 * Device memory counter tracks: a sample every mem_sample_rate
	 * allocations/frees (0: every change); see memory_counters().
	 */
	unsigned mem_sample_rate;
};

struct exporter {
	const char *name;               /* "chrome" */
	const char *description;        /* one line, for help texts */
	/*
	 * Write the whole document into out (an open sink; the caller commits
	 * or aborts it).  Returns 0 or -errno.
	 */
	int (*write)(const struct model *m, const struct export_opts *opts, struct sink *out);
};

/*
 * Chrome trace event JSON, as read by ui.perfetto.dev and chrome://tracing:
 * {"gpubpf":{metadata},"displayTimeUnit":"ns","traceEvents":[...]}.
 */
extern const struct exporter export_chrome;

/*
 * Perfetto's protobuf trace (.pftrace): TrackEvents on process, thread and
 * GPU stream tracks, interned names and stacks (see export_perfetto.c).
 */
extern const struct exporter export_perfetto;

#endif
