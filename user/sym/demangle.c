// SPDX-License-Identifier: BSD-2-Clause
/* C++ names demangled by libstdc++; see demangle.h. */
#include <stdlib.h>
#include "sym/demangle.h"

/* libstdc++'s demangler (a C-linkage function of the C++ ABI). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *demangle(const char *name)
{
	int status = -1;
	char *d;

	if (name[0] != '_' || name[1] != 'Z')
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (d && status) {
		free(d);
		d = NULL;
	}
	return d;
}
