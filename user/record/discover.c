// SPDX-License-Identifier: BSD-2-Clause
/* Where libcuda is; see discover.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "record/discover.h"

#define LIBCUDA "libcuda.so.1"

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

int discover_injection_lib(char *path, size_t len)
{
	static const char *const rel[] = { "", "/../lib/gpubpf" };
	const char *env = getenv(INJECTION_LIB_ENV);
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		if (!access(env, R_OK) && realpath(env, path))
			return 0;
		fprintf(stderr, "gpubpf: %s='%s': %s\n", INJECTION_LIB_ENV, env, strerror(errno));
		return -ENOENT;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char cand[PATH_MAX];

		if ((size_t)snprintf(cand, sizeof(cand), "%s%s/" INJECTION_LIB, exe, rel[i]) >=
		    sizeof(cand) || access(cand, R_OK))
			continue;
		if (!realpath(cand, path) && (size_t)snprintf(path, len, "%s", cand) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	return -ENOENT;
}
