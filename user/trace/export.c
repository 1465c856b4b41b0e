// SPDX-License-Identifier: BSD-2-Clause
/* A finished model (or a trace read back) into a file, in the format its name says; see export.h. */
#include <stdio.h>
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
