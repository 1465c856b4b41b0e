// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf merge's event writer: each event copied as it is (any "ph", any
 * "cat", unknown keys kept) with its ts shifted, its pid and tid remapped,
 * its flow and async ids of host i > 0 moved by i << 40 (numbers, "0x"
 * strings) or prefixed "h<i>:" (other strings), and process names
 * prefixed with the host.  An event is built in a buffer, pieces of
 * OB_DIRECT bytes or more go straight to the sink.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "lib/json_writer.h"
#include "merge/merge.h"

#define OB_DIRECT 65536                 /* pieces this large skip the buffer */

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

void jw_cjson(struct jw *jw, const cJSON *v)
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
			jw_kv_str(&jw, "name", name);
		} else if (strcmp(c->string, "host") && strcmp(c->string, "host_pid")) {
			jw_key(&jw, c->string);
			jw_cjson(&jw, c);
		}
	}
	jw_kv_str(&jw, "host", in->label);
	jw_kv_int(&jw, "host_pid", host_pid);
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

int merge_write_event(struct merge *m, int h, const struct tr_event *ev)
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
				return -EOVERFLOW;
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
			ret = ob_us(m, ts - m->ts_base_ns);
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

int merge_write_missing_names(struct merge *m)
{
	for (size_t i = 0; i < m->nids; i++) {
		const struct ident *e = &m->ids[i];
		struct jw jw;
		char name[320];
		int ret;

		if (!e->seen_pid || e->named)
			continue;
		snprintf(name, sizeof(name), "%s: pid %" PRId64, m->in[e->host].label, e->v);
		ret = ob_str(m, ",\n") ?: ob_flush(m) ?: jw_init(&jw, &m->sink);
		if (ret)
			return ret;
		jw_obj_begin(&jw);
		jw_kv_str(&jw, "ph", "M");
		jw_kv_str(&jw, "name", "process_name");
		jw_kv_int(&jw, "pid", e->nv);
		jw_kv_int(&jw, "tid", e->nv);
		jw_key(&jw, "args");
		jw_obj_begin(&jw);
		jw_kv_str(&jw, "name", name);
		jw_kv_str(&jw, "host", m->in[e->host].label);
		jw_kv_int(&jw, "host_pid", e->v);
		jw_obj_end(&jw);
		jw_obj_end(&jw);
		ret = jw_finish(&jw);
		jw_release(&jw);
		if (ret)
			return ret;
	}
	return 0;
}
