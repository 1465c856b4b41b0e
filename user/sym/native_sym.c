// SPDX-License-Identifier: BSD-2-Clause
/*
 * Symbolising native addresses; see native_sym.h.
 *
 * Per process: its executable mappings, sorted, from /proc/PID/maps.  An
 * address outside all of them makes us read the maps again (a library
 * loaded since), once per such address: addresses that are in no mapping
 * even then (a stack unwound through code without frame pointers yields
 * some) are remembered, so they cost one read each.  Per file (device and
 * inode, shared by every process that maps it): its function symbols,
 * loaded at first use, and their names demangled at first use.  A file is
 * opened when first seen mapped, so that a process that exits at once
 * still has its files named.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/array.h"
#include "lib/hashmap.h"
#include "lib/proc.h"
#include "sym/demangle.h"
#include "sym/elf_syms.h"
#include "sym/native_sym.h"

struct nfile {
	struct nfile *next;
	unsigned major, minor;
	uint64_t ino;
	int ok;                 /* symbols loaded (maybe none); -1 not yet, 0 failed */
	int fd;                 /* opened when first seen mapped, until loaded; -1 */
	struct elf_funcs f;
	char **names;           /* per function: its name as shown, NULL until asked */
	size_t dem_bytes;       /* of demangled names */
};

struct nmap {
	uint64_t start, end, pgoff;
	struct nfile *file;     /* NULL: not a file */
	char *name;             /* the file's path, "[vdso]"..., or "" */
};

struct nproc {
	struct nproc *next;
	pid_t pid;
	struct nmap *maps;
	size_t n;
	struct hashmap missed;  /* addresses in no mapping */
};

struct nsym {
	struct nproc *procs;
	struct nfile *files;
};

#define MISSED_MAX 65536

struct nsym *nsym_new(void)
{
	return calloc(1, sizeof(struct nsym));
}

static void free_maps(struct nproc *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->maps[i].name);
	free(p->maps);
	p->maps = NULL;
	p->n = 0;
}

static void free_file(struct nfile *f)
{
	for (size_t i = 0; f->names && i < f->f.n; i++)
		if (f->names[i] && (f->names[i] < f->f.names ||
				    f->names[i] >= f->f.names + f->f.names_len))
			free(f->names[i]);
	free(f->names);
	if (f->fd >= 0)
		close(f->fd);
	elf_funcs_release(&f->f);
	free(f);
}

void nsym_forget(struct nsym *s, pid_t pid)
{
	for (struct nproc **pp = &s->procs; *pp; pp = &(*pp)->next) {
		struct nproc *p = *pp;

		if (p->pid != pid)
			continue;
		*pp = p->next;
		free_maps(p);
		hashmap_release(&p->missed);
		free(p);
		return;
	}
}

void nsym_free(struct nsym *s)
{
	if (!s)
		return;
	while (s->procs)
		nsym_forget(s, s->procs->pid);
	while (s->files) {
		struct nfile *f = s->files;

		s->files = f->next;
		free_file(f);
	}
	free(s);
}

static struct nfile *get_file(struct nsym *s, pid_t pid, const struct proc_map *m)
{
	char path[PATH_MAX + 64];
	struct nfile *f;

	for (f = s->files; f; f = f->next)
		if (f->major == m->major && f->minor == m->minor && f->ino == m->inode)
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->major = m->major;
	f->minor = m->minor;
	f->ino = m->inode;
	f->ok = -1;             /* not tried yet */
	f->fd = proc_map_file(pid, m, path, sizeof(path)) ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	f->next = s->files;
	s->files = f;
	return f;
}

struct maps_read {
	struct nsym *s;
	pid_t pid;
	struct nmap *maps;
	size_t n, cap;
};

static int add_map(const struct proc_map *m, void *arg)
{
	struct maps_read *r = arg;
	struct nmap *nm;

	if (m->perms[2] != 'x')
		return 0;
	if (array_grow(&r->maps, &r->cap, r->n + 1))
		return -ENOMEM;
	nm = &r->maps[r->n];
	*nm = (struct nmap){ .start = m->start, .end = m->end, .pgoff = m->offset,
			     .name = strdup(m->path) };
	if (!nm->name)
		return -ENOMEM;
	if (m->path[0] == '/' && m->inode && !(nm->file = get_file(r->s, r->pid, m))) {
		free(nm->name);
		return -ENOMEM;
	}
	r->n++;
	return 0;
}

/* Read pid's executable mappings; 0 or -errno (the process is gone). */
static int read_maps(struct nsym *s, struct nproc *p)
{
	struct maps_read r = { .s = s, .pid = p->pid };
	int ret = proc_maps_each(p->pid, add_map, &r);

	free_maps(p);
	p->maps = r.maps;
	p->n = r.n;
	return ret;
}

static struct nmap *find_map(struct nproc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

/* 1 if addr was already found in no mapping, else remember it and 0. */
static int missed_before(struct nproc *p, uint64_t addr)
{
	int added;

	if (p->missed.n >= MISSED_MAX)  /* a bound: start over */
		hashmap_clear(&p->missed);
	return hashmap_put(&p->missed, addr, &added) && !added;
}

/* Load the symbols of the file opened when it was first seen. */
static void load_file(struct nfile *f)
{
	char buf[64];
	int ret;

	snprintf(buf, sizeof(buf), "/proc/self/fd/%d", f->fd);
	ret = f->fd >= 0 ? elf_funcs_load(buf, &f->f) : -EBADF;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (ret) {
		f->ok = 0;
		return;
	}
	f->names = calloc(f->f.n ? f->f.n : 1, sizeof(*f->names));
	f->ok = !!f->names;
}

static const char *func_name(struct nfile *f, const struct elf_func *fn)
{
	size_t i = fn - f->f.funcs;

	if (!f->names[i]) {
		const char *raw = f->f.names + fn->name;
		char *d = demangle(raw);

		f->names[i] = d ? d : (char *)raw;
		if (d)
			f->dem_bytes += strlen(d) + 1;
	}
	return f->names[i];
}

int nsym_name(struct nsym *s, pid_t pid, uint64_t addr, int ret_addr, char *buf, size_t len)
{
	uint64_t look = ret_addr && addr ? addr - 1 : addr, off, vaddr;
	const struct elf_func *fn;
	struct nproc *p;
	struct nmap *m;
	const char *base;

	for (p = s->procs; p && p->pid != pid; p = p->next)
		;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->pid = pid;
		p->next = s->procs;
		s->procs = p;
		if (read_maps(s, p) == -ENOMEM)
			return -ENOMEM;
	}
	m = find_map(p, look);
	if (!m && !missed_before(p, look)) {
		if (read_maps(s, p) == -ENOMEM)
			return -ENOMEM;
		m = find_map(p, look);
	}
	if (!m) {
		snprintf(buf, len, "0x%" PRIx64, addr);
		return 0;
	}
	if (!m->file) {
		snprintf(buf, len, m->name[0] ? "0x%" PRIx64 " (%s)" : "0x%" PRIx64 "%s", addr,
			 m->name);
		return 0;
	}
	base = strrchr(m->name, '/') + 1;
	if (m->file->ok < 0)
		load_file(m->file);
	off = look - m->start + m->pgoff;
	if (!m->file->ok || elf_seg_offset_to_vaddr(m->file->f.segs, m->file->f.nsegs, off, &vaddr))
		vaddr = off;
	fn = m->file->ok ? elf_funcs_find(&m->file->f, vaddr) : NULL;
	vaddr += addr - look;
	if (!fn) {
		snprintf(buf, len, "0x%" PRIx64 " (%s)", vaddr, base);
		return 0;
	}
	snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", func_name(m->file, fn), vaddr - fn->addr,
		 base);
	return 1;
}

size_t nsym_mem(const struct nsym *s, size_t *files)
{
	size_t bytes = sizeof(*s), nf = 0;

	for (const struct nproc *p = s->procs; p; p = p->next) {
		bytes += sizeof(*p) + p->n * sizeof(*p->maps) + hashmap_mem(&p->missed);
		for (size_t i = 0; i < p->n; i++)
			bytes += strlen(p->maps[i].name) + 1;
	}
	for (const struct nfile *f = s->files; f; f = f->next) {
		bytes += sizeof(*f) + f->f.n * (sizeof(*f->f.funcs) + sizeof(*f->names)) +
			 f->f.names_len + f->f.nsegs * sizeof(*f->f.segs) + f->dem_bytes;
		nf += f->ok > 0;
	}
	if (files)
		*files = nf;
	return bytes;
}
