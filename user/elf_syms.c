// SPDX-License-Identifier: BSD-2-Clause
/* Symbol lookup in ELF files; see elf_syms.h. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_syms.h"

/* Convert a virtual address to a file offset through the PT_LOAD segments. */
static int vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static int lookup_section(Elf *elf, Elf_Scn *scn, const char *const *names, size_t n,
			  uint64_t *offsets)
{
	GElf_Shdr sh;
	Elf_Data *data;
	GElf_Sym sym;
	int found = 0;

	if (!gelf_getshdr(scn, &sh) || !(data = elf_getdata(scn, NULL)) || !sh.sh_entsize)
		return 0;
	for (size_t k = 0; k < sh.sh_size / sh.sh_entsize; k++) {
		const char *name;

		if (!gelf_getsym(data, k, &sym) || sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (offsets[i] || strcmp(name, names[i]))
				continue;
			if (!vaddr_to_offset(elf, sym.st_value, &offsets[i]))
				found++;
		}
	}
	return found;
}

int elf_sym_offsets(const char *path, const char *const *names, size_t n, uint64_t *offsets)
{
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int fd, found = 0, err = 0;

	memset(offsets, 0, n * sizeof(*offsets));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	/* .dynsym first: the exported entry points; .symtab adds local ones. */
	for (int pass = 0; pass < 2; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			if (!gelf_getshdr(scn, &sh))
				continue;
			if (sh.sh_type == (pass ? SHT_SYMTAB : SHT_DYNSYM))
				found += lookup_section(elf, scn, names, n, offsets);
		}
	}
cleanup:
	if (elf)
		elf_end(elf);
	close(fd);
	return err ? err : found;
}
