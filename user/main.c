// SPDX-License-Identifier: BSD-2-Clause
/* gpubpf: the command table. */
#include <stdio.h>
#include <string.h>
#include "commands.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "record", cmd_record, "trace CUDA driver calls into a timeline" },
	{ "list", cmd_list, "list the probed libcuda entry points" },
	{ "merge", cmd_merge, "merge traces of several hosts into one timeline" },
	{ "report", cmd_report, "diagnose a trace: GPU usage, idle causes, syncs, memory" },
	{ "convert", cmd_convert, "convert a trace between formats (.json, .json.gz, .pftrace)" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gpubpf <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'gpubpf <command> --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("gpubpf %s\n", GPUBPF_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "gpubpf: unknown command '%s' (see 'gpubpf --help')\n", argv[1]);
	return 1;
}
