/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which libcupti to load into a process that has none yet: pure, so the
 * unit test can give it any driver, loaded objects and toolkit.
 *
 * CUPTI newer than the driver fails to initialise, and gpubpf reads the
 * records of CUPTI 12 and 13 (cupti_convert.h), so the majors tried are
 * the driver's first, then the older one: 12 only under a CUDA 12 driver,
 * 13 then 12 under a 13 (or newer, or unknown) one.  For each major, in
 * this order:
 *   - the job's own wheel copy, in each site-packages (or dist-packages)
 *     directory some loaded object lives under: nvidia/cuda_cupti/lib/
 *     libcupti.so.12 for CUDA 12 wheels, nvidia/cu13/lib/libcupti.so.13
 *     for CUDA 13 ones;
 *   - the name alone, libcupti.so.N, for the loader's search path;
 *   - the toolkit's, $CUDA_HOME/extras/CUPTI/lib64 then $CUDA_HOME/lib64.
 * A libcupti already in the process is not picked here: it is used as it
 * is, whatever its major (backend_cupti.c).
 */
#ifndef GPUBPF_CUPTI_PICK_H
#define GPUBPF_CUPTI_PICK_H

#include <limits.h>
#include <stddef.h>

#define CUPTI_PICK_MAX 24
#define CUPTI_OLDEST_MAJOR 12
#define CUPTI_NEWEST_MAJOR 13

struct cupti_pick {
	char path[CUPTI_PICK_MAX][PATH_MAX];
	unsigned n;
	int majors[2];          /* tried, in order; 0 ends the list */
};

/*
 * Fill p for a driver of major driver_major (0: unknown), objects[0..nobj)
 * the paths of the objects loaded in the process, cuda_home the toolkit
 * (NULL or empty: /usr/local/cuda).  Candidates past CUPTI_PICK_MAX are
 * left out.
 */
void cupti_pick(struct cupti_pick *p, int driver_major, const char *const *objects,
		size_t nobj, const char *cuda_home);

/*
 * The CUPTI major of a cuptiGetVersion() API version: 12 for 19 to 99
 * (CUDA 12.0 to 12.9), the xx of xxyyzz from CUDA 13 on, 0 for older ones.
 */
int cupti_api_major(unsigned api_version);

#endif
