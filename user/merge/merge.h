/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One merge's state, shared by the files of gpubpf merge:
 *
 *	cmd_merge.c     the command: options -> inputs -> header -> events
 *	merge_opts.c    the command line
 *	merge_inputs.c  opening the inputs, their labels and clock shifts
 *	                (with --align-collectives, refined by merge_align.c)
 *	merge_ids.c     (host, pid/tid) -> merged pid/tid
 *	merge_header.c  the merged "gpubpf" metadata object
 *	merge_write.c   each event with its rewrites, and missing names
 *	merge_engine.c  the reorder windows and the merge by timestamp
 */
#ifndef GPUBPF_MERGE_H
#define GPUBPF_MERGE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/hashmap.h"
#include "lib/sink.h"
#include "merge/merge_align.h"
#include "merge/merge_opts.h"
#include "trace/trace_reader.h"

#define PID_STRIDE 10000000LL
#define ID_SHIFT 40
/*
 * |ts| at most, after the clock shift (73 years of ns): differences of
 * two such times, and their differences (the skew estimate), fit int64.
 */
#define MAX_TS_NS ((1LL << 61) - 1)

struct cJSON;
struct jw;

/* An event waiting in an input's reorder window. */
struct slot {
	struct tr_event *ev;
	int64_t key;                    /* shifted ts, KEY_META for metadata */
	uint64_t seq;                   /* file order, breaks ties */
};

struct input {
	struct trace_reader r;
	const char *path;
	char label[280];
	int64_t clock_shift_ns;         /* realtime offset minus the reference's */
	struct align_result align;
	int64_t shift_ns;               /* added to every ts */
	struct slot *win;               /* min-heap */
	size_t nwin;
	uint64_t win_bytes;             /* text held in win */
	uint64_t seq;
	bool eof;
};

/* (host, original pid/tid) -> merged value. */
struct ident {
	int64_t v;
	int64_t nv;
	uint32_t host;
	uint8_t seen_pid, named;
};

struct merge {
	const struct merge_opts *o;
	struct input *in;
	int nin;

	struct ident *ids;              /* first seen first */
	size_t nids, capids;
	struct hashmap id_index;        /* hash of (host, value) -> index in ids */
	int64_t next_big;

	int *heap;                      /* inputs by their next event */
	int nheap;
	int64_t last_key;
	int64_t ts_base_ns;             /* the merged trace's: its "ts" count from it */
	int64_t clock_added_ns;         /* merged clock = reference's CLOCK_MONOTONIC + this */
	int64_t realtime_offset_ns;     /* the merged clock's */
	int earliest;                   /* the input that set clock_added_ns */

	struct sink sink;
	char *ob;                       /* one event being written */
	size_t oblen, obcap;
	uint64_t nevents, nmeta;
};

/* ts + shift, if within +-MAX_TS_NS (differences of such times fit). */
static inline int shift_ts(int64_t ts, int64_t shift, int64_t *out)
{
	int64_t v;

	if (__builtin_add_overflow(ts, shift, &v) || v < -MAX_TS_NS || v > MAX_TS_NS)
		return -ERANGE;
	*out = v;
	return 0;
}

/* --- merge_inputs.c ----------------------------------------------------- */

/*
 * A temporary JSON file beside out (".merge-XXXXXX.json" in its
 * directory), made and empty, its name in tmp; 0 or -errno, said.
 */
int merge_temp_json(const char *out, char *tmp, size_t len);

/*
 * Open every input, check their versions agree, label them by host and
 * shift their clocks onto the first one's.  0 or -EINVAL, said on stderr.
 */
int merge_open_inputs(struct merge *m);

/*
 * --align-collectives: read the inputs once for their NCCL kernels and
 * remove each host's residual skew from its shift.  0 or -errno, said.
 */
int merge_align_pass(struct merge *m);

/*
 * Where an input's base lies before the reference's clock's zero once
 * shifted (two traces of one host either side of a reboot, the reference
 * the later), move every shift on by whole seconds so that none does: a
 * trace's times are never negative (report and convert refuse them,
 * trace_import.c).  Sets
 * m->realtime_offset_ns, the merged clock's.  0 or -EINVAL, said.
 */
int merge_rebase(struct merge *m);

/* --- merge_ids.c -------------------------------------------------------- */

/* The entry of (host, v), created if new; NULL on ENOMEM or exhaustion. */
struct ident *ident_get(struct merge *m, uint32_t host, int64_t v);

/* --- merge_header.c ----------------------------------------------------- */

/* '{"gpubpf":{...},"traceEvents":[' into the sink. */
int merge_write_header(struct merge *m);

/* --- merge_write.c ------------------------------------------------------ */

/* A cJSON value through the JSON writer (numbers exact below 2^53). */
void jw_cjson(struct jw *jw, const struct cJSON *v);

/*
 * One event of input h with its rewrites, into the sink.  0 or -errno;
 * -EOVERFLOW when pids and tids cannot all be remapped.
 */
int merge_write_event(struct merge *m, int h, const struct tr_event *ev);

/* "process_name" for each process that had none.  0 or -errno. */
int merge_write_missing_names(struct merge *m);

/* --- merge_engine.c ----------------------------------------------------- */

/*
 * Every input's events, through its reorder window, in time order into
 * the sink.  0, -EINVAL (said) when an input is out of order beyond its
 * window, or -errno.
 */
int merge_events(struct merge *m);

/* Free the events still in in's window, and the window. */
void merge_window_release(struct input *in);

#endif
