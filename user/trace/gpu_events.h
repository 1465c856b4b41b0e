/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the exporters show of a model's GPU records, the same in every
 * format: which records get a track (their names are in schema.h).
 */
#ifndef GPUBPF_GPU_EVENTS_H
#define GPUBPF_GPU_EVENTS_H

struct model_event;

/* Work that ran on a stream: kernels, copies, memsets (a slice each). */
int gpu_on_track(const struct model_event *ev);
/*
 * A stream's wait for an event recorded on another stream (what explains
 * a gap on that stream): a slice on the stream's track.  Host-side syncs
 * are not: their calls are on the host track.
 */
int gpu_wait_event(const struct model_event *ev);
/* Either, or an allocation or release (on the device's memory track). */
int gpu_has_track(const struct model_event *ev);

#endif
