/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The keeper: a small process forked as a recording starts, which waits
 * for gpubpf to end.  gpubpf continues every process its programs stop
 * (at a libcuda mapping, at a Python process's end) once it has read what
 * it needs; should it die first (SIGKILL, the OOM killer), such a process
 * would stay stopped.  The keeper then continues those left in the map of
 * held processes (probes_held_fd()), and exits.  While gpubpf lives it
 * sleeps, in a session of its own: a whole process group killed (`kill -9
 * -PGID`, timeout(1)'s -s KILL) takes gpubpf, not its keeper.  Ctrl-C,
 * SIGTERM and SIGHUP leave it to gpubpf's own ending.
 */
#ifndef GPUBPF_KEEPER_H
#define GPUBPF_KEEPER_H

#include <sys/types.h>

/* Fork the keeper, which keeps held_fd (a BPF hash map, tgid keys): its pid, or -errno. */
pid_t keeper_start(int held_fd);
/*
 * Once no process can be held any more (record_unhold()): continue any
 * left in held_fd, as the keeper would, then end the keeper (pid from
 * keeper_start(), or <= 0: none) and reap it (left to end by itself, it
 * would wait for an init that may never reap it: a container's first
 * process).
 */
void keeper_stop(pid_t pid, int held_fd);

#endif
