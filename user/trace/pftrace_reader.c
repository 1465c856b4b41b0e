// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf's .pftrace read back as JSON events; see pftrace_reader.h.  The
 * packets are decoded by protoc-c's code for perfetto_trace.proto, the
 * events written with the JSON writer into a memory stream.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/array.h"
#include "lib/hashmap.h"
#include "lib/json_writer.h"
#include "trace/pftrace_reader.h"
#include "trace/schema.h"
#include "trace/perfetto_trace.pb-c.h"

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent TrackEvent;
typedef Perfetto__Protos__DebugAnnotation Annotation;

#define TRACE_PACKET_TAG 0x0a           /* Trace.packet: field 1, length-delimited */
#define MAX_PACKET (256u << 20)         /* a packet, or a run of them inflated */
#define SEQUENCE_CLOCKS 64            /* clock ids from here on are a sequence's */

/* Interned strings of one kind: iid -> string. */
struct itab {
	struct hashmap index;           /* iid -> index in s */
	char **s;
	size_t n, cap;
};

enum track_kind { TK_SKIP, TK_PROCESS, TK_THREAD, TK_LANE };

struct track {
	uint64_t uuid;
	uint32_t pid, tid;              /* tid: the JSON's (GPU lane, state track key) */
	int kind;                       /* enum track_kind */
	char *name;                     /* a thread's, NULL if none */
	uint64_t *open;                 /* first pass: the open slices' numbers */
	size_t nopen, cap;
};

struct pf_reader {
	gzFile gz;
	char *msg;
	size_t msglen;
	uint64_t packets;
	/* the outer packet being read, and a run of inflated ones */
	uint8_t *buf, *inner;
	size_t cap_buf, cap_inner, ninner, at_inner;
	/* sequence state */
	struct itab cats, names, anames, strs;
	struct itab stack_json;         /* string iid -> its lines as a JSON array */
	uint64_t last_ts;               /* the delta clock's value */
	uint64_t ts_base;               /* the metadata's ts_base_ns: events' "ts" are after it */
	uint64_t default_track;
	struct track *tracks;
	size_t ntracks, cap_tracks;
	struct hashmap track_index;     /* uuid -> index in tracks */
	/* events ready, first out first */
	char **queue;
	size_t qhead, qn, qcap;
	char *out;                      /* the event handed out last */
	char *meta;
	size_t meta_len;
	/* the JSON writer's memory stream */
	FILE *mem;
	char *membuf;
	size_t memlen;
	struct jw jw;
	/*
	 * Two passes: the first finds where each slice ends (ends[k]: the end
	 * of the k-th slice begun in the file), so that the second hands out
	 * each slice's event where it begins: in time order, as the JSON.
	 */
	int pass;
	uint64_t *ends;
	size_t nends, cap_ends;
	size_t nbegun;                  /* slices begun so far in this pass */
	bool eof;
};

static int fail(struct pf_reader *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct pf_reader *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->msg, p->msglen, fmt, ap);
	va_end(ap);
	return err;
}

bool pf_sniff(const unsigned char *p, size_t n)
{
	size_t i = 1;

	if (!n || p[0] != TRACE_PACKET_TAG)
		return false;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
		i++;
	return i == n || (p[i] != '{' && p[i] != '[');
}

/* Interning ------------------------------------------------------------------ */

static void itab_clear(struct itab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	t->n = 0;
	hashmap_release(&t->index);
	hashmap_init(&t->index);
}

static void itab_release(struct itab *t)
{
	itab_clear(t);
	hashmap_release(&t->index);
	free(t->s);
}

static int itab_add(struct itab *t, uint64_t iid, const char *s, size_t len)
{
	struct hashmap_slot *slot;
	char *copy = strndup(s ? s : "", s ? len : 0);
	int added;

	if (!copy || array_grow(&t->s, &t->cap, t->n + 1) ||
	    !(slot = hashmap_put(&t->index, iid, &added))) {
		free(copy);
		return -ENOMEM;
	}
	if (!added) {
		free(t->s[slot->val]);
		t->s[slot->val] = copy;
		return 0;
	}
	slot->val = t->n;
	t->s[t->n++] = copy;
	return 0;
}

static const char *itab_get(const struct itab *t, uint64_t iid)
{
	const struct hashmap_slot *slot = hashmap_find(&t->index, iid);

	return slot ? t->s[slot->val] : NULL;
}

static int add_interned(struct pf_reader *p, const Perfetto__Protos__InternedData *in)
{
	int ret = 0;

	for (size_t i = 0; i < in->n_event_categories && !ret; i++)
		ret = itab_add(&p->cats, in->event_categories[i]->iid, in->event_categories[i]->name,
			       in->event_categories[i]->name ? strlen(in->event_categories[i]->name) : 0);
	for (size_t i = 0; i < in->n_event_names && !ret; i++)
		ret = itab_add(&p->names, in->event_names[i]->iid, in->event_names[i]->name,
			       in->event_names[i]->name ? strlen(in->event_names[i]->name) : 0);
	for (size_t i = 0; i < in->n_debug_annotation_names && !ret; i++)
		ret = itab_add(&p->anames, in->debug_annotation_names[i]->iid,
			       in->debug_annotation_names[i]->name,
			       in->debug_annotation_names[i]->name ?
			       strlen(in->debug_annotation_names[i]->name) : 0);
	for (size_t i = 0; i < in->n_debug_annotation_string_values && !ret; i++) {
		const Perfetto__Protos__InternedString *s = in->debug_annotation_string_values[i];

		if (itab_get(&p->strs, s->iid))        /* redefined: its stack's JSON too */
			itab_clear(&p->stack_json);
		ret = itab_add(&p->strs, s->iid, (const char *)s->str.data, s->str.len);
	}
	return ret ? fail(p, ret, "out of memory") : 0;
}

/* Events out ------------------------------------------------------------------ */

/* Start writing one JSON value into the memory stream. */
static struct jw *jw_begin(struct pf_reader *p)
{
	jw_release(&p->jw);
	rewind(p->mem);
	jw_init_file(&p->jw, p->mem);
	return &p->jw;
}

/* The value written since jw_begin(): a copy, NULL on error. */
static char *jw_take(struct pf_reader *p, size_t *len)
{
	char *s;

	if (jw_finish(&p->jw) || fflush(p->mem))
		return NULL;
	*len = ftell(p->mem);
	s = malloc(*len + 1);
	if (!s)
		return NULL;
	memcpy(s, p->membuf, *len);
	s[*len] = 0;
	return s;
}

static int enqueue(struct pf_reader *p, char *text)
{
	if (!text)
		return fail(p, -ENOMEM, "out of memory");
	if (p->pass == 1) {
		free(text);
		return 0;
	}
	if (p->qhead && p->qhead == p->qn)
		p->qhead = p->qn = 0;
	if (array_grow(&p->queue, &p->qcap, p->qn + 1)) {
		free(text);
		return fail(p, -ENOMEM, "out of memory");
	}
	p->queue[p->qn++] = text;
	return 0;
}

static const char *annotation_name(const struct pf_reader *p, const Annotation *a)
{
	if (a->name_field_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME)
		return a->name ? a->name : "";
	return itab_get(&p->anames, a->name_iid);
}

static const char *annotation_string(const struct pf_reader *p, const Annotation *a)
{
	if (a->value_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE)
		return a->string_value ? a->string_value : "";
	if (a->value_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID)
		return itab_get(&p->strs, a->string_value_iid);
	return NULL;
}

/* A string of lines as an array of them: a stack, innermost frame first. */
static void write_lines(struct jw *jw, const char *s)
{
	jw_arr_begin(jw);
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);

		jw_strn(jw, s, n);
		s += n + (nl != NULL);
	}
	jw_arr_end(jw);
}

/*
 * An interned stack (a string of lines, iid) as a JSON array: each made
 * once, with a writer of its own, then copied into every event naming it
 * (most events carry a stack of tens of frames).
 */
static void write_stack_iid(struct pf_reader *p, uint64_t iid, const char *s)
{
	const char *json = itab_get(&p->stack_json, iid);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	struct jw jw;

	if (!json && (f = open_memstream(&buf, &len))) {
		if (!jw_init_file(&jw, f)) {
			write_lines(&jw, s);
			if (!jw_finish(&jw) && !fflush(f) &&
			    !itab_add(&p->stack_json, iid, buf, len))
				json = itab_get(&p->stack_json, iid);
		}
		jw_release(&jw);
		fclose(f);
		free(buf);
	}
	if (json)
		jw_raw(&p->jw, json, strlen(json));
	else
		write_lines(&p->jw, s);
}

static void write_value(struct pf_reader *p, const char *key, const Annotation *a)
{
	struct jw *jw = &p->jw;
	const char *s = annotation_string(p, a);
	unsigned v[3];

	switch (a->value_case) {
	case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE:
		jw_bool(jw, a->bool_value);
		return;
	case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE:
		jw_uint(jw, a->uint_value);
		return;
	case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE:
		jw_int(jw, a->int_value);
		return;
	case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE:
		jw_double(jw, a->double_value);
		return;
	case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_POINTER_VALUE:
		jw_hex(jw, a->pointer_value);
		return;
	case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE:
	case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID:
		if (!s) {
			jw_null(jw);
		} else if (key && ts_arg_is_stack(key) &&
			   a->value_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID) {
			write_stack_iid(p, a->string_value_iid, s);
		} else if (key && ts_arg_is_stack(key)) {
			write_lines(jw, s);
		} else if (key && (!strcmp(key, TS_ARG_GRID) || !strcmp(key, TS_ARG_BLOCK)) &&
			   sscanf(s, "[%u, %u, %u]", &v[0], &v[1], &v[2]) == 3) {
			jw_arr_begin(jw);
			for (int i = 0; i < 3; i++)
				jw_uint(jw, v[i]);
			jw_arr_end(jw);
		} else {
			jw_str(jw, s);
		}
		return;
	default:
		break;
	}
	if (a->n_dict_entries) {
		jw_obj_begin(jw);
		for (size_t i = 0; i < a->n_dict_entries; i++) {
			const char *k = annotation_name(p, a->dict_entries[i]);

			jw_key(jw, k ? k : "");
			write_value(p, NULL, a->dict_entries[i]);
		}
		jw_obj_end(jw);
	} else if (a->n_array_values) {
		jw_arr_begin(jw);
		for (size_t i = 0; i < a->n_array_values; i++)
			write_value(p, NULL, a->array_values[i]);
		jw_arr_end(jw);
	} else {
		jw_null(jw);
	}
}

static void write_args(struct pf_reader *p, const TrackEvent *te)
{
	jw_key(&p->jw, TS_KEY_ARGS);
	jw_obj_begin(&p->jw);
	for (size_t i = 0; i < te->n_debug_annotations; i++) {
		const char *k = annotation_name(p, te->debug_annotations[i]);

		if (!k)
			continue;
		jw_key(&p->jw, k);
		write_value(p, k, te->debug_annotations[i]);
	}
	jw_obj_end(&p->jw);
}

/*
 * The "gpubpf" instant's annotations as the JSON's object: "gpu.X" under
 * "gpu" as X, the late attach's two dictionaries (pid: stall, pid: thread)
 * as one of {thread, stall_us}; its ts_base_ns (0 if none), which the
 * events' "ts" count from.
 */
static int read_meta(struct pf_reader *p, const TrackEvent *te)
{
	static const char gpu_prefix[] = TS_META_GPU ".";
	static const char la_us[] = TS_META_GPU "." TS_GPU_LATE_ATTACH "_us";
	static const char la_thread[] = TS_META_GPU "." TS_GPU_LATE_ATTACH "_thread";
	const Annotation *stall = NULL, *thread = NULL;
	struct jw *jw = jw_begin(p);
	bool gpu = false;

	jw_obj_begin(jw);
	for (size_t i = 0; i < te->n_debug_annotations; i++) {
		const Annotation *a = te->debug_annotations[i];
		const char *k = annotation_name(p, a);

		if (k && !strcmp(k, TS_META_TS_BASE) &&
		    a->value_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE)
			p->ts_base = a->uint_value;
	}
	jw_kv_uint(jw, TS_META_TS_BASE, p->ts_base);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < te->n_debug_annotations; i++) {
			const Annotation *a = te->debug_annotations[i];
			const char *k = annotation_name(p, a);
			bool in_gpu = k && !strncmp(k, gpu_prefix, sizeof(gpu_prefix) - 1);

			if (!k || !strcmp(k, TS_META_TS_BASE) || in_gpu != pass)
				continue;
			if (!strcmp(k, la_us)) {
				stall = a;
				continue;
			}
			if (!strcmp(k, la_thread)) {
				thread = a;
				continue;
			}
			if (in_gpu && !gpu) {
				jw_key(jw, TS_META_GPU);
				jw_obj_begin(jw);
				gpu = true;
			}
			jw_key(jw, in_gpu ? k + sizeof(gpu_prefix) - 1 : k);
			write_value(p, NULL, a);
		}
	}
	if (stall && !gpu) {
		jw_key(jw, TS_META_GPU);
		jw_obj_begin(jw);
		gpu = true;
	}
	if (stall) {
		jw_key(jw, TS_GPU_LATE_ATTACH);
		jw_obj_begin(jw);
		for (size_t i = 0; i < stall->n_dict_entries; i++) {
			const Annotation *e = stall->dict_entries[i];
			const char *pid = annotation_name(p, e);

			jw_key(jw, pid ? pid : "");
			jw_obj_begin(jw);
			for (size_t j = 0; thread && j < thread->n_dict_entries; j++) {
				const char *tp = annotation_name(p, thread->dict_entries[j]);

				if (pid && tp && !strcmp(pid, tp)) {
					jw_key(jw, TS_GPU_LATE_THREAD);
					write_value(p, NULL, thread->dict_entries[j]);
				}
			}
			jw_key(jw, TS_GPU_LATE_STALL);
			write_value(p, NULL, e);
			jw_obj_end(jw);
		}
		jw_obj_end(jw);
	}
	if (gpu)
		jw_obj_end(jw);
	jw_obj_end(jw);
	p->meta = jw_take(p, &p->meta_len);
	return p->meta ? 0 : fail(p, -ENOMEM, "out of memory");
}

/* Tracks --------------------------------------------------------------------- */

static struct track *find_track(struct pf_reader *p, uint64_t uuid)
{
	const struct hashmap_slot *s = hashmap_find(&p->track_index, uuid);

	return s ? &p->tracks[s->val] : NULL;
}

static int name_event(struct pf_reader *p, const char *which, uint32_t pid, const uint32_t *tid,
		      const char *name)
{
	struct jw *jw;
	size_t len;

	if (p->pass == 1)
		return 0;
	jw = jw_begin(p);
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_KEY_PH, TS_PH_META);
	jw_kv_str(jw, TS_KEY_NAME, which);
	jw_kv_uint(jw, TS_KEY_PID, pid);
	if (tid)
		jw_kv_uint(jw, TS_KEY_TID, *tid);
	jw_key(jw, TS_KEY_ARGS);
	jw_obj_begin(jw);
	jw_kv_str(jw, TS_ARG_NAME, name);
	jw_obj_end(jw);
	jw_obj_end(jw);
	return enqueue(p, jw_take(p, &len));
}

/* Whether name is what format makes of the arguments. */
static __attribute__((format(printf, 2, 3))) bool named(const char *name, const char *format, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, format);
	n = vsnprintf(buf, sizeof(buf), format, ap);
	va_end(ap);
	return n > 0 && (size_t)n < sizeof(buf) && !strcmp(buf, name);
}

/*
 * What a named track under a process is, by the exporter's names (schema.h):
 * a GPU lane ("GPU d / stream s", "GPU d / memory"), a thread's states
 * ("<thread name> state" right after its thread's track, where the
 * exporter puts it, else "<tid> state"), or something left out (memory
 * counters).
 */
static void child_track(struct pf_reader *p, struct track *t, const char *name)
{
	const struct track *prev = p->ntracks ? &p->tracks[p->ntracks - 1] : NULL;
	unsigned dev, stream, tid;

	t->kind = TK_LANE;
	if (sscanf(name, "GPU %u / stream %u", &dev, &stream) == 2 &&
	    named(name, TS_TRACK_STREAM, dev, stream))
		t->tid = ts_gpu_tid(dev, stream);
	else if (sscanf(name, "GPU %u", &dev) == 1 && named(name, TS_TRACK_MEMORY, dev))
		t->tid = ts_gpu_tid(dev, TS_GPU_MEMORY_LANE);
	else if (prev && prev->kind == TK_THREAD && prev->pid == t->pid && prev->name &&
		 named(name, TS_TRACK_STATE, prev->name))
		t->tid = TS_STATE_TID_BASE + prev->tid;
	else if (sscanf(name, "%u", &tid) == 1 && tid < TS_STATE_TID_BASE &&
		 named(name, TS_TRACK_STATE_TID, tid))
		t->tid = TS_STATE_TID_BASE + tid;
	else
		t->kind = TK_SKIP;
}

static int add_track(struct pf_reader *p, const Perfetto__Protos__TrackDescriptor *d)
{
	struct track t = { .uuid = d->uuid, .kind = TK_SKIP };
	struct hashmap_slot *s;
	const struct track *parent;
	int added, ret = 0;

	if (d->process) {
		t.kind = TK_PROCESS;
		t.pid = d->process->pid;
		if (d->process->process_name)
			ret = name_event(p, TS_META_PROCESS_NAME, t.pid, NULL,
					 d->process->process_name);
	} else if (d->thread) {
		t.kind = TK_THREAD;
		t.pid = d->thread->pid;
		t.tid = d->thread->tid;
		if (d->thread->thread_name &&
		    !(ret = name_event(p, TS_META_THREAD_NAME, t.pid, &t.tid,
				       d->thread->thread_name)) &&
		    !(t.name = strdup(d->thread->thread_name)))
			ret = fail(p, -ENOMEM, "out of memory");
	} else if (d->has_parent_uuid && (parent = find_track(p, d->parent_uuid)) &&
		   parent->kind == TK_PROCESS && d->name && !d->counter) {
		t.pid = parent->pid;
		child_track(p, &t, d->name);
	}
	if (!ret && (array_grow(&p->tracks, &p->cap_tracks, p->ntracks + 1) ||
		     !(s = hashmap_put(&p->track_index, t.uuid, &added))))
		ret = fail(p, -ENOMEM, "out of memory");
	else if (!ret && !added)
		ret = fail(p, -EINVAL, "two tracks with uuid %llu", (unsigned long long)t.uuid);
	if (ret) {
		free(t.name);
		return ret;
	}
	s->val = p->ntracks;
	p->tracks[p->ntracks++] = t;
	return 0;
}

/* Track events ---------------------------------------------------------------- */

/* A slice's (ph "X", dur) or an instant's event, into the queue. */
static int write_event(struct pf_reader *p, const char *ph, const char *cat, const char *name,
		       const struct track *t, uint64_t ts, uint64_t dur, const TrackEvent *te)
{
	struct jw *jw = jw_begin(p);
	size_t len;

	jw_obj_begin(jw);
	jw_kv_str(jw, TS_KEY_PH, ph);
	jw_kv_str(jw, TS_KEY_CAT, cat);
	jw_kv_str(jw, TS_KEY_NAME, name);
	jw_kv_uint(jw, TS_KEY_PID, t->pid);
	jw_kv_uint(jw, TS_KEY_TID, t->tid);
	jw_kv_us(jw, TS_KEY_TS, ts >= p->ts_base ? ts - p->ts_base : 0);
	if (!strcmp(ph, TS_PH_COMPLETE))
		jw_kv_us(jw, TS_KEY_DUR, dur);
	else
		jw_kv_str(jw, TS_KEY_SCOPE, TS_SCOPE_THREAD);
	write_args(p, te);
	jw_obj_end(jw);
	return enqueue(p, jw_take(p, &len));
}

/*
 * A slice begins on t: the first pass gives it a number and keeps it open,
 * the second writes its event, until the end the first pass found.
 */
static int begin_slice(struct pf_reader *p, struct track *t, const char *cat, const char *name,
		       uint64_t ts, const TrackEvent *te)
{
	uint64_t k = p->nbegun++, end;

	if (p->pass == 1) {
		if (array_grow(&t->open, &t->cap, t->nopen + 1) ||
		    array_grow(&p->ends, &p->cap_ends, p->nends + 1))
			return fail(p, -ENOMEM, "out of memory");
		t->open[t->nopen++] = k;
		p->ends[p->nends++] = ts;
		return 0;
	}
	if (k >= p->nends)
		return fail(p, -EINVAL, "the file changed while it was read");
	end = p->ends[k];
	/* Python scopes are derived again from the calls' stacks */
	if (t->kind == TK_SKIP || !strcmp(cat, TS_CAT_PYTHON))
		return 0;
	return write_event(p, TS_PH_COMPLETE, cat, name, t, ts, end > ts ? end - ts : 0, te);
}

/* The first pass: t's innermost slice ends at ts. */
static int end_slice(struct pf_reader *p, struct track *t, uint64_t ts)
{
	if (p->pass != 1)
		return 0;
	if (!t->nopen)
		return fail(p, -EINVAL, "a slice ends on track %llu where none is open (packet %llu)",
			    (unsigned long long)t->uuid, (unsigned long long)p->packets);
	p->ends[t->open[--t->nopen]] = ts;
	return 0;
}

static int track_event(struct pf_reader *p, const TrackEvent *te, uint64_t ts)
{
	uint64_t uuid = te->has_track_uuid ? te->track_uuid : p->default_track;
	const char *name = te->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME ?
			   te->name : itab_get(&p->names, te->name_iid);
	const char *cat = te->n_category_iids ? itab_get(&p->cats, te->category_iids[0]) : NULL;
	struct track *t = find_track(p, uuid);

	if (te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT && cat &&
	    !strcmp(cat, TS_META) && !p->meta)
		return read_meta(p, te);
	if (!t)
		return uuid ? fail(p, -EINVAL, "an event on track %llu, which no descriptor names "
				   "(packet %llu)", (unsigned long long)uuid,
				   (unsigned long long)p->packets) : 0;
	switch (te->type) {
	case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN:
		if (!name || !cat)
			cat = TS_CAT_PYTHON;    /* counted, left out */
		return begin_slice(p, t, cat, name ? name : "", ts, te);
	case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END:
		return end_slice(p, t, ts);
	case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT:
		if (p->pass == 1 || t->kind == TK_SKIP || !name || !cat)
			return 0;
		return write_event(p, TS_PH_INSTANT, cat, name, t, ts, 0, te);
	default:
		return 0;       /* counter values: derived */
	}
}

/* Packets -------------------------------------------------------------------- */

static int read_packets(struct pf_reader *p, const uint8_t *data, size_t len);
static int packet(struct pf_reader *p, const uint8_t *data, size_t len);

/* The packets deflated in one compressed_packets, read in its place. */
static int inflate_packets(struct pf_reader *p, const uint8_t *data, size_t len)
{
	z_stream z = { .next_in = (uint8_t *)data, .avail_in = len };
	uint8_t *run;
	size_t n = 0;
	int zr = Z_OK, ret;

	if (inflateInit(&z) != Z_OK)
		return fail(p, -ENOMEM, "out of memory");
	while (zr != Z_STREAM_END) {
		if (n == p->cap_inner &&
		    (n >= MAX_PACKET || array_grow_bytes((void **)&p->inner, &p->cap_inner,
							 n ? 2 * n : len * 4 + 4096, 1))) {
			inflateEnd(&z);
			return n >= MAX_PACKET ? fail(p, -EFBIG, "a compressed run of packets is over "
						      "%u MiB", MAX_PACKET >> 20) :
				fail(p, -ENOMEM, "out of memory");
		}
		z.next_out = p->inner + n;
		z.avail_out = p->cap_inner - n;
		zr = inflate(&z, Z_NO_FLUSH);
		n = p->cap_inner - z.avail_out;
		if (zr != Z_OK && zr != Z_STREAM_END) {
			inflateEnd(&z);
			return fail(p, -EINVAL, "corrupt compressed packets (packet %llu)",
				    (unsigned long long)p->packets);
		}
	}
	inflateEnd(&z);
	/* the run's own buffer: a compressed run inside it would inflate into a new one */
	run = p->inner;
	p->inner = NULL;
	p->cap_inner = 0;
	ret = read_packets(p, run, n);
	free(run);
	return ret;
}

/*
 * A packet's timestamp on the trace's clock: a builtin clock's is absolute
 * (gpubpf writes CLOCK_MONOTONIC's, the trace's), the sequence's own
 * (64 on) is the incremental one, ns after the last packet's.
 */
static uint64_t packet_ts(struct pf_reader *p, const Packet *pk)
{
	if (pk->has_timestamp_clock_id && pk->timestamp_clock_id < SEQUENCE_CLOCKS)
		return pk->timestamp;
	p->last_ts += pk->timestamp;
	return p->last_ts;
}

static int read_packet(struct pf_reader *p, const uint8_t *data, size_t len)
{
	Packet *pk = perfetto__protos__trace_packet__unpack(NULL, len, data);
	uint64_t ts = 0;
	int ret = 0;

	p->packets++;
	if (!pk)
		return fail(p, -EINVAL, "not a Perfetto trace (packet %llu does not decode)",
			    (unsigned long long)p->packets);
	if (pk->has_sequence_flags && (pk->sequence_flags &
	    PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED)) {
		itab_clear(&p->cats);
		itab_clear(&p->names);
		itab_clear(&p->anames);
		itab_clear(&p->strs);
		itab_clear(&p->stack_json);
	}
	if (pk->trace_packet_defaults && pk->trace_packet_defaults->track_event_defaults)
		p->default_track = pk->trace_packet_defaults->track_event_defaults->track_uuid;
	if (pk->interned_data)
		ret = add_interned(p, pk->interned_data);
	if (!ret && pk->has_timestamp && pk->data_case != PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT)
		ts = packet_ts(p, pk);
	switch (ret ? 0 : pk->data_case) {
	case PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT:
		/* the incremental clock starts at its value in the snapshot */
		for (size_t i = 0; i < pk->clock_snapshot->n_clocks; i++)
			if (pk->clock_snapshot->clocks[i]->is_incremental)
				p->last_ts = pk->clock_snapshot->clocks[i]->timestamp;
		break;
	case PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR:
		ret = add_track(p, pk->track_descriptor);
		break;
	case PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT:
		ret = track_event(p, pk->track_event, ts);
		break;
	case PERFETTO__PROTOS__TRACE_PACKET__DATA_COMPRESSED_PACKETS:
		ret = inflate_packets(p, pk->compressed_packets.data, pk->compressed_packets.len);
		break;
	default:
		break;
	}
	perfetto__protos__trace_packet__free_unpacked(pk, NULL);
	return ret;
}

/* Varint at *at of data[0, len); false when cut short or over 64 bits. */
static bool get_varint(const uint8_t *data, size_t len, size_t *at, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *at < len; shift += 7) {
		uint8_t b = data[(*at)++];

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/*
 * The first pass reads only what tells where slices end, straight from the
 * wire format (decoding whole packets, annotations and all, would take
 * most of the reading time): the fields below, by their numbers in
 * perfetto_trace.proto.
 */
enum {
	WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5,      /* wire types */
	TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_TRACK_EVENT = 11,
	TP_COMPRESSED = 50, TP_CLOCK_ID = 58, TP_DEFAULTS = 59, TP_TRACK_DESCRIPTOR = 60,
	TE_TYPE = 9, TE_TRACK_UUID = 11,                        /* TrackEvent */
	TD_UUID = 1,                                            /* TrackDescriptor */
	CS_CLOCKS = 1, CL_TIMESTAMP = 2, CL_INCREMENTAL = 3,    /* ClockSnapshot.Clock */
	DF_TRACK_EVENT = 11, TED_TRACK_UUID = 11,               /* the defaults */
};

/* A message's bytes, read field by field. */
struct wire {
	const uint8_t *d;
	size_t len, at;
	uint32_t field;
	uint64_t v;             /* a number's value, a length-delimited field's length */
	const uint8_t *sub;     /* a length-delimited field's bytes */
};

/* The next field into w: 1, 0 at the end, -1 when malformed. */
static int wire_next(struct wire *w)
{
	uint64_t key;

	if (w->at >= w->len)
		return 0;
	if (!get_varint(w->d, w->len, &w->at, &key) || key >> 3 > UINT32_MAX)
		return -1;
	w->field = key >> 3;
	switch (key & 7) {
	case WT_VARINT:
		return get_varint(w->d, w->len, &w->at, &w->v) ? 1 : -1;
	case WT_I64:
	case WT_I32: {
		size_t n = (key & 7) == WT_I64 ? 8 : 4;

		if (w->len - w->at < n)
			return -1;
		w->v = 0;
		memcpy(&w->v, w->d + w->at, n);
		w->at += n;
		return 1;
	}
	case WT_LEN:
		if (!get_varint(w->d, w->len, &w->at, &w->v) || w->v > w->len - w->at)
			return -1;
		w->sub = w->d + w->at;
		w->at += w->v;
		return 1;
	default:
		return -1;
	}
}

/* The varint field of number field in message d[0, len), if there; -1 malformed. */
static int wire_find(const uint8_t *d, size_t len, uint32_t field, uint64_t *v)
{
	struct wire w = { .d = d, .len = len };
	int r, found = 0;

	while ((r = wire_next(&w)) > 0)
		if (w.field == field) {
			*v = w.v;
			found = 1;
		}
	return r < 0 ? -1 : found;
}

static int malformed(struct pf_reader *p)
{
	return fail(p, -EINVAL, "not a Perfetto trace (packet %llu does not decode)",
		    (unsigned long long)p->packets);
}

/* A track for the first pass: its uuid, to keep its open slices by. */
static int scan_track(struct pf_reader *p, uint64_t uuid)
{
	struct hashmap_slot *s;
	int added;

	if (array_grow(&p->tracks, &p->cap_tracks, p->ntracks + 1) ||
	    !(s = hashmap_put(&p->track_index, uuid, &added)))
		return fail(p, -ENOMEM, "out of memory");
	if (!added)
		return fail(p, -EINVAL, "two tracks with uuid %llu", (unsigned long long)uuid);
	s->val = p->ntracks;
	p->tracks[p->ntracks++] = (struct track){ .uuid = uuid };
	return 0;
}

/* A slice begins or ends: the first pass's part of track_event(). */
static int scan_event(struct pf_reader *p, const uint8_t *d, size_t len, uint64_t ts)
{
	uint64_t type = 0, uuid = p->default_track;
	struct wire w = { .d = d, .len = len };
	struct track *t;
	int r;

	while ((r = wire_next(&w)) > 0) {
		if (w.field == TE_TYPE)
			type = w.v;
		else if (w.field == TE_TRACK_UUID)
			uuid = w.v;
	}
	if (r < 0)
		return malformed(p);
	if (type != PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN &&
	    type != PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END)
		return 0;
	if (!(t = find_track(p, uuid)))
		return uuid ? fail(p, -EINVAL, "an event on track %llu, which no descriptor names "
				   "(packet %llu)", (unsigned long long)uuid,
				   (unsigned long long)p->packets) : 0;
	if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END)
		return end_slice(p, t, ts);
	return begin_slice(p, t, NULL, NULL, ts, NULL);
}

/* The first pass's reading of a packet: clocks, defaults, tracks, slices. */
static int scan_packet(struct pf_reader *p, const uint8_t *d, size_t len)
{
	struct wire w = { .d = d, .len = len };
	const uint8_t *event = NULL, *clocks = NULL, *defaults = NULL, *track = NULL;
	size_t nevent = 0, nclocks = 0, ndefaults = 0, ntrack = 0;
	uint64_t ts = 0, v;
	bool has_ts = false, absolute = false;
	int r;

	p->packets++;
	while ((r = wire_next(&w)) > 0) {
		switch (w.field) {
		case TP_TIMESTAMP:
			has_ts = true;
			ts = w.v;
			break;
		case TP_CLOCK_ID:
			absolute = w.v < SEQUENCE_CLOCKS;
			break;
		case TP_TRACK_EVENT:
			event = w.sub;
			nevent = w.v;
			break;
		case TP_CLOCK_SNAPSHOT:
			clocks = w.sub;
			nclocks = w.v;
			break;
		case TP_DEFAULTS:
			defaults = w.sub;
			ndefaults = w.v;
			break;
		case TP_TRACK_DESCRIPTOR:
			track = w.sub;
			ntrack = w.v;
			break;
		case TP_COMPRESSED:
			r = inflate_packets(p, w.sub, w.v);
			if (r)
				return r;
			break;
		}
	}
	if (r < 0)
		return malformed(p);
	if (defaults) {
		struct wire dw = { .d = defaults, .len = ndefaults };

		while ((r = wire_next(&dw)) > 0)
			if (dw.field == DF_TRACK_EVENT &&
			    wire_find(dw.sub, dw.v, TED_TRACK_UUID, &v) > 0)
				p->default_track = v;
	}
	if (clocks) {
		struct wire cw = { .d = clocks, .len = nclocks };

		/* the incremental clock starts at its value in the snapshot */
		while ((r = wire_next(&cw)) > 0)
			if (cw.field == CS_CLOCKS && wire_find(cw.sub, cw.v, CL_INCREMENTAL, &v) > 0 &&
			    v && wire_find(cw.sub, cw.v, CL_TIMESTAMP, &v) > 0)
				p->last_ts = v;
		return 0;
	}
	if (has_ts)
		ts = absolute ? ts : (p->last_ts += ts);
	if (track) {
		v = 0;          /* a descriptor without a uuid: 0, as protobuf-c reads it */
		return wire_find(track, ntrack, TD_UUID, &v) < 0 ? malformed(p) : scan_track(p, v);
	}
	return event ? scan_event(p, event, nevent, ts) : 0;
}

/* A packet, as the pass reads it. */
static int packet(struct pf_reader *p, const uint8_t *data, size_t len)
{
	return p->pass == 1 ? scan_packet(p, data, len) : read_packet(p, data, len);
}

/* Trace.packet fields in data: each decoded in order. */
static int read_packets(struct pf_reader *p, const uint8_t *data, size_t len)
{
	size_t at = 0;
	uint64_t n;
	int ret = 0;

	while (at < len && !ret) {
		if (data[at++] != TRACE_PACKET_TAG || !get_varint(data, len, &at, &n) ||
		    n > len - at)
			return fail(p, -EINVAL, "corrupt compressed packets (after packet %llu)",
				    (unsigned long long)p->packets);
		ret = packet(p, data + at, n);
		at += n;
	}
	return ret;
}

/* Read n bytes of the file into p->buf; 0, -EIO, or 1 at a clean end (n was 0 read). */
static int read_exact(struct pf_reader *p, void *dst, size_t n, bool may_end)
{
	int got = n ? gzread(p->gz, dst, n) : 0;
	int zerr;

	if (got < 0) {
		const char *m = gzerror(p->gz, &zerr);

		return fail(p, -EIO, "cannot read: %s", zerr == Z_ERRNO ? strerror(errno) : m);
	}
	if ((size_t)got == n)
		return 0;
	if (!got && may_end)
		return 1;
	return fail(p, -EINVAL, "truncated (packet %llu is cut short)",
		    (unsigned long long)p->packets + 1);
}

/* The next top-level packet; 1 at the end of the file. */
static int next_packet(struct pf_reader *p)
{
	uint8_t b;
	uint64_t n = 0;
	int shift = 0, ret;

	ret = read_exact(p, &b, 1, true);
	if (ret)
		return ret;
	if (b != TRACE_PACKET_TAG)
		return fail(p, -EINVAL, "not a Perfetto trace (after packet %llu: byte 0x%02x)",
			    (unsigned long long)p->packets, b);
	do {
		if ((ret = read_exact(p, &b, 1, false)))
			return ret;
		n |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && shift < 64);
	if (n > MAX_PACKET)
		return fail(p, -EFBIG, "packet %llu is over %u MiB",
			    (unsigned long long)p->packets + 1, MAX_PACKET >> 20);
	if (array_grow_bytes((void **)&p->buf, &p->cap_buf, n ? n : 1, 1))
		return fail(p, -ENOMEM, "out of memory");
	if ((ret = read_exact(p, p->buf, n, false)))
		return ret;
	return packet(p, p->buf, n);
}

/* Back to the first packet, for the pass that hands out the events. */
static int second_pass(struct pf_reader *p)
{
	if (gzrewind(p->gz) < 0)
		return fail(p, -EIO, "cannot rewind");
	for (size_t i = 0; i < p->ntracks; i++) {
		free(p->tracks[i].open);
		free(p->tracks[i].name);
	}
	p->ntracks = 0;
	hashmap_release(&p->track_index);
	hashmap_init(&p->track_index);
	itab_clear(&p->cats);
	itab_clear(&p->names);
	itab_clear(&p->anames);
	itab_clear(&p->strs);
	p->packets = p->nbegun = 0;
	p->last_ts = p->default_track = 0;
	p->pass = 2;
	return 0;
}

/* The API ---------------------------------------------------------------------- */

int pf_reader_open(struct pf_reader **pp, void *gz, char *msg, size_t msglen)
{
	struct pf_reader *p = calloc(1, sizeof(*p));
	int ret = 0;

	*pp = p;
	if (!p) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	p->gz = gz;
	p->msg = msg;
	p->msglen = msglen;
	hashmap_init(&p->cats.index);
	hashmap_init(&p->names.index);
	hashmap_init(&p->anames.index);
	hashmap_init(&p->strs.index);
	hashmap_init(&p->stack_json.index);
	hashmap_init(&p->track_index);
	p->mem = open_memstream(&p->membuf, &p->memlen);
	if (!p->mem || jw_init_file(&p->jw, p->mem))
		return fail(p, -ENOMEM, "out of memory");
	p->pass = 1;
	while (!(ret = next_packet(p)))
		;
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < p->ntracks; i++)
		if (p->tracks[i].nopen)
			return fail(p, -EINVAL, "truncated (%zu slices never end)",
				    p->tracks[i].nopen);
	ret = second_pass(p);
	while (!ret && !p->meta && !(ret = next_packet(p)))
		;
	if (ret < 0)
		return ret;
	if (!p->meta)
		return fail(p, -EINVAL, "not a gpubpf trace (a Perfetto trace without gpubpf's "
			    "metadata)");
	p->eof = ret > 0;
	return 0;
}

const char *pf_reader_meta(const struct pf_reader *p, size_t *len)
{
	*len = p->meta_len;
	return p->meta;
}

int pf_reader_next(struct pf_reader *p, const char **text, size_t *len)
{
	int ret;

	free(p->out);
	p->out = NULL;
	while (p->qhead == p->qn) {
		if (p->eof)
			return 0;
		ret = next_packet(p);
		if (ret < 0)
			return ret;
		if (ret > 0)
			p->eof = true;
	}
	p->out = p->queue[p->qhead++];
	*text = p->out;
	*len = strlen(p->out);
	return 1;
}

uint64_t pf_reader_packets(const struct pf_reader *p)
{
	return p->packets;
}

void pf_reader_close(struct pf_reader *p)
{
	if (!p)
		return;
	itab_release(&p->cats);
	itab_release(&p->names);
	itab_release(&p->anames);
	itab_release(&p->strs);
	itab_release(&p->stack_json);
	for (size_t i = 0; i < p->ntracks; i++) {
		free(p->tracks[i].open);
		free(p->tracks[i].name);
	}
	free(p->ends);
	free(p->tracks);
	hashmap_release(&p->track_index);
	for (size_t i = p->qhead; i < p->qn; i++)
		free(p->queue[i]);
	free(p->queue);
	free(p->out);
	free(p->meta);
	free(p->buf);
	free(p->inner);
	jw_release(&p->jw);
	if (p->mem)
		fclose(p->mem);
	free(p->membuf);
	free(p);
}
