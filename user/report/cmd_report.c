// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpubpf report TRACE [--format text|json] [-o FILE] [--memory-svg FILE]:
 * the diagnosis of a trace (see report.h).  Outputs are built in memory
 * and written under a temporary name, then renamed: on any error nothing
 * is written.  Also the same report of the model record has just built,
 * without reading back the trace it wrote.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "report/report.h"
#include "lib/sink.h"

static const char usage[] =
	"usage: gpubpf report TRACE [--format text|json] [-o FILE] [--memory-svg FILE]\n"
	"\n"
	"Diagnose a trace written by 'gpubpf record' (.json, .json.gz or .pftrace): GPU usage\n"
	"and why the GPU idled (host-bound, sync-bound, other), sync hotspots by\n"
	"Python line, launch-bound streams, communication overlap, top kernels and\n"
	"driver calls, iterations, device memory and its peak.\n"
	"\n"
	"  --format FMT       text (default) or json\n"
	"  -o, --output FILE  write the report to FILE instead of standard output\n"
	"  --memory-svg FILE  also draw device memory over time (address blocks\n"
	"                     from alloc to free, coloured by call site) as SVG\n";

/*
 * Write buf to path as a whole or not at all (a temporary file renamed,
 * user/lib/sink.c); on failure say why, once, and return -errno.
 */
static int write_file(const char *path, const char *buf, size_t len)
{
	struct sink out;
	int ret = sink_open_plain(&out, path);

	if (!ret)
		ret = sink_write(&out, buf, len);
	if (!ret)
		ret = sink_commit(&out);
	else
		sink_abort(&out);
	if (ret)
		fprintf(stderr, "gpubpf: %s\n", sink_errmsg(&out));
	return ret;
}

/* Analyse t, filled from the trace at path (ret: how that went), print its text to f; release t. */
static int print_table(struct rt_table *t, const char *path, FILE *f, int ret)
{
	struct report r = { 0 };

	if (!ret)
		ret = report_analyze(t, &r);
	if (ret)
		fprintf(stderr, "gpubpf: report of %s: %s\n", path, strerror(-ret));
	else
		ret = report_text(t, &r, f);
	report_release(&r);
	rt_release(t);
	return ret;
}

int report_print_model(const struct model *m, const char *path, FILE *f)
{
	struct rt_table t;
	int ret = 0;

	rt_init(&t, path);
	for (size_t i = 0; i < m->nev && !ret; i++)
		ret = rt_add(&t, m, &m->ev[i]);
	if (!ret)
		ret = rt_finish(&t, m);
	return print_table(&t, path, f, ret);
}

int report_print_file(const char *path, FILE *f)
{
	struct rt_table t;
	char err[600];
	int ret = rt_load(&t, path, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "gpubpf: report: %s\n", err);
		rt_release(&t);
		return ret;
	}
	return print_table(&t, path, f, 0);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "memory-svg", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *out = NULL, *svg = NULL, *trace;
	int c, json = 0, ret, status = 1;
	struct rt_table t;
	struct report r = { 0 };
	char err[600], *buf = NULL, *sbuf = NULL;
	size_t len = 0, slen = 0;
	FILE *f;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "json"))
				json = 1;
			else if (strcmp(optarg, "text")) {
				fprintf(stderr, "gpubpf: unknown report format '%s' (use text or json)\n",
					optarg);
				return 1;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'm':
			svg = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "gpubpf: %s '%s' (see 'gpubpf report --help')\n",
				c == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
			return 1;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "gpubpf: report needs exactly one trace file (see 'gpubpf report --help')\n");
		return 1;
	}
	trace = argv[optind];
	for (int i = 0; i < 2; i++) {
		const char *p = i ? svg : out;

		if (p && sink_check_path_plain(p, err, sizeof(err))) {
			fprintf(stderr, "gpubpf: %s\n", err);
			return 1;
		}
		if (p && sink_same_file(p, trace)) {
			fprintf(stderr, "gpubpf: %s '%s' is the trace being read: write the report "
				"elsewhere\n", i ? "--memory-svg" : "-o", p);
			return 1;
		}
	}
	ret = rt_load(&t, trace, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "gpubpf: %s\n", err);
		goto out;
	}
	ret = report_analyze(&t, &r);
	if (ret) {
		fprintf(stderr, "gpubpf: %s: %s\n", trace, strerror(-ret));
		goto out;
	}
	f = open_memstream(&buf, &len);
	if (!f)
		goto nomem;
	ret = json ? report_json(&t, &r, f) : report_text(&t, &r, f);
	if (fclose(f) || ret)
		goto nomem;
	if (svg) {
		f = open_memstream(&sbuf, &slen);
		if (!f)
			goto nomem;
		ret = report_svg(&t, &r, f);
		if (fclose(f) || ret)
			goto nomem;
	}
	if (svg && write_file(svg, sbuf, slen))
		goto out;
	if (out) {
		if (write_file(out, buf, len)) {
			if (svg)
				unlink(svg);
			goto out;
		}
	} else if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
		fprintf(stderr, "gpubpf: cannot write the report to standard output: %s\n",
			strerror(errno));
		if (svg)
			unlink(svg);
		goto out;
	}
	status = 0;
	goto out;
nomem:
	fprintf(stderr, "gpubpf: %s: out of memory\n", trace);
out:
	free(buf);
	free(sbuf);
	report_release(&r);
	rt_release(&t);
	return status;
}
