// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf convert [--memory SIZE] [-v] IN OUT: a trace into another format.  IN
 * (a gpubpf trace, .json, .json.gz or .pftrace) is read back into the
 * model (trace_import.h), in parts past SIZE bytes of events held, which
 * is exported as OUT's extension says (.json, .json.gz, .pftrace), written
 * atomically: on any error OUT is not written.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "lib/parse.h"
#include "lib/sink.h"
#include "model/model_part.h"
#include "trace/export.h"

static const char usage[] =
	"usage: gpubpf convert [--memory SIZE] [-v] IN OUT\n"
	"\n"
	"Convert a trace written by 'gpubpf record' or 'gpubpf merge' (IN: .json,\n"
	".json.gz or .pftrace) into the format OUT's name says: .json, .json.gz, or .pftrace\n"
	"(Perfetto's protobuf: a fraction of the size, opens in ui.perfetto.dev).\n"
	"\n"
	"  --memory SIZE   events held in memory (default 64M, at least 1M): past it\n"
	"                  the older ones are written out beside OUT and merged into it\n"
	"                  at the end, so that a trace of any size converts\n"
	"  -v              say each part written out\n";

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "memory", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct export_opts eo = { 0 };
	uint64_t memory = MODEL_PART_MEMORY;
	char err[600];
	int c, verbose = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hv", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_size(optarg, &memory) || memory < MODEL_PART_MIN_MEMORY) {
				fprintf(stderr, "gpubpf: invalid memory size '%s' (use e.g. 512M, "
					"at least 1M)\n", optarg);
				return 1;
			}
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "gpubpf: %s '%s' (see 'gpubpf convert --help')\n",
				c == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
			return 1;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "gpubpf: convert needs a trace and an output file (see 'gpubpf "
			"convert --help')\n");
		return 1;
	}
	if (sink_check_path(argv[optind + 1], err, sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		return 1;
	}
	if (sink_same_file(argv[optind + 1], argv[optind])) {
		fprintf(stderr, "gpubpf: '%s' is both the trace read and the output: write it "
			"elsewhere\n", argv[optind + 1]);
		return 1;
	}
	if (export_convert(argv[optind], &eo, memory, verbose, argv[optind + 1], err,
			   sizeof(err))) {
		fprintf(stderr, "gpubpf: %s\n", err);
		return 1;
	}
	return 0;
}
