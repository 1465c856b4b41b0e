// SPDX-License-Identifier: BSD-2-Clause
/*
 * Chrome trace event JSON, the format Perfetto's JSON importer and
 * chrome://tracing read.  Streamed through the JSON writer, never built
 * in memory:
 *
 *	{"gpubpf":{version, clock, realtime_offset_ns, host, dropped_events,
 *	           dropped_total, events},
 *	 "displayTimeUnit":"ns",
 *	 "traceEvents":[
 *	   {"ph":"M","name":"process_name",...},      metadata first
 *	   {"ph":"X","cat":"cuda_api",...},           then events by time
 *	 ]}
 *
 * Times are CLOCK_MONOTONIC microseconds with three decimals (exact ns).
 * Perfetto reads "ts" and "dur" with a light tokenizer that stops at an
 * array value, so events keep them first and put arrays only inside args.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuda_calls.h"
#include "export.h"
#include "json_writer.h"
#include "model.h"
#include "sink.h"

#ifndef GPUBPF_VERSION
#define GPUBPF_VERSION "unknown"
#endif

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

/* The "args" of a driver call, from the fields it carries. */
static void write_call_args(struct jw *jw, const struct model *m,
			    const struct model_event *ev)
{
	uint32_t f = ev->fields;

	jw_key(jw, "args");
	jw_obj_begin(jw);
	if (f & MF_FUNC) {
		jw_key(jw, "kernel");
		if (ev->kernel)
			jw_str(jw, str(m, ev->kernel));
		else
			jw_hex(jw, ev->func);
	}
	if (f & MF_GRID)
		write_u32x3(jw, "grid", ev->grid);
	if (f & MF_BLOCK)
		write_u32x3(jw, "block", ev->block);
	if (f & MF_SHMEM) {
		jw_key(jw, "shared_mem");
		jw_uint(jw, ev->shared_mem);
	}
	if (f & MF_STREAM) {
		jw_key(jw, "stream");
		jw_hex(jw, ev->stream);
	}
	if (f & MF_BYTES) {
		jw_key(jw, "bytes");
		jw_uint(jw, ev->bytes);
	}
	if (f & MF_KIND) {
		jw_key(jw, "kind");
		jw_str(jw, cuda_copy_kind_name(ev->copy_kind));
	}
	if (f & MF_PTR) {
		jw_key(jw, "ptr");
		jw_hex(jw, ev->ptr);
	}
	if (f & MF_COUNT) {
		jw_key(jw, "count");
		jw_uint(jw, ev->count);
	}
	if (f & MF_HANDLE) {
		jw_key(jw, "handle");
		jw_hex(jw, ev->handle);
	}
	if (f & MF_RET) {
		jw_key(jw, "ret");
		jw_int(jw, ev->ret);
	}
	jw_obj_end(jw);
}

/* A host-side driver call: a complete event on the calling thread. */
static int write_api_call(struct jw *jw, const struct model *m,
			  const struct model_event *ev)
{
	jw_obj_begin(jw);
	jw_key(jw, "ph");
	jw_str(jw, "X");
	jw_key(jw, "cat");
	jw_str(jw, "cuda_api");
	jw_key(jw, "name");
	jw_str(jw, str(m, ev->name));
	jw_key(jw, "pid");
	jw_uint(jw, ev->pid);
	jw_key(jw, "tid");
	jw_uint(jw, ev->tid);
	jw_key(jw, "ts");
	jw_us(jw, ev->ts);
	jw_key(jw, "dur");
	jw_us(jw, ev->dur);
	write_call_args(jw, m, ev);
	return jw_obj_end(jw);
}

/*
 * One model event.  Every event is a host-side driver call today; GPU-side
 * work (kernels and copies on per-stream tracks), launch-to-kernel flows
 * and memory counters get their own writers here as the model grows.
 */
static int write_event(struct jw *jw, const struct model *m,
		       const struct model_event *ev)
{
	switch (ev->family) {
	case CF_LAUNCH:
	case CF_GRAPH:
	case CF_MEMCPY:
	case CF_MEMSET:
	case CF_SYNC:
	case CF_ALLOC:
	case CF_FREE:
	case CF_LOOKUP:
	default:
		return write_api_call(jw, m, ev);
	}
}

/* {"ph":"M","name":what,"pid":pid,"tid":tid,"args":{"name":name}} */
static int write_name_meta(struct jw *jw, const char *what, uint32_t pid,
			   uint32_t tid, const char *name)
{
	jw_obj_begin(jw);
	jw_key(jw, "ph");
	jw_str(jw, "M");
	jw_key(jw, "name");
	jw_str(jw, what);
	jw_key(jw, "pid");
	jw_uint(jw, pid);
	jw_key(jw, "tid");
	jw_uint(jw, tid);
	jw_key(jw, "args");
	jw_obj_begin(jw);
	jw_key(jw, "name");
	jw_str(jw, name);
	jw_obj_end(jw);
	return jw_obj_end(jw);
}

static int write_metadata(struct jw *jw, const struct model *m)
{
	char pid[16];

	jw_key(jw, "gpubpf");
	jw_obj_begin(jw);
	jw_key(jw, "version");
	jw_str(jw, GPUBPF_VERSION);
	jw_key(jw, "clock");
	jw_str(jw, "CLOCK_MONOTONIC");
	jw_key(jw, "realtime_offset_ns");
	jw_int(jw, m->realtime_offset_ns);
	jw_key(jw, "host");
	jw_strn(jw, m->host, strnlen(m->host, sizeof(m->host)));
	jw_key(jw, "dropped_events");
	jw_obj_begin(jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		snprintf(pid, sizeof(pid), "%u", m->procs[i].pid);
		jw_key(jw, pid);
		jw_uint(jw, m->procs[i].dropped);
	}
	jw_obj_end(jw);
	jw_key(jw, "dropped_total");
	jw_uint(jw, m->dropped_total);
	jw_key(jw, "events");
	jw_uint(jw, m->nev);
	return jw_obj_end(jw);
}

static int chrome_write(const struct model *m, struct sink *out)
{
	struct jw jw;
	int ret;

	ret = jw_init(&jw, out);
	if (ret)
		goto cleanup;
	jw_obj_begin(&jw);
	write_metadata(&jw, m);
	jw_key(&jw, "displayTimeUnit");
	jw_str(&jw, "ns");
	jw_key(&jw, "traceEvents");
	jw_arr_begin_lines(&jw);
	for (size_t i = 0; i < m->nprocs; i++) {
		const struct model_process *p = &m->procs[i];

		if (p->name)
			write_name_meta(&jw, "process_name", p->pid, p->pid,
					str(m, p->name));
	}
	for (size_t i = 0; i < m->nthreads; i++) {
		const struct model_thread *t = &m->threads[i];

		if (t->name)
			write_name_meta(&jw, "thread_name", t->pid, t->tid,
					str(m, t->name));
	}
	for (size_t i = 0; i < m->nev; i++) {
		ret = write_event(&jw, m, &m->ev[i]);
		if (ret)
			goto cleanup;
	}
	jw_arr_end(&jw);
	jw_obj_end(&jw);
	ret = jw_finish(&jw);
	if (!ret)
		ret = sink_write(out, "\n", 1);
cleanup:
	jw_release(&jw);
	return ret;
}

const struct exporter export_chrome = {
	.name = "chrome",
	.description = "Chrome trace event JSON (ui.perfetto.dev, chrome://tracing)",
	.write = chrome_write,
};
