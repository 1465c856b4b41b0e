/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbol lookup in ELF files, for placing uprobes. */
#ifndef GPUBPF_ELF_SYMS_H
#define GPUBPF_ELF_SYMS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Find each of names[0..n) among the defined function symbols of the ELF
 * file at path (.dynsym, then .symtab) and store its file offset, the
 * offset a uprobe takes, in offsets[i]; 0 where the name is not defined.
 * Returns the number of names found, or -errno (-ENOEXEC: not an ELF file).
 */
int elf_sym_offsets(const char *path, const char *const *names, size_t n, uint64_t *offsets);

#endif
