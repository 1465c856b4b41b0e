// SPDX-License-Identifier: BSD-2-Clause
/*
 * The per-CPU call rings' reader (record/cpu_rings.h), on rings laid out
 * here as the BPF programs lay them out (gpubpf.h): records come out ring
 * after ring, each ring's in order, with their bytes and their type word
 * masked, and the rings' data left as written; a wrap marker goes on at
 * the data's start; the room is handed back (cons) up to what was read; a
 * handler's error stops at that record, which the next drain hands out
 * again; a ring whose lengths do not add up is skipped with -EBADMSG while
 * the others are read; and a writer thread filling a small ring while it
 * is drained loses nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "gpubpf.h"
#include "record/cpu_rings.h"

#define SIZE 4096u              /* each ring's data */
#define NRINGS 3

static struct gb_cring *ring(struct cpu_rings *cr, unsigned i)
{
	return (struct gb_cring *)(cr->base + i * cr->stride);
}

static void rings_init(struct cpu_rings *cr, unsigned n, uint64_t size)
{
	cr->n = n;
	cr->size = size;
	cr->stride = GB_CRING_HEAD + size + GB_CRING_SLACK;
	cr->base = aligned_alloc(4096, n * cr->stride);
	memset(cr->base, 0xab, n * cr->stride);
	for (unsigned i = 0; i < n; i++)
		memset(ring(cr, i), 0, sizeof(struct gb_cring));
}

/*
 * Write a record of bytes bytes (a multiple of 8) of type GB_REC_CALL,
 * its second word seq, as the programs do (cons read again only when the
 * ring looks full by cons_seen); 0 when the ring has no room.
 */
static int put(struct gb_cring *r, uint64_t size, uint32_t bytes, uint32_t seq)
{
	char *data = (char *)r + GB_CRING_HEAD;
	uint64_t prod = r->prod, cons = r->cons_seen;
	uint64_t need = (bytes + GB_CRING_ALIGN - 1) & ~(GB_CRING_ALIGN - 1ULL);
	uint64_t pos = prod & (size - 1), skip = pos + need > size ? size - pos : 0;
	uint32_t *w;

	if (prod + skip + need - cons > size) {
		cons = r->cons_seen = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
		if (prod + skip + need - cons > size)
			return 0;
	}
	if (skip) {
		*(uint32_t *)(data + pos) = GB_CRING_WRAP;
		pos = 0;
	}
	w = (uint32_t *)(data + pos);
	for (uint32_t i = 2; i < bytes / 4; i++)
		w[i] = seq * 7 + i;
	w[1] = seq;
	w[0] = GB_CRING_WORD(GB_REC_CALL, bytes);
	__atomic_store_n(&r->prod, prod + skip + need, __ATOMIC_RELEASE);
	return 1;
}

struct seen {
	uint32_t n;
	uint32_t seq[256];
	uint32_t size[256];
	uint32_t bad;           /* wrong type word or bytes */
	uint32_t fail_at;       /* return -EIO for this seq once (0: never) */
	uint32_t next;          /* the threaded test: the seq expected */
};

static int check(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;
	const uint32_t *w = data;

	if (s->fail_at && w[1] == s->fail_at) {
		s->fail_at = 0;
		return -EIO;
	}
	if (w[0] != GB_REC_CALL || size % 8)
		s->bad++;
	for (uint32_t i = 2; i < size / 4; i++)
		if (w[i] != w[1] * 7 + i)
			s->bad++;
	if (s->n < 256) {
		s->seq[s->n] = w[1];
		s->size[s->n] = size;
	}
	s->n++;
	return 0;
}

static void test_order_and_room(void)
{
	struct cpu_rings cr;
	struct seen s = { 0 };
	char *snap;
	int ok = 1;

	rings_init(&cr, NRINGS, SIZE);
	/* ring 2 first: records come ring after ring, not in the order written */
	put(ring(&cr, 2), SIZE, 128, 20);
	put(ring(&cr, 0), SIZE, 88, 1);
	put(ring(&cr, 0), SIZE, 216, 2);
	put(ring(&cr, 2), SIZE, 8, 21);
	snap = malloc(NRINGS * cr.stride);
	memcpy(snap, cr.base, NRINGS * cr.stride);
	is_int(cpu_rings_drain(&cr, check, &s), 4, "four records");
	for (unsigned i = 0; i < NRINGS; i++)
		if (memcmp(snap + i * cr.stride + GB_CRING_HEAD, (char *)ring(&cr, i) + GB_CRING_HEAD,
			   cr.stride - GB_CRING_HEAD))
			ok = 0;
	ok(ok, "the rings' data as written: the reader only reads it");
	free(snap);
	is_int(s.bad, 0, "their type words masked and their bytes whole");
	ok = s.seq[0] == 1 && s.seq[1] == 2 && s.seq[2] == 20 && s.seq[3] == 21 &&
	     s.size[0] == 88 && s.size[1] == 216 && s.size[2] == 128 && s.size[3] == 8;
	ok(ok, "ring 0's (88, 216 bytes) then ring 2's (128, 8), each in order");
	is_int(ring(&cr, 0)->cons, 128 + 256, "ring 0's room handed back: records padded to 64");
	is_int(ring(&cr, 2)->cons, 128 + 64, "ring 2's too");
	is_int(ring(&cr, 1)->cons, 0, "the empty ring untouched");
	s.n = 0;
	is_int(cpu_rings_drain(&cr, check, &s), 0, "nothing twice");
	free(cr.base);
}

static void test_wrap(void)
{
	struct cpu_rings cr;
	struct seen s = { 0 };
	uint32_t seq = 1, got = 0, want = 0;
	int in_order = 1;

	rings_init(&cr, 1, SIZE);
	/* 128-byte records fill it; each drain frees room; 200-byte ones
	 * (256 with padding) then leave a tail of 64 bytes before the end */
	while (put(ring(&cr, 0), SIZE, 128, seq))
		seq++;
	is_int(seq - 1, SIZE / 128, "a full ring takes size / 128 launches");
	for (int round = 0; round < 50; round++) {
		s.n = 0;
		got += cpu_rings_drain(&cr, check, &s);
		for (uint32_t i = 0; i < s.n && i < 256; i++)
			if (s.seq[i] != ++want)
				in_order = 0;
		while (put(ring(&cr, 0), SIZE, round % 2 ? 200 : 136, seq))
			seq++;
	}
	s.n = 0;
	got += cpu_rings_drain(&cr, check, &s);
	for (uint32_t i = 0; i < s.n && i < 256; i++)
		if (s.seq[i] != ++want)
			in_order = 0;
	is_int(got, seq - 1, "every record written came out once, across wraps");
	ok(in_order, "in the order written");
	is_int(s.bad, 0, "whole");
	is_int(ring(&cr, 0)->cons, ring(&cr, 0)->prod, "all the room handed back");
	ok(ring(&cr, 0)->prod > 10 * SIZE, "the ring went round (%llu bytes)",
	   (unsigned long long)ring(&cr, 0)->prod);
	free(cr.base);
}

static void test_handler_error(void)
{
	struct cpu_rings cr;
	struct seen s = { .fail_at = 3 };

	rings_init(&cr, 2, SIZE);
	for (uint32_t i = 1; i <= 4; i++)
		put(ring(&cr, 0), SIZE, 128, i);
	put(ring(&cr, 1), SIZE, 128, 9);
	is_int(cpu_rings_drain(&cr, check, &s), -EIO, "a handler's error is returned");
	is_int(s.n, 2, "after the records before it");
	is_int(ring(&cr, 0)->cons, 256, "its record's room kept");
	is_int(cpu_rings_drain(&cr, check, &s), 3, "the next drain hands it out again");
	ok(s.seq[2] == 3 && s.seq[3] == 4 && s.seq[4] == 9, "then the rest, then ring 1's");
	free(cr.base);
}

static void test_bad_ring(void)
{
	struct cpu_rings cr;
	struct seen s = { 0 };
	uint32_t *w;

	rings_init(&cr, 3, SIZE);
	put(ring(&cr, 0), SIZE, 128, 1);
	put(ring(&cr, 1), SIZE, 128, 2);
	put(ring(&cr, 1), SIZE, 128, 3);
	put(ring(&cr, 2), SIZE, 128, 4);
	/* ring 1's second record claims more bytes than were written */
	w = (uint32_t *)((char *)ring(&cr, 1) + GB_CRING_HEAD + 128);
	*w = GB_CRING_WORD(GB_REC_CALL, 1024);
	is_int(cpu_rings_drain(&cr, check, &s), -EBADMSG, "a record past prod: -EBADMSG");
	ok(s.n == 3 && s.seq[0] == 1 && s.seq[1] == 2 && s.seq[2] == 4,
	   "the records before it and the other rings' still read");
	is_int(ring(&cr, 1)->cons, ring(&cr, 1)->prod, "the bad ring's rest skipped");
	put(ring(&cr, 1), SIZE, 128, 5);
	s.n = 0;
	is_int(cpu_rings_drain(&cr, check, &s), 1, "and read again after");
	/* a zero length, and a prod more than a ring ahead */
	put(ring(&cr, 0), SIZE, 128, 6);
	*(uint32_t *)((char *)ring(&cr, 0) + GB_CRING_HEAD + 128) = GB_REC_CALL;
	is_int(cpu_rings_drain(&cr, check, &s), -EBADMSG, "a record of no length: -EBADMSG");
	ring(&cr, 2)->prod = ring(&cr, 2)->cons + 2 * SIZE;
	is_int(cpu_rings_drain(&cr, check, &s), -EBADMSG, "prod a ring ahead of cons: -EBADMSG");
	is_int(ring(&cr, 2)->cons, ring(&cr, 2)->prod, "skipped");
	free(cr.base);
}

struct writer {
	struct gb_cring *r;
	uint32_t count;
};

static void *write_many(void *arg)
{
	struct writer *w = arg;

	for (uint32_t seq = 1; seq <= w->count;) {
		if (put(w->r, SIZE, seq % 3 ? 128 : 88, seq))
			seq++;
	}
	return NULL;
}

static int check_next(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;
	const uint32_t *w = data;

	if (w[0] != GB_REC_CALL || w[1] != ++s->next || size != (w[1] % 3 ? 128u : 88u))
		s->bad++;
	for (uint32_t i = 2; i < size / 4; i++)
		if (w[i] != w[1] * 7 + i)
			s->bad++;
	return 0;
}

static void test_threaded(void)
{
	struct cpu_rings cr;
	struct seen s = { 0 };
	struct writer w = { .count = 300000 };
	pthread_t t;
	int ret = 0;

	rings_init(&cr, 1, SIZE);
	w.r = ring(&cr, 0);
	pthread_create(&t, NULL, write_many, &w);
	while (s.next < w.count && ret >= 0)
		ret = cpu_rings_drain(&cr, check_next, &s);
	pthread_join(t, NULL);
	is_int(s.next, w.count, "a writer thread's 300000 records, a 4 KiB ring drained beside it");
	is_int(s.bad, 0, "each whole and in order");
	free(cr.base);
}

int main(void)
{
	struct cpu_rings none = { 0 };
	struct seen s = { 0 };

	is_int(cpu_rings_drain(&none, check, &s), 0, "no rings: nothing");
	test_order_and_room();
	test_wrap();
	test_handler_error();
	test_bad_ring();
	test_threaded();
	return done_testing();
}
