/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gpubpf's own .pftrace files (export_perfetto.c) read back as the Chrome
 * trace JSON events export_chrome.c writes for the same model: trace_reader
 * hands them out as it does a JSON file's, so `report`, `convert` and every
 * other reader of the model take either format.
 *
 * What comes out, from the packets in file order (deflated runs of
 * packets, compressed_packets, are inflated in their place):
 *   - the "gpubpf" instant's annotations as the JSON's "gpubpf" object
 *     (pf_reader_meta), event times after its ts_base_ns as in the JSON;
 *   - "M" process_name / thread_name events from process and thread
 *     track descriptors;
 *   - each slice ("X"), memory and sample instants ("i"), in the file's
 *     order (time order: a first pass over the file finds where each slice
 *     ends, 8 bytes a slice), on the pid and tid of their track: a
 *     thread's, a GPU lane's (ts_gpu_tid()), a thread's state track's
 *     (TS_STATE_TID_BASE + tid);
 *   - arguments as the JSON writes them: stacks (ts_arg_is_stack()) as
 *     arrays of frames, grids and blocks as arrays, pointers as "0x..."
 *     strings.
 * Python scopes and counter values are left out: the model derives them.
 * Interned names and strings, the sequence's default track and its delta
 * clock are followed as Perfetto does for one packet sequence.
 */
#ifndef GPUBPF_PFTRACE_READER_H
#define GPUBPF_PFTRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pf_reader;

/*
 * Whether the n bytes a file begins with are a protobuf trace rather than
 * JSON: a Trace.packet tag (0x0a) not followed by whitespace and a JSON
 * object or array.
 */
bool pf_sniff(const unsigned char *p, size_t n);

/*
 * Read the gpubpf trace in gz (a zlib gzFile at the file's start) up to
 * its metadata.  0, or -errno with a one-line message in msg: not a
 * Perfetto trace, a Perfetto trace without gpubpf's metadata, corrupt or
 * cut short.  *pp is set either way; pf_reader_close() it.
 */
int pf_reader_open(struct pf_reader **pp, void *gz, char *msg, size_t msglen);

/* The "gpubpf" object as JSON text (NUL-terminated). */
const char *pf_reader_meta(const struct pf_reader *p, size_t *len);

/*
 * The next event as JSON text (valid until the next call): 1, 0 at the
 * end, -errno with the message in the buffer given to pf_reader_open().
 */
int pf_reader_next(struct pf_reader *p, const char **text, size_t *len);

/* Packets read so far, the compressed runs' inner ones included. */
uint64_t pf_reader_packets(const struct pf_reader *p);

/* NULL-safe; the gzFile stays the caller's. */
void pf_reader_close(struct pf_reader *p);

#endif
