/* SPDX-License-Identifier: BSD-2-Clause */
/* Where libcuda is: the library a new CUDA process would load. */
#ifndef GPUBPF_DISCOVER_H
#define GPUBPF_DISCOVER_H

#include <stddef.h>

/*
 * Resolve libcuda.so.1 the way the dynamic loader would for a process with
 * the given LD_LIBRARY_PATH (may be NULL): its directories, then the
 * ldconfig cache, then the usual driver directories.  0 with the path
 * filled in, -ENOENT if no libcuda is installed.
 */
int discover_libcuda(const char *ld_library_path, char *path, size_t len);

/* The injection library's file name, as it appears in a process's maps. */
#define INJECTION_LIB "libgpubpf_cupti.so"

/* Names another injection library: the simulator's, for tests and the demo. */
#define INJECTION_LIB_ENV "GPUBPF_INJECTION_LIB"

/*
 * The injection library to use: $GPUBPF_INJECTION_LIB when set (said on
 * stderr when it cannot be read), else the one installed with this
 * gpubpf: beside the binary (the build tree), or in ../lib/gpubpf/ (make
 * install).  0 with an absolute path filled in, -ENOENT.
 */
int discover_injection_lib(char *path, size_t len);

#endif
