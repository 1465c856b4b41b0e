// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf merge's header: the merged "gpubpf" object (the reference clock,
 * the hosts with their shifts and skews, the inputs' counts summed) and
 * the start of "traceEvents".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "lib/json_writer.h"
#include "merge/merge.h"
#include "trace/schema.h"

#ifndef GPUBPF_VERSION
#define GPUBPF_VERSION "unknown"
#endif

/*
 * The members of an input's "gpubpf" object that merge does not handle
 * itself (e.g. the "gpu" counters of GPU timing), copied as they are.
 */
static void write_other_meta(struct jw *jw, const cJSON *meta)
{
	static const char *const known[] = {
		TS_META_VERSION, TS_META_CLOCK, TS_META_REALTIME, TS_META_HOST, TS_META_DROPPED,
		TS_META_DROPPED_TOTAL, TS_META_EVENTS, TS_MERGE_FILE, TS_MERGE_TRACE_HOST,
		TS_MERGE_CLOCK_SHIFT, TS_MERGE_SKEW, TS_MERGE_SKEW_SPREAD, TS_MERGE_MATCHED,
		TS_MERGE_SHIFT, TS_MERGE_PID_BASE,
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

/*
 * The whole second at or before every input's base on the merged clock
 * (0 at the lowest): the merged "ts" count from it, small and exact.
 */
static int64_t merged_base(const struct merge *m)
{
	int64_t base = INT64_MAX;

	for (int i = 0; i < m->nin; i++) {
		int64_t b;

		if (!shift_ts(m->in[i].r.ts_base_ns, m->in[i].shift_ns, &b) && b < base)
			base = b;
	}
	if (base == INT64_MAX || base < 0)
		return 0;
	return base - base % 1000000000;
}

int merge_write_header(struct merge *m)
{
	uint64_t events = 0, dropped = 0;
	struct jw jw;
	char key[32];
	int ret;

	ret = sink_write(&m->sink, TS_OPEN_META, strlen(TS_OPEN_META)) ?: jw_init(&jw, &m->sink);
	if (ret)
		return ret;
	for (int i = 0; i < m->nin; i++) {
		events += m->in[i].r.events;
		dropped += m->in[i].r.dropped_total;
	}
	jw_obj_begin(&jw);
	jw_kv_str(&jw, TS_META_VERSION, GPUBPF_VERSION);
	jw_kv_str(&jw, TS_META_CLOCK, "CLOCK_MONOTONIC");
	jw_kv_str(&jw, TS_META_CLOCK_HOST, m->in[0].label);
	jw_kv_int(&jw, TS_META_REALTIME, m->realtime_offset_ns);
	m->ts_base_ns = merged_base(m);
	jw_kv_int(&jw, TS_META_TS_BASE, m->ts_base_ns);
	jw_key(&jw, TS_META_HOST);
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
	jw_key(&jw, TS_META_DROPPED);
	jw_obj_begin(&jw);
	for (int i = 0; i < m->nin; i++) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(m->in[i].r.meta,
								  TS_META_DROPPED), *c;

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
	jw_kv_uint(&jw, TS_META_DROPPED_TOTAL, dropped);
	jw_key(&jw, TS_META_EVENTS);          /* the inputs' own counts, summed */
	jw_uint(&jw, events);
	jw_key(&jw, TS_META_MERGE);
	jw_obj_begin(&jw);
	jw_kv_str(&jw, TS_MERGE_REFERENCE, m->in[0].label);
	jw_kv_int(&jw, TS_MERGE_CLOCK_ADDED, m->clock_added_ns);
	jw_kv_bool(&jw, TS_MERGE_ALIGNED, m->o->align);
	jw_kv_int(&jw, TS_MERGE_PID_STRIDE, PID_STRIDE);
	jw_key(&jw, TS_MERGE_HOSTS);
	jw_arr_begin(&jw);
	for (int i = 0; i < m->nin; i++) {
		const struct input *in = &m->in[i];

		jw_obj_begin(&jw);
		jw_kv_str(&jw, TS_META_HOST, in->label);
		jw_kv_str(&jw, TS_MERGE_TRACE_HOST, in->r.host);
		jw_kv_str(&jw, TS_MERGE_FILE, in->path);
		jw_kv_str(&jw, TS_META_VERSION, in->r.version);
		jw_kv_int(&jw, TS_META_REALTIME, in->r.realtime_offset_ns);
		jw_kv_int(&jw, TS_MERGE_CLOCK_SHIFT, in->clock_shift_ns);
		jw_key(&jw, TS_MERGE_SKEW);
		if (m->o->align && (in->align.matched || i == 0))
			jw_int(&jw, in->align.skew_ns);
		else
			jw_null(&jw);
		jw_kv_int(&jw, TS_MERGE_SKEW_SPREAD, in->align.spread_ns);
		jw_kv_uint(&jw, TS_MERGE_MATCHED, in->align.matched);
		jw_kv_int(&jw, TS_MERGE_SHIFT, in->shift_ns);
		jw_kv_int(&jw, TS_MERGE_PID_BASE, i * PID_STRIDE);
		jw_kv_uint(&jw, TS_META_EVENTS, in->r.events);
		jw_kv_uint(&jw, TS_META_DROPPED_TOTAL, in->r.dropped_total);
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
	return sink_write(&m->sink, TS_OPEN_EVENTS, strlen(TS_OPEN_EVENTS));
}
