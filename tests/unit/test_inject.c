// SPDX-License-Identifier: BSD-2-Clause
/*
 * Late attach (user/record/inject.c): the pure parts (safe points, the seccomp
 * filter evaluator), then, as root, real injections of
 * build/sim/libgpubpf_cupti.so into build/tests/injtarget processes blocked
 * in futex, nanosleep, read, epoll_wait; busy ones; with signals arriving;
 * under seccomp; in their own mount and pid namespace; without
 * CAP_SYS_PTRACE; and 100 in a row into fresh processes.  Every target
 * must run on exactly as it would have (its own checks, exit status 42).
 * Run from the repository root.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "record/inject.h"
#include "tap.h"

#define LIB "build/sim/libgpubpf_cupti.so"
#define TARGET "build/tests/injtarget"
#define SIMCUDA "build/sim/libcuda.so.1"

static void test_safe_points(void)
{
	ok(inject_safe_syscall(SYS_futex) && inject_safe_syscall(SYS_nanosleep) &&
	   inject_safe_syscall(SYS_clock_nanosleep) && inject_safe_syscall(SYS_read) &&
	   inject_safe_syscall(SYS_poll) && inject_safe_syscall(SYS_epoll_wait) &&
	   inject_safe_syscall(SYS_select) && inject_safe_syscall(SYS_wait4),
	   "blocking system calls are safe points");
	ok(!inject_safe_syscall(SYS_ioctl) && !inject_safe_syscall(SYS_mmap) &&
	   !inject_safe_syscall(SYS_munmap) && !inject_safe_syscall(SYS_brk) &&
	   !inject_safe_syscall(SYS_open) && !inject_safe_syscall(SYS_openat) &&
	   !inject_safe_syscall(SYS_write) && !inject_safe_syscall(-1),
	   "ioctl, mmap, munmap, brk, open, write and user code are not");
}

static void test_seccomp_eval(void)
{
	static const uint64_t noargs[6];
	struct sock_filter deny_memfd[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xc000003e, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	/* refuse mmap with PROT_EXEC (args[2] & 4), through the scratch memory and X */
	struct sock_filter no_exec[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_STMT(BPF_ST, 3),
		BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 3),
		BPF_STMT(BPF_MISC | BPF_TXA, 0),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 4, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_LOG),
	};
	struct sock_filter bad[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 3) };
	/* Docker's default: clone3 answers ENOSYS so that glibc falls back to clone */
	struct sock_filter no_clone3[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	uint64_t rx[6] = { 0, 4096, 5, 2, 3, 0 }, rw[6] = { 0, 4096, 3, 0x22, -1ULL, 0 };

	is_int(inject_seccomp_allows(deny_memfd, 7, SYS_memfd_create, noargs, 0), 0,
	       "seccomp: a filter refusing memfd_create refuses it");
	is_int(inject_seccomp_allows(deny_memfd, 7, SYS_mmap, noargs, 0), 1,
	       "seccomp: and lets mmap through");
	is_int(inject_seccomp_allows(no_exec, 10, SYS_mmap, rx, 0), 0,
	       "seccomp: argument checks through scratch memory (PROT_EXEC refused)");
	is_int(inject_seccomp_allows(no_exec, 10, SYS_mmap, rw, 0), 1,
	       "seccomp: RET_LOG counts as allowed");
	is_int(inject_seccomp_allows(bad, 1, SYS_mmap, noargs, 0), -EINVAL,
	       "seccomp: a misaligned load cannot be evaluated");
	is_int(inject_seccomp_allows(no_clone3, 4, SYS_clone3, noargs, 0), 0,
	       "seccomp: clone3 refused with ENOSYS is refused...");
	is_int(inject_seccomp_allows(no_clone3, 4, SYS_clone, noargs, 0), 1,
	       "seccomp: ...and clone, glibc's fallback, allowed");
}

/* ------------------------------------------------------------ live */

struct tgt {
	pid_t pid;              /* what we wait for */
	pid_t inner;            /* the process to inject (differs under unshare) */
	int out;                /* its stdout */
};

static int start(struct tgt *t, char *const argv[])
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	t->pid = fork();
	if (t->pid < 0)
		return -1;
	if (!t->pid) {
		dup2(p[1], 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	t->out = p[0];
	t->inner = t->pid;
	return 0;
}

/* Read from the target until it says "ready" (or 5 s). */
static int wait_ready(struct tgt *t, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	while (!strstr(buf, "ready\n") && n < len - 1) {
		struct pollfd pfd = { t->out, POLLIN, 0 };
		ssize_t r;

		if (poll(&pfd, 1, 5000) <= 0)
			return -1;
		r = read(t->out, buf + n, len - 1 - n);
		if (r <= 0)
			return -1;
		n += r;
		buf[n] = 0;
	}
	/* a recorder holding new CUDA processes (-a) may have stopped it: go on */
	kill(t->inner, SIGCONT);
	return 0;
}

/* The rest of its output and its exit status. */
static int finish(struct tgt *t, char *buf, size_t len)
{
	size_t n = strlen(buf);
	ssize_t r;
	int st;

	while (n < len - 1 && (r = read(t->out, buf + n, len - 1 - n)) > 0)
		n += r;
	buf[n] = 0;
	close(t->out);
	if (waitpid(t->pid, &st, 0) != t->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int mapped(pid_t pid)
{
	char path[256];

	return !inject_find_lib(pid, "libgpubpf_cupti.so", path, sizeof(path)) &&
	       strstr(path, "/map_files/");
}

/* Inject into a target of mode; check the outcome and that it ran on untouched. */
static void one(const char *mode, int want_ok, const char *want_why)
{
	char *argv[] = { TARGET, (char *)mode, "600", SIMCUDA, NULL };
	char buf[4096], why[256], done[128];
	struct inject_stats st;
	struct tgt t;
	int ret, rc;

	if (start(&t, argv) || wait_ready(&t, buf, sizeof(buf))) {
		ok(0, "%s: target started", mode);
		return;
	}
	usleep(30000);
	ret = inject_library(t.inner, LIB, 100, &st, why, sizeof(why));
	if (want_ok) {
		ok(!ret && mapped(t.inner), "%s: injected (%s) through thread %d%s, stall %.3f ms",
		   mode, ret ? why : "ok", st.tid, st.tid == t.inner ? " (main)" : "",
		   st.stall_ns / 1e6);
	} else {
		ok(ret && strstr(why, want_why) && !mapped(t.inner), "%s: refused: %s", mode, why);
	}
	rc = finish(&t, buf, sizeof(buf));
	snprintf(done, sizeof(done), "done %s iterations=yes unexpected=0", mode);
	ok(rc == 42 && strstr(buf, done), "%s: the target ran on untouched (exit %d)", mode, rc);
	if (!strstr(buf, done))
		diag("its output: %s", buf);
}

struct sender {
	pid_t pid;
	int sent;
	volatile int stop;
};

static void *send_signals(void *arg)
{
	struct sender *s = arg;

	while (!s->stop) {
		if (!kill(s->pid, SIGRTMIN))
			s->sent++;
		usleep(300);
	}
	return NULL;
}

/* Real-time signals queue: every one sent must be delivered, none twice. */
static void signals_during(void)
{
	char *argv[] = { TARGET, "signals", "700", SIMCUDA, NULL };
	char buf[4096], why[256], want[64];
	struct inject_stats st;
	struct sender s = { 0 };
	pthread_t th;
	struct tgt t;
	int ret, rc;

	if (start(&t, argv) || wait_ready(&t, buf, sizeof(buf))) {
		ok(0, "signals: target started");
		return;
	}
	s.pid = t.inner;
	pthread_create(&th, NULL, send_signals, &s);
	usleep(50000);
	ret = inject_library(t.inner, LIB, 100, &st, why, sizeof(why));
	usleep(50000);
	s.stop = 1;
	pthread_join(th, NULL);
	ok(!ret && mapped(t.inner), "signals: injected while signals arrive (%s)",
	   ret ? why : "ok");
	rc = finish(&t, buf, sizeof(buf));
	snprintf(want, sizeof(want), "signals=%d\n", s.sent);
	ok(rc == 42 && strstr(buf, "unexpected=0") && strstr(buf, want),
	   "signals: all %d delivered once, nothing else changed (exit %d)", s.sent, rc);
	if (!strstr(buf, want))
		diag("its output: %s", buf);
}

/* Without CAP_SYS_PTRACE (a root target has more capabilities than we keep). */
static void no_ptrace_cap(void)
{
	char *argv[] = { TARGET, "nanosleep", "400", SIMCUDA, NULL };
	char buf[4096];
	struct tgt t;
	int p[2], rc;
	pid_t c;

	if (start(&t, argv) || wait_ready(&t, buf, sizeof(buf)) || pipe(p)) {
		ok(0, "no CAP_SYS_PTRACE: target started");
		return;
	}
	c = fork();
	if (!c) {
		struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		struct inject_stats st;
		char why[256] = "";
		int ret;

		syscall(SYS_capget, &h, d);
		d[0].effective &= ~(1u << CAP_SYS_PTRACE);
		d[0].permitted &= ~(1u << CAP_SYS_PTRACE);
		if (syscall(SYS_capset, &h, d))
			_exit(2);
		ret = inject_library(t.inner, LIB, 100, &st, why, sizeof(why));
		if (write(p[1], why, strlen(why) + 1) < 0)
			_exit(2);
		_exit(ret == -EPERM ? 0 : 1);
	}
	close(p[1]);
	memset(buf, 0, sizeof(buf));
	if (read(p[0], buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(p[0]);
	waitpid(c, &rc, 0);
	ok(WIFEXITED(rc) && !WEXITSTATUS(rc) && strstr(buf, "ptrace not allowed"),
	   "no CAP_SYS_PTRACE: refused, says why: %s", buf);
	memset(buf, 0, sizeof(buf));
	rc = finish(&t, buf, sizeof(buf));
	ok(rc == 42 && strstr(buf, "unexpected=0"), "no CAP_SYS_PTRACE: the target ran on");
}

/*
 * A target in its own mount and pid namespace, where the library's path
 * does not exist (a tmpfs over build/): only the memfd copy can load.
 */
static void namespaced(void)
{
	char cmd[4096], cwd[512], buf[4096], why[256], path[1024];
	struct inject_stats st;
	struct tgt t;
	FILE *f;
	int ret, rc, n = 0;

	if (system("command -v unshare >/dev/null 2>&1")) {
		ok(1, "# SKIP unshare not installed");
		return;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return;
	snprintf(cmd, sizeof(cmd),
		 "d=$(mktemp -d) && cp %s/" TARGET " %s/" SIMCUDA " $d/ && "
		 "mount -t tmpfs none %s/build && exec $d/injtarget nanosleep 800 $d/libcuda.so.1",
		 cwd, cwd, cwd);
	{
		char *argv[] = { "unshare", "-m", "-p", "-f", "--mount-proc", "--propagation",
				 "private", "sh", "-c", cmd, NULL };

		if (start(&t, argv)) {
			ok(0, "namespaces: started");
			return;
		}
	}
	/* the target is unshare's child */
	while (n++ < 200) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", t.pid, t.pid);
		f = fopen(path, "re");
		t.inner = 0;
		if (f) {
			if (fscanf(f, "%d", &t.inner) != 1)
				t.inner = 0;
			fclose(f);
		}
		if (t.inner)
			break;
		usleep(10000);
	}
	if (!t.inner || wait_ready(&t, buf, sizeof(buf))) {
		ok(0, "namespaces: target started");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/root%s/%s", t.inner, cwd, LIB);
	ok(access(path, F_OK), "namespaces: the library's path does not exist in the target's "
	   "mount namespace");
	ret = inject_library(t.inner, LIB, 100, &st, why, sizeof(why));
	ok(!ret && mapped(t.inner), "namespaces: injected from a memfd (%s)", ret ? why : "ok");
	rc = finish(&t, buf, sizeof(buf));
	ok(rc == 42 && strstr(buf, "unexpected=0"), "namespaces: the target ran on (exit %d)", rc);
}

struct killer {
	pid_t pid;
	int delay_us;
};

static void *kill_later(void *arg)
{
	struct killer *k = arg;

	usleep(k->delay_us);
	kill(k->pid, SIGKILL);
	return NULL;
}

/*
 * The target killed at various moments of the injection: every attempt
 * returns (success, or the target gone), none hangs.
 */
static void exits_midway(void)
{
	char *argv[] = { TARGET, "futex", "2000", SIMCUDA, NULL };
	int returned = 0, gone = 0;

	for (int i = 0; i < 20; i++) {
		struct killer k = { .delay_us = i * 150 };
		char buf[1024], why[256];
		struct inject_stats st;
		pthread_t th;
		struct tgt t;
		int ret;

		if (start(&t, argv) || wait_ready(&t, buf, sizeof(buf)))
			continue;
		usleep(20000);
		k.pid = t.inner;
		pthread_create(&th, NULL, kill_later, &k);
		ret = inject_library(t.inner, LIB, 100, &st, why, sizeof(why));
		pthread_join(th, NULL);
		returned++;
		gone += ret == -ESRCH;
		finish(&t, buf, sizeof(buf));
	}
	is_int(returned, 20, "target killed during the injection (20 moments): every attempt "
	       "returned (%d saw it gone)", gone);
}

/*
 * A process with a libcupti of another major than 12 or 13 loaded gets no
 * second CUPTI; one with CUPTI 12 loaded (a CUDA 12 PyTorch wheel's) gets
 * the library, which uses that CUPTI.
 */
static void cupti_loaded(int major, int refused)
{
	char fake[] = "/tmp/gpubpf-cupti.XXXXXX", lib[64], cmd[256], buf[4096], why[256];
	char name[32];
	struct inject_stats st;
	struct tgt t;
	int ret, rc;

	if (!mkdtemp(fake))
		return;
	snprintf(name, sizeof(name), "libcupti.so.%d", major);
	snprintf(lib, sizeof(lib), "%s/%s", fake, name);
	snprintf(cmd, sizeof(cmd), "cp " SIMCUDA " %s", lib);
	if (system(cmd)) {
		ok(0, "%s: set up", name);
		return;
	}
	{
		char *argv[] = { TARGET, "nanosleep", "400", lib, NULL };

		if (start(&t, argv) || wait_ready(&t, buf, sizeof(buf))) {
			ok(0, "%s: target started", name);
			return;
		}
	}
	why[0] = 0;
	ret = inject_library(t.inner, LIB, 100, &st, why, sizeof(why));
	if (refused) {
		char want[96];

		snprintf(want, sizeof(want), "already has %s loaded", name);
		ok(ret && strstr(why, want) && !mapped(t.inner), "%s loaded: refused: %s", name,
		   why);
	} else {
		ok(!ret && mapped(t.inner), "%s loaded: injected (%d%s%s)", name, ret,
		   why[0] ? ": " : "", why);
	}
	rc = finish(&t, buf, sizeof(buf));
	ok(rc == 42 && strstr(buf, "unexpected=0"), "%s loaded: the target ran on", name);
	unlink(lib);
	rmdir(fake);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void hundred(void)
{
	/* long enough for any load; told to end (SIGUSR1) once injected */
	char *argv[] = { TARGET, "futex", "20000", SIMCUDA, NULL };
	uint64_t stalls[100];
	int good = 0, ran = 0;

	for (int i = 0; i < 100; i++) {
		char buf[1024], why[256];
		struct inject_stats st;
		struct tgt t;

		stalls[i] = 0;
		if (start(&t, argv) || wait_ready(&t, buf, sizeof(buf)))
			continue;
		if (!inject_library(t.inner, LIB, 100, &st, why, sizeof(why))) {
			good++;
			stalls[i] = st.stall_ns;
		} else {
			diag("injection %d: %s", i, why);
		}
		usleep(20000);
		kill(t.inner, SIGUSR1);
		ran += finish(&t, buf, sizeof(buf)) == 42 && strstr(buf, "unexpected=0");
	}
	is_int(good, 100, "100 injections into fresh processes: all loaded");
	is_int(ran, 100, "100 injections: every process ran to its end untouched");
	qsort(stalls, 100, sizeof(stalls[0]), cmp_u64);
	diag("target stall per injection: median %.3f ms, p90 %.3f ms, max %.3f ms",
	     stalls[50] / 1e6, stalls[90] / 1e6, stalls[99] / 1e6);
}

int main(void)
{
	test_safe_points();
	test_seccomp_eval();
	if (geteuid() || access(LIB, R_OK) || access(TARGET, X_OK) || access(SIMCUDA, R_OK)) {
		ok(1, "# SKIP live injections need root and a build (run from the repository root)");
		return done_testing();
	}
	signal(SIGPIPE, SIG_IGN);
	one("futex", 1, NULL);
	one("nanosleep", 1, NULL);
	one("read", 1, NULL);
	one("epoll", 1, NULL);
	one("spin2", 1, NULL);
	one("spin", 0, "no thread of the target stopped at a safe point");
	one("seccomp", 0, "seccomp filter in the target denies memfd_create");
	one("clone3", 1, NULL);     /* glibc falls back to clone */
	signals_during();
	no_ptrace_cap();
	namespaced();
	cupti_loaded(11, 1);
	cupti_loaded(12, 0);
	exits_midway();
	hundred();
	return done_testing();
}
