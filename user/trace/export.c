// SPDX-License-Identifier: BSD-2-Clause
/* A finished model (or a trace read back) into a file, in the format its name says; see export.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sink.h"
#include "model/model.h"
#include "trace/export.h"
#include "trace/trace_import.h"

const struct exporter *export_for(const char *path)
{
	return sink_format(path) == SINK_PFTRACE ? &export_perfetto : &export_chrome;
}

int export_file(const struct model *m, const struct export_opts *opts, const char *path,
		char *err, size_t errlen)
{
	struct sink out;
	int ret;

	ret = sink_open(&out, path);
	if (!ret)
		ret = export_for(path)->write(m, opts, &out);
	if (ret) {
		snprintf(err, errlen, "%s", sink_errmsg(&out)[0] ? sink_errmsg(&out) : strerror(-ret));
		sink_abort(&out);
		return ret;
	}
	ret = sink_commit(&out);
	if (ret)
		snprintf(err, errlen, "%s", sink_errmsg(&out));
	return ret;
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

void export_parts_free(struct export_parts *p)
{
	if (!p)
		return;
	p->x->parts_free(p->state);
	free(p);
}

int export_convert(const char *in, const struct export_opts *opts, const char *out, char *err,
		   size_t errlen)
{
	struct model m;
	int ret;

	model_init(&m);
	ret = trace_import_file(&m, in, err, errlen) ?: export_file(&m, opts, out, err, errlen);
	model_release(&m);
	return ret;
}
