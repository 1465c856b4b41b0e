// SPDX-License-Identifier: BSD-2-Clause
/*
 * hold_thread: stop one thread of a process, not the others, until a file
 * appears; then let it go on.
 *
 *	hold_thread TID FILE
 *
 * The thread is stopped with ptrace (PTRACE_SEIZE, PTRACE_INTERRUPT), which
 * stops only it, where SIGSTOP would stop the whole process.  Prints
 * "held" once it is stopped, "released" once it runs again.  Exit status
 * 0, or 1 with the reason on stderr.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
	pid_t tid;
	int st;

	if (argc != 3 || (tid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: hold_thread TID FILE\n");
		return 1;
	}
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) || ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
		fprintf(stderr, "hold_thread: %d: %s\n", tid, strerror(errno));
		return 1;
	}
	if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st)) {
		fprintf(stderr, "hold_thread: %d did not stop\n", tid);
		return 1;
	}
	printf("held\n");
	fflush(stdout);
	while (access(argv[2], F_OK))
		usleep(10000);
	if (ptrace(PTRACE_DETACH, tid, NULL, NULL)) {
		fprintf(stderr, "hold_thread: detach %d: %s\n", tid, strerror(errno));
		return 1;
	}
	printf("released\n");
	return 0;
}
