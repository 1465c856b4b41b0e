/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A streaming reader of gpubpf traces (Chrome trace JSON, .json or
 * .json.gz, read through zlib which also reads plain files; and gpubpf's
 * .pftrace, whose events come back as the JSON ones, see
 * pftrace_reader.h: a file is one or the other by its first bytes).  The file is
 * never held in memory: the header (the "gpubpf" object) is read when the
 * reader is opened, then trace_reader_next() returns one element of
 * "traceEvents" at a time.
 *
 * Every byte is checked against the JSON grammar (strings, numbers,
 * literals, nesting), so an event handed out is valid JSON and can be
 * copied to an output as it is; ill-formed UTF-8 inside its strings is
 * replaced by U+FFFD (one per maximal ill-formed sequence, as the JSON
 * writer does), so it is valid UTF-8 too.  The top-level members of each event are
 * located (key and value spans into its text) and "ts"/"dur" are read
 * from their text exactly, as integer nanoseconds: a double would lose
 * nanoseconds past 2^53 ns (104 days of uptime).  "ts" comes back
 * absolute: the trace's "ts_base_ns" (gpubpf object; 0 when absent) is
 * added to it.  cJSON parses the small
 * "gpubpf" object; events are not turned into trees.
 *
 * Layout assumptions: none beyond JSON.  Our exporter writes the "gpubpf"
 * object first and one event per line; a file whose "gpubpf" object comes
 * after "traceEvents" is read twice (once to find it), and events may span
 * lines.  Element order is kept as in the file.
 *
 *	struct trace_reader r;
 *	struct tr_event *ev;
 *	if (trace_reader_open(&r, path) < 0)
 *		fprintf(stderr, "gpubpf: %s\n", trace_reader_errmsg(&r));
 *	while ((ret = trace_reader_next(&r, &ev)) > 0) {
 *		... ev->text, tr_event_find(ev, "ph") ...
 *		free(ev);
 *	}
 *	trace_reader_close(&r);
 */
#ifndef GPUBPF_TRACE_READER_H
#define GPUBPF_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct pf_reader;

/* A byte range inside an event's text. */
struct tr_span {
	uint32_t off, len;
};

/* A top-level member of an event: key (without its quotes) and value. */
struct tr_member {
	struct tr_span key, val;
};

/* Member indexes of the keys merge looks at; -1 when absent. */
enum tr_key {
	TRK_PH, TRK_CAT, TRK_NAME, TRK_PID, TRK_TID, TRK_TS, TRK_DUR,
	TRK_ID, TRK_BIND_ID, TRK_ARGS,
	TRK_NKEYS
};

/*
 * One element of "traceEvents", allocated in one block (free() it).
 * text is NUL-terminated; spans index into it.
 */
struct tr_event {
	char *text;
	uint32_t len;
	uint32_t nmembers;
	struct tr_member *m;
	int16_t key[TRK_NKEYS];         /* member index per enum tr_key, or -1 */
	bool has_ts, has_dur;           /* "ts"/"dur" present (then numeric, in range; dur >= 0) */
	bool ws;                        /* whitespace outside strings inside */
	int64_t ts_ns, dur_ns;          /* exact, from the text */
	uint64_t line;                  /* line of the event's first byte */
};

enum tr_state { TR_HEADER, TR_EVENTS, TR_TAIL, TR_DONE };

struct trace_reader {
	char *path;
	void *gz;                       /* gzFile */
	char *buf;
	size_t start, end, cap;         /* unread bytes are buf[start, end) */
	bool eof;
	uint64_t line;                  /* line number at buf[start] */
	int state;                      /* enum tr_state */
	bool first;                     /* no element read yet in the array */
	struct tr_member *mtmp;         /* scratch while scanning an event */
	size_t mcap;
	uint64_t nevents;               /* elements returned so far */

	/* from the "gpubpf" object */
	struct cJSON *meta;             /* the whole object, parsed */
	char version[64];
	char host[256];
	int64_t realtime_offset_ns;     /* exact, from the text */
	int64_t ts_base_ns;             /* added to every "ts" read; 0 if absent */
	uint64_t events;                /* "events", 0 if absent */
	uint64_t dropped_total;

	struct pf_reader *pf;           /* a .pftrace's (pftrace_reader.h), else NULL */
	char pfmsg[400];                /* its errors */
	char msg[512];                  /* "FILE: what is wrong" */
};

/*
 * Open path and read up to the first element of "traceEvents".  Fails
 * (-errno, with a one-line message "PATH: ..." in trace_reader_errmsg)
 * for an unreadable or empty file, data that is not JSON, JSON without a
 * "gpubpf" object (a trace of another tool), a "gpubpf" object without
 * version, host or realtime_offset_ns, no "traceEvents" array, or a file
 * cut short.  The reader must be closed either way.
 */
int trace_reader_open(struct trace_reader *r, const char *path);

/*
 * The next element of "traceEvents" in *ev (malloc'd, the caller frees it).
 * Returns 1 with an event, 0 at the end of the array (the rest of the
 * file is checked: nothing but closing JSON may follow), -errno on error
 * with the message set (line numbers included): invalid JSON, an element
 * that is not an object, a truncated file, an event over 256 MiB (of its
 * text as read, and once its UTF-8 is repaired), a "ts" or "dur" that is
 * not a number of microseconds within +-9e15 (1e400, a string, null).
 */
int trace_reader_next(struct trace_reader *r, struct tr_event **ev);

/*
 * Whether path holds a .pftrace (by its first bytes, as trace_reader_open()
 * tells): false too when it cannot be read (opening it says why).
 */
bool trace_reader_is_pftrace(const char *path);

/* Go back to the first element (re-reads the file).  Returns 0 or -errno. */
int trace_reader_rewind(struct trace_reader *r);

/* Close the file and free everything.  NULL-safe, idempotent. */
void trace_reader_close(struct trace_reader *r);

/* The last error as one line, "" if none. */
const char *trace_reader_errmsg(const struct trace_reader *r);

/* Compressed bytes read so far (the file's size once read to the end). */
uint64_t trace_reader_offset(const struct trace_reader *r);

/* The member index of key in ev (exact, unescaped compare), -1 if absent. */
int tr_event_find(const struct tr_event *ev, const char *key);

/*
 * Whether member i's value is the JSON string s (compared raw: s must
 * not need escaping).  False for i < 0.
 */
bool tr_event_str_is(const struct tr_event *ev, int i, const char *s);

/*
 * A JSON number's text (len bytes, not NUL-terminated) read as integer
 * nanoseconds from microseconds: "1234.5678" -> 1234567 (digits past the
 * third decimal are truncated; exponents go through a double).  Returns
 * 0 or -EINVAL (not a number, or beyond +-9e15 us, i.e. +-9e18 ns).
 */
int tr_parse_us_ns(const char *s, size_t len, int64_t *ns);
#define TR_MAX_TS_NS 9000000000000000000LL      /* 9e15 us */

/* A JSON number's text as an integer; -EINVAL unless it is one. */
int tr_parse_int(const char *s, size_t len, int64_t *v);

#endif
