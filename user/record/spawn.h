/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * record -- CMD: the command, started held until the probes are in place.
 *
 *	spawn_init(&s)
 *	spawn_held(&s, cmd, injlib) -> attach the probes to s.pid
 *	spawn_go(&s)                -> it runs; > 0: its exec failed (errno)
 *	spawn_poll(&s)              -> 1 once it exited, s.status set
 *	spawn_release(&s, wait)
 */
#ifndef GPUBPF_SPAWN_H
#define GPUBPF_SPAWN_H

#include <sys/types.h>

struct spawn {
	pid_t pid;              /* 0: none */
	int status;             /* exit status, or 128 + signal */
	int done;               /* exited and reaped */
	int release_fd;         /* written once to let it run; -1 after */
	int exec_err_fd;        /* the errno of a failed exec */
};

/* No command yet: spawn_release() has nothing to do. */
void spawn_init(struct spawn *s);

/*
 * Fork cmd (argv, NULL-terminated), held before its exec until spawn_go().
 * With injlib, it runs with CUDA_INJECTION64_PATH=injlib.  0 or -errno.
 */
int spawn_held(struct spawn *s, char **cmd, const char *injlib);

/*
 * Let the command run.  0 once it runs, the errno of its failed exec
 * (the child is reaped, s->pid is 0), or -errno if it could not be told.
 */
int spawn_go(struct spawn *s);

/* 1 if the command has exited (s->done, s->status), without waiting. */
int spawn_poll(struct spawn *s);

/*
 * A command never let go is killed; one running is waited for when wait
 * is set, s.status set as by spawn_poll() (else it runs on, untraced).
 * Closes the pipes.
 */
void spawn_release(struct spawn *s, int wait);

#endif
