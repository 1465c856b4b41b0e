// SPDX-License-Identifier: BSD-2-Clause
/* A finished model into a file, in the format its name says; see export.h. */
#include <stdio.h>
#include <string.h>

#include "lib/sink.h"
#include "trace/export.h"

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
