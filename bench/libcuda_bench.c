// SPDX-License-Identifier: BSD-2-Clause
/*
 * libcuda_bench.c - a do-nothing "libcuda" for measuring probe cost.
 *
 * Exports the three entry points the cost benchmarks need, each a separate
 * function that returns CUDA_SUCCESS (0) at once, so a timed loop measures
 * only the call plus whatever probes are attached to it.  gpubpf probes
 * cuLaunchKernel at entry only and cuStreamSynchronize at entry and return.
 *
 * What a uprobe costs depends on the instruction it replaces, so the two
 * probed functions are written in assembly with the prologue chosen by
 * BENCH_SHAPE at build time (one library per shape, build/bench/SHAPE/):
 *   xor    xor %eax,%eax; ret                 (single-stepped by the kernel)
 *   sub    sub $8,%rsp; ...                   (single-stepped)
 *   endbr  endbr64; push %rbp; ...            (CET: endbr64 single-stepped,
 *                                              the push after it emulated)
 *   push   push %rbp; mov %rsp,%rbp; ...      (emulated)
 * (-DBENCH_SHAPE_sub, _endbr, _push; none: xor).  build/bench/libcuda.so.1
 * is the xor one.
 */
#include <stdint.h>

#if defined(BENCH_SHAPE_sub)
#define BODY "subq $8, %rsp\n\txorl %eax, %eax\n\taddq $8, %rsp\n\tret\n"
#elif defined(BENCH_SHAPE_endbr)
#define BODY "endbr64\n\tpushq %rbp\n\tmovq %rsp, %rbp\n\txorl %eax, %eax\n\tpopq %rbp\n\tret\n"
#elif defined(BENCH_SHAPE_push)
#define BODY "pushq %rbp\n\tmovq %rsp, %rbp\n\txorl %eax, %eax\n\tpopq %rbp\n\tret\n"
#else
#define BODY "xorl %eax, %eax\n\tret\n"
#endif

/* A global function of BODY, padded to 16 bytes with nops. */
#define ENTRY(name)                                                     \
	__asm__(".text\n\t.globl " #name "\n\t.type " #name ", @function\n" \
		"\t.p2align 4, 0x90\n" #name ":\n\t" BODY                  \
		"\t.size " #name ", .-" #name "\n")

ENTRY(cuLaunchKernel);
ENTRY(cuStreamSynchronize);

/* keep the body distinct and non-empty for the optimiser */
static volatile unsigned long sink_;

__attribute__((visibility("default"), noinline, used)) int cuInit(unsigned int flags)
{
	sink_ = flags;
	return 0;
}
