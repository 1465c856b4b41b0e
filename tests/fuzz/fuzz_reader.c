// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer target for the trace readers: arbitrary bytes as a trace file
 * (plain or gzip), read by
 *   - trace_reader (every event, then a rewind and a second pass), checking
 *     what it promises: spans inside the event's text, the text NUL-ended
 *     and valid UTF-8, "ts"/"dur" within +-9e15 us;
 *   - report's loader and every analysis and output (text, JSON, SVG);
 *   - the importer, into a whole finished model, exported again: the
 *     export succeeds, strict UTF-8;
 *   - merge (with --align-collectives, so the input is read twice), on
 *     inputs the reader accepts: when it succeeds its output must be strict
 *     UTF-8 and read back by the reader; when it fails, no output is left.
 * A broken promise traps, so libFuzzer reports it like a sanitizer finding.
 *
 *	make asan && build/fuzz/fuzz_reader -max_total_time=20 CORPUS tests/fuzz/corpus
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commands.h"
#include "lib/json_writer.h"
#include "lib/sink.h"
#include "report/report.h"
#include "trace/export.h"
#include "trace/trace_import.h"
#include "trace/trace_reader.h"

#define must(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static int in_fd = -1;
static char in_path[64];
static char out_dir[4096], out_path[4200];

static void cleanup(void)
{
	unlink(out_path);
	rmdir(out_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	in_fd = memfd_create("trace", 0);
	if (in_fd < 0) {
		perror("memfd_create");
		exit(1);
	}
	snprintf(in_path, sizeof(in_path), "/proc/self/fd/%d", in_fd);
	/* merge's output: $GPUBPF_FUZZ_TMPDIR (t0710's own, removed after a
	 * crash too), else /dev/shm (no disk for its fsync) */
	const char *tmp = getenv("GPUBPF_FUZZ_TMPDIR");

	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
	snprintf(out_dir, sizeof(out_dir), "%.4000s/gpubpf-fuzz.XXXXXX", tmp);
	if (!mkdtemp(out_dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(out_path, sizeof(out_path), "%s/m.json", out_dir);
	atexit(cleanup);
	return 0;
}

static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k, bad;

		if (s[i] < 0x80) {
			i++;
			continue;
		}
		k = utf8_seq(s + i, n - i, &bad);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* Read every event of path; returns the reader's result (0 or -errno). */
static int read_all(const char *path, bool check_rewind)
{
	struct trace_reader r;
	struct tr_event *ev;
	uint64_t n1 = 0, n2 = 0;
	int ret;

	ret = trace_reader_open(&r, path);
	if (ret < 0)
		goto out;
	for (int pass = 0; pass < (check_rewind ? 2 : 1); pass++) {
		if (pass && (ret = trace_reader_rewind(&r)) < 0)
			goto out;
		while ((ret = trace_reader_next(&r, &ev)) > 0) {
			must(ev->text[ev->len] == '\0');
			must(ev->text[0] == '{' && ev->text[ev->len - 1] == '}');
			must(utf8_ok((const unsigned char *)ev->text, ev->len));
			for (uint32_t i = 0; i < ev->nmembers; i++) {
				const struct tr_member *m = &ev->m[i];

				must(m->key.off + m->key.len <= ev->len);
				must(m->val.off + m->val.len <= ev->len);
				must(m->val.len > 0);
			}
			if (ev->has_ts)
				must(ev->ts_ns >= -9000000000000000000LL &&
				     ev->ts_ns <= 9000000000000000000LL);
			if (ev->has_dur)
				must(ev->dur_ns >= -9000000000000000000LL &&
				     ev->dur_ns <= 9000000000000000000LL);
			must(ev->key[TRK_TS] < 0 || ev->has_ts);
			*(pass ? &n2 : &n1) += 1;
			free(ev);
		}
		if (ret < 0)
			goto out;
	}
	if (check_rewind)
		must(n1 == n2);
out:
	must(ret <= 0);
	must(ret == 0 || trace_reader_errmsg(&r)[0]);
	trace_reader_close(&r);
	return ret;
}

static void report_all(void)
{
	struct rt_table t;
	struct report rep;
	char err[600], *buf = NULL;
	size_t len = 0;
	FILE *f;

	memset(&rep, 0, sizeof(rep));
	if (rt_load(&t, in_path, err, sizeof(err)) == 0 &&
	    report_analyze(&t, &rep) == 0) {
		f = open_memstream(&buf, &len);
		must(f);
		report_text(&t, &rep, f);
		report_json(&t, &rep, f);
		report_svg(&t, &rep, f);
		fclose(f);
		free(buf);
	}
	report_release(&rep);
	rt_release(&t);
}

/* A file written: not empty, strict UTF-8. */
static void must_be_utf8(const char *path)
{
	unsigned char *text = malloc(64 << 20);
	ssize_t n;
	int fd = open(path, O_RDONLY);

	must(fd >= 0 && text);
	n = read(fd, text, 64 << 20);
	close(fd);
	must(n > 0 && utf8_ok(text, n));
	free(text);
}

static void import_all(void)
{
	struct model m;
	struct sink out;
	char err[700];

	model_init(&m);
	if (trace_import_file(&m, in_path, err, sizeof(err)) == 0) {
		must(sink_open_plain(&out, out_path) == 0);
		must(export_chrome.write(&m, &(struct export_opts){ 0 }, &out) == 0);
		must(sink_commit(&out) == 0);
		must_be_utf8(out_path);
		unlink(out_path);
	} else {
		must(err[0] && !strchr(err, '\n'));
	}
	model_release(&m);
}

static void merge_all(void)
{
	char *argv[] = { "merge", "-q", "--align-collectives", "-o", out_path, in_path, NULL };

	if (cmd_merge(6, argv) != 0) {
		must(access(out_path, F_OK) != 0);      /* never half-written */
		return;
	}
	must_be_utf8(out_path);
	must(read_all(out_path, false) == 0);
	unlink(out_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (ftruncate(in_fd, 0) || pwrite(in_fd, data, size, 0) != (ssize_t)size)
		abort();
	int ret = read_all(in_path, true);

	report_all();
	import_all();
	if (ret == 0)   /* else merge stops at the same reader error */
		merge_all();
	return 0;
}
