/* SPDX-License-Identifier: BSD-2-Clause */
/* gpubpf record's command line: what to trace, how, and where to write it. */
#ifndef GPUBPF_RECORD_OPTS_H
#define GPUBPF_RECORD_OPTS_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include "trace/export.h"

enum record_mode { MODE_PIDS, MODE_ALL, MODE_CMD };

#define RECORD_MAX_OUTPUTS 4

struct record_opts {
	enum record_mode mode;
	pid_t *pids;            /* -p, npids of them */
	int npids;
	char **cmd;             /* -- CMD [ARGS...], NULL-terminated */
	uint64_t duration_ns;   /* 0: until stopped */
	const char *outputs[RECORD_MAX_OUTPUTS];  /* -o, one per format; none: a name
						     made from the target and the time */
	int noutputs;
	const char *libcuda;    /* --libcuda, or NULL: the discovered one */
	uint64_t ringbuf;       /* ring buffer bytes */
	uint64_t memory;        /* event bytes held before older ones are written out */
	int device;             /* GPU timing through the injection library */
	int inject;             /* late attach: load it into -p/-a targets that lack it */
	char injlib[PATH_MAX];  /* its path */
	int verbose;
	int quiet;              /* no report at the end */
	int stacks;             /* walk Python stacks */
	int native;             /* capture native stacks */
	uint32_t stack_depth;
	int states;             /* thread states from the scheduler */
	uint32_t sample_hz;     /* CPU-clock samples per second, 0: none */
	int autograd;           /* probe PyTorch's autograd nodes (libtorch) */
	struct export_opts export;
};

/*
 * Fill o from argv (defaults first).  --help prints the usage and exits.
 * 0, or -EINVAL with the reason on stderr.  Free with record_opts_release().
 */
int record_opts_parse(struct record_opts *o, int argc, char **argv);

/*
 * What the options name must be usable: the --libcuda file readable, the
 * output writable.  The injection library is looked for beside gpubpf
 * when not given; GPU timing is turned off, said why, without one, or
 * when -- CMD already has another in CUDA_INJECTION64_PATH.  0 or -EINVAL.
 */
int record_opts_check(struct record_opts *o);

void record_opts_release(struct record_opts *o);

#endif
