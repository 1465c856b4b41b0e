// SPDX-License-Identifier: BSD-2-Clause
/* Symbol lookup in ELF files; see elf_syms.h. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/array.h"
#include "sym/elf_syms.h"

int elf_seg_vaddr_to_offset(const struct elf_seg *segs, size_t n, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < n; i++)
		if (vaddr >= segs[i].vaddr && vaddr < segs[i].vaddr + segs[i].memsz) {
			*off = vaddr - segs[i].vaddr + segs[i].offset;
			return 0;
		}
	return -ENOENT;
}

int elf_seg_offset_to_vaddr(const struct elf_seg *segs, size_t n, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < n; i++)
		if (off >= segs[i].offset && off < segs[i].offset + segs[i].filesz) {
			*vaddr = off - segs[i].offset + segs[i].vaddr;
			return 0;
		}
	return -ENOENT;
}

/* The PT_LOAD segments of elf into a malloc'd array. */
static int read_segs(Elf *elf, struct elf_seg **segs, size_t *nsegs)
{
	size_t nph;
	GElf_Phdr ph;

	*segs = NULL;
	*nsegs = 0;
	if (elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	*segs = calloc(nph ? nph : 1, sizeof(**segs));
	if (!*segs)
		return -ENOMEM;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		(*segs)[(*nsegs)++] = (struct elf_seg){ .vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
						        .offset = ph.p_offset, .filesz = ph.p_filesz };
	}
	return 0;
}

static int lookup_section(Elf *elf, Elf_Scn *scn, const struct elf_seg *segs, size_t nsegs,
			  const char *const *names, size_t n, uint64_t *offsets)
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
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		     GELF_ST_TYPE(sym.st_info) != STT_OBJECT) || !sym.st_value)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (offsets[i] || strcmp(name, names[i]))
				continue;
			if (!elf_seg_vaddr_to_offset(segs, nsegs, sym.st_value, &offsets[i]))
				found++;
		}
	}
	return found;
}

int elf_file_open(const char *path, int *fd, Elf **elf)
{
	struct stat st;

	*elf = NULL;
	*fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	/* not blocking: a FIFO's open waits for a writer */
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (*fd < 0)
		return -errno;
	if (fstat(*fd, &st) || !S_ISREG(st.st_mode))
		return -ENOEXEC;
	*elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	return *elf && elf_kind(*elf) == ELF_K_ELF ? 0 : -ENOEXEC;
}

void elf_file_close(int fd, Elf *elf)
{
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

int elf_sym_offsets(const char *path, const char *const *names, size_t n, uint64_t *offsets)
{
	struct elf_seg *segs = NULL;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t nsegs = 0;
	int fd, found = 0, err = 0;

	memset(offsets, 0, n * sizeof(*offsets));
	err = elf_file_open(path, &fd, &elf);
	if (!err)
		err = read_segs(elf, &segs, &nsegs);
	if (err)
		goto cleanup;
	/* .dynsym first: the exported entry points; .symtab adds local ones. */
	for (int pass = 0; pass < 2; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			if (!gelf_getshdr(scn, &sh))
				continue;
			if (sh.sh_type == (pass ? SHT_SYMTAB : SHT_DYNSYM))
				found += lookup_section(elf, scn, segs, nsegs, names, n, offsets);
		}
	}
cleanup:
	free(segs);
	elf_file_close(fd, elf);
	return err ? err : found;
}

/* A symbol being sorted: aliases rank global, then weak, then local. */
struct func_tmp {
	struct elf_func f;
	int rank;
};

static int cmp_func(const void *a, const void *b)
{
	const struct func_tmp *x = a, *y = b;

	if (x->f.addr != y->f.addr)
		return x->f.addr < y->f.addr ? -1 : 1;
	if (!x->f.size != !y->f.size)
		return x->f.size ? -1 : 1;
	return x->rank - y->rank;
}

static int bind_rank(int bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

/* Append the function symbols of section scn to t (names into f->names). */
static int load_funcs(Elf *elf, Elf_Scn *scn, struct elf_funcs *f, struct func_tmp **t,
		      size_t *cap, size_t *names_cap)
{
	GElf_Shdr sh;
	Elf_Data *data;
	GElf_Sym sym;

	if (!gelf_getshdr(scn, &sh) || !(data = elf_getdata(scn, NULL)) || !sh.sh_entsize)
		return 0;
	for (size_t k = 0; k < sh.sh_size / sh.sh_entsize; k++) {
		const char *name;
		size_t len;
		int type;

		if (!gelf_getsym(data, k, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		len = strlen(name) + 1;
		if (array_grow(&f->names, names_cap, f->names_len + len) ||
		    array_grow(t, cap, f->n + 1))
			return -ENOMEM;
		memcpy(f->names + f->names_len, name, len);
		(*t)[f->n++] = (struct func_tmp){
			.f = { .addr = sym.st_value, .size = sym.st_size, .name = f->names_len },
			.rank = bind_rank(GELF_ST_BIND(sym.st_info)),
		};
		f->names_len += len;
	}
	return 0;
}

int elf_funcs_load(const char *path, struct elf_funcs *f)
{
	struct func_tmp *t = NULL;
	size_t cap = 0, names_cap = 0, k = 0;
	Elf *elf = NULL;
	Elf_Scn *scn;
	GElf_Shdr sh;
	int fd, err = 0;

	memset(f, 0, sizeof(*f));
	err = elf_file_open(path, &fd, &elf);
	if (!err)
		err = read_segs(elf, &f->segs, &f->nsegs);
	/* .symtab has every function; a stripped file keeps only .dynsym */
	for (int pass = 0; pass < 2 && !err && !f->n; pass++) {
		scn = NULL;
		while (!err && (scn = elf_nextscn(elf, scn)))
			if (gelf_getshdr(scn, &sh) && sh.sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB))
				err = load_funcs(elf, scn, f, &t, &cap, &names_cap);
	}
	if (err)
		goto cleanup;
	if (f->n)
		qsort(t, f->n, sizeof(*t), cmp_func);
	f->funcs = malloc((f->n ? f->n : 1) * sizeof(*f->funcs));
	if (!f->funcs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < f->n; i++)
		if (!k || t[i].f.addr != f->funcs[k - 1].addr)
			f->funcs[k++] = t[i].f;
	f->n = k;
cleanup:
	free(t);
	elf_file_close(fd, elf);
	if (err)
		elf_funcs_release(f);
	return err;
}

void elf_funcs_release(struct elf_funcs *f)
{
	free(f->funcs);
	free(f->names);
	free(f->segs);
	memset(f, 0, sizeof(*f));
}

const struct elf_func *elf_funcs_find(const struct elf_funcs *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->n;

	/* the last symbol at or below vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->funcs[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (!f->funcs[lo - 1].size)
		return &f->funcs[lo - 1];
	/* sized: it, or one it is nested in (a few back) */
	for (size_t i = lo; i > 0 && i + 4 > lo; i--)
		if (f->funcs[i - 1].size && vaddr < f->funcs[i - 1].addr + f->funcs[i - 1].size)
			return &f->funcs[i - 1];
	return NULL;
}
