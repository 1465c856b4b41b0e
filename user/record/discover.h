/* SPDX-License-Identifier: BSD-2-Clause */
/* Where libcuda is, and the injection library for it. */
#ifndef GPUBPF_DISCOVER_H
#define GPUBPF_DISCOVER_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Resolve libcuda.so.1 the way the dynamic loader would for a process with
 * the given LD_LIBRARY_PATH (may be NULL): its directories, then the
 * ldconfig cache, then the usual driver directories.  0 with the path
 * filled in, -ENOENT if no libcuda is installed.
 */
int discover_libcuda(const char *ld_library_path, char *path, size_t len);

/* The injection library's file name, as it appears in a process's maps. */
#define INJECTION_LIB "libgpubpf_cupti.so"

/*
 * Its variant for the simulated driver (with the simulator's backend),
 * relative to gpubpf's directory, as make builds it; never installed.
 */
#define SIM_INJECTION_LIB "sim/" INJECTION_LIB

/* Names the injection library to use instead, whatever the driver. */
#define INJECTION_LIB_ENV "GPUBPF_INJECTION_LIB"

/*
 * The injection library for a process using the libcuda at libcuda (NULL:
 * the one discover_libcuda() finds for our LD_LIBRARY_PATH, which a
 * command we start inherits): $GPUBPF_INJECTION_LIB when set (said on
 * stderr when it cannot be read); else for the simulated driver (told by
 * the profiler hook it exports) SIM_INJECTION_LIB beside this gpubpf; else
 * the one installed with this gpubpf: beside the binary (the build tree),
 * or in ../lib/gpubpf/ (make install).  0 with an absolute path filled in,
 * or -ENOENT with path holding the file name looked for.
 */
int discover_injection_lib(const char *libcuda, char *path, size_t len);

/*
 * SIM_INJECTION_LIB beside this gpubpf: 0 with its path, -ENOENT if absent
 * (an installed gpubpf).  The simulated driver loads it in place of the
 * shipped library it is given (sim/libcuda_sim.c), so a command may map it
 * even when record chose the shipped one.
 */
int discover_sim_injection_lib(char *path, size_t len);

/*
 * The injection library to load late into pid, lib being the recording's:
 * the one discover_injection_lib() picks for pid's libcuda when lib is one
 * of this gpubpf's own (beside it) and $GPUBPF_INJECTION_LIB is not set,
 * else lib (another, named with --cupti-lib).  0 with path filled in, or
 * -errno with a reason in why.
 */
int discover_late_injection_lib(pid_t pid, const char *lib, char *path, size_t len,
				char *why, size_t whylen);

#endif
