// SPDX-License-Identifier: BSD-2-Clause
/* gpubpf list: the libcuda entry points gpubpf probes. */
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "cuda_calls.h"

int cmd_list(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: gpubpf list\n\n"
		       "Print the probed libcuda entry points, one per line: name, family\n"
		       "and whether the return is probed too (duration and return code).\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "gpubpf: list takes no arguments (see 'gpubpf list --help')\n");
		return 1;
	}
	for (unsigned i = 0; i < cuda_ncalls; i++)
		printf("%-40s %-7s %s\n", cuda_calls[i].name, cuda_family_name(cuda_calls[i].family),
		       cuda_calls[i].ret ? "entry+return" : "entry");
	return 0;
}
