/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The few kernel types the BPF programs touch, declared by hand instead of a
 * full vmlinux.h.  Why: a vmlinux.h generated at build time would tie the
 * build to the build machine's kernel (and fail on one without BTF), and a
 * committed multi-megabyte dump hides which fields we rely on.  Thanks to
 * preserve_access_index every field access below is a CO-RE relocation,
 * resolved against the running kernel's BTF when the program loads, so these
 * partial definitions work on any kernel with BTF.  Everything else comes
 * from the stable UAPI headers (linux/bpf.h, asm/ptrace.h).
 */
#ifndef GPUBPF_KERNEL_TYPES_H
#define GPUBPF_KERNEL_TYPES_H

struct thread_struct {
	unsigned long fsbase;   /* x86-64: the thread pointer, = pthread_self() */
} __attribute__((preserve_access_index));

struct upid {
	int nr;
} __attribute__((preserve_access_index));

struct pid {
	struct upid numbers[1];
} __attribute__((preserve_access_index));

#define GB_PIDTYPE_PGID 2       /* enum pid_type */
#define GB_PIDTYPE_SID 3

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	struct pid *pids[4];
	atomic_t live;          /* threads not yet exiting: 0 once the last one is */
} __attribute__((preserve_access_index));

struct file;

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct thread_struct thread;
	struct signal_struct *signal;
	struct files_struct *files;
	unsigned int ptrace;    /* nonzero: traced by a debugger (gdb, strace) */
	__u64 start_time;       /* when it started, CLOCK_MONOTONIC ns */
} __attribute__((preserve_access_index));

/*
 * The registers a task entered the kernel with (bpf_task_pt_regs()): in a
 * syscall, ax holds -ENOSYS until it returns, orig_ax its number, di its
 * first argument.  The ___gb flavour keeps it apart from UAPI's pt_regs.
 */
struct pt_regs___gb {
	unsigned long di;
	unsigned long ax;
	unsigned long orig_ax;
} __attribute__((preserve_access_index));

/* The file an mmap() maps: its name and inode. */
struct qstr {
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct dentry {
	struct qstr d_name;
} __attribute__((preserve_access_index));

struct path {
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct super_block {
	unsigned int s_dev;
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
	struct inode *f_inode;
} __attribute__((preserve_access_index));

#endif
