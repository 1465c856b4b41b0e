// SPDX-License-Identifier: BSD-2-Clause
/*
 * Perfetto's native trace format (.pftrace): the model as TrackEvents,
 * protobuf-encoded by protoc-c's code for perfetto_trace.proto.  The file
 * is a Trace message written one packet at a time (field 1: tag, length,
 * packet), never built in memory: each run of 256 KiB of packets deflated
 * (zlib, fastest level) into one packet's compressed_packets, which
 * Perfetto reads as those packets in its place (a fifth of the bytes, for
 * a quarter more export CPU time).  One packet sequence:
 *
 *	ClockSnapshot         CLOCK_MONOTONIC is the trace's clock
 *	TrackDescriptors      a track per process, thread, thread's states
 *	                      ("python3 state", under the process, after
 *	                      its thread), GPU stream ("GPU 0 / stream 7",
 *	                      "GPU 0 / memory", under their process) and
 *	                      memory counter ("device memory GPU 0", under
 *	                      its process)
 *	"gpubpf" instant      the trace metadata of the JSON's "gpubpf"
 *	                      object, as nested debug annotations
 *	TrackEvents by time   slices (SLICE_BEGIN/END) of calls, Python
 *	                      scopes, GPU work and waits, thread states;
 *	                      memory and CPU sample instants; counter
 *	                      values
 *
 * Categories, names and arguments are those of the Chrome JSON exporter
 * (export_chrome.c), arguments as debug annotations; hexadecimal values
 * are pointer values.  Event names, categories, annotation names and
 * string values (stack frames, kernel names) are interned: written once,
 * in the packet that first uses them.  A call starts one flow per GPU
 * record it caused, ended by that record, and a GIL holder's state span
 * one per GIL wait linked to it (model_gil_links()), ended by that wait
 * (Perfetto draws it from the slice that starts first).  Flow ids are
 * pf_flow(): the arrow ids of the model (model_event.flow for a call's,
 * unique in the trace, also when it is written in parts) with the rank of
 * the GPU record among its call's (model_event.flow_k).  Timestamps are CLOCK_MONOTONIC ns, the trace's own
 * clock (the clock snapshot says so: Perfetto shows the JSON's times),
 * written as deltas from the previous packet's (an incremental clock of
 * the sequence, its default, set in its first packet).  Events on the track
 * with the most of them (the sequence's default track) name no track.
 *
 * A model is written as a stream of items in time order (walk_model()):
 * whole, straight into the writer; in parts (export.h's export_parts),
 * each part's items are kept as records in sorted runs (runs.h) and go
 * through the same writer, merged, at the end, so that the file is one
 * sequence either way.
 *
 * Packets go in time order.  Slices of a track are ended in nesting order:
 * a slice stays open while the slices that start inside it end inside it,
 * so a zero-length call at the end of its Python function is its child, as
 * in the model; the ends of every track are written before the next event
 * that starts after them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/array.h"
#include "lib/sink.h"
#include "model/cuda_calls.h"
#include "model/memory.h"
#include "model/model.h"
#include "trace/export.h"
#include "trace/gpu_events.h"
#include "trace/runs.h"
#include "trace/schema.h"
#include "trace/perfetto_trace.pb-c.h"

#ifndef GPUBPF_VERSION
#define GPUBPF_VERSION "unknown"
#endif

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent TrackEvent;
typedef Perfetto__Protos__TrackDescriptor TrackDescriptor;
typedef Perfetto__Protos__DebugAnnotation Annotation;
typedef Perfetto__Protos__InternedData InternedData;

#define SEQUENCE_ID 1
#define CLOCK_REALTIME_ID 1             /* BuiltinClocks */
#define CLOCK_MONOTONIC_ID 3
#define CLOCK_BOOTTIME_ID 6
#define CLOCK_DELTA_ID 64               /* this sequence's: ns since the last packet's */
#define TRACE_PACKET_TAG 0x0a           /* Trace.packet: field 1, length-delimited */
#define CHUNK_SIZE (256 << 10)          /* packets deflated together, at least */

/* Track keys within a process: threads by tid, then GPU lanes, counters. */
#define COUNTER_BASE 0x80000000u
#define PROCESS_TID 0u

#define MAX_ARGS 24
#define NDIMS 64                        /* grids and blocks remembered */

enum {
	CAT_CUDA_API, CAT_PYTHON, CAT_KERNEL, CAT_NCCL, CAT_MEMCPY, CAT_MEMSET, CAT_SYNC,
	CAT_MEMORY, CAT_GPUBPF, CAT_STATE, CAT_SAMPLE, NCATS,
};

static const char *const cat_names[NCATS] = {
	TS_CAT_API, TS_CAT_PYTHON, TS_CAT_KERNEL, TS_CAT_NCCL, TS_CAT_MEMCPY, TS_CAT_MEMSET,
	TS_CAT_SYNC, TS_CAT_MEMORY, TS_META, TS_CAT_STATE, TS_CAT_SAMPLE,
};

struct track {
	uint32_t pid, tid;      /* tid: PROCESS_TID, a thread, its states, GPU lane or counter */
	uint32_t name;          /* model strtab id of a process or thread name (states: their
				   thread's) */
	uint32_t device, stream;
	uint64_t count;         /* its slices and instants: the busiest is the default */
	uint64_t *open;         /* end times of the open slices, innermost last */
	size_t nopen, cap;
	size_t hpos;            /* index in pf.heap + 1, 0 when not there */
};

/* A grid or block and the iid of its text. */
struct dim {
	uint32_t v[3];
	uint64_t iid;
};

/* An interning table: strings and whether each was written already. */
struct itab {
	struct strtab t;
	size_t nsent;           /* ids below this one were written */
};

struct pf {
	const struct model *m;
	struct sink *out;
	struct track *tracks;
	size_t ntracks;
	/* tracks with open slices, by their innermost one's end: the next to end first */
	struct track **heap;
	size_t nheap;
	struct itab names, anames, strs;
	uint64_t *stack_iid;    /* by model stack: its text's iid, 0 until written */
	struct dim dims[NDIMS]; /* by a hash of their values */
	bool cats_sent;
	uint64_t default_track; /* the track of events that name none */
	uint64_t first_ts;      /* the clock snapshot's: first_ts() of the trace */
	uint64_t nevents;       /* the trace's events (of all its parts) */
	size_t npackets;
	uint64_t last_ts;       /* CLOCK_DELTA_ID's value: the last timestamp written */
	/* the packet being built */
	InternedData interned;
	Perfetto__Protos__EventName *new_names;
	Perfetto__Protos__DebugAnnotationName *new_anames;
	Perfetto__Protos__InternedString *new_strs;
	void **ptrs[3];         /* the above three's pointer arrays */
	size_t cap_new[3];
	Annotation args[MAX_ARGS], *argp[MAX_ARGS];
	size_t nargs;
	uint8_t *buf;
	size_t cap_buf;
	/* packets written, to deflate into one compressed_packets packet */
	uint8_t *chunk, *zbuf;
	size_t nchunk, cap_chunk, cap_zbuf;
	int err;
};

static const char *str(const struct model *m, uint32_t id)
{
	return strtab_get(&m->strs, id);
}

/* The track key of an event's track within its process. */
static uint32_t track_tid(const struct model_event *ev)
{
	if (!gpu_has_track(ev))
		return ev->tid;
	return ts_gpu_tid(ev->device, ev->kind == EV_MEMORY ? TS_GPU_MEMORY_LANE : ev->gpu_stream);
}


/* Tracks ------------------------------------------------------------------ */

/* A track key's rank in its process: a thread's states right after it. */
static uint64_t track_rank(uint32_t tid)
{
	if (tid >= TS_STATE_TID_BASE && tid < TS_GPU_TID_BASE)
		return (uint64_t)(tid - TS_STATE_TID_BASE) << 1 | 1;
	return (uint64_t)tid << 1;
}

static int track_cmp(const void *a, const void *b)
{
	const struct track *x = a, *y = b;
	uint64_t rx = track_rank(x->tid), ry = track_rank(y->tid);

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return rx < ry ? -1 : rx > ry;
}

/* A track's uuid: its index + 1 in the sorted table (0 when absent). */
static uint64_t track_uuid(const struct pf *w, uint32_t pid, uint32_t tid)
{
	struct track key = { .pid = pid, .tid = tid };
	const struct track *t = bsearch(&key, w->tracks, w->ntracks, sizeof(key), track_cmp);

	return t ? (uint64_t)(t - w->tracks) + 1 : 0;
}

static struct track *find_track(struct pf *w, uint32_t pid, uint32_t tid)
{
	return &w->tracks[track_uuid(w, pid, tid) - 1];
}

/* Tracks being collected: sorted and unique up to sorted. */
struct track_set {
	struct track *tr;
	size_t n, cap, sorted;
};

static void compact_tracks(struct track_set *s)
{
	size_t k = 0;

	qsort(s->tr, s->n, sizeof(*s->tr), track_cmp);
	for (size_t i = 0; i < s->n; i++) {
		if (k && !track_cmp(&s->tr[k - 1], &s->tr[i]))
			s->tr[k - 1].count += s->tr[i].count;
		else
			s->tr[k++] = s->tr[i];
	}
	s->n = s->sorted = k;
}

/*
 * Add count slices or instants on a track; repeats go at the next
 * compaction, once half are new.
 */
static int add_track(struct track_set *s, uint32_t pid, uint32_t tid, uint32_t device,
		     uint32_t stream, uint64_t count)
{
	if (array_grow_bytes((void **)&s->tr, &s->cap, s->n + 1, sizeof(*s->tr)))
		return -ENOMEM;
	s->tr[s->n++] = (struct track){ .pid = pid, .tid = tid, .device = device,
					 .stream = stream, .count = count };
	if (s->n >= 2 * s->sorted + 64)
		compact_tracks(s);
	return 0;
}

/*
 * Every track, once all the trace's items went through collect_item():
 * processes, threads (named or with events), their states (with states
 * or samples), GPU lanes and memory counters, sorted by (pid, rank) and
 * unique (s is taken).  The track with the most slices and instants is
 * the sequence's default, so that its events leave out their track (2
 * bytes a packet).
 */
static int tracks_finish(struct pf *w, struct track_set *s)
{
	const struct model *m = w->m;
	size_t best = 0;
	int ret = 0;

	for (size_t i = 0; i < m->nprocs && !ret; i++)
		ret = add_track(s, m->procs[i].pid, PROCESS_TID, 0, 0, 0);
	/* not threads the scheduler alone saw, in processes without events
	 * (a job's helpers): Perfetto would list each as a process */
	for (size_t i = 0; i < m->nthreads && !ret; i++)
		if (m->threads[i].name || model_find_process(m, m->threads[i].pid))
			ret = add_track(s, m->threads[i].pid, m->threads[i].tid, 0, 0, 0);
	if (ret)
		return ret;
	compact_tracks(s);
	w->tracks = s->tr;
	w->ntracks = s->n;
	*s = (struct track_set){ 0 };
	for (size_t i = 0; i < m->nprocs; i++)
		find_track(w, m->procs[i].pid, PROCESS_TID)->name = m->procs[i].name;
	for (size_t i = 0; i < m->nthreads; i++) {
		const struct model_thread *t = &m->threads[i];
		uint64_t states = track_uuid(w, t->pid, TS_STATE_TID_BASE + t->tid);
		uint64_t own = track_uuid(w, t->pid, t->tid);

		if (own)
			w->tracks[own - 1].name = t->name;
		if (states)
			w->tracks[states - 1].name = t->name;
	}
	for (size_t i = 1; i < w->ntracks; i++)
		if (w->tracks[i].count > w->tracks[best].count)
			best = i;
	w->default_track = w->ntracks ? best + 1 : 0;
	return 0;
}

/* Interning --------------------------------------------------------------- */

static void itab_init(struct itab *t)
{
	strtab_init(&t->t);
	t->nsent = 1;
}

/*
 * The iid of s in t, 0 when it cannot be interned (empty, or out of
 * memory: the caller writes the string itself).  *fresh: first use.
 */
static uint64_t itab_iid(struct itab *t, const char *s, bool *fresh)
{
	uint32_t id = strtab_intern(&t->t, s);

	*fresh = id && id >= t->nsent;
	if (*fresh)
		t->nsent = id + 1;
	return id;
}

/*
 * Room for entry n of one of the packet's interned lists (which: 0 names,
 * 1 annotation names, 2 strings; emit() fills their pointer arrays).
 */
static void *new_entry(struct pf *w, int which, size_t size, size_t n)
{
	void **arrays[3] = { (void **)&w->new_names, (void **)&w->new_anames,
			     (void **)&w->new_strs };
	size_t cap = w->cap_new[which];

	/* both arrays grow from the same capacity to the same capacity */
	if (array_grow_bytes(arrays[which], &w->cap_new[which], n + 1, size) ||
	    array_grow_bytes((void **)&w->ptrs[which], &cap, n + 1, sizeof(void *))) {
		w->err = -ENOMEM;
		return NULL;
	}
	return (char *)*arrays[which] + n * size;
}

static uint64_t event_name_iid(struct pf *w, const char *name)
{
	Perfetto__Protos__EventName *e;
	bool fresh;
	uint64_t iid = itab_iid(&w->names, name, &fresh);

	if (!fresh)
		return iid;
	e = new_entry(w, 0, sizeof(*e), w->interned.n_event_names);
	if (!e)
		return 0;
	perfetto__protos__event_name__init(e);
	e->has_iid = 1;
	e->iid = iid;
	e->name = (char *)strtab_get(&w->names.t, iid);
	w->interned.n_event_names++;
	return iid;
}

static uint64_t arg_name_iid(struct pf *w, const char *name)
{
	Perfetto__Protos__DebugAnnotationName *e;
	bool fresh;
	uint64_t iid = itab_iid(&w->anames, name, &fresh);

	if (!fresh)
		return iid;
	e = new_entry(w, 1, sizeof(*e), w->interned.n_debug_annotation_names);
	if (!e)
		return 0;
	perfetto__protos__debug_annotation_name__init(e);
	e->has_iid = 1;
	e->iid = iid;
	e->name = (char *)strtab_get(&w->anames.t, iid);
	w->interned.n_debug_annotation_names++;
	return iid;
}

static uint64_t string_iid(struct pf *w, const char *s)
{
	Perfetto__Protos__InternedString *e;
	bool fresh;
	uint64_t iid = itab_iid(&w->strs, s, &fresh);

	if (!fresh)
		return iid;
	e = new_entry(w, 2, sizeof(*e), w->interned.n_debug_annotation_string_values);
	if (!e)
		return 0;
	perfetto__protos__interned_string__init(e);
	e->has_iid = 1;
	e->iid = iid;
	e->has_str = 1;
	e->str.data = (uint8_t *)strtab_get(&w->strs.t, iid);
	e->str.len = strlen((char *)e->str.data);
	w->interned.n_debug_annotation_string_values++;
	return iid;
}

/* Packets ----------------------------------------------------------------- */

static void put_varint(uint8_t *p, size_t *n, uint64_t v)
{
	do {
		p[(*n)++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
}

/*
 * Write the packets collected in w->chunk as one packet of deflated
 * packets (compressed_packets, as Perfetto's own service writes them with
 * compression on).
 */
static int flush_chunk(struct pf *w)
{
	Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	uLongf zlen = compressBound(w->nchunk);
	size_t len, n = 0;

	if (!w->nchunk || w->err)
		return w->err;
	if (array_grow_bytes((void **)&w->zbuf, &w->cap_zbuf, zlen, 1))
		return w->err = -ENOMEM;
	if (compress2(w->zbuf, &zlen, w->chunk, w->nchunk, Z_BEST_SPEED) != Z_OK)
		return w->err = -EIO;
	w->nchunk = 0;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_COMPRESSED_PACKETS;
	p.compressed_packets.data = w->zbuf;
	p.compressed_packets.len = zlen;
	len = perfetto__protos__trace_packet__get_packed_size(&p);
	if (array_grow_bytes((void **)&w->buf, &w->cap_buf, len + 11, 1))
		return w->err = -ENOMEM;
	w->buf[n++] = TRACE_PACKET_TAG;
	put_varint(w->buf, &n, len);
	n += perfetto__protos__trace_packet__pack(&p, w->buf + n);
	return w->err = sink_write(w->out, w->buf, n);
}

/*
 * Finish and write packet p, with the interned data collected for it; the
 * sequence's first packet clears its incremental state and sets the
 * default clock and track.  Later packets leave out
 * SEQ_NEEDS_INCREMENTAL_STATE (2 bytes a packet): it only lets a reader
 * skip packets after a loss of state, which a file written whole never
 * has.
 */
static int emit(struct pf *w, Packet *p)
{
	Perfetto__Protos__TracePacketDefaults defaults =
		PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	Perfetto__Protos__TrackEventDefaults te_defaults =
		PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
	InternedData *in = &w->interned;
	size_t len;

	if (w->err)
		return w->err;
	p->has_trusted_packet_sequence_id = 1;
	p->trusted_packet_sequence_id = SEQUENCE_ID;
	if (!w->npackets++) {
		p->has_sequence_flags = 1;
		p->sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
		defaults.has_timestamp_clock_id = 1;
		defaults.timestamp_clock_id = CLOCK_DELTA_ID;
		te_defaults.has_track_uuid = 1;
		te_defaults.track_uuid = w->default_track;
		defaults.track_event_defaults = &te_defaults;
		p->trace_packet_defaults = &defaults;
	}
	for (size_t i = 0; i < in->n_event_names; i++)
		w->ptrs[0][i] = &w->new_names[i];
	for (size_t i = 0; i < in->n_debug_annotation_names; i++)
		w->ptrs[1][i] = &w->new_anames[i];
	for (size_t i = 0; i < in->n_debug_annotation_string_values; i++)
		w->ptrs[2][i] = &w->new_strs[i];
	in->event_names = (Perfetto__Protos__EventName **)w->ptrs[0];
	in->debug_annotation_names = (Perfetto__Protos__DebugAnnotationName **)w->ptrs[1];
	in->debug_annotation_string_values = (Perfetto__Protos__InternedString **)w->ptrs[2];
	if (in->n_event_categories || in->n_event_names || in->n_debug_annotation_names ||
	    in->n_debug_annotation_string_values)
		p->interned_data = in;
	len = perfetto__protos__trace_packet__get_packed_size(p);
	if (array_grow_bytes((void **)&w->chunk, &w->cap_chunk, w->nchunk + len + 11, 1))
		return w->err = -ENOMEM;
	w->chunk[w->nchunk++] = TRACE_PACKET_TAG;
	put_varint(w->chunk, &w->nchunk, len);
	w->nchunk += perfetto__protos__trace_packet__pack(p, w->chunk + w->nchunk);
	in->n_event_categories = in->n_event_names = 0;
	in->n_debug_annotation_names = in->n_debug_annotation_string_values = 0;
	w->nargs = 0;
	return w->nchunk >= CHUNK_SIZE ? flush_chunk(w) : 0;
}

/* Arguments --------------------------------------------------------------- */

static Annotation *arg(struct pf *w, const char *name)
{
	Annotation *a;

	if (w->nargs == MAX_ARGS) {
		w->err = -EOVERFLOW;
		return NULL;
	}
	a = &w->args[w->nargs];
	w->argp[w->nargs++] = a;
	perfetto__protos__debug_annotation__init(a);
	a->name_iid = arg_name_iid(w, name);
	a->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
	if (!a->name_iid) {
		a->name = (char *)name;
		a->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME;
	}
	return a;
}

static void set_uint(Annotation *a, uint64_t v)
{
	a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
	a->uint_value = v;
}

/* A string value interned already. */
static void set_iid(Annotation *a, uint64_t iid)
{
	a->string_value_iid = iid;
	a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID;
}

/* An interned string value; s may be the caller's buffer (it is copied). */
static void set_string(struct pf *w, Annotation *a, const char *s)
{
	set_iid(a, string_iid(w, s));
	if (a->string_value_iid)
		return;
	if (*s)                 /* not interned: out of memory */
		w->err = -ENOMEM;
	a->string_value = "";
	a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
}

static void arg_uint(struct pf *w, const char *name, uint64_t v)
{
	Annotation *a = arg(w, name);

	if (a)
		set_uint(a, v);
}

static void arg_int(struct pf *w, const char *name, int64_t v)
{
	Annotation *a = arg(w, name);

	if (!a)
		return;
	a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE;
	a->int_value = v;
}

/* Hexadecimal in the JSON ("0x..."): pointer values, shown the same way. */
static void arg_hex(struct pf *w, const char *name, uint64_t v)
{
	Annotation *a = arg(w, name);

	if (!a)
		return;
	a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_POINTER_VALUE;
	a->pointer_value = v;
}

static void arg_double(struct pf *w, const char *name, double v)
{
	Annotation *a = arg(w, name);

	if (!a)
		return;
	a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
	a->double_value = v;
}

static void arg_bool(struct pf *w, const char *name, bool v)
{
	Annotation *a = arg(w, name);

	if (!a)
		return;
	a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
	a->bool_value = v;
}

static void arg_string(struct pf *w, const char *name, const char *s)
{
	Annotation *a = arg(w, name);

	if (a)
		set_string(w, a, s);
}

/*
 * A launch's grid or block as an interned string, "[4, 2, 1]": few
 * distinct ones, each written once (an array takes 15 bytes a slice).
 */
static void arg_u32x3(struct pf *w, const char *name, const uint32_t v[3])
{
	struct dim *d = &w->dims[(v[0] * 31 + v[1] * 7 + v[2]) % NDIMS];
	Annotation *a = arg(w, name);
	char buf[40];

	if (!a)
		return;
	if (d->iid && !memcmp(d->v, v, sizeof(d->v))) {
		set_iid(a, d->iid);
		return;
	}
	snprintf(buf, sizeof(buf), "[%u, %u, %u]", v[0], v[1], v[2]);
	set_string(w, a, buf);
	memcpy(d->v, v, sizeof(d->v));
	d->iid = a->string_value_iid;
}

/* A stack's frames joined by newlines, innermost first; NULL: no memory. */
static char *stack_text(const struct model *m, const struct model_stack *st)
{
	size_t len = 1, n = 0;
	char *text;

	for (uint32_t i = 0; i < st->n; i++)
		len += strlen(str(m, m->frames[st->first + i])) + 1;
	text = malloc(len);
	if (!text)
		return NULL;
	text[0] = 0;
	for (uint32_t i = 0; i < st->n; i++)
		n += sprintf(text + n, "%s%s", i ? "\n" : "", str(m, m->frames[st->first + i]));
	return text;
}

/*
 * A stack (index + 1 in m->stacks) as one interned string: each distinct
 * stack's text is written once, in the packet of its first call.
 */
static void arg_stack(struct pf *w, const char *name, uint32_t stack)
{
	uint64_t *iid = &w->stack_iid[stack - 1];
	Annotation *a = arg(w, name);
	char *text;

	if (!a)
		return;
	if (*iid) {
		set_iid(a, *iid);
		return;
	}
	text = stack_text(w->m, &w->m->stacks[stack - 1]);
	if (!text) {
		w->err = -ENOMEM;
		return;
	}
	set_string(w, a, text);
	*iid = a->string_value_iid;
	free(text);
}

/* Events ------------------------------------------------------------------ */

/*
 * Timestamps are deltas from the previous one (the sequence's default
 * clock, CLOCK_DELTA_ID: 1-4 bytes where an absolute one takes 6); the
 * rare one earlier than its predecessor (GPU records overlapping on a
 * stream) is absolute CLOCK_MONOTONIC.
 */
static void set_timestamp(struct pf *w, Packet *p, uint64_t ts)
{
	p->has_timestamp = 1;
	p->timestamp = ts - w->last_ts;
	if (ts >= w->last_ts) {
		w->last_ts = ts;
		return;
	}
	p->timestamp = ts;
	p->has_timestamp_clock_id = 1;
	p->timestamp_clock_id = CLOCK_MONOTONIC_ID;
}

/*
 * A track event packet at ts on track: its category (interned by its index
 * + 1, all written in the first event packet) and name; the collected
 * arguments.
 */
static int emit_event(struct pf *w, TrackEvent *te, uint64_t ts, uint64_t track, int cat,
		      const char *name)
{
	Perfetto__Protos__EventCategory cats[NCATS], *catp[NCATS];
	Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	uint64_t cat_iid = cat + 1;

	if (!w->cats_sent) {
		for (int i = 0; i < NCATS; i++) {
			perfetto__protos__event_category__init(&cats[i]);
			cats[i].has_iid = 1;
			cats[i].iid = i + 1;
			cats[i].name = (char *)cat_names[i];
			catp[i] = &cats[i];
		}
		w->interned.event_categories = catp;
		w->interned.n_event_categories = NCATS;
		w->cats_sent = true;
	}
	set_timestamp(w, &p, ts);
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = te;
	if (track != w->default_track) {
		te->has_track_uuid = 1;
		te->track_uuid = track;
	}
	if (name) {
		te->n_category_iids = 1;
		te->category_iids = &cat_iid;
		te->name_iid = event_name_iid(w, name);
		te->name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
		if (!te->name_iid) {
			te->name = (char *)name;
			te->name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
		}
	}
	te->n_debug_annotations = w->nargs;
	te->debug_annotations = w->argp;
	return emit(w, &p);
}

static int emit_end(struct pf *w, uint64_t ts, uint64_t track)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;

	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
	return emit_event(w, &te, ts, track, 0, NULL);
}

/* Open slices ------------------------------------------------------------- */

static uint64_t next_end(const struct track *t)
{
	return t->open[t->nopen - 1];
}

static void heap_set(struct pf *w, size_t i, struct track *t)
{
	w->heap[i] = t;
	t->hpos = i + 1;
}

/* Restore the heap after t's innermost open slice changed. */
static void heap_fix(struct pf *w, struct track *t)
{
	size_t i;

	if (!t->nopen && t->hpos) {             /* nothing open: leave the heap */
		struct track *last = w->heap[--w->nheap];

		i = t->hpos - 1;
		t->hpos = 0;
		if (last == t)
			return;
		heap_set(w, i, last);
		t = last;
	} else if (!t->nopen) {
		return;
	} else if (!t->hpos) {
		heap_set(w, w->nheap++, t);
	}
	for (i = t->hpos - 1; i && next_end(w->heap[(i - 1) / 2]) > next_end(t); i = (i - 1) / 2)
		heap_set(w, i, w->heap[(i - 1) / 2]);
	heap_set(w, i, t);
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= w->nheap)
			break;
		if (c + 1 < w->nheap && next_end(w->heap[c + 1]) < next_end(w->heap[c]))
			c++;
		if (next_end(w->heap[c]) >= next_end(t))
			break;
		heap_set(w, i, w->heap[c]);
		i = c;
	}
	heap_set(w, i, t);
}

/* End t's innermost open slice. */
static int end_slice(struct pf *w, struct track *t)
{
	uint64_t end = next_end(t);

	t->nopen--;
	heap_fix(w, t);
	return emit_end(w, end, (uint64_t)(t - w->tracks) + 1);
}

/*
 * End the open slices of every track that end before ts, earliest first,
 * so that timestamps keep increasing.
 */
static int end_before(struct pf *w, uint64_t ts)
{
	while (w->nheap && next_end(w->heap[0]) < ts && !w->err)
		end_slice(w, w->heap[0]);
	return w->err;
}

/* End the open slices of t that end before ts, or before end. */
static int close_slices(struct pf *w, struct track *t, uint64_t ts, uint64_t end)
{
	while (t->nopen && !w->err && (next_end(t) < ts || next_end(t) < end))
		end_slice(w, t);
	return w->err;
}

/*
 * Open a slice [ts, end) on track (pid, tid), nested in the open ones
 * (ending those it is not inside): call before collecting its arguments,
 * then emit its begin.  Returns the track's uuid, 0 on error.
 */
static uint64_t open_slice_at(struct pf *w, uint32_t pid, uint32_t tid, uint64_t ts,
			      uint64_t end)
{
	struct track *t = find_track(w, pid, tid);

	if (close_slices(w, t, ts, end))
		return 0;
	if (array_grow_bytes((void **)&t->open, &t->cap, t->nopen + 1, sizeof(*t->open))) {
		w->err = -ENOMEM;
		return 0;
	}
	t->open[t->nopen++] = end;
	heap_fix(w, t);
	return (uint64_t)(t - w->tracks) + 1;
}

/* open_slice_at() for an event's slice on its track. */
static uint64_t open_slice(struct pf *w, const struct model_event *ev)
{
	return open_slice_at(w, ev->pid, track_tid(ev), ev->ts, ev->ts + ev->dur);
}

static int emit_begin_at(struct pf *w, uint64_t ts, uint64_t track, TrackEvent *te, int cat,
			 const char *name)
{
	te->has_type = 1;
	te->type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
	return emit_event(w, te, ts, track, cat, name);
}

static int emit_begin(struct pf *w, const struct model_event *ev, uint64_t track,
		      TrackEvent *te, int cat, const char *name)
{
	return emit_begin_at(w, ev->ts, track, te, cat, name);
}

/* The arguments of a driver call, as export_chrome.c's write_call_args. */
static void call_args(struct pf *w, const struct model_event *ev)
{
	const struct model *m = w->m;
	uint32_t f = ev->fields;

	if ((f & MF_FUNC) && ev->kernel)
		arg_string(w, TS_ARG_KERNEL, str(m, ev->kernel));
	else if (f & MF_FUNC)
		arg_hex(w, TS_ARG_KERNEL, ev->func);
	if (f & MF_GRID)
		arg_u32x3(w, TS_ARG_GRID, ev->grid);
	if (f & MF_BLOCK)
		arg_u32x3(w, TS_ARG_BLOCK, ev->block);
	if (f & MF_SHMEM)
		arg_uint(w, TS_ARG_SHMEM, ev->shared_mem);
	if (f & MF_STREAM)
		arg_hex(w, TS_ARG_STREAM, ev->stream);
	if (f & MF_BYTES)
		arg_uint(w, TS_ARG_BYTES, ev->bytes);
	if (f & MF_KIND)
		arg_string(w, TS_ARG_KIND, cuda_copy_kind_name(ev->copy_kind));
	if (f & MF_PTR)
		arg_hex(w, TS_ARG_PTR, ev->ptr);
	if (f & MF_COUNT)
		arg_uint(w, TS_ARG_COUNT, ev->count);
	if (f & MF_HANDLE)
		arg_hex(w, TS_ARG_HANDLE, ev->handle);
	if (f & MF_RET)
		arg_int(w, TS_ARG_RET, ev->ret);
	if ((f & MF_RET) && cuda_result_failed(ev->ret)) {
		char buf[32];

		arg_string(w, TS_ARG_ERROR, cuda_result_label(ev->ret, buf, sizeof(buf)));
	}
	if (f & MF_UNFINISHED)
		arg_bool(w, TS_ARG_UNFINISHED, true);
	if (ev->correlation)
		arg_uint(w, TS_ARG_CORRELATION, ev->correlation);
	if (ev->stack) {
		arg_stack(w, TS_ARG_STACK, ev->stack);
		if (m->stacks[ev->stack - 1].truncated)
			arg_bool(w, TS_ARG_STACK_TRUNCATED, true);
		if (ev->stack_tid) {
			arg_bool(w, TS_ARG_STACK_ATTRIBUTED, true);
			arg_uint(w, TS_ARG_STACK_THREAD, ev->stack_tid);
		}
	}
	if (ev->native)
		arg_stack(w, TS_ARG_NATIVE_STACK, ev->native);
	if (ev->ag_node)
		arg_string(w, TS_ARG_AUTOGRAD_NODE, str(m, ev->ag_node));
	if (ev->ag_fwd)
		arg_stack(w, TS_ARG_AUTOGRAD_FORWARD, ev->ag_fwd);
}

/* A driver call, starting a flow to each GPU record it caused (flows[0..n)). */
static int write_call(struct pf *w, const struct model_event *ev, const uint64_t *flows,
		      size_t n)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	uint64_t track;

	te.n_flow_ids = n;
	te.flow_ids = (uint64_t *)flows;
	track = open_slice(w, ev);
	call_args(w, ev);
	return emit_begin(w, ev, track, &te, CAT_CUDA_API, str(w->m, ev->name));
}

/* A frame's function without its place: "step" of "step (train.py:12)"; NULL: no memory. */
static char *func_name(const char *frame)
{
	const char *paren = strstr(frame, " (");

	return strndup(frame, paren ? (size_t)(paren - frame) : strlen(frame));
}

static int write_scope(struct pf *w, const struct model_event *ev)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	const char *func = str(w->m, ev->name);
	uint64_t track = open_slice(w, ev);
	char *name = func_name(func);
	int ret;

	if (!name)
		return w->err = -ENOMEM;
	arg_string(w, TS_ARG_FUNCTION, func);
	arg_string(w, TS_ARG_FIRST_FRAME, str(w->m, ev->stack));
	ret = emit_begin(w, ev, track, &te, CAT_PYTHON, name);
	free(name);
	return ret;
}

static void where_args(struct pf *w, const struct model_event *ev)
{
	arg_uint(w, TS_ARG_DEVICE, ev->device);
	arg_uint(w, TS_ARG_STREAM, ev->gpu_stream);
	arg_uint(w, TS_ARG_CORRELATION, ev->correlation);
}

/* Kernels, copies, memsets, ending the flow from their call (flow; 0: none). */
static int write_gpu_work(struct pf *w, const struct model_event *ev, uint64_t flow)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	const char *kname = ev->kernel ? str(w->m, ev->kernel) : "kernel";
	const char *name = "Memset";
	int cat = CAT_MEMSET;
	uint64_t track = open_slice(w, ev);
	char copy_name[32];

	if (ev->kind == EV_KERNEL) {
		cat = strcmp(ts_kernel_cat(kname), TS_CAT_NCCL) ? CAT_KERNEL : CAT_NCCL;
		name = kname;
		arg_u32x3(w, TS_ARG_GRID, ev->grid);
		arg_u32x3(w, TS_ARG_BLOCK, ev->block);
		arg_uint(w, TS_ARG_REGISTERS, ev->registers);
		arg_uint(w, TS_ARG_SHMEM, ev->shared_mem);
		arg_uint(w, TS_ARG_STATIC_SHMEM, ev->static_shmem);
		if (ev->args)
			arg_uint(w, TS_ARG_ARGS_HASH, ev->args);
	} else {
		arg_uint(w, TS_ARG_BYTES, ev->bytes);
	}
	if (ev->kind == EV_MEMCPY) {
		cat = CAT_MEMCPY;
		snprintf(copy_name, sizeof(copy_name), TS_NAME_MEMCPY, ts_copy_kind_name(ev->gpu_kind));
		name = copy_name;
		arg_string(w, TS_ARG_KIND, ts_copy_kind_name(ev->gpu_kind));
		arg_double(w, TS_ARG_GBPS, ev->dur ? (double)ev->bytes / ev->dur : 0);
	}
	if (ev->graph_node)
		arg_uint(w, TS_ARG_GRAPH_NODE, ev->graph_node);
	where_args(w, ev);
	if (flow) {
		te.n_terminating_flow_ids = 1;
		te.terminating_flow_ids = &flow;
	}
	return emit_begin(w, ev, track, &te, cat, name);
}

static int write_gpu_wait(struct pf *w, const struct model_event *ev)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	uint64_t track = open_slice(w, ev);

	arg_uint(w, TS_ARG_EVENT, ev->handle);
	where_args(w, ev);
	return emit_begin(w, ev, track, &te, CAT_SYNC, "Wait event");
}

static int write_gpu_memory(struct pf *w, const struct model_event *ev)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	const char *name = ev->gpu_kind == 1 ? "alloc" : ev->gpu_kind == 2 ? "free" : "memory";

	arg_hex(w, TS_ARG_ADDRESS, ev->ptr);
	arg_uint(w, TS_ARG_BYTES, ev->bytes);
	arg_string(w, TS_ARG_MEMORY_KIND, mem_kind_name(ev->copy_kind));
	where_args(w, ev);
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
	return emit_event(w, &te, ev->ts, track_uuid(w, ev->pid, track_tid(ev)), CAT_MEMORY, name);
}

static int write_counter(struct pf *w, const struct mem_sample *s)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;

	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	te.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
	te.counter_value = (int64_t)s->bytes;
	return emit_event(w, &te, s->ts, track_uuid(w, s->pid, COUNTER_BASE + s->device), 0,
			  NULL);
}

/*
 * The GIL waits linked to each holder's span (model_gil_links()): the
 * waits of span i are waits[first[i]] .. waits[first[i + 1] - 1].
 */
struct gil_flows {
	size_t *links, *first, *waits;
};

static int gil_flows_init(struct gil_flows *g, const struct model *m)
{
	int ret = model_gil_links(m, &g->links);

	if (ret || !m->nstates)
		return ret;
	g->first = calloc(m->nstates + 1, sizeof(*g->first));
	g->waits = calloc(m->nstates, sizeof(*g->waits));
	if (!g->first || !g->waits)
		return -ENOMEM;
	/* count each holder's waits, sum: the ends of their runs; fill back to front */
	for (size_t i = 0; i < m->nstates; i++)
		if (g->links[i])
			g->first[g->links[i] - 1]++;
	for (size_t i = 1; i <= m->nstates; i++)
		g->first[i] += g->first[i - 1];
	for (size_t i = m->nstates; i-- > 0; )
		if (g->links[i])
			g->waits[--g->first[g->links[i] - 1]] = i;
	return 0;
}

static void gil_flows_release(struct gil_flows *g)
{
	free(g->links);
	free(g->first);
	free(g->waits);
}

/*
 * A thread state span: a slice on its thread's state track, starting the
 * flows to the GIL waits linked to it (flows[0..n)), ending the one from
 * its own holder's span (end; 0: none).
 */
static int write_state(struct pf *w, const struct model_state_span *s, const uint64_t *flows,
		       size_t n, uint64_t end)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	const char *sc = s->syscall >= 0 ? model_syscall_name(s->syscall) : NULL;
	uint64_t track = open_slice_at(w, s->pid, TS_STATE_TID_BASE + s->tid, s->ts,
				       s->ts + s->dur);
	char name[64];

	te.n_flow_ids = n;
	te.flow_ids = (uint64_t *)flows;
	if (end) {
		te.n_terminating_flow_ids = 1;
		te.terminating_flow_ids = &end;
	}

	model_state_label(s, name, sizeof(name));
	arg_string(w, TS_ARG_STATE, model_state_name(s->state));
	if (sc)
		arg_string(w, TS_ARG_SYSCALL, sc);
	else if (s->syscall >= 0)
		arg_int(w, TS_ARG_SYSCALL, s->syscall);
	if (s->holder)
		arg_uint(w, TS_ARG_HOLDER_TID, s->holder);
	if (s->stack)
		arg_stack(w, TS_ARG_STACK, s->stack);
	return emit_begin_at(w, s->ts, track, &te, CAT_STATE, name);
}

/* A CPU sample: an instant on its thread's state track, named as model_sample_name() says. */
static int write_sample(struct pf *w, const struct model_sample *s)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	const struct model_stack *st = s->stack ? &w->m->stacks[s->stack - 1] : NULL;
	const char *fn;
	size_t len = model_sample_name(w->m, s, &fn);
	char *name = strndup(fn, len);
	int ret;

	if (!name)
		return w->err = -ENOMEM;
	arg_uint(w, TS_ARG_CPU, s->cpu);
	if (s->flags & MODEL_SAMPLE_GC)
		arg_bool(w, TS_ARG_GC, true);
	if (st)
		arg_stack(w, TS_ARG_STACK, s->stack);
	if (s->native)
		arg_stack(w, TS_ARG_NATIVE_STACK, s->native);
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
	ret = emit_event(w, &te, s->ts, track_uuid(w, s->pid, TS_STATE_TID_BASE + s->tid),
			 CAT_SAMPLE, name);
	free(name);
	return ret;
}

/* The first instant of an event, a state or a sample; 0 if none. */
static uint64_t first_ts(const struct model *m)
{
	uint64_t ts = model_states_first(m);

	if (m->nev && m->ev[0].ts < ts)
		ts = m->ev[0].ts;
	return ts == UINT64_MAX ? 0 : ts;
}

/* Track descriptors --------------------------------------------------------- */

static int write_track(struct pf *w, const struct track *t)
{
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	Perfetto__Protos__ThreadDescriptor td = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
	TrackDescriptor d = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	char name[128];

	d.has_uuid = 1;
	d.uuid = (uint64_t)(t - w->tracks) + 1;
	if (t->tid == PROCESS_TID) {
		pd.has_pid = 1;
		pd.pid = t->pid;
		pd.process_name = t->name ? (char *)str(w->m, t->name) : NULL;
		d.process = &pd;
	} else if (t->tid < TS_STATE_TID_BASE) {
		td.has_pid = td.has_tid = 1;
		td.pid = t->pid;
		td.tid = t->tid;
		td.thread_name = t->name ? (char *)str(w->m, t->name) : NULL;
		d.thread = &td;
	} else {
		if (t->tid < TS_GPU_TID_BASE && t->name) {
			snprintf(name, sizeof(name), TS_TRACK_STATE, str(w->m, t->name));
		} else if (t->tid < TS_GPU_TID_BASE) {
			snprintf(name, sizeof(name), TS_TRACK_STATE_TID, t->tid - TS_STATE_TID_BASE);
		} else if (t->tid >= COUNTER_BASE) {
			snprintf(name, sizeof(name), "device memory GPU %u", t->device);
			cd.has_unit = 1;
			cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
			d.counter = &cd;
		} else if ((t->tid & TS_GPU_MEMORY_LANE) == TS_GPU_MEMORY_LANE) {
			snprintf(name, sizeof(name), TS_TRACK_MEMORY, t->device);
		} else {
			snprintf(name, sizeof(name), TS_TRACK_STREAM, t->device, t->stream);
		}
		d.name = name;
		d.has_parent_uuid = 1;
		d.parent_uuid = track_uuid(w, t->pid, PROCESS_TID);
	}
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	p.track_descriptor = &d;
	return emit(w, &p);
}

/*
 * The trace's clock: CLOCK_MONOTONIC, as its timestamps; CLOCK_REALTIME
 * at the model's offset from it (wall-clock times in Perfetto), and
 * CLOCK_BOOTTIME, Perfetto's default clock, equal to it: the model does
 * not know their offset (the time suspended since boot; 0 on machines that
 * never suspend), and Perfetto reports an error for a trace whose default
 * clock is related to none of its clocks.
 */
static int write_clock(struct pf *w)
{
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	Perfetto__Protos__ClockSnapshot__Clock c[4], *cp[4];
	Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	uint64_t ts = w->first_ts;
	static const uint32_t ids[4] = { CLOCK_MONOTONIC_ID, CLOCK_REALTIME_ID, CLOCK_BOOTTIME_ID,
					 CLOCK_DELTA_ID };

	for (int i = 0; i < 4; i++) {
		perfetto__protos__clock_snapshot__clock__init(&c[i]);
		c[i].has_clock_id = c[i].has_timestamp = 1;
		c[i].clock_id = ids[i];
		c[i].timestamp = ts;
		cp[i] = &c[i];
	}
	c[1].timestamp = ts + w->m->realtime_offset_ns;
	c[3].has_is_incremental = c[3].is_incremental = 1;
	w->last_ts = ts;
	cs.n_clocks = 4;
	cs.clocks = cp;
	cs.has_primary_trace_clock = 1;
	cs.primary_trace_clock = PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC;
	p.has_timestamp = p.has_timestamp_clock_id = 1;
	p.timestamp = ts;
	p.timestamp_clock_id = CLOCK_MONOTONIC_ID;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
	p.clock_snapshot = &cs;
	return emit(w, &p);
}

/* Trace metadata ------------------------------------------------------------ */

/* Entries of the per-process dictionaries: one per process each. */
struct per_pid {
	Annotation *e, **ep;
	char (*keys)[12];
	size_t n;               /* used */
};

/*
 * Fill dictionary dict with what(p) of each process under its pid
 * (only those what() sets, unless all).
 */
static void pid_dict(struct pf *w, Annotation *dict, struct per_pid *pp, bool all,
		     void (*what)(struct pf *, const struct model_process *, Annotation *))
{
	dict->dict_entries = pp->ep + pp->n;
	for (size_t i = 0; i < w->m->nprocs; i++) {
		Annotation *e = &pp->e[pp->n];

		perfetto__protos__debug_annotation__init(e);
		what(w, &w->m->procs[i], e);
		if (!all && e->value_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE__NOT_SET)
			continue;
		snprintf(pp->keys[pp->n], sizeof(pp->keys[0]), "%u", w->m->procs[i].pid);
		e->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME;
		e->name = pp->keys[pp->n];
		pp->ep[pp->n++] = e;
		dict->n_dict_entries++;
	}
}

static void v_dropped(struct pf *w, const struct model_process *p, Annotation *e)
{
	set_uint(e, p->dropped);
}

static void v_missed(struct pf *w, const struct model_process *p, Annotation *e)
{
	if (p->missed)
		set_string(w, e, str(w->m, p->missed));
}

static void v_gpu_dropped(struct pf *w, const struct model_process *p, Annotation *e)
{
	if (p->gpu_dropped)
		set_uint(e, p->gpu_dropped);
}

static void v_gpu_error(struct pf *w, const struct model_process *p, Annotation *e)
{
	if (p->gpu_error)
		set_string(w, e, str(w->m, p->gpu_error));
}

static void set_us(Annotation *e, uint64_t ns)
{
	e->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
	e->double_value = ns / 1e3;
}

/* After ts_base_ns, as in the JSON: exact µs (absolute ones overflow a double's ns). */
static void v_window(struct pf *w, const struct model_process *p, Annotation *e)
{
	if (p->gpu_window_ns)
		set_us(e, p->gpu_window_ns - w->m->ts_base_ns);
}

static void v_stall(struct pf *w, const struct model_process *p, Annotation *e)
{
	if (p->inject_stall_ns)
		set_us(e, p->inject_stall_ns);
}

static void v_inject_tid(struct pf *w, const struct model_process *p, Annotation *e)
{
	if (p->inject_stall_ns)
		set_uint(e, p->inject_tid);
}

#define NDICTS 7

/*
 * The JSON's "gpubpf" object as an instant "gpubpf" (category "gpubpf") on
 * the global track at the first event, state or sample: the same keys as
 * annotations (ts_base_ns too: the window's time is after it, as in the
 * JSON, though the events' are absolute), the GPU ones under "gpu.",
 * times in µs; late_attach as
 * "gpu.late_attach_us" (pid: stall) and "gpu.late_attach_thread" (pid:
 * thread).
 */
static int write_metadata(struct pf *w)
{
	const struct model *m = w->m;
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	size_t n = NDICTS * m->nprocs + 1;
	struct per_pid pp = {
		.e = calloc(n, sizeof(*pp.e)),
		.ep = calloc(n, sizeof(*pp.ep)),
		.keys = calloc(n, sizeof(*pp.keys)),
	};
	char host[sizeof(m->host) + 1];
	Annotation *a;

	if (!pp.e || !pp.ep || !pp.keys) {
		w->err = -ENOMEM;
		goto cleanup;
	}
	snprintf(host, sizeof(host), "%.*s", (int)sizeof(m->host), m->host);
	arg_string(w, TS_META_VERSION, GPUBPF_VERSION);
	arg_string(w, TS_META_CLOCK, "CLOCK_MONOTONIC");
	arg_int(w, TS_META_REALTIME, m->realtime_offset_ns);
	arg_uint(w, TS_META_TS_BASE, m->ts_base_ns);
	arg_string(w, TS_META_HOST, host);
	if ((a = arg(w, TS_META_DROPPED)))
		pid_dict(w, a, &pp, true, v_dropped);
	arg_uint(w, TS_META_DROPPED_TOTAL, m->dropped_total);
	if ((a = arg(w, TS_META_MISSING)))
		pid_dict(w, a, &pp, false, v_missed);
	arg_uint(w, TS_META_EVENTS, w->nevents);
	if ((a = arg(w, TS_META_GPU "." TS_GPU_DROPPED)))
		pid_dict(w, a, &pp, false, v_gpu_dropped);
	if ((a = arg(w, TS_META_GPU "." TS_GPU_ERRORS)))
		pid_dict(w, a, &pp, false, v_gpu_error);
	if ((a = arg(w, TS_META_GPU "." TS_GPU_WINDOW)))
		pid_dict(w, a, &pp, false, v_window);
	if ((a = arg(w, TS_META_GPU "." TS_GPU_LATE_ATTACH "_us")))
		pid_dict(w, a, &pp, false, v_stall);
	if ((a = arg(w, TS_META_GPU "." TS_GPU_LATE_ATTACH "_thread")))
		pid_dict(w, a, &pp, false, v_inject_tid);
	arg_uint(w, TS_META_GPU "." TS_GPU_SKEWED, m->skewed);
	arg_double(w, TS_META_GPU "." TS_GPU_MAX_SKEW, m->max_skew_ns / 1e3);
	arg_uint(w, TS_META_GPU "." TS_GPU_REPAIRED, m->clock_repaired);
	arg_double(w, TS_META_GPU "." TS_GPU_MAX_REPAIR, m->max_clock_repair_ns / 1e3);
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
	emit_event(w, &te, w->first_ts, 0, CAT_GPUBPF, "gpubpf");
cleanup:
	free(pp.e);
	free(pp.ep);
	free(pp.keys);
	return w->err;
}

/* Items: what is written, in time order ------------------------------------ */

enum { IT_EVENT, IT_STATE, IT_SAMPLE, IT_COUNTER };

/* Ranks of GPU records of one call with an arrow each (a graph's kernels). */
#define FLOW_RANKS (1u << 24)

/*
 * A flow's id from an arrow id of the model (unique in the trace, see
 * model_part.h: a call's model_event.flow, or a GIL wait's, the wait's
 * index + 1 after its part's events) and a rank (a GPU record's
 * model_event.flow_k; 0 for a GIL wait's).
 */
static uint64_t pf_flow(uint64_t arrow, uint32_t rank)
{
	return arrow << 24 | rank;
}

/*
 * One thing written: an event, a thread state span, a CPU sample or a
 * memory counter value, with the ids of the flows it starts (flows[0..n))
 * and of the one it ends (end; 0: none).
 */
struct item {
	uint32_t kind;
	uint32_t nflows;
	uint64_t end;
	union {
		const struct model_event *ev;
		const struct model_state_span *st;
		const struct model_sample *sm;
		const struct mem_sample *mc;
	};
	const uint64_t *flows;
};

typedef int (*item_fn)(void *ctx, const struct item *it);

static uint64_t item_ts(const struct item *it)
{
	switch (it->kind) {
	case IT_EVENT:
		return it->ev->ts;
	case IT_STATE:
		return it->st->ts;
	case IT_SAMPLE:
		return it->sm->ts;
	}
	return it->mc->ts;
}

/* A slice's duration; 0 for instants and counter values. */
static uint64_t item_dur(const struct item *it)
{
	if (it->kind == IT_STATE)
		return it->st->dur;
	return it->kind == IT_EVENT && it->ev->kind != EV_MEMORY ? it->ev->dur : 0;
}

/* A model's items, walked in time order (walk_model()). */
struct walk {
	const struct model *m;
	struct gil_flows gil;
	size_t *order;                  /* m->states by start time */
	const struct mem_sample *ms;
	size_t nms, k, nstates, nsamples;       /* counter values, states, samples walked */
	uint64_t *flows;
	size_t cap_flows;
	item_fn fn;
	void *ctx;
};

/* Room for n flow ids in k->flows. */
static int walk_flows(struct walk *k, size_t n)
{
	return array_grow(&k->flows, &k->cap_flows, n ? n : 1);
}

static int walk_event(struct walk *k, size_t i)
{
	const struct model *m = k->m;
	const struct model_event *ev = &m->ev[i];
	struct item it = { .kind = IT_EVENT, .ev = ev };
	size_t n = 0;

	if (ev->kind == EV_API) {
		n = !ev->flow ? 0 : ev->flow_k < FLOW_RANKS ? ev->flow_k : FLOW_RANKS;
		if (walk_flows(k, n))
			return -ENOMEM;
		for (uint32_t r = 0; r < n; r++)
			k->flows[r] = pf_flow(ev->flow, r);
		it.flows = k->flows;
		it.nflows = n;
	} else if (ev->kind != EV_SCOPE && ev->kind != EV_MEMORY && !gpu_wait_event(ev)) {
		if (!gpu_on_track(ev))
			return 0;
		if (ev->flow && ev->flow_k < FLOW_RANKS)
			it.end = pf_flow(ev->flow, ev->flow_k);
	}
	return k->fn(k->ctx, &it);
}

static int walk_state(struct walk *k, size_t i)
{
	const struct model *m = k->m;
	const struct gil_flows *g = &k->gil;
	size_t n = g->first ? g->first[i + 1] - g->first[i] : 0;
	struct item it = { .kind = IT_STATE, .st = &m->states[i], .nflows = n,
			   .flows = k->flows };
	uint64_t base = m->flow_base + m->nev + 1;

	if (walk_flows(k, n))
		return -ENOMEM;
	for (size_t j = 0; j < n; j++)
		k->flows[j] = pf_flow(base + g->waits[g->first[i] + j], 0);
	it.flows = k->flows;
	if (g->links && g->links[i])
		it.end = pf_flow(base + i, 0);
	return k->fn(k->ctx, &it);
}

/* The counter values, states and samples at or before ts, earliest first. */
static int walk_others(struct walk *k, uint64_t ts)
{
	const struct model *m = k->m;
	int ret = 0;

	while (!ret) {
		uint64_t c = k->k < k->nms ? k->ms[k->k].ts : UINT64_MAX;
		uint64_t st = k->nstates < m->nstates ? m->states[k->order[k->nstates]].ts
						      : UINT64_MAX;
		uint64_t sm = k->nsamples < m->nsamples ? m->samples[k->nsamples].ts : UINT64_MAX;
		uint64_t next = c < st ? c : st;

		next = next < sm ? next : sm;
		if (next > ts || next == UINT64_MAX)
			break;
		if (c == next)
			ret = k->fn(k->ctx, &(struct item){ .kind = IT_COUNTER,
							     .mc = &k->ms[k->k++] });
		else if (st == next)
			ret = walk_state(k, k->order[k->nstates++]);
		else
			ret = k->fn(k->ctx, &(struct item){ .kind = IT_SAMPLE,
							     .sm = &m->samples[k->nsamples++] });
	}
	return ret;
}

/*
 * Hand fn m's items in time order: its events, with its memory counter
 * values ms[0..nms), thread states and samples at or before each.
 */
static int walk_model(const struct model *m, const struct mem_sample *ms, size_t nms,
		      item_fn fn, void *ctx)
{
	struct walk k = { .m = m, .ms = ms, .nms = nms, .fn = fn, .ctx = ctx };
	int ret = model_states_by_time(m, &k.order) ?: gil_flows_init(&k.gil, m);

	for (size_t i = 0; i < m->nev && !ret; i++)
		ret = walk_others(&k, m->ev[i].ts) ?: walk_event(&k, i);
	if (!ret)
		ret = walk_others(&k, UINT64_MAX);
	free(k.order);
	free(k.flows);
	gil_flows_release(&k.gil);
	return ret;
}

/* Add an item's track (and its process's) to a track_set (tracks_finish()). */
static int collect_item(void *set, const struct item *it)
{
	const struct model_event *ev = it->ev;
	int ret;

	switch (it->kind) {
	case IT_EVENT:
		if (ev->kind != EV_API && ev->kind != EV_SCOPE && !gpu_has_track(ev))
			return 0;
		ret = add_track(set, ev->pid, PROCESS_TID, 0, 0, 0);
		return ret ?: add_track(set, ev->pid, track_tid(ev), ev->device, ev->gpu_stream, 1);
	case IT_STATE:
		return add_track(set, it->st->pid, TS_STATE_TID_BASE + it->st->tid, 0, 0, 1);
	case IT_SAMPLE:
		return add_track(set, it->sm->pid, TS_STATE_TID_BASE + it->sm->tid, 0, 0, 1);
	}
	return add_track(set, it->mc->pid, COUNTER_BASE + it->mc->device, it->mc->device, 0, 0);
}

/* Write an item, after the ends of the slices that end before it. */
static int write_item(void *pf, const struct item *it)
{
	struct pf *w = pf;
	const struct model_event *ev = it->ev;

	if (end_before(w, item_ts(it)))
		return w->err;
	switch (it->kind) {
	case IT_STATE:
		return write_state(w, it->st, it->flows, it->nflows, it->end);
	case IT_SAMPLE:
		return write_sample(w, it->sm);
	case IT_COUNTER:
		return write_counter(w, it->mc);
	}
	if (ev->kind == EV_API)
		return write_call(w, ev, it->flows, it->nflows);
	if (ev->kind == EV_SCOPE)
		return write_scope(w, ev);
	if (ev->kind == EV_MEMORY)
		return write_gpu_memory(w, ev);
	if (gpu_wait_event(ev))
		return write_gpu_wait(w, ev);
	return write_gpu_work(w, ev, it->end);
}

/* The writer ---------------------------------------------------------------- */

/* A writer of m's strings and stacks into out. */
static int pf_init(struct pf *w, const struct model *m, struct sink *out)
{
	*w = (struct pf){ .m = m, .out = out };
	perfetto__protos__interned_data__init(&w->interned);
	itab_init(&w->names);
	itab_init(&w->anames);
	itab_init(&w->strs);
	w->stack_iid = calloc(m->nstacks + 1, sizeof(*w->stack_iid));
	return w->stack_iid ? 0 : -ENOMEM;
}

static void pf_release(struct pf *w)
{
	for (size_t i = 0; i < w->ntracks; i++)
		free(w->tracks[i].open);
	free(w->tracks);
	free(w->heap);
	free(w->stack_iid);
	strtab_release(&w->names.t);
	strtab_release(&w->anames.t);
	strtab_release(&w->strs.t);
	free(w->new_names);
	free(w->new_anames);
	free(w->new_strs);
	for (int i = 0; i < 3; i++)
		free(w->ptrs[i]);
	free(w->buf);
	free(w->chunk);
	free(w->zbuf);
}

/* What comes before the items: the clock, the tracks of set, the metadata. */
static int write_head(struct pf *w, struct track_set *set)
{
	int ret = tracks_finish(w, set);

	w->heap = calloc(w->ntracks + 1, sizeof(*w->heap));
	if (!ret && !w->heap)
		ret = -ENOMEM;
	if (!ret)
		ret = write_clock(w);
	for (size_t i = 0; i < w->ntracks && !ret; i++)
		ret = write_track(w, &w->tracks[i]);
	return ret ?: write_metadata(w);
}

/* After the items: the slices still open, the last packets. */
static int write_tail(struct pf *w)
{
	return end_before(w, UINT64_MAX) ?: flush_chunk(w);
}

static int perfetto_write(const struct model *m, const struct export_opts *opts,
			  struct sink *out)
{
	struct mem_sample *ms = NULL;
	struct track_set set = { 0 };
	struct pf w;
	size_t nms = 0;
	int ret = pf_init(&w, m, out) ?: memory_counters(m, opts->mem_sample_rate, &ms, &nms) ?:
		  walk_model(m, ms, nms, collect_item, &set);

	w.first_ts = first_ts(m);
	w.nevents = m->nev;
	if (!ret)
		ret = write_head(&w, &set) ?: walk_model(m, ms, nms, write_item, &w) ?:
		      write_tail(&w);
	free(set.tr);
	free(ms);
	pf_release(&w);
	return ret;
}

/* A trace in parts (see export.h) --------------------------------------------- */

/*
 * An item in a run: this head, the object (struct model_event,
 * model_state_span, model_sample or mem_sample), then nflows flow ids.
 * Runs are this process's own files: native layout.
 */
struct item_rec {
	uint32_t kind, nflows;
	uint64_t end;
};

static const size_t item_size[] = {
	[IT_EVENT] = sizeof(struct model_event), [IT_STATE] = sizeof(struct model_state_span),
	[IT_SAMPLE] = sizeof(struct model_sample), [IT_COUNTER] = sizeof(struct mem_sample),
};

struct perfetto_parts {
	struct runs *runs;
	struct mem_counting *mc;        /* memory counts, from part to part */
	struct export_opts opts;
	struct track_set tracks;        /* of every part, counted */
	uint64_t first_ts, events;
	uint8_t *rec;                   /* the record being written */
	size_t cap_rec;
};

static void parts_free(void *state)
{
	struct perfetto_parts *p = state;

	if (!p)
		return;
	runs_close(p->runs);
	mem_counting_free(p->mc);
	free(p->tracks.tr);
	free(p->rec);
	free(p);
}

static int parts_open(void **state, const char *path, const struct export_opts *opts)
{
	struct perfetto_parts *p = calloc(1, sizeof(*p));

	*state = p;
	if (!p)
		return -ENOMEM;
	p->opts = *opts;
	p->first_ts = UINT64_MAX;
	p->mc = mem_counting_new();
	return p->mc ? runs_open(&p->runs, path) : -ENOMEM;
}

/* An item into the newest run, its track counted. */
static int put_item(void *state, const struct item *it)
{
	struct perfetto_parts *p = state;
	struct item_rec h = { .kind = it->kind, .nflows = it->nflows, .end = it->end };
	size_t size = item_size[it->kind], len = sizeof(h) + size + it->nflows * sizeof(uint64_t);
	int ret = collect_item(&p->tracks, it);

	if (ret || array_grow_bytes((void **)&p->rec, &p->cap_rec, len, 1))
		return ret ?: -ENOMEM;
	memcpy(p->rec, &h, sizeof(h));
	memcpy(p->rec + sizeof(h), it->ev, size);       /* any member: the object */
	if (it->nflows)
		memcpy(p->rec + sizeof(h) + size, it->flows, it->nflows * sizeof(uint64_t));
	return runs_put(p->runs, item_ts(it), item_dur(it), p->rec, len);
}

static int parts_add(void *state, const struct model *m)
{
	struct perfetto_parts *p = state;
	struct mem_sample *ms = NULL;
	uint64_t first = first_ts(m);
	size_t nms = 0;
	int ret = runs_add(p->runs) ?:
		  mem_counting_run(p->mc, m, p->opts.mem_sample_rate, &ms, &nms) ?:
		  walk_model(m, ms, nms, put_item, p);

	free(ms);
	if (first && first < p->first_ts)
		p->first_ts = first;
	p->events += m->nev;
	return ret;
}

/* An item read back from a run, written. */
static int get_item(void *pf, uint64_t ts, uint64_t dur, const void *rec, size_t len)
{
	union {
		struct model_event ev;
		struct model_state_span st;
		struct model_sample sm;
		struct mem_sample mc;
	} obj;
	struct item_rec h;
	struct item it;

	if (len < sizeof(h))
		return -EIO;
	memcpy(&h, rec, sizeof(h));
	if (h.kind > IT_COUNTER ||
	    len != sizeof(h) + item_size[h.kind] + (size_t)h.nflows * sizeof(uint64_t))
		return -EIO;
	memcpy(&obj, (const uint8_t *)rec + sizeof(h), item_size[h.kind]);
	it = (struct item){ .kind = h.kind, .nflows = h.nflows, .end = h.end, .ev = &obj.ev,
			    .flows = (const void *)((const uint8_t *)rec + sizeof(h) +
						    item_size[h.kind]) };
	return write_item(pf, &it);
}

static int parts_finish(void *state, const struct model *m, struct sink *out)
{
	struct perfetto_parts *p = state;
	struct pf w;
	int ret = parts_add(p, m) ?: pf_init(&w, m, out);

	if (ret)
		return ret;
	w.first_ts = p->first_ts == UINT64_MAX ? 0 : p->first_ts;
	w.nevents = p->events;
	ret = write_head(&w, &p->tracks) ?: runs_merge(p->runs, get_item, &w) ?: write_tail(&w);
	pf_release(&w);
	return ret;
}

static unsigned long long parts_bytes(const void *state)
{
	const struct perfetto_parts *p = state;

	return runs_bytes(p->runs);
}

const struct exporter export_perfetto = {
	.name = "perfetto",
	.description = "Perfetto protobuf TrackEvents (ui.perfetto.dev, trace_processor)",
	.write = perfetto_write,
	.parts_open = parts_open,
	.parts_add = parts_add,
	.parts_finish = parts_finish,
	.parts_bytes = parts_bytes,
	.parts_free = parts_free,
};
