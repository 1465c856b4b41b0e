// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for the trace importer: a model exported, imported and
 * finished exports to the same bytes; the fields, stacks, links and
 * metadata it reads back; thread states and CPU samples; the streaming
 * API; bad files.
 *
 *	test_trace_import [TRACE...]
 *
 * With traces (written by this version of record), checks instead that
 * each one imported and exported again is the same file, and so is it
 * once written as .pftrace and read back.  The unit models make that trip
 * too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_activity.h"
#include "lib/sink.h"
#include "model/cuda_calls.h"
#include "model/memory.h"
#include "model/model.h"
#include "model/thread_state.h"
#include "trace/export.h"
#include "trace/schema.h"
#include "trace/trace_import.h"
#include "model_util.h"
#include "tap.h"



static void spew(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(text, 1, len, f) != len) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
	fclose(f);
}

static int write_as(const struct exporter *e, const struct model *m, const char *path)
{
	struct sink s;
	int ret = sink_open(&s, path);

	if (ret) {
		diag("sink_open: %s", sink_errmsg(&s));
		return ret;
	}
	ret = e->write(m, &(struct export_opts){ 0 }, &s);
	if (ret) {
		sink_abort(&s);
		return ret;
	}
	return sink_commit(&s);
}

static int write_trace(const struct model *m, const char *path)
{
	return write_as(&export_chrome, m, path);
}

/*
 * m written as .pftrace, read back (trace_reader's .pftrace path) and
 * written as JSON: the same bytes as the JSON in json.
 */
static void pftrace_round_trip(const struct model *m, const char *json, const char *what)
{
	const char *pf = in_dir("rt.pftrace"), *back = in_dir("rt.json");
	char err[700], *ta, *tb;
	size_t na = 0, nb = 0;
	struct model m2;
	int ret;

	model_init(&m2);
	ret = write_as(&export_perfetto, m, pf) ?: trace_import_file(&m2, pf, err, sizeof(err));
	if (ret)
		diag("%s", err);
	ok(!ret && !write_trace(&m2, back), "%s: written as .pftrace, read back, written as JSON",
	   what);
	ta = slurp(json, &na);
	tb = slurp(back, &nb);
	ok(ta && tb && na == nb && !memcmp(ta, tb, na), "%s: the same bytes as its JSON", what);
	free(ta);
	free(tb);
	unlink(pf);
	unlink(back);
	model_release(&m2);
}

static struct model_event *call(struct model *m, uint64_t ts, uint64_t dur, uint32_t pid,
				uint32_t tid, const char *name)
{
	struct model_event *e = unit_event(m, ts, dur, pid, tid, name);
	int id = cuda_call_find(name);

	if (id < 0) {
		printf("Bail out! call %s\n", name);
		exit(1);
	}
	e->call_id = id;
	e->family = cuda_calls[id].family;
	return e;
}

static struct model_event *gpu(struct model *m, uint8_t kind, uint64_t ts, uint64_t dur,
			       uint32_t pid, uint32_t corr)
{
	struct model_event *e = model_add_event(m);

	e->kind = kind;
	e->ts = ts;
	e->dur = dur;
	e->pid = pid;
	e->device = 1;
	e->gpu_stream = 7;
	e->correlation = corr;
	e->link = MODEL_NO_LINK;
	return e;
}

static void add_stack(struct model *m, uint32_t pid, uint64_t id, int truncated,
		      const char *const *frames, const char *const *funcs, uint32_t n)
{
	uint32_t fr[8], fu[8];

	for (uint32_t i = 0; i < n; i++) {
		fr[i] = strtab_intern(&m->strs, frames[i]);
		fu[i] = strtab_intern(&m->strs, funcs[i]);
	}
	model_add_stack(m, pid, id, truncated, n, fr, fu);
}

/* 200 days of uptime: past 2^52 ns */
#define T0 (200ULL * 86400 * 1000000000 + 123)

/* A model with every kind of event, field and metadata the exporter writes. */
static void build(struct model *m)
{
	static const char *const frames[] = {
		"Block.forward (/home/u/model.py:12)", "Model.forward (/home/u/model.py:30)",
		"<module> (/home/u/train.py:5)",
	};
	static const char *const funcs[] = {
		"Block.forward (/home/u/model.py)", "Model.forward (/home/u/model.py)",
		"<module> (/home/u/train.py)",
	};
	const char *native[] = { "cuLaunchKernel+0x0 (/usr/lib/libcuda.so.1)",
				 "at::launch+0x1c (/opt/libtorch.so)" };
	struct model_process *p;
	struct model_event *e;
	uint32_t nf[2];

	model_init(m);
	snprintf(m->host, sizeof(m->host), "node-\"7\"");
	m->realtime_offset_ns = -1700000000123456789LL;
	m->dropped_total = 9;
	p = model_process(m, 100, "python3");
	p->dropped = 3;
	p->missed = strtab_intern(&m->strs, "libcuda loaded before attach");
	p->gpu_dropped = 2;
	p->gpu_error = strtab_intern(&m->strs, "CUPTI_ERROR_NOT_INITIALIZED");
	p->gpu_window_ns = T0 + 250;
	p->inject_stall_ns = 1234567;
	p->inject_tid = 101;
	model_process(m, 200, NULL);
	model_thread(m, 100, 100, "python3");
	model_thread(m, 100, 101, "pt_\xce\xba\x01");
	model_thread(m, 200, 201, NULL);
	model_set_kernel_name(m, 100, 0xabc, "void gemm<float>(int, \"x\")");
	add_stack(m, 100, 77, 0, frames, funcs, 3);
	add_stack(m, 100, 78, 1, frames + 1, funcs + 1, 2);
	nf[0] = strtab_intern(&m->strs, native[0]);
	nf[1] = strtab_intern(&m->strs, native[1]);
	model_add_native_stack(m, 100, 5, 2, nf);

	e = call(m, T0 + 1000, 500, 100, 101, "cuLaunchKernel");
	e->fields = MF_GRID | MF_BLOCK | MF_SHMEM | MF_STREAM | MF_FUNC | MF_RET;
	e->func = 0xabc;
	e->grid[0] = 4, e->grid[1] = 2, e->grid[2] = 1;
	e->block[0] = 256, e->block[1] = 1, e->block[2] = 1;
	e->shared_mem = 1024;
	e->stream = 0x55aa00;
	e->pystack = 77;
	e->nstack = 5;
	model_add_corr(m, T0 + 1100, 100, 101, 11);
	e = gpu(m, EV_KERNEL, T0 + 1400, 3000, 100, 11);
	e->kernel = strtab_intern(&m->strs, "void gemm<float>(int, \"x\")");
	e->grid[0] = 4, e->grid[1] = 2, e->grid[2] = 1;
	e->block[0] = 256, e->block[1] = 1, e->block[2] = 1;
	e->registers = 32;
	e->shared_mem = 1024;
	e->static_shmem = 48;

	e = call(m, T0 + 2000, 300, 100, 101, "cuMemcpyHtoDAsync_v2");
	e->fields = MF_BYTES | MF_KIND | MF_PTR | MF_STREAM | MF_RET;
	e->bytes = 4096;
	e->copy_kind = CK_HTOD;
	e->ptr = 0x7f0000001000;
	e->pystack = 78;
	model_add_corr(m, T0 + 2100, 100, 101, 12);
	e = gpu(m, EV_MEMCPY, T0 + 4500, 800, 100, 12);
	e->gpu_kind = 1;        /* HtoD */
	e->bytes = 4096;

	/* a graph launch: two kernels, one of them unnamed */
	e = call(m, T0 + 3000, 100, 100, 100, "cuGraphLaunch");
	e->fields = MF_HANDLE | MF_STREAM | MF_RET;
	e->handle = 0x1234;
	model_add_corr(m, T0 + 3050, 100, 100, 13);
	e = gpu(m, EV_KERNEL, T0 + 5400, 100, 100, 13);
	e->kernel = strtab_intern(&m->strs, "ncclDevKernel_AllReduce");
	e->graph_node = 99;
	e = gpu(m, EV_KERNEL, T0 + 5600, 100, 100, 13);
	e->graph_node = 100;
	e = gpu(m, EV_MEMSET, T0 + 5800, 50, 100, 13);
	e->bytes = 512;

	/* failed calls: one returned, one whose error the library announced */
	e = call(m, T0 + 6000, 10, 100, 100, "cuMemAlloc_v2");
	e->fields = MF_BYTES | MF_RET;
	e->bytes = 1ULL << 40;
	e->ret = 2;
	e = call(m, T0 + 6100, 0, 100, 100, "cuLaunchKernel");
	e->fields = MF_FUNC;
	e->func = 0xdead;
	model_add_call_error(m, T0 + 6100, 100, 100, 700);

	/* device memory: a call, its record, a release; a wait on the stream */
	e = call(m, T0 + 7000, 20, 100, 100, "cuMemAlloc_v2");
	e->fields = MF_PTR | MF_BYTES | MF_RET;
	e->ptr = 0x7f00;
	e->bytes = 1 << 20;
	model_add_corr(m, T0 + 7005, 100, 100, 14);
	e = gpu(m, EV_MEMORY, T0 + 7010, 0, 100, 14);
	e->gpu_kind = 1;
	e->ptr = 0x7f00;
	e->bytes = 1 << 20;
	e->copy_kind = MEM_KIND_DEVICE;
	e = call(m, T0 + 8000, 20, 100, 100, "cuMemFree_v2");
	e->fields = MF_PTR | MF_RET;
	e->ptr = 0x7f00;
	e = gpu(m, EV_MEMORY, T0 + 8010, 0, 100, 0);
	e->gpu_kind = 2;
	e->ptr = 0x7f00;
	e->bytes = 1 << 20;
	e->copy_kind = MEM_KIND_DEVICE;
	e = call(m, T0 + 8500, 5, 100, 100, "cuStreamWaitEvent");
	e->fields = MF_STREAM | MF_HANDLE | MF_RET;
	e->handle = 0x42;
	model_add_corr(m, T0 + 8501, 100, 100, 15);
	e = gpu(m, EV_GPU_SYNC, T0 + 8500, 5, 100, 15);
	e->gpu_kind = GA_SYNC_STREAM_WAIT_EVENT;
	e->handle = 0x42;

	/* another process, a kernel without a name */
	e = call(m, T0 + 9000, 999, 200, 201, "cuLaunchKernel");
	e->fields = MF_FUNC | MF_GRID;
	e->func = 0xdef;
	e->grid[0] = e->grid[1] = e->grid[2] = 1;
	model_add_corr(m, T0 + 9001, 200, 201, 11);
	gpu(m, EV_KERNEL, T0 + 9500, 10, 200, 11);
	e = call(m, T0 + 9999, 1, 200, 201, "cuCtxSynchronize");
	e->fields = MF_RET;

	/* a worker without Python, woken by the main thread: an attributed stack */
	model_thread(m, 100, 102, "pt_autograd_0");
	model_add_wake(m, T0 + 9700, 100, 102, 100, 77);
	e = call(m, T0 + 9800, 0, 100, 102, "cuLaunchKernel");
	e->fields = MF_FUNC;
	e->func = 0xabc;
}

static const struct model_event *find(const struct model *m, uint8_t kind, const char *name,
				      uint64_t ts)
{
	for (size_t i = 0; i < m->nev; i++) {
		const struct model_event *e = &m->ev[i];

		if (e->kind == kind && e->ts == ts &&
		    (!name || !strcmp(strtab_get(&m->strs, e->name), name)))
			return e;
	}
	return NULL;
}

static const char *frame(const struct model *m, uint32_t stack, uint32_t i)
{
	const struct model_stack *st = &m->stacks[stack - 1];

	return i < st->n ? strtab_get(&m->strs, m->frames[st->first + i]) : "";
}

static void check_model(const struct model *m)
{
	const struct model_process *p = &m->procs[0];
	const struct model_event *e, *k;
	uint32_t launch;

	is_str(m->host, "node-\"7\"", "host");
	ok(m->realtime_offset_ns == -1700000000123456789LL, "realtime_offset_ns exact");
	ok(m->dropped_total == 9 && p->dropped == 3 && p->gpu_dropped == 2, "drops");
	is_str(strtab_get(&m->strs, p->missed), "libcuda loaded before attach", "calls missing");
	is_str(strtab_get(&m->strs, p->gpu_error), "CUPTI_ERROR_NOT_INITIALIZED", "GPU error");
	ok(p->gpu_window_ns == T0 + 250, "GPU window exact");
	ok(p->inject_stall_ns == 1234567 && p->inject_tid == 101, "late attach");
	ok(m->nprocs == 2 && p->pid == 100 && m->procs[1].pid == 200 && !m->procs[1].name,
	   "processes in order, unnamed kept");

	e = find(m, EV_API, "cuLaunchKernel", T0 + 1000);
	ok(e, "launch read back");
	if (!e)
		return;
	launch = e - m->ev;
	ok(e->tid == 101 && e->dur == 500 && e->fields == (MF_GRID | MF_BLOCK | MF_SHMEM |
	   MF_STREAM | MF_FUNC | MF_RET), "launch: tid, dur, fields");
	ok(e->grid[0] == 4 && e->grid[1] == 2 && e->block[0] == 256 && e->shared_mem == 1024 &&
	   e->stream == 0x55aa00 && e->ret == 0, "launch: values");
	is_str(strtab_get(&m->strs, e->kernel), "void gemm<float>(int, \"x\")", "launch: kernel");
	ok(e->family == CF_LAUNCH && e->call_id == cuda_call_find("cuLaunchKernel"),
	   "launch: call id and family");
	is_int(e->correlation, 11, "launch: correlation");
	ok(e->stack && m->stacks[e->stack - 1].n == 3, "launch: Python stack");
	is_str(frame(m, e->stack, 0), "Block.forward (/home/u/model.py:12)", "innermost frame");
	is_str(strtab_get(&m->strs, m->funcs[m->stacks[e->stack - 1].first + 2]),
	       "<module> (/home/u/train.py)", "frame's function derived");
	ok(e->native && m->stacks[e->native - 1].native, "launch: native stack");
	is_str(frame(m, e->native, 1), "at::launch+0x1c (/opt/libtorch.so)", "native frame");

	k = find(m, EV_KERNEL, NULL, T0 + 1400);
	ok(k && k->link == launch, "kernel linked to its launch");
	ok(k && k->device == 1 && k->gpu_stream == 7 && k->registers == 32 &&
	   k->static_shmem == 48 && k->grid[1] == 2, "kernel: where and shape");
	e = find(m, EV_API, "cuMemcpyHtoDAsync_v2", T0 + 2000);
	ok(e && e->bytes == 4096 && e->copy_kind == CK_HTOD && e->ptr == 0x7f0000001000 &&
	   e->stack && m->stacks[e->stack - 1].truncated, "memcpy call: values, truncated stack");
	k = find(m, EV_MEMCPY, NULL, T0 + 4500);
	ok(k && k->gpu_kind == 1 && k->bytes == 4096 && k->link == (uint32_t)(e - m->ev),
	   "GPU copy: kind, bytes, link");
	e = find(m, EV_API, "cuGraphLaunch", T0 + 3000);
	k = find(m, EV_KERNEL, NULL, T0 + 5600);
	ok(e && k && k->link == (uint32_t)(e - m->ev) && k->graph_node == 100 && !k->kernel,
	   "graph kernel: link, node, no name");
	k = find(m, EV_MEMSET, NULL, T0 + 5800);
	ok(k && k->bytes == 512, "memset");
	e = find(m, EV_API, "cuMemAlloc_v2", T0 + 6000);
	ok(e && (e->fields & MF_RET) && e->ret == 2 && e->bytes == 1ULL << 40, "failed call");
	e = find(m, EV_API, "cuLaunchKernel", T0 + 6100);
	ok(e && (e->fields & MF_RET) && e->ret == 700 && e->func == 0xdead && !e->kernel,
	   "announced error and unnamed handle");
	k = find(m, EV_MEMORY, NULL, T0 + 7010);
	ok(k && k->gpu_kind == 1 && k->ptr == 0x7f00 && k->copy_kind == MEM_KIND_DEVICE &&
	   k->correlation == 14, "memory record");
	k = find(m, EV_GPU_SYNC, NULL, T0 + 8500);
	ok(k && k->gpu_kind == GA_SYNC_STREAM_WAIT_EVENT && k->handle == 0x42, "stream wait");
	e = find(m, EV_API, "cuLaunchKernel", T0 + 9800);
	ok(e && e->tid == 102 && e->stack && e->stack_tid == 100,
	   "a worker's launch: its stack attributed, walked on thread 100");
	is_str(e && e->stack ? frame(m, e->stack, 0) : NULL, "Block.forward (/home/u/model.py:12)",
	       "attributed stack's innermost frame");
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].kind == EV_SCOPE && m->ev[i].tid == 102)
			launch = UINT32_MAX;
	ok(launch != UINT32_MAX, "no Python scopes on the worker's track");
}

static void test_round_trip(void)
{
	const char *a = in_dir("a.json"), *b = in_dir("b.json");
	struct model m, back;
	char err[700], *ta = NULL, *tb = NULL;
	size_t na = 0, nb = 0;
	size_t scopes = 0;

	build(&m);
	is_int(model_finish(&m), 0, "model_finish");
	for (size_t i = 0; i < m.nev; i++)
		scopes += m.ev[i].kind == EV_SCOPE;
	ok(scopes >= 3, "the model has Python scopes (%zu)", scopes);
	is_int(write_trace(&m, a), 0, "export");
	model_init(&back);
	is_int(trace_import_file(&back, a, err, sizeof(err)), 0, "import");
	is_int(back.nev, m.nev, "as many events, scopes derived again");
	is_int(write_trace(&back, b), 0, "export again");
	ta = slurp(a, &na);
	tb = slurp(b, &nb);
	ok(ta && tb && na == nb && !memcmp(ta, tb, na), "the two traces are byte-identical");
	check_model(&back);
	pftrace_round_trip(&m, a, "calls, GPU work, stacks");
	free(ta);
	free(tb);
	model_release(&back);
	model_release(&m);
}

/* Two threads' states (a GIL wait, syscalls by name and by number) and samples. */
static void build_states(struct model *m)
{
	static const char *const frames[] = { "step (/t.py:4)", "<module> (/t.py:9)" };
	static const char *const funcs[] = { "step (/t.py)", "<module> (/t.py)" };

	model_init(m);
	model_process(m, 300, "python3");
	model_thread(m, 300, 301, "main");
	add_stack(m, 300, 9, 0, frames, funcs, 2);
	call(m, T0 + 1200, 300, 300, 301, "cuCtxSynchronize");
	model_thread_state(m, 300, 301, T0, MS_RUNNING, -1, 0);
	model_thread_state(m, 300, 302, T0 + 500, MS_RUNNING, -1, 0);
	model_thread_state(m, 300, 301, T0 + 1000, MS_GIL_WAIT, 202, 302);
	model_thread_state(m, 300, 302, T0 + 1500, MS_OTHER_WAIT, 999, 0);
	model_thread_state(m, 300, 301, T0 + 2000, MS_RUNNING, -1, 0);
	model_thread_woken(m, 300, 302, T0 + 2500);
	model_thread_state(m, 300, 302, T0 + 2600, MS_RUNNING, -1, 0);
	model_thread_state(m, 300, 301, T0 + 3000, MS_IO, 0, 0);
	model_state_stack(m, 300, 301, 9);      /* the line it blocked in */
	model_thread_state(m, 300, 301, T0 + 4000, MS_RUNNING, -1, 0);
	model_thread_exit(m, 300, 302, T0 + 5000);
	model_states_end(m, T0 + 6000);
	model_add_sample(m, &(struct model_sample){ .ts = T0 + 600, .pid = 300, .tid = 302, .cpu = 1,
				      .pystack = 9, .flags = 0 });
	model_add_sample(m, &(struct model_sample){ .ts = T0 + 100, .pid = 300, .tid = 301, .cpu = 3,
				      .pystack = 9, .flags = 0 });
	model_add_sample(m, &(struct model_sample){ .ts = T0 + 700, .pid = 300, .tid = 302, .cpu = 1,
				      .pystack = 0, .flags = MODEL_SAMPLE_GC, .nstack = 0x77 });
	{
		uint32_t native[2] = { strtab_intern(&m->strs, "spin+0x1f (a.out)"),
				       strtab_intern(&m->strs, "main+0x9 (a.out)") };

		model_add_native_stack(m, 300, 0x77, 2, native);
	}
}

static bool same_span(const struct model_state_span *a, const struct model_state_span *b)
{
	return a->ts == b->ts && a->dur == b->dur && a->pid == b->pid && a->tid == b->tid &&
	       a->state == b->state && a->syscall == b->syscall && a->holder == b->holder;
}

static void check_states(const struct model *m, const struct model *back)
{
	const struct model_state_span *gil = &back->states[1], *other = &back->states[6];
	size_t same = 0;

	is_int(back->nstates, m->nstates, "as many state spans");
	for (size_t i = 0; i < m->nstates && i < back->nstates; i++)
		same += same_span(&m->states[i], &back->states[i]);
	is_int(same, m->nstates, "every span as recorded");
	if (back->nstates != 9)
		return;
	ok(gil->tid == 301 && gil->state == MS_GIL_WAIT && gil->holder == 302 &&
	   gil->syscall == 202 && gil->ts == T0 + 1000 && gil->dur == 1000, "GIL wait and holder");
	ok(back->states[3].state == MS_IO && back->states[3].syscall == 0, "read by its name");
	ok(back->states[3].stack && !back->states[1].stack, "the read's stack, and only its");
	if (back->states[3].stack)
		is_str(frame(back, back->states[3].stack, 0), "step (/t.py:4)",
		       "the line the read blocked in");
	ok(other->tid == 302 && other->state == MS_OTHER_WAIT && other->syscall == 999 &&
	   other->dur == 1000, "a syscall by its number");
	ok(back->states[8].state == MS_RUNNING && back->states[8].dur == 2400, "exit ends a span");
	is_int(back->nsamples, 3, "three samples");
	if (back->nsamples != 3)
		return;
	ok(back->samples[0].ts == T0 + 100 && back->samples[0].tid == 301 &&
	   back->samples[0].cpu == 3 && back->samples[0].stack, "sample fields");
	if (back->samples[0].stack)
		is_str(frame(back, back->samples[0].stack, 1), "<module> (/t.py:9)", "its stack");
	ok(back->samples[1].stack == back->samples[0].stack, "one stack for both samples");
	ok(!back->samples[2].stack && !back->samples[2].pystack, "a sample without a stack");
	ok(back->samples[2].flags == MODEL_SAMPLE_GC && !back->samples[0].flags &&
	   !back->samples[1].flags, "the sample in the garbage collector, and only it, says so");
	ok(back->samples[2].native && !back->samples[0].native &&
	   back->stacks[back->samples[2].native - 1].n == 2, "the sample's native stack");
	if (back->samples[2].native)
		is_str(frame(back, back->samples[2].native, 1), "main+0x9 (a.out)",
		       "its frames, innermost first");
	ok(model_find_thread(back, 300, 302) &&
	   !model_find_thread(back, 300, TS_STATE_TID_BASE + 301), "state tracks are not threads");
}

static void test_states(void)
{
	const char *a = in_dir("s.json"), *b = in_dir("s2.json");
	struct model m, back;
	char err[700], *ta = NULL, *tb = NULL;
	size_t na = 0, nb = 0;

	build_states(&m);
	is_int(model_finish(&m), 0, "model_finish, states");
	is_int(write_trace(&m, a), 0, "export states");
	model_init(&back);
	is_int(trace_import_file(&back, a, err, sizeof(err)), 0, "import states");
	is_int(write_trace(&back, b), 0, "export states again");
	ta = slurp(a, &na);
	tb = slurp(b, &nb);
	ok(ta && tb && na == nb && !memcmp(ta, tb, na), "states: the two traces are byte-identical");
	check_states(&m, &back);
	pftrace_round_trip(&m, a, "states and samples");
	free(ta);
	free(tb);
	unlink(a);
	unlink(b);
	model_release(&back);
	model_release(&m);
}

/*
 * The .pftrace's state tracks name their thread by its name, or by its tid
 * when it has none: a thread without states before an unnamed one's state
 * track, and a thread named like a tid, are still told apart.
 */
static void test_state_tracks(void)
{
	const char *a = in_dir("t.json");
	struct model m;

	model_init(&m);
	model_process(&m, 300, "python3");
	model_thread(&m, 300, 303, "loader");
	model_thread(&m, 300, 305, "1234");
	call(&m, T0 + 100, 10, 300, 303, "cuCtxSynchronize");
	model_thread_state(&m, 300, 304, T0, MS_RUNNING, -1, 0);
	model_thread_state(&m, 300, 304, T0 + 400, MS_IO, 0, 0);
	model_thread_state(&m, 300, 305, T0 + 200, MS_RUNNING, -1, 0);
	model_states_end(&m, T0 + 1000);
	is_int(model_finish(&m), 0, "state tracks: model_finish");
	is_int(write_trace(&m, a), 0, "state tracks: export");
	pftrace_round_trip(&m, a, "state tracks of an unnamed thread and of one named 1234");
	unlink(a);
	model_release(&m);
}

/* Streaming: events one by one, stacks set, derived ones skipped. */
static void test_stream(void)
{
	const char *a = in_dir("a.json");
	struct trace_import ti;
	struct model_event ev;
	struct model m;
	size_t n = 0, stacks = 0, kernels = 0;
	int ret;

	model_init(&m);
	is_int(trace_import_open(&ti, a, &m), 0, "open");
	while ((ret = trace_import_next(&ti, &ev)) > 0) {
		n++;
		stacks += ev.stack != 0;
		kernels += ev.kind == EV_KERNEL;
		if (ev.stack)
			ok(m.stacks[ev.stack - 1].pid == ev.pid, "stack %u of the event's process",
			   ev.stack);
	}
	is_int(ret, 0, "to the end");
	trace_import_close(&ti);
	is_int(n, 20, "every call and GPU record, no scopes");
	is_int(stacks, 3, "three calls with Python stacks (one attributed)");
	is_int(kernels, 4, "four kernels");
	is_int(m.nev, 0, "events stay the caller's");
	is_int(m.nstacks, 3, "stacks deduplicated (two Python, one native)");
	model_release(&m);
}

/* A hand-written trace: no ts_base_ns, escapes, foreign events. */
static void test_handwritten(void)
{
	static const char text[] =
		"{\"gpubpf\":{\"version\":\"x\",\"host\":\"h\",\"realtime_offset_ns\":5},\n"
		"\"traceEvents\":[\n"
		"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1073741825,"
		"\"args\":{\"name\":\"GPU 0 / stream 1\"}},\n"
		"{\"ph\":\"s\",\"name\":\"flow\",\"pid\":1,\"tid\":2,\"ts\":1,\"id\":3},\n"
		"{\"ph\":\"X\",\"cat\":\"python\",\"name\":\"f\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":9},\n"
		"{\"ph\":\"X\",\"cat\":\"cuda_api\",\"name\":\"cuCtxSynchronize\",\"pid\":1,\"tid\":2,"
		"\"ts\":5000000.001,\"dur\":1.5,\"args\":{\"x\":[1,{\"ret\":3}],\"ret\":1,"
		"\"stack\":[\"a\\u00e9\\ud83d\\ude00\\\"b (f.py:3)\"]}},\n"
		"{\"ph\":\"X\",\"cat\":\"cuda_api\",\"name\":\"\",\"pid\":1,\"tid\":2,"
		"\"ts\":5000001,\"dur\":0,\"args\":{\"kernel\":\"\",\"stack\":[],"
		"\"native_stack\":[\"\"]}}\n"
		"]}\n";
	const char *p = in_dir("hand.json");
	struct model m;
	char err[700];
	const struct model_event *e;

	spew(p, text, sizeof(text) - 1);
	model_init(&m);
	is_int(trace_import_file(&m, p, err, sizeof(err)), 0, "hand-written trace imported");
	e = find(&m, EV_API, "cuCtxSynchronize", 5000000001ULL);
	ok(e && e->dur == 1500,
	   "no ts_base_ns: absolute times, exact");
	ok(e && e->ret == 1 && (e->fields & MF_RET), "ret of args, not of a nested object");
	ok(e && e->stack, "its stack");
	if (e && e->stack)
		is_str(frame(&m, e->stack, 0), "a\xc3\xa9\xf0\x9f\x98\x80\"b (f.py:3)",
		       "escapes decoded to UTF-8");
	is_int(m.nthreads, 0, "GPU track names are not threads");
	ok(find(&m, EV_API, "", 5000001000ULL), "empty names and stacks read");
	model_release(&m);
}

static void test_bad(void)
{
	const char *a = in_dir("a.json"), *cut = in_dir("cut.json"), *foreign = in_dir("f.json");
	struct model m;
	char err[700], want[700];
	size_t n = 0;
	char *text = slurp(a, &n);

	spew(cut, text, n / 2);
	spew(foreign, "{\"traceEvents\":[]}\n", 19);
	free(text);
	model_init(&m);
	ok(trace_import_file(&m, cut, err, sizeof(err)) == -EINVAL, "cut file fails");
	snprintf(want, sizeof(want), "%s: truncated", cut);
	ok(!strncmp(err, want, strlen(want)) && !strchr(err, '\n'), "one line: %s", err);
	model_release(&m);
	model_init(&m);
	ok(trace_import_file(&m, foreign, err, sizeof(err)) == -EINVAL, "foreign file fails");
	snprintf(want, sizeof(want), "%s: not a gpubpf trace (no \"gpubpf\" object)", foreign);
	is_str(err, want, "its message");
	model_release(&m);
	model_init(&m);
	ok(trace_import_file(&m, in_dir("none.json"), err, sizeof(err)) < 0 && strstr(err, "none.json"),
	   "missing file: %s", err);
	model_release(&m);
	unlink(cut);
	unlink(foreign);
}

/* A recorded trace, imported and exported again: the same bytes. */
static void test_file(const char *path)
{
	const char *b = in_dir("again.json");
	char err[700], *ta, *tb;
	size_t na = 0, nb = 0;
	struct model m;
	int ret;

	model_init(&m);
	ret = trace_import_file(&m, path, err, sizeof(err));
	if (ret)
		diag("%s", err);
	ok(!ret && !write_trace(&m, b), "%s: imported and exported again", path);
	ta = slurp(path, &na);
	tb = slurp(b, &nb);
	ok(ta && tb && na == nb && !memcmp(ta, tb, na), "%s: the same bytes", path);
	free(ta);
	free(tb);
	unlink(b);
	pftrace_round_trip(&m, path, path);
	model_release(&m);
}

int main(int argc, char **argv)
{
	if (unit_mkdtemp("import")) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			test_file(argv[i]);
		rmdir(unit_dir);
		return done_testing();
	}
	test_round_trip();
	test_states();
	test_state_tracks();
	test_stream();
	test_handwritten();
	test_bad();
	unlink(in_dir("a.json"));
	unlink(in_dir("b.json"));
	unlink(in_dir("hand.json"));
	rmdir(unit_dir);
	return done_testing();
}
