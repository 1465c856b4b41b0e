/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The keeper: a small process forked as a recording starts, which waits
 * for gpubpf to end.  gpubpf continues every process its programs stop
 * (at a libcuda mapping, at a Python process's end) once it has read what
 * it needs; should it die first (SIGKILL, the OOM killer), such a process
 * would stay stopped.  The keeper then continues those left in the map of
 * held processes (probes_held_fd()), and exits.  While gpubpf lives it
 * sleeps; Ctrl-C, SIGTERM and SIGHUP, which reach it with its process
 * group, leave it to gpubpf's own ending.
 */
#ifndef GPUBPF_KEEPER_H
#define GPUBPF_KEEPER_H

/* Fork the keeper, which keeps held_fd (a BPF hash map, tgid keys).  0 or -errno. */
int keeper_start(int held_fd);

#endif
