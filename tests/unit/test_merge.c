// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests for the streaming trace reader and the collective alignment. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "merge/merge_align.h"
#include "trace/trace_reader.h"
#include "tap.h"

static char path[] = "/tmp/gpubpf-merge-XXXXXX";

static void write_file(const char *s, size_t n)
{
	FILE *f = fopen(path, "w");

	fwrite(s, 1, n, f);
	fclose(f);
}

static void test_numbers(void)
{
	int64_t v;

	ok(!tr_parse_us_ns("1234.567", 8, &v) && v == 1234567, "1234.567 us");
	ok(!tr_parse_us_ns("1234.5678", 9, &v) && v == 1234567, "extra digits truncated");
	ok(!tr_parse_us_ns("-0.5", 4, &v) && v == -500, "negative");
	ok(!tr_parse_us_ns("12", 2, &v) && v == 12000, "integer");
	ok(!tr_parse_us_ns("1.5e3", 5, &v) && v == 1500000, "exponent");
	ok(!tr_parse_us_ns("8999999999999.999", 17, &v) && v == 8999999999999999LL,
	   "past 2^53 ns exactly");
	ok(tr_parse_us_ns("\"1\"", 3, &v) == -EINVAL, "a string is not a time");
	ok(!tr_parse_us_ns("9000000000000000", 16, &v) && v == 9000000000000000000LL,
	   "9e15 us is the largest time");
	ok(!tr_parse_us_ns("-9000000000000000.999", 21, &v) && v == -9000000000000000999LL,
	   "... and its negative, with decimals");
	ok(tr_parse_us_ns("9000000000000001", 16, &v) == -EINVAL, "9e15 + 1 us is out of range");
	ok(tr_parse_us_ns("99999999999999999999", 20, &v) == -EINVAL, "20 digits are out of range");
	ok(tr_parse_us_ns("1e400", 5, &v) == -EINVAL, "1e400 is out of range");
	ok(tr_parse_us_ns("-1e400", 6, &v) == -EINVAL, "-1e400 is out of range");
	ok(tr_parse_us_ns("9e15", 4, &v) == 0 && v == 9000000000000000000LL, "9e15 with an exponent");
	ok(tr_parse_us_ns("1e-400", 6, &v) == 0 && v == 0, "1e-400 is 0");
	ok(!tr_parse_int("1795996760333557281", 19, &v) && v == 1795996760333557281LL,
	   "64-bit integer exact");
	ok(tr_parse_int("1.0", 3, &v) == -EINVAL, "1.0 is not an integer");
}

static void test_reader(void)
{
	struct trace_reader r;
	struct tr_event *ev;
	size_t big = 3 << 20, n;
	char *s = malloc(big + 1024);
	int ret, count = 0;

	/* the "gpubpf" object after the events, an event of 3 MiB, whitespace */
	n = sprintf(s, "{ \"displayTimeUnit\": \"ns\", \"traceEvents\" : [\n"
		    "{\"ph\":\"X\",\"ts\":1.5,\"pid\":1,\"tid\":2,\"args\":{\"s\":\"");
	memset(s + n, 'a', big);
	n += big;
	n += sprintf(s + n, "\"}} ,\n { \"ph\" : \"i\", \"ts\" : 2.25 , \"name\":\"q\\\"\\u00e9\"}\n],"
		     "\"gpubpf\":{\"version\":\"0.1.0\",\"host\":\"h\","
		     "\"realtime_offset_ns\":1795996760333557281,\"events\":2}}\n");
	write_file(s, n);
	ret = trace_reader_open(&r, path);
	is_int(ret, 0, "open a trace with its header last (%s)", trace_reader_errmsg(&r));
	is_str(r.host, "h", "host");
	ok(r.realtime_offset_ns == 1795996760333557281LL, "realtime offset exact");
	while ((ret = trace_reader_next(&r, &ev)) > 0) {
		if (count == 0) {
			ok(ev->len > big && ev->has_ts && ev->ts_ns == 1500,
			   "a 3 MiB event read whole, ts 1500 ns");
			ok(ev->key[TRK_PID] >= 0 && ev->key[TRK_ARGS] == 4, "members located");
		} else {
			ok(ev->ws && ev->ts_ns == 2250 && tr_event_str_is(ev, ev->key[TRK_PH], "i"),
			   "an event with whitespace inside");
		}
		count++;
		free(ev);
	}
	is_int(ret, 0, "end of events");
	is_int(count, 2, "two events");
	trace_reader_close(&r);

	/* gzip, cut short */
	{
		gzFile gz = gzopen(path, "wb");

		gzwrite(gz, s, n);
		gzclose(gz);
		ret = trace_reader_open(&r, path);
		is_int(ret, 0, "gzip input");
		while ((ret = trace_reader_next(&r, &ev)) > 0)
			free(ev);
		is_int(ret, 0, "gzip input read to the end");
		trace_reader_close(&r);
	}
	write_file(s, n - 60);
	ret = trace_reader_open(&r, path);
	ok(ret < 0 && strstr(trace_reader_errmsg(&r), "truncated"), "truncated: %s",
	   trace_reader_errmsg(&r));
	trace_reader_close(&r);
	write_file("{\"gpubpf\":{\"version\":\"0.1.0\",\"realtime_offset_ns\":1},\"traceEvents\":[1]}", 69);
	ret = trace_reader_open(&r, path);
	ok(!ret && trace_reader_next(&r, &ev) == -EINVAL &&
	   strstr(trace_reader_errmsg(&r), "not an object"), "an element that is not an object");
	trace_reader_close(&r);
	free(s);
}

/* "ts" are microseconds after gpubpf.ts_base_ns: the reader adds it, exactly. */
static void test_reader_base(void)
{
	static const char *const bad[] = {
		"\"ts_base_ns\":\"1\"", "\"ts_base_ns\":-5", "\"ts_base_ns\":1.5",
		"\"ts_base_ns\":9000000000000000001",
	};
	struct trace_reader r;
	struct tr_event *ev;
	char s[512];
	int ret, n;

	n = snprintf(s, sizeof(s), "{\"gpubpf\":{\"version\":\"0.1.0\",\"host\":\"h\","
		     "\"realtime_offset_ns\":1,\"ts_base_ns\":17280001000000000},\"traceEvents\":[\n"
		     "{\"ph\":\"X\",\"ts\":0.001,\"dur\":2.5}\n]}\n");
	write_file(s, n);
	ret = trace_reader_open(&r, path);
	is_int(ret, 0, "a trace with a base opens");
	ok(r.ts_base_ns == 17280001000000000LL, "its base is read exactly");
	ret = trace_reader_next(&r, &ev);
	ok(ret == 1 && ev->ts_ns == 17280001000000001LL && ev->dur_ns == 2500,
	   "ts is the base plus the event's ns, exact after 200 days; dur as written");
	if (ret == 1)
		free(ev);
	trace_reader_close(&r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = snprintf(s, sizeof(s), "{\"gpubpf\":{\"version\":\"0.1.0\",\"host\":\"h\","
			     "\"realtime_offset_ns\":1,%s},\"traceEvents\":[]}\n", bad[i]);
		write_file(s, n);
		ret = trace_reader_open(&r, path);
		ok(ret == -EINVAL && strstr(trace_reader_errmsg(&r), "ts_base_ns"),
		   "bad base %s refused: %s", bad[i], trace_reader_errmsg(&r));
		trace_reader_close(&r);
	}
	n = snprintf(s, sizeof(s), "{\"gpubpf\":{\"version\":\"0.1.0\",\"host\":\"h\","
		     "\"realtime_offset_ns\":1,\"ts_base_ns\":8999999999999999000},\"traceEvents\":[\n"
		     "{\"ph\":\"X\",\"ts\":2,\"dur\":1}\n]}\n");
	write_file(s, n);
	ret = trace_reader_open(&r, path);
	ok(!ret && trace_reader_next(&r, &ev) == -EINVAL &&
	   strstr(trace_reader_errmsg(&r), "ts_base_ns"), "base + ts out of range: %s",
	   trace_reader_errmsg(&r));
	trace_reader_close(&r);
}

static void test_align(void)
{
	struct align_names names = {};
	struct align_set ref = {}, host = {};
	struct align_result res;
	uint32_t a, b;

	align_intern(&names, "allreduce", 9, &a);
	align_intern(&names, "allgather", 9, &b);
	align_intern(&names, "allreduce", 9, &a);
	is_int(names.n, 2, "names interned");
	/* irregular gaps; host misses the first two, its clock is 777 ns ahead */
	int64_t t = 1000000;
	for (int k = 0; k < 30; k++) {
		t += 10000 + (k * 7919 % 50000);
		align_add(&ref, k % 3 ? a : b, t);
		if (k >= 2)
			align_add(&host, k % 3 ? a : b, t + 777 + (k % 2 ? 50 : -50));
	}
	align_estimate(&ref, &host, &res);
	ok(res.matched == 28 && res.skew_ns >= 727 && res.skew_ns <= 827,
	   "skew 777 +- 50 ns found past two missed kernels (%lld ns, %llu matched)",
	   (long long)res.skew_ns, (unsigned long long)res.matched);
	align_set_release(&host);
	align_estimate(&ref, &host, &res);
	is_int(res.matched, 0, "nothing to match: no estimate");
	align_set_release(&ref);
	align_names_release(&names);
}

int main(void)
{
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	close(fd);
	test_numbers();
	test_reader();
	test_reader_base();
	test_align();
	unlink(path);
	return done_testing();
}
