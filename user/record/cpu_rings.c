// SPDX-License-Identifier: BSD-2-Clause
/* The per-CPU call rings' reader; see cpu_rings.h. */
#include <errno.h>
#include <string.h>
#include "gpubpf.h"
#include "record/cpu_rings.h"

/*
 * One ring's records; their number, an error of fn, or -EBADMSG.  Each
 * record goes to fn from a copy, its first word the type alone: the ring's
 * data is only read here (gpubpf.h).
 */
static int drain_one(struct gb_cring *r, uint64_t size,
		     int (*fn)(void *ctx, void *data, size_t size), void *ctx)
{
	const char *data = (const char *)r + GB_CRING_HEAD;
	uint64_t prod = __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE);
	uint64_t cons = r->cons, pos, len, need;
	uint64_t copy[GB_CRING_BYTES(~0u) / 8];
	uint32_t w;
	int n = 0, ret = 0;

	if (prod - cons > size || (prod - cons) % GB_CRING_ALIGN) {
		ret = -EBADMSG;
		cons = prod;
	}
	while (cons != prod) {
		pos = cons & (size - 1);
		w = *(const uint32_t *)(data + pos);
		if (w == GB_CRING_WRAP) {
			cons += size - pos;
			continue;
		}
		len = GB_CRING_BYTES(w);
		need = (len + GB_CRING_ALIGN - 1) & ~(GB_CRING_ALIGN - 1ULL);
		if (!len || pos + need > size || prod - cons < need) {
			ret = -EBADMSG;
			cons = prod;
			break;
		}
		memcpy(copy, data + pos, len);
		w = GB_CRING_TYPE(w);
		memcpy(copy, &w, sizeof(w));
		ret = fn(ctx, copy, len);
		if (ret < 0)
			break;  /* left unread, to be read again */
		ret = 0;
		cons += need;
		n++;
	}
	/* the room back only after the records were read */
	__atomic_store_n(&r->cons, cons, __ATOMIC_RELEASE);
	return ret ? ret : n;
}

int cpu_rings_drain(const struct cpu_rings *cr, int (*fn)(void *ctx, void *data, size_t size),
		    void *ctx)
{
	int total = 0, bad = 0, ret;

	if (!cr->base)
		return 0;
	for (unsigned i = 0; i < cr->n; i++) {
		ret = drain_one((struct gb_cring *)(cr->base + i * cr->stride), cr->size, fn, ctx);
		if (ret == -EBADMSG)
			bad = 1;
		else if (ret < 0)
			return ret;
		else
			total += ret;
	}
	return bad ? -EBADMSG : total;
}
