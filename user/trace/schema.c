// SPDX-License-Identifier: BSD-2-Clause
/* The trace schema's tables; see schema.h. */
#include <string.h>

#include "trace/schema.h"

static const char *const copy_kinds[] = {
	"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
};

#define NKINDS (sizeof(copy_kinds) / sizeof(copy_kinds[0]))

const char *ts_copy_kind_name(unsigned kind)
{
	return kind < NKINDS ? copy_kinds[kind] : copy_kinds[0];
}

unsigned ts_copy_kind_from_name(const char *name)
{
	for (unsigned k = 0; k < NKINDS; k++)
		if (!strcmp(copy_kinds[k], name))
			return k;
	return 0;
}

const char *ts_kernel_cat(const char *name)
{
	return strstr(name, "nccl") ? TS_CAT_NCCL : TS_CAT_KERNEL;
}

bool ts_arg_is_stack(const char *key)
{
	return !strcmp(key, TS_ARG_STACK) || !strcmp(key, TS_ARG_NATIVE_STACK) ||
	       !strcmp(key, TS_ARG_AUTOGRAD_FORWARD);
}
