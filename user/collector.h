/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector: decodes ring-buffer records (bpf/gpubpf.h) into the
 * model, naming processes and threads as they first appear.
 */
#ifndef GPUBPF_COLLECTOR_H
#define GPUBPF_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>
#include "gpubpf.h"
#include "model.h"

struct collector {
	struct model *m;
	uint64_t records;       /* records decoded */
	uint64_t calls;         /* of which driver calls */
	uint64_t gpu_records;   /* GPU activity records (kernels, copies...) */
	uint64_t gpu_untimed;   /* of which skipped: CUPTI gave them no timestamps */
	uint64_t bad;           /* malformed or unknown records */
	uint32_t *seen;         /* open-addressing set of tids already named */
	size_t nseen, nseen_slots;
};

void collector_init(struct collector *c, struct model *m);
void collector_release(struct collector *c);
/*
 * Decode one record into the model.  Returns 0, or -EINVAL for a record of
 * unknown type or wrong size (counted in c->bad), -ENOMEM.
 */
int collector_record(struct collector *c, const void *data, size_t size);
/*
 * Fill ev from a call record using the call table: the pure part of
 * decoding, without naming.  Returns 0 or -EINVAL (unknown call id).
 */
int collector_decode_call(const struct gb_call *rec, struct model_event *ev);

#endif
