// SPDX-License-Identifier: BSD-2-Clause
/*
 * The backends of the shipped injection library: CUPTI only.  The
 * simulator's variant (build/sim/libgpubpf_cupti.so) is built with
 * sim/backend_sim.c, which has its own table, instead of this file.
 */
#include <stddef.h>
#include "backend.h"

const struct backend *const backends[] = { &backend_cupti, NULL };
