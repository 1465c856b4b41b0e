// SPDX-License-Identifier: BSD-2-Clause
/* A streaming JSON writer: see json_writer.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json_writer.h"
#include "lib/sink.h"

#define JW_BUFSZ (64 * 1024)

/* Per-container flags in jw->level[]. */
enum {
	JW_L_OBJ = 1 << 0,      /* an object (else an array) */
	JW_L_FIRST = 1 << 1,    /* no member written yet */
	JW_L_LINES = 1 << 2,    /* one member per line */
};

/*
 * Bytes copied as they are inside a string: printable ASCII except '"'
 * and '\\'.  Everything else is escaped or checked as UTF-8.  DEL (0x7f)
 * is valid JSON but escaped too: Perfetto's tokenizer rejects raw
 * control characters (iscntrl) in strings.
 */
static const unsigned char plain[256] = {
	[0x20 ... 0x21] = 1,    /* '"' is 0x22 */
	[0x23 ... 0x5b] = 1,    /* '\\' is 0x5c */
	[0x5d ... 0x7e] = 1,
};

static const char hexdig[] = "0123456789abcdef";

static int fail(struct jw *jw, int err)
{
	if (!jw->err)
		jw->err = err;
	return jw->err;
}

int jw_init(struct jw *jw, struct sink *out)
{
	memset(jw, 0, sizeof(*jw));
	jw->out = out;
	jw->buf = malloc(JW_BUFSZ);
	if (!jw->buf) {
		jw->err = -ENOMEM;
		return -ENOMEM;
	}
	jw->cap = JW_BUFSZ;
	return 0;
}

int jw_init_file(struct jw *jw, FILE *f)
{
	int ret = jw_init(jw, NULL);

	jw->file = f;
	return ret;
}

int jw_init_mem(struct jw *jw)
{
	return jw_init(jw, NULL);
}

void jw_mem_reset(struct jw *jw)
{
	jw->len = 0;
	jw->depth = 0;
	jw->want_value = jw->done = false;
}

void jw_release(struct jw *jw)
{
	if (!jw)
		return;
	free(jw->buf);
	jw->buf = NULL;
	jw->len = jw->cap = 0;
}

/* Write n bytes to the writer's file or sink, past its buffer. */
static int write_out(struct jw *jw, const void *p, size_t n)
{
	int ret;

	if (jw->file) {
		errno = 0;
		ret = fwrite(p, 1, n, jw->file) == n ? 0 : errno ? -errno : -EIO;
	} else {
		ret = sink_write(jw->out, p, n);
	}
	return ret ? fail(jw, ret) : 0;
}

int jw_flush(struct jw *jw)
{
	size_t len = jw->len;

	if (jw->err)
		return jw->err;
	if (!len || (!jw->file && !jw->out))
		return 0;
	jw->len = 0;
	return write_out(jw, jw->buf, len);
}

int jw_finish(struct jw *jw)
{
	if (jw->err)
		return jw->err;
	if (jw->depth || !jw->done)
		return fail(jw, -EINVAL);
	return jw_flush(jw);
}

int jw_error(const struct jw *jw)
{
	return jw->err;
}

/* A writer into memory: room for n more bytes.  0 or the sticky -ENOMEM. */
static int grow(struct jw *jw, size_t n)
{
	size_t cap = jw->cap;
	char *buf;

	while (cap - jw->len < n)
		cap *= 2;
	buf = realloc(jw->buf, cap);
	if (!buf)
		return fail(jw, -ENOMEM);
	jw->buf = buf;
	jw->cap = cap;
	return 0;
}

static int put(struct jw *jw, const void *p, size_t n)
{
	int ret;

	if (jw->cap - jw->len < n && !jw->file && !jw->out && grow(jw, n))
		return jw->err;
	if (jw->cap - jw->len >= n) {
		memcpy(jw->buf + jw->len, p, n);
		jw->len += n;
		return 0;
	}
	ret = jw_flush(jw);
	if (ret)
		return ret;
	if (n < jw->cap) {
		memcpy(jw->buf, p, n);
		jw->len = n;
		return 0;
	}
	return write_out(jw, p, n);
}

static inline int putc_(struct jw *jw, char c)
{
	if (jw->len == jw->cap && (!jw->file && !jw->out ? grow(jw, 1) : jw_flush(jw)))
		return jw->err;
	jw->buf[jw->len++] = c;
	return 0;
}

/* The separator before a member of the innermost array or object. */
static int separator(struct jw *jw)
{
	uint8_t *l = &jw->level[jw->depth - 1];

	if (*l & JW_L_FIRST) {
		*l &= ~JW_L_FIRST;
		return (*l & JW_L_LINES) ? putc_(jw, '\n') : 0;
	}
	if (*l & JW_L_LINES)
		return put(jw, ",\n", 2);
	return putc_(jw, ',');
}

/* Before any value: check it may go here, write the separator. */
static int begin_value(struct jw *jw)
{
	if (jw->err)
		return jw->err;
	if (!jw->depth)
		return jw->done ? fail(jw, -EINVAL) : 0;
	if (jw->level[jw->depth - 1] & JW_L_OBJ) {
		if (!jw->want_value)
			return fail(jw, -EINVAL);
		jw->want_value = false;
		return 0;
	}
	return separator(jw);
}

static int end_value(struct jw *jw)
{
	if (!jw->depth)
		jw->done = true;
	return jw->err;
}

static int open_container(struct jw *jw, uint8_t flags, char c)
{
	int ret = begin_value(jw);

	if (ret)
		return ret;
	if (jw->depth >= JW_MAX_DEPTH)
		return fail(jw, -EOVERFLOW);
	jw->level[jw->depth++] = flags | JW_L_FIRST;
	return putc_(jw, c);
}

static int close_container(struct jw *jw, uint8_t obj, char c)
{
	uint8_t l;

	if (jw->err)
		return jw->err;
	if (!jw->depth || jw->want_value)
		return fail(jw, -EINVAL);
	l = jw->level[jw->depth - 1];
	if ((l & JW_L_OBJ) != obj)
		return fail(jw, -EINVAL);
	if ((l & JW_L_LINES) && !(l & JW_L_FIRST) && putc_(jw, '\n'))
		return jw->err;
	jw->depth--;
	if (putc_(jw, c))
		return jw->err;
	return end_value(jw);
}

int jw_obj_begin(struct jw *jw)
{
	return open_container(jw, JW_L_OBJ, '{');
}

int jw_obj_end(struct jw *jw)
{
	return close_container(jw, JW_L_OBJ, '}');
}

int jw_arr_begin(struct jw *jw)
{
	return open_container(jw, 0, '[');
}

int jw_arr_begin_lines(struct jw *jw)
{
	return open_container(jw, JW_L_LINES, '[');
}

int jw_arr_end(struct jw *jw)
{
	return close_container(jw, 0, ']');
}

size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t need, k;

	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		if (c == 0xe0)
			lo = 0xa0;      /* no overlong forms */
		else if (c == 0xed)
			hi = 0x9f;      /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		if (c == 0xf0)
			lo = 0x90;      /* no overlong forms */
		else if (c == 0xf4)
			hi = 0x8f;      /* nothing above U+10FFFF */
	} else {
		*bad = 1;
		return 0;
	}
	for (k = 1; k <= need; k++) {
		if (k >= n || s[k] < lo || s[k] > hi) {
			*bad = k;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return need + 1;
}

size_t utf8_put(char *out, uint32_t cp)
{
	unsigned char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = 0xc0 | cp >> 6;
		b[1] = 0x80 | (cp & 0x3f);
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = 0xe0 | cp >> 12;
		b[1] = 0x80 | (cp >> 6 & 0x3f);
		b[2] = 0x80 | (cp & 0x3f);
		n = 3;
	} else {
		b[0] = 0xf0 | cp >> 18;
		b[1] = 0x80 | (cp >> 12 & 0x3f);
		b[2] = 0x80 | (cp >> 6 & 0x3f);
		b[3] = 0x80 | (cp & 0x3f);
		n = 4;
	}
	if (out)
		memcpy(out, b, n);
	return n;
}

/* Write s as a quoted, escaped JSON string. */
static int put_string(struct jw *jw, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	if (putc_(jw, '"'))
		return jw->err;
	while (i < n) {
		size_t run = i, len, bad;
		unsigned char c;
		char esc[6];

		while (run < n && plain[s[run]])
			run++;
		if (run > i && put(jw, s + i, run - i))
			return jw->err;
		i = run;
		if (i == n)
			break;
		c = s[i];
		if (c >= 0x80) {
			len = utf8_seq(s + i, n - i, &bad);
			if (len) {
				put(jw, s + i, len);
				i += len;
			} else {
				put(jw, "\xef\xbf\xbd", 3);
				i += bad;
			}
			continue;
		}
		esc[0] = '\\';
		switch (c) {
		case '"':  esc[1] = '"'; len = 2; break;
		case '\\': esc[1] = '\\'; len = 2; break;
		case '\b': esc[1] = 'b'; len = 2; break;
		case '\f': esc[1] = 'f'; len = 2; break;
		case '\n': esc[1] = 'n'; len = 2; break;
		case '\r': esc[1] = 'r'; len = 2; break;
		case '\t': esc[1] = 't'; len = 2; break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hexdig[c >> 4];
			esc[5] = hexdig[c & 0xf];
			len = 6;
			break;
		}
		put(jw, esc, len);
		i++;
	}
	putc_(jw, '"');
	return jw->err;
}

int jw_key(struct jw *jw, const char *key)
{
	if (jw->err)
		return jw->err;
	if (!key || !jw->depth || !(jw->level[jw->depth - 1] & JW_L_OBJ) ||
	    jw->want_value)
		return fail(jw, -EINVAL);
	if (separator(jw) || put_string(jw, key, strlen(key)) || putc_(jw, ':'))
		return jw->err;
	jw->want_value = true;
	return 0;
}

int jw_strn(struct jw *jw, const char *s, size_t len)
{
	if (begin_value(jw) || put_string(jw, s, len))
		return jw->err;
	return end_value(jw);
}

int jw_str(struct jw *jw, const char *s)
{
	if (!s)
		return jw_null(jw);
	return jw_strn(jw, s, strlen(s));
}

/* Decimal digits of v at the end of tmp[20]; returns where they start. */
static char *fmt_u64(char *end, uint64_t v)
{
	char *p = end;

	do {
		*--p = '0' + v % 10;
		v /= 10;
	} while (v);
	return p;
}

int jw_uint(struct jw *jw, uint64_t v)
{
	char tmp[20], *p;

	if (begin_value(jw))
		return jw->err;
	p = fmt_u64(tmp + sizeof(tmp), v);
	put(jw, p, tmp + sizeof(tmp) - p);
	return end_value(jw);
}

int jw_int(struct jw *jw, int64_t v)
{
	char tmp[21], *p;

	if (begin_value(jw))
		return jw->err;
	/* negate as unsigned: INT64_MIN has no positive int64 */
	p = fmt_u64(tmp + sizeof(tmp), v < 0 ? -(uint64_t)v : (uint64_t)v);
	if (v < 0)
		*--p = '-';
	put(jw, p, tmp + sizeof(tmp) - p);
	return end_value(jw);
}

/* ns / 10^digits with exactly digits decimals, in integer arithmetic. */
static int put_fixed(struct jw *jw, uint64_t ns, int digits, uint64_t scale)
{
	char tmp[32], *p, *end = tmp + sizeof(tmp);
	uint64_t frac = ns % scale;

	if (begin_value(jw))
		return jw->err;
	for (int i = 1; i <= digits; i++, frac /= 10)
		end[-i] = '0' + frac % 10;
	end[-digits - 1] = '.';
	p = fmt_u64(end - digits - 1, ns / scale);
	put(jw, p, end - p);
	return end_value(jw);
}

int jw_us(struct jw *jw, uint64_t ns)
{
	return put_fixed(jw, ns, 3, 1000);
}

int jw_ms(struct jw *jw, uint64_t ns)
{
	return put_fixed(jw, ns, 6, 1000000);
}

int jw_double(struct jw *jw, double v)
{
	char tmp[40];
	int n;

	if (!isfinite(v))
		return jw_null(jw);
	if (begin_value(jw))
		return jw->err;
	n = snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	put(jw, tmp, n);
	return end_value(jw);
}

int jw_bool(struct jw *jw, bool v)
{
	if (begin_value(jw))
		return jw->err;
	if (v)
		put(jw, "true", 4);
	else
		put(jw, "false", 5);
	return end_value(jw);
}

int jw_null(struct jw *jw)
{
	if (begin_value(jw))
		return jw->err;
	put(jw, "null", 4);
	return end_value(jw);
}

int jw_raw(struct jw *jw, const char *json, size_t len)
{
	if (begin_value(jw))
		return jw->err;
	put(jw, json, len);
	return end_value(jw);
}

int jw_hex(struct jw *jw, uint64_t v)
{
	char tmp[20], *p = tmp + sizeof(tmp);   /* quotes, 0x, 16 digits */

	if (begin_value(jw))
		return jw->err;
	*--p = '"';
	do {
		*--p = hexdig[v & 0xf];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	put(jw, p, tmp + sizeof(tmp) - p);
	return end_value(jw);
}
