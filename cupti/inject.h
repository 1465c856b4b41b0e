/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The injection library's core (inject.c), for its two ways in: the
 * driver's InitializeInjection at cuInit, and gpubpf's late attach
 * (late.c), and for the backends' messages.
 */
#ifndef GPUBPF_INJECT_H
#define GPUBPF_INJECT_H

/*
 * Pick the backend and start the library's thread, once per process.
 * late: gpubpf loaded the library into the running job, whose stderr is
 * then its log, not the user's terminal: nothing is printed there (the
 * recorder prints what publish_error() sends).  1 once running, 0 if
 * the thread could not be started.
 */
int inject_start(int late);

/*
 * One line on the job's stderr, "gpubpf: " first, unless the library came
 * by late attach.
 */
void inject_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
