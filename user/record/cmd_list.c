// SPDX-License-Identifier: BSD-2-Clause
/* gpubpf list: the libcuda entry points gpubpf probes, and where. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "model/cuda_calls.h"
#include "record/discover.h"
#include "sym/elf_syms.h"
#include "record/probe_site.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpubpf list [-v] [--libcuda PATH]\n\n"
		"Print the probed libcuda entry points, one per line: name, family\n"
		"and whether the return is probed too (duration and return code).\n\n"
		"  -v               also where each probe sits in libcuda: the file offset,\n"
		"                   bytes skipped past endbr64, the probed instruction and\n"
		"                   whether the kernel emulates it or single-steps it\n"
		"  --libcuda PATH   the libcuda to look at (default: the discovered one)\n");
}

/* -v: the probe site of every entry point the library defines. */
static int list_sites(const char *path)
{
	const char **names = calloc(cuda_ncalls, sizeof(*names));
	uint64_t *offs = calloc(cuda_ncalls, sizeof(*offs));
	struct probe_site *sites = calloc(cuda_ncalls, sizeof(*sites));
	unsigned stepped = 0, emulated = 0, endbr = 0, found = 0;
	int ret = 1, r;

	if (!names || !offs || !sites) {
		fprintf(stderr, "gpubpf: out of memory\n");
		goto cleanup;
	}
	for (unsigned i = 0; i < cuda_ncalls; i++)
		names[i] = cuda_calls[i].name;
	r = elf_sym_offsets(path, names, cuda_ncalls, offs);
	if (r <= 0 || (r = probe_sites(path, offs, cuda_ncalls, sites)) < 0) {
		if (r == -ENOEXEC || r == 0)
			fprintf(stderr, "gpubpf: '%s' %s\n", path, r ? "is not an ELF file" :
				"defines no CUDA driver entry point");
		else
			fprintf(stderr, "gpubpf: cannot read '%s': %s\n", path, strerror(-r));
		goto cleanup;
	}
	printf("# %s\n# %-38s %-7s %-12s %-10s %-6s %-22s %s\n", path, "name", "family", "probes",
	       "offset", "skip", "probed instruction", "kernel");
	for (unsigned i = 0; i < cuda_ncalls; i++) {
		const struct probe_site *s = &sites[i];

		if (!offs[i]) {
			printf("%-40s %-7s %-12s %s\n", cuda_calls[i].name,
			       cuda_family_name(cuda_calls[i].family),
			       cuda_calls[i].ret ? "entry+return" : "entry", "(not defined)");
			continue;
		}
		found++;
		s->emulated ? emulated++ : stepped++;
		endbr += s->skipped != 0;
		printf("%-40s %-7s %-12s 0x%-8llx %-6s %-22s %s\n", cuda_calls[i].name,
		       cuda_family_name(cuda_calls[i].family),
		       cuda_calls[i].ret ? "entry+return" : "entry", (unsigned long long)s->off,
		       s->skipped ? "+4" : "-", s->insn, s->emulated ? "emulated" : "single-step");
	}
	printf("# %u entry points defined: %u probed on an instruction the kernel emulates, "
	       "%u single-stepped; %u moved past endbr64\n", found, emulated, stepped, endbr);
	ret = 0;
cleanup:
	free(names);
	free(offs);
	free(sites);
	return ret;
}

int cmd_list(int argc, char **argv)
{
	const char *libcuda = NULL;
	char buf[PATH_MAX];
	int verbose = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-v")) {
			verbose = 1;
		} else if (!strcmp(argv[i], "--libcuda") && i + 1 < argc) {
			libcuda = argv[++i];
		} else {
			fprintf(stderr, "gpubpf: list: unknown argument '%s' (see 'gpubpf list --help')\n",
				argv[i]);
			return 1;
		}
	}
	if (libcuda && !verbose) {
		fprintf(stderr, "gpubpf: list: --libcuda goes with -v\n");
		return 1;
	}
	if (!verbose) {
		for (unsigned i = 0; i < cuda_ncalls; i++)
			printf("%-40s %-7s %s\n", cuda_calls[i].name,
			       cuda_family_name(cuda_calls[i].family),
			       cuda_calls[i].ret ? "entry+return" : "entry");
		return 0;
	}
	if (!libcuda) {
		if (discover_libcuda(getenv("LD_LIBRARY_PATH"), buf, sizeof(buf))) {
			fprintf(stderr, "gpubpf: list -v: no libcuda found (name one with --libcuda)\n");
			return 1;
		}
		libcuda = buf;
	}
	return list_sites(libcuda);
}
