// SPDX-License-Identifier: BSD-2-Clause
/*
 * Streaming reader of gpubpf traces: see trace_reader.h.
 *
 * A small JSON scanner checks the grammar and finds where each value ends
 * over the buffered bytes; when a value runs past the buffered data the
 * buffer is refilled (grown if one value needs it) and the value scanned
 * again from its start, so the scanner itself keeps no state across reads.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <cjson/cJSON.h>

#include "lib/array.h"
#include "lib/json_writer.h"
#include "trace/schema.h"
#include "trace/pftrace_reader.h"
#include "trace/trace_reader.h"

#define TR_BUFSZ (1u << 20)
#define TR_MAX_VALUE (256u << 20)       /* one event (or the header) at most */
#define TR_MAX_BUF (TR_MAX_VALUE + TR_BUFSZ)    /* the buffer at most */
#define TR_MAX_DEPTH 512

enum { SC_OK, SC_MORE, SC_BAD };

struct scan {
	const char *p, *end;
	const char *err_at;
	const char *what;               /* why SC_BAD */
	bool ws;                        /* whitespace seen between tokens */
	bool bad_utf8;                  /* a string holds invalid UTF-8 or a surrogate escape */
	int depth;
};

static int bad(struct scan *s, const char *at, const char *what)
{
	s->err_at = at;
	s->what = what;
	return SC_BAD;
}

static inline bool is_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

static inline void skip_ws(struct scan *s)
{
	const char *p = s->p;

	while (p < s->end && is_ws(*p))
		p++;
	if (p != s->p)
		s->ws = true;
	s->p = p;
}

/* Bytes that end the fast path inside a string: '"', '\\', controls, non-ASCII. */
static const unsigned char str_stop[256] = {
	[0x00 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The UTF-8 sequence at p (a byte >= 0x80): its length, or of the
 * ill-formed bytes to skip (then s->bad_utf8 is set), or 0 when it runs
 * past the data (more may complete it).
 */
static size_t scan_utf8(struct scan *s, const char *p, const char *end)
{
	size_t bad_len, n = utf8_seq((const unsigned char *)p, end - p, &bad_len);

	if (n)
		return n;
	if (p + bad_len >= end)
		return 0;
	s->bad_utf8 = true;
	return bad_len;
}

static int hex4(const char *p)
{
	return hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]);
}

/*
 * At a \u escape (6 bytes at p, hex digits checked): 0 if it is not of a
 * surrogate; else how many bytes the escapes of its character take (12
 * for a pair, *cp its code point; 6 for half a pair without the other,
 * *cp U+FFFD), -1 when the bytes that tell run past end.  Perfetto refuses
 * both in a JSON trace, so they are written as UTF-8 (utf8_fix()).
 */
static int surrogate_escape(const char *p, const char *end, uint32_t *cp)
{
	int u = hex4(p + 2), v;

	*cp = 0xfffd;
	if (u < 0xd800 || u > 0xdfff)
		return 0;
	if (u >= 0xdc00)
		return 6;               /* a second half first */
	if (p + 8 > end)
		return -1;
	if (p[6] != '\\' || p[7] != 'u')
		return 6;
	if (p + 12 > end)
		return -1;
	for (int i = 8; i < 12; i++)
		if (hexval(p[i]) < 0)
			return 6;       /* and the next escape is an error */
	v = hex4(p + 8);
	if (v < 0xdc00 || v > 0xdfff)
		return 6;
	*cp = 0x10000 + ((uint32_t)(u - 0xd800) << 10) + (uint32_t)(v - 0xdc00);
	return 12;
}

/* The rest of a string from p, after a byte of str_stop that is not '"'. */
static __attribute__((noinline)) int scan_string_from(struct scan *s, const char *p)
{
	const char *end = s->end;
	uint32_t cp;
	int n;

	for (;;) {
		while (p < end && !str_stop[(unsigned char)*p])
			p++;
		if (p >= end)
			return SC_MORE;
		if (*p == '"') {
			s->p = p + 1;
			return SC_OK;
		}
		if ((unsigned char)*p >= 0x80) {
			size_t k = scan_utf8(s, p, end);

			if (!k)
				return SC_MORE;
			p += k;
			continue;
		}
		if ((unsigned char)*p < 0x20)
			return bad(s, p, "control character in a string");
		/* backslash */
		if (p + 1 >= end)
			return SC_MORE;
		switch (p[1]) {
		case '"': case '\\': case '/': case 'b': case 'f':
		case 'n': case 'r': case 't':
			p += 2;
			break;
		case 'u':
			if (p + 6 > end)
				return SC_MORE;
			for (int i = 2; i < 6; i++)
				if (hexval(p[i]) < 0)
					return bad(s, p, "invalid \\u escape");
			n = surrogate_escape(p, end, &cp);
			if (n < 0)
				return SC_MORE;
			if (n)                  /* rewritten with the UTF-8 (utf8_fix()) */
				s->bad_utf8 = true;
			p += n ? n : 6;
			break;
		default:
			return bad(s, p, "invalid escape in a string");
		}
	}
}

/* At '"'.  Plain ASCII stays in this loop; the rest goes out of line. */
static int scan_string(struct scan *s)
{
	const char *p = s->p + 1, *end = s->end;

	while (p < end && !str_stop[(unsigned char)*p])
		p++;
	if (p < end && *p == '"') {
		s->p = p + 1;
		return SC_OK;
	}
	return scan_string_from(s, p);
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* At '-' or a digit.  A number touching the end of the data needs more. */
static int scan_number(struct scan *s)
{
	const char *p = s->p, *end = s->end;

	if (*p == '-')
		p++;
	if (p >= end)
		return SC_MORE;
	if (*p == '0') {
		p++;
	} else if (is_digit(*p)) {
		while (p < end && is_digit(*p))
			p++;
	} else {
		return bad(s, p, "invalid number");
	}
	if (p < end && *p == '.') {
		p++;
		if (p >= end)
			return SC_MORE;
		if (!is_digit(*p))
			return bad(s, p, "invalid number");
		while (p < end && is_digit(*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end)
			return SC_MORE;
		if (!is_digit(*p))
			return bad(s, p, "invalid number");
		while (p < end && is_digit(*p))
			p++;
	}
	if (p >= end)
		return SC_MORE;
	s->p = p;
	return SC_OK;
}

static int scan_literal(struct scan *s, const char *lit)
{
	size_t n = strlen(lit), have = s->end - s->p;

	if (memcmp(s->p, lit, have < n ? have : n))
		return bad(s, s->p, "unexpected character");
	if (have < n)
		return SC_MORE;
	s->p += n;
	return SC_OK;
}

static int scan_value(struct scan *s, struct trace_reader *members);

/*
 * At '{'.  With r, the members of this (outermost) object are recorded
 * in r->mtmp, offsets relative to base.
 */
static int scan_object(struct scan *s, struct trace_reader *r, const char *base,
		       uint32_t *nmembers)
{
	const char *kstart;
	uint32_t n = 0;
	int ret;

	if (++s->depth > TR_MAX_DEPTH)
		return bad(s, s->p, "nested too deeply");
	s->p++;
	skip_ws(s);
	if (s->p >= s->end)
		return SC_MORE;
	if (*s->p == '}') {
		s->p++;
		goto done;
	}
	for (;;) {
		if (*s->p != '"')
			return bad(s, s->p, "expected a string key");
		kstart = s->p;
		ret = scan_string(s);
		if (ret)
			return ret;
		if (r) {
			if (array_grow(&r->mtmp, &r->mcap, n + 1))
				return bad(s, s->p, "out of memory");
			r->mtmp[n].key.off = kstart + 1 - base;
			r->mtmp[n].key.len = s->p - kstart - 2;
		}
		skip_ws(s);
		if (s->p >= s->end)
			return SC_MORE;
		if (*s->p != ':')
			return bad(s, s->p, "expected ':'");
		s->p++;
		skip_ws(s);
		if (s->p >= s->end)
			return SC_MORE;
		if (r)
			r->mtmp[n].val.off = s->p - base;
		ret = scan_value(s, NULL);
		if (ret)
			return ret;
		if (r)
			r->mtmp[n].val.len = s->p - base - r->mtmp[n].val.off;
		n++;
		skip_ws(s);
		if (s->p >= s->end)
			return SC_MORE;
		if (*s->p == '}') {
			s->p++;
			break;
		}
		if (*s->p != ',')
			return bad(s, s->p, "expected ',' or '}'");
		s->p++;
		skip_ws(s);
		if (s->p >= s->end)
			return SC_MORE;
	}
done:
	s->depth--;
	if (nmembers)
		*nmembers = n;
	return SC_OK;
}

static int scan_array(struct scan *s)
{
	int ret;

	if (++s->depth > TR_MAX_DEPTH)
		return bad(s, s->p, "nested too deeply");
	s->p++;
	skip_ws(s);
	if (s->p >= s->end)
		return SC_MORE;
	if (*s->p == ']') {
		s->p++;
		goto done;
	}
	for (;;) {
		ret = scan_value(s, NULL);
		if (ret)
			return ret;
		skip_ws(s);
		if (s->p >= s->end)
			return SC_MORE;
		if (*s->p == ']') {
			s->p++;
			break;
		}
		if (*s->p != ',')
			return bad(s, s->p, "expected ',' or ']'");
		s->p++;
		skip_ws(s);
		if (s->p >= s->end)
			return SC_MORE;
	}
done:
	s->depth--;
	return SC_OK;
}

/* At the first byte of a value (not whitespace, not the end). */
static int scan_value(struct scan *s, struct trace_reader *unused)
{
	switch (*s->p) {
	case '{':
		return scan_object(s, NULL, NULL, NULL);
	case '[':
		return scan_array(s);
	case '"':
		return scan_string(s);
	case 't':
		return scan_literal(s, "true");
	case 'f':
		return scan_literal(s, "false");
	case 'n':
		return scan_literal(s, "null");
	default:
		if (*s->p == '-' || is_digit(*s->p))
			return scan_number(s);
		return bad(s, s->p, "unexpected character");
	}
}

/* --- numbers ------------------------------------------------------------ */

int tr_parse_int(const char *s, size_t len, int64_t *v)
{
	const char *p = s, *end = s + len;
	bool neg = false;
	uint64_t x = 0;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= end)
		return -EINVAL;
	for (; p < end; p++) {
		if (!is_digit(*p))
			return -EINVAL;
		if (x > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		x = x * 10 + (*p - '0');
	}
	if (x > (uint64_t)INT64_MAX)
		return -EINVAL;
	*v = neg ? -(int64_t)x : (int64_t)x;
	return 0;
}

int tr_parse_us_ns(const char *s, size_t len, int64_t *ns)
{
	const char *p = s, *end = s + len;
	bool neg = false;
	uint64_t us = 0, frac = 0;
	int fd = 0;

	if (!len)
		return -EINVAL;
	if (memchr(s, 'e', len) || memchr(s, 'E', len)) {
		char buf[64];
		double d;

		if (len >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, s, len);
		buf[len] = '\0';
		d = strtod(buf, NULL) * 1000.0;
		if (!(d >= -9e18 && d <= 9e18))
			return -EINVAL;
		*ns = (int64_t)d;
		return 0;
	}
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (p >= end || !is_digit(*p))
		return -EINVAL;
	for (; p < end && is_digit(*p); p++) {
		if (us > 9000000000000000ULL / 10)
			return -EINVAL;             /* over 9e15 us */
		us = us * 10 + (*p - '0');
	}
	if (p < end && *p == '.') {
		p++;
		for (; p < end && is_digit(*p); p++)
			if (fd < 3) {
				frac = frac * 10 + (*p - '0');
				fd++;
			}
	}
	if (p != end || us > 9000000000000000ULL)
		return -EINVAL;
	for (; fd < 3; fd++)
		frac *= 10;
	*ns = (int64_t)(us * 1000 + frac);
	if (neg)
		*ns = -*ns;
	return 0;
}

/* --- the reader --------------------------------------------------------- */

static int set_msg(struct trace_reader *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_msg(struct trace_reader *r, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(r->msg, sizeof(r->msg), "%s: ", r->path ? r->path : "?");
	if (n < 0 || (size_t)n >= sizeof(r->msg))
		return err;
	va_start(ap, fmt);
	vsnprintf(r->msg + n, sizeof(r->msg) - n, fmt, ap);
	va_end(ap);
	return err;
}

/* The value at buf[start] is over TR_MAX_VALUE. */
static int too_big(struct trace_reader *r)
{
	if (r->state == TR_EVENTS)
		return set_msg(r, -EFBIG, "the event at line %llu is over %u MiB (the most one event may hold)",
			       (unsigned long long)r->line, TR_MAX_VALUE >> 20);
	return set_msg(r, -EFBIG, "a JSON value at line %llu is over %u MiB",
		       (unsigned long long)r->line, TR_MAX_VALUE >> 20);
}

/* Read more data; returns bytes added, 0 at end of file, or -errno. */
static int fill(struct trace_reader *r)
{
	int n, zerr;
	const char *zmsg;

	if (r->eof)
		return 0;
	if (r->start) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->cap > TR_BUFSZ && r->end < TR_BUFSZ / 2) {
		/* back to the usual size after a large value */
		char *b = realloc(r->buf, TR_BUFSZ + 1);

		if (b) {
			r->buf = b;
			r->cap = TR_BUFSZ;
		}
	}
	if (r->end == r->cap) {
		size_t cap = r->cap * 2 < TR_MAX_BUF ? r->cap * 2 : TR_MAX_BUF;
		char *b;

		if (r->cap >= TR_MAX_BUF)
			return too_big(r);
		b = realloc(r->buf, cap + 1);
		if (!b)
			return set_msg(r, -ENOMEM, "out of memory");
		r->buf = b;
		r->cap = cap;
	}
	n = gzread(r->gz, r->buf + r->end, (unsigned)(r->cap - r->end));
	if (n < 0) {
		zmsg = gzerror(r->gz, &zerr);
		if (zerr == Z_ERRNO)
			return set_msg(r, -errno ? -errno : -EIO, "cannot read: %s",
				       strerror(errno ? errno : EIO));
		return set_msg(r, -EINVAL, "corrupt compressed data (%s)",
			       zmsg && *zmsg ? zmsg : "zlib error");
	}
	if (n == 0) {
		/* zlib reports a gzip stream cut short only through gzerror */
		zmsg = gzerror(r->gz, &zerr);
		if (zerr == Z_BUF_ERROR)
			return set_msg(r, -EINVAL, "truncated (compressed data ends early)");
		if (zerr != Z_OK && zerr != Z_STREAM_END)
			return set_msg(r, -EINVAL, "corrupt compressed data (%s)",
				       zmsg && *zmsg ? zmsg : "zlib error");
		r->eof = true;
	}
	r->end += n;
	r->buf[r->end] = '\0';
	return n;
}

/* Mark buf[start, p) as read. */
static void consume(struct trace_reader *r, const char *p)
{
	const char *q = r->buf + r->start, *e = p;

	while ((q = memchr(q, '\n', e - q))) {
		r->line++;
		q++;
	}
	r->start = p - r->buf;
}

static uint64_t line_at(const struct trace_reader *r, const char *at)
{
	uint64_t line = r->line;
	const char *q = r->buf + r->start;

	while (q < at && (q = memchr(q, '\n', at - q))) {
		line++;
		q++;
	}
	return line;
}

static int truncated(struct trace_reader *r)
{
	if (r->state == TR_EVENTS)
		return set_msg(r, -EINVAL,
			       "truncated (the file ends inside \"traceEvents\" after %llu events, line %llu)",
			       (unsigned long long)r->nevents, (unsigned long long)r->line);
	return set_msg(r, -EINVAL, "truncated (the file ends inside the JSON, line %llu)",
		       (unsigned long long)r->line);
}

static int scan_failed(struct trace_reader *r, const struct scan *s)
{
	char c = *s->err_at;

	if (r->state == TR_HEADER && s->err_at == r->buf && r->line == 1)
		return set_msg(r, -EINVAL, "not JSON (it begins with '%c')",
			       c >= 0x20 && c < 0x7f ? c : '?');
	if (c >= 0x20 && c < 0x7f)
		return set_msg(r, -EINVAL, "invalid JSON at line %llu: %s at '%c'",
			       (unsigned long long)line_at(r, s->err_at), s->what, c);
	return set_msg(r, -EINVAL, "invalid JSON at line %llu: %s",
		       (unsigned long long)line_at(r, s->err_at), s->what);
}

/*
 * The next non-whitespace byte (not consumed), refilling as needed.
 * Returns the byte, -1 at the end of the file, or -errno (< -1).
 */
static int peek(struct trace_reader *r)
{
	for (;;) {
		const char *p = r->buf + r->start, *e = r->buf + r->end;
		int n;

		while (p < e && is_ws(*p))
			p++;
		consume(r, p);
		if (p < e)
			return (unsigned char)*p;
		n = fill(r);
		if (n < 0)
			return n == -1 ? -EIO : n;
		if (n == 0)
			return -1;
	}
}

/*
 * Scan one value at buf[start] (a non-whitespace byte); with members,
 * record an object's members in r->mtmp.  On success *voff and *vlen
 * delimit it in the buffer (valid until the next fill).  Returns 0 or
 * -errno with the message set.
 */
static int scan_at(struct trace_reader *r, bool members, uint32_t *nmembers,
		   struct scan *out, size_t *voff, size_t *vlen)
{
	for (;;) {
		struct scan s = {
			.p = r->buf + r->start, .end = r->buf + r->end,
		};
		int ret, n;

		if (members) {
			if (*s.p != '{')
				return set_msg(r, -EINVAL,
					       "an element of \"traceEvents\" is not an object (line %llu)",
					       (unsigned long long)r->line);
			ret = scan_object(&s, r, s.p, nmembers);
		} else {
			ret = scan_value(&s, NULL);
		}
		if (ret == SC_OK) {
			*voff = r->start;
			*vlen = s.p - (r->buf + r->start);
			if (*vlen > TR_MAX_VALUE)
				return too_big(r);
			if (out)
				*out = s;
			return 0;
		}
		if (ret == SC_BAD)
			return scan_failed(r, &s);
		if (r->end - r->start > TR_MAX_VALUE)
			return too_big(r);
		n = fill(r);
		if (n < 0)
			return n;
		if (n == 0)
			return truncated(r);
	}
}

/* Expect byte c next (after whitespace) and consume it. */
static int expect(struct trace_reader *r, char c, const char *where)
{
	int p = peek(r);

	if (p < -1)
		return p;
	if (p == -1)
		return truncated(r);
	if (p != c)
		return set_msg(r, -EINVAL, "invalid JSON at line %llu: expected '%c' %s",
			       (unsigned long long)r->line, c, where);
	r->start++;
	return 0;
}


/* Read a string key and the ':' after it; the key (raw, cut to keylen). */
static int read_key(struct trace_reader *r, char *key, size_t keylen)
{
	size_t off, len, n;
	int c, ret;

	c = peek(r);
	if (c < -1)
		return c;
	if (c == -1)
		return truncated(r);
	if (c != '"')
		return set_msg(r, -EINVAL, "invalid JSON at line %llu: expected a string key",
			       (unsigned long long)r->line);
	ret = scan_at(r, false, NULL, NULL, &off, &len);
	if (ret)
		return ret;
	n = len - 2 < keylen - 1 ? len - 2 : keylen - 1;
	memcpy(key, r->buf + off + 1, n);
	key[n] = '\0';
	consume(r, r->buf + off + len);
	return expect(r, ':', "after a key");
}

static const cJSON *member(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* The "gpubpf" object: parse it and check what merging needs. */

/* The integer member key of the "gpubpf" object (its n members scanned
 * from text), exactly; *found false when absent.  -EINVAL, message set,
 * when it is not an integer. */
static int meta_int(struct trace_reader *r, const char *text, uint32_t n, const char *key,
		    int64_t *v, bool *found)
{
	size_t klen = strlen(key);

	*found = false;
	for (uint32_t i = 0; i < n; i++) {
		const struct tr_member *m = &r->mtmp[i];

		if (m->key.len != klen || memcmp(text + m->key.off, key, klen))
			continue;
		*found = true;
		if (tr_parse_int(text + m->val.off, m->val.len, v))
			return set_msg(r, -EINVAL, "%s in the \"gpubpf\" object is not an integer",
				       key);
		return 0;
	}
	return 0;
}
static int parse_meta(struct trace_reader *r, const char *text, size_t len)
{
	struct scan s = { .p = text, .end = text + len };
	const cJSON *v;
	uint32_t n = 0;
	bool found;
	int ret;

	if (*text != '{')
		return set_msg(r, -EINVAL, "not a gpubpf trace (\"gpubpf\" is not an object)");
	r->meta = cJSON_ParseWithLength(text, len);
	if (!r->meta)
		return set_msg(r, -ENOMEM, "cannot parse the \"gpubpf\" object");
	v = member(r->meta, TS_META_VERSION);
	if (!cJSON_IsString(v) || !*v->valuestring)
		return set_msg(r, -EINVAL, "the \"gpubpf\" object has no version");
	snprintf(r->version, sizeof(r->version), "%s", v->valuestring);
	v = member(r->meta, TS_META_HOST);
	if (cJSON_IsString(v))
		snprintf(r->host, sizeof(r->host), "%s", v->valuestring);
	/* counts: ignored unless they fit (converting 1e30 is undefined) */
	v = member(r->meta, TS_META_EVENTS);
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 0x1p64)
		r->events = (uint64_t)v->valuedouble;
	v = member(r->meta, TS_META_DROPPED_TOTAL);
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 0x1p64)
		r->dropped_total = (uint64_t)v->valuedouble;

	/* the offset and the base are ~1e18 ns: read their text, a double
	 * would round them */
	ret = scan_object(&s, r, text, &n);
	if (ret != SC_OK)
		return set_msg(r, -EINVAL, "cannot parse the \"gpubpf\" object");
	if (meta_int(r, text, n, TS_META_REALTIME, &r->realtime_offset_ns, &found))
		return -EINVAL;
	if (!found)
		return set_msg(r, -EINVAL,
			       "the \"gpubpf\" object has no realtime_offset_ns (cannot align its clock)");
	if (meta_int(r, text, n, TS_META_TS_BASE, &r->ts_base_ns, &found))
		return -EINVAL;
	if (r->ts_base_ns < 0 || r->ts_base_ns > TR_MAX_TS_NS)
		return set_msg(r, -EINVAL, "ts_base_ns in the \"gpubpf\" object is out of range");
	return 0;
}

/*
 * The members of the top-level object, from after '{' or after the
 * "traceEvents" array (tail).  Stops at "traceEvents" (entering
 * TR_EVENTS) or at the end of the object (TR_DONE, nothing may follow).
 */
static int read_members(struct trace_reader *r, bool tail)
{
	char key[64];
	size_t off, len;
	int c, ret;

	c = peek(r);
	if (c < -1)
		return c;
	if (tail) {
		if (c == ',') {
			r->start++;
		} else if (c != '}') {
			return set_msg(r, -EINVAL, "invalid JSON at line %llu: expected ',' or '}'",
				       (unsigned long long)r->line);
		}
	}
	if (c == '}')
		goto end;
	for (;;) {
		ret = read_key(r, key, sizeof(key));
		if (ret)
			return ret;
		c = peek(r);
		if (c < -1)
			return c;
		if (c == -1)
			return truncated(r);
		if (!strcmp(key, TS_TRACE_EVENTS) && !tail) {
			if (c != '[')
				return set_msg(r, -EINVAL, "\"traceEvents\" is not an array (line %llu)",
					       (unsigned long long)r->line);
			r->start++;
			r->state = TR_EVENTS;
			r->first = true;
			return 0;
		}
		ret = scan_at(r, false, NULL, NULL, &off, &len);
		if (ret)
			return ret;
		if (!strcmp(key, TS_META) && !r->meta) {
			ret = parse_meta(r, r->buf + off, len);
			if (ret)
				return ret;
		}
		consume(r, r->buf + off + len);
		c = peek(r);
		if (c < -1)
			return c;
		if (c == -1)
			return truncated(r);
		if (c == '}')
			break;
		if (c != ',')
			return set_msg(r, -EINVAL, "invalid JSON at line %llu: expected ',' or '}'",
				       (unsigned long long)r->line);
		r->start++;
	}
end:
	r->start++;
	r->state = TR_DONE;
	c = peek(r);
	if (c < -1)
		return c;
	if (c != -1)
		return set_msg(r, -EINVAL, "data after the end of the JSON object (line %llu)",
			       (unsigned long long)r->line);
	if (!tail)
		return r->meta ? set_msg(r, -EINVAL, "no \"traceEvents\" array") :
			set_msg(r, -EINVAL, "not a gpubpf trace (no \"gpubpf\" object)");
	return 0;
}

static int read_header(struct trace_reader *r)
{
	int c = peek(r);

	if (c < -1)
		return c;
	if (c == -1)
		return set_msg(r, -EINVAL, "empty file");
	if (c == '[')
		return set_msg(r, -EINVAL,
			       "not a gpubpf trace (a JSON array of events, no \"gpubpf\" object)");
	if (c != '{')
		return set_msg(r, -EINVAL, "not JSON (it begins with '%c')",
			       c >= 0x20 && c < 0x7f ? c : '?');
	r->start++;
	return read_members(r, false);
}

static int key_index(const char *k, uint32_t len)
{
#define K(s, i) if (len == sizeof(s) - 1 && !memcmp(k, s, len)) return i
	switch (k[0]) {
	case 'p':
		K(TS_KEY_PH, TRK_PH);
		K(TS_KEY_PID, TRK_PID);
		break;
	case 'c':
		K(TS_KEY_CAT, TRK_CAT);
		break;
	case 'n':
		K(TS_KEY_NAME, TRK_NAME);
		break;
	case 't':
		K(TS_KEY_TS, TRK_TS);
		K(TS_KEY_TID, TRK_TID);
		break;
	case 'd':
		K(TS_KEY_DUR, TRK_DUR);
		break;
	case 'i':
		K(TS_KEY_ID, TRK_ID);
		break;
	case 'b':
		K(TS_KEY_BIND_ID, TRK_BIND_ID);
		break;
	case 'a':
		K(TS_KEY_ARGS, TRK_ARGS);
		break;
	}
#undef K
	return -1;
}

/*
 * Copy text (len bytes) to out replacing each invalid UTF-8 sequence by
 * U+FFFD, and each \u escape of a surrogate by its character in UTF-8 (a
 * pair's, or U+FFFD for half of one); the length of the result, which
 * out (NULL: only count) must have room for.  Bytes >= 0x80 and
 * backslashes only occur inside strings (the grammar was checked), so the
 * result is the same JSON with valid strings.
 */
static size_t utf8_fix(char *out, const char *text, size_t len)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t i = 0, o = 0, k, bad;
	uint32_t cp;

	while (i < len) {
		if (p[i] == '\\' && i + 1 < len) {
			int n = p[i + 1] == 'u' && i + 6 <= len ?
				surrogate_escape(text + i, text + len, &cp) : 0;

			if (n > 0) {
				o += utf8_put(out ? out + o : NULL, cp);
				i += n;
			} else {
				if (out)
					memcpy(out + o, p + i, 2);
				o += 2;
				i += 2;
			}
		} else if (p[i] < 0x80) {
			if (out)
				out[o] = p[i];
			o++;
			i++;
		} else if ((k = utf8_seq(p + i, len - i, &bad))) {
			if (out)
				memcpy(out + o, p + i, k);
			o += k;
			i += k;
		} else {
			if (out)
				memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i += bad;
		}
	}
	return o;
}

/*
 * "ts" or "dur" of ev: absent is fine, anything but a number of
 * microseconds within +-9e15 (285 years) is an error: it could not be
 * moved to another clock, nor compared (and the caller refuses a
 * negative "dur": a slice that ends before it starts).
 */
static int read_time(struct trace_reader *r, const struct tr_event *ev, int key,
		     const char *name, bool *has, int64_t *ns)
{
	const struct tr_span *v;
	const char *p;

	*has = false;
	*ns = 0;
	if (ev->key[key] < 0)
		return 0;
	v = &ev->m[ev->key[key]].val;
	p = ev->text + v->off;
	if (*p != '-' && !is_digit(*p))
		return set_msg(r, -EINVAL, "\"%s\" of the event at line %llu is not a number",
			       name, (unsigned long long)ev->line);
	if (tr_parse_us_ns(p, v->len, ns))
		return set_msg(r, -EINVAL,
			       "\"%s\" of the event at line %llu is out of range (%.*s%s; at most 9e15 us)",
			       name, (unsigned long long)ev->line, v->len > 40 ? 40 : (int)v->len, p,
			       v->len > 40 ? "..." : "");
	*has = true;
	return 0;
}

/*
 * The event of text (len bytes: one JSON object whose nm members scan_*()
 * left in r->mtmp; bad_utf8: it has invalid UTF-8 to repair), first read
 * at line.  0 or -errno with the message set.
 */
static int make_event(struct trace_reader *r, const char *text, size_t len, uint32_t nm,
		      bool bad_utf8, bool ws, uint64_t line, struct tr_event **evp)
{
	size_t tlen = bad_utf8 ? utf8_fix(NULL, text, len) : len;
	struct tr_event *ev;
	int ret;

	if (tlen > TR_MAX_VALUE)
		return too_big(r);
	ev = malloc(sizeof(*ev) + nm * sizeof(*ev->m) + tlen + 1);
	if (!ev)
		return set_msg(r, -ENOMEM, "out of memory");
	ev->m = (struct tr_member *)(ev + 1);
	ev->text = (char *)(ev->m + nm);
	if (bad_utf8) {
		/* the members move: find them again in the repaired text */
		struct scan s2 = { .p = ev->text, .end = ev->text + tlen };
		uint32_t nm2 = 0;

		utf8_fix(ev->text, text, len);
		ev->text[tlen] = '\0';
		if (scan_object(&s2, r, ev->text, &nm2) != SC_OK || nm2 != nm) {
			free(ev);
			return set_msg(r, -EINVAL, "cannot repair the UTF-8 of the event at line %llu",
				       (unsigned long long)line);
		}
	} else {
		memcpy(ev->text, text, len);
		ev->text[len] = '\0';
	}
	ev->len = tlen;
	ev->nmembers = nm;
	ev->ws = ws;
	ev->line = line;
	ev->has_ts = ev->has_dur = false;
	ev->ts_ns = ev->dur_ns = 0;
	if (nm)         /* an empty object: no members, and mtmp may be NULL */
		memcpy(ev->m, r->mtmp, nm * sizeof(*ev->m));
	for (int k = 0; k < TRK_NKEYS; k++)
		ev->key[k] = -1;
	for (uint32_t i = 0; i < nm; i++) {
		int k = key_index(ev->text + ev->m[i].key.off, ev->m[i].key.len);

		if (k >= 0 && ev->key[k] < 0 && i < INT16_MAX)
			ev->key[k] = i;
	}
	ret = read_time(r, ev, TRK_TS, "ts", &ev->has_ts, &ev->ts_ns) ?:
	      read_time(r, ev, TRK_DUR, "dur", &ev->has_dur, &ev->dur_ns);
	if (!ret && ev->has_dur && ev->dur_ns < 0)
		ret = set_msg(r, -EINVAL, "\"dur\" of the event at line %llu is negative",
			      (unsigned long long)line);
	if (!ret && ev->has_ts && (__builtin_add_overflow(ev->ts_ns, r->ts_base_ns, &ev->ts_ns) ||
				   ev->ts_ns > TR_MAX_TS_NS))
		ret = set_msg(r, -EINVAL, "\"ts\" of the event at line %llu is out of range "
			      "once ts_base_ns is added", (unsigned long long)line);
	if (ret) {
		free(ev);
		return ret;
	}
	*evp = ev;
	return 0;
}

/* The next event of a .pftrace, as JSON (pftrace_reader.h); "line" is its packet. */
static int next_pftrace_event(struct trace_reader *r, struct tr_event **evp)
{
	const char *text;
	struct scan s;
	uint32_t nm = 0;
	size_t len;
	int ret = pf_reader_next(r->pf, &text, &len);

	if (ret < 0)
		return set_msg(r, ret, "%s", r->pfmsg);
	if (!ret) {
		r->state = TR_DONE;
		return 0;
	}
	s = (struct scan){ .p = text, .end = text + len };
	if (scan_object(&s, r, text, &nm) != SC_OK)
		return set_msg(r, -EINVAL, "cannot read packet %llu back",
			       (unsigned long long)pf_reader_packets(r->pf));
	ret = make_event(r, text, len, nm, false, false, pf_reader_packets(r->pf), evp);
	if (ret)
		return ret;
	r->nevents++;
	return 1;
}

int trace_reader_next(struct trace_reader *r, struct tr_event **evp)
{
	uint64_t line;
	size_t off, len;
	uint32_t nm = 0;
	struct scan sc;
	int c, ret;

	*evp = NULL;
	if (r->state == TR_DONE)
		return 0;
	if (r->state != TR_EVENTS)
		return set_msg(r, -EINVAL, "reader not at the events");
	if (r->pf)
		return next_pftrace_event(r, evp);
	c = peek(r);
	if (c < -1)
		return c;
	if (c == -1)
		return truncated(r);
	if (c == ']') {
		r->start++;
		r->state = TR_TAIL;
		ret = read_members(r, true);
		return ret ? ret : 0;
	}
	if (!r->first) {
		if (c != ',')
			return set_msg(r, -EINVAL, "invalid JSON at line %llu: expected ',' or ']'",
				       (unsigned long long)r->line);
		r->start++;
		c = peek(r);
		if (c < -1)
			return c;
		if (c == -1)
			return truncated(r);
	}
	r->first = false;
	line = r->line;
	ret = scan_at(r, true, &nm, &sc, &off, &len);
	if (ret)
		return ret;
	ret = make_event(r, r->buf + off, len, nm, sc.bad_utf8, sc.ws, line, evp);
	if (ret)
		return ret;
	consume(r, r->buf + off + len);
	r->nevents++;
	return 1;
}

/* A .pftrace from its start: its metadata read, at the events. */
static int open_pftrace(struct trace_reader *r)
{
	const char *meta;
	size_t len;
	int ret;

	ret = pf_reader_open(&r->pf, r->gz, r->pfmsg, sizeof(r->pfmsg));
	if (ret)
		return set_msg(r, ret, "%s", r->pfmsg);
	meta = pf_reader_meta(r->pf, &len);
	ret = parse_meta(r, meta, len);
	if (ret)
		return ret;
	r->state = TR_EVENTS;
	return 0;
}

static int restart(struct trace_reader *r)
{
	if (gzrewind(r->gz) < 0)
		return set_msg(r, -EIO, "cannot rewind");
	r->start = r->end = 0;
	r->eof = false;
	r->line = 1;
	r->state = TR_HEADER;
	r->nevents = 0;
	if (r->pf) {
		pf_reader_close(r->pf);
		r->pf = NULL;
		cJSON_Delete(r->meta);
		r->meta = NULL;
		return open_pftrace(r);
	}
	return read_header(r);
}

int trace_reader_open(struct trace_reader *r, const char *path)
{
	struct tr_event *ev;
	int ret;

	memset(r, 0, sizeof(*r));
	r->line = 1;
	r->path = strdup(path ? path : "");
	r->cap = TR_BUFSZ;
	r->buf = malloc(r->cap + 1);
	if (!r->path || !r->buf)
		return set_msg(r, -ENOMEM, "out of memory");
	r->gz = gzopen(path, "rb");
	if (!r->gz) {
		ret = errno ? -errno : -ENOMEM;
		return set_msg(r, ret, "cannot open: %s", strerror(-ret));
	}
	gzbuffer(r->gz, 256 * 1024);
	ret = fill(r);
	if (ret < 0)
		return ret;
	if (pf_sniff((const unsigned char *)r->buf, r->end)) {
		if (gzrewind(r->gz) < 0)
			return set_msg(r, -EIO, "cannot rewind");
		r->start = r->end = 0;
		return open_pftrace(r);
	}
	ret = read_header(r);
	if (ret)
		return ret;
	if (r->meta)
		return 0;
	/* no "gpubpf" object before the events: look after them */
	while ((ret = trace_reader_next(r, &ev)) > 0)
		free(ev);
	if (ret < 0)
		return ret;
	if (!r->meta)
		return set_msg(r, -EINVAL, "not a gpubpf trace (no \"gpubpf\" object)");
	return restart(r);
}

bool trace_reader_is_pftrace(const char *path)
{
	unsigned char head[64];
	gzFile gz = gzopen(path, "rb");
	int n = gz ? gzread(gz, head, sizeof(head)) : -1;

	if (gz)
		gzclose(gz);
	return n > 0 && pf_sniff(head, n);
}

int trace_reader_rewind(struct trace_reader *r)
{
	return restart(r);
}

void trace_reader_close(struct trace_reader *r)
{
	if (!r)
		return;
	pf_reader_close(r->pf);
	r->pf = NULL;
	if (r->gz)
		gzclose(r->gz);
	r->gz = NULL;
	free(r->buf);
	r->buf = NULL;
	free(r->mtmp);
	r->mtmp = NULL;
	r->mcap = 0;
	cJSON_Delete(r->meta);
	r->meta = NULL;
	free(r->path);
	r->path = NULL;
}

const char *trace_reader_errmsg(const struct trace_reader *r)
{
	return r->msg;
}

uint64_t trace_reader_offset(const struct trace_reader *r)
{
	return r->gz ? (uint64_t)gzoffset(r->gz) : 0;
}

int tr_event_find(const struct tr_event *ev, const char *key)
{
	size_t n = strlen(key);

	for (uint32_t i = 0; i < ev->nmembers; i++)
		if (ev->m[i].key.len == n && !memcmp(ev->text + ev->m[i].key.off, key, n))
			return (int)i;
	return -1;
}

bool tr_event_str_is(const struct tr_event *ev, int i, const char *s)
{
	size_t n = strlen(s);
	const struct tr_span *v;

	if (i < 0)
		return false;
	v = &ev->m[i].val;
	return v->len == n + 2 && ev->text[v->off] == '"' &&
	       !memcmp(ev->text + v->off + 1, s, n);
}
