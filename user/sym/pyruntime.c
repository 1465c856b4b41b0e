// SPDX-License-Identifier: BSD-2-Clause
/*
 * Finding a process's CPython runtime and its layout; see pyruntime.h.
 *
 * The runtime is the _PyRuntime object of the executable (a static
 * libpython, maybe non-PIE) or of libpython3.X.so; 3.6, which has none,
 * stands its interp_head variable in for it (interp_head offset 0).
 * Layouts: offsetof tables for 3.6 to 3.12 (checked against each
 * version's headers by scripts/py-offsets.sh and tests/unit/
 * test_pyruntime.c); 3.13 to 3.15 publish their offsets in the
 * _Py_DebugOffsets that starts _PyRuntime.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/proc.h"
#include "sym/elf_syms.h"
#include "sym/pyruntime.h"

#define N GB_PY_NONE

/* A version's layout: the walker's part and the symboliser's part. */
struct py_table {
	__u32 version;
	struct gb_py_config cfg;        /* runtime, version, depth unset */
	struct py_code_layout code;
};

/*
 * offsetof on each version's headers: scripts/py-offsets.sh.  3.6 to 3.10
 * share a layout of frame objects but for where interpreters.head, the
 * thread id and f_lasti are (f_lasti: a byte offset before 3.10, code
 * units in 3.10), where the GIL and the collector's flag are (3.7 and 3.8
 * keep their collector in the runtime, not in the interpreter; 3.6 keeps
 * both in static variables: unknown), and the code object's fields (3.8
 * added co_posonlyargcount before them: posonly 8); co_lnotab (3.6 to
 * 3.9) lies where 3.10 has co_linetable.
 */
#define PY_TABLE_FRAMEOBJ(v, head, tid, lasti, gil_off, gc, gc_rt, posonly) { v, { \
		.interp_head = head, .interp_next = 0, .threads_head = 8,	\
		.tstate_next = 8,						\
		.tstate_thread_id = tid, .tstate_frame = 24, .cframe_frame = N,	\
		.frame_code = 32, .frame_prev = 24, .frame_instr = lasti,	\
		.frame_owner = N, .code_adaptive = N,				\
		.code_ident = 112 + (posonly) + 8 - 64,				\
		.gil = gil_off, .gil_holder = (gil_off) ? 8 : 0, .tstate_native_tid = N, \
		.gc_collecting = gc, .gc_in_runtime = gc_rt, .tstate_base_frame = N, \
	}, {									\
		.filename = 96 + (posonly), .name = 104 + (posonly), .qualname = N, \
		.firstlineno = 36 + (posonly) / 2, .linetable = 112 + (posonly), \
		.str_length = 16, .str_state = 32,				\
		.ascii_size = 48, .compact_size = 72, .bytes_size = 16, .bytes_sval = 32, \
	} }

static const struct py_table tables[] = {
	PY_TABLE_FRAMEOBJ(306, 0, 152, 120, 0, N, 0, 0),
	PY_TABLE_FRAMEOBJ(307, 24, 176, 104, 1264, 632, 1, 0),
	PY_TABLE_FRAMEOBJ(308, 32, 176, 104, 1152, 544, 1, 8),
	PY_TABLE_FRAMEOBJ(309, 32, 176, 104, 352, 816, 0, 8),
	PY_TABLE_FRAMEOBJ(310, 32, 176, 96, 352, 816, 0, 8),
	{ 311, {
		.interp_head = 40, .interp_next = 0, .threads_head = 16, .tstate_next = 8,
		.tstate_thread_id = 152, .tstate_frame = 56, .cframe_frame = 8,
		.frame_code = 32, .frame_prev = 48, .frame_instr = 56,
		.frame_owner = 69, .code_adaptive = 184, .code_ident = 136 + 8 - 64,
		.gil = 360, .gil_holder = 8, .tstate_native_tid = 160, .gc_collecting = 848,
		.tstate_base_frame = N,
	}, {
		.filename = 112, .name = 120, .qualname = 128, .firstlineno = 72,
		.linetable = 136, .str_length = 16, .str_state = 32,
		.ascii_size = 48, .compact_size = 72, .bytes_size = 16, .bytes_sval = 32,
	} },
	{ 312, {
		.interp_head = 40, .interp_next = 0, .threads_head = 72, .tstate_next = 8,
		.tstate_thread_id = 136, .tstate_frame = 56, .cframe_frame = 0,
		.frame_code = 0, .frame_prev = 8, .frame_instr = 56,
		.frame_owner = 70, .code_adaptive = 192, .code_ident = 136 + 8 - 64,
		.gil = 1040, .gil_in_interp = 1, .gil_holder = 8, .tstate_native_tid = 144,
		.gc_collecting = 312, .tstate_base_frame = N,
	}, {
		.filename = 112, .name = 120, .qualname = 128, .firstlineno = 68,
		.linetable = 136, .str_length = 16, .str_state = 32,
		.ascii_size = 40, .compact_size = 56, .bytes_size = 16, .bytes_sval = 32,
	} },
};

/* _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h). */
struct dbg313 {
	char cookie[8];
	__u64 version, free_threaded;
	struct { __u64 size, finalizing, interpreters_head; } runtime_state;
	struct {
		__u64 size, id, next, threads_head, gc, imports_modules, sysdict,
		      builtins, ceval_gil, gil_runtime_state, gil_enabled,
		      gil_locked, gil_holder;
	} interpreter_state;
	struct {
		__u64 size, prev, next, interp, current_frame, thread_id,
		      native_thread_id, datastack_chunk, status;
	} thread_state;
	struct { __u64 size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
	struct {
		__u64 size, filename, name, qualname, linetable, firstlineno,
		      argcount, localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct { __u64 size, ob_type; } pyobject;
	struct { __u64 size, tp_name, tp_repr, tp_flags; } type_object;
	struct { __u64 size, ob_item, ob_size; } tuple_object;
	struct { __u64 size, ob_item, ob_size; } list_object;
	struct { __u64 size, ma_keys, ma_values; } dict_object;
	struct { __u64 size, ob_fval; } float_object;
	struct { __u64 size, lv_tag, ob_digit; } long_object;
	struct { __u64 size, ob_size, ob_sval; } bytes_object;
	struct { __u64 size, state, length, asciiobject_size; } unicode_object;
	struct { __u64 size, collecting; } gc;  /* as 3.13.0's headers have it */
};

/* Sections 3.14's and 3.15's _Py_DebugOffsets have alike. */
#define DBG_INTERPRETER_STATE_314					\
	struct {							\
		__u64 size, id, next, threads_head, threads_main, gc,	\
		      imports_modules, sysdict, builtins, ceval_gil,	\
		      gil_runtime_state, gil_enabled, gil_locked, gil_holder, \
		      code_object_generation, tlbc_generation;		\
	} interpreter_state
#define DBG_FRAME_AND_CODE_314						\
	struct {							\
		__u64 size, previous, executable, instr_ptr, localsplus, owner, \
		      stackpointer, tlbc_index;				\
	} interpreter_frame;						\
	struct {							\
		__u64 size, filename, name, qualname, linetable, firstlineno, \
		      argcount, localsplusnames, localspluskinds, co_code_adaptive, \
		      co_tlbc;						\
	} code_object
#define DBG_OBJECTS_314							\
	struct { __u64 size, ob_item, ob_size; } tuple_object;		\
	struct { __u64 size, ob_item, ob_size; } list_object;		\
	struct { __u64 size, used, table, mask; } set_object;		\
	struct { __u64 size, ma_keys, ma_values; } dict_object;		\
	struct { __u64 size, ob_fval; } float_object;			\
	struct { __u64 size, lv_tag, ob_digit; } long_object;		\
	struct { __u64 size, ob_size, ob_sval; } bytes_object
/* After gc: PEP 768's remote debugger support, the same in 3.14 and 3.15. */
#define DBG_TAIL_314							\
	struct { __u64 size, gi_name, gi_iframe, gi_frame_state; } gen_object; \
	struct { __u64 next, prev; } llist_node;			\
	struct {							\
		__u64 eval_breaker, remote_debugger_support,		\
		      remote_debugging_enabled, debugger_pending_call,	\
		      debugger_script_path, debugger_script_path_size;	\
	} debugger_support

/*
 * _Py_DebugOffsets of 3.14 (Include/internal/pycore_debug_offsets.h):
 * threads_main, code_object_generation and tlbc_generation in the
 * interpreter state, stackpointer and tlbc_index in the frame, co_tlbc,
 * a set_object section, and after gc the generator objects, list nodes
 * and remote debugger support.  Checked against Debian's 3.14.10
 * (scripts/sid-python.sh).
 */
struct dbg314 {
	char cookie[8];
	__u64 version, free_threaded;
	struct { __u64 size, finalizing, interpreters_head; } runtime_state;
	DBG_INTERPRETER_STATE_314;
	struct {
		__u64 size, prev, next, interp, current_frame, thread_id,
		      native_thread_id, datastack_chunk, status;
	} thread_state;
	DBG_FRAME_AND_CODE_314;
	struct { __u64 size, ob_type; } pyobject;
	struct { __u64 size, tp_name, tp_repr, tp_flags; } type_object;
	DBG_OBJECTS_314;
	struct { __u64 size, state, length, asciiobject_size; } unicode_object;
	struct { __u64 size, collecting; } gc;
	DBG_TAIL_314;
};

/*
 * _Py_DebugOffsets of 3.15: base_frame, last_profiled_frame(_seq),
 * holds_gil, gil_requested, current_exception and exc_state in the thread
 * state; an err_stackitem section; tp_basicsize and tp_dictoffset; a
 * heap_type_object section; compactunicodeobject_size; gc's frame and
 * generation stats.  Checked against Debian's 3.15.2.
 */
struct dbg315 {
	char cookie[8];
	__u64 version, free_threaded;
	struct { __u64 size, finalizing, interpreters_head; } runtime_state;
	DBG_INTERPRETER_STATE_314;
	struct {
		__u64 size, prev, next, interp, current_frame, base_frame,
		      last_profiled_frame, last_profiled_frame_seq, thread_id,
		      native_thread_id, datastack_chunk, status, holds_gil,
		      gil_requested, current_exception, exc_state;
	} thread_state;
	struct { __u64 exc_value; } err_stackitem;
	DBG_FRAME_AND_CODE_314;
	struct { __u64 size, ob_type; } pyobject;
	struct { __u64 size, tp_name, tp_repr, tp_flags, tp_basicsize, tp_dictoffset; } type_object;
	struct { __u64 size, ht_cached_keys; } heap_type_object;
	DBG_OBJECTS_314;
	struct {
		__u64 size, state, length, asciiobject_size, compactunicodeobject_size;
	} unicode_object;
	struct { __u64 size, collecting, frame, generation_stats_size, generation_stats; } gc;
	DBG_TAIL_314;
};

/* The fields both DebugOffsets layouts give, as plain numbers. */
struct dbg {
	__u64 version, free_threaded;
	__u64 interpreters_head, interp_next, threads_head;
	__u64 ts_size, ts_next, ts_current_frame, ts_thread_id;
	__u64 fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_owner;
	__u64 co_size, co_filename, co_name, co_qualname, co_linetable,
	      co_firstlineno, co_code_adaptive;
	__u64 bytes_ob_size, bytes_ob_sval;
	__u64 str_state, str_length, str_ascii_size;
	__u64 ts_native_thread_id, gil_runtime_state, gil_holder;
	__u64 interp_size, interp_gc, gc_size, gc_collecting;
	__u64 ts_base_frame;    /* 3.15+; else N */
	/* 3.14+ (else N): the main thread, PEP 768's fields */
	__u64 threads_main, ts_eval_breaker, ts_remote, interp_remote_enabled,
	      remote_pending, remote_path, remote_path_size;
};

static void whyf(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void whyf(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static int read_u64(int fd, __u64 addr, __u64 *v)
{
	return proc_mem_read(fd, addr, v, sizeof(*v));
}

/* A mapped file that may hold the runtime. */
struct cand {
	char path[PATH_MAX];    /* as the maps give it */
	char open[PATH_MAX];    /* where to read it from here (proc_map_file()) */
	__u64 start;            /* start of its mapping at file offset 0 */
	int data;               /* its writable segment is mapped: the loader is done */
};

struct cands {
	struct cand *c;
	int n, max;
	pid_t pid;
	char exe[PATH_MAX];
};

static int add_candidate(const struct proc_map *m, void *arg)
{
	struct cands *cs = arg;
	const char *base = strrchr(m->path, '/');
	struct cand *c;

	if (!base || strstr(m->path, " (deleted)") ||
	    (strcmp(m->path, cs->exe) && strncmp(base + 1, "libpython", 9)))
		return 0;
	/* the loader maps a library's segments in order, the writable one last */
	for (int i = 0; i < cs->n; i++)
		if (!strcmp(cs->c[i].path, m->path)) {
			cs->c[i].data |= m->perms[1] == 'w';
			return 0;
		}
	if (m->offset || cs->n == cs->max)
		return 0;
	c = &cs->c[cs->n];
	snprintf(c->path, sizeof(c->path), "%s", m->path);
	if (proc_map_file(cs->pid, m, c->open, sizeof(c->open)))
		return 0;
	c->data = m->perms[1] == 'w';
	c->start = m->start;
	cs->n++;
	return 0;
}

struct addr_look {
	__u64 addr;
	int writable;
};

static int addr_in(const struct proc_map *m, void *arg)
{
	struct addr_look *a = arg;

	if (a->addr < m->start || a->addr >= m->end)
		return 0;
	a->writable = m->perms[1] == 'w';
	return 1;
}

/*
 * Is addr in a writable mapping of pid?  The loader maps a library's whole
 * span from its file first, then its segments over it, its bss last: a
 * variable in the bss (3.8's and 3.9's _PyRuntime in a libpython) reads
 * as the file's bytes until then.  1 yes, 0 no (not yet), -errno.
 */
static int addr_writable(pid_t pid, __u64 addr)
{
	struct addr_look a = { .addr = addr };
	int err = proc_maps_each(pid, addr_in, &a);

	return err < 0 ? err : a.writable;
}

/*
 * The candidates: the executable and libpython*, each with the start of
 * its mapping at offset 0.  Other objects (torch's hundreds of .so) are
 * not read: CPython lives in one of these two, or it is an embedding we
 * do not support.
 */
static int list_candidates(pid_t pid, struct cand *c, int max)
{
	struct cands cs = { .c = c, .max = max, .pid = pid };
	char path[64];
	ssize_t n;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, cs.exe, sizeof(cs.exe) - 1);
	/* the maps may be readable where the process is not (another user's) */
	if (n < 0 && (errno == EACCES || errno == EPERM))
		return -errno;
	cs.exe[n > 0 ? n : 0] = 0;
	err = proc_maps_each(pid, add_candidate, &cs);
	return err < 0 ? err : cs.n;
}

/*
 * list_candidates() into *c, a new array the caller frees: their number,
 * or -errno (*c NULL; a reason in why where the maps cannot be read).
 */
static int candidates_of(pid_t pid, struct cand **c, char *why, size_t whylen)
{
	int n;

	*c = calloc(16, sizeof(**c));
	if (!*c)
		return -ENOMEM;
	n = list_candidates(pid, *c, 16);
	if (n < 0) {
		free(*c);
		*c = NULL;
		if (n == -EACCES || n == -EPERM)
			whyf(why, whylen, "cannot read pid %d: %s (%s)", pid, strerror(-n),
			     PROC_ACCESS_HINT);
		else
			whyf(why, whylen, "cannot read the maps of pid %d: %s", pid, strerror(-n));
	}
	return n;
}

enum {
	SYM_RUNTIME, SYM_VERSION, SYM_310, SYM_309, SYM_308, SYM_307, SYM_306,
	SYM_HEAD_FN, SYM_CODE_TYPE, SYM_N
};
static const char *const sym_names[SYM_N] = {
	"_PyRuntime", "Py_Version",
	/*
	 * new in 3.10, 3.9, 3.8, 3.7 and 3.6: the version where there is no
	 * Py_Version (3.11+)
	 */
	"PyIter_Send", "PyFrame_GetBack", "PyCode_NewWithPosOnlyArgs", "PyContext_New",
	"PyOS_FSPath",
	/* returns interp_head, where there is no _PyRuntime (3.6) */
	"PyInterpreterState_Head",
	/* its tp_dealloc frees code objects (pyruntime_code_free()) */
	"PyCode_Type",
};

/*
 * Look up the sym_names among the defined symbols of the ELF file at
 * path, any type, and the page-aligned address of its PT_LOAD at offset 0.
 * Returns 0 or -errno.
 */
static int elf_lookup(const char *path, __u64 vals[SYM_N], __u64 *vaddr0)
{
	Elf *elf = NULL;
	Elf_Scn *scn;
	GElf_Shdr sh;
	GElf_Phdr ph;
	size_t nph;
	int fd, err = 0, have_load = 0;

	memset(vals, 0, SYM_N * sizeof(*vals));
	err = elf_file_open(path, &fd, &elf);
	if (!err && elf_getphdrnum(elf, &nph))
		err = -ENOEXEC;
	if (err)
		goto cleanup;
	for (size_t i = 0; i < nph && !have_load; i++) {
		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && !ph.p_offset) {
			*vaddr0 = ph.p_vaddr & ~0xfffULL;
			have_load = 1;
		}
	}
	if (!have_load) {
		err = -ENOEXEC;
		goto cleanup;
	}
	/* .dynsym first: exported; .symtab for a stripped-of-exports build */
	for (int pass = 0; pass < 2; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			Elf_Data *data;
			GElf_Sym sym;

			if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
			    sh.sh_type != (pass ? SHT_SYMTAB : SHT_DYNSYM) ||
			    !(data = elf_getdata(scn, NULL)))
				continue;
			for (size_t k = 0; k < sh.sh_size / sh.sh_entsize; k++) {
				const char *name;

				if (!gelf_getsym(data, k, &sym) || sym.st_shndx == SHN_UNDEF ||
				    !sym.st_value)
					continue;
				name = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (!name || (name[0] != '_' && name[0] != 'P'))
					continue;
				for (int i = 0; i < SYM_N; i++)
					if (!vals[i] && !strcmp(name, sym_names[i]))
						vals[i] = sym.st_value;
			}
		}
		if (vals[SYM_RUNTIME] && vals[SYM_VERSION])
			break;
	}
cleanup:
	elf_file_close(fd, elf);
	return err;
}

/*
 * 309 out of ".../libpython3.9.so.1.0" or ".../python3.9", 207 out of
 * ".../python2.7": major * 100 + minor, or -1.
 */
static int version_from_name(const char *path)
{
	const char *base = strrchr(path, '/');
	const char *p;
	int major, minor;

	base = base ? base + 1 : path;
	p = strstr(base, "python");
	if (!p || sscanf(p, "python%d.%d", &major, &minor) != 2 || major < 2 || major > 3 ||
	    minor < 0 || minor > 99)
		return -1;
	return major * 100 + minor;
}

/*
 * 3.6: the address of interp_head, the variable PyInterpreterState_Head()
 * returns (at fn in pid), from its code: a load into %rax,
 * %rip-relative ("mov disp32(%rip),%rax") or absolute in a non-PIE
 * executable ("mov disp32,%rax"), within its first bytes (a frame
 * pointer's push and mov may come first).  0 if its code is not that.
 */
static __u64 interp_head_of(int fd, __u64 fn)
{
	__u8 b[24];

	if (proc_mem_read(fd, fn, b, sizeof(b)))
		return 0;
	for (unsigned i = 0; i + 8 <= sizeof(b); i++) {
		__s32 d;

		if (b[i] != 0x48 || b[i + 1] != 0x8b)
			continue;
		if (b[i + 2] == 0x05) {
			memcpy(&d, b + i + 3, 4);
			return fn + i + 7 + (__s64)d;
		}
		if (b[i + 2] == 0x04 && b[i + 3] == 0x25) {
			memcpy(&d, b + i + 4, 4);
			return (__u64)(__s64)d;
		}
	}
	return 0;
}

/*
 * 3.13's to 3.15's _Py_DebugOffsets name the fields used alike, at
 * different places: read the version's struct, keep the fields used.
 */
#define READ_DBG(type, more) do {					\
	type o;								\
									\
	if (proc_mem_read(fd, runtime, &o, sizeof(o)))			\
		return -EFAULT;						\
	if (memcmp(o.cookie, "xdebugpy", 8))				\
		return -EINVAL;						\
	*d = (struct dbg){						\
		o.version, o.free_threaded,				\
		o.runtime_state.interpreters_head, o.interpreter_state.next, \
		o.interpreter_state.threads_head,			\
		o.thread_state.size, o.thread_state.next,		\
		o.thread_state.current_frame, o.thread_state.thread_id,	\
		o.interpreter_frame.size, o.interpreter_frame.previous,	\
		o.interpreter_frame.executable, o.interpreter_frame.instr_ptr, \
		o.interpreter_frame.owner,				\
		o.code_object.size, o.code_object.filename, o.code_object.name, \
		o.code_object.qualname, o.code_object.linetable,	\
		o.code_object.firstlineno, o.code_object.co_code_adaptive, \
		o.bytes_object.ob_size, o.bytes_object.ob_sval,		\
		o.unicode_object.state, o.unicode_object.length,	\
		o.unicode_object.asciiobject_size,			\
		o.thread_state.native_thread_id,			\
		o.interpreter_state.gil_runtime_state,			\
		o.interpreter_state.gil_holder,				\
		o.interpreter_state.size, o.interpreter_state.gc,	\
		o.gc.size, o.gc.collecting, N, N, N, N, N, N, N, N,	\
	};								\
	more;								\
} while (0)
#define READ_REMOTE_314							\
	d->threads_main = o.interpreter_state.threads_main;		\
	d->ts_eval_breaker = o.debugger_support.eval_breaker;		\
	d->ts_remote = o.debugger_support.remote_debugger_support;	\
	d->interp_remote_enabled = o.debugger_support.remote_debugging_enabled; \
	d->remote_pending = o.debugger_support.debugger_pending_call;	\
	d->remote_path = o.debugger_support.debugger_script_path;	\
	d->remote_path_size = o.debugger_support.debugger_script_path_size

static int read_dbg(int fd, __u64 runtime, unsigned minor, struct dbg *d)
{
	if (minor == 13)
		READ_DBG(struct dbg313, );
	else if (minor == 14)
		READ_DBG(struct dbg314, READ_REMOTE_314);
	else
		READ_DBG(struct dbg315, d->ts_base_frame = o.thread_state.base_frame;
			 READ_REMOTE_314);
	/* every offset we use inside the struct it indexes: a layout check */
	if (d->ts_next + 8 > d->ts_size || d->ts_current_frame + 8 > d->ts_size ||
	    d->ts_thread_id + 8 > d->ts_size || d->fr_previous + 8 > d->fr_size ||
	    d->fr_executable + 8 > d->fr_size || d->fr_instr_ptr + 8 > d->fr_size ||
	    d->fr_owner + 1 > d->fr_size || d->co_linetable + 8 > d->co_size ||
	    d->co_filename + 8 > d->co_size || d->co_qualname + 8 > d->co_size ||
	    d->co_firstlineno + 4 > d->co_size || d->co_code_adaptive > d->co_size ||
	    d->co_linetable + 8 < GB_PY_IDENT_LEN || d->str_ascii_size > 256 ||
	    d->interpreters_head > 1 << 20 || d->threads_head > 1 << 20 ||
	    d->interp_next + 8 > d->interp_size)
		return -EINVAL;
	return 0;
}

/* Fill cfg and code from the process's _Py_DebugOffsets (3.13+). */
static void from_dbg(const struct dbg *d, unsigned minor, struct gb_py_config *cfg,
		     struct py_code_layout *code)
{
	cfg->interp_head = d->interpreters_head;
	cfg->interp_next = d->interp_next;
	cfg->threads_head = d->threads_head;
	cfg->tstate_next = d->ts_next;
	cfg->tstate_thread_id = d->ts_thread_id;
	cfg->tstate_frame = d->ts_current_frame;
	cfg->cframe_frame = N;
	cfg->frame_code = d->fr_executable;
	cfg->frame_prev = d->fr_previous;
	cfg->frame_instr = d->fr_instr_ptr;
	cfg->frame_owner = d->fr_owner;
	cfg->code_adaptive = d->co_code_adaptive;
	cfg->code_ident = d->co_linetable + 8 - GB_PY_IDENT_LEN;
	cfg->exec_tag_mask = minor >= 14 ? 3 : 0;
	cfg->tstate_native_tid = d->ts_native_thread_id + 4 <= d->ts_size ?
				 d->ts_native_thread_id : N;
	cfg->tstate_base_frame = d->ts_base_frame != N && d->ts_base_frame + 8 <= d->ts_size ?
				 d->ts_base_frame : N;
	/* the GIL inside the interpreter, gil_holder its last_holder there */
	cfg->gil_in_interp = 1;
	cfg->gil = d->gil_holder > d->gil_runtime_state &&
		   d->gil_holder - d->gil_runtime_state < GB_PY_GIL_SIZE ? d->gil_runtime_state : 0;
	cfg->gil_holder = cfg->gil ? d->gil_holder - d->gil_runtime_state : 0;
	/* interp->gc.collecting, where both offsets are inside their structs */
	cfg->gc_collecting = d->gc_size && d->gc_collecting + 4 <= d->gc_size &&
			     d->interp_gc + d->gc_size <= d->interp_size ?
			     d->interp_gc + d->gc_collecting : N;
	if (!code)
		return;
	*code = (struct py_code_layout){
		.filename = d->co_filename, .name = d->co_name,
		.qualname = d->co_qualname, .firstlineno = d->co_firstlineno,
		.linetable = d->co_linetable, .str_length = d->str_length,
		.str_state = d->str_state, .ascii_size = d->str_ascii_size,
		/* + utf8_length, utf8 (wstr_length went in 3.12) */
		.compact_size = d->str_ascii_size + 16,
		.bytes_size = d->bytes_ob_size, .bytes_sval = d->bytes_ob_sval,
	};
}

static const struct py_table *table_of(unsigned version)
{
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (tables[i].version == version)
			return &tables[i];
	return NULL;
}

int pyruntime_code_layout(pid_t pid, const struct gb_py_config *cfg,
			  struct py_code_layout *out)
{
	const struct py_table *t = table_of(cfg->version);
	struct gb_py_config tmp;
	struct dbg d;
	int fd, err;

	if (t) {
		*out = t->code;
		return 0;
	}
	if (cfg->version < 313 || cfg->version > 315)
		return -ENOTSUP;
	fd = proc_mem_open(pid);
	if (fd < 0)
		return fd;
	err = read_dbg(fd, cfg->runtime, cfg->version % 100, &d);
	close(fd);
	if (err)
		return err == -EFAULT ? -ESRCH : err;
	from_dbg(&d, cfg->version % 100, &tmp, out);
	return 0;
}

/*
 * Check what can be checked of a runtime: interpreters.head is readable,
 * and if set (the runtime may not be initialised yet when we attach at
 * exec), so is the interpreter's thread list head.
 */
static int check_runtime(int fd, const struct gb_py_config *cfg, char *why, size_t whylen)
{
	__u64 interp, head;

	if (read_u64(fd, cfg->runtime + cfg->interp_head, &interp)) {
		whyf(why, whylen, "cannot read the _PyRuntime of CPython %u.%u",
		     cfg->version / 100, cfg->version % 100);
		return -ENOTSUP;
	}
	if (interp && read_u64(fd, interp + cfg->threads_head, &head)) {
		whyf(why, whylen, "CPython %u.%u runtime has an unreadable interpreter state",
		     cfg->version / 100, cfg->version % 100);
		return -ENOTSUP;
	}
	return 0;
}

/* proc_mem_open(), saying why it failed */
static int mem_open(pid_t pid, char *why, size_t whylen)
{
	int fd = proc_mem_open(pid);

	if (fd < 0)
		whyf(why, whylen, "cannot open the memory of pid %d: %s", pid, strerror(-fd));
	return fd;
}

int pyruntime_find(pid_t pid, struct gb_py_config *cfg, char *why, size_t whylen)
{
	struct cand *c;
	__u64 vals[SYM_N], vaddr0 = 0, bias = 0;
	const char *file = NULL;
	int n, fd = -1, err = -ENOENT, minor = -1;

	whyf(why, whylen, "no CPython runtime");
	n = candidates_of(pid, &c, why, whylen);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (elf_lookup(c[i].open, vals, &vaddr0) ||
		    (!vals[SYM_RUNTIME] && !vals[SYM_HEAD_FN]))
			continue;
		/* still being mapped (a process just started): its data is not there yet */
		if (!c[i].data) {
			whyf(why, whylen, "%s is still being loaded", c[i].path);
			err = -EAGAIN;
			goto cleanup;
		}
		file = c[i].path;
		bias = c[i].start - vaddr0;
		break;
	}
	if (!file) {
		char pypy[PATH_MAX];

		/* PyPy keeps no CPython frames: said once, not looked for again */
		if (!proc_find_mapping(pid, "libpypy", pypy, sizeof(pypy))) {
			whyf(why, whylen, "it runs PyPy (%s): only CPython's stacks are walked",
			     strrchr(pypy, '/') + 1);
			err = -ENOTSUP;
		}
		goto cleanup;
	}

	fd = mem_open(pid, why, whylen);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	memset(cfg, 0, sizeof(*cfg));
	err = -ENOTSUP;
	if (vals[SYM_VERSION]) {
		__u32 hex;

		if (proc_mem_read(fd, bias + vals[SYM_VERSION], &hex, sizeof(hex))) {
			whyf(why, whylen, "cannot read Py_Version of pid %d", pid);
			goto cleanup;
		}
		if (hex >> 24 != 3) {
			whyf(why, whylen, "unexpected Py_Version %#x", hex);
			goto cleanup;
		}
		minor = (hex >> 16) & 0xff;
	} else if (vals[SYM_RUNTIME] && (vals[SYM_310] || vals[SYM_309] || vals[SYM_308] ||
					 vals[SYM_307])) {
		minor = vals[SYM_310] ? 10 : vals[SYM_309] ? 9 : vals[SYM_308] ? 8 : 7;
	} else if (!vals[SYM_RUNTIME] && vals[SYM_306]) {
		minor = 6;
	} else {
		/* older than 3.6 (2.7 too): named after its file where it can be */
		int v = version_from_name(file);

		if (v >= 0)
			whyf(why, whylen, "CPython %d.%d is not supported (3.6 to 3.15)",
			     v / 100, v % 100);
		else
			whyf(why, whylen, "CPython older than 3.6 is not supported (3.6 to 3.15)");
		goto cleanup;
	}
	if (minor < 6 || minor > 15) {
		whyf(why, whylen, "CPython 3.%d is not supported (3.6 to 3.15)", minor);
		goto cleanup;
	}
	if (vals[SYM_RUNTIME]) {
		cfg->runtime = bias + vals[SYM_RUNTIME];
	} else {
		cfg->runtime = interp_head_of(fd, bias + vals[SYM_HEAD_FN]);
		if (!cfg->runtime) {
			whyf(why, whylen, "CPython 3.6's interpreter list is not where its "
			     "PyInterpreterState_Head() reads it");
			goto cleanup;
		}
	}
	err = addr_writable(pid, cfg->runtime);
	if (err < 0) {
		whyf(why, whylen, "cannot read the maps of pid %d: %s", pid, strerror(-err));
		goto cleanup;
	}
	if (!err) {
		whyf(why, whylen, "%s is still being loaded", file);
		err = -EAGAIN;
		goto cleanup;
	}
	cfg->version = 300 + minor;
	{
		char tag[32];

		/* libpython3.13t.so, python3.13t: the free-threaded build */
		snprintf(tag, sizeof(tag), "python3.%dt", minor);
		if (strstr(strrchr(file, '/'), tag)) {
			whyf(why, whylen, "free-threaded CPython is not supported");
			err = -ENOTSUP;
			goto cleanup;
		}
	}
	if (minor >= 13) {
		struct dbg d;
		int e = read_dbg(fd, cfg->runtime, minor, &d);

		if (e) {
			whyf(why, whylen, e == -EFAULT ?
			     "cannot read the _Py_DebugOffsets of CPython 3.%d" :
			     "CPython 3.%d has no valid _Py_DebugOffsets", minor);
			err = -ENOTSUP;
			goto cleanup;
		}
		if (d.free_threaded) {
			whyf(why, whylen, "free-threaded CPython is not supported");
			err = -ENOTSUP;
			goto cleanup;
		}
		if (((d.version >> 16) & 0xff) != (__u64)minor || d.version >> 24 != 3) {
			whyf(why, whylen, "CPython 3.%d has _Py_DebugOffsets of version %#llx",
			     minor, (unsigned long long)d.version);
			err = -ENOTSUP;
			goto cleanup;
		}
		from_dbg(&d, minor, cfg, NULL);
	} else {
		const struct py_table *t = table_of(cfg->version);
		__u64 runtime = cfg->runtime;

		*cfg = t->cfg;
		cfg->runtime = runtime;
		cfg->version = t->version;
	}
	/* before 3.12 no serial among the bytes a code token folds: its file name too */
	cfg->ident_file = minor < 12 ? table_of(cfg->version)->code.filename - cfg->code_ident :
		GB_PY_NONE;
	cfg->ident_firstline = minor < 12 ? table_of(cfg->version)->code.firstlineno : GB_PY_NONE;
	err = check_runtime(fd, cfg, why, whylen);
	if (!err)
		whyf(why, whylen, "CPython 3.%d", minor);
cleanup:
	if (fd >= 0)
		close(fd);
	free(c);
	return err;
}

/* The mapping that holds an address. */
struct map_look {
	__u64 addr;
	struct proc_map m;      /* m.end 0: none */
};

static int map_of(const struct proc_map *m, void *arg)
{
	struct map_look *a = arg;

	if (a->addr < m->start || a->addr >= m->end)
		return 0;
	a->m = *m;
	return 1;
}

/* offsetof(PyTypeObject, tp_dealloc), 3.6 to 3.15 (a build without Py_TRACE_REFS) */
#define PY_TYPE_DEALLOC 48

int pyruntime_code_free(pid_t pid, char *path, size_t pathlen, __u64 *off, char *why,
			size_t whylen)
{
	struct map_look look = { 0 };
	struct cand *c;
	__u64 vals[SYM_N], vaddr0 = 0;
	int n, i, fd = -1, err = -ENOENT;

	whyf(why, whylen, "no PyCode_Type in its executable or libpython");
	n = candidates_of(pid, &c, why, whylen);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++)
		if (!elf_lookup(c[i].open, vals, &vaddr0) && vals[SYM_CODE_TYPE])
			break;
	if (i == n)
		goto cleanup;
	fd = mem_open(pid, why, whylen);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	/*
	 * The pointer as the loader relocated it: where the function lies in
	 * the process (in another file where PyCode_Type is an executable's
	 * copy of libpython's)
	 */
	if (read_u64(fd, c[i].start - vaddr0 + vals[SYM_CODE_TYPE] + PY_TYPE_DEALLOC, &look.addr) ||
	    proc_maps_each(pid, map_of, &look) < 0 || !look.m.end || look.m.perms[2] != 'x' ||
	    !look.m.path[0] || proc_map_file(pid, &look.m, path, pathlen)) {
		/* most likely not relocated yet: the loader is still at work */
		err = -EAGAIN;
		whyf(why, whylen, "PyCode_Type's tp_dealloc in %s is not in a mapped file's code",
		     c[i].path);
		goto cleanup;
	}
	*off = look.addr - look.m.start + look.m.offset;
	err = 0;
cleanup:
	if (fd >= 0)
		close(fd);
	free(c);
	return err;
}

int pyruntime_finalize(pid_t pid, char *path, size_t pathlen, __u64 *off, char *why,
		       size_t whylen)
{
	static const char *const name = "Py_FinalizeEx";
	struct cand *c;
	uint64_t o;
	int n, err = -ENOENT;

	whyf(why, whylen, "no Py_FinalizeEx in its executable or libpython");
	n = candidates_of(pid, &c, why, whylen);
	if (n < 0)
		return n;
	for (int i = 0; i < n && err; i++)
		if (elf_sym_offsets(c[i].open, &name, 1, &o) == 1 &&
		    (size_t)snprintf(path, pathlen, "%s", c[i].open) < pathlen) {
			*off = o;
			err = 0;
		}
	free(c);
	return err;
}

/*
 * The GB_PY_FILE_LEN bytes of a str or bytes object from addr that a code
 * token folds, read as BPF's py_ident_obj() reads them: where they run
 * past the object into memory that cannot be read, its head bytes and
 * then those its length says (where the state word has state_mask's bits).
 */
static int ident_obj(int fd, __u64 addr, __u64 buf[GB_PY_FILE_LEN / 8], __u32 head,
		     __u64 state_mask)
{
	__u64 n;
	int err;

	if (!proc_mem_read(fd, addr, buf, GB_PY_FILE_LEN))
		return 0;
	if ((err = proc_mem_read(fd, addr, buf, head)))
		return err;
	if ((buf[2] & state_mask) != state_mask)
		return 0;
	n = buf[0] < GB_PY_FILE_LEN - head ? buf[0] : GB_PY_FILE_LEN - head;
	return n ? proc_mem_read(fd, addr + head, (__u8 *)buf + head, n) : 0;
}

int pyruntime_code_ident(int fd, const struct gb_py_config *cfg, __u64 code,
			 const __u64 w[GB_PY_IDENT_LEN / 8], __u32 *ident)
{
	__u64 buf[GB_PY_FILE_LEN / 8] = { 0 };
	__u32 first;
	int err;

	*ident = gb_py_ident(w);
	if (cfg->ident_file == GB_PY_NONE)
		return 0;
	if (cfg->ident_file > GB_PY_IDENT_LEN - 8)
		return -EINVAL;
	if ((err = ident_obj(fd, w[cfg->ident_file / 8] + GB_PY_FILE_AT, buf, GB_PY_STR_HEAD,
			     GB_PY_STR_COMPACT_ASCII)))
		return err;
	*ident = gb_py_ident_file(*ident, buf);
	if ((err = proc_mem_read(fd, code + cfg->ident_firstline, &first, sizeof(first))))
		return err;
	/*
	 * Its line table, the last pointer of w, the same way; none of it
	 * where it cannot be read at all (BPF's token is then 0: unknown),
	 * not an error: a token that cannot be BPF's, the object not the one
	 * it walked (-ESTALE to pysym)
	 */
	if (ident_obj(fd, w[GB_PY_IDENT_LEN / 8 - 1] + GB_PY_FILE_AT, buf, GB_PY_BYTES_HEAD, 0))
		buf[0] = 0;
	*ident = gb_py_ident_lines(*ident, first, buf);
	return 0;
}

/* 1 if thread state ts is running Python code (has a frame of its own). */
static int runs_python(int fd, const struct dbg *d, __u64 ts)
{
	__u64 f = 0;

	if (read_u64(fd, ts + d->ts_current_frame, &f) || !f)
		return 0;
	/* 3.15: a thread that runs none sits at its sentinel base frame */
	return d->ts_base_frame == N || f != ts + d->ts_base_frame;
}

/*
 * The main interpreter: the oldest, last in the runtime's list (newest
 * first); 0 if none can be read.
 */
static __u64 main_interp(int fd, const struct gb_py_config *cfg)
{
	__u64 interp = 0, next;

	if (read_u64(fd, cfg->runtime + cfg->interp_head, &next))
		return 0;
	for (int i = 0; next && i < 4096; i++) {
		interp = next;
		if (read_u64(fd, interp + cfg->interp_next, &next))
			return 0;
	}
	return next ? 0 : interp;
}

int pyruntime_remote(pid_t pid, const struct gb_py_config *cfg, struct py_remote *rx,
		     char *why, size_t whylen)
{
	__u64 interp, ts, main_ts = 0, holder = 0, main_py = 0, first = 0, pick = 0, tid = 0;
	__s32 enabled = 0;
	struct dbg d;
	int fd, err;

	memset(rx, 0, sizeof(*rx));
	if (cfg->version < 314) {
		whyf(why, whylen, "CPython %u.%u has no remote execution (3.14+)",
		     cfg->version / 100, cfg->version % 100);
		return -EOPNOTSUPP;
	}
	fd = mem_open(pid, why, whylen);
	if (fd < 0)
		return fd;
	err = -ENOTSUP;
	if (read_dbg(fd, cfg->runtime, cfg->version % 100, &d) ||
	    d.remote_path_size < 64 || d.remote_path_size > 4096 ||
	    d.ts_remote + d.remote_path + d.remote_path_size > d.ts_size ||
	    d.ts_remote + d.remote_pending + 4 > d.ts_size || d.ts_eval_breaker + 8 > d.ts_size ||
	    d.interp_remote_enabled + 4 > d.interp_size || d.threads_main + 8 > d.interp_size) {
		whyf(why, whylen, "CPython %u.%u's remote debugger offsets are not readable",
		     cfg->version / 100, cfg->version % 100);
		goto out;
	}
	err = -ESRCH;
	/* the job's threads are the main interpreter's */
	interp = main_interp(fd, cfg);
	if (!interp) {
		whyf(why, whylen, "no interpreter in the CPython runtime");
		goto out;
	}
	err = -EPERM;
	if (proc_mem_read(fd, interp + d.interp_remote_enabled, &enabled, sizeof(enabled)) ||
	    enabled != 1) {
		whyf(why, whylen, "CPython %u.%u's remote debugging is disabled in it "
		     "(PYTHON_DISABLE_REMOTE_DEBUG, -X disable_remote_debug)",
		     cfg->version / 100, cfg->version % 100);
		goto out;
	}
	/*
	 * The thread that last held the GIL if it runs Python (it runs
	 * bytecode: a safe point comes soonest there), else the main thread if
	 * it does, else the first that does, else the main thread; only states
	 * in the interpreter's list (the last holder may be gone).
	 */
	read_u64(fd, interp + d.threads_main, &main_ts);
	if (d.gil_holder + 8 <= d.interp_size)
		read_u64(fd, interp + d.gil_holder, &holder);
	if (!read_u64(fd, interp + d.threads_head, &ts))
		for (int i = 0; ts && i < 4096 && !pick; i++) {
			if (runs_python(fd, &d, ts)) {
				if (ts == holder)
					pick = ts;
				else if (ts == main_ts)
					main_py = ts;
				else if (!first)
					first = ts;
			}
			if (read_u64(fd, ts + d.ts_next, &ts))
				break;
		}
	if (!pick)
		pick = main_py ? main_py : first ? first : main_ts;
	err = -ESRCH;
	if (!pick) {
		whyf(why, whylen, "no thread state in the CPython runtime");
		goto out;
	}
	if (d.ts_native_thread_id + 8 <= d.ts_size)
		read_u64(fd, pick + d.ts_native_thread_id, &tid);
	rx->tstate = pick;
	rx->eval_breaker = pick + d.ts_eval_breaker;
	rx->pending = pick + d.ts_remote + d.remote_pending;
	rx->path = pick + d.ts_remote + d.remote_path;
	rx->path_size = (__u32)d.remote_path_size;
	rx->native_tid = (__u32)tid;
	err = 0;
out:
	close(fd);
	return err;
}

/* glibc x86-64 (2.26 on): the kernel's tid in struct pthread, from pthread_self() */
#define GLIBC_PTHREAD_TID 0x2d0

/*
 * The thread state, in any interpreter, whose thread_id is thread_id
 * (tid 0), or whose thread is tid (by native_thread_id on 3.11+, else by
 * the tid glibc keeps in its struct pthread), in *ts_out.  0, or -ESRCH.
 */
static int find_tstate(int fd, const struct gb_py_config *cfg, __u64 thread_id, pid_t tid,
		       __u64 *ts_out)
{
	__u64 interp, ts;

	/* every interpreter's threads, newest first */
	if (read_u64(fd, cfg->runtime + cfg->interp_head, &interp) || !interp ||
	    read_u64(fd, interp + cfg->threads_head, &ts))
		return -ESRCH;
	for (int i = 0; interp && i < 4096; i++) {
		__u64 id;
		__u32 native = 0;

		if (!ts) {
			if (read_u64(fd, interp + cfg->interp_next, &interp) ||
			    (interp && read_u64(fd, interp + cfg->threads_head, &ts)))
				break;
			continue;
		}
		if (read_u64(fd, ts + cfg->tstate_thread_id, &id))
			break;
		if (tid && cfg->tstate_native_tid != N)
			proc_mem_read(fd, ts + cfg->tstate_native_tid, &native, sizeof(native));
		else if (tid && id)
			proc_mem_read(fd, id + GLIBC_PTHREAD_TID, &native, sizeof(native));
		if (tid ? native == (__u32)tid : id == thread_id) {
			*ts_out = ts;
			return 0;
		}
		if (read_u64(fd, ts + cfg->tstate_next, &ts))
			break;
	}
	return -ESRCH;
}

/* The first frame of a thread state, or 0. */
static __u64 top_frame(int fd, const struct gb_py_config *cfg, __u64 ts)
{
	__u64 f = 0;

	if (read_u64(fd, ts + cfg->tstate_frame, &f))
		return 0;
	if (cfg->cframe_frame != N && f && read_u64(fd, f + cfg->cframe_frame, &f))
		return 0;
	return f;
}

int pyruntime_walk(pid_t pid, const struct gb_py_config *cfg, __u64 thread_id, pid_t tid,
		   struct gb_py_frame *frames, int max)
{
	__u64 ts, f;
	int fd, n = 0, err;

	fd = proc_mem_open(pid);
	if (fd < 0)
		return fd;
	if ((err = find_tstate(fd, cfg, thread_id, tid, &ts)))
		goto cleanup;
	for (f = top_frame(fd, cfg, ts); f && n < max; ) {
		struct gb_py_frame *out = &frames[n];
		__u64 code, w[GB_PY_IDENT_LEN / 8], prev = 0;
		__u8 owner = 0;

		if (read_u64(fd, f + cfg->frame_code, &code) ||
		    read_u64(fd, f + cfg->frame_prev, &prev))
			break;
		code &= ~(__u64)cfg->exec_tag_mask;
		if (cfg->frame_owner != N &&
		    proc_mem_read(fd, f + cfg->frame_owner, &owner, 1))
			break;
		if (owner >= 3 || !code) {      /* shim / C-stack frame */
			f = prev;
			continue;
		}
		if (cfg->code_adaptive == N) {
			__s32 lasti;

			if (proc_mem_read(fd, f + cfg->frame_instr, &lasti, sizeof(lasti)))
				break;
			out->instr = (__u32)lasti;
		} else {
			__u64 ip;

			if (read_u64(fd, f + cfg->frame_instr, &ip))
				break;
			/* signed: 3.11/3.12 prev_instr is one unit before the code at start */
			out->instr = (__u32)(__s32)((__s64)(ip - code - cfg->code_adaptive) / 2);
		}
		if (proc_mem_read(fd, code + cfg->code_ident, w, sizeof(w)) ||
		    pyruntime_code_ident(fd, cfg, code, w, &out->ident))
			break;
		out->code = code;
		n++;
		f = prev;
	}
cleanup:
	close(fd);
	return err ? err : n;
}
