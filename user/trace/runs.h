/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sorted runs of trace events, for traces written in parts (model_part.h):
 * each run is a temporary file (unlinked from the start, so that nothing
 * is left behind) in the output's directory, holding a JSON array of
 * events one per line in time order, as the Chrome exporter writes
 * "traceEvents".  runs_merge() puts every run's events into one array,
 * in time order: by "ts", the longer first at one instant (a Python
 * scope before the calls it holds), then the newer run first (a scope is
 * written in the part where it ends, after the calls inside it).  Runs are
 * merged in tiers as they are added (16 of a level into one of the next),
 * so that a recording of any length holds a few dozen files at most.
 *
 *	struct runs *r;
 *	runs_open(&r, "out/trace.json");
 *	FILE *f = runs_add(r);    ... a jw over f writes one array ...
 *	runs_merge(r, jw);        ... into an array the jw has open ...
 *	runs_close(r);
 */
#ifndef GPUBPF_RUNS_H
#define GPUBPF_RUNS_H

#include <stdio.h>

struct jw;
struct runs;

/* For an output at path (its directory holds the runs).  0 or -errno. */
int runs_open(struct runs **r, const char *path);
/* A new run to write into (owned by r); NULL with errno set on failure. */
FILE *runs_add(struct runs *r);
/*
 * The events of every run, merged, as values of the array jw has open.
 * 0, or -errno (-EINVAL for a line that is not an event with a "ts").
 */
int runs_merge(struct runs *r, struct jw *jw);
/* Bytes the runs hold on disk. */
unsigned long long runs_bytes(const struct runs *r);
/* Close (and so delete) the runs; NULL-safe. */
void runs_close(struct runs *r);

#endif
