/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A streaming JSON writer: tokens go straight to a buffer flushed into a
 * sink, no document tree is built.  Commas are inserted automatically from
 * a small nesting stack; strings are escaped and made valid UTF-8 (invalid
 * bytes become U+FFFD), so the output is always valid JSON.
 *
 * Errors are sticky: after the first failure (I/O, misuse such as a value
 * in an object without a key, nesting too deep) every call returns the
 * same -errno and writes nothing.  All functions return 0 or -errno.
 *
 *	struct jw jw;
 *	jw_init(&jw, &sink);
 *	jw_obj_begin(&jw);
 *	jw_key(&jw, "ts"); jw_us(&jw, 1234567);   // "ts":1234.567
 *	jw_obj_end(&jw);
 *	err = jw_finish(&jw);                      // flush into the sink
 *	jw_release(&jw);
 */
#ifndef GPUBPF_JSON_WRITER_H
#define GPUBPF_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct sink;

#define JW_MAX_DEPTH 64

struct jw {
	struct sink *out;               /* where it writes: a sink, or */
	FILE *file;                     /* a stdio stream, or neither: memory */
	char *buf;
	size_t len, cap;
	int err;                        /* sticky, -errno */
	int depth;                      /* open containers */
	bool want_value;                /* a key was written, its value is due */
	bool done;                      /* a complete top-level value was written */
	uint8_t level[JW_MAX_DEPTH];    /* JW_L_* flags per open container */
};

/* Prepare a writer over out (an open sink).  Returns 0 or -ENOMEM. */
int jw_init(struct jw *jw, struct sink *out);
/* The same over a stdio stream (flushed into it, not closed). */
int jw_init_file(struct jw *jw, FILE *f);
/*
 * A writer into memory only: its buffer grows to hold what is written, at
 * jw->buf, jw->len bytes.  jw_mem_reset() empties it for the next value.
 */
int jw_init_mem(struct jw *jw);
void jw_mem_reset(struct jw *jw);
/* Free the buffer (without flushing).  NULL-safe, idempotent. */
void jw_release(struct jw *jw);

/* Write the buffered bytes to the sink.  Returns 0 or the sticky error. */
int jw_flush(struct jw *jw);
/*
 * Check that the document is complete (all containers closed, one value
 * written; -EINVAL otherwise) and flush.  Returns 0 or -errno.
 */
int jw_finish(struct jw *jw);
/* The sticky error, 0 if none. */
int jw_error(const struct jw *jw);

int jw_obj_begin(struct jw *jw);
int jw_obj_end(struct jw *jw);
int jw_arr_begin(struct jw *jw);
/* Like jw_arr_begin, but each element goes on a line of its own. */
int jw_arr_begin_lines(struct jw *jw);
int jw_arr_end(struct jw *jw);

/* An object key (escaped like any string); only valid inside an object. */
int jw_key(struct jw *jw, const char *key);

/* A string value; s == NULL writes null. */
int jw_str(struct jw *jw, const char *s);
/* A string value of len bytes (may contain NUL, written as \u0000). */
int jw_strn(struct jw *jw, const char *s, size_t len);
int jw_int(struct jw *jw, int64_t v);
int jw_uint(struct jw *jw, uint64_t v);
/* A double with enough digits to round-trip; NaN and infinities write null. */
int jw_double(struct jw *jw, double v);
/* ns as microseconds with exactly 3 decimals, no rounding: 1234567 -> 1234.567 */
int jw_us(struct jw *jw, uint64_t ns);
/* Milliseconds with exactly six decimals (exact ns): 1234567 -> 1.234567. */
int jw_ms(struct jw *jw, uint64_t ns);
int jw_bool(struct jw *jw, bool v);
int jw_null(struct jw *jw);
/* A string "0x..." in lowercase hex: 0 -> "0x0". */
int jw_hex(struct jw *jw, uint64_t v);
/*
 * A value already written as JSON by this writer (a copy of its output):
 * put as it is, the caller vouching for it.
 */
int jw_raw(struct jw *jw, const char *json, size_t len);

/*
 * A key and its value in one call, for objects written member by member:
 * jw_kv_uint(jw, "bytes", n) is jw_key(jw, "bytes") then jw_uint(jw, n).
 * Each returns the first error, as the calls it makes.
 */
static inline int jw_kv_str(struct jw *jw, const char *key, const char *s)
{
	return jw_key(jw, key) ?: jw_str(jw, s);
}

static inline int jw_kv_strn(struct jw *jw, const char *key, const char *s, size_t len)
{
	return jw_key(jw, key) ?: jw_strn(jw, s, len);
}

static inline int jw_kv_int(struct jw *jw, const char *key, int64_t v)
{
	return jw_key(jw, key) ?: jw_int(jw, v);
}

static inline int jw_kv_uint(struct jw *jw, const char *key, uint64_t v)
{
	return jw_key(jw, key) ?: jw_uint(jw, v);
}

static inline int jw_kv_double(struct jw *jw, const char *key, double v)
{
	return jw_key(jw, key) ?: jw_double(jw, v);
}

static inline int jw_kv_us(struct jw *jw, const char *key, uint64_t ns)
{
	return jw_key(jw, key) ?: jw_us(jw, ns);
}

static inline int jw_kv_ms(struct jw *jw, const char *key, uint64_t ns)
{
	return jw_key(jw, key) ?: jw_ms(jw, ns);
}

static inline int jw_kv_bool(struct jw *jw, const char *key, bool v)
{
	return jw_key(jw, key) ?: jw_bool(jw, v);
}

static inline int jw_kv_null(struct jw *jw, const char *key)
{
	return jw_key(jw, key) ?: jw_null(jw);
}

static inline int jw_kv_hex(struct jw *jw, const char *key, uint64_t v)
{
	return jw_key(jw, key) ?: jw_hex(jw, v);
}

/*
 * Length of the well-formed UTF-8 sequence at s (a byte >= 0x80, n bytes
 * available): 2..4, or 0 when it is not one; then *bad is the length of
 * its maximal valid prefix (at least 1), which is replaced by one U+FFFD
 * as Unicode recommends.  Overlong forms, surrogates and code points above
 * U+10FFFF are not well-formed.  Every writer and reader checks UTF-8
 * with this one function.
 */
size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad);

/* The UTF-8 bytes of code point cp (at most U+10FFFF) into out (NULL: only count): how many. */
size_t utf8_put(char *out, uint32_t cp);

#endif
