// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What one helper call costs on this machine: section 15 of `make bench`
 * (bench/helper_cost.c runs these).  Each program makes one kind of call
 * HC_N times (or one read of HC_BIG bytes, or one bpf_loop of HC_TURNS
 * turns) and nothing else, so that its run time less the empty program's
 * is the calls' own.  These are the calls the entry program and the
 * Python walk of bpf/cuda.bpf.c are made of; their cost moves several
 * times from one VM to another (mitigations, the hypervisor), and with
 * it what gpubpf's programs can reach there.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "launch_calls.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define HC_N 8
#define HC_BIG 4096
#define HC_TURNS 64

struct hc_buf {
	__u64 small[HC_N];
	__u64 addr;             /* big's address, as a number */
	char big[2 * HC_BIG];   /* a page's read lands anywhere in its first page */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hc_buf);
} hc_buf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} hc_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} hc_task SEC(".maps");

volatile __u64 hc_sink;

#define REPEAT(x) for (int i = 0; i < HC_N; i++) { x; }

SEC("uprobe")
int hc_empty(struct pt_regs *ctx)
{
	return 0;
}

SEC("uprobe")
int hc_ktime(struct pt_regs *ctx)
{
	REPEAT(hc_sink += bpf_ktime_get_ns());
	return 0;
}

SEC("uprobe")
int hc_pid_tgid(struct pt_regs *ctx)
{
	REPEAT(hc_sink += bpf_get_current_pid_tgid());
	return 0;
}

SEC("uprobe")
int hc_cookie(struct pt_regs *ctx)
{
	REPEAT(hc_sink += bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("uprobe")
int hc_hash_lookup(struct pt_regs *ctx)
{
	__u32 key = 1;

	REPEAT(__u64 *v = bpf_map_lookup_elem(&hc_hash, &key); if (v) hc_sink += *v);
	return 0;
}

SEC("uprobe")
int hc_task_storage(struct pt_regs *ctx)
{
	REPEAT(__u64 *v = bpf_task_storage_get(&hc_task, bpf_get_current_task_btf(), NULL,
					      BPF_LOCAL_STORAGE_GET_F_CREATE);
	       if (v) hc_sink += *v);
	return 0;
}

/* 8 bytes of the caller's stack, into the program's stack */
SEC("uprobe")
int hc_read8_stack(struct pt_regs *ctx)
{
	REPEAT(__u64 v = 0; bpf_probe_read_user(&v, 8, (void *)PT_REGS_SP(ctx) + 8 * i);
	       hc_sink += v);
	return 0;
}

/*
 * Calls made once in a program, not HC_N times: the first call of a kind
 * after the trap costs more than each further one (its code and the
 * branch predictors are cold), and gpubpf's entry program makes each of
 * its calls once.
 */
SEC("uprobe")
int hc_ktime_once(struct pt_regs *ctx)
{
	hc_sink += bpf_ktime_get_ns();
	return 0;
}

/* the 40 bytes of a launch's stack arguments onto the program's stack */
SEC("uprobe")
int hc_read40_once(struct pt_regs *ctx)
{
	hc_sink += launch_stack_args(ctx);
	return 0;
}

/* the calls of gpubpf's entry program for a launch, once each, in its order */
SEC("uprobe")
int hc_entry_calls(struct pt_regs *ctx)
{
	hc_sink += launch_calls(ctx);
	return 0;
}

/* the same into a map's value, as the walk's reads go */
SEC("uprobe")
int hc_read8_map(struct pt_regs *ctx)
{
	__u32 zero = 0;
	struct hc_buf *b = bpf_map_lookup_elem(&hc_buf, &zero);

	if (!b)
		return 0;
	REPEAT(bpf_probe_read_user(&b->small[i], 8, (void *)PT_REGS_SP(ctx) + 8 * i));
	hc_sink += b->small[0];
	return 0;
}

/*
 * One read of a page of the caller's stack into a map's value (HC_N: one),
 * its destination shift bytes past its source's place in a page: 0, or a
 * few bytes, where the CPU takes each load for one of the bytes just
 * stored ("4K aliasing"; bpf/cuda.bpf.c's frame_at() keeps clear of it).
 */
static __always_inline int read4k(struct pt_regs *ctx, __u64 shift)
{
	__u32 zero = 0;
	struct hc_buf *b = bpf_map_lookup_elem(&hc_buf, &zero);
	__u64 src = PT_REGS_SP(ctx) & ~(HC_BIG - 1ULL), off;

	if (!b)
		return 0;
	b->addr = (unsigned long)b->big;        /* a pointer as a number: allowed to root */
	off = (src + shift - *(volatile __u64 *)&b->addr) & (HC_BIG - 8);
	bpf_probe_read_user(b->big + off, HC_BIG, (void *)src);
	hc_sink += b->big[off & (HC_BIG - 8)];
	return 0;
}

SEC("uprobe")
int hc_read4k_map(struct pt_regs *ctx)
{
	return read4k(ctx, 0);
}

SEC("uprobe")
int hc_read4k_alias(struct pt_regs *ctx)
{
	return read4k(ctx, 16);
}

static long turn(__u32 i, void *data)
{
	hc_sink += i;
	return 0;
}

/* bpf_loop of HC_TURNS turns, against one turn */
SEC("uprobe")
int hc_loop_many(struct pt_regs *ctx)
{
	bpf_loop(HC_TURNS, turn, NULL, 0);
	return 0;
}

SEC("uprobe")
int hc_loop_one(struct pt_regs *ctx)
{
	bpf_loop(1, turn, NULL, 0);
	return 0;
}

static __noinline int sub(__u64 x)
{
	hc_sink += x;
	return x & 1;
}

SEC("uprobe")
int hc_subprog(struct pt_regs *ctx)
{
	REPEAT(sub(PT_REGS_PARM1(ctx) + i));
	return 0;
}
