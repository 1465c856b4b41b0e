// SPDX-License-Identifier: BSD-2-Clause
/* Where libcuda is, and the injection library for it; see discover.h. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/proc.h"
#include "record/discover.h"
#include "sym/elf_syms.h"

#define LIBCUDA "libcuda.so.1"
/* What the simulated driver exports for its profiler (sim/simcu_profiler.h). */
#define SIM_DRIVER_SYM "simcuProfilerSubscribe"
/* The injection library of make install, relative to gpubpf's directory. */
#define INSTALLED_LIB "../lib/gpubpf/" INJECTION_LIB

static int try_dir(const char *dir, size_t dirlen, char *path, size_t len)
{
	if (!dirlen)
		return -ENOENT;
	if ((size_t)snprintf(path, len, "%.*s/" LIBCUDA, (int)dirlen, dir) >= len)
		return -ENAMETOOLONG;
	return access(path, R_OK) ? -ENOENT : 0;
}

static int from_ldconfig(char *path, size_t len)
{
	static const char *const cmds[] = { "/sbin/ldconfig -p 2>/dev/null",
					    "ldconfig -p 2>/dev/null" };
	char line[4096];
	int err = -ENOENT;

	for (size_t i = 0; i < 2 && err; i++) {
		FILE *f = popen(cmds[i], "r");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char *arrow = strstr(line, "=> ");

			/* "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/.../libcuda.so.1" */
			if (err && arrow && strstr(line, LIBCUDA " (") && strstr(line, "x86-64")) {
				arrow[3 + strcspn(arrow + 3, "\n")] = 0;
				if ((size_t)snprintf(path, len, "%s", arrow + 3) < len &&
				    !access(path, R_OK))
					err = 0;
			}
		}
		pclose(f);
	}
	return err;
}

int discover_libcuda(const char *ld_library_path, char *path, size_t len)
{
	static const char *const dirs[] = {
		"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
		"/usr/local/nvidia/lib64", "/usr/lib/wsl/lib",
	};
	const char *p = ld_library_path;

	while (p && *p) {
		size_t n = strcspn(p, ":");

		if (!try_dir(p, n, path, len))
			return 0;
		p += n + (p[n] == ':');
	}
	if (!from_ldconfig(path, len))
		return 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!try_dir(dirs[i], strlen(dirs[i]), path, len))
			return 0;
	return -ENOENT;
}

/* 1 if the libcuda at path is the simulated driver: it exports its profiler hook. */
static int is_sim_driver(const char *path)
{
	static const char *const names[] = { SIM_DRIVER_SYM };
	uint64_t off;

	return elf_sym_offsets(path, names, 1, &off) == 1;
}

/* The file rel relative to this gpubpf's directory: 0 with its real path. */
static int beside_exe(const char *rel, char *path, size_t len)
{
	char exe[PATH_MAX], cand[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", exe, rel) >= sizeof(cand) ||
	    access(cand, R_OK))
		return -ENOENT;
	if (!realpath(cand, path) && (size_t)snprintf(path, len, "%s", cand) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int discover_injection_lib(const char *libcuda, char *path, size_t len)
{
	const char *env = getenv(INJECTION_LIB_ENV);
	char found[PATH_MAX];

	if (env && *env) {
		if (!access(env, R_OK) && realpath(env, path))
			return 0;
		fprintf(stderr, "gpubpf: %s='%s': %s\n", INJECTION_LIB_ENV, env, strerror(errno));
		snprintf(path, len, "%s", INJECTION_LIB);
		return -ENOENT;
	}
	if (!libcuda && !discover_libcuda(getenv("LD_LIBRARY_PATH"), found, sizeof(found)))
		libcuda = found;
	if (libcuda && is_sim_driver(libcuda)) {
		if (!beside_exe(SIM_INJECTION_LIB, path, len))
			return 0;
		snprintf(path, len, "%s", SIM_INJECTION_LIB);
		return -ENOENT;
	}
	if (!beside_exe(INJECTION_LIB, path, len) ||
	    !beside_exe(INSTALLED_LIB, path, len))
		return 0;
	snprintf(path, len, "%s", INJECTION_LIB);
	return -ENOENT;
}

int discover_sim_injection_lib(char *path, size_t len)
{
	return beside_exe(SIM_INJECTION_LIB, path, len);
}

/* 1 if lib is one of the injection libraries beside this gpubpf. */
static int own_lib(const char *lib)
{
	static const char *const rels[] = { INJECTION_LIB, INSTALLED_LIB, SIM_INJECTION_LIB };
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(rels) / sizeof(rels[0]); i++)
		if (!beside_exe(rels[i], path, sizeof(path)) && !strcmp(path, lib))
			return 1;
	return 0;
}

int discover_late_injection_lib(pid_t pid, const char *lib, char *path, size_t len,
				char *why, size_t whylen)
{
	const char *env = getenv(INJECTION_LIB_ENV);
	char libcuda[PATH_MAX];

	if ((env && *env) || !own_lib(lib) ||
	    proc_find_mapping(pid, "libcuda.so", libcuda, sizeof(libcuda))) {
		if ((size_t)snprintf(path, len, "%s", lib) < len)
			return 0;
		snprintf(why, whylen, "injection library path too long");
		return -ENAMETOOLONG;
	}
	if (!discover_injection_lib(libcuda, path, len))
		return 0;
	snprintf(why, whylen, "%s not found beside gpubpf (use --cupti-lib PATH)", path);
	return -ENOENT;
}
