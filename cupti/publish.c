// SPDX-License-Identifier: BSD-2-Clause
/* The transport to gpubpf; see publish.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "publish.h"

/*
 * USDT markers with semaphores.  The marker site is a 5-byte NOP instead
 * of sys/sdt.h's one-byte nop: the kernel optimises uprobes on 5-byte NOPs
 * into a call, about 20 times cheaper than the int3 trap (DESIGN.md).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#undef _SDT_NOP
#define _SDT_NOP .nops 5

__extension__ unsigned short gpubpf_batch_semaphore
	__attribute__((unused, section(".probes")));
__extension__ unsigned short gpubpf_api_semaphore
	__attribute__((unused, section(".probes")));

/*
 * Raised by each recorder once its markers are attached (gpubpf writes it
 * through /proc/PID/mem): a second recorder joining one that is already
 * recorded finds the library collecting, and the semaphores raised, as
 * they were.  In .data, so that it has a place in the file.
 */
__attribute__((visibility("default"), section(".data"))) uint32_t gpubpf_joins;

#define NAME_SLOTS 4096         /* open addressing; ids beyond it are not interned */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * A child forked from a recorded process must never reach a marker site:
 * the kernel rewrote the parent's 5-byte NOPs into calls to a trampoline
 * page that the child does not inherit (Linux 6.18), so it would crash.
 * Forked children therefore get no GPU timing; exec'd ones do.
 */
static int in_fork_child;
static uint64_t batch[GA_BATCH_MAX / 8];  /* 8-byte aligned records */
static size_t batch_len;
static uint32_t batch_records;  /* records in the batch: what is lost if it is */
static struct { char *name; uint32_t id; int sent; } names[NAME_SLOTS];
static uint32_t next_name_id = 1;
static char last_error[GA_NAME_MAX];    /* why the library is dormant, for a later recorder */

static void on_fork_child(void)
{
	in_fork_child = 1;
}

__attribute__((constructor)) static void publish_init(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

int publish_attached(void)
{
	return !in_fork_child && __atomic_load_n(&gpubpf_batch_semaphore, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&gpubpf_api_semaphore, __ATOMIC_RELAXED);
}

void publish_api(uint32_t correlation, uint32_t cbid)
{
	if (__atomic_load_n(&gpubpf_api_semaphore, __ATOMIC_RELAXED) && !in_fork_child)
		STAP_PROBE2(gpubpf, api, correlation, cbid);
}

void publish_api_error(uint32_t correlation, uint32_t cbid, int32_t result)
{
	int64_t res = result;   /* a whole register: the marker reads 8 bytes */

	/* a second site of the api marker, told apart by its third argument */
	if (__atomic_load_n(&gpubpf_api_semaphore, __ATOMIC_RELAXED) && !in_fork_child)
		STAP_PROBE3(gpubpf, api, correlation, cbid, res);
}

static void send_locked(void)
{
	uint64_t nrecs = batch_records;

	/* in a register: libbpf cannot read a USDT argument relative to %rip */
	__asm__ __volatile__("" : "+r"(nrecs));
	if (batch_len && !in_fork_child)
		STAP_PROBE3(gpubpf, batch, batch, batch_len, nrecs);
	batch_len = 0;
	batch_records = 0;
}

static int append_locked(const struct ga_hdr *rec)
{
	if (rec->size > GA_BATCH_MAX || rec->size % 8 || rec->size < sizeof(*rec))
		return -E2BIG;
	if (batch_len + rec->size > GA_BATCH_MAX)
		send_locked();
	memcpy((char *)batch + batch_len, rec, rec->size);
	batch_len += rec->size;
	batch_records++;
	return 0;
}

int publish_record(const struct ga_hdr *rec)
{
	int ret;

	pthread_mutex_lock(&lock);
	ret = append_locked(rec);
	pthread_mutex_unlock(&lock);
	return ret;
}

/* Append a record whose payload is a string (GA_NAME, GA_ERROR). */
static void append_string_locked(uint16_t type, uint32_t id, const char *s)
{
	struct {
		struct ga_name n;
		char buf[GA_NAME_MAX + 8];
	} rec;
	size_t len = strnlen(s, GA_NAME_MAX - 1), off;
	char *dst;

	memset(&rec, 0, sizeof(rec));
	rec.n.h.type = type;
	if (type == GA_NAME) {
		rec.n.id = id;
		dst = rec.n.name;
		off = sizeof(rec.n);
	} else {
		dst = (char *)&rec.n + sizeof(struct ga_error);
		off = sizeof(struct ga_error);
	}
	memcpy(dst, s, len);
	rec.n.h.size = (off + len + 1 + 7) & ~7u;
	append_locked(&rec.n.h);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

uint32_t publish_name(const char *name)
{
	size_t i = hash_str(name) % NAME_SLOTS, n;
	uint32_t id = 0;

	pthread_mutex_lock(&lock);
	for (n = 0; n < NAME_SLOTS && names[i].name; n++, i = (i + 1) % NAME_SLOTS)
		if (!strcmp(names[i].name, name))
			break;
	if (n < NAME_SLOTS && !names[i].name && (names[i].name = strdup(name)))
		names[i].id = next_name_id++;
	if (n < NAME_SLOTS && names[i].name) {
		id = names[i].id;
		if (!names[i].sent) {
			append_string_locked(GA_NAME, id, name);
			names[i].sent = 1;
		}
	} else {
		/* table full: a fresh id each time, name sent with it */
		id = next_name_id++;
		append_string_locked(GA_NAME, id, name);
	}
	pthread_mutex_unlock(&lock);
	return id;
}

void publish_dropped(uint64_t n)
{
	struct ga_dropped d = { .h = { .type = GA_DROPPED, .size = sizeof(d) }, .records = n };

	if (n)
		publish_record(&d.h);
}

void publish_error(const char *message)
{
	pthread_mutex_lock(&lock);
	if (message != last_error)
		snprintf(last_error, sizeof(last_error), "%s", message);
	append_string_locked(GA_ERROR, 0, message);
	send_locked();
	pthread_mutex_unlock(&lock);
}

void publish_window(uint64_t ts)
{
	struct ga_window w = { .h = { .type = GA_WINDOW, .size = sizeof(w) }, .ts = ts };

	publish_record(&w.h);
}

void publish_flush(void)
{
	pthread_mutex_lock(&lock);
	send_locked();
	pthread_mutex_unlock(&lock);
}

uint32_t publish_joins(void)
{
	return __atomic_load_n(&gpubpf_joins, __ATOMIC_RELAXED);
}

void publish_joined(int collecting, uint64_t ts)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < NAME_SLOTS; i++)
		names[i].sent = 0;
	pthread_mutex_unlock(&lock);
	if (collecting)
		publish_window(ts);
	else if (last_error[0])
		publish_error(last_error);
}

void publish_reset(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < NAME_SLOTS; i++)
		names[i].sent = 0;
	batch_len = 0;
	batch_records = 0;
	pthread_mutex_unlock(&lock);
}
