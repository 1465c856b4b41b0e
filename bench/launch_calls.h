/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The helper calls that gpubpf's entry program (bpf/cuda.bpf.c) makes for
 * a launch without a Python stack, once each and in its order: the attach
 * cookie, the pid, the clock, one read of the 40 bytes of stack arguments
 * onto the program's stack.  Nothing else: what a program making them
 * costs is the least gpubpf's can cost on this machine.  Used by
 * helper_cost.bpf.c (section 15) and empty.bpf.c (section 7).
 */
#ifndef GB_BENCH_LAUNCH_CALLS_H
#define GB_BENCH_LAUNCH_CALLS_H

/* the read of a launch's 40 bytes of stack arguments onto the program's stack */
static __always_inline __u64 launch_stack_args(struct pt_regs *ctx)
{
	__u64 v[5];

	bpf_probe_read_user(v, sizeof(v), (void *)PT_REGS_SP(ctx) + 8);
	return v[0] + v[4];
}

static __always_inline __u64 launch_calls(struct pt_regs *ctx)
{
	__u64 x = bpf_get_attach_cookie(ctx) + bpf_get_current_pid_tgid() + bpf_ktime_get_ns();

	return x + launch_stack_args(ctx);
}

#endif
