/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sorted runs of trace records, for traces written in parts (model_part.h):
 * each run is a temporary file (unlinked from the start, so that nothing
 * is left behind) in the output's directory, holding records in time
 * order, each an exporter's bytes (a JSON event, an encoded event) with
 * its key: its start and its duration.  runs_merge() hands every run's
 * records over in time order: by start, the longer first at one instant
 * (a Python scope before the calls it holds), then the newer run first (a
 * scope is written in the part where it ends, after the calls inside
 * it); a run's own records in the order they were put.  Runs are merged
 * in tiers as they are added (16 of a level into one of the next), so
 * that a recording of any length holds a few dozen files at most.
 *
 *	struct runs *r;
 *	runs_open(&r, "out/trace.json");
 *	for each part: runs_add(r); runs_put(r, ts, dur, bytes, len) ...
 *	runs_merge(r, fn, ctx);   ... fn(ctx, ts, dur, bytes, len) by time ...
 *	runs_close(r);
 */
#ifndef GPUBPF_RUNS_H
#define GPUBPF_RUNS_H

#include <stddef.h>
#include <stdint.h>

struct runs;

/* What runs_merge() hands each record to: 0 to go on, or -errno to stop. */
typedef int (*runs_fn)(void *ctx, uint64_t ts, uint64_t dur, const void *rec, size_t len);

/* For an output at path (its directory holds the runs).  0 or -errno. */
int runs_open(struct runs **r, const char *path);
/* Start a new run, the newest, which runs_put() fills.  0 or -errno. */
int runs_add(struct runs *r);
/* A record at the end of the newest run (at or after its last in time).  0 or -errno. */
int runs_put(struct runs *r, uint64_t ts, uint64_t dur, const void *rec, size_t len);
/* Every run's records, merged, to fn.  0, fn's error, or -errno (-EIO: a bad run). */
int runs_merge(struct runs *r, runs_fn fn, void *ctx);
/* Bytes the runs hold on disk. */
unsigned long long runs_bytes(const struct runs *r);
/* Close (and so delete) the runs; NULL-safe. */
void runs_close(struct runs *r);

#endif
