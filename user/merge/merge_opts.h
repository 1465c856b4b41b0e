/* SPDX-License-Identifier: BSD-2-Clause */
/* gpubpf merge's command line: the traces, the output, the reorder window. */
#ifndef GPUBPF_MERGE_OPTS_H
#define GPUBPF_MERGE_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct merge_opts {
	char **paths;                   /* the traces, npaths of them */
	int npaths;
	const char *output;
	char outbuf[64];                /* the default output's name */
	bool align;                     /* --align-collectives */
	size_t window;                  /* events per input */
	uint64_t window_bytes;          /* bytes of events per input */
	int quiet;
};

/*
 * Fill o from argv (defaults first; without -o, a name made from the
 * time).  --help prints the usage and exits.  0, or -EINVAL with the reason
 * on stderr.
 */
int merge_opts_parse(struct merge_opts *o, int argc, char **argv);

#endif
