// SPDX-License-Identifier: BSD-2-Clause
/* Which libcupti to load: see cupti_pick.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cupti_pick.h"

/* Add the path fmt makes, unless it is too long, a repeat, or one too many. */
static __attribute__((format(printf, 2, 3))) void add(struct cupti_pick *p, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	unsigned i;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (p->n == CUPTI_PICK_MAX || len < 0 || len >= (int)sizeof(path))
		return;
	for (i = 0; i < p->n; i++)
		if (!strcmp(p->path[i], path))
			return;
	strcpy(p->path[p->n++], path);
}

/* Length of the site-packages directory path lies under, with its name; 0 none. */
static size_t site_packages(const char *path)
{
	static const char *const names[] = { "/site-packages/", "/dist-packages/" };
	const char *at;
	unsigned i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((at = strstr(path, names[i])))
			return at - path + strlen(names[i]) - 1;
	return 0;
}

static void wheel_copies(struct cupti_pick *p, int major, const char *const *objects,
			 size_t nobj)
{
	size_t i, len;

	for (i = 0; i < nobj; i++) {
		if (!objects[i] || !(len = site_packages(objects[i])))
			continue;
		if (major == 12)
			add(p, "%.*s/nvidia/cuda_cupti/lib/libcupti.so.12", (int)len, objects[i]);
		else
			add(p, "%.*s/nvidia/cu%d/lib/libcupti.so.%d", (int)len, objects[i], major,
			    major);
	}
}

void cupti_pick(struct cupti_pick *p, int driver_major, const char *const *objects,
		size_t nobj, const char *cuda_home)
{
	int m, k = 0;

	memset(p, 0, sizeof(*p));
	if (!cuda_home || !*cuda_home)
		cuda_home = "/usr/local/cuda";
	if (driver_major <= 0 || driver_major > CUPTI_NEWEST_MAJOR)
		driver_major = CUPTI_NEWEST_MAJOR;
	for (m = driver_major; m >= CUPTI_OLDEST_MAJOR && k < 2; m--)
		p->majors[k++] = m;
	for (k = 0; k < 2 && p->majors[k]; k++) {
		m = p->majors[k];
		wheel_copies(p, m, objects, nobj);
		add(p, "libcupti.so.%d", m);
		add(p, "%s/extras/CUPTI/lib64/libcupti.so.%d", cuda_home, m);
		add(p, "%s/lib64/libcupti.so.%d", cuda_home, m);
	}
}

int cupti_api_major(unsigned api_version)
{
	if (api_version >= 10000)
		return api_version / 10000;
	return api_version >= 19 ? 12 : 0;
}
