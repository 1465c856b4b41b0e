// SPDX-License-Identifier: BSD-2-Clause
/* The probe loader; see probes.h. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include "cuda.skel.h"
#include "lib/array.h"
#include "model/cuda_calls.h"
#include "sym/elf_syms.h"
#include "gpubpf.h"
#include "record/probe_site.h"
#include "record/probes.h"
#include "record/uprobe_multi.h"

static int verbose_libbpf;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* without -v, failures surface as gpubpf's own one-line errors */
	return verbose_libbpf ? vfprintf(stderr, fmt, ap) : 0;
}

/*
 * Whether the kernel knows may_goto (BPF_JMP | BPF_JCOND, Linux 6.9), which
 * the Python walk's loop uses where it can (py_stack_walk() in
 * cuda.bpf.c): a program of the instruction alone, loaded and closed.
 */
#define BPF_MAY_GOTO (BPF_JMP | 0xe0 | BPF_K)

static int may_goto_known(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_MAY_GOTO },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "gb_may_goto", "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static uint64_t pow2_at_least(uint64_t v)
{
	uint64_t p = 4096;

	while (p < v)
		p <<= 1;
	return p;
}

/* One CPU-clock perf event per online CPU, each running gb_sample hz times a second. */
static int attach_samplers(struct probes *p, uint32_t hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ULL / hz,    /* cpu-clock counts ns */
	};
	int ncpu = libbpf_num_possible_cpus(), fd;
	struct bpf_link *l;

	if (ncpu <= 0)
		return ncpu ? ncpu : -ENODEV;
	p->samplers = calloc(ncpu, sizeof(*p->samplers));
	if (!p->samplers)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)    /* possible, not online */
				continue;
			return -errno;
		}
		l = bpf_program__attach_perf_event(p->skel->progs.gb_sample, fd);
		if (!l) {
			close(fd);
			return -errno;
		}
		p->samplers[p->nsamplers++] = l;
	}
	return 0;
}

/*
 * The per-CPU call rings: one per possible CPU, sharing out the calls'
 * ring size (the shared ring's), each a power of two of at least
 * PROBES_CPU_RING_MIN.
 */
static void size_crings(struct probes *p)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t size = PROBES_CPU_RING_MIN;

	if (ncpu <= 0)
		return;
	while (size * 2 * ncpu <= bpf_map__max_entries(p->skel->maps.rb))
		size *= 2;
	p->crings.n = ncpu;
	p->crings.size = size;
	p->crings.stride = GB_CRING_HEAD + size + GB_CRING_SLACK;
	bpf_map__set_max_entries(p->skel->maps.cpu_rings, ncpu);
	bpf_map__set_value_size(p->skel->maps.cpu_rings, p->crings.stride);
	p->skel->rodata->crings_on = 1;
	p->skel->rodata->cring_mask = size - 1;
	p->skel->rodata->cring_wake_shift = __builtin_ctzll(size) - 2;
}

/* Map the per-CPU call rings, once loaded: 0 or -errno. */
static int map_crings(struct probes *p)
{
	void *m;

	if (!p->crings.n)
		return 0;
	m = mmap(NULL, p->crings.n * p->crings.stride, PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(p->skel->maps.cpu_rings), 0);
	if (m == MAP_FAILED)
		return -errno;
	p->crings.base = m;
	return 0;
}

int probes_open(struct probes *p, const struct probes_opts *o, char *err, size_t errlen)
{
	int ret, may_goto, multi;

	memset(p, 0, sizeof(*p));
	p->verbose = o->verbose;
	verbose_libbpf = o->verbose;
	libbpf_set_print(libbpf_print);
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(err, errlen, "this kernel has no BTF (/sys/kernel/btf/vmlinux): "
			 "gpubpf needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOTSUP;
	}
	may_goto = !o->no_may_goto && may_goto_known();
	multi = !o->no_multi && uprobe_multi_usable();
	/*
	 * with uprobe_multi programs where they are usable, else (or should
	 * they not load) without them; each with the mmap hook that holds new
	 * libcuda mappings, then without it.  Only the entry programs of the
	 * one kind are loaded: each walks Python stacks, ~0.3 s of the
	 * verifier.
	 */
	for (int attempt = multi ? 0 : 2; attempt < 4; attempt++) {
		p->multi = attempt < 2;
		p->hold = !(attempt & 1) && !o->no_hold;
		p->skel = cuda_bpf__open();
		if (!p->skel) {
			ret = -errno;
			snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-ret));
			return ret;
		}
		p->skel->rodata->filter_pids = !!o->filter_pids;
		p->skel->rodata->follow_forks = !!o->follow_forks;
		p->skel->rodata->native_stacks = !!o->native_stacks;
		p->skel->rodata->self_tgid = getpid();
		p->skel->rodata->hold_each = !!o->hold_each;
		p->skel->rodata->hold_exec = !!o->hold_exec;
		p->skel->rodata->may_goto_on = may_goto;
		p->skel->rodata->test_nested_search = !!o->test_nested_search;
		if (o->ringbuf_bytes) {
			uint64_t gpu = pow2_at_least(o->ringbuf_bytes);
			uint64_t host = gpu / PROBES_HOST_RING_PART > PROBES_HOST_RING_MIN ?
					gpu / PROBES_HOST_RING_PART : PROBES_HOST_RING_MIN;

			bpf_map__set_max_entries(p->skel->maps.gpu_rb, gpu);
			bpf_map__set_max_entries(p->skel->maps.rb, host);
			/* wake the reader each quarter of a ring: the sizes are powers of two */
			p->skel->rodata->gpu_wake_shift = __builtin_ctzll(gpu) - 2;
			p->skel->rodata->wake_shift = __builtin_ctzll(host) - 2;
		}
		if (!o->one_ring)
			size_crings(p);
		bpf_program__set_autoload(p->skel->progs.gb_entry_multi, p->multi);
		bpf_program__set_autoload(p->skel->progs.gb_return_multi, p->multi);
		bpf_program__set_autoload(p->skel->progs.gb_entry, !p->multi);
		bpf_program__set_autoload(p->skel->progs.gb_return, !p->multi);
		bpf_program__set_autoload(p->skel->progs.gb_mmap, p->hold);
		bpf_program__set_autoload(p->skel->progs.gb_end, p->hold);
		bpf_program__set_autoload(p->skel->progs.gb_switch, o->states);
		bpf_program__set_autoload(p->skel->progs.gb_wakeup, o->states);
		bpf_program__set_autoload(p->skel->progs.gb_wakeup_new, o->states);
		bpf_program__set_autoload(p->skel->progs.gb_sample, o->sample_hz > 0);
		bpf_program__set_autoload(p->skel->progs.gb_waking, o->wakes);
		bpf_program__set_autoload(p->skel->progs.gb_signal, o->cmd_signals);
		/* gb_node_made walks Python stacks: ~0.3 s of the verifier at every load */
		bpf_program__set_autoload(p->skel->progs.gb_node_made, o->autograd);
		bpf_program__set_autoload(p->skel->progs.gb_node_run, o->autograd);
		bpf_program__set_autoload(p->skel->progs.gb_node_done, o->autograd);
		bpf_program__set_expected_attach_type(p->skel->progs.gb_entry_multi,
						      ATTACH_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(p->skel->progs.gb_return_multi,
						      ATTACH_UPROBE_MULTI);
		ret = cuda_bpf__load(p->skel);
		if (!ret)
			break;
		cuda_bpf__destroy(p->skel);
		p->skel = NULL;
	}
	if (ret == -EPERM) {
		snprintf(err, errlen, "the kernel refused to load the BPF programs (%s): gpubpf "
			 "needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, and a kernel that lets "
			 "them load tracing programs (lockdown, a seccomp filter or an LSM can "
			 "forbid it; run with -v for details)", strerror(-ret));
		return ret;
	}
	if (ret) {
		snprintf(err, errlen, "cannot load the BPF programs: %s; the kernel needs "
			 "CONFIG_BPF_SYSCALL, uprobes and BTF (run with -v for details)",
			 strerror(-ret));
		return ret;
	}
	ret = map_crings(p);
	if (ret) {
		snprintf(err, errlen, "cannot map the per-CPU call rings: %s", strerror(-ret));
		probes_close(p);
		return ret;
	}
	if (p->verbose) {
		fprintf(stderr, "gpubpf: ring buffers: %u KiB for calls and the rest, %u KiB for "
			"GPU records\n", bpf_map__max_entries(p->skel->maps.rb) >> 10,
			bpf_map__max_entries(p->skel->maps.gpu_rb) >> 10);
		if (p->crings.n)
			fprintf(stderr, "gpubpf: call rings: %llu KiB per CPU (%u CPUs) for the calls "
				"recorded at their entry\n",
				(unsigned long long)p->crings.size >> 10, p->crings.n);
		else
			fprintf(stderr, "gpubpf: call rings: none, every call through the first "
				"ring buffer\n");
		fprintf(stderr, "gpubpf: uprobes: %s\n", p->multi ?
			"two uprobe_multi links a library (entries, returns)" :
			!multi ? "a link per entry point and return (this kernel has no uprobe_multi "
			"links, or links that filter a pid by thread, as before Linux 6.10)" :
			"a link per entry point and return (the uprobe_multi programs did not load)");
		fprintf(stderr, "gpubpf: Python stacks: %s\n", may_goto ?
			"a frame an iteration of a may_goto loop" :
			"four frames a bpf_loop turn (no may_goto: Linux 6.9)");
	}
	bpf_program__set_autoattach(p->skel->progs.gb_mmap, false);
	if (!o->follow_forks && o->filter_pids)
		bpf_program__set_autoattach(p->skel->progs.gb_fork, false);
	bpf_program__set_autoattach(p->skel->progs.gb_gpu_batch, false);
	bpf_program__set_autoattach(p->skel->progs.gb_gpu_api, false);
	ret = cuda_bpf__attach(p->skel);
	if (ret) {
		snprintf(err, errlen, "cannot attach the fork, exit and scheduler tracepoints: %s",
			 strerror(-ret));
		probes_close(p);
		return ret;
	}
	ret = o->sample_hz ? attach_samplers(p, o->sample_hz) : 0;
	if (ret) {
		snprintf(err, errlen, "cannot start the CPU-clock sampler: %s", strerror(-ret));
		probes_close(p);
		return ret;
	}
	return 0;
}

static struct probe_target *find_target(struct probes *p, dev_t dev, ino_t ino, uint64_t site,
					pid_t pid)
{
	for (size_t i = 0; i < p->ntargets; i++) {
		struct probe_target *t = &p->targets[i];

		if (t->dev == dev && t->ino == ino && t->site == site &&
		    (t->pid == pid || t->pid == -1))
			return t;
	}
	return NULL;
}

int probes_attached(struct probes *p, const char *path, pid_t pid)
{
	struct stat st;

	return !stat(path, &st) && find_target(p, st.st_dev, st.st_ino, 0, pid);
}

/*
 * Keep l, what an attach for t returned (NULL: it failed, errno says why),
 * among t's links; 0 or -errno (l is destroyed if it cannot be kept).
 */
static int add_link(struct probe_target *t, struct bpf_link *l, size_t *cap)
{
	if (!l)
		return -errno;
	if (array_grow(&t->links, cap, t->nlinks + 1)) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	t->links[t->nlinks++] = l;
	return 0;
}

static int attach_one(struct probes *p, struct probe_target *t, size_t *cap, unsigned id,
		      uint64_t off, int retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cuda_call_cookie(id), .retprobe = retprobe);
	struct bpf_program *prog = retprobe ? p->skel->progs.gb_return : p->skel->progs.gb_entry;

	return add_link(t, bpf_program__attach_uprobe_opts(prog, t->pid, t->path, off, &uo), cap);
}

/* A link for each entry point, and for each return probed: 0 or -errno. */
static int attach_each(struct probes *p, struct probe_target *t, const unsigned *ids,
		       const uint64_t *offs, unsigned n)
{
	size_t cap = 0;
	int ret = 0;

	for (unsigned i = 0; i < n && !ret; i++) {
		ret = attach_one(p, t, &cap, ids[i], offs[i], 0);
		if (!ret && cuda_calls[ids[i]].ret)
			ret = attach_one(p, t, &cap, ids[i], offs[i], 1);
	}
	return ret;
}

/* One uprobe_multi link for the entries and one for the returns: 0 or -errno. */
static int attach_multi(struct probes *p, struct probe_target *t, const unsigned *ids,
			const uint64_t *offs, unsigned n)
{
	uint64_t *o = calloc(n, sizeof(*o)), *ck = calloc(n, sizeof(*ck));
	int ret = -ENOMEM;

	if (!o || !ck)
		goto cleanup;
	for (int r = 0; r < 2; r++) {
		unsigned k = 0;

		for (unsigned i = 0; i < n; i++) {
			if (r && !cuda_calls[ids[i]].ret)
				continue;
			o[k] = offs[i];
			ck[k++] = cuda_call_cookie(ids[i]);
		}
		if (!k)
			continue;
		ret = uprobe_multi_link(bpf_program__fd(r ? p->skel->progs.gb_return_multi :
							p->skel->progs.gb_entry_multi),
					t->path, o, ck, k, t->pid, r);
		if (ret < 0)
			goto cleanup;
		t->multi_fds[r] = ret;
	}
	ret = 0;
cleanup:
	free(o);
	free(ck);
	return ret;
}

/*
 * Probe each entry point on the instruction after a leading endbr64, which
 * the kernel would single-step (probe_site.h); unchanged if the file
 * cannot be read again.
 */
static void move_past_endbr(const char *path, uint64_t *offs, unsigned n)
{
	struct probe_site *sites = calloc(n, sizeof(*sites));

	if (sites && !probe_sites(path, offs, n, sites))
		for (unsigned i = 0; i < n; i++)
			offs[i] = sites[i].off;
	free(sites);
}

static void detach(struct probe_target *t)
{
	for (size_t j = 0; j < t->nlinks; j++)
		bpf_link__destroy(t->links[j]);
	free(t->links);
	t->links = NULL;
	t->nlinks = 0;
	for (int r = 0; r < 2; r++) {
		if (t->multi_fds[r] >= 0)
			close(t->multi_fds[r]);
		t->multi_fds[r] = -1;
	}
}

/*
 * A new target for the file at path (its one uprobe at offset site, or 0)
 * and pid, at the end of p->targets but not counted until the caller
 * succeeds (p->ntargets++).  Returns 0 with *out set, 1 if that file (that
 * site of it) is already attached for pid, or -errno with a reason in err.
 */
static int new_target(struct probes *p, const char *path, uint64_t site, pid_t pid,
		      struct probe_target **out, char *err, size_t errlen)
{
	struct probe_target *t, *nt;
	struct stat st;
	int ret;

	if (stat(path, &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(-ret));
		return ret;
	}
	if (find_target(p, st.st_dev, st.st_ino, site, pid))
		return 1;
	nt = realloc(p->targets, (p->ntargets + 1) * sizeof(*nt));
	if (nt)
		p->targets = nt;
	t = nt ? &p->targets[p->ntargets] : NULL;
	if (t) {
		memset(t, 0, sizeof(*t));
		t->dev = st.st_dev;
		t->ino = st.st_ino;
		t->site = site;
		t->pid = pid;
		t->multi_fds[0] = t->multi_fds[1] = -1;
		t->path = strdup(path);
	}
	if (!t || !t->path) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

/*
 * The end of an attach to new_target()'s t: with its links made (ret 0),
 * count it in and return 1; else undo it and say why ("cannot attach
 * WHAT 'path': ...") and return ret.
 */
static int target_made(struct probes *p, struct probe_target *t, int ret, const char *what,
		       char *err, size_t errlen)
{
	if (ret) {
		snprintf(err, errlen, "cannot attach %s '%s': %s", what, t->path, strerror(-ret));
		detach(t);
		free(t->path);
		return ret;
	}
	p->ntargets++;
	return 1;
}

int probes_attach(struct probes *p, const char *path, pid_t pid, char *err, size_t errlen)
{
	const char **names = NULL;
	uint64_t *offs = NULL;
	unsigned *ids = NULL, n = 0;
	struct probe_target *t;
	int ret;

	ret = new_target(p, path, 0, pid, &t, err, errlen);
	if (ret)
		return ret > 0 ? 0 : ret;
	names = calloc(cuda_ncalls, sizeof(*names));
	offs = calloc(cuda_ncalls, sizeof(*offs));
	ids = calloc(cuda_ncalls, sizeof(*ids));
	if (!names || !offs || !ids) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto cleanup;
	}
	for (unsigned i = 0; i < cuda_ncalls; i++)
		names[i] = cuda_calls[i].name;
	ret = elf_sym_offsets(path, names, cuda_ncalls, offs);
	if (ret <= 0) {
		snprintf(err, errlen, "'%s' %s", path, ret == -ENOEXEC ? "is not an ELF file" :
			 ret == 0 ? "defines no CUDA driver entry point" : strerror(-ret));
		ret = ret ? ret : -ENOENT;
		goto cleanup;
	}
	/* keep the found ones, in table order, each address once */
	for (unsigned i = 0; i < cuda_ncalls; i++) {
		int dup = 0;

		if (!offs[i])
			continue;
		/* two names at one address would fire both probes on every call */
		for (unsigned j = 0; j < n && !dup; j++)
			dup = offs[j] == offs[i];
		if (dup) {
			if (p->verbose)
				fprintf(stderr, "gpubpf: %s shares its address with another "
					"entry point, not probed twice\n", names[i]);
			continue;
		}
		ids[n] = i;
		offs[n++] = offs[i];
	}
	move_past_endbr(path, offs, n);
	ret = p->multi ? attach_multi(p, t, ids, offs, n) : attach_each(p, t, ids, offs, n);
	if (ret) {
		snprintf(err, errlen, "cannot attach uprobes to '%s': %s", path, strerror(-ret));
		goto cleanup;
	}
	p->ntargets++;
	probes_lib_known(p, (uint64_t)major(t->dev) << 20 | minor(t->dev), t->ino,
			 pid > 0 ? pid : 0);
	free(names);
	free(offs);
	free(ids);
	return n;
cleanup:
	detach(t);
	free(t->path);
	free(names);
	free(offs);
	free(ids);
	return ret;
}

int probes_attach_markers(struct probes *p, const char *path, pid_t pid, char *err,
			  size_t errlen)
{
	/*
	 * The batch marker first: a library already collecting for another
	 * recorder sends batches all along, and a call whose announcement we
	 * see must not have its GPU record in a batch sent before we listened
	 * to them.  (A library not yet collecting waits for both semaphores.)
	 */
	static const char *const markers[] = { "batch", "api" };
	struct bpf_program *progs[] = { p->skel->progs.gb_gpu_batch, p->skel->progs.gb_gpu_api };
	struct probe_target *t;
	size_t cap = 0;
	int ret;

	ret = new_target(p, path, 0, pid, &t, err, errlen);
	if (ret)
		return ret > 0 ? 0 : ret;
	for (size_t i = 0; i < 2 && !ret; i++) {
		ret = add_link(t, bpf_program__attach_usdt(progs[i], pid, path, "gpubpf",
							   markers[i], NULL), &cap);
	}
	return target_made(p, t, ret, "to the markers of", err, errlen);
}

/*
 * PyTorch's autograd entry points, by their exact mangled names: a
 * signature that changes changes its name, so no probe reads arguments
 * whose places it does not know.  The same in PyTorch 1.x and 2.x.
 */
static const char *const autograd_syms[] = {
	"_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_"
	"4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE",
	"_ZN5torch8autograd4impl17set_gradient_edgeERKN2at6TensorENS0_4EdgeE",
};

int probes_attach_autograd(struct probes *p, const char *path, pid_t pid, char *err,
			   size_t errlen)
{
	uint64_t offs[2];
	struct probe_target *t;
	struct {
		struct bpf_program *prog;
		unsigned sym;
		int ret;
	} probes[] = {
		{ p->skel->progs.gb_node_run, 0, 0 },
		{ p->skel->progs.gb_node_done, 0, 1 },
		{ p->skel->progs.gb_node_made, 1, 0 },
	};
	size_t cap = 0;
	int ret;

	ret = elf_sym_offsets(path, autograd_syms, 2, offs);
	if (ret >= 0 && (!offs[0] || !offs[1]))
		ret = -ENOENT;
	if (ret < 0) {
		snprintf(err, errlen, "'%s' %s", path, ret == -ENOEXEC ? "is not an ELF file" :
			 ret == -ENOENT ? "does not define the autograd engine's functions gpubpf "
			 "knows (a PyTorch before 1.5, or built without them exported)" :
			 strerror(-ret));
		return ret;
	}
	ret = new_target(p, path, 0, pid, &t, err, errlen);
	if (ret)
		return ret > 0 ? 0 : ret;
	move_past_endbr(path, offs, 2);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]) && !ret; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = probes[i].ret);
		ret = add_link(t, bpf_program__attach_uprobe_opts(probes[i].prog, pid, path,
								  offs[probes[i].sym], &uo), &cap);
	}
	return target_made(p, t, ret, "uprobes to", err, errlen);
}

/* One uprobe of prog at offset off of the file at path, for pid: 1, 0 if there already, -errno. */
static int attach_site(struct probes *p, struct bpf_program *prog, const char *path, uint64_t off,
		       pid_t pid, char *err, size_t errlen)
{
	struct probe_target *t;
	size_t cap = 0;
	int ret;

	ret = new_target(p, path, off, pid, &t, err, errlen);
	if (ret)
		return ret > 0 ? 0 : ret;
	ret = add_link(t, bpf_program__attach_uprobe_opts(prog, pid, path, off, NULL), &cap);
	return target_made(p, t, ret, "a uprobe to", err, errlen);
}

int probes_attach_code_free(struct probes *p, const char *path, uint64_t off, pid_t pid,
			    char *err, size_t errlen)
{
	return attach_site(p, p->skel->progs.gb_py_code_free, path, off, pid, err, errlen);
}

int probes_attach_end(struct probes *p, const char *path, uint64_t off, pid_t pid, char *err,
		      size_t errlen)
{
	int ret;

	if (!p->hold) {
		snprintf(err, errlen, "this kernel cannot stop processes from BPF");
		return -EOPNOTSUPP;
	}
	ret = attach_site(p, p->skel->progs.gb_end, path, off, pid, err, errlen);
	if (ret > 0 && !p->ends_released)
		__atomic_store_n(&p->skel->bss->hold_ends, 1, __ATOMIC_RELAXED);
	return ret;
}

int probes_release_ends(struct probes *p)
{
	int was = !p->ends_released && p->skel && p->skel->bss->hold_ends;

	p->ends_released = 1;
	if (p->skel)
		__atomic_store_n(&p->skel->bss->hold_ends, 0, __ATOMIC_RELAXED);
	return was;
}

void probes_heartbeat(struct probes *p)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	__atomic_store_n(&p->skel->bss->recorder_alive_ns,
			 (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec, __ATOMIC_RELAXED);
}

/*
 * Tracepoints are attached by the id tracefs gives them.  Some systems
 * boot without tracefs mounted (a GPU VM image here): mount it where the
 * kernel provides its mount point, as perf does.
 */
static void ensure_tracefs(const struct probes *p)
{
	if (!access("/sys/kernel/tracing/events", F_OK) ||
	    !access("/sys/kernel/debug/tracing/events", F_OK))
		return;
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL)) {
		if (p->verbose)
			fprintf(stderr, "gpubpf: tracefs is not mounted and mounting it on "
				"/sys/kernel/tracing failed: %s\n", strerror(errno));
	} else if (p->verbose) {
		fprintf(stderr, "gpubpf: mounted tracefs on /sys/kernel/tracing\n");
	}
}

int probes_hold_maps(struct probes *p)
{
	if (!p->hold)
		return -EOPNOTSUPP;
	if (p->hold_link)
		return 0;
	ensure_tracefs(p);
	probes_heartbeat(p);
	p->hold_link = bpf_program__attach(p->skel->progs.gb_mmap);
	return p->hold_link ? 0 : -errno;
}

void probes_release_maps(struct probes *p)
{
	bpf_link__destroy(p->hold_link);
	p->hold_link = NULL;
}

int probes_lib_known(struct probes *p, uint64_t dev, uint64_t ino, pid_t pid)
{
	struct gb_lib_key key = { .dev = dev, .ino = ino, .pid = pid > 0 ? pid : 0 };
	uint8_t one = 1;

	return bpf_map__update_elem(p->skel->maps.libs_known, &key, sizeof(key), &one,
				    sizeof(one), BPF_ANY) ? -errno : 0;
}

/* Each (pid, count) of a pid -> u64 hash map. */
static void each_pid_count(int fd, void (*per_pid)(void *ctx, uint32_t pid, uint64_t n), void *ctx)
{
	uint32_t key, pid, *prev = NULL;
	uint64_t n;

	while (!bpf_map_get_next_key(fd, prev, &pid)) {
		if (!bpf_map_lookup_elem(fd, &pid, &n))
			per_pid(ctx, pid, n);
		key = pid;
		prev = &key;
	}
}

void probes_unheld(struct probes *p, void (*per_pid)(void *ctx, uint32_t pid, uint64_t n),
		   void *ctx)
{
	each_pid_count(bpf_map__fd(p->skel->maps.unheld), per_pid, ctx);
}

int probes_continue(struct probes *p, pid_t pid)
{
	uint32_t key = pid;
	int ret = kill(pid, SIGCONT) && errno != ESRCH ? -errno : 0;

	bpf_map_delete_elem(bpf_map__fd(p->skel->maps.held), &key);
	return ret;
}

int probes_held_fd(struct probes *p)
{
	return bpf_map__fd(p->skel->maps.held);
}

bool probes_is_held(struct probes *p, pid_t pid)
{
	uint32_t key = pid;
	uint64_t since;

	return p->skel && !bpf_map_lookup_elem(probes_held_fd(p), &key, &since);
}

/* Set bits of pid in the programs' pid_bits (an array they share with us). */
static int set_pid_bits(struct probes *p, pid_t pid, uint32_t bits)
{
	if (pid <= 0 || (uint32_t)pid >= GB_PID_LIMIT)
		return -EINVAL;
	__atomic_fetch_or(&p->skel->bss->pid_bits[GB_PID_WORD(pid)], bits << GB_PID_SHIFT(pid),
			  __ATOMIC_SEQ_CST);
	return 0;
}

void probes_watch_signals(struct probes *p, pid_t pid)
{
	__atomic_store_n(&p->skel->bss->cmd_tgid, pid, __ATOMIC_RELAXED);
}

uint64_t probes_signal_sent(const struct probes *p, int sig)
{
	return sig > 0 && sig < GB_NSIG ?
	       __atomic_load_n(&p->skel->bss->cmd_signal_ns[sig], __ATOMIC_RELAXED) : 0;
}

int probes_trace_pid(struct probes *p, pid_t pid)
{
	return set_pid_bits(p, pid, GB_PID_TRACED);
}

int probes_traced_pids(struct probes *p, pid_t *pids, int max)
{
	const uint32_t *bits = p->skel->bss->pid_bits;
	int n = 0;

	for (uint32_t w = 0; w < GB_PID_WORDS && n < max; w++) {
		uint32_t v = __atomic_load_n(&bits[w], __ATOMIC_RELAXED);

		for (uint32_t i = 0; v && i < 16 && n < max; i++)
			if (v >> (2 * i) & GB_PID_TRACED)
				pids[n++] = w * 16 + i;
	}
	return n;
}

int probes_set_python(struct probes *p, pid_t pid, const struct gb_py_config *cfg)
{
	uint32_t key = pid;

	if (bpf_map__update_elem(p->skel->maps.py_procs, &key, sizeof(key), cfg, sizeof(*cfg),
				 BPF_ANY))
		return -errno;
	/* the threads' copies of the entry are stale from here on */
	__atomic_fetch_add(&p->skel->bss->py_procs_gen, 1, __ATOMIC_RELEASE);
	/*
	 * its threads named by pthread_self() only (3.7-3.10): map those to
	 * tids, for its GIL waits' holders (none where its GIL is unknown: 3.6)
	 */
	if (cfg->tstate_native_tid == GB_PY_NONE && cfg->gil)
		__atomic_store_n(&p->skel->bss->py_fsbase_on, 1, __ATOMIC_RELAXED);
	return set_pid_bits(p, pid, GB_PID_PYTHON);
}

void probes_forget_python(struct probes *p, pid_t pid)
{
	uint32_t key = pid;

	if (pid <= 0 || (uint32_t)pid >= GB_PID_LIMIT)
		return;
	__atomic_fetch_and(&p->skel->bss->pid_bits[GB_PID_WORD(pid)],
			   ~((uint32_t)GB_PID_PYTHON << GB_PID_SHIFT(pid)), __ATOMIC_SEQ_CST);
	bpf_map__delete_elem(p->skel->maps.py_procs, &key, sizeof(key), 0);
	__atomic_fetch_add(&p->skel->bss->py_procs_gen, 1, __ATOMIC_RELEASE);
}

int probes_ringbuf_fds(struct probes *p, int fds[PROBES_RINGS])
{
	fds[0] = bpf_map__fd(p->skel->maps.rb);
	fds[1] = bpf_map__fd(p->skel->maps.gpu_rb);
	return PROBES_RINGS;
}

struct cpu_rings probes_crings(const struct probes *p)
{
	return p->crings;
}

uint64_t probes_dropped(struct probes *p, void (*per_pid)(void *ctx, uint32_t pid, uint64_t n),
			void *ctx)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t total = 0;
	uint32_t key = 0;

	if (ncpu > 0) {
		uint64_t vals[ncpu];

		if (!bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.drops_total), &key, vals))
			for (int i = 0; i < ncpu; i++)
				total += vals[i];
	}
	if (per_pid)
		each_pid_count(bpf_map__fd(p->skel->maps.drops), per_pid, ctx);
	return total;
}

uint64_t probes_inflight_since(struct probes *p)
{
	int fd = bpf_map__fd(p->skel->maps.inflight);
	uint64_t key, *prev = NULL, first = UINT64_MAX;
	struct gb_call c;
	char task[64];

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &c) || c.ts_entry >= first)
			continue;
		/* a thread that died in the call never returns from it */
		snprintf(task, sizeof(task), "/proc/%u/task/%u", c.pid, c.tid);
		if (!access(task, F_OK))
			first = c.ts_entry;
	}
	return first;
}

void probes_each_inflight(struct probes *p, void (*fn)(void *ctx, const struct gb_call *c),
			  void *ctx)
{
	int fd = bpf_map__fd(p->skel->maps.inflight);
	uint64_t key, *prev = NULL;
	struct gb_call c;

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		prev = &key;
		if (!bpf_map_lookup_elem(fd, &key, &c))
			fn(ctx, &c);
	}
}

void probes_close(struct probes *p)
{
	probes_release_maps(p);
	for (int i = 0; i < p->nsamplers; i++)
		bpf_link__destroy(p->samplers[i]);     /* closes the perf event too */
	free(p->samplers);
	for (size_t i = 0; i < p->ntargets; i++) {
		detach(&p->targets[i]);
		free(p->targets[i].path);
	}
	free(p->targets);
	if (p->crings.base)
		munmap(p->crings.base, p->crings.n * p->crings.stride);
	if (p->skel)
		cuda_bpf__destroy(p->skel);
	memset(p, 0, sizeof(*p));
}
