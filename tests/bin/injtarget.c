// SPDX-License-Identifier: BSD-2-Clause
/*
 * injtarget: a process for late-attach tests (tests/unit/test_inject.c)
 * that blocks in one kind of system call and checks that nothing it can
 * see changed while gpubpf loaded its library into it.
 *
 *	injtarget MODE MS [LIBCUDA]
 *
 * MODE: futex, nanosleep, read (a timerfd), epoll (epoll_wait on a
 * timerfd), spin (busy, no system call), spin2 (main thread busy, a second
 * thread sleeping), signals (nanosleep; counts SIGRTMIN deliveries),
 * seccomp (a filter that refuses memfd_create, then nanosleep), clone3 (a
 * filter answering clone3 with ENOSYS, as Docker's default profile does,
 * then nanosleep).
 * Runs about MS milliseconds (futex mode: or until SIGUSR1).  LIBCUDA: a driver to load first (the
 * simulated one), so the injected library finds a backend.  Prints "ready"
 * once blocked for the first time, and at the end one line:
 *	done MODE iterations=N unexpected=K signals=S
 * where unexpected counts results the program would not have seen
 * untouched (EINTR, short reads, a sleep that ended early); exits 42.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t nsig, quit;

static void on_sig(int sig)
{
	nsig++;
}

/* SIGUSR1: end now (futex mode) */
static void on_quit(int sig)
{
	quit = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static void ready(void)
{
	static int said;

	if (!said++) {
		printf("ready\n");
		fflush(stdout);
	}
}

/* nr refused with errno e */
static int deny(long nr, int e)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | e),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void *sleeper(void *arg)
{
	uint64_t end = *(uint64_t *)arg;

	while (now_ms() < end) {
		struct timespec ts = { 0, 5000000 };

		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode;
	uint64_t end, iters = 0, unexpected = 0;
	volatile uint64_t spin = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: injtarget MODE MS [LIBCUDA]\n");
		return 2;
	}
	mode = argv[1];
	if (argc > 3 && !dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "injtarget: %s\n", dlerror());
		return 2;
	}
	signal(SIGRTMIN, on_sig);
	signal(SIGUSR1, on_quit);
	if ((!strcmp(mode, "seccomp") && deny(SYS_memfd_create, EPERM)) ||
	    (!strcmp(mode, "clone3") && deny(SYS_clone3, ENOSYS))) {
		perror("injtarget: seccomp");
		return 2;
	}
	end = now_ms() + strtoul(argv[2], NULL, 10);
	if (!strcmp(mode, "futex")) {
		uint32_t word = 0;

		while (now_ms() < end && !quit) {
			struct timespec ts = { 0, 20000000 };

			ready();
			if ((syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0) != -1 ||
			     errno != ETIMEDOUT) && !quit)
				unexpected++;
			iters++;
		}
	} else if (!strcmp(mode, "nanosleep") || !strcmp(mode, "signals") ||
		   !strcmp(mode, "seccomp") || !strcmp(mode, "clone3")) {
		while (now_ms() < end) {
			struct timespec ts = { 0, 20000000 }, rem = { 0, 0 };
			uint64_t t0 = now_ms();

			ready();
			if (nanosleep(&ts, &rem)) {
				/* a signal handler ran: go on sleeping, as programs do */
				if (errno != EINTR || strcmp(mode, "signals"))
					unexpected++;
			} else if (now_ms() - t0 < 19) {
				unexpected++;
			}
			iters++;
		}
	} else if (!strcmp(mode, "read") || !strcmp(mode, "epoll")) {
		int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC), ep = -1;
		struct itimerspec its = { { 0, 20000000 }, { 0, 20000000 } };
		struct epoll_event e = { .events = EPOLLIN };

		if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL))
			return 2;
		if (!strcmp(mode, "epoll")) {
			ep = epoll_create1(EPOLL_CLOEXEC);
			if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &e))
				return 2;
		}
		while (now_ms() < end) {
			uint64_t n;

			ready();
			if (ep >= 0) {
				struct epoll_event out;

				if (epoll_wait(ep, &out, 1, 1000) != 1)
					unexpected++;
			}
			if (read(tfd, &n, sizeof(n)) != sizeof(n))
				unexpected++;
			iters++;
		}
	} else if (!strcmp(mode, "spin") || !strcmp(mode, "spin2")) {
		pthread_t t;

		if (!strcmp(mode, "spin2") && pthread_create(&t, NULL, sleeper, &end))
			return 2;
		ready();
		/* no system call at all until the end */
		while (1) {
			for (int i = 0; i < 1000000; i++)
				spin++;
			if (now_ms() >= end)  /* the vDSO: no system call */
				break;
			iters++;
		}
		if (!strcmp(mode, "spin2"))
			pthread_join(t, NULL);
	} else {
		fprintf(stderr, "injtarget: unknown mode '%s'\n", mode);
		return 2;
	}
	printf("done %s iterations=%s unexpected=%llu signals=%d\n", mode,
	       iters ? "yes" : "no", (unsigned long long)unexpected, (int)nsig);
	return 42;
}
