// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests for the Chrome trace exporter and the output sink. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "model/cuda_calls.h"
#include "trace/export.h"
#include "model/model.h"
#include "lib/sink.h"
#include "model_util.h"
#include "tap.h"

#ifndef GPUBPF_VERSION
#define GPUBPF_VERSION "unknown"
#endif


/* Entries in the test directory (temporaries included). */
static int count_entries(void)
{
	DIR *d = opendir(unit_dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}


static struct model_event *add(struct model *m, uint64_t ts, uint64_t dur,
			       uint32_t pid, uint32_t tid, const char *name,
			       unsigned family)
{
	struct model_event *e = unit_event(m, ts, dur, pid, tid, name);

	e->family = family;
	return e;
}

/* 200 days of uptime: past 2^52 ns, where microseconds in doubles lose ns */
#define UPTIME (200ULL * 86400 * 1000000000)

static void build_model(struct model *m)
{
	struct model_event *e;

	model_init(m);
	snprintf(m->host, sizeof(m->host), "node-7");
	m->realtime_offset_ns = 1700000000123456789LL;
	m->dropped_total = 7;
	model_process(m, 100, "python3")->dropped = 3;
	model_process(m, 200, NULL);
	model_thread(m, 100, 100, "python3");
	model_thread(m, 100, 101, "pt_autograd_0");
	model_thread(m, 200, 201, NULL);
	model_set_kernel_name(m, 100, 0xabc, "void gemm<float>(int, \"x\")");
	model_set_kernel_name(m, 100, 0xdef, "only_in_pid_100");
	model_set_kernel_name(m, 100, 0x777, "bad\xff\x01name");

	/* added out of order: model_finish sorts */
	e = add(m, UPTIME + 2000000500, 1500, 100, 101, "cuLaunchKernel", CF_LAUNCH);
	e->fields = MF_GRID | MF_BLOCK | MF_SHMEM | MF_STREAM | MF_FUNC | MF_RET;
	e->func = 0xabc;
	e->grid[0] = 4, e->grid[1] = 2, e->grid[2] = 1;
	e->block[0] = 256, e->block[1] = 1, e->block[2] = 1;
	e->shared_mem = 1024;
	e->stream = 0x55aa00;
	e->ret = 0;

	e = add(m, UPTIME + 1000000000, 0, 100, 100, "cuMemcpyHtoDAsync_v2", CF_MEMCPY);
	e->fields = MF_BYTES | MF_KIND | MF_PTR | MF_STREAM;
	e->bytes = 4096;
	e->copy_kind = CK_HTOD;
	e->ptr = 0x7f0000001000;
	e->stream = 0;

	e = add(m, UPTIME + 3000000001, 999, 200, 201, "cuLaunchKernel", CF_LAUNCH);
	e->fields = MF_FUNC | MF_GRID;
	e->func = 0xdef;        /* named in pid 100 only */
	e->grid[0] = 1, e->grid[1] = 1, e->grid[2] = 1;

	e = add(m, UPTIME + 4000000000, 123456789, 100, 100, "cuGraphLaunch", CF_GRAPH);
	e->fields = MF_HANDLE | MF_COUNT | MF_RET;
	e->handle = 0x1234;
	e->count = 3;
	e->ret = 700;

	e = add(m, UPTIME + 5000000000, 1, 100, 100, "cuLaunchKernel", CF_LAUNCH);
	e->fields = MF_FUNC;
	e->func = 0x777;

	e = add(m, UPTIME + 6000000000, 2, 100, 100, "cuCtxSynchronize", CF_SYNC);
	e->fields = 0;

	model_finish(m);
}

static int write_trace(const struct model *m, const char *path)
{
	struct export_opts opts = { 0 };
	struct sink s;
	int ret;

	ret = sink_open(&s, path);
	if (ret) {
		diag("sink_open: %s", sink_errmsg(&s));
		return ret;
	}
	ret = export_chrome.write(m, &opts, &s);
	if (ret) {
		sink_abort(&s);
		return ret;
	}
	ret = sink_commit(&s);
	if (ret)
		diag("sink_commit: %s", sink_errmsg(&s));
	return ret;
}

static cJSON *item(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *sval(const cJSON *o, const char *k)
{
	const cJSON *v = item(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double nval(const cJSON *o, const char *k)
{
	const cJSON *v = item(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -12345;
}

static int is_triple(const cJSON *a, double x, double y, double z)
{
	return cJSON_IsArray(a) && cJSON_GetArraySize(a) == 3 &&
	       cJSON_GetArrayItem(a, 0)->valuedouble == x &&
	       cJSON_GetArrayItem(a, 1)->valuedouble == y &&
	       cJSON_GetArrayItem(a, 2)->valuedouble == z;
}

static void check_trace(const char *text, const char *what)
{
	cJSON *j = cJSON_Parse(text), *g, *d, *evs, *e, *a;
	int nmeta = 0, nx = 0;

	ok(j != NULL, "%s: valid JSON", what);
	if (!j)
		return;
	ok(j->child && j->child->string && !strcmp(j->child->string, "gpubpf"),
	   "%s: the gpubpf object comes first", what);
	/* Perfetto releases 4-21 read "ns" as a 1000x shorter trace */
	ok(!item(j, "displayTimeUnit"), "%s: no displayTimeUnit", what);

	g = item(j, "gpubpf");
	is_str(sval(g, "version"), GPUBPF_VERSION, "%s: version", what);
	is_str(sval(g, "clock"), "CLOCK_MONOTONIC", "%s: clock", what);
	ok(strstr(text, "\"realtime_offset_ns\":1700000000123456789,"),
	   "%s: realtime_offset_ns exact", what);
	/* the whole second before the first event, after 200 days */
	ok(strstr(text, "\"ts_base_ns\":17280001000000000,"), "%s: ts_base_ns exact", what);
	is_str(sval(g, "host"), "node-7", "%s: host", what);
	d = item(g, "dropped_events");
	ok(cJSON_IsObject(d) && cJSON_GetArraySize(d) == 2, "%s: dropped_events per process", what);
	is_int(nval(d, "100"), 3, "%s: dropped for pid 100", what);
	is_int(nval(d, "200"), 0, "%s: dropped for pid 200", what);
	is_int(nval(g, "dropped_total"), 7, "%s: dropped_total", what);
	is_int(nval(g, "events"), 6, "%s: events", what);

	evs = item(j, "traceEvents");
	ok(cJSON_IsArray(evs), "%s: traceEvents is an array", what);
	is_int(cJSON_GetArraySize(evs), 3 + 6, "%s: 3 metadata + 6 events", what);

	cJSON_ArrayForEach(e, evs) {
		const char *ph = sval(e, "ph");

		if (ph && !strcmp(ph, "M"))
			nmeta++;
		else if (ph && !strcmp(ph, "X") && !nmeta)
			break;          /* metadata must come first */
		else if (ph && !strcmp(ph, "X"))
			nx++;
	}
	is_int(nmeta, 3, "%s: metadata events come first", what);
	is_int(nx, 6, "%s: then complete events", what);

	e = cJSON_GetArrayItem(evs, 0);
	ok(!strcmp(sval(e, "name") ?: "", "process_name") && nval(e, "pid") == 100 &&
	   nval(e, "tid") == 100 && !strcmp(sval(item(e, "args"), "name") ?: "", "python3"),
	   "%s: process_name for pid 100", what);
	e = cJSON_GetArrayItem(evs, 1);
	ok(!strcmp(sval(e, "name") ?: "", "thread_name") && nval(e, "pid") == 100 &&
	   nval(e, "tid") == 100 && !strcmp(sval(item(e, "args"), "name") ?: "", "python3"),
	   "%s: thread_name for 100/100", what);
	e = cJSON_GetArrayItem(evs, 2);
	ok(!strcmp(sval(e, "name") ?: "", "thread_name") && nval(e, "pid") == 100 &&
	   nval(e, "tid") == 101 &&
	   !strcmp(sval(item(e, "args"), "name") ?: "", "pt_autograd_0"),
	   "%s: thread_name for 100/101 (unnamed ones skipped)", what);

	/* events, sorted by time */
	e = cJSON_GetArrayItem(evs, 3);
	is_str(sval(e, "name"), "cuMemcpyHtoDAsync_v2", "%s: first event by time", what);
	is_str(sval(e, "cat"), "cuda_api", "%s: cat", what);
	is_str(sval(e, "ph"), "X", "%s: ph", what);
	ok(nval(e, "pid") == 100 && nval(e, "tid") == 100, "%s: memcpy pid/tid", what);
	ok(strstr(text, "\"ts\":0.000,\"dur\":0.000,"), "%s: memcpy ts/dur text (after the base)", what);
	a = item(e, "args");
	is_int(nval(a, "bytes"), 4096, "%s: bytes", what);
	is_str(sval(a, "kind"), "HtoD", "%s: kind", what);
	is_str(sval(a, "ptr"), "0x7f0000001000", "%s: ptr", what);
	is_str(sval(a, "stream"), "0x0", "%s: null stream", what);
	is_int(cJSON_GetArraySize(a), 4, "%s: memcpy has 4 args", what);

	e = cJSON_GetArrayItem(evs, 4);
	is_str(sval(e, "name"), "cuLaunchKernel", "%s: launch name", what);
	ok(nval(e, "pid") == 100 && nval(e, "tid") == 101, "%s: launch pid/tid", what);
	ok(nval(e, "ts") == 1000000.5 && nval(e, "dur") == 1.5, "%s: launch ts/dur", what);
	ok(strstr(text, "\"ts\":1000000.500,\"dur\":1.500,"), "%s: launch ts/dur text", what);
	a = item(e, "args");
	is_str(sval(a, "kernel"), "void gemm<float>(int, \"x\")", "%s: kernel name resolved", what);
	ok(is_triple(item(a, "grid"), 4, 2, 1), "%s: grid", what);
	ok(is_triple(item(a, "block"), 256, 1, 1), "%s: block", what);
	is_int(nval(a, "shared_mem"), 1024, "%s: shared_mem", what);
	is_str(sval(a, "stream"), "0x55aa00", "%s: stream hex", what);
	is_int(nval(a, "ret"), 0, "%s: ret", what);
	is_int(cJSON_GetArraySize(a), 6, "%s: launch has 6 args (no error)", what);

	e = cJSON_GetArrayItem(evs, 5);
	ok(nval(e, "pid") == 200 && nval(e, "tid") == 201, "%s: pid 200 launch", what);
	ok(strstr(text, "\"ts\":2000000.001,\"dur\":0.999,"), "%s: ts/dur ns precision", what);
	a = item(e, "args");
	is_str(sval(a, "kernel"), "0xdef", "%s: unknown kernel as hex handle", what);
	ok(is_triple(item(a, "grid"), 1, 1, 1), "%s: grid 1,1,1", what);

	e = cJSON_GetArrayItem(evs, 6);
	is_str(sval(e, "name"), "cuGraphLaunch", "%s: graph launch", what);
	ok(strstr(text, "\"ts\":3000000.000,\"dur\":123456.789,"), "%s: long dur", what);
	a = item(e, "args");
	is_str(sval(a, "handle"), "0x1234", "%s: handle", what);
	is_int(nval(a, "count"), 3, "%s: count", what);
	is_int(nval(a, "ret"), 700, "%s: error ret", what);
	is_str(sval(a, "error"), "CUDA_ERROR_ILLEGAL_ADDRESS", "%s: error named", what);

	e = cJSON_GetArrayItem(evs, 7);
	is_str(sval(item(e, "args"), "kernel"), "bad\xef\xbf\xbd\x01name",
	       "%s: garbage kernel name made valid", what);

	e = cJSON_GetArrayItem(evs, 8);
	is_str(sval(e, "name"), "cuCtxSynchronize", "%s: last event", what);
	a = item(e, "args");
	ok(cJSON_IsObject(a) && cJSON_GetArraySize(a) == 0, "%s: no fields, empty args", what);

	cJSON_Delete(j);
}

static void test_export(void)
{
	struct model m;
	char *plain, *unz, *raw;
	size_t nplain = 0, nunz = 0;
	const char *pj = in_dir("trace.json"), *pz = in_dir("trace.json.gz");
	FILE *f;
	unsigned char magic[2] = { 0, 0 };

	build_model(&m);
	is_int(write_trace(&m, pj), 0, "export to .json");
	is_int(write_trace(&m, pz), 0, "export to .json.gz");
	plain = slurp(pj, &nplain);
	unz = slurp(pz, &nunz);
	f = fopen(pz, "rb");
	if (f) {
		if (fread(magic, 1, 2, f) != 2)
			magic[0] = 0;
		fclose(f);
	}
	ok(magic[0] == 0x1f && magic[1] == 0x8b, ".json.gz is gzip");
	ok(plain && unz && nplain == nunz && !memcmp(plain, unz, nplain),
	   "gzip content equals the plain file");
	raw = plain;
	ok(raw && !strncmp(raw, "{\"gpubpf\":{", 11), "file starts with the gpubpf object");
	if (plain)
		check_trace(plain, "json");
	if (unz)
		check_trace(unz, "json.gz");
	is_int(count_entries(), 2, "no temporaries left");
	unlink(pj);
	unlink(pz);
	free(plain);
	free(unz);
	model_release(&m);

	/* an empty model is still a valid trace */
	model_init(&m);
	model_finish(&m);
	is_int(write_trace(&m, pj), 0, "export an empty model");
	plain = slurp(pj, NULL);
	{
		cJSON *j = plain ? cJSON_Parse(plain) : NULL;

		ok(j && cJSON_GetArraySize(item(j, "traceEvents")) == 0 &&
		   nval(item(j, "gpubpf"), "events") == 0, "empty model: empty traceEvents");
		cJSON_Delete(j);
	}
	free(plain);
	unlink(pj);
	model_release(&m);
}

/*
 * CUPTI sync records: a stream wait event becomes one slice on its
 * stream's track; event, stream and context syncs (the host calls show
 * them) produce nothing.  Memory records: instants on the device's memory
 * track, and the counter comes from them, not also from the calls.
 */
static void test_gpu_records(void)
{
	static const struct { uint64_t ts; uint8_t type; } syncs[] = {
		{ 1000, 1 }, { 2000, 2 }, { 3000, 3 }, { 4000, 4 },
	};
	const char *pj = in_dir("gpu.json");
	struct model m;
	struct model_event *e;
	cJSON *j, *evs, *x;
	double wait_tid = -1, stream_tid = -2, mem_tid = -3, kernel_tid = -4;
	int nsync = 0, nmem = 0, ncounter = 0, inorder = 1;
	double last_ts = -1, counter_bytes[4] = { 0 };
	const char *mem_names[2] = { NULL, NULL };
	char *text;

	model_init(&m);
	model_process(&m, 300, "train");
	e = add(&m, 1900, 50, 300, 300, "cuStreamWaitEvent", CF_SYNC);
	e->correlation = 5;
	for (size_t i = 0; i < 4; i++) {
		e = model_add_event(&m);
		e->kind = EV_GPU_SYNC;
		e->ts = syncs[i].ts;
		e->dur = 40;
		e->pid = 300;
		e->tid = 300;
		e->device = 1;
		e->gpu_stream = 9;
		e->gpu_kind = syncs[i].type;
		e->handle = 42;
		e->correlation = syncs[i].type == 2 ? 5 : 6;
		e->link = MODEL_NO_LINK;
	}
	e = model_add_event(&m);
	e->kind = EV_KERNEL;
	e->ts = 2500;
	e->dur = 100;
	e->pid = 300;
	e->device = 1;
	e->gpu_stream = 9;
	e->link = MODEL_NO_LINK;
	/* an allocation seen both as a call and as a record, and its release */
	e = add(&m, 5000, 10, 300, 300, "cuMemAlloc_v2", CF_ALLOC);
	e->fields = MF_PTR | MF_BYTES;
	e->ptr = 0x7f00;
	e->bytes = 4096;
	for (int op = 1; op <= 2; op++) {
		e = model_add_event(&m);
		e->kind = EV_MEMORY;
		e->ts = op == 1 ? 5005 : 6000;
		e->pid = 300;
		e->tid = 300;
		e->device = 1;
		e->gpu_kind = op;
		e->copy_kind = 3;       /* device */
		e->ptr = 0x7f00;
		e->bytes = 4096;
		e->correlation = 7 + op;
		e->link = MODEL_NO_LINK;
	}
	model_finish(&m);
	is_int(write_trace(&m, pj), 0, "gpu records: export");
	text = slurp(pj, NULL);
	j = text ? cJSON_Parse(text) : NULL;
	evs = item(j, "traceEvents");
	ok(cJSON_IsArray(evs), "gpu records: valid trace");
	cJSON_ArrayForEach(x, evs) {
		const char *ph = sval(x, "ph") ?: "", *name = sval(x, "name") ?: "";
		const char *cat = sval(x, "cat") ?: "";

		if (!strcmp(ph, "M")) {
			const char *tn = sval(item(x, "args"), "name") ?: "";

			if (!strcmp(name, "thread_name") && !strcmp(tn, "GPU 1 / stream 9"))
				stream_tid = nval(x, "tid");
			if (!strcmp(name, "thread_name") && !strcmp(tn, "GPU 1 / memory"))
				mem_tid = nval(x, "tid");
			continue;
		}
		if (nval(x, "ts") < last_ts)
			inorder = 0;
		last_ts = nval(x, "ts");
		if (!strcmp(cat, "kernel"))
			kernel_tid = nval(x, "tid");
		if (!strcmp(cat, "gpu_sync")) {
			const cJSON *a = item(x, "args");

			nsync++;
			wait_tid = nval(x, "tid");
			is_str(ph, "X", "gpu records: wait event is a slice");
			is_str(name, "Wait event", "gpu records: named Wait event");
			ok(nval(x, "ts") == 2.0 && nval(x, "dur") == 0.04, "gpu records: its time");
			is_int(nval(a, "event"), 42, "gpu records: event id");
			is_int(nval(a, "correlation"), 5, "gpu records: correlation");
		}
		if (!strcmp(cat, "gpu_memory")) {
			const cJSON *a = item(x, "args");

			if (nmem < 2)
				mem_names[nmem] = name;
			nmem++;
			is_str(ph, "i", "gpu records: memory record is an instant");
			is_str(sval(x, "s"), "t", "gpu records: on its thread track");
			is_str(sval(a, "address"), "0x7f00", "gpu records: address");
			is_int(nval(a, "bytes"), 4096, "gpu records: bytes");
			is_str(sval(a, "memory_kind"), "device", "gpu records: memory kind");
			is_int(nval(a, "device"), 1, "gpu records: device");
			ok(nval(x, "tid") == mem_tid, "gpu records: on the GPU 1 / memory track");
		}
		if (!strcmp(ph, "C") && ncounter < 4)
			counter_bytes[ncounter++] = nval(item(x, "args"), "bytes");
	}
	is_int(nsync, 1, "gpu records: one slice for the wait event, none for other syncs");
	ok(wait_tid == stream_tid && wait_tid == kernel_tid,
	   "gpu records: the wait is on its stream's track, with the stream's kernels");
	is_int(nmem, 2, "gpu records: two memory instants");
	is_str(mem_names[0], "alloc", "gpu records: alloc first");
	is_str(mem_names[1], "free", "gpu records: then free");
	ok(mem_tid >= 0 && mem_tid != stream_tid, "gpu records: memory track named, its own");
	ok(inorder, "gpu records: events in time order");
	ok(ncounter == 2 && counter_bytes[0] == 4096 && counter_bytes[1] == 0,
	   "gpu records: counter from the records, the call not counted again");
	cJSON_Delete(j);
	free(text);
	unlink(pj);
	model_release(&m);
}

static struct model_event *add_kernel(struct model *m, uint64_t ts, uint32_t corr)
{
	struct model_event *e = model_add_event(m);

	if (!e) {
		printf("Bail out! model_add_event\n");
		exit(1);
	}
	e->kind = EV_KERNEL;
	e->ts = ts;
	e->dur = 10;
	e->pid = 400;
	e->device = 0;
	e->gpu_stream = 7;
	e->correlation = corr;
	e->link = MODEL_NO_LINK;
	return e;
}

/*
 * Flows v2: a graph launch's two kernels each get an arrow from it, a
 * launch its one kernel; a call without GPU work and GPU work without a
 * recorded call get none; no legacy "s"/"f" events.
 */
static void test_flows(void)
{
	const char *pj = in_dir("flows.json");
	double graph_id = -1, launch_id = -1, in_ids[4] = { -1, -1, -1, -1 };
	int nlegacy = 0, nout = 0, nin = 0, nbound = 0;
	struct model m;
	struct model_event *e;
	cJSON *j, *evs, *x;
	char *text;

	model_init(&m);
	model_process(&m, 400, "train");
	e = add(&m, 1000, 20, 400, 400, "cuGraphLaunch", CF_GRAPH);
	e->correlation = 11;
	e = add(&m, 1100, 5, 400, 400, "cuLaunchKernel", CF_LAUNCH);
	e->correlation = 12;
	e = add(&m, 1200, 5, 400, 400, "cuCtxGetCurrent", CF_LOOKUP);
	e->correlation = 13;
	add_kernel(&m, 1500, 11);
	add_kernel(&m, 1600, 11);
	add_kernel(&m, 1700, 12);
	add_kernel(&m, 1800, 99);       /* its call was not recorded */
	model_finish(&m);
	is_int(write_trace(&m, pj), 0, "flows: export");
	text = slurp(pj, NULL);
	j = text ? cJSON_Parse(text) : NULL;
	evs = item(j, "traceEvents");
	ok(cJSON_IsArray(evs), "flows: valid trace");
	cJSON_ArrayForEach(x, evs) {
		const char *ph = sval(x, "ph") ?: "", *name = sval(x, "name") ?: "";
		const char *cat = sval(x, "cat") ?: "";

		if (strchr("stf", ph[0]) && ph[1] == 0)
			nlegacy++;
		if (item(x, "bind_id"))
			nbound++;
		if (cJSON_IsTrue(item(x, "flow_out"))) {
			nout++;
			if (!strcmp(name, "cuGraphLaunch"))
				graph_id = nval(x, "bind_id");
			if (!strcmp(name, "cuLaunchKernel"))
				launch_id = nval(x, "bind_id");
		}
		if (!strcmp(cat, "kernel") && cJSON_IsTrue(item(x, "flow_in")) && nin < 4)
			in_ids[nin++] = nval(x, "bind_id");
	}
	is_int(nlegacy, 0, "flows: no legacy flow events");
	is_int(nout, 2, "flows: the two calls with GPU work start flows");
	is_int(nin, 3, "flows: the three kernels with a recorded call end one");
	is_int(nbound, 5, "flows: nothing else has a bind_id");
	ok(graph_id > 0 && launch_id > 0 && graph_id != launch_id, "flows: ids unique, nonzero");
	ok(in_ids[0] == graph_id && in_ids[1] == graph_id && in_ids[2] == launch_id,
	   "flows: each kernel bound to its own call (%g %g %g; graph %g, launch %g)",
	   in_ids[0], in_ids[1], in_ids[2], graph_id, launch_id);
	cJSON_Delete(j);
	free(text);
	unlink(pj);
	model_release(&m);
}

/*
 * Thread states and samples: a "<thread> state" track sorted right under
 * its thread, slices named by state, a sample instant named by its
 * innermost function with the stack in args.
 */
static void test_states(void)
{
	const char *pj = in_dir("states.json");
	uint32_t frames[2], funcs[2];
	int nstate = 0, nsample = 0, named = 0, sorted = 0;
	const char *names[3] = { "", "", "" };
	struct model m;
	cJSON *j, *evs, *x, *a;
	char *text;

	model_init(&m);
	model_process(&m, 500, "py");
	model_thread(&m, 500, 501, "worker");
	frames[0] = strtab_intern(&m.strs, "spin (w.py:3)");
	frames[1] = strtab_intern(&m.strs, "<module> (w.py:9)");
	funcs[0] = strtab_intern(&m.strs, "spin (w.py)");
	funcs[1] = strtab_intern(&m.strs, "<module> (w.py)");
	model_add_stack(&m, 500, 0x51, 0, 2, frames, funcs);
	model_thread_state(&m, 500, 501, 1000, MS_RUNNING, -1, 0);
	model_thread_state(&m, 500, 501, 3000, MS_GIL_WAIT, 202, 502);
	model_thread_state(&m, 500, 501, 4000, MS_IO, 0, 0);
	model_states_end(&m, 6000);
	model_add_sample(&m, &(struct model_sample){ .ts = 2000, .pid = 500, .tid = 501, .cpu = 1,
				      .pystack = 0x51, .flags = 0 });
	model_finish(&m);
	is_int(write_trace(&m, pj), 0, "states: export");
	text = slurp(pj, NULL);
	j = text ? cJSON_Parse(text) : NULL;
	evs = item(j, "traceEvents");
	ok(cJSON_IsArray(evs), "states: valid trace");
	cJSON_ArrayForEach(x, evs) {
		const char *cat = sval(x, "cat") ?: "", *name = sval(x, "name") ?: "";

		if (!strcmp(name, "thread_name") && nval(x, "tid") == 0x20000000 + 501 &&
		    !strcmp(sval(item(x, "args"), "name") ?: "", "worker state"))
			named++;
		if (!strcmp(name, "thread_sort_index") && nval(x, "pid") == 500)
			sorted += nval(item(x, "args"), "sort_index") ==
				  (nval(x, "tid") == 501 ? 0 : 1);
		if (!strcmp(cat, "thread_state") && nval(x, "tid") == 0x20000000 + 501 &&
		    nstate < 3)
			names[nstate++] = name;
		if (!strcmp(cat, "sample")) {
			a = item(item(x, "args"), "stack");
			nsample += !strcmp(name, "spin") && cJSON_GetArraySize(a) == 2 &&
				   nval(x, "tid") == 0x20000000 + 501;
		}
	}
	is_int(named, 1, "states: the track is named after its thread");
	is_int(sorted, 2, "states: sorted right under its thread");
	ok(nstate == 3 && !strcmp(names[0], "Running") &&
	   !strcmp(names[1], "GIL wait (held by 502)") && !strcmp(names[2], "read"),
	   "states: Running, GIL wait (held by 502), read (%s, %s, %s)", names[0], names[1],
	   names[2]);
	is_int(nsample, 1, "states: the sample, named by its innermost function, with its stack");
	cJSON_Delete(j);
	free(text);
	unlink(pj);
	model_release(&m);
}

/*
 * GIL waits (model_util.h's unit_gil_states(), no events): one bind id,
 * the holder's span's (1 + its index, 4), for the span and the waits
 * linked to it; the wait that begins with the span and outlasts it
 * (Perfetto reads it first) starts the flow and the span continues it
 * to the other wait; a wait for a waiting holder has none.
 */
static void test_gil_flows(void)
{
	const char *pj = in_dir("gil.json");
	char got[4][64] = { "", "", "", "" };
	int at[4] = { -1, -1, -1, -1 }, k = 0;
	struct model m;
	cJSON *j, *evs, *x;
	char *text;

	unit_gil_states(&m);
	is_int(write_trace(&m, pj), 0, "gil: export");
	text = slurp(pj, NULL);
	j = text ? cJSON_Parse(text) : NULL;
	evs = item(j, "traceEvents");
	cJSON_ArrayForEach(x, evs) {
		const char *cat = sval(x, "cat") ?: "";
		int tid = (int)nval(x, "tid") - 0x20000000, i = -1;
		double ts = nval(x, "ts");

		k++;
		if (strcmp(cat, "thread_state"))
			continue;
		if (tid == 602 && ts == 1.0)
			i = 0;
		else if (tid == 603)
			i = 1;
		else if (tid == 601 && ts == 2.0)
			i = 2;
		else if (tid == 604 && ts == 2.5)
			i = 3;
		if (i < 0)
			continue;
		at[i] = k;
		snprintf(got[i], sizeof(got[i]), "%.0f%s%s", item(x, "bind_id") ? nval(x, "bind_id") : 0,
			 cJSON_IsTrue(item(x, "flow_in")) ? " in" : "",
			 cJSON_IsTrue(item(x, "flow_out")) ? " out" : "");
	}
	is_str(got[0], "4 in out", "gil: the holder's span, 4, in and out");
	is_str(got[1], "4 out", "gil: the wait that begins with it and outlasts it starts it");
	is_str(got[2], "4 in", "gil: the later wait ends it");
	is_str(got[3], "0", "gil: no flow to a holder itself waiting");
	ok(at[0] >= 0 && at[0] < at[1], "gil: the holder's span written before the wait at its instant");
	cJSON_Delete(j);
	free(text);
	unlink(pj);
	model_release(&m);
}

static void test_sink(void)
{
	char err[512];
	struct sink s;
	struct stat st;
	char *txt;
	const char *p = in_dir("s.json");
	int ret;

	is_int(sink_format("a.json"), SINK_JSON, "format .json");
	is_int(sink_format("a.json.gz"), SINK_JSON_GZ, "format .json.gz");
	is_int(sink_format("A.JSON.GZ"), SINK_JSON_GZ, "format case-insensitive");
	is_int(sink_format("a.txt"), SINK_NONE, "format .txt unsupported");
	is_int(sink_format("a.gz"), SINK_NONE, "format .gz alone unsupported");

	/* early path checks */
	is_int(sink_check_path(p, err, sizeof(err)), 0, "check: writable dir");
	is_str(err, "", "check: no message when fine");
	ret = sink_check_path(in_dir("x.txt"), err, sizeof(err));
	is_int(ret, -EINVAL, "check: bad extension -EINVAL");
	ok(strstr(err, "unsupported output format") && strstr(err, "x.txt"),
	   "check: bad extension message: %s", err);
	ret = sink_check_path("/nonexistent-gpubpf-dir/t.json", err, sizeof(err));
	is_int(ret, -ENOENT, "check: missing directory -ENOENT");
	is_str(err, "cannot write '/nonexistent-gpubpf-dir/t.json': No such file or directory",
	       "check: missing directory message");
	mkdir(in_dir("d.json"), 0755);
	is_int(sink_check_path(in_dir("d.json"), err, sizeof(err)), -EISDIR,
	       "check: path is a directory -EISDIR");
	rmdir(in_dir("d.json"));
	is_int(sink_check_path(in_dir("x.txt"), NULL, 0), -EINVAL, "check: NULL message buffer");

	/* bad extension refused by sink_open too */
	ret = sink_open(&s, in_dir("x.txt"));
	is_int(ret, -EINVAL, "open: .txt rejected");
	ok(strstr(sink_errmsg(&s), "unsupported output format") != NULL,
	   "open: message: %s", sink_errmsg(&s));
	sink_abort(&s);

	/* any name, written as it is: the report's text and SVG files
	 * (own buffer: in_dir()'s rotate and p must survive) */
	{
		char plain[600];
		char *got;
		size_t n;

		snprintf(plain, sizeof(plain), "%s/plain.txt", unit_dir);
		is_int(sink_check_path_plain(plain, err, sizeof(err)), 0,
		       "check plain: any extension accepted");
		is_int(sink_check_path_plain("/nonexistent-gpubpf-dir/r.txt", err, sizeof(err)),
		       -ENOENT, "check plain: missing directory still refused");
		ret = sink_open_plain(&s, plain);
		is_int(ret, 0, "open plain: .txt accepted");
		sink_write(&s, "not json\n", 9);
		is_int(sink_commit(&s), 0, "commit plain");
		got = slurp(plain, &n);
		ok(got && n == 9 && !memcmp(got, "not json\n", 9),
		   "plain file holds the bytes as written");
		free(got);
		unlink(plain);
	}

	/* unwritable places (root ignores mode bits: use missing dirs and /proc) */
	ret = sink_open(&s, "/nonexistent-gpubpf-dir/t.json");
	is_int(ret, -ENOENT, "open: missing directory -ENOENT");
	is_str(sink_errmsg(&s), "cannot write '/nonexistent-gpubpf-dir/t.json': No such file or directory",
	       "open: missing directory message");
	sink_abort(&s);
	ret = sink_open(&s, "/proc/gpubpf-test.json");
	ok(ret < 0, "open: /proc refused (%d)", ret);
	ok(strncmp(sink_errmsg(&s), "cannot write '/proc/gpubpf-test.json': ", 39) == 0,
	   "open: /proc message: %s", sink_errmsg(&s));
	sink_abort(&s);

	/* abort leaves nothing */
	is_int(sink_open(&s, p), 0, "open s.json");
	is_int(count_entries(), 1, "a temporary exists while writing");
	ok(access(p, F_OK) < 0, "the final path does not exist while writing");
	is_int(sink_write(&s, "{}", 2), 0, "write");
	sink_abort(&s);
	is_int(count_entries(), 0, "abort removes the temporary");
	ok(access(p, F_OK) < 0, "abort leaves no file at the final path");
	sink_abort(&s);
	ok(1, "abort twice is safe");

	/* commit: final name, umask-respecting mode, nothing else left */
	umask(027);
	is_int(sink_open(&s, p), 0, "open again");
	{
		char big[100000];

		memset(big, ' ', sizeof(big));
		big[0] = '[';
		big[sizeof(big) - 1] = ']';
		ret = 0;
		for (int i = 0; i < 5 && !ret; i++) {
			ret = sink_write(&s, "[", 1);
			ret = ret ?: sink_write(&s, big, sizeof(big));
			ret = ret ?: sink_write(&s, "]", 1);
		}
		/* not valid JSON; the sink does not care */
	}
	is_int(ret, 0, "write 500 KB in mixed sizes");
	is_int(sink_commit(&s), 0, "commit");
	ok(stat(p, &st) == 0 && st.st_size == 5 * 100002, "committed file at the final path, size %lld",
	   (long long)st.st_size);
	is_int(st.st_mode & 07777, 0640, "mode is 0666 & ~umask");
	is_int(count_entries(), 1, "no temporary left after commit");
	umask(022);

	/* commit replaces an existing file; under sudo it goes to the user */
	if (geteuid() == 0) {
		setenv("SUDO_UID", "12345", 1);
		setenv("SUDO_GID", "23456", 1);
	}
	is_int(sink_open(&s, p), 0, "open over an existing file");
	is_int(sink_write(&s, "[1]", 3), 0, "write");
	is_int(sink_commit(&s), 0, "commit over it");
	txt = slurp(p, NULL);
	is_str(txt, "[1]", "the file was replaced");
	free(txt);
	if (geteuid() == 0) {
		ok(stat(p, &st) == 0 && st.st_uid == 12345 && st.st_gid == 23456,
		   "under sudo the file belongs to SUDO_UID:SUDO_GID");
		unsetenv("SUDO_UID");
		unsetenv("SUDO_GID");
	} else {
		ok(1, "# SKIP not root");
	}
	is_int(st.st_mode & 07777, 0644, "mode 0644 under umask 022");
	unlink(p);

	/* commit after a failed open reports the error, leaves nothing */
	sink_open(&s, "/nonexistent-gpubpf-dir/t.json");
	ok(sink_commit(&s) < 0, "commit of a failed sink fails");
	sink_abort(&s);
	is_int(count_entries(), 0, "directory empty at the end");
}

int main(void)
{
	if (unit_mkdtemp("export")) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_export();
	test_gpu_records();
	test_flows();
	test_states();
	test_gil_flows();
	test_sink();
	rmdir(unit_dir);
	return done_testing();
}
