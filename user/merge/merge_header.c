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
	m->ts_base_ns = merged_base(m);
	jw_key(&jw, "ts_base_ns");
	jw_int(&jw, m->ts_base_ns);
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
	jw_bool(&jw, m->o->align);
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
		if (m->o->align && (in->align.matched || i == 0))
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
