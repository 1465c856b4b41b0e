/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbol lookup in ELF files, for placing uprobes. */
#ifndef GPUBPF_ELF_SYMS_H
#define GPUBPF_ELF_SYMS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Find each of names[0..n) among the defined function and data symbols of
 * the ELF file at path (.dynsym, then .symtab) and store its file offset,
 * the offset a uprobe takes, in offsets[i]; 0 where the name is not
 * defined.
 * Returns the number of names found, or -errno (-ENOEXEC: not an ELF file).
 */
int elf_sym_offsets(const char *path, const char *const *names, size_t n, uint64_t *offsets);

struct Elf;
/*
 * Open the ELF file at path for reading with libelf: 0 with *fd and *elf
 * set, -errno, or -ENOEXEC if it is not an ELF file (then *fd is open:
 * release with elf_file_close() either way).
 */
int elf_file_open(const char *path, int *fd, struct Elf **elf);
void elf_file_close(int fd, struct Elf *elf);

/* A PT_LOAD segment: file bytes [offset, offset + filesz) at vaddr. */
struct elf_seg {
	uint64_t vaddr, memsz, offset, filesz;
};

/*
 * Convert through the load segments segs[0..n): a virtual address (as in
 * symbol values) to a file offset, and back.  0, or -ENOENT when no
 * segment holds it.
 */
int elf_seg_vaddr_to_offset(const struct elf_seg *segs, size_t n, uint64_t vaddr, uint64_t *off);
int elf_seg_offset_to_vaddr(const struct elf_seg *segs, size_t n, uint64_t off, uint64_t *vaddr);

/* A function symbol: [addr, addr + size) in the file's virtual addresses. */
struct elf_func {
	uint64_t addr, size;
	uint32_t name;          /* offset of its (mangled) name in elf_funcs.names */
};

/* The function symbols of an ELF file, by address, and its load segments. */
struct elf_funcs {
	struct elf_func *funcs;
	size_t n;
	char *names;
	size_t names_len;
	struct elf_seg *segs;
	size_t nsegs;
};

/*
 * Read the defined function symbols of the ELF file at path from .symtab,
 * else .dynsym, sorted by address; of aliases (one address, several
 * names) the global one with a size is kept.  0 or -errno (-ENOEXEC: not
 * an ELF file); a file without symbols loads with n = 0.
 */
int elf_funcs_load(const char *path, struct elf_funcs *f);
void elf_funcs_release(struct elf_funcs *f);
/*
 * The function holding vaddr: the symbol with addr <= vaddr < addr + size,
 * or, for a symbol of size 0, the nearest one below.  NULL if none.
 */
const struct elf_func *elf_funcs_find(const struct elf_funcs *f, uint64_t vaddr);

#endif
