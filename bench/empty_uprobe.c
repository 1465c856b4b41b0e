// SPDX-License-Identifier: BSD-2-Clause
/*
 * empty_uprobe - attach bench/empty.bpf.c to one function of one process.
 *
 *	empty_uprobe -p PID -l LIB -f FUNC [-r | -m | -c]
 *
 * Attaches an empty uprobe (and with -r an empty uretprobe too) to FUNC in
 * LIB for PID only, prints "attached" on stdout, and holds the probes until
 * SIGINT or SIGTERM.  The uprobe is a perf-event link, as most tracers
 * attach one; with -m (not with -r) it is a uprobe_multi link instead
 * (Linux 6.6), as gpubpf attaches its own.  With -c, through such a link,
 * a program that is not empty: it makes the helper calls of gpubpf's
 * entry program for a launch and nothing else (bench/launch_calls.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "empty.skel.h"
#include "record/uprobe_multi.h"
#include "sym/elf_syms.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct empty_bpf *skel = NULL;
	struct bpf_link *le = NULL, *lr = NULL;
	const char *lib = NULL, *func = NULL;
	int pid = -1, ret_probe = 0, multi = 0, calls = 0, multi_fd = -1, c, ret = 1;
	struct bpf_program *mp;
	uint64_t off;

	while ((c = getopt(argc, argv, "p:l:f:rmc")) != -1) {
		switch (c) {
		case 'p': pid = atoi(optarg); break;
		case 'l': lib = optarg; break;
		case 'f': func = optarg; break;
		case 'r': ret_probe = 1; break;
		case 'm': multi = 1; break;
		case 'c': multi = calls = 1; break;
		default: goto usage;
		}
	}
	if (!lib || !func || pid <= 0 || (multi && ret_probe))
		goto usage;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	skel = empty_bpf__open();
	if (skel) {
		mp = calls ? skel->progs.calls_entry_multi : skel->progs.empty_entry_multi;
		bpf_program__set_autoload(skel->progs.empty_entry_multi, 0);
		bpf_program__set_autoload(skel->progs.calls_entry_multi, 0);
		bpf_program__set_autoload(mp, multi);
		bpf_program__set_expected_attach_type(mp, ATTACH_UPROBE_MULTI);
	}
	if (!skel || empty_bpf__load(skel)) {
		fprintf(stderr, "empty_uprobe: cannot load: %s\n", strerror(errno));
		goto cleanup;
	}
	if (multi) {
		int found = elf_sym_offsets(lib, &func, 1, &off);

		if (found == 1)
			multi_fd = uprobe_multi_link(bpf_program__fd(mp),
						     lib, &off, NULL, 1, pid, 0);
		else
			multi_fd = found < 0 ? found : -ENOENT;
		if (multi_fd < 0) {
			fprintf(stderr, "empty_uprobe: cannot attach a uprobe_multi link to %s: %s\n",
				func, strerror(-multi_fd));
			goto cleanup;
		}
	} else {
		uo.func_name = func;
		uo.retprobe = false;
		le = bpf_program__attach_uprobe_opts(skel->progs.empty_entry, pid, lib, 0, &uo);
		if (!le) {
			fprintf(stderr, "empty_uprobe: cannot attach uprobe: %s\n", strerror(errno));
			goto cleanup;
		}
	}
	if (ret_probe) {
		uo.retprobe = true;
		lr = bpf_program__attach_uprobe_opts(skel->progs.empty_return, pid, lib, 0, &uo);
		if (!lr) {
			fprintf(stderr, "empty_uprobe: cannot attach uretprobe: %s\n",
				strerror(errno));
			goto cleanup;
		}
	}
	printf("attached\n");
	fflush(stdout);
	while (!stop)
		pause();
	ret = 0;
cleanup:
	if (multi_fd >= 0)
		close(multi_fd);
	bpf_link__destroy(lr);
	bpf_link__destroy(le);
	empty_bpf__destroy(skel);
	return ret;
usage:
	fprintf(stderr, "usage: empty_uprobe -p PID -l LIB -f FUNC [-r | -m | -c]\n");
	return 2;
}
