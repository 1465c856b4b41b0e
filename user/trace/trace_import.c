// SPDX-License-Identifier: BSD-2-Clause
/*
 * Traces read back into the model; see trace_import.h.  trace_reader has
 * checked every event against the JSON grammar, so the members of "args"
 * are located by skipping values over valid text, and strings are
 * unescaped without further checks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "lib/array.h"
#include "lib/json_writer.h"
#include "gpu_activity.h"
#include "model/cuda_calls.h"
#include "model/memory.h"
#include "model/thread_state.h"
#include "trace/schema.h"
#include "trace/trace_import.h"

/* The members of "args" the model has fields for. */
enum {
	A_NAME, A_KERNEL, A_GRID, A_BLOCK, A_SHMEM, A_STATIC_SHMEM, A_REGISTERS, A_STREAM,
	A_BYTES, A_KIND, A_PTR, A_COUNT, A_HANDLE, A_RET, A_CORR, A_STACK, A_STACK_TRUNCATED,
	A_STACK_ATTRIBUTED, A_STACK_THREAD, A_NATIVE_STACK, A_GRAPH_NODE, A_DEVICE, A_EVENT,
	A_ADDRESS, A_MEMORY_KIND, A_STATE, A_SYSCALL, A_HOLDER, A_CPU, A_GC, A_ARGS_HASH,
	A_AUTOGRAD_NODE, A_AUTOGRAD_FORWARD, A_UNFINISHED, A_N
};

static const char *const arg_keys[A_N] = {
	[A_NAME] = TS_ARG_NAME, [A_KERNEL] = TS_ARG_KERNEL, [A_GRID] = TS_ARG_GRID,
	[A_BLOCK] = TS_ARG_BLOCK, [A_SHMEM] = TS_ARG_SHMEM,
	[A_STATIC_SHMEM] = TS_ARG_STATIC_SHMEM, [A_REGISTERS] = TS_ARG_REGISTERS,
	[A_STREAM] = TS_ARG_STREAM, [A_BYTES] = TS_ARG_BYTES, [A_KIND] = TS_ARG_KIND,
	[A_PTR] = TS_ARG_PTR, [A_COUNT] = TS_ARG_COUNT, [A_HANDLE] = TS_ARG_HANDLE,
	[A_RET] = TS_ARG_RET, [A_CORR] = TS_ARG_CORRELATION, [A_STACK] = TS_ARG_STACK,
	[A_STACK_TRUNCATED] = TS_ARG_STACK_TRUNCATED,
	[A_STACK_ATTRIBUTED] = TS_ARG_STACK_ATTRIBUTED, [A_STACK_THREAD] = TS_ARG_STACK_THREAD,
	[A_NATIVE_STACK] = TS_ARG_NATIVE_STACK,
	[A_GRAPH_NODE] = TS_ARG_GRAPH_NODE, [A_DEVICE] = TS_ARG_DEVICE, [A_EVENT] = TS_ARG_EVENT,
	[A_ADDRESS] = TS_ARG_ADDRESS, [A_MEMORY_KIND] = TS_ARG_MEMORY_KIND,
	[A_STATE] = TS_ARG_STATE, [A_SYSCALL] = TS_ARG_SYSCALL, [A_HOLDER] = TS_ARG_HOLDER_TID,
	[A_CPU] = TS_ARG_CPU, [A_GC] = TS_ARG_GC, [A_ARGS_HASH] = TS_ARG_ARGS_HASH,
	[A_AUTOGRAD_NODE] = TS_ARG_AUTOGRAD_NODE, [A_AUTOGRAD_FORWARD] = TS_ARG_AUTOGRAD_FORWARD,
	[A_UNFINISHED] = TS_ARG_UNFINISHED,
};

/* A JSON value's text; p NULL when absent. */
struct val {
	const char *p;
	size_t len;
};

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
		s++;
	return s;
}

/* Past the (valid) JSON value at s. */
static const char *skip_value(const char *s, const char *end)
{
	int depth = 0;

	do {
		if (*s == '"') {
			for (s++; s < end && *s != '"'; s++)
				if (*s == '\\')
					s++;
			s++;
		} else if (*s == '{' || *s == '[') {
			depth++;
			s++;
		} else if (*s == '}' || *s == ']') {
			depth--;
			s++;
		} else if (depth) {
			s++;
		} else {
			while (s < end && *s != ',' && *s != '}' && *s != ']' && *s != ' ' &&
			       *s != '\t' && *s != '\n' && *s != '\r')
				s++;
		}
	} while (depth > 0 && s < end);
	return s;
}

/*
 * The next element of the array or object whose '[' / '{' or ',' is at
 * *s: its key (objects) and value.  False at the end.
 */
static bool next_item(const char **s, const char *end, struct val *key, struct val *v)
{
	const char *p = skip_ws(*s, end);

	if (p >= end || (*p != ',' && *p != '{' && *p != '['))
		return false;
	p = skip_ws(p + 1, end);
	if (p >= end || *p == '}' || *p == ']')
		return false;
	if (key) {
		key->p = p + 1;
		p = skip_value(p, end);
		key->len = p - 1 - key->p;
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			return false;
		p = skip_ws(p + 1, end);
	}
	v->p = p;
	*s = skip_value(p, end);
	v->len = *s - p;
	return true;
}

/* The members of args (an object's text) that the model has fields for. */
static void scan_args(const struct val *args, struct val *a)
{
	const char *s = args->p, *end;
	struct val k, v;

	memset(a, 0, A_N * sizeof(*a));
	if (!s)
		return;
	end = s + args->len;
	while (next_item(&s, end, &k, &v))
		for (int i = 0; i < A_N; i++)
			if (arg_keys[i][0] == *k.p && !strncmp(arg_keys[i], k.p, k.len) &&
			    !arg_keys[i][k.len]) {
				a[i] = v;
				break;
			}
}

static unsigned hex4(const char *p)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++)
		v = v << 4 | (p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
	return v;
}

/*
 * A string value unescaped into ti->buf (valid until the next call), NULL
 * if v is not a string or on allocation failure.  \u0000 reads '?': model
 * strings end at NUL.
 */
static const char *str_val(struct trace_import *ti, const struct val *v)
{
	const char *p = v->p, *end;
	size_t n = 0;

	if (!p || v->len < 2 || *p != '"')
		return NULL;
	if (array_grow(&ti->buf, &ti->bufcap, v->len)) {
		ti->nomem = true;
		return NULL;
	}
	end = p + v->len - 1;
	for (p++; p < end; p++) {
		unsigned c;

		if (*p != '\\') {
			ti->buf[n++] = *p;
			continue;
		}
		switch (*++p) {
		case 'n': ti->buf[n++] = '\n'; break;
		case 't': ti->buf[n++] = '\t'; break;
		case 'r': ti->buf[n++] = '\r'; break;
		case 'b': ti->buf[n++] = '\b'; break;
		case 'f': ti->buf[n++] = '\f'; break;
		case 'u':
			c = hex4(p + 1);
			p += 4;
			if (c >= 0xd800 && c < 0xdc00 && p + 6 < end && p[1] == '\\' && p[2] == 'u') {
				unsigned lo = hex4(p + 3);

				if (lo >= 0xdc00 && lo < 0xe000) {
					c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				}
			}
			if (!c)
				c = '?';
			else if (c >= 0xd800 && c < 0xe000)
				c = 0xfffd;     /* a lone surrogate */
			n += utf8_put(ti->buf + n, c);     /* \uXXXX: 6 bytes for at most 4 */
			break;
		default: ti->buf[n++] = *p; break;
		}
	}
	ti->buf[n] = 0;
	return ti->buf;
}

/* s's id; on allocation failure 0, and the event fails. */
static uint32_t intern(struct trace_import *ti, const char *s)
{
	uint32_t id = strtab_intern(&ti->m->strs, s);

	if (!id && *s)
		ti->nomem = true;
	return id;
}

static uint32_t intern_val(struct trace_import *ti, const struct val *v)
{
	const char *s = str_val(ti, v);

	return s ? intern(ti, s) : 0;
}

static int64_t int_val(const struct val *v)
{
	int64_t n = 0;

	if (v->p && tr_parse_int(v->p, v->len, &n))
		n = 0;
	return n;
}

/* "0x1234" as the exporter writes addresses and handles, or a plain number. */
static uint64_t hex_val(const struct val *v)
{
	char tmp[24];
	size_t n;

	if (!v->p || *v->p != '"')
		return (uint64_t)int_val(v);
	n = v->len - 2 < sizeof(tmp) - 1 ? v->len - 2 : sizeof(tmp) - 1;
	memcpy(tmp, v->p + 1, n);
	tmp[n] = 0;
	return strtoull(tmp, NULL, 16);
}

static void u32x3_val(const struct val *v, uint32_t out[3])
{
	const char *s = v->p, *end;
	struct val x;

	if (!s)
		return;
	end = s + v->len;
	for (int i = 0; i < 3 && next_item(&s, end, NULL, &x); i++)
		out[i] = (uint32_t)int_val(&x);
}

static int member_int(const struct tr_event *te, int key, int64_t *v)
{
	*v = 0;
	return key < 0 ? -EINVAL
		       : tr_parse_int(te->text + te->m[key].val.off, te->m[key].val.len, v);
}

static struct val member_val(const struct tr_event *te, int key)
{
	if (key < 0)
		return (struct val){ 0 };
	return (struct val){ te->text + te->m[key].val.off, te->m[key].val.len };
}

/* A stack's id: a hash of its text as the trace writes it (never 0). */
static uint64_t hash_text(const struct val *v, uint64_t h)
{
	for (size_t i = 0; i < v->len; i++)
		h = (h ^ (unsigned char)v->p[i]) * 1099511628211ULL;
	return h ? h : 1;
}

/* "qualname (file:line)" -> "qualname (file)", the frame's function. */
static uint32_t frame_func(struct trace_import *ti, const char *frame)
{
	size_t n = strlen(frame), i = n ? n - 1 : 0;
	char *copy;
	uint32_t id;

	if (!n || frame[n - 1] != ')')
		return intern(ti, frame);
	while (i > 0 && frame[i - 1] >= '0' && frame[i - 1] <= '9')
		i--;
	if (i == 0 || i == n - 1 || frame[i - 1] != ':')
		return intern(ti, frame);
	copy = strndup(frame, i);
	if (!copy) {
		ti->nomem = true;
		return 0;
	}
	copy[i - 1] = ')';
	id = intern(ti, copy);
	free(copy);
	return id;
}

/* The frames of a "stack" / "native_stack" array into ti->frames (and funcs). */
static int read_frames(struct trace_import *ti, const struct val *arr, bool funcs, uint32_t *n)
{
	const char *s = arr->p, *end = arr->p + arr->len;
	struct val v;

	*n = 0;
	while (next_item(&s, end, NULL, &v)) {
		if (array_grow(&ti->frames, &ti->framecap, *n + 1) ||
		    array_grow(&ti->funcs, &ti->funccap, *n + 1))
			return -ENOMEM;
		ti->frames[*n] = intern_val(ti, &v);
		ti->funcs[*n] = funcs ? frame_func(ti, strtab_get(&ti->m->strs, ti->frames[*n])) : 0;
		++*n;
	}
	return 0;
}

/*
 * One stack of process pid, under an id hashed from its text (*id): its
 * frames are read once per process and stack.  Its index + 1 in
 * m->stacks, as model_finish() sets it; 0 on allocation failure.
 */
static uint32_t read_stack(struct trace_import *ti, const struct val *v, uint32_t pid,
			   bool native, bool truncated, uint64_t *id)
{
	struct model *m = ti->m;
	const struct model_stack *st;
	uint32_t n;

	*id = hash_text(v, 14695981039346656037ULL + truncated);
	st = native ? model_find_native_stack(m, pid, *id) : model_find_stack(m, pid, *id);
	if (st)
		return st - m->stacks + 1;
	if (read_frames(ti, v, !native, &n) ||
	    (native ? model_add_native_stack(m, pid, *id, n, ti->frames)
		    : model_add_stack(m, pid, *id, truncated, n, ti->frames, ti->funcs))) {
		ti->nomem = true;
		return 0;
	}
	return m->nstacks;
}

static unsigned copy_kind_from_name(const char *s)
{
	for (unsigned k = 0; k < CK_NKINDS; k++)
		if (!strcmp(cuda_copy_kind_name(k), s))
			return k;
	return CK_NONE;
}

/* The call table's index of the entry point named by string name, -1 if none. */
static int call_of(struct trace_import *ti, uint32_t name)
{
	if (array_grow_zeroed(&ti->calls, &ti->ncalls, name + 1)) {
		ti->nomem = true;
		return -1;
	}
	if (!ti->calls[name])   /* call + 2, or 1: none */
		ti->calls[name] = cuda_call_find(strtab_get(&ti->m->strs, name)) + 2;
	return ti->calls[name] - 2;
}

/* "0x..." in lowercase hex: a function handle the trace had no name for. */
static bool is_handle(const char *s)
{
	return s[0] == '0' && s[1] == 'x' && s[2] && strspn(s + 2, "0123456789abcdef") == strlen(s + 2);
}

/* A driver call: its fields from the args the exporter wrote for them. */
static void read_call(struct trace_import *ti, const struct val *a, struct model_event *ev)
{
	int call = call_of(ti, ev->name);
	uint64_t fwd;
	const char *s;

	ev->kind = EV_API;
	if (call >= 0) {
		ev->call_id = call;
		ev->family = cuda_calls[call].family;
	}
	if (a[A_KERNEL].p) {
		ev->fields |= MF_FUNC;
		s = str_val(ti, &a[A_KERNEL]);
		if (s && is_handle(s))
			ev->func = strtoull(s, NULL, 16);
		else if (s)
			ev->kernel = intern(ti, s);
	}
	if (a[A_GRID].p) {
		ev->fields |= MF_GRID;
		u32x3_val(&a[A_GRID], ev->grid);
	}
	if (a[A_BLOCK].p) {
		ev->fields |= MF_BLOCK;
		u32x3_val(&a[A_BLOCK], ev->block);
	}
	if (a[A_SHMEM].p) {
		ev->fields |= MF_SHMEM;
		ev->shared_mem = int_val(&a[A_SHMEM]);
	}
	if (a[A_STREAM].p) {
		ev->fields |= MF_STREAM;
		ev->stream = hex_val(&a[A_STREAM]);
	}
	if (a[A_BYTES].p) {
		ev->fields |= MF_BYTES;
		ev->bytes = int_val(&a[A_BYTES]);
	}
	if (a[A_KIND].p && (s = str_val(ti, &a[A_KIND]))) {
		ev->fields |= MF_KIND;
		ev->copy_kind = copy_kind_from_name(s);
	}
	if (a[A_PTR].p) {
		ev->fields |= MF_PTR;
		ev->ptr = hex_val(&a[A_PTR]);
	}
	if (a[A_COUNT].p) {
		ev->fields |= MF_COUNT;
		ev->count = int_val(&a[A_COUNT]);
	}
	if (a[A_HANDLE].p) {
		ev->fields |= MF_HANDLE;
		ev->handle = hex_val(&a[A_HANDLE]);
	}
	if (a[A_RET].p) {
		ev->fields |= MF_RET;
		ev->ret = int_val(&a[A_RET]);
	}
	if (a[A_UNFINISHED].p && *a[A_UNFINISHED].p == 't')
		ev->fields |= MF_UNFINISHED;
	ev->correlation = int_val(&a[A_CORR]);
	if (a[A_STACK].p)
		ev->stack = read_stack(ti, &a[A_STACK], ev->pid, false,
				       a[A_STACK_TRUNCATED].p && *a[A_STACK_TRUNCATED].p == 't',
				       &ev->pystack);
	/* attributed: walked on the thread that woke this one (the main one if unsaid) */
	if (ev->stack && a[A_STACK_ATTRIBUTED].p && *a[A_STACK_ATTRIBUTED].p == 't')
		ev->stack_tid = a[A_STACK_THREAD].p ? int_val(&a[A_STACK_THREAD]) : ev->pid;
	if (a[A_NATIVE_STACK].p)
		ev->native = read_stack(ti, &a[A_NATIVE_STACK], ev->pid, true, false, &ev->nstack);
	ev->ag_node = intern_val(ti, &a[A_AUTOGRAD_NODE]);
	if (a[A_AUTOGRAD_FORWARD].p)
		ev->ag_fwd = read_stack(ti, &a[A_AUTOGRAD_FORWARD], ev->pid, false, false, &fwd);
}

/* Where GPU work ran and the call it came from. */
static void read_where(const struct val *a, struct model_event *ev)
{
	ev->device = int_val(&a[A_DEVICE]);
	ev->gpu_stream = int_val(&a[A_STREAM]);
	ev->correlation = int_val(&a[A_CORR]);
	ev->graph_node = int_val(&a[A_GRAPH_NODE]);
	ev->bytes = int_val(&a[A_BYTES]);
}

/* GPU work, waits and memory records: what the exporter wrote of them. */
static void read_gpu(struct trace_import *ti, const struct val *a, struct model_event *ev)
{
	const char *s;

	read_where(a, ev);
	switch (ev->kind) {
	case EV_KERNEL:
		/* the exporter's name for a kernel it had none for */
		if (!strcmp(strtab_get(&ti->m->strs, ev->name), TS_NAME_KERNEL))
			ev->name = 0;
		ev->kernel = ev->name;
		ev->name = 0;
		u32x3_val(&a[A_GRID], ev->grid);
		u32x3_val(&a[A_BLOCK], ev->block);
		ev->registers = int_val(&a[A_REGISTERS]);
		ev->shared_mem = int_val(&a[A_SHMEM]);
		ev->static_shmem = int_val(&a[A_STATIC_SHMEM]);
		ev->args = int_val(&a[A_ARGS_HASH]);
		break;
	case EV_MEMCPY:
		ev->name = 0;
		if ((s = str_val(ti, &a[A_KIND])))
			ev->gpu_kind = ts_copy_kind_from_name(s);
		break;
	case EV_GPU_SYNC:
		ev->name = 0;
		ev->gpu_kind = GA_SYNC_STREAM_WAIT_EVENT;
		ev->handle = int_val(&a[A_EVENT]);
		break;
	case EV_MEMORY: {
		const char *op = strtab_get(&ti->m->strs, ev->name);

		ev->name = 0;
		ev->gpu_kind = !strcmp(op, TS_NAME_ALLOC) ? 1 : !strcmp(op, TS_NAME_FREE) ? 2 : 0;
		ev->ptr = hex_val(&a[A_ADDRESS]);
		if ((s = str_val(ti, &a[A_MEMORY_KIND])))
			ev->copy_kind = mem_kind_from_name(s);
		break;
	}
	default:
		ev->name = 0;
	}
}

/* "process_name" and "thread_name" (of real threads: GPU and state tracks are derived). */
static int read_meta_event(struct trace_import *ti, const struct tr_event *te, uint32_t pid)
{
	struct val args = member_val(te, te->key[TRK_ARGS]), a[A_N];
	int name = te->key[TRK_NAME];
	int64_t tid;
	const char *s;

	scan_args(&args, a);
	if (!(s = str_val(ti, &a[A_NAME])))
		return 0;
	if (tr_event_str_is(te, name, TS_META_PROCESS_NAME))
		return model_process(ti->m, pid, s) ? 0 : -ENOMEM;
	if (tr_event_str_is(te, name, TS_META_THREAD_NAME) &&
	    !member_int(te, te->key[TRK_TID], &tid) && tid >= 0 && tid < TS_STATE_TID_BASE)
		return model_thread(ti->m, pid, tid, s) ? 0 : -ENOMEM;
	return 0;
}

/* A thread state slice: the span it was written from. */
static int read_state(struct trace_import *ti, const struct tr_event *te, const struct val *a,
		      uint32_t pid, uint32_t tid)
{
	struct model_state_span span = {
		.ts = te->ts_ns, .dur = te->has_dur ? te->dur_ns : 0,
		.pid = pid, .tid = tid, .syscall = -1, .holder = int_val(&a[A_HOLDER]),
	};
	const char *s = str_val(ti, &a[A_STATE]);

	if (!s || (span.state = model_state_of_name(s)) == MS_COUNT)
		return 0;
	if (a[A_SYSCALL].p && *a[A_SYSCALL].p != '"')
		span.syscall = int_val(&a[A_SYSCALL]);
	else if ((s = str_val(ti, &a[A_SYSCALL])))
		span.syscall = model_syscall_nr(s);
	if (a[A_STACK].p)
		read_stack(ti, &a[A_STACK], pid, false, false, &span.pystack);
	return model_add_state(ti->m, &span);
}

/* A CPU sample: its stack read as a call's, found again by model_finish(). */
static int read_sample(struct trace_import *ti, const struct tr_event *te, const struct val *a,
		       uint32_t pid, uint32_t tid)
{
	struct model_sample s = {
		.ts = te->ts_ns, .pid = pid, .tid = tid, .cpu = int_val(&a[A_CPU]),
		.flags = a[A_GC].p && *a[A_GC].p == 't' ? MODEL_SAMPLE_GC : 0,
	};

	if (a[A_STACK].p)
		read_stack(ti, &a[A_STACK], pid, false, false, &s.pystack);
	if (a[A_NATIVE_STACK].p)
		read_stack(ti, &a[A_NATIVE_STACK], pid, true, false, &s.nstack);
	return model_add_sample(ti->m, &s);
}

/*
 * Thread states and samples, on the state tracks, go into the model (the
 * tracks' names and sort indexes are derived).  0 or -ENOMEM; 1 if te is
 * neither.
 */
static int read_sched(struct trace_import *ti, const struct tr_event *te, uint32_t pid)
{
	int ph = te->key[TRK_PH], cat = te->key[TRK_CAT];
	bool state = tr_event_str_is(te, ph, TS_PH_COMPLETE) && tr_event_str_is(te, cat, TS_CAT_STATE);
	struct val args, a[A_N];
	int64_t tid;

	if (!state && !(tr_event_str_is(te, ph, TS_PH_INSTANT) &&
			tr_event_str_is(te, cat, TS_CAT_SAMPLE)))
		return 1;
	if (!te->has_ts || member_int(te, te->key[TRK_TID], &tid) ||
	    tid < TS_STATE_TID_BASE || tid >= TS_GPU_TID_BASE)
		return 0;
	args = member_val(te, te->key[TRK_ARGS]);
	scan_args(&args, a);
	tid -= TS_STATE_TID_BASE;
	return state ? read_state(ti, te, a, pid, tid) : read_sample(ti, te, a, pid, tid);
}

/* The model kind of an event by its phase and category, -1: none (derived, foreign). */
static int event_kind(const struct tr_event *te)
{
	int ph = te->key[TRK_PH], cat = te->key[TRK_CAT];

	if (tr_event_str_is(te, ph, TS_PH_INSTANT))
		return tr_event_str_is(te, cat, TS_CAT_MEMORY) ? EV_MEMORY : -1;
	if (!tr_event_str_is(te, ph, TS_PH_COMPLETE))
		return -1;
	if (tr_event_str_is(te, cat, TS_CAT_API))
		return EV_API;
	if (tr_event_str_is(te, cat, TS_CAT_KERNEL) || tr_event_str_is(te, cat, TS_CAT_NCCL))
		return EV_KERNEL;
	if (tr_event_str_is(te, cat, TS_CAT_MEMCPY))
		return EV_MEMCPY;
	if (tr_event_str_is(te, cat, TS_CAT_MEMSET))
		return EV_MEMSET;
	if (tr_event_str_is(te, cat, TS_CAT_SYNC))
		return EV_GPU_SYNC;
	return -1;
}

/* One trace element: 1 with an event in *ev, 0 for none, -errno. */
static int import_event(struct trace_import *ti, const struct tr_event *te,
			struct model_event *ev)
{
	struct val args, name, a[A_N];
	int64_t pid, tid;
	int kind, ret;

	if (member_int(te, te->key[TRK_PID], &pid) || pid < 0 || pid > UINT32_MAX)
		return 0;
	if (tr_event_str_is(te, te->key[TRK_PH], TS_PH_META))
		return read_meta_event(ti, te, pid);
	/* the model's times count from the clock's zero: gpubpf writes none before it */
	if (te->has_ts && te->ts_ns < 0) {
		snprintf(ti->msg, sizeof(ti->msg),
			 "%s: \"ts\" of the event at line %llu is negative once ts_base_ns is added",
			 ti->r.path ? ti->r.path : "trace", (unsigned long long)te->line);
		return -EINVAL;
	}
	if ((ret = read_sched(ti, te, pid)) <= 0)
		return ret;
	kind = event_kind(te);
	if (kind < 0)
		return 0;
	/* a call or GPU work with no time or name: not a trace gpubpf wrote */
	if (!te->has_ts || te->key[TRK_NAME] < 0) {
		snprintf(ti->msg, sizeof(ti->msg), "%s: the event at line %llu has no \"%s\"",
			 ti->r.path ? ti->r.path : "trace", (unsigned long long)te->line,
			 te->has_ts ? "name" : "ts");
		return -EINVAL;
	}
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->pid = pid;
	ev->ts = te->ts_ns;
	ev->dur = te->has_dur ? te->dur_ns : 0;
	ev->link = MODEL_NO_LINK;
	name = member_val(te, te->key[TRK_NAME]);
	ev->name = intern_val(ti, &name);
	args = member_val(te, te->key[TRK_ARGS]);
	scan_args(&args, a);
	if (kind != EV_API) {
		read_gpu(ti, a, ev);
		return 1;
	}
	if (!member_int(te, te->key[TRK_TID], &tid))
		ev->tid = tid;
	read_call(ti, a, ev);
	return 1;
}

/* --- the "gpubpf" object ---------------------------------------------- */

static bool pid_key(const cJSON *v, uint32_t *pid)
{
	char *end;
	unsigned long n;

	if (!v->string || !*v->string)
		return false;
	n = strtoul(v->string, &end, 10);
	*pid = n;
	return !*end && n <= UINT32_MAX;
}

static uint64_t count_val(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 0x1p64
	       ? (uint64_t)v->valuedouble : 0;
}

/* Microseconds (three decimals) as nanoseconds. */
static uint64_t us_val(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 0x1p63 / 1000
	       ? (uint64_t)llround(v->valuedouble * 1000) : 0;
}

/*
 * What one per-process member of the metadata sets: which names the
 * member, set() fills the process from the value.
 */
static int per_process(struct model *m, const cJSON *o, const char *which,
		       int (*set)(struct model *, struct model_process *, const cJSON *))
{
	const cJSON *v;
	uint32_t pid;

	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(o, which)) {
		struct model_process *p;

		if (!pid_key(v, &pid))
			continue;
		p = model_process(m, pid, NULL);
		if (!p || set(m, p, v))
			return -ENOMEM;
	}
	return 0;
}

static int set_dropped(struct model *m, struct model_process *p, const cJSON *v)
{
	p->dropped = count_val(v);
	return 0;
}

static int set_gpu_dropped(struct model *m, struct model_process *p, const cJSON *v)
{
	p->gpu_dropped = count_val(v);
	return 0;
}

static int set_missed(struct model *m, struct model_process *p, const cJSON *v)
{
	if (cJSON_IsString(v) && !(p->missed = strtab_intern(&m->strs, v->valuestring)) &&
	    *v->valuestring)
		return -ENOMEM;
	return 0;
}

static int set_gpu_error(struct model *m, struct model_process *p, const cJSON *v)
{
	if (cJSON_IsString(v) && !(p->gpu_error = strtab_intern(&m->strs, v->valuestring)) &&
	    *v->valuestring)
		return -ENOMEM;
	return 0;
}

static int set_window(struct model *m, struct model_process *p, const cJSON *v)
{
	p->gpu_window_ns = us_val(v) + m->ts_base_ns;
	return 0;
}

static int set_late_attach(struct model *m, struct model_process *p, const cJSON *v)
{
	p->inject_tid = count_val(cJSON_GetObjectItemCaseSensitive(v, TS_GPU_LATE_THREAD));
	p->inject_stall_ns = us_val(cJSON_GetObjectItemCaseSensitive(v, TS_GPU_LATE_STALL));
	return 0;
}

static int read_metadata(struct trace_import *ti)
{
	const struct trace_reader *r = &ti->r;
	const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(r->meta, TS_META_GPU);
	struct model *m = ti->m;
	uint64_t repair;
	int ret;

	snprintf(m->host, sizeof(m->host), "%s", r->host);
	m->realtime_offset_ns = r->realtime_offset_ns;
	m->dropped_total = r->dropped_total;
	/* model_finish() sets its own; window_open_us is after the file's */
	m->ts_base_ns = r->ts_base_ns;
	/* the repair was made when it was recorded: model_finish finds none */
	m->clock_repaired += count_val(cJSON_GetObjectItemCaseSensitive(gpu, TS_GPU_REPAIRED));
	repair = us_val(cJSON_GetObjectItemCaseSensitive(gpu, TS_GPU_MAX_REPAIR));
	if (repair > m->max_clock_repair_ns)
		m->max_clock_repair_ns = repair;
	ret = per_process(m, r->meta, TS_META_DROPPED, set_dropped);
	if (!ret)
		ret = per_process(m, r->meta, TS_META_MISSING, set_missed);
	if (!ret)
		ret = per_process(m, gpu, TS_GPU_DROPPED, set_gpu_dropped);
	if (!ret)
		ret = per_process(m, gpu, TS_GPU_ERRORS, set_gpu_error);
	if (!ret)
		ret = per_process(m, gpu, TS_GPU_WINDOW, set_window);
	if (!ret)
		ret = per_process(m, gpu, TS_GPU_LATE_ATTACH, set_late_attach);
	return ret;
}

/* --- the API ------------------------------------------------------------ */

static int fail(struct trace_import *ti, int err)
{
	if (err != -ENOMEM || ti->msg[0])
		return err;
	snprintf(ti->msg, sizeof(ti->msg), "%s: %s", ti->r.path ? ti->r.path : "trace",
		 strerror(-err));
	return err;
}

int trace_import_open(struct trace_import *ti, const char *path, struct model *m)
{
	int ret;

	memset(ti, 0, sizeof(*ti));
	ti->m = m;
	m->read_back = true;
	ret = trace_reader_open(&ti->r, path);
	if (!ret)
		ret = read_metadata(ti);
	return ret ? fail(ti, ret) : 0;
}

int trace_import_next(struct trace_import *ti, struct model_event *ev)
{
	struct tr_event *te;
	int ret;

	do {
		ret = trace_reader_next(&ti->r, &te);
		if (ret <= 0)
			return ret ? fail(ti, ret) : 0;
		ret = import_event(ti, te, ev);
		free(te);
		if (ti->nomem)
			ret = -ENOMEM;
	} while (!ret);
	return ret > 0 ? 1 : fail(ti, ret);
}

void trace_import_close(struct trace_import *ti)
{
	trace_reader_close(&ti->r);
	free(ti->buf);
	free(ti->frames);
	free(ti->funcs);
	free(ti->calls);
	ti->calls = NULL;
	ti->ncalls = 0;
	ti->buf = NULL;
	ti->frames = ti->funcs = NULL;
	ti->bufcap = ti->framecap = ti->funccap = 0;
}

const char *trace_import_errmsg(const struct trace_import *ti)
{
	return ti->msg[0] ? ti->msg : trace_reader_errmsg(&ti->r);
}

int trace_import_file(struct model *m, const char *path, char *err, size_t errlen)
{
	struct trace_import ti;
	struct model_event ev, *e;
	int ret;

	ret = trace_import_open(&ti, path, m);
	while (!ret && (ret = trace_import_next(&ti, &ev)) > 0) {
		e = model_add_event(m);
		if (!e) {
			ret = fail(&ti, -ENOMEM);
			break;
		}
		*e = ev;
		ret = 0;
	}
	if (ret)
		snprintf(err, errlen, "%s", trace_import_errmsg(&ti));
	trace_import_close(&ti);
	if (!ret && (ret = model_finish(m)))
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	return ret;
}
