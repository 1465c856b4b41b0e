// SPDX-License-Identifier: BSD-2-Clause
/* The keeper: see keeper.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include "record/keeper.h"

#define HELD_FD 3
#define PARENT_FD 4
#define POLL_PARENT_MS 100      /* without pidfd_open (Linux 5.3) */

/* Every descriptor from first on closed. */
static void close_from(int first)
{
	long max = sysconf(_SC_OPEN_MAX);

	if (!syscall(SYS_close_range, first, ~0U, 0))
		return;
	for (long fd = first; fd < (max > 0 ? max : 1024); fd++)
		close(fd);
}

/* Continue every process in the map of the held (system calls only). */
static void continue_held(int fd)
{
	uint32_t key, next, *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		kill((pid_t)next, SIGCONT);
		key = next;
		prev = &key;
	}
}

/*
 * In the forked child, which has only this thread of gpubpf's: system
 * calls only (another thread may have held malloc's lock at the fork).
 */
static __attribute__((noreturn)) void keep(pid_t parent, int held_fd)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP };
	struct timespec nap = { 0, POLL_PARENT_MS * 1000000L };
	struct pollfd pf = { .fd = PARENT_FD, .events = POLLIN };
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), pidfd;

	for (unsigned i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	/* out of gpubpf's process group, which may be killed whole with it */
	setsid();
	prctl(PR_SET_NAME, "gpubpf-keeper");
	/* its output, and gpubpf's probes (their links), are not kept open */
	if (null >= 0)
		for (int fd = 0; fd < 3; fd++)
			dup2(null, fd);
	if (dup2(held_fd, HELD_FD) < 0)
		_exit(1);
	pidfd = syscall(SYS_pidfd_open, parent, 0);
	if (pidfd >= 0 && dup2(pidfd, PARENT_FD) < 0)
		pidfd = -1;
	close_from(PARENT_FD + (pidfd >= 0));
	if (pidfd >= 0)
		while (getppid() == parent && poll(&pf, 1, -1) < 0 && errno == EINTR)
			;
	else
		while (getppid() == parent)
			nanosleep(&nap, NULL);
	/* gpubpf and its probes are gone: continue whom they left stopped */
	continue_held(HELD_FD);
	_exit(0);
}

pid_t keeper_start(int held_fd)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid)
		keep(parent, held_fd);
	return pid;
}

void keeper_stop(pid_t pid, int held_fd)
{
	if (pid <= 0)
		return;
	continue_held(held_fd);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}
