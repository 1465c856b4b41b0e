/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transport from the injection library to gpubpf: GPU activity records
 * (gpu_activity.h) are batched and handed over at a USDT marker whose site
 * is a 5-byte NOP (cheap to probe), the CUPTI correlation id of each
 * driver call is announced at a second marker on the calling thread, and
 * the error of a failing call at another site of that marker (with a third
 * argument, the error), as the call returns.
 * Each marker has a semaphore that the kernel raises while gpubpf is
 * attached: publish_attached() is how the library knows it is recorded.
 * Thread-safe.
 */
#ifndef GPUBPF_PUBLISH_H
#define GPUBPF_PUBLISH_H

#include <stddef.h>
#include <stdint.h>
#include "gpu_activity.h"

/*
 * 1 while a recorder is attached to both markers.  gpubpf attaches the
 * batch marker first: a recorder joining one already recorded sees every
 * batch sent after it announces its first call (the library waits for
 * both, so the first recorder misses no call's announcement either).
 */
int publish_attached(void);

/*
 * Announce, on the thread making a driver call and during that call, the
 * correlation id the GPU records of that call will carry.  cbid: the
 * CUPTI driver callback id (0 when unknown).
 */
void publish_api(uint32_t correlation, uint32_t cbid);

/*
 * Announce, on the thread making a driver call and as it returns, that it
 * failed with result (a CUresult): what the API-exit callback sees.
 * correlation and cbid as for publish_api (0 when unknown).
 */
void publish_api_error(uint32_t correlation, uint32_t cbid, int32_t result);

/*
 * Append a record to the current batch (sending the batch first if the
 * record does not fit).  The record's h.size must be set.  Returns 0, or
 * -E2BIG for a record larger than a batch.
 */
int publish_record(const struct ga_hdr *rec);

/*
 * The id of a kernel name, sending a GA_NAME record the first time a name
 * is seen (names longer than GA_NAME_MAX - 1 bytes are cut).
 */
uint32_t publish_name(const char *name);

/* Count records lost before they reached publish_record (sent as GA_DROPPED). */
void publish_dropped(uint64_t n);

/* Say why the library went dormant: a GA_ERROR record, sent at once. */
void publish_error(const char *message);

/* Say that collection started at ts (CLOCK_MONOTONIC ns): a GA_WINDOW record. */
void publish_window(uint64_t ts);

/* Send the current batch, if any. */
void publish_flush(void);

/*
 * Forget which kernel names were sent: a recorder that attaches later has
 * not seen them.  Call when a recording starts.
 */
void publish_reset(void);

/*
 * How many times recorders said they attached (each adds one to the
 * library's gpubpf_joins once its markers are attached): a change while
 * the markers stay attached is one more recorder joining.
 */
uint32_t publish_joins(void);

/*
 * For a recorder that joined one already attached: send each kernel name
 * again at its next use, and say that collection started at ts
 * (collecting), or again why the library is dormant (the last
 * publish_error()).
 */
void publish_joined(int collecting, uint64_t ts);

#endif
