// SPDX-License-Identifier: BSD-2-Clause
/*
 * Chrome trace event JSON, the format Perfetto's JSON importer and
 * chrome://tracing read.  Streamed through the JSON writer, never built
 * in memory:
 *
 *	{"gpubpf":{version, clock, realtime_offset_ns, ts_base_ns, host, dropped_events,
 *	           dropped_total, calls_may_be_missing, events},
 *	 "traceEvents":[
 *	   {"ph":"M","name":"process_name",...},      metadata first
 *	   {"ph":"X","cat":"cuda_api",...},           then events by time:
 *	   {"ph":"X","cat":"kernel",...},             GPU work on its stream's
 *	 ]}                                           track
 *
 * A flow (arrow) goes from each call to the GPU work it caused, bound to
 * both slices themselves (flow events v2): the call carries "bind_id" N
 * and "flow_out", each piece of its work "bind_id" N and "flow_in", N
 * being one more than the call's index in the model (unique in the trace;
 * a graph launch has one arrow to each of its kernels).  Legacy "s"/"f"
 * events would bind to whatever slice is open at their instant.
 *
 * GPU tracks are threads of the process with synthetic tids (ts_gpu_tid()
 * in schema.h, where every name written here is defined), named "GPU
 * <device> / stream <stream>"; stream waits (cat "gpu_sync") are slices
 * there too.  CUPTI memory records are instants (cat "gpu_memory") on
 * "GPU <device> / memory".
 *
 * Each host thread with thread states has a track right under its own,
 * "<thread> state" (tid TS_STATE_TID_BASE + tid): slices (cat
 * "thread_state") "Running", "Runnable", "GIL wait (held by <tid>)", the
 * syscall a thread blocked in ("futex", "read"...), "sleep", tiling the
 * thread's time; CPU samples are instants there (cat "sample"), named by
 * their innermost function (model_sample_name()), with their stacks in args.  They are
 * on their own track so that the thread's calls and scopes nest as before.
 * A GIL wait is linked to the span its holder was in as it began
 * (model_gil_links()) by a flow: the holder's span carries "bind_id"
 * (the trace's number of events + 1 + the span's index) and "flow_out",
 * each wait for it that "bind_id" and "flow_in".  Perfetto binds flow
 * ends in the order it reads slices, which is by start time, the longer
 * first at one instant, and draws each flow from the slice that starts
 * first.  So a wait that begins with its holder's span and outlasts it
 * (read first) starts the flow instead ("flow_out"), and the holder's
 * span continues it ("flow_in" and "flow_out") to the other waits; a
 * second such wait of one span gets no flow (two threads would have
 * blocked at the same nanosecond).
 *
 * Times are CLOCK_MONOTONIC microseconds with three decimals (exact ns)
 * after "ts_base_ns" (in the "gpubpf" object): small numbers, so that a
 * reader's doubles keep their nanoseconds at any uptime (absolute ones
 * lose them past 2^52 ns, 52 days).
 * Perfetto reads "ts" and "dur" with a light tokenizer that stops at an
 * array value, so events keep them first and put arrays only inside args.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "model/cuda_calls.h"
#include "trace/export.h"
#include "trace/runs.h"
#include "trace/gpu_events.h"
#include "lib/hashmap.h"
#include "lib/json_writer.h"
#include "model/memory.h"
#include "model/model.h"
#include "lib/sink.h"
#include "trace/schema.h"

#ifndef GPUBPF_VERSION
#define GPUBPF_VERSION "unknown"
#endif

static uint32_t gpu_tid(const struct model_event *ev)
{
	return ts_gpu_tid(ev->device, ev->kind == EV_MEMORY ? TS_GPU_MEMORY_LANE : ev->gpu_stream);
}

static const char *str(const struct model *m, uint32_t id)
{
	return strtab_get(&m->strs, id);
}

static void write_u32x3(struct jw *jw, const char *key, const uint32_t v[3])
{
	jw_key(jw, key);
	jw_arr_begin(jw);
	for (int i = 0; i < 3; i++)
		jw_uint(jw, v[i]);
	jw_arr_end(jw);
}

/* A stack as key: its frames, innermost first. */
static void write_frames(struct jw *jw, const struct model *m, const char *key,
			 const struct model_stack *st)
{
	jw_key(jw, key);
	jw_arr_begin(jw);
	for (uint32_t i = 0; i < st->n; i++)
		jw_str(jw, str(m, m->frames[st->first + i]));
	jw_arr_end(jw);
}

/* The "args" of a driver call, from the fields it carries. */
static void write_call_args(struct jw *jw, const struct model *m,
			    const struct model_event *ev)
{
	uint32_t f = ev->fields;

	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	if (f & MF_FUNC) {
		jw_key(jw, TS_ARG_KERNEL);
		if (ev->kernel)
			jw_str(jw, str(m, ev->kernel));
		else
			jw_hex(jw, ev->func);
	}
	if (f & MF_GRID)
		write_u32x3(jw, TS_ARG_GRID, ev->grid);
	if (f & MF_BLOCK)
		write_u32x3(jw, TS_ARG_BLOCK, ev->block);
	if (f & MF_SHMEM)
		jw_kv_uint(jw, TS_ARG_SHMEM, ev->shared_mem);
	if (f & MF_STREAM)
		jw_kv_hex(jw, TS_ARG_STREAM, ev->stream);
	if (f & MF_BYTES)
		jw_kv_uint(jw, TS_ARG_BYTES, ev->bytes);
	if (f & MF_KIND)
		jw_kv_str(jw, TS_ARG_KIND, cuda_copy_kind_name(ev->copy_kind));
	if (f & MF_PTR)
		jw_kv_hex(jw, TS_ARG_PTR, ev->ptr);
	if (f & MF_COUNT)
		jw_kv_uint(jw, TS_ARG_COUNT, ev->count);
	if (f & MF_HANDLE)
		jw_kv_hex(jw, TS_ARG_HANDLE, ev->handle);
	if (f & MF_RET)
		jw_kv_int(jw, TS_ARG_RET, ev->ret);
	if ((f & MF_RET) && cuda_result_failed(ev->ret)) {   /* a failed call: what a user hunts */
		char buf[32];

		jw_kv_str(jw, TS_ARG_ERROR, cuda_result_label(ev->ret, buf, sizeof(buf)));
	}
	if (f & MF_UNFINISHED)
		jw_kv_bool(jw, TS_ARG_UNFINISHED, true);
	if (ev->correlation)
		jw_kv_uint(jw, TS_ARG_CORRELATION, ev->correlation);
	if (ev->stack) {
		const struct model_stack *st = &m->stacks[ev->stack - 1];

		write_frames(jw, m, TS_ARG_STACK, st);
		if (st->truncated)
			jw_kv_bool(jw, TS_ARG_STACK_TRUNCATED, true);
		if (ev->stack_tid) {
			jw_kv_bool(jw, TS_ARG_STACK_ATTRIBUTED, true);
			jw_kv_uint(jw, TS_ARG_STACK_THREAD, ev->stack_tid);
		}
	}
	if (ev->native) {
		const struct model_stack *st = &m->stacks[ev->native - 1];

		write_frames(jw, m, TS_ARG_NATIVE_STACK, st);
	}
	if (ev->ag_node)
		jw_kv_str(jw, TS_ARG_AUTOGRAD_NODE, str(m, ev->ag_node));
	if (ev->ag_fwd)
		write_frames(jw, m, TS_ARG_AUTOGRAD_FORWARD, &m->stacks[ev->ag_fwd - 1]);
	jw_obj_end(jw);
}

/*
 * Open an event and write its common members, ts and dur first for
 * Perfetto's tokenizer: {"ph":ph,"cat":cat,"name":the namelen bytes of
 * name,"pid","tid","ts" and, for complete events ("X"), "dur".  The caller
 * adds the rest and closes the object.
 */
static void event_head(struct jw *jw, const struct model *m, const char *ph, const char *cat,
		       const char *name, size_t namelen, uint32_t pid, uint32_t tid, uint64_t ts,
		       uint64_t dur)
{
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_KEY_PH, ph);
	jw_kv_str(jw, TS_KEY_CAT, cat);
	jw_kv_strn(jw, TS_KEY_NAME, name, namelen);
	jw_kv_uint(jw, TS_KEY_PID, pid);
	jw_kv_uint(jw, TS_KEY_TID, tid);
	jw_kv_us(jw, TS_KEY_TS, ts - m->ts_base_ns);
	if (ph[0] == 'X')
		jw_kv_us(jw, TS_KEY_DUR, dur);
}

/* One end of the arrows from a call to its GPU work (see the top of this file). */
static void write_flow_end(struct jw *jw, uint64_t flow, const char *end)
{
	jw_kv_uint(jw, TS_KEY_BIND_ID, flow);
	jw_kv_bool(jw, end, true);
}

/* A host-side driver call: a complete event on the calling thread. */
static int write_api_call(struct jw *jw, const struct model *m, const struct model_event *ev)
{
	const char *name = str(m, ev->name);

	event_head(jw, m, TS_PH_COMPLETE, TS_CAT_API, name, strlen(name), ev->pid, ev->tid, ev->ts, ev->dur);
	if (ev->flow)
		write_flow_end(jw, ev->flow, TS_KEY_FLOW_OUT);
	write_call_args(jw, m, ev);
	return jw_obj_end(jw);
}

/* Where GPU work ran and the call it came from, in its args. */
static void write_where(struct jw *jw, const struct model_event *ev)
{
	jw_kv_uint(jw, TS_ARG_DEVICE, ev->device);
	jw_kv_uint(jw, TS_ARG_STREAM, ev->gpu_stream);
	jw_kv_uint(jw, TS_ARG_CORRELATION, ev->correlation);
}

/* Kernels, copies and memsets: complete events on their stream's track. */
static int write_gpu_work(struct jw *jw, const struct model *m, const struct model_event *ev)
{
	const char *kname = ev->kernel ? str(m, ev->kernel) : TS_NAME_KERNEL;
	const char *cat = TS_CAT_MEMSET, *name = TS_NAME_MEMSET;
	char copy_name[32];

	switch (ev->kind) {
	case EV_KERNEL:
		cat = ts_kernel_cat(kname);
		name = kname;
		break;
	case EV_MEMCPY:
		cat = TS_CAT_MEMCPY;
		snprintf(copy_name, sizeof(copy_name), TS_NAME_MEMCPY, ts_copy_kind_name(ev->gpu_kind));
		name = copy_name;
		break;
	}
	event_head(jw, m, TS_PH_COMPLETE, cat, name, strlen(name), ev->pid, gpu_tid(ev), ev->ts, ev->dur);
	if (ev->flow)
		write_flow_end(jw, ev->flow, TS_KEY_FLOW_IN);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	if (ev->kind == EV_KERNEL) {
		write_u32x3(jw, TS_ARG_GRID, ev->grid);
		write_u32x3(jw, TS_ARG_BLOCK, ev->block);
		jw_kv_uint(jw, TS_ARG_REGISTERS, ev->registers);
		jw_kv_uint(jw, TS_ARG_SHMEM, ev->shared_mem);
		jw_kv_uint(jw, TS_ARG_STATIC_SHMEM, ev->static_shmem);
		if (ev->args)
			jw_kv_uint(jw, TS_ARG_ARGS_HASH, ev->args);
	} else {
		jw_kv_uint(jw, TS_ARG_BYTES, ev->bytes);
	}
	if (ev->kind == EV_MEMCPY) {
		jw_kv_str(jw, TS_ARG_KIND, ts_copy_kind_name(ev->gpu_kind));
		jw_kv_double(jw, TS_ARG_GBPS, ev->dur ? (double)ev->bytes / ev->dur : 0);
	}
	if (ev->graph_node)
		jw_kv_uint(jw, TS_ARG_GRAPH_NODE, ev->graph_node);
	write_where(jw, ev);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/*
 * A stream wait event (CUPTI's times are those of the call that enqueued
 * the wait): a slice on the waiting stream's track.
 */
static int write_gpu_wait(struct jw *jw, const struct model *m, const struct model_event *ev)
{
	event_head(jw, m, TS_PH_COMPLETE, TS_CAT_SYNC, TS_NAME_WAIT, strlen(TS_NAME_WAIT), ev->pid, gpu_tid(ev),
		   ev->ts, ev->dur);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_uint(jw, TS_ARG_EVENT, ev->handle);
	write_where(jw, ev);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/* An allocation or release (CUPTI memory record): an instant on the
 * device's memory track. */
static int write_gpu_memory(struct jw *jw, const struct model *m, const struct model_event *ev)
{
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_KEY_PH, TS_PH_INSTANT);
	jw_kv_str(jw, TS_KEY_SCOPE, TS_SCOPE_THREAD);
	jw_kv_str(jw, TS_KEY_CAT, TS_CAT_MEMORY);
	jw_kv_str(jw, TS_KEY_NAME, ev->gpu_kind == 1 ? TS_NAME_ALLOC : ev->gpu_kind == 2 ? TS_NAME_FREE : TS_NAME_MEMORY);
	jw_kv_uint(jw, TS_KEY_PID, ev->pid);
	jw_kv_uint(jw, TS_KEY_TID, gpu_tid(ev));
	jw_kv_us(jw, TS_KEY_TS, ev->ts - m->ts_base_ns);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_hex(jw, TS_ARG_ADDRESS, ev->ptr);
	jw_kv_uint(jw, TS_ARG_BYTES, ev->bytes);
	jw_kv_str(jw, TS_ARG_MEMORY_KIND, mem_kind_name(ev->copy_kind));
	write_where(jw, ev);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/*
 * A Python function active across calls: a slice on the thread's track,
 * named by its qualified name, around the calls made inside it.
 */
static int write_scope(struct jw *jw, const struct model *m, const struct model_event *ev)
{
	const char *func = str(m, ev->name), *paren = strstr(func, " (");

	event_head(jw, m, TS_PH_COMPLETE, TS_CAT_PYTHON, func, paren ? (size_t)(paren - func) : strlen(func), ev->pid,
		   ev->tid, ev->ts, ev->dur);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_ARG_FUNCTION, func);
	jw_kv_str(jw, TS_ARG_FIRST_FRAME, str(m, ev->stack));
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/* Whether write_event() writes ev at all: GPU work off every track does not show. */
static bool event_written(const struct model_event *ev)
{
	return ev->kind == EV_API || ev->kind == EV_SCOPE || gpu_has_track(ev);
}

static int write_event(struct jw *jw, const struct model *m, const struct model_event *ev)
{
	if (!event_written(ev))
		return 0;
	if (ev->kind == EV_API)
		return write_api_call(jw, m, ev);
	if (ev->kind == EV_SCOPE)
		return write_scope(jw, m, ev);
	if (ev->kind == EV_MEMORY)
		return write_gpu_memory(jw, m, ev);
	if (gpu_wait_event(ev))
		return write_gpu_wait(jw, m, ev);
	return write_gpu_work(jw, m, ev);
}

/* {"ph":"M","name":what,"pid":pid,"tid":tid,"args":{"name":name}} */
static int write_name_meta(struct jw *jw, const char *what, uint32_t pid,
			   uint32_t tid, const char *name)
{
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_KEY_PH, TS_PH_META);
	jw_kv_str(jw, TS_KEY_NAME, what);
	jw_kv_uint(jw, TS_KEY_PID, pid);
	jw_kv_uint(jw, TS_KEY_TID, tid);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_ARG_NAME, name);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/* nevents: the trace's events (of all its parts) */
static int write_metadata(struct jw *jw, const struct model *m, uint64_t nevents)
{
	char pid[16];

	jw_key(jw, TS_META);
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_META_VERSION, GPUBPF_VERSION);
	jw_kv_str(jw, TS_META_CLOCK, TS_CLOCK);
	jw_kv_int(jw, TS_META_REALTIME, m->realtime_offset_ns);
	jw_kv_uint(jw, TS_META_TS_BASE, m->ts_base_ns);
	jw_key(jw, TS_META_HOST);
	jw_strn(jw, m->host, strnlen(m->host, sizeof(m->host)));
	jw_key(jw, TS_META_DROPPED);
	jw_obj_begin(jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		snprintf(pid, sizeof(pid), "%u", m->procs[i].pid);
		jw_kv_uint(jw, pid, m->procs[i].dropped);
	}
	jw_obj_end(jw);
	jw_kv_uint(jw, TS_META_DROPPED_TOTAL, m->dropped_total);
	/* pid -> why calls of that process may be missing (not counted in drops) */
	jw_key(jw, TS_META_MISSING);
	jw_obj_begin(jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		if (!m->procs[i].missed)
			continue;
		snprintf(pid, sizeof(pid), "%u", m->procs[i].pid);
		jw_kv_str(jw, pid, str(m, m->procs[i].missed));
	}
	jw_obj_end(jw);
	jw_kv_uint(jw, TS_META_EVENTS, nevents);
	jw_key(jw, TS_META_GPU);
	jw_obj_begin(jw);
	jw_key(jw, TS_GPU_DROPPED);
	jw_obj_begin(jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		if (!m->procs[i].gpu_dropped)
			continue;
		snprintf(pid, sizeof(pid), "%u", m->procs[i].pid);
		jw_kv_uint(jw, pid, m->procs[i].gpu_dropped);
	}
	jw_obj_end(jw);
	jw_key(jw, TS_GPU_ERRORS);
	jw_obj_begin(jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		if (!m->procs[i].gpu_error)
			continue;
		snprintf(pid, sizeof(pid), "%u", m->procs[i].pid);
		jw_kv_str(jw, pid, str(m, m->procs[i].gpu_error));
	}
	jw_obj_end(jw);
	/* when each process's GPU collection started (after ts_base_ns, as "ts"):
	 * earlier launches have no GPU record */
	jw_key(jw, TS_GPU_WINDOW);
	jw_obj_begin(jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		if (!m->procs[i].gpu_window_ns)
			continue;
		snprintf(pid, sizeof(pid), "%u", m->procs[i].pid);
		jw_kv_us(jw, pid, m->procs[i].gpu_window_ns - m->ts_base_ns);
	}
	jw_obj_end(jw);
	/* processes the library was loaded into by late attach, and their stall */
	jw_key(jw, TS_GPU_LATE_ATTACH);
	jw_obj_begin(jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		if (!m->procs[i].inject_stall_ns)
			continue;
		snprintf(pid, sizeof(pid), "%u", m->procs[i].pid);
		jw_key(jw, pid);
		jw_obj_begin(jw);
		jw_kv_uint(jw, TS_GPU_LATE_THREAD, m->procs[i].inject_tid);
		jw_kv_us(jw, TS_GPU_LATE_STALL, m->procs[i].inject_stall_ns);
		jw_obj_end(jw);
	}
	jw_obj_end(jw);
	jw_kv_uint(jw, TS_GPU_SKEWED, m->skewed);
	jw_kv_us(jw, TS_GPU_MAX_SKEW, m->max_skew_ns);
	jw_kv_uint(jw, TS_GPU_REPAIRED, m->clock_repaired);
	jw_kv_us(jw, TS_GPU_MAX_REPAIR, m->max_clock_repair_ns);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/* {"ph":"M","name":"thread_sort_index","pid":pid,"tid":tid,"args":{"sort_index":index}} */
static int write_sort_index(struct jw *jw, uint32_t pid, uint32_t tid, uint64_t index)
{
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_KEY_PH, TS_PH_META);
	jw_kv_str(jw, TS_KEY_NAME, TS_META_THREAD_SORT);
	jw_kv_uint(jw, TS_KEY_PID, pid);
	jw_kv_uint(jw, TS_KEY_TID, tid);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_uint(jw, TS_META_SORT_INDEX, index);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/*
 * Name each GPU track of events ev[0..n) once: "GPU 0 / stream 7", sorted
 * after the host threads.
 */
static int write_gpu_tracks(struct jw *jw, const struct model_event *evs, size_t n)
{
	struct hashmap seen;    /* (pid, tid) of the tracks named */
	char name[64];

	hashmap_init(&seen);
	for (size_t i = 0; i < n; i++) {
		const struct model_event *ev = &evs[i];
		int added;

		if (!gpu_has_track(ev))
			continue;
		if (!hashmap_put(&seen, (uint64_t)ev->pid << 32 | gpu_tid(ev), &added)) {
			hashmap_release(&seen);
			return -ENOMEM;
		}
		if (!added)
			continue;
		if (ev->kind == EV_MEMORY)
			snprintf(name, sizeof(name), TS_TRACK_MEMORY, ev->device);
		else
			snprintf(name, sizeof(name), TS_TRACK_STREAM, ev->device, ev->gpu_stream);
		write_name_meta(jw, TS_META_THREAD_NAME, ev->pid, gpu_tid(ev), name);
		write_sort_index(jw, ev->pid, gpu_tid(ev), TS_GPU_SORT_BASE + (ev->device << 16) +
				 (ev->kind == EV_MEMORY ? 0xffff : ev->gpu_stream & 0xffff));
	}
	hashmap_release(&seen);
	return 0;
}


/*
 * Name the state track of each thread with states (spans states[0..n),
 * sorted by thread), "<thread> state", and sort it right under its thread
 * (threads in that order).
 */
static int write_state_tracks(struct jw *jw, const struct model *m,
			      const struct model_state_span *states, size_t n)
{
	char name[128];

	for (size_t i = 0, k = 0; i < n; k++) {
		const struct model_state_span *s = &states[i];
		const struct model_thread *t = model_find_thread(m, s->pid, s->tid);

		if (t && t->name)
			snprintf(name, sizeof(name), TS_TRACK_STATE, str(m, t->name));
		else
			snprintf(name, sizeof(name), TS_TRACK_STATE_TID, s->tid);
		write_name_meta(jw, TS_META_THREAD_NAME, s->pid, TS_STATE_TID_BASE + s->tid, name);
		write_sort_index(jw, s->pid, s->tid, 2 * k);
		write_sort_index(jw, s->pid, TS_STATE_TID_BASE + s->tid, 2 * k + 1);
		while (i < n && states[i].pid == s->pid && states[i].tid == s->tid)
			i++;
	}
	return 0;
}

/* chrome://tracing's reserved colours of thread states (Perfetto picks its own) */
static const char *const state_colours[MS_COUNT] = {
	[MS_RUNNING] = "thread_state_running", [MS_RUNNABLE] = "thread_state_runnable",
	[MS_GIL_WAIT] = "thread_state_uninterruptible", [MS_LOCK_WAIT] = "thread_state_sleeping",
	[MS_IO] = "thread_state_iowait", [MS_SLEEP] = "thread_state_sleeping",
	[MS_OTHER_WAIT] = "thread_state_unknown",
};

/* The ends of GIL flows a state span is (see the top of this file). */
enum {
	GIL_HOLDER_OUT = 1,     /* a holder's span, read before some of its waits */
	GIL_HOLDER_IN = 2,      /* a holder's span, read after one of its waits */
	GIL_WAIT_IN = 4,        /* a wait, read after its holder's span */
	GIL_WAIT_OUT = 8,       /* a wait, read before its holder's span */
};

/*
 * The GIL flow ends of each span (GIL_*), from links (model_gil_links()).
 * 0 or -ENOMEM; *ends NULL when there are no states.
 */
static int gil_flow_ends(const struct model *m, const size_t *links, uint8_t **ends)
{
	size_t *early;

	*ends = NULL;
	if (!m->nstates)
		return 0;
	*ends = calloc(m->nstates, 1);
	early = calloc(m->nstates, sizeof(*early));    /* 1 + its wait read first */
	if (!*ends || !early) {
		free(early);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nstates; i++) {
		const struct model_state_span *w = &m->states[i], *h;
		size_t k = links[i];

		if (!k)
			continue;
		h = &m->states[k - 1];
		if (w->ts != h->ts || w->dur <= h->dur) {
			(*ends)[i] = GIL_WAIT_IN;
			(*ends)[k - 1] |= GIL_HOLDER_OUT;
		} else if (!early[k - 1] || w->dur > m->states[early[k - 1] - 1].dur) {
			early[k - 1] = i + 1;
		}
	}
	for (size_t k = 0; k < m->nstates; k++) {
		if (!early[k])
			continue;
		(*ends)[early[k] - 1] = GIL_WAIT_OUT;
		(*ends)[k] |= GIL_HOLDER_IN;
	}
	free(early);
	return 0;
}

/* State span number i; links: model_gil_links(), ends: gil_flow_ends(). */
static int write_state(struct jw *jw, const struct model *m, size_t i, const size_t *links,
		       const uint8_t *ends)
{
	const struct model_state_span *s = &m->states[i];
	const char *sc = s->syscall >= 0 ? model_syscall_name(s->syscall) : NULL;
	char name[64];

	model_state_label(s, name, sizeof(name));
	event_head(jw, m, TS_PH_COMPLETE, TS_CAT_STATE, name, strlen(name), s->pid,
		   TS_STATE_TID_BASE + s->tid, s->ts, s->dur);
	if (ends[i] & (GIL_HOLDER_OUT | GIL_HOLDER_IN))
		jw_kv_uint(jw, TS_KEY_BIND_ID, m->flow_base + m->nev + i + 1);
	else if (ends[i])
		jw_kv_uint(jw, TS_KEY_BIND_ID, m->flow_base + m->nev + links[i]);
	if (ends[i] & (GIL_HOLDER_IN | GIL_WAIT_IN))
		jw_kv_bool(jw, TS_KEY_FLOW_IN, true);
	if (ends[i] & (GIL_HOLDER_OUT | GIL_WAIT_OUT))
		jw_kv_bool(jw, TS_KEY_FLOW_OUT, true);
	if (s->state < MS_COUNT)
		jw_kv_str(jw, TS_KEY_CNAME, state_colours[s->state]);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_ARG_STATE, model_state_name(s->state));
	if (s->syscall >= 0) {
		jw_key(jw, TS_ARG_SYSCALL);
		if (sc)
			jw_str(jw, sc);
		else
			jw_int(jw, s->syscall);
	}
	if (s->holder)
		jw_kv_uint(jw, TS_ARG_HOLDER_TID, s->holder);
	if (s->stack)
		write_frames(jw, m, TS_ARG_STACK, &m->stacks[s->stack - 1]);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/* A CPU sample: an instant on its thread's state track, named by its innermost function. */
static int write_sample(struct jw *jw, const struct model *m, const struct model_sample *s)
{
	const struct model_stack *st = s->stack ? &m->stacks[s->stack - 1] : NULL;
	const char *name;
	size_t len = model_sample_name(m, s, &name);

	event_head(jw, m, TS_PH_INSTANT, TS_CAT_SAMPLE, name, len, s->pid,
		   TS_STATE_TID_BASE + s->tid, s->ts, 0);
	jw_kv_str(jw, TS_KEY_SCOPE, TS_SCOPE_THREAD);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_uint(jw, TS_ARG_CPU, s->cpu);
	if (s->flags & MODEL_SAMPLE_GC)
		jw_kv_bool(jw, TS_ARG_GC, true);
	if (st)
		write_frames(jw, m, TS_ARG_STACK, st);
	if (s->native)
		write_frames(jw, m, TS_ARG_NATIVE_STACK, &m->stacks[s->native - 1]);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/* Device memory in use: a counter track per process and device. */
static int write_mem_counter(struct jw *jw, const struct model *m, const struct mem_sample *s)
{
	char name[48];

	snprintf(name, sizeof(name), TS_NAME_COUNTER, s->device);
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_KEY_PH, TS_PH_COUNTER);
	jw_kv_str(jw, TS_KEY_NAME, name);
	jw_kv_uint(jw, TS_KEY_PID, s->pid);
	jw_kv_uint(jw, TS_KEY_TID, s->pid);
	jw_kv_us(jw, TS_KEY_TS, s->ts - m->ts_base_ns);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_uint(jw, TS_ARG_BYTES, s->bytes);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

/*
 * States, samples and memory counters go out in time order among the
 * other events (a merge reads its inputs as time-ordered streams): the
 * states, kept by thread in the model, by start time here.
 */
struct side_cursor {
	size_t *order;                  /* m->states by start time */
	size_t *links;                  /* model_gil_links() */
	uint8_t *ends;                  /* gil_flow_ends() */
	size_t nstates, nsamples;       /* written so far */
	struct mem_sample *ms;          /* memory counter samples, by time */
	size_t nms, k;
};

/* mc: the memory counts of earlier parts (model_part.h), NULL for a whole model */
static int side_cursor_init(struct side_cursor *c, const struct model *m,
			    const struct export_opts *opts, struct mem_counting *mc)
{
	int ret;

	memset(c, 0, sizeof(*c));
	ret = (mc ? mem_counting_run(mc, m, opts->mem_sample_rate, &c->ms, &c->nms)
		  : memory_counters(m, opts->mem_sample_rate, &c->ms, &c->nms)) ?:
	      model_states_by_time(m, &c->order) ?: model_gil_links(m, &c->links);
	return ret ?: gil_flow_ends(m, c->links, &c->ends);
}

/*
 * Where a body goes: into jw, or, a trace in parts, into runs, record by
 * record (jw a writer into memory, emptied after each).
 */
struct body {
	struct jw *jw;
	struct runs *runs;
};

/* The record just written (ret: how that went) keyed by its start and duration. */
static int body_put(struct body *b, int ret, uint64_t ts, uint64_t dur)
{
	if (ret || !b->runs || !b->jw->len)
		return ret;
	ret = runs_put(b->runs, ts, dur, b->jw->buf, b->jw->len);
	jw_mem_reset(b->jw);
	return ret;
}

/*
 * A trace in parts keeps each event in its run as the model holds it,
 * after this head, and formats it only as the runs merge at the end
 * (put_record()): the JSON of a million launches takes the recorder's
 * thread about a second, which while recording it owes to the records
 * coming in.  What an event's JSON reads besides the event itself (the
 * model's strings and stacks, its time base) only grows or stays from
 * part to part, so it is the same then.  JSON records begin with '{'.
 * States, samples and counters go in as JSON: theirs read the part's
 * links and cursors.
 */
#define DEFERRED_TAG 0x01
#define DEFERRED_HEAD 8         /* the tag and zeros, keeping the event 8-aligned */
#define DEFERRED_BYTES (DEFERRED_HEAD + sizeof(struct model_event))

static int body_defer(struct body *b, const struct model_event *ev, uint64_t dur)
{
	unsigned char rec[DEFERRED_BYTES] = { DEFERRED_TAG };

	memcpy(rec + DEFERRED_HEAD, ev, sizeof(*ev));
	return runs_put(b->runs, ev->ts, dur, rec, sizeof(rec));
}

/* Write the states, samples and counters at or before ts, earliest first. */
static int write_side_until(struct body *b, const struct model *m, struct side_cursor *c,
			    uint64_t ts)
{
	struct jw *jw = b->jw;
	int ret = 0;

	while (!ret) {
		const struct model_state_span *st = c->nstates < m->nstates ?
			&m->states[c->order[c->nstates]] : NULL;
		const struct model_sample *sm = c->nsamples < m->nsamples ?
			&m->samples[c->nsamples] : NULL;
		const struct mem_sample *mc = c->k < c->nms ? &c->ms[c->k] : NULL;
		uint64_t t_st = st ? st->ts : UINT64_MAX, t_sm = sm ? sm->ts : UINT64_MAX;
		uint64_t t_mc = mc ? mc->ts : UINT64_MAX;

		if (mc && t_mc <= ts && t_mc <= t_st && t_mc <= t_sm) {
			ret = body_put(b, write_mem_counter(jw, m, mc), t_mc, 0);
			c->k++;
		} else if (st && t_st <= ts && t_st <= t_sm) {
			ret = body_put(b, write_state(jw, m, c->order[c->nstates], c->links, c->ends),
				       t_st, st->dur);
			c->nstates++;
		} else if (sm && t_sm <= ts) {
			ret = body_put(b, write_sample(jw, m, sm), t_sm, 0);
			c->nsamples++;
		} else {
			break;
		}
	}
	return ret;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct model_thread *x = *(const struct model_thread *const *)a;
	const struct model_thread *y = *(const struct model_thread *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * The document's head: metadata, then "traceEvents" opened with the names
 * of processes and threads (GPU and state tracks are the caller's).
 * Threads by pid and tid, not in the order the model met them, which a
 * trace read back does not keep: converting gives the same file.
 */
static int write_head(struct jw *jw, const struct model *m, uint64_t nevents)
{
	const struct model_thread **by_id = malloc((m->nthreads + 1) * sizeof(*by_id));

	if (!by_id)
		return -ENOMEM;
	for (size_t i = 0; i < m->nthreads; i++)
		by_id[i] = &m->threads[i];
	array_sort(by_id, m->nthreads, sizeof(*by_id), cmp_thread);
	jw_obj_begin(jw);
	write_metadata(jw, m, nevents);
	jw_key(jw, TS_TRACE_EVENTS);
	jw_arr_begin_lines(jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		const struct model_process *p = &m->procs[i];

		if (p->name)
			write_name_meta(jw, TS_META_PROCESS_NAME, p->pid, p->pid, str(m, p->name));
	}
	for (size_t i = 0; i < m->nthreads; i++) {
		const struct model_thread *t = by_id[i];

		if (t->name)
			write_name_meta(jw, TS_META_THREAD_NAME, t->pid, t->tid, str(m, t->name));
	}
	free(by_id);
	return 0;
}

/* m's events, states, samples and counters, by time; mc as side_cursor_init(). */
static int write_body(struct body *b, const struct model *m, const struct export_opts *opts,
		      struct mem_counting *mc)
{
	struct side_cursor sc = { 0 };
	int ret = side_cursor_init(&sc, m, opts, mc);

	for (size_t i = 0; i < m->nev && !ret; i++) {
		const struct model_event *ev = &m->ev[i];
		uint64_t dur = ev->kind == EV_MEMORY ? 0 : ev->dur;

		ret = write_side_until(b, m, &sc, ev->ts);
		if (!ret && b->runs && event_written(ev))
			ret = body_defer(b, ev, dur);
		else if (!ret)
			ret = body_put(b, write_event(b->jw, m, ev), ev->ts, dur);
	}
	if (!ret)
		ret = write_side_until(b, m, &sc, UINT64_MAX);
	free(sc.ms);
	free(sc.order);
	free(sc.links);
	free(sc.ends);
	return ret;
}

/* Close the document and flush it, a newline after it. */
static int write_tail(struct jw *jw, struct sink *out)
{
	int ret;

	jw_arr_end(jw);
	jw_obj_end(jw);
	ret = jw_finish(jw);
	return ret ?: sink_write(out, "\n", 1);
}

static int chrome_write(const struct model *m, const struct export_opts *opts,
			struct sink *out)
{
	struct jw jw;
	struct body b = { .jw = &jw };
	int ret = jw_init(&jw, out);

	if (!ret) {
		ret = write_head(&jw, m, m->nev) ?:
		      write_gpu_tracks(&jw, m->ev, m->nev) ?:
		      write_state_tracks(&jw, m, m->states, m->nstates) ?:
		      write_body(&b, m, opts, NULL) ?: write_tail(&jw, out);
	}
	jw_release(&jw);
	return ret;
}

/* A trace written in parts: see export.h. */
struct chrome_parts {
	struct runs *runs;
	struct mem_counting *mc;        /* memory counts, from part to part */
	struct export_opts opts;
	struct model_event *gpu;        /* an event of each GPU track, by first use */
	size_t ngpu, cap_gpu;
	struct model_state_span *thr;   /* a span of each thread with states */
	size_t nthr, cap_thr;
	struct hashmap seen;            /* pid << 32 | tid of those tracks */
	uint64_t events;
	struct jw rec;                  /* the record being written */
};

static void parts_free(void *state)
{
	struct chrome_parts *p = state;

	if (!p)
		return;
	runs_close(p->runs);
	mem_counting_free(p->mc);
	free(p->gpu);
	free(p->thr);
	hashmap_release(&p->seen);
	jw_release(&p->rec);
	free(p);
}

static int parts_open(void **state, const char *path, const struct export_opts *opts)
{
	struct chrome_parts *p = calloc(1, sizeof(*p));

	*state = p;
	if (!p)
		return -ENOMEM;
	p->opts = *opts;
	hashmap_init(&p->seen);
	p->mc = mem_counting_new();
	return !p->mc ? -ENOMEM : jw_init_mem(&p->rec) ?: runs_open(&p->runs, path);
}

/* The GPU and state tracks of m that earlier parts did not have. */
static int add_tracks(struct chrome_parts *p, const struct model *m)
{
	int added;

	for (size_t i = 0; i < m->nev; i++) {
		const struct model_event *ev = &m->ev[i];

		if (!gpu_has_track(ev))
			continue;
		if (!hashmap_put(&p->seen, (uint64_t)ev->pid << 32 | gpu_tid(ev), &added) ||
		    (added && array_grow(&p->gpu, &p->cap_gpu, p->ngpu + 1)))
			return -ENOMEM;
		if (added)
			p->gpu[p->ngpu++] = *ev;
	}
	for (size_t i = 0; i < m->nstates; i++) {
		const struct model_state_span *s = &m->states[i];

		if (!hashmap_put(&p->seen, (uint64_t)s->pid << 32 | (TS_STATE_TID_BASE + s->tid),
				 &added) ||
		    (added && array_grow(&p->thr, &p->cap_thr, p->nthr + 1)))
			return -ENOMEM;
		if (added)
			p->thr[p->nthr++] = *s;
	}
	return 0;
}

static int parts_add(void *state, const struct model *m)
{
	struct chrome_parts *p = state;
	struct body b = { .jw = &p->rec, .runs = p->runs };

	p->events += m->nev;
	jw_mem_reset(&p->rec);
	return runs_add(p->runs) ?: add_tracks(p, m) ?: write_body(&b, m, &p->opts, p->mc);
}

/* The merge's output: the document's writer and the finished model. */
struct merge_out {
	struct jw *jw;
	const struct model *m;
};

/* A run's record into the document: JSON as it is, an event formatted now. */
static int put_record(void *ctx, uint64_t ts, uint64_t dur, const void *rec, size_t len)
{
	const struct merge_out *o = ctx;
	struct model_event ev;

	if (len != DEFERRED_BYTES || *(const unsigned char *)rec != DEFERRED_TAG)
		return jw_raw(o->jw, rec, len);
	memcpy(&ev, (const unsigned char *)rec + DEFERRED_HEAD, sizeof(ev));
	return write_event(o->jw, o->m, &ev);
}

static int parts_finish(void *state, const struct model *m, struct sink *out)
{
	struct chrome_parts *p = state;
	struct jw jw;
	struct merge_out o = { .jw = &jw, .m = m };
	int ret = parts_add(p, m) ?: jw_init(&jw, out);

	if (ret)
		return ret;
	model_spans_sort(p->thr, p->nthr);
	ret = write_head(&jw, m, p->events) ?:
	      write_gpu_tracks(&jw, p->gpu, p->ngpu) ?:
	      write_state_tracks(&jw, m, p->thr, p->nthr) ?:
	      runs_merge(p->runs, put_record, &o) ?: write_tail(&jw, out);
	jw_release(&jw);
	return ret;
}

static unsigned long long parts_bytes(const void *state)
{
	const struct chrome_parts *p = state;

	return runs_bytes(p->runs);
}

const struct exporter export_chrome = {
	.name = "chrome",
	.description = "Chrome trace event JSON (ui.perfetto.dev, chrome://tracing)",
	.write = chrome_write,
	.parts_open = parts_open,
	.parts_add = parts_add,
	.parts_finish = parts_finish,
	.parts_bytes = parts_bytes,
	.parts_free = parts_free,
};
