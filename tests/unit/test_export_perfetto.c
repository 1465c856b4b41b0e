// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for the Perfetto exporter (.pftrace): a small model exported
 * and decoded again with protobuf-c, packet by packet.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/sink.h"
#include "model/cuda_calls.h"
#include "model/model.h"
#include "model_util.h"
#include "tap.h"
#include "trace/export.h"
#include "trace/perfetto_trace.pb-c.h"

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent TrackEvent;
typedef Perfetto__Protos__DebugAnnotation Annotation;

#define T0 5000000000000ULL     /* 83 minutes of uptime, in ns */

static struct model_event *add(struct model *m, uint64_t ts, uint64_t dur, uint32_t tid,
			       const char *name, unsigned family)
{
	struct model_event *e = unit_event(m, ts, dur, 100, tid, name);

	e->family = family;
	return e;
}

static struct model_event *add_gpu(struct model *m, int kind, uint64_t ts, uint64_t dur,
				   uint32_t corr)
{
	struct model_event *e = model_add_event(m);

	e->kind = kind;
	e->ts = ts;
	e->dur = dur;
	e->pid = 100;
	e->tid = 100;
	e->device = 0;
	e->gpu_stream = 7;
	e->correlation = corr;
	return e;
}

/*
 * Process 100 "python3", thread 100: train_step (a Python frame) around a
 * launch (correlation 11, kernel gemm, 1 kernel) and a graph launch
 * (correlation 12, 2 kernels); a memcpy on thread 101, no stack, no GPU
 * record; an allocation record on GPU 0.  Thread 101's states: running,
 * waiting for the GIL held by 100 (futex), reading; a CPU sample of it in
 * train_step while running.
 */
static void build_model(struct model *m)
{
	uint32_t frames[2], funcs[2];
	struct model_event *e;

	model_init(m);
	snprintf(m->host, sizeof(m->host), "node-7");
	m->realtime_offset_ns = 1700000000123456789LL;
	model_process(m, 100, "python3")->dropped = 3;
	model_thread(m, 100, 100, "python3");
	model_thread(m, 100, 101, "loader");
	frames[0] = strtab_intern(&m->strs, "train_step (t.py:12)");
	funcs[0] = strtab_intern(&m->strs, "train_step (t.py)");
	frames[1] = strtab_intern(&m->strs, "<module> (t.py:40)");
	funcs[1] = strtab_intern(&m->strs, "<module> (t.py)");
	model_add_stack(m, 100, 0x51, 0, 2, frames, funcs);
	model_set_kernel_name(m, 100, 0xabc, "gemm");

	e = add(m, T0 + 1000, 500, 100, "cuLaunchKernel", CF_LAUNCH);
	e->fields = MF_GRID | MF_BLOCK | MF_STREAM | MF_FUNC | MF_RET;
	e->func = 0xabc;
	e->grid[0] = 4, e->grid[1] = 2, e->grid[2] = 1;
	e->block[0] = 256, e->block[1] = 1, e->block[2] = 1;
	e->stream = 0x55aa00;
	e->pystack = 0x51;
	model_add_corr(m, T0 + 1100, 100, 100, 11);
	e = add(m, T0 + 2000, 0, 100, "cuGraphLaunch", CF_GRAPH);
	e->fields = MF_HANDLE;
	e->handle = 0x1234;
	e->pystack = 0x51;
	model_add_corr(m, T0 + 2000, 100, 100, 12);
	e = add(m, T0 + 2500, 300, 101, "cuMemcpyHtoD_v2", CF_MEMCPY);
	e->fields = MF_BYTES | MF_KIND;
	e->bytes = 4096;
	e->copy_kind = CK_HTOD;

	add_gpu(m, EV_KERNEL, T0 + 3000, 400, 11)->kernel = strtab_intern(&m->strs, "gemm");
	add_gpu(m, EV_KERNEL, T0 + 4000, 100, 12);
	add_gpu(m, EV_KERNEL, T0 + 4100, 100, 12);
	e = add_gpu(m, EV_MEMORY, T0 + 5000, 0, 0);
	e->gpu_kind = 1;
	e->copy_kind = 3;       /* device */
	e->ptr = 0x7f00;
	e->bytes = 8192;

	model_thread_state(m, 100, 101, T0 + 1000, MS_RUNNING, -1, 0);
	model_thread_state(m, 100, 101, T0 + 3000, MS_GIL_WAIT, 202, 100);
	model_thread_state(m, 100, 101, T0 + 4000, MS_IO, 0, 0);
	model_states_end(m, T0 + 6000);
	model_add_sample(m, &(struct model_sample){ .ts = T0 + 2000, .pid = 100, .tid = 101, .cpu = 1,
				      .pystack = 0x51, .flags = 0 });
	model_finish(m);
}

/* What a decoded trace holds. */
struct trace {
	Packet **p;
	uint64_t *ts;           /* each packet's absolute time */
	size_t n;
	uint64_t last;          /* the incremental clock (64) */
	size_t compressed;      /* packets of compressed packets */
	char *names[64], *cats[64], *anames[64], *strs[64];
	int redefined, undefined;
};

static int define(char **tab, uint64_t iid, const char *s)
{
	if (iid >= 64 || tab[iid])
		return 1;
	tab[iid] = strdup(s);
	return 0;
}

static void intern(struct trace *t, const Perfetto__Protos__InternedData *in)
{
	for (size_t i = 0; in && i < in->n_event_names; i++)
		t->redefined += define(t->names, in->event_names[i]->iid, in->event_names[i]->name);
	for (size_t i = 0; in && i < in->n_event_categories; i++)
		t->redefined += define(t->cats, in->event_categories[i]->iid,
				       in->event_categories[i]->name);
	for (size_t i = 0; in && i < in->n_debug_annotation_names; i++)
		t->redefined += define(t->anames, in->debug_annotation_names[i]->iid,
				       in->debug_annotation_names[i]->name);
	for (size_t i = 0; in && i < in->n_debug_annotation_string_values; i++) {
		Perfetto__Protos__InternedString *s = in->debug_annotation_string_values[i];
		char buf[256];

		snprintf(buf, sizeof(buf), "%.*s", (int)s->str.len, (char *)s->str.data);
		t->redefined += define(t->strs, s->iid, buf);
	}
}

static const char *lookup(struct trace *t, char **tab, uint64_t iid)
{
	if (iid < 64 && tab[iid])
		return tab[iid];
	t->undefined++;
	return "?";
}

static int decode_packets(struct trace *t, const uint8_t *buf, size_t len);

/* A packet: inflated and decoded in its place if it holds compressed packets. */
static int add_packet(struct trace *t, Packet *p)
{
	static uint8_t inner[8 << 20];
	uLongf n = sizeof(inner);

	if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_COMPRESSED_PACKETS) {
		t->compressed++;
		if (uncompress(inner, &n, p->compressed_packets.data,
			       p->compressed_packets.len) != Z_OK)
			return -1;
		perfetto__protos__trace_packet__free_unpacked(p, NULL);
		return decode_packets(t, inner, n);
	}
	t->p = realloc(t->p, (t->n + 1) * sizeof(*t->p));
	t->ts = realloc(t->ts, (t->n + 1) * sizeof(*t->ts));
	t->p[t->n] = p;
	if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT)
		t->last = p->clock_snapshot->clocks[3]->timestamp;
	t->ts[t->n] = p->timestamp;
	if (p->has_timestamp && p->timestamp_clock_id != 3)
		t->ts[t->n] = t->last += p->timestamp;
	intern(t, p->interned_data);
	t->n++;
	return 0;
}

/* Each Trace.packet (tag 0x0a, length, packet) of buf in turn. */
static int decode_packets(struct trace *t, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		uint64_t n = 0;
		int shift = 0;
		Packet *p;

		if (buf[off++] != 0x0a)
			return -1;
		do
			n |= (uint64_t)(buf[off] & 0x7f) << shift, shift += 7;
		while (buf[off++] & 0x80);
		p = perfetto__protos__trace_packet__unpack(NULL, n, buf + off);
		if (!p || add_packet(t, p))
			return -1;
		off += n;
	}
	return 0;
}

/* Decode path, the packets of compressed ones in their place. */
static int decode(const char *path, struct trace *t)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t len;

	memset(t, 0, sizeof(*t));
	if (!f)
		return -1;
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return decode_packets(t, buf, len);
}

static void release(struct trace *t)
{
	for (size_t i = 0; i < t->n; i++)
		perfetto__protos__trace_packet__free_unpacked(t->p[i], NULL);
	free(t->p);
	free(t->ts);
	for (int i = 0; i < 64; i++)
		free(t->names[i]), free(t->cats[i]), free(t->anames[i]), free(t->strs[i]);
}

static const TrackEvent *event(const Packet *p)
{
	return p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT ? p->track_event :
										  NULL;
}

/*
 * The first slice begin or instant named name, of category cat unless
 * NULL; its packet in *pp.
 */
static const TrackEvent *find_cat(struct trace *t, const char *cat, const char *name,
				  const Packet **pp)
{
	for (size_t i = 0; i < t->n; i++) {
		const TrackEvent *e = event(t->p[i]);

		if (e && e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID &&
		    !strcmp(lookup(t, t->names, e->name_iid), name) &&
		    (!cat || (e->n_category_iids == 1 &&
			      !strcmp(lookup(t, t->cats, e->category_iids[0]), cat)))) {
			*pp = t->p[i];
			return e;
		}
	}
	*pp = NULL;
	return NULL;
}

static const TrackEvent *find(struct trace *t, const char *name, const Packet **pp)
{
	return find_cat(t, NULL, name, pp);
}

static size_t index_of(struct trace *t, const Packet *p)
{
	size_t i = 0;

	while (i < t->n && t->p[i] != p)
		i++;
	return i;
}

static const Annotation *annotation(struct trace *t, const TrackEvent *e, const char *name)
{
	for (size_t i = 0; e && i < e->n_debug_annotations; i++)
		if (!strcmp(lookup(t, t->anames, e->debug_annotations[i]->name_iid), name))
			return e->debug_annotations[i];
	return NULL;
}

static const char *string_arg(struct trace *t, const Annotation *a)
{
	if (!a || a->value_case != PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID)
		return "";
	return lookup(t, t->strs, a->string_value_iid);
}

static uint64_t track_named(struct trace *t, const char *name, uint64_t *parent)
{
	for (size_t i = 0; i < t->n; i++) {
		const Perfetto__Protos__TrackDescriptor *d = t->p[i]->track_descriptor;

		if (t->p[i]->data_case != PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR)
			continue;
		if ((d->name && !strcmp(d->name, name)) ||
		    (d->thread && d->thread->thread_name && !strcmp(d->thread->thread_name, name)) ||
		    (d->process && d->process->process_name &&
		     !strcmp(d->process->process_name, name))) {
			if (parent)
				*parent = d->parent_uuid;
			return d->uuid;
		}
	}
	return 0;
}

static void check_packets(struct trace *t)
{
	size_t flags_ok = 0, begins = 0, ends = 0, instants = 0, counters = 0, descs = 0;

	uint64_t last = 0;
	int inorder = 1;

	ok(t->n > 0 && t->p[0]->sequence_flags == 1 && t->p[0]->trace_packet_defaults &&
	   t->p[0]->trace_packet_defaults->timestamp_clock_id == 64,
	   "first packet: incremental state cleared, default clock the sequence's 64");
	ok(t->n > 0 && t->p[0]->trace_packet_defaults &&
	   t->p[0]->trace_packet_defaults->track_event_defaults &&
	   t->p[0]->trace_packet_defaults->track_event_defaults->track_uuid,
	   "and a default track");
	ok(t->n > 0 && t->p[0]->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT &&
	   t->p[0]->clock_snapshot->primary_trace_clock == 3 &&
	   t->p[0]->clock_snapshot->n_clocks == 4 &&
	   t->p[0]->clock_snapshot->clocks[1]->timestamp == T0 + 1000 + 1700000000123456789ULL &&
	   t->p[0]->clock_snapshot->clocks[3]->clock_id == 64 &&
	   t->p[0]->clock_snapshot->clocks[3]->is_incremental,
	   "a clock snapshot: MONOTONIC the trace clock, REALTIME at the model's offset, "
	   "64 incremental");
	for (size_t i = 0; i < t->n; i++) {
		const TrackEvent *e = event(t->p[i]);

		flags_ok += t->p[i]->trusted_packet_sequence_id == 1 &&
			    t->p[i]->has_sequence_flags == !i;
		descs += t->p[i]->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
		if (!e)
			continue;
		inorder &= t->ts[i] >= last && t->p[i]->timestamp_clock_id != 3;
		last = t->ts[i];
		begins += e->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
		ends += e->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
		instants += e->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
		counters += e->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	}
	is_int(flags_ok, t->n, "every packet on sequence 1, only the first with flags");
	/* process, 2 threads, loader state, GPU 0 / stream 7, GPU 0 / memory, its counter */
	is_int(descs, 7, "seven track descriptors");
	/* 3 calls, 1 Python scope (train_step; <module> too), 3 kernels, 3 states */
	is_int(begins, 11, "eleven slices: 3 calls, 2 Python scopes, 3 kernels, 3 states");
	is_int(ends, begins, "each slice ended");
	is_int(instants, 3, "three instants: gpubpf metadata, the allocation, the sample");
	ok(counters >= 1, "memory counter values (%zu)", counters);
	is_int(t->redefined, 0, "each interned iid defined once");
	ok(inorder, "events in time order, as deltas");
}

static void check_tracks(struct trace *t)
{
	uint64_t proc = track_named(t, "python3", NULL), parent = 0, mparent = 0, cparent = 0;
	uint64_t gpu = track_named(t, "GPU 0 / stream 7", &parent);

	ok(proc && gpu && parent == proc, "GPU 0 / stream 7 under its process");
	ok(track_named(t, "GPU 0 / memory", &mparent) && mparent == proc,
	   "GPU 0 / memory under its process");
	ok(track_named(t, "device memory GPU 0", &cparent) && cparent == proc,
	   "counter track device memory GPU 0 under its process");
	ok(track_named(t, "loader", NULL), "thread 101 named");
	ok(track_named(t, "loader state", &parent) && parent == proc &&
	   track_named(t, "loader state", NULL) == track_named(t, "loader", NULL) + 1,
	   "loader state under its process, right after its thread");
}

/* Is e on track, with category cat, at ts in the packet p? */
static int placed(struct trace *t, const TrackEvent *e, const Packet *p, uint64_t track,
		  const char *cat, uint64_t ts)
{
	return e && e->has_track_uuid && e->track_uuid == track && e->n_category_iids == 1 &&
	       !strcmp(lookup(t, t->cats, e->category_iids[0]), cat) &&
	       t->ts[index_of(t, p)] == ts;
}

/* Thread 101's states and sample, as the JSON's. */
static void check_states(struct trace *t)
{
	uint64_t track = track_named(t, "loader state", NULL);
	const Packet *rp, *gp, *ip, *sp, *cp;
	const TrackEvent *run = find(t, "Running", &rp);
	const TrackEvent *gil = find(t, "GIL wait (held by 100)", &gp);
	const TrackEvent *io = find(t, "read", &ip);
	const TrackEvent *smp = find_cat(t, "sample", "train_step", &sp);
	const TrackEvent *call = find(t, "cuLaunchKernel", &cp);
	const Annotation *holder = annotation(t, gil, "holder_tid");
	const Annotation *cpu = annotation(t, smp, "cpu");
	size_t end_at = 0;

	ok(placed(t, run, rp, track, "thread_state", T0 + 1000) &&
	   !strcmp(string_arg(t, annotation(t, run, "state")), "running") &&
	   run->n_debug_annotations == 1, "Running at its ns, args: state running only");
	ok(placed(t, gil, gp, track, "thread_state", T0 + 3000) &&
	   !strcmp(string_arg(t, annotation(t, gil, "state")), "gil_wait") &&
	   !strcmp(string_arg(t, annotation(t, gil, "syscall")), "futex") &&
	   holder && holder->uint_value == 100,
	   "GIL wait (held by 100): state gil_wait, syscall futex, holder_tid 100");
	ok(placed(t, io, ip, track, "thread_state", T0 + 4000) &&
	   !strcmp(string_arg(t, annotation(t, io, "state")), "io") &&
	   !strcmp(string_arg(t, annotation(t, io, "syscall")), "read") &&
	   !annotation(t, io, "holder_tid"), "read: state io, syscall read");
	for (size_t i = 0; i < t->n; i++) {
		const TrackEvent *e = event(t->p[i]);

		end_at += e && e->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END &&
			  e->track_uuid == track && t->ts[i] == T0 + 6000;
	}
	is_int(end_at, 1, "the last state ends at the end of the recording");
	ok(placed(t, smp, sp, track, "sample", T0 + 2000) &&
	   smp->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT &&
	   cpu && cpu->uint_value == 1,
	   "the sample: an instant train_step at its ns on the state track, args: cpu 1");
	ok(annotation(t, smp, "stack") && annotation(t, call, "stack") &&
	   annotation(t, smp, "stack")->string_value_iid ==
	   annotation(t, call, "stack")->string_value_iid,
	   "its stack the call's interned string");
	ok(index_of(t, rp) < index_of(t, sp) && index_of(t, sp) < index_of(t, gp) &&
	   index_of(t, gp) < index_of(t, ip), "states and the sample in time order");
}

static void check_call(struct trace *t)
{
	const Packet *p, *kp, *sp, *gp;
	const TrackEvent *e = find(t, "cuLaunchKernel", &p), *k = find(t, "gemm", &kp);
	const TrackEvent *graph = find(t, "cuGraphLaunch", &gp);
	const TrackEvent *scope = find(t, "train_step", &sp);
	const Annotation *grid = annotation(t, e, "grid"), *stack = annotation(t, e, "stack");

	ok(e && t->ts[index_of(t, p)] == T0 + 1000, "the launch at its exact ns");
	is_str(e ? lookup(t, t->cats, e->category_iids[0]) : "", "cuda_api", "category cuda_api");
	is_str(string_arg(t, annotation(t, e, "kernel")), "gemm", "args: kernel name");
	is_str(string_arg(t, grid), "[4, 2, 1]", "args: grid, an interned string");
	is_str(string_arg(t, annotation(t, e, "block")), "[256, 1, 1]", "args: block");
	ok(annotation(t, e, "stream") && annotation(t, e, "stream")->pointer_value == 0x55aa00,
	   "args: stream as a pointer");
	ok(annotation(t, e, "correlation") && annotation(t, e, "correlation")->uint_value == 11,
	   "args: correlation");
	is_str(string_arg(t, stack), "train_step (t.py:12)\n<module> (t.py:40)",
	       "args: the stack as one interned string, innermost frame first");
	is_str(string_arg(t, annotation(t, graph, "stack")),
	       "train_step (t.py:12)\n<module> (t.py:40)", "the same stack for the graph launch");
	ok(e && e->n_flow_ids == 1 && k && k->n_terminating_flow_ids == 1 &&
	   e->flow_ids[0] == k->terminating_flow_ids[0], "a flow from the launch to its kernel");
	ok(k && t->ts[index_of(t, kp)] == T0 + 3000, "the kernel at its exact ns");
	ok(e && !e->has_track_uuid && k && k->has_track_uuid,
	   "the calls' thread the default track (busiest), the kernel's stream named");
	ok(scope && t->ts[index_of(t, sp)] == T0 + 1000 &&
	   !strcmp(string_arg(t, annotation(t, scope, "function")), "train_step (t.py)"),
	   "the Python scope train_step, with its function");
	ok(index_of(t, sp) < index_of(t, p), "the scope begins before the call inside it");
	is_int(t->undefined, 0, "every iid used is defined");
}

static void check_graph(struct trace *t)
{
	const Packet *p;
	const TrackEvent *g = find(t, "cuGraphLaunch", &p);
	size_t matched = 0;

	ok(g && g->n_flow_ids == 2, "the graph launch starts two flows");
	for (size_t i = 0; g && i < t->n; i++) {
		const TrackEvent *e = event(t->p[i]);

		for (size_t k = 0; e && k < e->n_terminating_flow_ids; k++)
			for (size_t j = 0; j < g->n_flow_ids; j++)
				matched += e->terminating_flow_ids[k] == g->flow_ids[j];
	}
	is_int(matched, 2, "each ended by one of its kernels");
}

/* A call with neither stack nor GPU work, the metadata, a slice's end. */
static void check_ends(struct trace *t)
{
	const Packet *p;
	const TrackEvent *memcpy_ev = find(t, "cuMemcpyHtoD_v2", &p);
	const TrackEvent *meta = find(t, "gpubpf", &p);
	size_t end_at = 0;

	ok(memcpy_ev && !annotation(t, memcpy_ev, "stack") && memcpy_ev->n_flow_ids == 0,
	   "a call without stack or GPU work: neither");
	is_str(string_arg(t, annotation(t, memcpy_ev, "kind")), "HtoD", "args: copy kind");
	is_str(string_arg(t, annotation(t, meta, "host")), "node-7", "metadata: host");
	ok(annotation(t, meta, "dropped_events") &&
	   annotation(t, meta, "dropped_events")->n_dict_entries == 1 &&
	   annotation(t, meta, "dropped_events")->dict_entries[0]->uint_value == 3,
	   "metadata: dropped events per pid");
	for (size_t i = 0; i < t->n; i++) {
		const TrackEvent *e = event(t->p[i]);

		end_at += e && e->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END &&
			  t->ts[i] == T0 + 3400;
	}
	is_int(end_at, 1, "the kernel ends at ts + dur");
}

/* The state slice named name beginning at ts, and its packet's index. */
static const TrackEvent *state_at(struct trace *t, const char *name, uint64_t ts, size_t *at)
{
	for (size_t i = 0; i < t->n; i++) {
		const TrackEvent *e = event(t->p[i]);

		if (e && t->ts[i] == ts && e->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN &&
		    e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID &&
		    !strcmp(lookup(t, t->names, e->name_iid), name)) {
			*at = i;
			return e;
		}
	}
	return NULL;
}

/*
 * GIL waits (model_util.h's unit_gil_states(), no events): the holder's
 * span starts a flow to each wait linked to it (ids: the arrow id 1 + the
 * wait's index, shifted by 24 bits where GPU records' ranks go), before
 * them; a wait for a waiting holder has none.
 */
static void test_gil_flows(const char *path)
{
	struct export_opts opts = { 0 };
	const TrackEvent *h, *w1, *w5, *w6;
	size_t ih = 0, i1 = 0, i5 = 0, i6 = 0;
	struct model m;
	struct sink out;
	struct trace t;

	unit_gil_states(&m);
	if (sink_open_plain(&out, path) || export_perfetto.write(&m, &opts, &out) ||
	    sink_commit(&out) || decode(path, &t)) {
		ok(0, "gil: cannot write or decode %s", path);
		model_release(&m);
		return;
	}
	h = state_at(&t, "Running", 1000, &ih);
	w1 = state_at(&t, "GIL wait (held by 602)", 2000, &i1);
	w5 = state_at(&t, "GIL wait (held by 602)", 1000, &i5);
	w6 = state_at(&t, "GIL wait (held by 603)", 2500, &i6);
	ok(h && h->n_flow_ids == 2 && h->flow_ids[0] == 2 << 24 && h->flow_ids[1] == 6 << 24 &&
	   !h->n_terminating_flow_ids, "gil: the holder's span starts flows 2 and 6");
	ok(w1 && w1->n_terminating_flow_ids == 1 && w1->terminating_flow_ids[0] == 2 << 24 &&
	   !w1->n_flow_ids, "gil: the later wait ends flow 2");
	ok(w5 && w5->n_terminating_flow_ids == 1 && w5->terminating_flow_ids[0] == 6 << 24 &&
	   !w5->n_flow_ids && ih < i5, "gil: the wait beginning with it ends flow 6, after it");
	ok(w6 && !w6->n_flow_ids && !w6->n_terminating_flow_ids,
	   "gil: no flow to a holder itself waiting");
	release(&t);
	unlink(path);
	model_release(&m);
}

int main(void)
{
	char path[] = "/tmp/gpubpf-pftrace-XXXXXX";
	int fd = mkstemp(path);
	struct export_opts opts = { 0 };
	struct model m;
	struct sink out;
	struct trace t;

	close(fd);
	build_model(&m);
	is_int(sink_format("run.pftrace"), SINK_PFTRACE, "format .pftrace by extension");
	is_int(sink_open(&out, "/nonexistent-dir/x.pftrace") < 0, 1, "a bad path fails");
	is_str(sink_errmsg(&out), "cannot write '/nonexistent-dir/x.pftrace': No such file or directory",
	       "with the one-line message");
	sink_abort(&out);
	if (sink_open_plain(&out, path) || export_perfetto.write(&m, &opts, &out) ||
	    sink_commit(&out)) {
		printf("Bail out! cannot write %s\n", path);
		return 1;
	}
	ok(!decode(path, &t), "the trace decodes, packet by packet");
	is_int(t.compressed, 1, "its packets deflated in one compressed_packets packet");
	check_packets(&t);
	check_tracks(&t);
	check_call(&t);
	check_graph(&t);
	check_ends(&t);
	check_states(&t);
	release(&t);
	unlink(path);
	model_release(&m);
	test_gil_flows(path);
	return done_testing();
}
