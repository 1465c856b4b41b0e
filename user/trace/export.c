// SPDX-License-Identifier: BSD-2-Clause
/* A finished model (or a trace read back) into a file, in the format its name says; see export.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sink.h"
#include "model/model.h"
#include "model/model_part.h"
#include "trace/export.h"
#include "trace/trace_import.h"

const struct exporter *export_for(const char *path)
{
	return sink_format(path) == SINK_PFTRACE ? &export_perfetto : &export_chrome;
}

/* m whole, or, p set, p's parts and m the last, into path, atomically. */
static int write_file(const struct model *m, const struct export_opts *opts,
		      struct export_parts *p, const char *path, char *err, size_t errlen)
{
	struct sink out;
	int ret = sink_open(&out, path);

	if (!ret)
		ret = p ? export_parts_finish(p, m, &out) : export_for(path)->write(m, opts, &out);
	if (ret) {
		if (sink_errmsg(&out)[0])
			snprintf(err, errlen, "%s", sink_errmsg(&out));
		else
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		sink_abort(&out);
		return ret;
	}
	ret = sink_commit(&out);
	if (ret)
		snprintf(err, errlen, "%s", sink_errmsg(&out));
	return ret;
}

int export_file(const struct model *m, const struct export_opts *opts, const char *path,
		char *err, size_t errlen)
{
	return write_file(m, opts, NULL, path, err, errlen);
}

struct export_parts {
	const struct exporter *x;
	void *state;
};

int export_parts_open(struct export_parts **pp, const char *path, const struct export_opts *opts)
{
	struct export_parts *p = calloc(1, sizeof(*p));

	*pp = p;
	if (!p)
		return -ENOMEM;
	p->x = export_for(path);
	return p->x->parts_open(&p->state, path, opts);
}

int export_parts_add(struct export_parts *p, const struct model *m)
{
	return p->x->parts_add(p->state, m);
}

int export_parts_finish(struct export_parts *p, const struct model *m, struct sink *out)
{
	return p->x->parts_finish(p->state, m, out);
}

unsigned long long export_parts_bytes(const struct export_parts *p)
{
	return p->x->parts_bytes(p->state);
}

int export_parts_write(struct export_parts *p, const struct model *m, const char *path,
		       char *err, size_t errlen)
{
	return write_file(m, NULL, p, path, err, errlen);
}

void export_parts_free(struct export_parts *p)
{
	if (!p)
		return;
	p->x->parts_free(p->state);
	free(p);
}

/*
 * A part of m (a trace read back up to the instant now) into *p, opened
 * for out first; *cut: the events before it are written out.
 */
static int convert_part(struct model *m, struct export_parts **p, const struct export_opts *opts,
			const char *out, uint64_t now, uint64_t *cut)
{
	if (!*p) {
		int ret = export_parts_open(p, out, opts);

		if (ret)
			return ret;
	}
	return model_part_cutoff(m, now, UINT64_MAX, cut) ?: model_part_take(m, *cut) ?:
	       export_parts_add(*p, m) ?: model_part_next(m);
}

int export_convert(const char *in, const struct export_opts *opts, size_t memory, int verbose,
		   const char *out, char *err, size_t errlen)
{
	struct export_parts *p = NULL;
	struct trace_import ti;
	struct model_event ev, *e;
	struct model m;
	size_t spill_at = memory;
	uint64_t now = 0, written = 0;
	int ret;

	if (errlen)
		err[0] = 0;
	model_init(&m);
	ret = trace_import_open(&ti, in, &m);
	while (!ret && (ret = trace_import_next(&ti, &ev)) > 0) {
		if (!(e = model_add_event(&m))) {
			ret = -ENOMEM;
			snprintf(err, errlen, "%s: %s", in, strerror(ENOMEM));
			break;
		}
		*e = ev;
		now = ev.ts > now ? ev.ts : now;
		ret = 0;
		/*
		 * Parts are cut by time: an event before the last cut would be
		 * finished without the calls, scopes and work around it
		 */
		if (ev.ts < written) {
			ret = -EINVAL;
			snprintf(err, errlen, "%s: events out of time order by more than --memory holds "
				 "(one at %.3f us comes after those before %.3f us were written out): "
				 "convert it with a larger --memory", in,
				 (double)(int64_t)(ev.ts - m.ts_base_ns) / 1e3,
				 (double)(int64_t)(written - m.ts_base_ns) / 1e3);
			break;
		}
		if (memory && model_event_bytes(&m) >= spill_at) {
			ret = convert_part(&m, &p, opts, out, now, &written);
			spill_at = model_part_next_at(&m, memory);
			if (ret)
				snprintf(err, errlen, "%s: %s", out, strerror(-ret));
			else if (verbose)
				fprintf(stderr, "gpubpf: part %llu written out (%llu events so far)\n",
					(unsigned long long)m.carry->parts,
					(unsigned long long)m.carry->events);
		}
	}
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", trace_import_errmsg(&ti));
	trace_import_close(&ti);
	if (!ret && (ret = model_finish(&m)))
		snprintf(err, errlen, "%s: %s", in, strerror(-ret));
	if (!ret)
		ret = p ? export_parts_write(p, &m, out, err, errlen)
			: export_file(&m, opts, out, err, errlen);
	export_parts_free(p);
	model_release(&m);
	return ret;
}
