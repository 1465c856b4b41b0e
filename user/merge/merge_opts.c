// SPDX-License-Identifier: BSD-2-Clause
/* gpubpf merge's command line and its usage text; see merge_opts.h. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "merge/merge_opts.h"

#define MAX_TRACES 400  /* 400 * PID_STRIDE (merge.h) < 2^32: merged pids stay uint32 */
#define DEFAULT_WINDOW 4096
#define DEFAULT_WINDOW_BYTES (64ULL << 20)

static const char usage[] =
"usage: gpubpf merge [options] TRACE...\n"
"\n"
"Merge traces recorded on several hosts (gpubpf record, .json, .json.gz or\n"
".pftrace; a .pftrace is converted to JSON beside the output first)\n"
"into one timeline: each host its own group of processes (\"node1: python3\"),\n"
"pids kept apart, clocks aligned with each trace's realtime offset; the\n"
"merged clock is the first trace's.\n"
"\n"
"  -o, --output FILE         merged trace, .json, .json.gz or .pftrace; default\n"
"                            gpubpf-merged-<YYYYmmdd-HHMMSS>.json\n"
"      --align-collectives   refine the alignment with NCCL kernels (cat\n"
"                            \"nccl\"): the k-th kernel of a name ends at the\n"
"                            same instant on every host; the residual skew\n"
"                            per host is reported and removed (reads the\n"
"                            inputs twice)\n"
"      --reorder-window N    events held per input to put a slightly unsorted\n"
"                            input in order (default 4096); an input more out\n"
"                            of order than that is refused\n"
"      --reorder-window-bytes SIZE\n"
"                            and at most SIZE bytes of events per input (K, M,\n"
"                            G suffixes; default 64M; one event is always held)\n"
"  -q, --quiet               no summary on stderr\n"
"  -h, --help                this help\n"
"\n"
"Examples:\n"
"  gpubpf merge -o job.json node1.json.gz node2.json.gz\n"
"  gpubpf merge --align-collectives -o job.json.gz traces/*.json.gz\n"
"\n"
"All traces must come from the same gpubpf major.minor version.  Exit\n"
"status 1, and no output written, when an input is unreadable, not a\n"
"gpubpf trace, holds an event over 256 MiB or a \"ts\" that is not a time\n"
"(1e400).  Invalid UTF-8 in an input's strings becomes U+FFFD.\n";

/* "64M" -> 67108864: bytes with an optional K, M, G or T (powers of 1024). */
static int parse_size(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || !x || x > (1ULL << 40) >> shift)
		return -EINVAL;
	*v = (uint64_t)x << shift;
	return 0;
}

int merge_opts_parse(struct merge_opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "align-collectives", no_argument, NULL, 'A' },
		{ "reorder-window", required_argument, NULL, 'W' },
		{ "reorder-window-bytes", required_argument, NULL, 'B' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	char *end;
	int c;

	o->window = DEFAULT_WINDOW;
	o->window_bytes = DEFAULT_WINDOW_BYTES;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'A':
			o->align = true;
			break;
		case 'W':
			errno = 0;
			o->window = strtoul(optarg, &end, 10);
			if (errno || *end || !o->window || o->window > (1u << 24)) {
				fprintf(stderr, "gpubpf: invalid reorder window '%s' (1 to 16777216 events)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'B':
			if (parse_size(optarg, &o->window_bytes)) {
				fprintf(stderr, "gpubpf: invalid reorder window size '%s' (1 to 1T bytes, K, M, G, T suffixes)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case ':':
			fprintf(stderr, "gpubpf: option '%s' needs a value (see 'gpubpf merge --help')\n",
				argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "gpubpf: unknown option '%s' (see 'gpubpf merge --help')\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	o->paths = &argv[optind];
	o->npaths = argc - optind;
	if (o->npaths < 1) {
		fprintf(stderr, "gpubpf: merge needs at least one trace (see 'gpubpf merge --help')\n");
		return -EINVAL;
	}
	if (o->npaths > MAX_TRACES) {
		fprintf(stderr, "gpubpf: too many traces (%d, at most %d)\n", o->npaths, MAX_TRACES);
		return -EINVAL;
	}
	if (!o->output) {
		time_t t = time(NULL);
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(o->outbuf, sizeof(o->outbuf), "gpubpf-merged-%Y%m%d-%H%M%S.json", &tm);
		o->output = o->outbuf;
	}
	return 0;
}
