// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The baseline for the cost benchmark: a uprobe and a uretprobe that do
 * nothing.  Whatever gpubpf costs beyond these is gpubpf's own work.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "launch_calls.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int empty_entry(void *ctx)
{
	return 0;
}

/* the same, for empty_uprobe -m: through a uprobe_multi link, as gpubpf attaches */
SEC("uprobe")
int empty_entry_multi(void *ctx)
{
	return 0;
}

/*
 * For empty_uprobe -c: not empty, the helper calls of gpubpf's entry
 * program for a launch and nothing else (launch_calls.h), through a
 * uprobe_multi link: the least gpubpf could cost here
 */
volatile __u64 calls_sink;

SEC("uprobe")
int calls_entry_multi(struct pt_regs *ctx)
{
	calls_sink += launch_calls(ctx);
	return 0;
}

SEC("uretprobe")
int empty_return(void *ctx)
{
	return 0;
}
