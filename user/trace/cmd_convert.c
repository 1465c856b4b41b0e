// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf convert IN OUT: a trace into another format.  IN (a gpubpf
 * trace, .json, .json.gz or .pftrace) is read back into the model (trace_import.h),
 * which is then exported as OUT's extension says (.json, .json.gz,
 * .pftrace), written atomically: on any error OUT is not written.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "lib/sink.h"
#include "trace/export.h"

static const char usage[] =
	"usage: gpubpf convert IN OUT\n"
	"\n"
	"Convert a trace written by 'gpubpf record' or 'gpubpf merge' (IN: .json,\n"
	".json.gz or .pftrace) into the format OUT's name says: .json, .json.gz, or .pftrace\n"
	"(Perfetto's protobuf: a fraction of the size, opens in ui.perfetto.dev).\n";

int cmd_convert(int argc, char **argv)
{
	struct export_opts opts = { 0 };
	char err[600];

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc != 3) {
		fputs(usage, stderr);
		return 1;
	}
	if (sink_check_path(argv[2], err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		return 1;
	}
	if (export_convert(argv[1], &opts, argv[2], err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		return 1;
	}
	return 0;
}
