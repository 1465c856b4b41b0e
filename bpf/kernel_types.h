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

struct task_struct {
	int pid;
	int tgid;
	struct thread_struct thread;
} __attribute__((preserve_access_index));

#endif
