// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests for the streaming JSON writer (user/lib/json_writer.c). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/json_writer.h"
#include "lib/sink.h"
#include "tap.h"

static char dir[] = "/tmp/gpubpf-jw-XXXXXX";
static char path[256];

struct out {
	struct sink s;
	struct jw jw;
};

static void start(struct out *o)
{
	int ret = sink_open(&o->s, path);

	if (ret) {
		printf("Bail out! sink_open %s: %s\n", path, sink_errmsg(&o->s));
		exit(1);
	}
	if (jw_init(&o->jw, &o->s)) {
		printf("Bail out! jw_init\n");
		exit(1);
	}
}

static char *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (!f)
		return NULL;
	do {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap + 1);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* Finish the document; return the file's contents (malloc'd), *err the result. */
static char *finish(struct out *o, int *err)
{
	int ret = jw_finish(&o->jw);

	jw_release(&o->jw);
	if (ret) {
		sink_abort(&o->s);
		*err = ret;
		return NULL;
	}
	*err = sink_commit(&o->s);
	return *err ? NULL : slurp(path, NULL);
}

/* Write one string value and return the document. */
static char *one_string(const char *s, size_t len)
{
	struct out o;
	int err;

	start(&o);
	jw_strn(&o.jw, s, len);
	return finish(&o, &err);
}

static void check_string(const char *in, size_t len, const char *want,
			 const char *what)
{
	char *got = one_string(in, len);
	cJSON *j = got ? cJSON_Parse(got) : NULL;

	is_str(got, want, "%s: output", what);
	ok(j && cJSON_IsString(j), "%s: parses as a JSON string", what);
	cJSON_Delete(j);
	free(got);
}

/* in is a string literal: its length includes embedded NULs */
#define CHECK(in, want, what) check_string(in, sizeof(in) - 1, want, what)

static void test_escaping(void)
{
	CHECK("plain ascii", "\"plain ascii\"", "plain");
	CHECK("", "\"\"", "empty");
	CHECK("q\"b\\s/", "\"q\\\"b\\\\s/\"", "quote and backslash");
	CHECK("\n\t\r\b\f", "\"\\n\\t\\r\\b\\f\"", "short escapes");
	CHECK("\x01\x1f", "\"\\u0001\\u001f\"", "other control chars");
	CHECK("\x7f", "\"\\u007f\"", "DEL escaped");
	CHECK("a\0b", "\"a\\u0000b\"", "embedded NUL");
}

static void test_utf8(void)
{
	char *got;
	cJSON *j;

	CHECK("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
		     "valid 2, 3, 4 byte sequences kept");
	CHECK("\xef\xbf\xbd", "\"\xef\xbf\xbd\"", "U+FFFD kept");
	CHECK("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"", "U+10FFFF kept");
	CHECK("a\xff" "b", "\"a\xef\xbf\xbd" "b\"", "invalid byte");
	CHECK("\x80", "\"\xef\xbf\xbd\"", "lone continuation");
	CHECK("\xc3(", "\"\xef\xbf\xbd(\"", "missing continuation");
	CHECK("x\xe2\x82", "\"x\xef\xbf\xbd\"",
		     "truncated at end: one U+FFFD");
	CHECK("\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\"", "overlong 2-byte");
	CHECK("\xe0\x80\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
		     "overlong 3-byte");
	CHECK("\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
		     "surrogate");
	CHECK("\xf4\x90\x80\x80",
		     "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
		     "above U+10FFFF");
	CHECK("\xf0\x9f\x98", "\"\xef\xbf\xbd\"", "truncated 4-byte");

	/* garbage of every byte value still yields valid JSON */
	{
		char all[512];

		for (int i = 0; i < 512; i++)
			all[i] = (char)(i * 7 + 3);
		got = one_string(all, sizeof(all));
		j = got ? cJSON_Parse(got) : NULL;
		ok(j && cJSON_IsString(j), "all byte values: valid JSON");
		cJSON_Delete(j);
		free(got);
	}
}

static char *us(uint64_t ns)
{
	struct out o;
	int err;

	start(&o);
	jw_us(&o.jw, ns);
	return finish(&o, &err);
}

static void test_us(void)
{
	static const struct {
		uint64_t ns;
		const char *want;
	} cases[] = {
		{ 0, "0.000" },
		{ 1, "0.001" },
		{ 999, "0.999" },
		{ 1000, "1.000" },
		{ 1001, "1.001" },
		{ 1234567, "1234.567" },
		{ 1700000000123456789ULL, "1700000000123456.789" },
		{ UINT64_MAX, "18446744073709551.615" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = us(cases[i].ns);

		is_str(got, cases[i].want, "jw_us(%llu)", (unsigned long long)cases[i].ns);
		free(got);
	}
}

/* jw_ms through a stdio stream (jw_init_file): exact six decimals. */
static void test_ms_file(void)
{
	static const struct {
		uint64_t ns;
		const char *want;
	} cases[] = {
		{ 0, "0.000000" },
		{ 1, "0.000001" },
		{ 999999, "0.999999" },
		{ 1000000, "1.000000" },
		{ 1234567890, "1234.567890" },
		{ UINT64_MAX, "18446744073709.551615" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		struct jw jw;
		int ret = f ? jw_init_file(&jw, f) : -ENOMEM;

		if (!ret) {
			jw_ms(&jw, cases[i].ns);
			ret = jw_finish(&jw);
			jw_release(&jw);
		}
		if (f)
			fclose(f);
		is_int(ret, 0, "jw_ms(%llu) to a stream: no error", (unsigned long long)cases[i].ns);
		is_str(buf ? buf : "", cases[i].want, "jw_ms(%llu)", (unsigned long long)cases[i].ns);
		free(buf);
	}
}

static void test_numbers(void)
{
	struct out o;
	char *got;
	int err;

	start(&o);
	jw_arr_begin(&o.jw);
	jw_int(&o.jw, 0);
	jw_int(&o.jw, -42);
	jw_int(&o.jw, INT64_MAX);
	jw_int(&o.jw, INT64_MIN);
	jw_uint(&o.jw, UINT64_MAX);
	jw_hex(&o.jw, 0);
	jw_hex(&o.jw, 0x7f00deadbeefULL);
	jw_hex(&o.jw, UINT64_MAX);
	jw_double(&o.jw, 0.5);
	jw_double(&o.jw, 0.1);
	jw_double(&o.jw, -1e300);
	jw_double(&o.jw, NAN);
	jw_double(&o.jw, INFINITY);
	jw_arr_end(&o.jw);
	got = finish(&o, &err);
	is_int(err, 0, "numbers: no error");
	is_str(got, "[0,-42,9223372036854775807,-9223372036854775808,"
		    "18446744073709551615,\"0x0\",\"0x7f00deadbeef\","
		    "\"0xffffffffffffffff\",0.5,0.1,-1e+300,null,null]",
	       "integers, hex, doubles");
	free(got);

	/* doubles round-trip */
	{
		const double vals[] = { 1.0 / 3, 2.0 / 3, 1e-7, 123456789.123456789,
					5e-324, 1.7976931348623157e308 };
		int good = 1;

		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			start(&o);
			jw_double(&o.jw, vals[i]);
			got = finish(&o, &err);
			if (!got || strtod(got, NULL) != vals[i]) {
				diag("%.17g wrote %s", vals[i], got ? got : "(null)");
				good = 0;
			}
			free(got);
		}
		ok(good, "doubles round-trip");
	}
}

/* A value written before, put as it is: separators and keys as for any value. */
static void test_raw(void)
{
	struct out o;
	char *got;
	int err;

	start(&o);
	jw_obj_begin(&o.jw);
	jw_key(&o.jw, "a");
	jw_raw(&o.jw, "[\"x\",\"y\"]", 9);
	jw_kv_int(&o.jw, "b", 1);
	jw_key(&o.jw, "c");
	jw_arr_begin(&o.jw);
	jw_raw(&o.jw, "{}", 2);
	jw_raw(&o.jw, "2", 1);
	jw_arr_end(&o.jw);
	jw_obj_end(&o.jw);
	got = finish(&o, &err);
	is_int(err, 0, "raw: no error");
	is_str(got, "{\"a\":[\"x\",\"y\"],\"b\":1,\"c\":[{},2]}", "raw values in place");
	free(got);
	start(&o);
	jw_obj_begin(&o.jw);
	is_int(jw_raw(&o.jw, "1", 1), -EINVAL, "raw: a value without its key is refused");
	free(finish(&o, &err));
}

static void test_nesting(void)
{
	struct out o;
	char *got;
	cJSON *j;
	int err;

	start(&o);
	jw_obj_begin(&o.jw);
	jw_key(&o.jw, "a");
	jw_arr_begin(&o.jw);
	jw_uint(&o.jw, 1);
	jw_uint(&o.jw, 2);
	jw_obj_begin(&o.jw);
	jw_key(&o.jw, "b");
	jw_null(&o.jw);
	jw_obj_end(&o.jw);
	jw_arr_begin(&o.jw);
	jw_arr_end(&o.jw);
	jw_obj_begin(&o.jw);
	jw_obj_end(&o.jw);
	jw_arr_end(&o.jw);
	jw_key(&o.jw, "c");
	jw_bool(&o.jw, true);
	jw_key(&o.jw, "d");
	jw_bool(&o.jw, false);
	jw_key(&o.jw, "k\"\n");
	jw_str(&o.jw, NULL);
	jw_obj_end(&o.jw);
	got = finish(&o, &err);
	is_int(err, 0, "nesting: no error");
	is_str(got, "{\"a\":[1,2,{\"b\":null},[],{}],\"c\":true,\"d\":false,"
		    "\"k\\\"\\n\":null}", "nesting and commas");
	j = got ? cJSON_Parse(got) : NULL;
	ok(j && cJSON_GetArraySize(cJSON_GetObjectItem(j, "a")) == 5,
	   "nesting: parses back");
	ok(j && cJSON_IsNull(cJSON_GetObjectItem(j, "k\"\n")), "escaped key parses back");
	cJSON_Delete(j);
	free(got);

	start(&o);
	jw_obj_begin(&o.jw);
	jw_key(&o.jw, "ev");
	jw_arr_begin_lines(&o.jw);
	jw_uint(&o.jw, 1);
	jw_obj_begin(&o.jw);
	jw_obj_end(&o.jw);
	jw_arr_end(&o.jw);
	jw_key(&o.jw, "none");
	jw_arr_begin_lines(&o.jw);
	jw_arr_end(&o.jw);
	jw_obj_end(&o.jw);
	got = finish(&o, &err);
	is_str(got, "{\"ev\":[\n1,\n{}\n],\"none\":[]}", "one element per line");
	free(got);
}

static void test_errors(void)
{
	struct out o;
	int ret;

	unlink(path);
	start(&o);
	jw_obj_begin(&o.jw);
	ret = jw_uint(&o.jw, 1);
	is_int(ret, -EINVAL, "value without key in object: -EINVAL");
	is_int(jw_key(&o.jw, "a"), -EINVAL, "error is sticky");
	is_int(jw_error(&o.jw), -EINVAL, "jw_error reports it");
	jw_release(&o.jw);
	sink_abort(&o.s);

	start(&o);
	jw_arr_begin(&o.jw);
	is_int(jw_key(&o.jw, "a"), -EINVAL, "key in array: -EINVAL");
	jw_release(&o.jw);
	sink_abort(&o.s);

	start(&o);
	jw_arr_begin(&o.jw);
	is_int(jw_obj_end(&o.jw), -EINVAL, "mismatched end: -EINVAL");
	jw_release(&o.jw);
	sink_abort(&o.s);

	start(&o);
	jw_obj_begin(&o.jw);
	jw_key(&o.jw, "a");
	is_int(jw_obj_end(&o.jw), -EINVAL, "key without value: -EINVAL");
	jw_release(&o.jw);
	sink_abort(&o.s);

	start(&o);
	jw_arr_begin(&o.jw);
	is_int(jw_finish(&o.jw), -EINVAL, "unclosed document: jw_finish -EINVAL");
	jw_release(&o.jw);
	sink_abort(&o.s);

	start(&o);
	jw_null(&o.jw);
	is_int(jw_null(&o.jw), -EINVAL, "second top-level value: -EINVAL");
	jw_release(&o.jw);
	sink_abort(&o.s);

	start(&o);
	ret = 0;
	for (int i = 0; i <= JW_MAX_DEPTH && !ret; i++)
		ret = jw_arr_begin(&o.jw);
	is_int(ret, -EOVERFLOW, "nesting deeper than JW_MAX_DEPTH: -EOVERFLOW");
	jw_release(&o.jw);
	sink_abort(&o.s);

	ok(access(path, F_OK) < 0 && rmdir(dir) == 0 && mkdir(dir, 0700) == 0,
	   "aborted documents leave no file, no temporary");
}

/* Many values and strings longer than the buffers: content survives. */
static void test_large(void)
{
	size_t n = 300 * 1000;
	char *big = malloc(n + 1), *got;
	struct out o;
	cJSON *j, *a;
	int err, good = 1;

	for (size_t i = 0; i < n; i++)
		big[i] = "ab\"\\\n\x01xyz"[i % 9];
	big[n] = '\0';
	start(&o);
	jw_arr_begin(&o.jw);
	jw_str(&o.jw, big);
	for (unsigned i = 0; i < 100000; i++)
		jw_uint(&o.jw, i);
	jw_arr_end(&o.jw);
	got = finish(&o, &err);
	is_int(err, 0, "large document: no error");
	j = got ? cJSON_Parse(got) : NULL;
	a = j ? cJSON_GetArrayItem(j, 0) : NULL;
	ok(a && cJSON_IsString(a) && !strcmp(a->valuestring, big),
	   "300 KB escaped string round-trips");
	ok(j && cJSON_GetArraySize(j) == 100001, "100000 numbers after it");
	for (int i = 0; j && i < 100000 && good; i += 997)
		good = cJSON_GetArrayItem(j, i + 1)->valuedouble == i;
	ok(j && good, "numbers in order");
	cJSON_Delete(j);
	free(got);
	free(big);
}

/* A string past the writer's buffer in one piece, to a file and to a sink. */
static void test_large_plain(void)
{
	size_t n = 200 * 1000;
	char *big = malloc(n + 3), *got = NULL, *want = malloc(n + 3);
	size_t len = 0;
	FILE *f = open_memstream(&got, &len);
	struct jw jw;
	struct out o;
	int ret, err;

	memset(big, 'k', n);
	big[n] = '\0';
	snprintf(want, n + 3, "\"%s\"", big);
	ret = f ? jw_init_file(&jw, f) : -ENOMEM;
	if (!ret) {
		jw_str(&jw, big);
		ret = jw_finish(&jw);
		jw_release(&jw);
	}
	if (f)
		fclose(f);
	is_int(ret, 0, "200 KB plain string to a stream: no error");
	ok(got && len == n + 2 && !strcmp(got, want), "it is written whole (%zu bytes)", len);
	free(got);

	start(&o);
	jw_str(&o.jw, big);
	got = finish(&o, &err);
	is_int(err, 0, "200 KB plain string to a sink: no error");
	ok(got && !strcmp(got, want), "it is written whole");
	free(got);
	free(want);
	free(big);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/out.json", dir);

	test_escaping();
	test_utf8();
	test_us();
	test_ms_file();
	test_numbers();
	test_raw();
	test_nesting();
	test_errors();
	test_large();
	test_large_plain();

	unlink(path);
	rmdir(dir);
	return done_testing();
}
