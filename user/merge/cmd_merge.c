// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf merge: traces of several hosts into one timeline.
 *
 * Streaming: each input is read one event at a time (trace_reader) and
 * the inputs are merged by timestamp through a heap of their next events,
 * so memory does not grow with the traces.  Each input passes through a
 * reorder window of --reorder-window events (a heap), which absorbs
 * inputs that are almost sorted; an event later than the window can fix
 * stops the merge with a message naming the file and line (our exporter
 * writes events sorted, metadata first).
 *
 * Events are copied as they are (any "ph", any "cat", unknown keys kept),
 * with these rewrites:
 *   ts          + the host's shift: (realtime_offset_ns of the host minus
 *               that of the first trace, the reference), minus the skew
 *               found by --align-collectives; the merged clock is the
 *               reference host's CLOCK_MONOTONIC;
 *   pid, tid    host i's values below 10^7 become i * 10^7 + value (the
 *               first host keeps its own), larger ones (synthetic track
 *               ids) get fresh values above every host's range, the same
 *               mapping for pid and tid so a main thread stays pid == tid;
 *   id, bind_id flow and async ids of host i > 0 move by i << 40 (numbers,
 *               "0x" strings) or get an "h<i>:" prefix (other strings);
 *   process_name "<host>: <name>", with "host" and "host_pid" in args.
 * Processes without a name get one ("<host>: pid N").
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "commands.h"
#include "lib/json_writer.h"
#include "merge/merge_align.h"
#include "lib/sink.h"
#include "trace/trace_reader.h"

#ifndef GPUBPF_VERSION
#define GPUBPF_VERSION "unknown"
#endif

#define PID_STRIDE 10000000LL
#define MAX_TRACES 400                  /* 400 * 10^7 < 2^32: pids stay uint32 */
#define ID_SHIFT 40
#define DEFAULT_WINDOW 4096
#define DEFAULT_WINDOW_BYTES (64ULL << 20)
/*
 * |ts| at most, after the clock shift (73 years of ns): differences of
 * two such times, and their differences (the skew estimate), fit int64.
 */
#define MAX_TS_NS ((1LL << 61) - 1)
#define MAX_SHIFT_NS (1LL << 62)
#define OB_DIRECT 65536                 /* pieces this large skip the buffer */
#define KEY_META INT64_MIN              /* sort key of metadata events */

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
	uint8_t used, seen_pid, named;
};

struct merge {
	struct input *in;
	int nin;
	const char *output;
	char outbuf[64];
	bool align;
	size_t window;                  /* events per input */
	uint64_t window_bytes;          /* bytes of events per input */
	int quiet;

	struct ident *ids;
	size_t nids, capids;
	int64_t next_big;

	int *heap;                      /* inputs by their next event */
	int nheap;
	int64_t last_key;
	int last_in;

	struct sink sink;
	char *ob;                       /* one event being written */
	size_t oblen, obcap;
	uint64_t nevents, nmeta;
};

static const char usage[] =
"usage: gpubpf merge [options] TRACE...\n"
"\n"
"Merge traces recorded on several hosts (gpubpf record, .json or .json.gz)\n"
"into one timeline: each host its own group of processes (\"node1: python3\"),\n"
"pids kept apart, clocks aligned with each trace's realtime offset; the\n"
"merged clock is the first trace's.\n"
"\n"
"  -o, --output FILE         merged trace, .json or .json.gz; default\n"
"                            gpubpf-merged-<YYYYmmdd-HHMMSS>.json\n"
"      --align-collectives   refine the alignment with NCCL kernels (cat\n"
"                            \"nccl\"): the k-th kernel of a name ends at the\n"
"                            same instant on every host; the residual skew\n"
"                            per host is reported and removed (reads the\n"
"                            inputs twice)\n"
"      --reorder-window N    events held per input to put a slightly unsorted\n"
"                            input in order (default 4096); an input more out\n"
"                            of order than that is refused\n"
"      --reorder-window-bytes SIZE\n"
"                            and at most SIZE bytes of events per input (K, M,\n"
"                            G suffixes; default 64M; one event is always held)\n"
"  -q, --quiet               no summary on stderr\n"
"  -h, --help                this help\n"
"\n"
"Examples:\n"
"  gpubpf merge -o job.json node1.json.gz node2.json.gz\n"
"  gpubpf merge --align-collectives -o job.json.gz traces/*.json.gz\n"
"\n"
"All traces must come from the same gpubpf major.minor version.  Exit\n"
"status 1, and no output written, when an input is unreadable, not a\n"
"gpubpf trace, holds an event over 256 MiB or a \"ts\" that is not a time\n"
"(1e400).  Invalid UTF-8 in an input's strings becomes U+FFFD.\n";

/* --- pid/tid mapping ---------------------------------------------------- */

/* ts + shift, if within +-MAX_TS_NS (differences of such times fit). */
static int shift_ts(int64_t ts, int64_t shift, int64_t *out)
{
	int64_t v;

	if (__builtin_add_overflow(ts, shift, &v) || v < -MAX_TS_NS || v > MAX_TS_NS)
		return -ERANGE;
	*out = v;
	return 0;
}

static uint64_t hash_id(uint32_t host, int64_t v)
{
	uint64_t h = (uint64_t)v * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)host + 1) * 0xc2b2ae3d27d4eb4fULL;

	return h ^ (h >> 29);
}

static int ids_grow(struct merge *m)
{
	size_t cap = m->capids ? m->capids * 2 : 1024;
	struct ident *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < m->capids; i++) {
		struct ident *e = &m->ids[i];
		size_t k;

		if (!e->used)
			continue;
		for (k = hash_id(e->host, e->v) & (cap - 1); t[k].used; k = (k + 1) & (cap - 1))
			;
		t[k] = *e;
	}
	free(m->ids);
	m->ids = t;
	m->capids = cap;
	return 0;
}

/* The entry of (host, v), created if new; NULL on ENOMEM or exhaustion. */
static struct ident *ident_get(struct merge *m, uint32_t host, int64_t v)
{
	size_t k;

	if (m->nids * 2 >= m->capids && ids_grow(m))
		return NULL;
	for (k = hash_id(host, v) & (m->capids - 1); m->ids[k].used;
	     k = (k + 1) & (m->capids - 1))
		if (m->ids[k].host == host && m->ids[k].v == v)
			return &m->ids[k];
	if (v >= 0 && v < PID_STRIDE) {
		m->ids[k].nv = host * PID_STRIDE + v;
	} else {
		if (m->next_big > (int64_t)UINT32_MAX)
			return NULL;
		m->ids[k].nv = m->next_big++;
	}
	m->ids[k].used = 1;
	m->ids[k].host = host;
	m->ids[k].v = v;
	m->nids++;
	return &m->ids[k];
}

/* --- output ------------------------------------------------------------- */

static int ob_flush(struct merge *m);

/*
 * Make room for n more bytes in the event being written: grow the buffer
 * up to OB_DIRECT, beyond that flush it first.  Returns 1 when there is
 * room, 0 when p was written straight to the sink (pieces of OB_DIRECT or
 * more, a huge "args"), or -errno.  So memory does not grow with an
 * event's size.
 */
static __attribute__((noinline)) int ob_room(struct merge *m, const void *p, size_t n)
{
	size_t cap = m->obcap ? m->obcap : 4096;
	char *b;

	if (m->oblen + n > OB_DIRECT) {
		int ret = ob_flush(m);

		if (ret)
			return ret;
		if (n >= OB_DIRECT)
			return sink_write(&m->sink, p, n);
		if (m->obcap >= n)
			return 1;
	}
	while (cap - m->oblen < n)
		cap *= 2;
	b = realloc(m->ob, cap);
	if (!b)
		return -ENOMEM;
	m->ob = b;
	m->obcap = cap;
	return 1;
}

/* Append to the event being written. */
static int ob_put(struct merge *m, const void *p, size_t n)
{
	if (m->obcap - m->oblen < n) {
		int ret = ob_room(m, p, n);

		if (ret <= 0)
			return ret;
	}
	memcpy(m->ob + m->oblen, p, n);
	m->oblen += n;
	return 0;
}

static int ob_str(struct merge *m, const char *s)
{
	return ob_put(m, s, strlen(s));
}

static int ob_flush(struct merge *m)
{
	int ret = sink_write(&m->sink, m->ob, m->oblen);

	m->oblen = 0;
	return ret;
}

/* ns as microseconds with three decimals; negative values too. */
static int ob_us(struct merge *m, int64_t ns)
{
	char buf[48];
	uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	int n = snprintf(buf, sizeof(buf), "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "",
			 a / 1000, (unsigned)(a % 1000));

	return ob_put(m, buf, n);
}

static int ob_i64(struct merge *m, int64_t v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRId64, v);

	return ob_put(m, buf, n);
}

/* A value's text, without whitespace outside strings when ws. */
static int ob_value(struct merge *m, const char *p, size_t n, bool ws)
{
	bool in_str = false, esc = false;
	size_t i, from = 0;
	int ret;

	if (!ws)
		return ob_put(m, p, n);
	for (i = 0; i < n; i++) {
		char c = p[i];

		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
			ret = ob_put(m, p + from, i - from);
			if (ret)
				return ret;
			from = i + 1;
		}
	}
	return ob_put(m, p + from, n - from);
}

/* A cJSON value through the JSON writer (numbers exact below 2^53). */
static void jw_cjson(struct jw *jw, const cJSON *v)
{
	const cJSON *c;

	if (cJSON_IsObject(v)) {
		jw_obj_begin(jw);
		cJSON_ArrayForEach(c, v) {
			jw_key(jw, c->string);
			jw_cjson(jw, c);
		}
		jw_obj_end(jw);
	} else if (cJSON_IsArray(v)) {
		jw_arr_begin(jw);
		cJSON_ArrayForEach(c, v)
			jw_cjson(jw, c);
		jw_arr_end(jw);
	} else if (cJSON_IsString(v)) {
		jw_str(jw, v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;

		/* the range first: converting 1e300 to an integer is undefined */
		if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(int64_t)d)
			jw_int(jw, (int64_t)d);
		else
			jw_double(jw, d);
	} else if (cJSON_IsBool(v)) {
		jw_bool(jw, cJSON_IsTrue(v));
	} else {
		jw_null(jw);
	}
}

/*
 * process_name args: {"name":"<label>: <name>", ..., "host":label,
 * "host_pid":pid}, written through the JSON writer into the sink.
 */
static int write_name_args(struct merge *m, const struct input *in,
			   const char *text, size_t len, int64_t host_pid)
{
	cJSON *args = cJSON_ParseWithLength(text, len);
	const cJSON *c, *obj;
	struct jw jw;
	char *name = NULL;
	int ret;

	ret = ob_flush(m);
	if (ret)
		goto cleanup;
	ret = jw_init(&jw, &m->sink);
	if (ret)
		goto cleanup;
	jw_obj_begin(&jw);
	obj = cJSON_IsObject(args) ? args : NULL;
	cJSON_ArrayForEach(c, obj) {
		if (!strcmp(c->string, "name") && cJSON_IsString(c)) {
			if (asprintf(&name, "%s: %s", in->label, c->valuestring) < 0) {
				name = NULL;
				ret = -ENOMEM;
				jw_release(&jw);
				goto cleanup;
			}
			jw_key(&jw, "name");
			jw_str(&jw, name);
		} else if (strcmp(c->string, "host") && strcmp(c->string, "host_pid")) {
			jw_key(&jw, c->string);
			jw_cjson(&jw, c);
		}
	}
	jw_key(&jw, "host");
	jw_str(&jw, in->label);
	jw_key(&jw, "host_pid");
	jw_int(&jw, host_pid);
	jw_obj_end(&jw);
	ret = jw_finish(&jw);
	jw_release(&jw);
cleanup:
	free(name);
	cJSON_Delete(args);
	return ret;
}

/* A flow/async id of host i (> 0) moved out of the other hosts' way. */
static int write_id(struct merge *m, int host, const char *p, size_t n)
{
	int64_t v;
	char buf[64];

	if (!tr_parse_int(p, n, &v) && v >= 0 && v < (1LL << ID_SHIFT))
		return ob_i64(m, v + ((int64_t)host << ID_SHIFT));
	if (n > 4 && n < 21 && p[0] == '"' && p[1] == '0' && (p[2] == 'x' || p[2] == 'X')) {
		char *end;
		unsigned long long x;

		memcpy(buf, p + 1, n - 2);
		buf[n - 2] = '\0';
		errno = 0;
		x = strtoull(buf, &end, 16);
		if (!errno && !*end && x < (1ULL << ID_SHIFT)) {
			int k = snprintf(buf, sizeof(buf), "\"0x%llx\"",
					 x + ((unsigned long long)host << ID_SHIFT));
			return ob_put(m, buf, k);
		}
	}
	if (n >= 2 && p[0] == '"') {
		int k = snprintf(buf, sizeof(buf), "\"h%d:", host);

		return ob_put(m, buf, k) ?: ob_put(m, p + 1, n - 1);
	}
	return ob_put(m, p, n);
}

/* One event of input h with its rewrites, into the sink. */
static int write_event(struct merge *m, int h, const struct tr_event *ev)
{
	struct input *in = &m->in[h];
	bool meta = tr_event_str_is(ev, ev->key[TRK_PH], "M");
	bool pname = meta && tr_event_str_is(ev, ev->key[TRK_NAME], "process_name");
	int64_t pid = -1;
	int ret = 0;

	ret = ob_str(m, m->nevents + m->nmeta ? ",\n{" : "\n{");
	for (uint32_t i = 0; i < ev->nmembers && !ret; i++) {
		const struct tr_member *mb = &ev->m[i];
		const char *v = ev->text + mb->val.off;
		size_t vlen = mb->val.len;
		int64_t x;

		if (i)
			ob_put(m, ",", 1);
		ob_put(m, "\"", 1);
		ob_put(m, ev->text + mb->key.off, mb->key.len);
		ret = ob_put(m, "\":", 2);
		if (ret)
			break;
		if ((i == (uint32_t)ev->key[TRK_PID] || i == (uint32_t)ev->key[TRK_TID]) &&
		    !tr_parse_int(v, vlen, &x)) {
			struct ident *id = ident_get(m, h, x);

			if (!id)
				return -ENOSPC;
			if (i == (uint32_t)ev->key[TRK_PID]) {
				pid = x;
				id->seen_pid = 1;
				if (pname)
					id->named = 1;
			}
			ret = ob_i64(m, id->nv);
		} else if (i == (uint32_t)ev->key[TRK_TS] && ev->has_ts) {
			int64_t ts = 0;

			shift_ts(ev->ts_ns, in->shift_ns, &ts);    /* checked in refill */
			ret = ob_us(m, ts);
		} else if ((i == (uint32_t)ev->key[TRK_ID] || i == (uint32_t)ev->key[TRK_BIND_ID]) &&
			   h > 0) {
			ret = write_id(m, h, v, vlen);
		} else if (i == (uint32_t)ev->key[TRK_ARGS] && pname && pid >= 0 && *v == '{') {
			ret = write_name_args(m, in, v, vlen, pid);
		} else {
			ret = ob_value(m, v, vlen, ev->ws);
		}
	}
	if (!ret)
		ret = ob_put(m, "}", 1);
	if (!ret)
		ret = ob_flush(m);
	if (meta)
		m->nmeta++;
	else
		m->nevents++;
	return ret;
}

/* "process_name" for each process that had none. */
static int write_missing_names(struct merge *m)
{
	for (size_t i = 0; i < m->capids; i++) {
		const struct ident *e = &m->ids[i];
		struct jw jw;
		char name[320];
		int ret;

		if (!e->used || !e->seen_pid || e->named)
			continue;
		snprintf(name, sizeof(name), "%s: pid %" PRId64, m->in[e->host].label, e->v);
		ret = ob_str(m, ",\n") ?: ob_flush(m) ?: jw_init(&jw, &m->sink);
		if (ret)
			return ret;
		jw_obj_begin(&jw);
		jw_key(&jw, "ph");
		jw_str(&jw, "M");
		jw_key(&jw, "name");
		jw_str(&jw, "process_name");
		jw_key(&jw, "pid");
		jw_int(&jw, e->nv);
		jw_key(&jw, "tid");
		jw_int(&jw, e->nv);
		jw_key(&jw, "args");
		jw_obj_begin(&jw);
		jw_key(&jw, "name");
		jw_str(&jw, name);
		jw_key(&jw, "host");
		jw_str(&jw, m->in[e->host].label);
		jw_key(&jw, "host_pid");
		jw_int(&jw, e->v);
		jw_obj_end(&jw);
		jw_obj_end(&jw);
		ret = jw_finish(&jw);
		jw_release(&jw);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The members of an input's "gpubpf" object that merge does not handle
 * itself (e.g. the "gpu" counters of GPU timing), copied as they are.
 */
static void write_other_meta(struct jw *jw, const cJSON *meta)
{
	static const char *const known[] = {
		"version", "clock", "realtime_offset_ns", "host", "dropped_events",
		"dropped_total", "events", "file", "trace_host", "clock_shift_ns",
		"skew_ns", "skew_spread_ns", "collectives_matched", "shift_ns",
		"pid_base",
	};
	const cJSON *c;

	cJSON_ArrayForEach(c, meta) {
		size_t i;

		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (!strcmp(c->string, known[i]))
				break;
		if (i < sizeof(known) / sizeof(known[0]))
			continue;
		jw_key(jw, c->string);
		jw_cjson(jw, c);
	}
}

/* The merged "gpubpf" object. */
static int write_header(struct merge *m)
{
	uint64_t events = 0, dropped = 0;
	struct jw jw;
	char key[32];
	int ret;

	ret = sink_write(&m->sink, "{\"gpubpf\":", 10) ?: jw_init(&jw, &m->sink);
	if (ret)
		return ret;
	for (int i = 0; i < m->nin; i++) {
		events += m->in[i].r.events;
		dropped += m->in[i].r.dropped_total;
	}
	jw_obj_begin(&jw);
	jw_key(&jw, "version");
	jw_str(&jw, GPUBPF_VERSION);
	jw_key(&jw, "clock");
	jw_str(&jw, "CLOCK_MONOTONIC");
	jw_key(&jw, "clock_host");
	jw_str(&jw, m->in[0].label);
	jw_key(&jw, "realtime_offset_ns");
	jw_int(&jw, m->in[0].r.realtime_offset_ns);
	jw_key(&jw, "host");
	{
		char *hosts = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&hosts, &len);

		for (int i = 0; f && i < m->nin; i++)
			fprintf(f, "%s%s", i ? "+" : "", m->in[i].label);
		if (f)
			fclose(f);
		jw_str(&jw, hosts ? hosts : "");
		free(hosts);
	}
	jw_key(&jw, "dropped_events");
	jw_obj_begin(&jw);
	for (int i = 0; i < m->nin; i++) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(m->in[i].r.meta,
								  "dropped_events"), *c;

		if (!cJSON_IsObject(d))
			continue;
		cJSON_ArrayForEach(c, d) {
			int64_t pid;
			struct ident *id;

			if (tr_parse_int(c->string, strlen(c->string), &pid) ||
			    !(id = ident_get(m, i, pid)))
				continue;
			snprintf(key, sizeof(key), "%" PRId64, id->nv);
			jw_key(&jw, key);
			jw_cjson(&jw, c);
		}
	}
	jw_obj_end(&jw);
	jw_key(&jw, "dropped_total");
	jw_uint(&jw, dropped);
	jw_key(&jw, "events");          /* the inputs' own counts, summed */
	jw_uint(&jw, events);
	jw_key(&jw, "merge");
	jw_obj_begin(&jw);
	jw_key(&jw, "reference");
	jw_str(&jw, m->in[0].label);
	jw_key(&jw, "aligned_collectives");
	jw_bool(&jw, m->align);
	jw_key(&jw, "pid_stride");
	jw_int(&jw, PID_STRIDE);
	jw_key(&jw, "hosts");
	jw_arr_begin(&jw);
	for (int i = 0; i < m->nin; i++) {
		const struct input *in = &m->in[i];

		jw_obj_begin(&jw);
		jw_key(&jw, "host");
		jw_str(&jw, in->label);
		jw_key(&jw, "trace_host");
		jw_str(&jw, in->r.host);
		jw_key(&jw, "file");
		jw_str(&jw, in->path);
		jw_key(&jw, "version");
		jw_str(&jw, in->r.version);
		jw_key(&jw, "realtime_offset_ns");
		jw_int(&jw, in->r.realtime_offset_ns);
		jw_key(&jw, "clock_shift_ns");
		jw_int(&jw, in->clock_shift_ns);
		jw_key(&jw, "skew_ns");
		if (m->align && (in->align.matched || i == 0))
			jw_int(&jw, in->align.skew_ns);
		else
			jw_null(&jw);
		jw_key(&jw, "skew_spread_ns");
		jw_int(&jw, in->align.spread_ns);
		jw_key(&jw, "collectives_matched");
		jw_uint(&jw, in->align.matched);
		jw_key(&jw, "shift_ns");
		jw_int(&jw, in->shift_ns);
		jw_key(&jw, "pid_base");
		jw_int(&jw, i * PID_STRIDE);
		jw_key(&jw, "events");
		jw_uint(&jw, in->r.events);
		jw_key(&jw, "dropped_total");
		jw_uint(&jw, in->r.dropped_total);
		write_other_meta(&jw, in->r.meta);
		jw_obj_end(&jw);
	}
	jw_arr_end(&jw);
	jw_obj_end(&jw);
	jw_obj_end(&jw);
	ret = jw_finish(&jw);
	jw_release(&jw);
	if (ret)
		return ret;
	return sink_write(&m->sink, ",\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 39);
}

/* --- the merge ---------------------------------------------------------- */

static bool slot_less(const struct slot *a, const struct slot *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static void win_push(struct input *in, struct slot s)
{
	size_t i = in->nwin++;

	while (i) {
		size_t p = (i - 1) / 2;

		if (!slot_less(&s, &in->win[p]))
			break;
		in->win[i] = in->win[p];
		i = p;
	}
	in->win[i] = s;
}

static struct slot win_pop(struct input *in)
{
	struct slot top = in->win[0], last = in->win[--in->nwin];
	size_t i = 0, n = in->nwin;

	in->win_bytes -= top.ev->len;
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && slot_less(&in->win[c + 1], &in->win[c]))
			c++;
		if (!slot_less(&in->win[c], &last))
			break;
		in->win[i] = in->win[c];
		i = c;
	}
	if (n)
		in->win[i] = last;
	return top;
}

/*
 * Read until the window is full (m->window events, or m->window_bytes of
 * their text; one event at least) or the input ends.  0 or -errno.
 */
static int refill(struct merge *m, struct input *in)
{
	while (!in->eof && in->nwin < m->window &&
	       (!in->nwin || in->win_bytes < m->window_bytes)) {
		struct tr_event *ev;
		struct slot s;
		int ret = trace_reader_next(&in->r, &ev);

		if (ret < 0) {
			fprintf(stderr, "gpubpf: %s\n", trace_reader_errmsg(&in->r));
			return -EINVAL;         /* reported */
		}
		if (ret == 0) {
			in->eof = true;
			break;
		}
		s.ev = ev;
		s.seq = in->seq++;
		if (ev->has_ts && shift_ts(ev->ts_ns, in->shift_ns, &s.key)) {
			fprintf(stderr, "gpubpf: %s: \"ts\" of the event at line %llu is out of range once moved to %s's clock (%+.3f us)\n",
				in->path, (unsigned long long)ev->line, m->in[0].label,
				in->shift_ns / 1e3);
			free(ev);
			return -EINVAL;
		}
		if (!ev->has_ts || tr_event_str_is(ev, ev->key[TRK_PH], "M"))
			s.key = KEY_META;
		in->win_bytes += ev->len;
		win_push(in, s);
	}
	return 0;
}

/* Inputs ordered by their next event; ties go to the earlier input. */
static bool in_less(const struct merge *m, int a, int b)
{
	const struct slot *x = &m->in[a].win[0], *y = &m->in[b].win[0];

	return x->key < y->key || (x->key == y->key && a < b);
}

static void heap_down(struct merge *m, int i)
{
	int n = m->nheap, v = m->heap[i];

	for (;;) {
		int c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && in_less(m, m->heap[c + 1], m->heap[c]))
			c++;
		if (!in_less(m, m->heap[c], v))
			break;
		m->heap[i] = m->heap[c];
		i = c;
	}
	m->heap[i] = v;
}

static int merge_events(struct merge *m)
{
	int ret;

	m->last_key = KEY_META;
	m->last_in = -1;
	for (int i = 0; i < m->nin; i++) {
		m->in[i].win = calloc(m->window, sizeof(*m->in[i].win));
		if (!m->in[i].win)
			return -ENOMEM;
		ret = refill(m, &m->in[i]);
		if (ret)
			return ret;
		if (m->in[i].nwin)
			m->heap[m->nheap++] = i;
	}
	for (int i = m->nheap / 2 - 1; i >= 0; i--)
		heap_down(m, i);
	while (m->nheap) {
		int h = m->heap[0];
		struct input *in = &m->in[h];
		struct slot s = win_pop(in);

		if (s.key != KEY_META) {
			if (s.key < m->last_key) {
				fprintf(stderr,
					"gpubpf: %s: events out of time order beyond the reorder window (line %llu, ts %.3f us, after %.3f us); use a larger --reorder-window or --reorder-window-bytes\n",
					in->path, (unsigned long long)s.ev->line,
					s.ev->ts_ns / 1e3, ((double)m->last_key - in->shift_ns) / 1e3);
				free(s.ev);
				return -EINVAL;
			}
			m->last_key = s.key;
		}
		ret = write_event(m, h, s.ev);
		free(s.ev);
		if (ret == -ENOSPC) {
			fprintf(stderr, "gpubpf: %s: too many distinct pids and tids to remap\n",
				in->path);
			return ret;
		}
		if (ret)
			return ret;
		ret = refill(m, in);
		if (ret)
			return ret;
		if (!in->nwin)
			m->heap[0] = m->heap[--m->nheap];
		if (m->nheap)
			heap_down(m, 0);
	}
	return 0;
}

/* --- alignment pass ----------------------------------------------------- */

static int align_pass(struct merge *m)
{
	struct align_names names = {};
	struct align_set *sets;
	bool reported = false;
	int ret = 0, err = 0;

	sets = calloc(m->nin, sizeof(*sets));
	if (!sets)
		return -ENOMEM;
	for (int i = 0; i < m->nin && !ret; i++) {
		struct input *in = &m->in[i];
		struct tr_event *ev;

		while ((ret = trace_reader_next(&in->r, &ev)) > 0) {
			int n = ev->key[TRK_NAME];
			uint32_t id;

			if (ev->has_ts && ev->has_dur && n >= 0 &&
			    tr_event_str_is(ev, ev->key[TRK_CAT], "nccl") &&
			    tr_event_str_is(ev, ev->key[TRK_PH], "X")) {
				const struct tr_span *v = &ev->m[n].val;
				int64_t end;

				if (shift_ts(ev->ts_ns, ev->dur_ns, &end) ||
				    shift_ts(end, in->clock_shift_ns, &end)) {
					fprintf(stderr, "gpubpf: %s: the end of the event at line %llu is out of range once moved to %s's clock\n",
						in->path, (unsigned long long)ev->line, m->in[0].label);
					free(ev);
					ret = -EINVAL;
					reported = true;
					break;
				}
				err = align_intern(&names, ev->text + v->off, v->len, &id) ?:
				      align_add(&sets[i], id, end);
			}
			free(ev);
			if (err) {
				ret = err;
				break;
			}
		}
		if (reported)
			break;
		if (ret == 0)
			ret = trace_reader_rewind(&in->r);
		if (ret < 0 && ret != -ENOMEM)
			fprintf(stderr, "gpubpf: %s\n", trace_reader_errmsg(&in->r));
	}
	for (int i = 1; i < m->nin && !ret; i++)
		ret = align_estimate(&sets[0], &sets[i], &m->in[i].align);
	if (!ret && !sets[0].n)
		fprintf(stderr, "gpubpf: %s: no NCCL kernels (cat \"nccl\") in the reference trace, clocks not refined\n",
			m->in[0].label);
	for (int i = 1; i < m->nin && !ret; i++) {
		struct input *in = &m->in[i];

		if (!in->align.matched) {
			if (sets[0].n)
				fprintf(stderr, "gpubpf: %s: no NCCL kernels to match with %s, clock not refined\n",
					in->label, m->in[0].label);
			continue;
		}
		in->shift_ns -= in->align.skew_ns;
		if (!m->quiet)
			fprintf(stderr, "gpubpf: %s: clock skew %+.3f us against %s (%" PRIu64
				" NCCL kernels matched, spread %.3f us), removed\n",
				in->label, in->align.skew_ns / 1e3, m->in[0].label,
				in->align.matched, in->align.spread_ns / 1e3);
	}
	if (!ret)
		m->in[0].align.matched = sets[0].n;
	for (int i = 0; i < m->nin; i++)
		align_set_release(&sets[i]);
	free(sets);
	align_names_release(&names);
	if (ret == -ENOMEM)
		fprintf(stderr, "gpubpf: out of memory\n");
	return ret;
}

/* --- set-up ------------------------------------------------------------- */

/* "0.1.0" -> major and minor; -EINVAL if it does not start N.N. */
static int major_minor(const char *v, long *maj, long *min)
{
	char *end;

	*maj = strtol(v, &end, 10);
	if (end == v || *end != '.')
		return -EINVAL;
	v = end + 1;
	*min = strtol(v, &end, 10);
	return end == v ? -EINVAL : 0;
}

static void make_labels(struct merge *m)
{
	for (int i = 0; i < m->nin; i++) {
		struct input *in = &m->in[i];
		const char *base = in->r.host;
		int dup = 1;

		if (!*base) {
			base = strrchr(in->path, '/');
			base = base ? base + 1 : in->path;
		}
		for (int j = 0; j < i && in->r.host[0]; j++)
			if (!strcmp(m->in[j].r.host, in->r.host))
				dup++;
		if (dup > 1)
			snprintf(in->label, sizeof(in->label), "%s#%d", base, dup);
		else
			snprintf(in->label, sizeof(in->label), "%s", base);
	}
}

static int open_inputs(struct merge *m)
{
	long maj0 = 0, min0 = 0;

	for (int i = 0; i < m->nin; i++) {
		struct input *in = &m->in[i];
		long maj, min;

		if (trace_reader_open(&in->r, in->path) < 0) {
			fprintf(stderr, "gpubpf: %s\n", trace_reader_errmsg(&in->r));
			return -EINVAL;
		}
		if (major_minor(in->r.version, &maj, &min)) {
			fprintf(stderr, "gpubpf: %s: unknown gpubpf version '%s'\n",
				in->path, in->r.version);
			return -EINVAL;
		}
		if (i == 0) {
			maj0 = maj;
			min0 = min;
		} else if (maj != maj0 || min != min0) {
			fprintf(stderr,
				"gpubpf: %s: recorded by gpubpf %s, but %s by %s (major.minor differ: record every host with one version)\n",
				in->path, in->r.version, m->in[0].path, m->in[0].r.version);
			return -EINVAL;
		}
		if (__builtin_sub_overflow(in->r.realtime_offset_ns, m->in[0].r.realtime_offset_ns,
					   &in->clock_shift_ns) ||
		    in->clock_shift_ns < -MAX_SHIFT_NS || in->clock_shift_ns > MAX_SHIFT_NS) {
			fprintf(stderr, "gpubpf: %s: realtime_offset_ns %" PRId64 " is too far from %s's (%" PRId64 ")\n",
				in->path, in->r.realtime_offset_ns, m->in[0].path,
				m->in[0].r.realtime_offset_ns);
			return -EINVAL;
		}
		in->shift_ns = in->clock_shift_ns;
	}
	make_labels(m);
	m->next_big = m->nin * PID_STRIDE;
	return 0;
}

/* "64M" -> 67108864: bytes with an optional K, M, G or T (powers of 1024). */
static int parse_size(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || !x || x > (1ULL << 40) >> shift)
		return -EINVAL;
	*v = (uint64_t)x << shift;
	return 0;
}

static int parse_args(struct merge *m, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "align-collectives", no_argument, NULL, 'A' },
		{ "reorder-window", required_argument, NULL, 'W' },
		{ "reorder-window-bytes", required_argument, NULL, 'B' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	char *end;
	int c;

	m->window = DEFAULT_WINDOW;
	m->window_bytes = DEFAULT_WINDOW_BYTES;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			m->output = optarg;
			break;
		case 'A':
			m->align = true;
			break;
		case 'W':
			errno = 0;
			m->window = strtoul(optarg, &end, 10);
			if (errno || *end || !m->window || m->window > (1u << 24)) {
				fprintf(stderr, "gpubpf: invalid reorder window '%s' (1 to 16777216 events)\n",
					optarg);
				return -1;
			}
			break;
		case 'B':
			if (parse_size(optarg, &m->window_bytes)) {
				fprintf(stderr, "gpubpf: invalid reorder window size '%s' (1 to 1T bytes, K, M, G, T suffixes)\n",
					optarg);
				return -1;
			}
			break;
		case 'q':
			m->quiet = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case ':':
			fprintf(stderr, "gpubpf: option '%s' needs a value (see 'gpubpf merge --help')\n",
				argv[optind - 1]);
			return -1;
		default:
			fprintf(stderr, "gpubpf: unknown option '%s' (see 'gpubpf merge --help')\n",
				argv[optind - 1]);
			return -1;
		}
	}
	m->nin = argc - optind;
	if (m->nin < 1) {
		fprintf(stderr, "gpubpf: merge needs at least one trace (see 'gpubpf merge --help')\n");
		return -1;
	}
	if (m->nin > MAX_TRACES) {
		fprintf(stderr, "gpubpf: too many traces (%d, at most %d)\n", m->nin, MAX_TRACES);
		return -1;
	}
	m->in = calloc(m->nin, sizeof(*m->in));
	m->heap = calloc(m->nin, sizeof(*m->heap));
	if (!m->in || !m->heap) {
		fprintf(stderr, "gpubpf: out of memory\n");
		return -1;
	}
	for (int i = 0; i < m->nin; i++)
		m->in[i].path = argv[optind + i];
	if (!m->output) {
		time_t t = time(NULL);
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(m->outbuf, sizeof(m->outbuf), "gpubpf-merged-%Y%m%d-%H%M%S.json", &tm);
		m->output = m->outbuf;
	}
	return 0;
}

int cmd_merge(int argc, char **argv)
{
	struct merge m = {};
	char err[600];
	int ret, status = 1;
	bool sink_open_ = false;

	if (parse_args(&m, argc, argv))
		goto cleanup;
	if (sink_check_path(m.output, err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		goto cleanup;
	}
	if (sink_format(m.output) == SINK_PFTRACE) {
		fprintf(stderr, "gpubpf: merge writes .json or .json.gz, not '%s'\n", m.output);
		goto cleanup;
	}
	for (int i = 0; i < m.nin; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(m.in[i].path, m.in[j].path)) {
				fprintf(stderr, "gpubpf: %s given twice\n", m.in[i].path);
				goto cleanup;
			}
	if (open_inputs(&m))
		goto cleanup;
	if (m.align && align_pass(&m))
		goto cleanup;
	ret = sink_open(&m.sink, m.output);
	if (ret) {
		fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&m.sink));
		goto cleanup;
	}
	sink_open_ = true;
	ret = write_header(&m);
	if (!ret)
		ret = merge_events(&m);
	if (ret == -EINVAL || ret == -ENOSPC)
		goto cleanup;           /* already reported */
	if (!ret)
		ret = write_missing_names(&m);
	if (!ret)
		ret = sink_write(&m.sink, "\n]}\n", 4);
	if (ret) {
		fprintf(stderr, "gpubpf: %s\n", sink_error(&m.sink) ? sink_errmsg(&m.sink) :
			strerror(-ret));
		goto cleanup;
	}
	sink_open_ = false;
	ret = sink_commit(&m.sink);
	if (ret) {
		fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&m.sink));
		goto cleanup;
	}
	if (!m.quiet) {
		fprintf(stderr, "gpubpf: merged %d traces (", m.nin);
		for (int i = 0; i < m.nin; i++)
			fprintf(stderr, "%s%s", i ? ", " : "", m.in[i].label);
		fprintf(stderr, "), %" PRIu64 " events, written to %s\n", m.nevents, m.output);
	}
	status = 0;
cleanup:
	if (sink_open_)
		sink_abort(&m.sink);
	for (int i = 0; m.in && i < m.nin; i++) {
		struct input *in = &m.in[i];

		while (in->win && in->nwin)
			free(win_pop(in).ev);
		free(in->win);
		trace_reader_close(&in->r);
	}
	free(m.in);
	free(m.heap);
	free(m.ids);
	free(m.ob);
	return status;
}
