// SPDX-License-Identifier: BSD-2-Clause
/*
 * Late attach with ptrace; see inject.h.
 *
 * How one injection goes (x86-64):
 *  1. The target's threads are read from /proc; candidates are threads in
 *     interruptible sleep inside a blocking system call that can be
 *     replayed (inject_safe_syscall), other threads first, the main thread
 *     last (borrowing an idle thread stalls no work).
 *  2. PTRACE_SEIZE + PTRACE_INTERRUPT, waited for at most timeout_ms.  At
 *     the stop the kernel has unwound the system call with an -ERESTART*
 *     code (or it has just completed); orig_rax tells which.  Anything
 *     else (user code, an unsafe call) and the thread is let go untouched.
 *  3. Registers, extended FPU state and signal mask are saved; signals
 *     other than the synchronous ones are blocked for the duration.
 *  4. Remote system calls run through the thread's own `syscall`
 *     instruction (just before its rip): mmap a scratch area (a code page
 *     made read+exec, a data page), memfd_create.  The library's bytes are
 *     written into the memfd from here, through pidfd_getfd.
 *  5. Remote calls run through `call *%rax; int3` with a 16-byte aligned
 *     stack below the thread's red zone: dlopen("/proc/self/fd/N",
 *     RTLD_NOW) (glibc >= 2.34 and musl; older glibc: __libc_dlopen_mode),
 *     then the library's gpubpf_late_attach, found by its file offset in
 *     the memfd's mapping.
 *  6. munmap, close, restore everything, detach: the kernel replays the
 *     interrupted system call (rip - 2) as if nothing happened.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "lib/proc.h"
#include "sym/elf_syms.h"
#include "cupti_pick.h"
#include "record/inject.h"

#define CALL_TIMEOUT_MS 10000   /* a remote dlopen: slow disks, loaded machines */
#define SYSCALL_TIMEOUT_MS 2000
#define PENDING_WAIT_MS 1000    /* threads that did not stop in time */
#define SEARCH_MS 1000          /* how long to look for a thread at a safe point */
#define MAX_CANDIDATES 4096

/* -ERESTART* codes (include/linux/errno.h, not exported to user space). */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

uint64_t inject_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int inject_copy_lib(const char *lib, int out)
{
	char buf[1 << 16];
	int in = open(lib, O_RDONLY | O_CLOEXEC), ret = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			ret = -EIO;
			break;
		}
	if (n < 0)
		ret = -errno;
	close(in);
	return ret;
}

int inject_safe_syscall(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_readv: case SYS_recvfrom: case SYS_recvmsg:
	case SYS_poll: case SYS_select: case SYS_epoll_wait:
	case SYS_ppoll: case SYS_pselect6: case SYS_epoll_pwait: case SYS_epoll_pwait2:
	case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_pause:
	case SYS_futex: case SYS_futex_waitv:
	case SYS_wait4: case SYS_waitid:
	case SYS_accept: case SYS_accept4:
		return 1;
	}
	return 0;
}

/*
 * The *_pwait / pselect / ppoll forms may install a temporary signal mask
 * that a ptrace stop would lose: only with no mask argument.
 */
static int safe_call(long nr, const uint64_t a[6])
{
	if (!inject_safe_syscall(nr))
		return 0;
	switch (nr) {
	case SYS_ppoll:
		return a[3] == 0;
	case SYS_pselect6:
		return a[5] == 0;
	case SYS_epoll_pwait: case SYS_epoll_pwait2:
		return a[4] == 0;
	}
	return 1;
}

/* ------------------------------------------------------------ seccomp */

/* Run a seccomp filter: its return value (action and data), or -EINVAL. */
static int64_t seccomp_run(const struct sock_filter *prog, size_t n, long nr,
			   const uint64_t args[6], uint64_t ip)
{
	uint32_t data[16], mem[BPF_MEMWORDS] = { 0 }, A = 0, X = 0;
	size_t pc = 0, steps = 0;

	data[0] = (uint32_t)nr;
	data[1] = AUDIT_ARCH_X86_64;
	data[2] = (uint32_t)ip;
	data[3] = (uint32_t)(ip >> 32);
	for (int i = 0; i < 6; i++) {
		data[4 + 2 * i] = (uint32_t)args[i];
		data[5 + 2 * i] = (uint32_t)(args[i] >> 32);
	}
	while (pc < n && steps++ < 100000) {
		const struct sock_filter *f = &prog[pc++];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? X : f->k;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;

			switch (BPF_MODE(f->code)) {
			case BPF_ABS:
				if (BPF_SIZE(f->code) != BPF_W || f->k % 4 || f->k >= sizeof(data))
					return -EINVAL;
				v = data[f->k / 4];
				break;
			case BPF_IMM:
				v = f->k;
				break;
			case BPF_MEM:
				if (f->k >= BPF_MEMWORDS)
					return -EINVAL;
				v = mem[f->k];
				break;
			case BPF_LEN:
				v = sizeof(data);
				break;
			default:
				return -EINVAL;
			}
			if (BPF_CLASS(f->code) == BPF_LD)
				A = v;
			else
				X = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (f->k >= BPF_MEMWORDS)
				return -EINVAL;
			mem[f->k] = BPF_CLASS(f->code) == BPF_ST ? A : X;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD: A += src; break;
			case BPF_SUB: A -= src; break;
			case BPF_MUL: A *= src; break;
			/* as the kernel: a division by zero returns 0 (KILL_THREAD) */
			case BPF_DIV: if (!src) return 0; A /= src; break;
			case BPF_MOD: if (!src) return 0; A %= src; break;
			case BPF_OR: A |= src; break;
			case BPF_AND: A &= src; break;
			case BPF_XOR: A ^= src; break;
			case BPF_LSH: A = src < 32 ? A << src : 0; break;
			case BPF_RSH: A = src < 32 ? A >> src : 0; break;
			case BPF_NEG: A = -A; break;
			default: return -EINVAL;
			}
			break;
		case BPF_JMP: {
			int cond;

			if (BPF_OP(f->code) == BPF_JA) {
				pc += f->k;
				break;
			}
			switch (BPF_OP(f->code)) {
			case BPF_JEQ: cond = A == src; break;
			case BPF_JGT: cond = A > src; break;
			case BPF_JGE: cond = A >= src; break;
			case BPF_JSET: cond = (A & src) != 0; break;
			default: return -EINVAL;
			}
			pc += cond ? f->jt : f->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? A : f->k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				X = A;
			else
				A = X;
			break;
		default:
			return -EINVAL;
		}
	}
	return -EINVAL;
}

int inject_seccomp_allows(const struct sock_filter *prog, size_t n, long nr,
			  const uint64_t args[6], uint64_t ip)
{
	int64_t r = seccomp_run(prog, n, nr, args, ip);
	uint32_t act = (uint32_t)r & SECCOMP_RET_ACTION_FULL;

	if (r < 0)
		return r;
	return act == SECCOMP_RET_ALLOW || act == SECCOMP_RET_LOG;
}

/* The target's seccomp mode from /proc/PID/status: 0, 1 strict, 2 filter; -errno. */
static int seccomp_mode(pid_t pid)
{
	char val[32];
	int ret = proc_status_field(pid, "Seccomp", val, sizeof(val));

	return ret == -ENOENT ? 0 : ret ? ret : atoi(val);
}

/*
 * The system calls an injection makes in the target (remotely, then in
 * dlopen and pthread_create), with representative arguments.
 */
static const struct { long nr; uint64_t args[6]; const char *name; } injected_calls[] = {
	{ SYS_mmap, { 0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1ULL, 0 }, "mmap" },
	{ SYS_mprotect, { 0, 4096, PROT_READ | PROT_EXEC }, "mprotect" },
	{ SYS_memfd_create, { 0, MFD_CLOEXEC, 0 }, "memfd_create" },
	{ SYS_openat, { (uint64_t)AT_FDCWD, 0, O_RDONLY | O_CLOEXEC }, "openat" },
	{ SYS_read, { 3, 0, 832 }, "read" },
	{ SYS_newfstatat, { 3, 0, 0, AT_EMPTY_PATH }, "newfstatat" },
	{ SYS_mmap, { 0, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_DENYWRITE, 3, 0 }, "mmap" },
	{ SYS_mmap, { 0, 1 << 20, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED | MAP_DENYWRITE, 3, 0 }, "mmap" },
	{ SYS_mprotect, { 0, 4096, PROT_READ }, "mprotect" },
	{ SYS_close, { 3 }, "close" },
	{ SYS_munmap, { 0, 8192 }, "munmap" },
	{ SYS_rt_sigprocmask, { SIG_SETMASK, 0, 0, 8 }, "rt_sigprocmask" },
	{ SYS_clone3, { 0, 88 }, "clone3" },
	{ SYS_futex, { 0, 0x81, 1 }, "futex" },
};

/*
 * 0 if every filter of the stopped thread tid lets the injection's system
 * calls through; else -EPERM with the reason in why.
 */
static int check_seccomp(pid_t pid, pid_t tid, uint64_t ip, char *why, size_t whylen)
{
	int mode = seccomp_mode(pid);

	if (mode <= 0)
		return 0;
	if (mode == 1) {
		snprintf(why, whylen, "the target runs in strict seccomp mode");
		return -EPERM;
	}
	for (unsigned long idx = 0;; idx++) {
		long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, NULL);
		struct sock_filter *prog;

		if (n < 0 && errno == ENOENT)
			return 0;       /* past the last filter */
		if (n <= 0) {
			snprintf(why, whylen, "the target runs under a seccomp filter that cannot be "
				 "read (%s)", strerror(errno));
			return -EPERM;
		}
		prog = calloc(n, sizeof(*prog));
		if (!prog || ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, prog) != n) {
			free(prog);
			snprintf(why, whylen, "the target runs under a seccomp filter that cannot be "
				 "read");
			return -EPERM;
		}
		for (size_t i = 0; i < sizeof(injected_calls) / sizeof(injected_calls[0]); i++) {
			int ok = inject_seccomp_allows(prog, n, injected_calls[i].nr,
						       injected_calls[i].args, ip);

			/*
			 * clone3 answered ENOSYS (Docker's default profile): glibc's
			 * pthread_create falls back to clone, which must be allowed
			 */
			if (!ok && injected_calls[i].nr == SYS_clone3 &&
			    seccomp_run(prog, n, SYS_clone3, injected_calls[i].args, ip) ==
			    (SECCOMP_RET_ERRNO | ENOSYS)) {
				static const uint64_t clone_args[6] = { 0x3d0f00 };

				ok = inject_seccomp_allows(prog, n, SYS_clone, clone_args, ip);
			}

			if (ok != 1) {
				free(prog);
				snprintf(why, whylen, "a seccomp filter in the target %s %s",
					 ok ? "cannot be evaluated for" : "denies",
					 injected_calls[i].name);
				return -EPERM;
			}
		}
		free(prog);
	}
}

/* ------------------------------------------------------------- /proc */

/* The first mapped file whose base name starts with base (proc_map_file()). */
struct find_base {
	const char *base;
	pid_t pid;
	char *out;
	size_t len;
};

/* Whether m maps a file whose base name starts with base. */
static int maps_base(const struct proc_map *m, const char *base)
{
	const char *slash = strrchr(m->path, '/'), *name;

	if (!slash || !m->inode)
		return 0;
	name = slash + 1;
	/* a late-attached copy maps as "/memfd:libgpubpf_cupti.so (deleted)" */
	if (!strncmp(name, "memfd:", 6))
		name += 6;
	return !strncmp(name, base, strlen(base));
}

static int match_base(const struct proc_map *m, void *arg)
{
	struct find_base *fb = arg;

	if (!maps_base(m, fb->base))
		return 0;
	return proc_map_file(fb->pid, m, fb->out, fb->len) ?: 1;
}

int inject_find_lib(pid_t pid, const char *base, char *path, size_t len)
{
	struct find_base fb = { .base = base, .pid = pid, .out = path, .len = len };
	int ret = proc_maps_each(pid, match_base, &fb);

	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

/* The mapping of the library (base) that holds file offset off. */
struct join_find {
	const char *base;
	uint64_t off, addr;
};

static int match_join(const struct proc_map *m, void *arg)
{
	struct join_find *jf = arg;

	if (!maps_base(m, jf->base) || jf->off < m->offset ||
	    jf->off >= m->offset + (m->end - m->start))
		return 0;
	jf->addr = m->start + (jf->off - m->offset);
	return 1;
}

int inject_lib_join(pid_t pid, const char *base, const char *lib)
{
	static const char *const name = "gpubpf_joins";
	struct join_find jf = { .base = base };
	char mem[64];
	uint32_t joins;
	int fd, ret;

	ret = elf_sym_offsets(lib, &name, 1, &jf.off);
	if (ret != 1)
		return ret < 0 ? ret : -ENOENT;         /* a library from before joins */
	ret = proc_maps_each(pid, match_join, &jf);
	if (ret <= 0)
		return ret < 0 ? ret : -ENOENT;
	snprintf(mem, sizeof(mem), "/proc/%d/mem", pid);
	fd = open(mem, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = pread(fd, &joins, sizeof(joins), jf.addr) == sizeof(joins) ? 0 : -EFAULT;
	joins++;
	if (!ret && pwrite(fd, &joins, sizeof(joins), jf.addr) != sizeof(joins))
		ret = -EFAULT;
	close(fd);
	return ret;
}

struct cupti_seen {
	char name[64];
};

static int match_cupti(const struct proc_map *m, void *arg)
{
	struct cupti_seen *cs = arg;
	const char *slash = strrchr(m->path, '/'), *name = slash ? slash + 1 : "";

	/*
	 * The library uses a libcupti the process has (cupti/backend_cupti.c),
	 * and reads CUPTI 12 and 13 records: another major must not get a
	 * second CUPTI.
	 */
	if (strncmp(name, "libcupti.so.", 12) || (atoi(name + 12) >= CUPTI_OLDEST_MAJOR &&
						    atoi(name + 12) <= CUPTI_NEWEST_MAJOR))
		return 0;
	snprintf(cs->name, sizeof(cs->name), "%.*s", (int)strcspn(name, " "), name);
	return 1;
}

/* The target's libc: where to read it, and its mappings. */
struct libc_find {
	uint64_t inode;
	char path[PATH_MAX];    /* /proc/PID/map_files/... of its first mapping */
	pid_t pid;
};

static int match_libc(const struct proc_map *m, void *arg)
{
	struct libc_find *lf = arg;
	const char *slash = strrchr(m->path, '/'), *name = slash ? slash + 1 : "";

	if (!m->inode || strstr(m->path, " (deleted)"))
		return 0;
	if (strncmp(name, "libc.so", 7) && strncmp(name, "libc-2.", 7) &&
	    strncmp(name, "ld-musl-", 8))
		return 0;
	lf->inode = m->inode;
	snprintf(lf->path, sizeof(lf->path), "/proc/%d/map_files/%llx-%llx", lf->pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	return 1;
}

struct off_to_addr {
	uint64_t inode, off, addr;
};

static int match_offset(const struct proc_map *m, void *arg)
{
	struct off_to_addr *oa = arg;

	if (m->inode != oa->inode || oa->off < m->offset ||
	    oa->off >= m->offset + (m->end - m->start) || m->perms[2] != 'x')
		return 0;
	oa->addr = m->start + (oa->off - m->offset);
	return 1;
}

/* The address at which file offset off of the mapped file inode runs; 0 if unmapped. */
static uint64_t offset_to_addr(pid_t pid, uint64_t inode, uint64_t off)
{
	struct off_to_addr oa = { .inode = inode, .off = off };

	return proc_maps_each(pid, match_offset, &oa) > 0 ? oa.addr : 0;
}

/* Read a small /proc file of the task into buf. */
static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* The state letter of a task ('S', 'R', 'D', 'T'...), 0 if unreadable. */
static char task_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (read_small(path, buf, sizeof(buf)))
		return 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* 1 if the task is sleeping in a safe system call now (from /proc). */
static int task_at_safe_point(pid_t pid, pid_t tid)
{
	char path[64], buf[512];
	unsigned long long a[6];
	uint64_t args[6];
	long nr;

	if (task_state(pid, tid) != 'S')
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	if (read_small(path, buf, sizeof(buf)) || !isdigit((unsigned char)buf[0]))
		return 0;
	if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3],
		   &a[4], &a[5]) != 7)
		return 0;
	for (int i = 0; i < 6; i++)
		args[i] = a[i];
	return safe_call(nr, args);
}

/* ------------------------------------------------------------ ptrace */

#if defined(__x86_64__)

/* The borrowed thread and what must be put back. */
struct borrow {
	pid_t pid, tid;
	int memfd;              /* /proc/PID/mem, for reading and writing */
	struct user_regs_struct saved;
	uint64_t saved_mask;
	void *xstate;           /* NT_X86_XSTATE, else NULL with fpregs */
	size_t xstate_len;
	struct user_fpregs_struct fpregs;
	uint64_t syscall_insn;  /* address of the `syscall` before the stop */
	siginfo_t stray;        /* a signal that arrived meanwhile, re-sent at detach */
	int nstray;
	int stray_more[8];      /* further ones, by number */
};

/*
 * Wait for tid to stop, at most timeout_ms.  Returns 0 with *status, -ETIMEDOUT,
 * or -ESRCH if it exited.
 */
static int wait_stop(pid_t tid, int timeout_ms, int *status)
{
	uint64_t until = inject_now_ns() + timeout_ms * 1000000ULL, spins = 0;

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid) {
			if (WIFSTOPPED(*status))
				return 0;
			return -ESRCH;  /* exited or killed */
		}
		if (r < 0 && errno != EINTR)
			return -ESRCH;
		if (inject_now_ns() >= until)
			return -ETIMEDOUT;
		if (spins++ < 200) {
			sched_yield();
		} else {
			struct timespec ts = { 0, spins < 2000 ? 20000 : 200000 };

			nanosleep(&ts, NULL);
		}
	}
}

static int mem_write(struct borrow *b, uint64_t addr, const void *buf, size_t len)
{
	return pwrite(b->memfd, buf, len, addr) == (ssize_t)len ? 0 : -EFAULT;
}

static int mem_read(struct borrow *b, uint64_t addr, void *buf, size_t len)
{
	return pread(b->memfd, buf, len, addr) == (ssize_t)len ? 0 : -EFAULT;
}

/*
 * Resume the thread with regs and wait for the stop we expect: a
 * syscall-exit stop (syscall) or the trampoline's int3.  Stray signals
 * are kept for later; a fault in our call is an error.  0, -ETIMEDOUT,
 * -ESRCH, -EFAULT.
 */
static int run_until(struct borrow *b, struct user_regs_struct *regs, int syscall,
		     int timeout_ms)
{
	int status, ret, entered = 0;
	int req = syscall ? PTRACE_SYSCALL : PTRACE_CONT;

	if (ptrace(PTRACE_SETREGS, b->tid, NULL, regs))
		return -errno == -ESRCH ? -ESRCH : -errno;
	if (ptrace(req, b->tid, NULL, NULL))
		return -errno;
	for (;;) {
		int sig, event;

		ret = wait_stop(b->tid, timeout_ms, &status);
		if (ret)
			return ret;
		sig = WSTOPSIG(status);
		event = status >> 16;
		if (syscall && sig == (SIGTRAP | 0x80)) {
			if (entered++) {
				ptrace(PTRACE_GETREGS, b->tid, NULL, regs);
				return 0;
			}
		} else if (!syscall && sig == SIGTRAP && !event) {
			ptrace(PTRACE_GETREGS, b->tid, NULL, regs);
			return 0;
		} else if (event == PTRACE_EVENT_STOP) {
			/* a group stop (SIGSTOP to the process): go on, it is redone at detach */
		} else if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
			ptrace(PTRACE_GETREGS, b->tid, NULL, regs);
			return -EFAULT;
		} else if (!event) {
			siginfo_t si;

			if (!b->nstray && !ptrace(PTRACE_GETSIGINFO, b->tid, NULL, &si)) {
				b->stray = si;
				b->nstray = 1;
			} else if (b->nstray < 9) {
				b->stray_more[b->nstray++ - 1] = sig;
			}
		}
		if (ptrace(req, b->tid, NULL, NULL))
			return -errno;
	}
}

/* A system call in the target, through its own `syscall` instruction. */
static int64_t remote_syscall(struct borrow *b, long nr, uint64_t a1, uint64_t a2, uint64_t a3,
			      uint64_t a4, uint64_t a5, uint64_t a6, int *err)
{
	struct user_regs_struct r = b->saved;
	int ret;

	r.rip = b->syscall_insn;
	r.rax = nr;
	r.orig_rax = -1;
	r.rdi = a1;
	r.rsi = a2;
	r.rdx = a3;
	r.r10 = a4;
	r.r8 = a5;
	r.r9 = a6;
	ret = run_until(b, &r, 1, SYSCALL_TIMEOUT_MS);
	*err = ret;
	return ret ? ret : (int64_t)r.rax;
}

/* The trampoline: call *%rax; int3; then, should it ever run on untraced, pause forever. */
static const unsigned char trampoline[] = {
	0xff, 0xd0,                     /* call *%rax */
	0xcc,                           /* int3 */
	0xb8, 0x22, 0x00, 0x00, 0x00,   /* 1: mov $SYS_pause, %eax */
	0x0f, 0x05,                     /* syscall */
	0xeb, 0xf7,                     /* jmp 1b */
};

/* A function call in the target: fn(a1..a3) through the trampoline at code. */
static int remote_call(struct borrow *b, uint64_t code, uint64_t fn, uint64_t a1, uint64_t a2,
		       uint64_t a3, uint64_t *result)
{
	struct user_regs_struct r = b->saved;
	int ret;

	r.rip = code;
	r.rax = fn;
	r.orig_rax = -1;
	r.rdi = a1;
	r.rsi = a2;
	r.rdx = a3;
	r.rcx = 0;
	r.r8 = 0;
	r.r9 = 0;
	/* below the red zone, aligned for the call's push */
	r.rsp = (b->saved.rsp - 128 - 512) & ~15ULL;
	r.eflags &= ~(1ULL << 10 | 1ULL << 8);  /* DF, TF */
	ret = run_until(b, &r, 0, CALL_TIMEOUT_MS);
	if (ret == -ETIMEDOUT) {
		/*
		 * Still inside the call (a lock held elsewhere?): it cannot be
		 * abandoned halfway.  Make the trampoline park the thread if we
		 * ever leave first, then keep waiting.
		 */
		unsigned char nop = 0x90;

		fprintf(stderr, "gpubpf: pid %d: the injected call in thread %d has run for %d s; "
			"waiting for it\n", b->pid, b->tid, CALL_TIMEOUT_MS / 1000);
		mem_write(b, code + 2, &nop, 1);
		ret = run_until(b, &r, 0, 600000);
	}
	if (!ret && r.rip != code + 3)
		ret = -EFAULT;
	*result = r.rax;
	return ret;
}

/* Put the thread back as it was and let it go (the kernel replays its system call). */
static void restore_and_detach(struct borrow *b)
{
	struct iovec iov = { b->xstate, b->xstate_len };
	int sig = 0;

	if (b->xstate)
		ptrace(PTRACE_SETREGSET, b->tid, (void *)NT_X86_XSTATE, &iov);
	else
		ptrace(PTRACE_SETFPREGS, b->tid, NULL, &b->fpregs);
	ptrace(PTRACE_SETSIGMASK, b->tid, (void *)sizeof(b->saved_mask), &b->saved_mask);
	ptrace(PTRACE_SETREGS, b->tid, NULL, &b->saved);
	if (b->nstray && !ptrace(PTRACE_SETSIGINFO, b->tid, NULL, &b->stray))
		sig = b->stray.si_signo;
	ptrace(PTRACE_DETACH, b->tid, NULL, (void *)(long)sig);
	for (int i = 0; i + 1 < b->nstray; i++)
		syscall(SYS_tgkill, b->pid, b->tid, b->stray_more[i]);
}

/* Save what the remote work will change; block the asynchronous signals. */
static int save_state(struct borrow *b)
{
	uint64_t mask;
	struct iovec iov;

	if (ptrace(PTRACE_GETSIGMASK, b->tid, (void *)sizeof(b->saved_mask), &b->saved_mask))
		return -errno;
	b->xstate_len = 64 << 10;
	b->xstate = calloc(1, b->xstate_len);
	iov.iov_base = b->xstate;
	iov.iov_len = b->xstate_len;
	if (!b->xstate || ptrace(PTRACE_GETREGSET, b->tid, (void *)NT_X86_XSTATE, &iov)) {
		free(b->xstate);
		b->xstate = NULL;
		if (ptrace(PTRACE_GETFPREGS, b->tid, NULL, &b->fpregs))
			return -errno;
	} else {
		b->xstate_len = iov.iov_len;
	}
	/* synchronous signals stay open: blocked, the kernel would reset their handlers */
	mask = ~0ULL;
	mask &= ~(1ULL << (SIGTRAP - 1) | 1ULL << (SIGSEGV - 1) | 1ULL << (SIGBUS - 1) |
		  1ULL << (SIGILL - 1) | 1ULL << (SIGFPE - 1));
	if (ptrace(PTRACE_SETSIGMASK, b->tid, (void *)sizeof(mask), &mask))
		return -errno;
	return 0;
}

/* The target's dlopen: its address, the flags it takes, and dlerror (0 if none). */
struct loader {
	uint64_t dlopen, dlerror;
	int flags;
};

static int find_loader(pid_t pid, struct loader *l, char *why, size_t whylen)
{
	static const char *const names[] = { "dlopen", "__libc_dlopen_mode", "dlerror" };
	struct libc_find lf = { .pid = pid };
	uint64_t offs[3] = { 0 };
	int ret;

	ret = proc_maps_each(pid, match_libc, &lf);
	if (ret <= 0) {
		snprintf(why, whylen, "no C library (glibc or musl) found in the target");
		return ret ? ret : -ENOENT;
	}
	ret = elf_sym_offsets(lf.path, names, 3, offs);
	if (ret < 0) {
		snprintf(why, whylen, "cannot read the target's C library: %s", strerror(-ret));
		return ret;
	}
	memset(l, 0, sizeof(*l));
	if (offs[0]) {
		l->dlopen = offset_to_addr(pid, lf.inode, offs[0]);
		l->flags = RTLD_NOW;
		if (offs[2])
			l->dlerror = offset_to_addr(pid, lf.inode, offs[2]);
	} else if (offs[1]) {
		/* glibc < 2.34: the internal entry, with __RTLD_DLOPEN */
		l->dlopen = offset_to_addr(pid, lf.inode, offs[1]);
		l->flags = RTLD_NOW | 0x80000000;
	}
	if (!l->dlopen) {
		snprintf(why, whylen, "the target's C library exports no dlopen");
		return -ENOENT;
	}
	return 0;
}

/* Copy the library's bytes into the target's memfd tfd. */
static int fill_memfd(pid_t pid, int tfd, const char *lib)
{
	char path[64];
	int pidfd, fd = -1, ret;

	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		fd = syscall(SYS_pidfd_getfd, pidfd, tfd, 0);
		close(pidfd);
	}
	if (fd < 0) {           /* Linux < 5.6 */
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, tfd);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	ret = inject_copy_lib(lib, fd);
	return ret ? (close(fd), ret) : fd;
}

/*
 * Interrupt tid (unless seized already: one that did not stop in time
 * before) and take it if it stopped in a safe system call: 1 taken, 0 let
 * go, -ETIMEDOUT (still seized: it has not stopped), -EPERM (ptrace
 * refused), -ESRCH.
 */
static int borrow_thread(struct borrow *b, int timeout_ms, int seized)
{
	uint64_t args[6];
	unsigned char insn[2];
	int status, ret;

	if (!seized && ptrace(PTRACE_SEIZE, b->tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD))
		return errno == EPERM || errno == EACCES ? -EPERM : -ESRCH;
	if (!seized && ptrace(PTRACE_INTERRUPT, b->tid, NULL, NULL))
		return -ESRCH;
	ret = wait_stop(b->tid, timeout_ms, &status);
	if (ret)
		return ret;
	if (status >> 16 != PTRACE_EVENT_STOP) {
		/* a signal was on its way: let it be delivered, try another thread */
		ptrace(PTRACE_DETACH, b->tid, NULL, (void *)(long)WSTOPSIG(status));
		return 0;
	}
	if (WSTOPSIG(status) != SIGTRAP ||      /* a group stop: the process is being stopped */
	    ptrace(PTRACE_GETREGS, b->tid, NULL, &b->saved))
		goto let_go;
	/*
	 * epoll_wait answers any stop with -EINTR, even with no signal to
	 * deliver: restart it instead, as the kernel does poll and select
	 * (also when the thread is let go untouched).
	 */
	if ((b->saved.orig_rax == SYS_epoll_wait || b->saved.orig_rax == SYS_epoll_pwait ||
	     b->saved.orig_rax == SYS_epoll_pwait2) && (long)b->saved.rax == -EINTR) {
		b->saved.rax = -ERESTARTNOHAND;
		ptrace(PTRACE_SETREGS, b->tid, NULL, &b->saved);
	}
	args[0] = b->saved.rdi;
	args[1] = b->saved.rsi;
	args[2] = b->saved.rdx;
	args[3] = b->saved.r10;
	args[4] = b->saved.r8;
	args[5] = b->saved.r9;
	if ((long)b->saved.orig_rax < 0 || !safe_call(b->saved.orig_rax, args))
		goto let_go;
	b->syscall_insn = b->saved.rip - 2;
	if (mem_read(b, b->syscall_insn, insn, 2) || insn[0] != 0x0f || insn[1] != 0x05)
		goto let_go;
	return 1;
let_go:
	ptrace(PTRACE_DETACH, b->tid, NULL, NULL);
	return 0;
}

/* Candidate threads, best first: sleeping in a safe call; others before the main thread. */
static int candidates(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	struct dirent *de;
	int n = 0, main_ok = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max - 1) {
		pid_t tid = atoi(de->d_name);

		if (tid <= 0 || !task_at_safe_point(pid, tid))
			continue;
		if (tid == pid)
			main_ok = 1;
		else
			tids[n++] = tid;
	}
	closedir(d);
	if (main_ok)
		tids[n++] = pid;
	return n;
}

/* The work done on a borrowed thread: load the library, start it.  0 or -errno. */
static int load_in(struct borrow *b, const struct loader *ld, const char *lib, uint64_t entry_off,
		   struct inject_stats *st, char *why, size_t whylen)
{
	long page = sysconf(_SC_PAGESIZE);
	int64_t scratch, tfd = -1, r;
	uint64_t code, data, handle = 0, entry, res;
	char name[64];
	struct stat sb;
	int err, fd = -1, ret;

	ret = check_seccomp(b->pid, b->tid, b->syscall_insn, why, whylen);
	if (ret)
		return ret;
	scratch = remote_syscall(b, SYS_mmap, 0, 2 * page, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1ULL, 0, &err);
	if (err || (scratch < 0 && scratch > -4096)) {
		snprintf(why, whylen, "mmap in the target failed: %s",
			 strerror(err ? -err : (int)-scratch));
		return err ? err : (int)scratch;
	}
	code = scratch;
	data = scratch + page;
	ret = mem_write(b, code, trampoline, sizeof(trampoline));
	if (ret) {
		snprintf(why, whylen, "cannot write the target's memory");
		goto unmap;
	}
	r = remote_syscall(b, SYS_mprotect, code, page, PROT_READ | PROT_EXEC, 0, 0, 0, &err);
	if (err || r) {
		ret = err ? err : (int)r;
		snprintf(why, whylen, "the target may not map executable memory: %s",
			 strerror(-ret));
		goto unmap;
	}
	/* the library from a memfd: its path need not exist in the target's mount namespace */
	mem_write(b, data, "libgpubpf_cupti.so", sizeof("libgpubpf_cupti.so"));
	tfd = remote_syscall(b, SYS_memfd_create, data, MFD_CLOEXEC | 0x10U /* MFD_EXEC */, 0, 0, 0, 0,
			     &err);
	if (!err && tfd == -EINVAL)     /* before Linux 6.3: no MFD_EXEC */
		tfd = remote_syscall(b, SYS_memfd_create, data, MFD_CLOEXEC, 0, 0, 0, 0, &err);
	if (err) {
		ret = err;
		snprintf(why, whylen, "the target stopped responding");
		goto unmap;
	}
	if (tfd < 0) {
		ret = (int)tfd;
		snprintf(why, whylen, "memfd refused in the target: %s%s", strerror(-ret),
			 ret == -EACCES ? " (vm.memfd_noexec = 2?)" : "");
		goto unmap;
	}
	fd = fill_memfd(b->pid, tfd, lib);
	if (fd < 0) {
		ret = fd;
		snprintf(why, whylen, "cannot fill the memfd: %s", strerror(-ret));
		goto close_tfd;
	}
	snprintf(name, sizeof(name), "/proc/self/fd/%d", (int)tfd);
	mem_write(b, data, name, strlen(name) + 1);
	ret = remote_call(b, code, ld->dlopen, data, ld->flags, 0, &handle);
	if (ret) {
		snprintf(why, whylen, "dlopen in the target %s", ret == -EFAULT ? "faulted" :
			 ret == -ESRCH ? "ended with the target" : "did not return");
		goto close_tfd;
	}
	if (!handle) {
		uint64_t msg = 0;
		char text[200] = "";

		if (ld->dlerror && !remote_call(b, code, ld->dlerror, 0, 0, 0, &msg) && msg)
			mem_read(b, msg, text, sizeof(text) - 1);
		text[sizeof(text) - 1] = 0;
		snprintf(why, whylen, "dlopen in the target failed%s%s", text[0] ? ": " : "", text);
		ret = -ENOEXEC;
		goto close_tfd;
	}
	if (fstat(fd, &sb) || !(entry = offset_to_addr(b->pid, sb.st_ino, entry_off))) {
		snprintf(why, whylen, "the library loaded but its entry is not mapped");
		ret = -ENOENT;
		goto close_tfd;
	}
	ret = remote_call(b, code, entry, 0, 0, 0, &res);
	if (ret || (int)res) {
		snprintf(why, whylen, "the library's thread did not start: %s",
			 ret ? "the call failed" : strerror((int)res));
		ret = ret ? ret : -(int)res;
	}
	st->via_memfd = 1;
close_tfd:
	if (fd >= 0)
		close(fd);
	if (tfd >= 0)
		remote_syscall(b, SYS_close, tfd, 0, 0, 0, 0, 0, &err);
unmap:
	if (ret != -ESRCH)
		remote_syscall(b, SYS_munmap, scratch, 2 * page, 0, 0, 0, 0, &err);
	return ret;
}

/* Threads interrupted that had not stopped when inject_library() returned. */
#define MAX_LEFTOVER 256
static pid_t leftover[MAX_LEFTOVER];
static int nleftover;

int inject_reap(void)
{
	int status;

	for (int i = 0; i < nleftover;) {
		pid_t r = waitpid(leftover[i], &status, __WALL | WNOHANG);

		if (r == 0) {
			i++;
			continue;
		}
		if (r == leftover[i] && WIFSTOPPED(status))
			ptrace(PTRACE_DETACH, leftover[i], NULL,
			       (void *)(long)(status >> 16 ? 0 : WSTOPSIG(status)));
		leftover[i] = leftover[--nleftover];
	}
	return nleftover;
}

int inject_hold(pid_t tid, int timeout_ms, int *sig)
{
	int status, ret;

	*sig = 0;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
		ret = -errno;
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return ret;
	}
	ret = wait_stop(tid, timeout_ms, &status);
	if (ret == -ETIMEDOUT && nleftover < MAX_LEFTOVER)
		leftover[nleftover++] = tid;    /* inject_reap() lets it go */
	if (!ret)
		*sig = status >> 16 ? 0 : WSTOPSIG(status);
	return ret;
}

int inject_release(pid_t tid, int sig)
{
	return ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig) ? -errno : 0;
}

/*
 * Try one thread: borrow it if it is at a safe point, do the work.
 * -EAGAIN: not usable now, try another; else the injection's outcome.
 */
static int try_thread(pid_t pid, pid_t tid, int memfd, int timeout_ms, const struct loader *ld,
		      const char *lib, uint64_t entry_off, struct inject_stats *st, char *why,
		      size_t whylen, pid_t *pending, int *npending)
{
	struct borrow b = { .pid = pid, .tid = tid, .memfd = memfd };
	uint64_t t_stop;
	int r, ret, seized = -1;

	for (int i = 0; i < *npending && seized < 0; i++)
		if (pending[i] == tid)
			seized = i;
	if (seized < 0 && !task_at_safe_point(pid, tid))
		return -EAGAIN;
	t_stop = inject_now_ns();
	if (seized >= 0) {
		/* interrupted earlier, not stopped then: has it stopped now? */
		r = borrow_thread(&b, 0, 1);
		if (r == -ETIMEDOUT)
			return -EAGAIN;
		pending[seized] = pending[--(*npending)];
	} else {
		st->threads_tried++;
		r = borrow_thread(&b, timeout_ms, 0);
	}
	if (r == -EPERM) {
		snprintf(why, whylen, "ptrace not allowed (needs CAP_SYS_PTRACE; yama "
			 "ptrace_scope, or the target is not dumpable)");
		return -EPERM;
	}
	if (r == -ETIMEDOUT && seized < 0 && *npending < 64)
		pending[(*npending)++] = tid;
	if (r != 1)
		return -EAGAIN;
	r = save_state(&b);
	if (r) {
		ptrace(PTRACE_DETACH, b.tid, NULL, NULL);
		snprintf(why, whylen, "cannot prepare thread %d: %s", b.tid, strerror(-r));
		return r;
	}
	st->tid = b.tid;
	st->syscall_nr = b.saved.orig_rax;
	ret = load_in(&b, ld, lib, entry_off, st, why, whylen);
	if (ret == -ESRCH)
		snprintf(why, whylen, "the target exited during the injection");
	else
		restore_and_detach(&b);
	st->stall_ns = inject_now_ns() - t_stop;
	free(b.xstate);
	return ret == -EAGAIN ? -EIO : ret;
}

int inject_library(pid_t pid, const char *lib, int timeout_ms, struct inject_stats *st,
		   char *why, size_t whylen)
{
	uint64_t t0 = inject_now_ns(), entry_off = 0;
	const char *entry_name = INJECT_ENTRY;
	pid_t *tids = NULL, pending[64];
	int npending = 0, n, ret = -EAGAIN, status, memfd;
	struct loader ld;
	char scope[16], path[64];

	memset(st, 0, sizeof(*st));
	why[0] = 0;
	if (elf_sym_offsets(lib, &entry_name, 1, &entry_off) != 1) {
		snprintf(why, whylen, "'%s' has no %s entry (rebuild it)", lib, INJECT_ENTRY);
		return -ENOENT;
	}
	if (!read_small("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof(scope)) &&
	    atoi(scope) == 3) {
		snprintf(why, whylen, "ptrace not allowed (yama ptrace_scope 3)");
		return -EPERM;
	}
	switch (task_state(pid, pid)) {
	case 0: case 'Z': case 'X':
		snprintf(why, whylen, "the target has exited");
		return -ESRCH;
	case 'T': case 't':
		snprintf(why, whylen, "the target is stopped");
		return -EAGAIN;
	}
	/* a debugger (gdb, strace, py-spy) holds it: one tracer at a time */
	if (!proc_status_field(pid, "TracerPid", scope, sizeof(scope)) && atoi(scope) > 0) {
		char comm[32] = "?";

		proc_comm(atoi(scope), 0, comm, sizeof(comm));
		snprintf(why, whylen, "it is being traced by pid %d (%s), and a process has one "
			 "tracer at a time", atoi(scope), comm);
		return -EBUSY;
	}
	/* the kernel's ptrace access check, before anything else */
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	memfd = open(path, O_RDWR | O_CLOEXEC);
	if (memfd < 0) {
		ret = errno == ENOENT || errno == ESRCH ? -ESRCH : -EPERM;
		snprintf(why, whylen, "%s", ret == -ESRCH ? "the target has exited" :
			 "ptrace not allowed (needs CAP_SYS_PTRACE, or the target is not dumpable)");
		return ret;
	}
	{
		struct cupti_seen cs;

		if (proc_maps_each(pid, match_cupti, &cs) > 0) {
			snprintf(why, whylen, "the process already has %s loaded (the library reads "
				 "CUPTI %d and %d records only)", cs.name, CUPTI_OLDEST_MAJOR,
				 CUPTI_NEWEST_MAJOR);
			close(memfd);
			return -EPROTONOSUPPORT;
		}
	}
	ret = find_loader(pid, &ld, why, whylen);
	if (ret) {
		close(memfd);
		return ret;
	}
	tids = calloc(MAX_CANDIDATES, sizeof(*tids));
	if (!tids) {
		close(memfd);
		return -ENOMEM;
	}
	/*
	 * Threads are only taken asleep in a safe call: look again every few
	 * ms until one is, for at most SEARCH_MS.
	 */
	ret = -EAGAIN;
	for (uint64_t until = t0 + SEARCH_MS * 1000000ULL; ret == -EAGAIN && inject_now_ns() < until;) {
		n = candidates(pid, tids, MAX_CANDIDATES);
		if (n < 0) {
			ret = -ESRCH;
			snprintf(why, whylen, "the target has exited");
			break;
		}
		/* threads interrupted before that have stopped since, then the others */
		for (int i = npending - 1; i >= 0 && ret == -EAGAIN; i--)
			ret = try_thread(pid, pending[i], memfd, timeout_ms, &ld, lib, entry_off, st,
					 why, whylen, pending, &npending);
		for (int i = 0; i < n && ret == -EAGAIN; i++)
			ret = try_thread(pid, tids[i], memfd, timeout_ms, &ld, lib, entry_off, st,
					 why, whylen, pending, &npending);
		if (ret == -EAGAIN) {
			struct timespec ts = { 0, 2000000 };

			nanosleep(&ts, NULL);
		}
	}
	if (ret == -EAGAIN)
		snprintf(why, whylen, "no thread of the target stopped at a safe point "
			 "(blocked in futex, poll, read, sleep...) in time");
	/* threads that did not stop in time: let them go once they do (1 s for all) */
	for (uint64_t until = inject_now_ns() + PENDING_WAIT_MS * 1000000ULL, i = 0; i < (uint64_t)npending;
	     i++) {
		uint64_t now = inject_now_ns();
		int left_ms = now < until ? (int)((until - now) / 1000000) : 0;

		if (!wait_stop(pending[i], left_ms, &status)) {
			int sig = status >> 16 ? 0 : WSTOPSIG(status);

			ptrace(PTRACE_DETACH, pending[i], NULL, (void *)(long)sig);
		} else if (nleftover < MAX_LEFTOVER) {
			leftover[nleftover++] = pending[i];  /* inject_reap() lets it go */
		}
	}
	free(tids);
	close(memfd);
	st->total_ns = inject_now_ns() - t0;
	return ret;
}

#else   /* !__x86_64__ */

int inject_reap(void)
{
	return 0;
}

int inject_library(pid_t pid, const char *lib, int timeout_ms, struct inject_stats *st,
		   char *why, size_t whylen)
{
	memset(st, 0, sizeof(*st));
	snprintf(why, whylen, "late attach is implemented for x86-64 only");
	return -EOPNOTSUPP;
}

int inject_hold(pid_t tid, int timeout_ms, int *sig)
{
	*sig = 0;
	return -EOPNOTSUPP;
}

int inject_release(pid_t tid, int sig)
{
	return -EOPNOTSUPP;
}

#endif
