/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the unit tests that build models and read back what was
 * written: a temporary directory, files read whole, events added, file
 * descriptors counted.
 *
 *	if (unit_mkdtemp("export")) -> Bail out
 *	e = unit_event(&m, ts, dur, pid, tid, "cuLaunchKernel");
 *	text = slurp(in_dir("t.json.gz"), &len);
 */
#ifndef GPUBPF_MODEL_UTIL_H
#define GPUBPF_MODEL_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "model/model.h"

static char unit_dir[64];

/* /tmp/gpubpf-<what>-XXXXXX made, in unit_dir: 0 or -1. */
static inline int unit_mkdtemp(const char *what)
{
	snprintf(unit_dir, sizeof(unit_dir), "/tmp/gpubpf-%s-XXXXXX", what);
	return mkdtemp(unit_dir) ? 0 : -1;
}

/* The file descriptors this process has open. */
static inline int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 3;   /* ".", "..", and d's own */
}

/* unit_dir/name (the last four such paths stay valid). */
static inline char *in_dir(const char *name)
{
	static char buf[4][512];
	static int k;
	char *p = buf[k++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", unit_dir, name);
	return p;
}

/* The whole file, gzip or plain, NUL-terminated (free it); NULL if unreadable. */
static inline char *slurp(const char *path, size_t *len)
{
	gzFile f = gzopen(path, "rb");
	char *buf = NULL, *nb;
	size_t n = 0, cap = 0;
	int r;

	if (!f)
		return NULL;
	do {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				gzclose(f);
				return NULL;
			}
			buf = nb;
		}
		r = gzread(f, buf + n, (unsigned)(cap - n));
		if (r > 0)
			n += r;
	} while (r > 0);
	gzclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* An event of pid/tid named name at ts for dur; bails out when out of memory. */
static inline struct model_event *unit_event(struct model *m, uint64_t ts, uint64_t dur,
					     uint32_t pid, uint32_t tid, const char *name)
{
	struct model_event *e = model_add_event(m);

	if (!e) {
		printf("Bail out! model_add_event\n");
		exit(1);
	}
	e->ts = ts;
	e->dur = dur;
	e->pid = pid;
	e->tid = tid;
	e->name = strtab_intern(&m->strs, name);
	return e;
}

/*
 * GIL waits and their holders, no events (m initialised here, finished):
 * spans by (pid, tid, ts):
 *   0 601 Running 500-2000    1 601 GIL wait 2000-3000 (602)   2 601 Running 3000-6000
 *   3 602 Running 1000-5000   4 602 Runnable 5000-6000
 *   5 603 GIL wait 1000-6000 (602): begins with 3 and outlasts it
 *   6 604 GIL wait 2500-2600 (603, itself waiting)   7 604 Running 2600-6000
 * So the waits 1 and 5 are linked to span 3; 6 to none.
 */
static inline void unit_gil_states(struct model *m)
{
	model_init(m);
	model_process(m, 600, "py");
	model_thread_state(m, 600, 601, 500, MS_RUNNING, -1, 0);
	model_thread_state(m, 600, 601, 2000, MS_GIL_WAIT, 202, 602);
	model_thread_state(m, 600, 601, 3000, MS_RUNNING, -1, 0);
	model_thread_state(m, 600, 602, 1000, MS_RUNNING, -1, 0);
	model_thread_state(m, 600, 602, 5000, MS_RUNNABLE, -1, 0);
	model_thread_state(m, 600, 603, 1000, MS_GIL_WAIT, 202, 602);
	model_thread_state(m, 600, 604, 2500, MS_GIL_WAIT, 202, 603);
	model_thread_state(m, 600, 604, 2600, MS_RUNNING, -1, 0);
	model_states_end(m, 6000);
	model_finish(m);
}

#endif
