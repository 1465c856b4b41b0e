/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Exporters: each turns a finished model (see model_finish()) into one
 * output format, streaming into a sink.  Exporters only read the model.
 *
 *	struct export_opts opts = { .mem_sample_rate = 0 };
 *	if (export_file(model, &opts, "run.pftrace", err, sizeof(err)))
 *		fprintf(stderr, "gpubpf: %s\n", err);
 *
 * or, into a sink of one's own, export_for(path)->write(model, &opts, &out).
 */
#ifndef GPUBPF_EXPORT_H
#define GPUBPF_EXPORT_H

#include <stddef.h>

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
	/* The same document written in parts: see export_parts_open(). */
	int (*parts_open)(void **state, const char *path, const struct export_opts *opts);
	int (*parts_add)(void *state, const struct model *m);
	int (*parts_finish)(void *state, const struct model *m, struct sink *out);
	unsigned long long (*parts_bytes)(const void *state);
	void (*parts_free)(void *state);
};

/*
 * Chrome trace event JSON, as read by ui.perfetto.dev and chrome://tracing:
 * {"gpubpf":{metadata},"traceEvents":[...]}.
 */
extern const struct exporter export_chrome;

/*
 * Perfetto's protobuf trace (.pftrace): TrackEvents on process, thread and
 * GPU stream tracks, interned names and stacks (see export_perfetto.c).
 */
extern const struct exporter export_perfetto;

/* The exporter for a file name: .pftrace Perfetto's, else Chrome JSON. */
const struct exporter *export_for(const char *path);

/*
 * Write m into path (atomically, see sink.h) in the format export_for()
 * picks.  0, or -errno with a one-line message in err.
 */
int export_file(const struct model *m, const struct export_opts *opts, const char *path,
		char *err, size_t errlen);

/*
 * A trace written in parts, for recordings of any length (model_part.h),
 * in the format export_for(path) picks: each part is written when it is
 * taken, as a sorted run of records (runs.h) in a temporary file in the
 * output's directory; at the end the document is written whole: its head
 * from the last part's model (the processes, threads and totals of the
 * whole recording), the tracks of every part, then the runs merged in time
 * order.  Memory: the tracks, memory counts and interned strings
 * (caches), not the events.
 *
 *	export_parts_open(&p, "run.json", &opts);
 *	for each part: model_part_take(m, cutoff); export_parts_add(p, m);
 *	               model_part_next(m);
 *	model_finish(m); export_parts_write(p, m, "run.json", err, sizeof(err));
 *	export_parts_free(p);
 *
 * (or export_parts_finish() into a sink of one's own).
 *
 * Each returns 0 or -errno.
 */
struct export_parts;
int export_parts_open(struct export_parts **p, const char *path, const struct export_opts *opts);
int export_parts_add(struct export_parts *p, const struct model *m);
/* m: the last part, finished; it is added, then the whole written into out. */
int export_parts_finish(struct export_parts *p, const struct model *m, struct sink *out);
/*
 * export_parts_finish() into path, atomically as export_file() writes;
 * 0, or -errno with a one-line message in err.
 */
int export_parts_write(struct export_parts *p, const struct model *m, const char *path,
		       char *err, size_t errlen);
/* Bytes the parts hold on disk so far. */
unsigned long long export_parts_bytes(const struct export_parts *p);
/* NULL-safe. */
void export_parts_free(struct export_parts *p);

/*
 * The gpubpf trace in (.json, .json.gz or .pftrace) read back into a
 * model (trace_import.h) and written into out as export_file() does; past
 * memory bytes of events held (0: no bound), in parts, as record writes
 * them, so that a trace of any size converts in bounded memory (verbose:
 * each part said on stderr).  0, or -errno with a one-line message in err.
 */
int export_convert(const char *in, const struct export_opts *opts, size_t memory, int verbose,
		   const char *out, char *err, size_t errlen);

#endif
