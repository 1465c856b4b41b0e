// SPDX-License-Identifier: BSD-2-Clause
/* record -- CMD: start the command held on a pipe; see spawn.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "record/spawn.h"

void spawn_init(struct spawn *s)
{
	*s = (struct spawn){ .release_fd = -1, .exec_err_fd = -1 };
}

/*
 * The child waits on one pipe for the go; a second, close-on-exec pipe
 * reports a failed exec.
 */
int spawn_held(struct spawn *s, char **cmd, const char *injlib)
{
	int go[2], err[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -errno;
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(err[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		if (injlib)
			setenv("CUDA_INJECTION64_PATH", injlib, 1);
		execvp(cmd[0], cmd);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	s->release_fd = go[1];
	s->exec_err_fd = err[0];
	return 0;
}

int spawn_go(struct spawn *s)
{
	int e;

	if (write(s->release_fd, "g", 1) != 1)
		return -errno;
	close(s->release_fd);
	s->release_fd = -1;
	if (read(s->exec_err_fd, &e, sizeof(e)) != sizeof(e))
		return 0;
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
	return e;
}

int spawn_poll(struct spawn *s)
{
	int st;

	if (s->done || waitpid(s->pid, &st, WNOHANG) != s->pid)
		return 0;
	s->done = 1;
	s->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 1;
}

void spawn_release(struct spawn *s, int wait)
{
	int st;

	if (s->pid > 0 && !s->done) {
		if (s->release_fd >= 0) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
		} else if (wait && waitpid(s->pid, &st, 0) == s->pid) {
			s->done = 1;
			s->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
	}
	if (s->release_fd >= 0)
		close(s->release_fd);
	if (s->exec_err_fd >= 0)
		close(s->exec_err_fd);
}
