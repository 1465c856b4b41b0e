/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A gpubpf trace read back into the model: each event of a Chrome trace
 * JSON file (read by trace_reader, see trace_reader.h) becomes the
 * struct model_event the exporter wrote it from, its names interned in
 * the model's strtab; process and thread names, Python and native
 * stacks, thread states, CPU samples and the "gpubpf" metadata (host,
 * clock offset, drops, per-process GPU errors, windows and late attach)
 * go into the model itself.  What the exporter derives from the model
 * (Python scopes, flows, memory counters, GPU and state track names and
 * sort indexes, ts_base_ns, clock skew) is skipped: model_finish()
 * derives it again.
 *
 * Streaming, for readers that keep their own compact view (the report):
 * one event at a time into the caller's model_event, the model holding
 * only strings, processes, threads, stacks, states and samples:
 *
 *	struct trace_import ti;
 *	struct model_event ev;
 *	model_init(&m);
 *	if (trace_import_open(&ti, path, &m) < 0) -> trace_import_errmsg(&ti)
 *	while ((ret = trace_import_next(&ti, &ev)) > 0)
 *		... ev (its stack and native already set, as model_finish() does) ...
 *	trace_import_close(&ti);
 *
 * Or the whole file into a finished model, the model the file was
 * exported from (exporting it again gives the same file):
 *
 *	trace_import_file(&m, path, err, sizeof(err));
 */
#ifndef GPUBPF_TRACE_IMPORT_H
#define GPUBPF_TRACE_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "trace/trace_reader.h"

struct trace_import {
	struct trace_reader r;
	struct model *m;
	char *buf;                      /* a string value, unescaped */
	size_t bufcap;
	uint32_t *frames, *funcs;       /* a stack being read */
	size_t framecap, funccap;
	uint16_t *calls;                /* per string id: its call table index + 2, 1 none */
	size_t ncalls;
	bool nomem;                     /* a string could not be added */
	char msg[600];                  /* "PATH: what is wrong", else the reader's */
};

/*
 * Open path and read its "gpubpf" metadata into m (initialised, with no
 * events yet).  0, or -errno with a one-line message (the reader's:
 * unreadable, not JSON, not a gpubpf trace, cut short).  Close it either
 * way.
 */
int trace_import_open(struct trace_import *ti, const char *path, struct model *m);

/*
 * The next event into *ev: 1, 0 at the end, -errno with the message set.
 * Metadata events go into the model; derived ones are skipped.
 */
int trace_import_next(struct trace_import *ti, struct model_event *ev);

/* NULL-safe, idempotent; the model stays the caller's. */
void trace_import_close(struct trace_import *ti);

const char *trace_import_errmsg(const struct trace_import *ti);

/*
 * The whole trace at path into m (initialised, empty), then
 * model_finish().  0, or -errno with "PATH: problem" in err.
 */
int trace_import_file(struct model *m, const char *path, char *err, size_t errlen);

#endif
