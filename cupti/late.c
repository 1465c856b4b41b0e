// SPDX-License-Identifier: BSD-2-Clause
/*
 * Late attach: gpubpf record -p loads this library into a process that
 * was started without CUDA_INJECTION64_PATH (user/record/inject.c: ptrace, a
 * memfd, the target's own dlopen) and then calls gpubpf_late_attach() on
 * the thread it borrowed.  That thread was stopped at a blocking system
 * call and may hold locks of the program, so the entry does one thing:
 * start the library's own thread, which sets the library up exactly as
 * InitializeInjection does at cuInit (backend probe, poll thread, dormant
 * until a recorder raises the markers' semaphores).  All CUPTI work runs
 * on the library's threads, never on the borrowed one.
 */
#include <pthread.h>
#include <signal.h>
#include "inject.h"

static int started;

static void *late_thread(void *arg)
{
	inject_start(1);
	return arg;
}

/*
 * 0: the library's thread is started (or was, by an earlier call);
 * otherwise pthread_create's error.
 */
__attribute__((visibility("default"))) int gpubpf_late_attach(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int ret;

	if (__atomic_exchange_n(&started, 1, __ATOMIC_SEQ_CST))
		return 0;
	/* the new thread takes no signal meant for the program's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &attr, late_thread, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		__atomic_store_n(&started, 0, __ATOMIC_SEQ_CST);
	return ret;
}
