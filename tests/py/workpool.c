// SPDX-License-Identifier: BSD-2-Clause
/*
 * workpool: worker threads without Python that launch kernels for a
 * Python thread, as an autograd engine does (tests/py/workers.py, loaded
 * with ctypes; t0330 builds it: cc -shared -fPIC -o libworkpool.so
 * workpool.c -lpthread -ldl).
 *
 *	wp_start(libcuda)  cuInit, start worker "wp_a" and worker "wp_b", return
 *	                   once both wait for work (0 or -1); wp_a holds a Python
 *	                   thread state without frames, as PyTorch's autograd
 *	                   threads do (its Python stack is empty: it runs none)
 *	wp_forward(n)      launch n "attr_fwd" kernels on the calling thread
 *	wp_run(n)          hand n kernels to wp_a and wait until they are done:
 *	                   wp_a launches n "attr_a" kernels, hands 2 "attr_b" to
 *	                   wp_b (which it wakes), waits for them, synchronises
 *	                   and wakes the caller
 *	wp_lone(n)         a thread "wp_lone" that nobody wakes launches n
 *	                   "attr_lone" kernels 1 ms apart; returns when it ended
 *	wp_callbacks(f, n) a thread "wp_cb", once 200 ms old (past the age at
 *	                   which BPF notes that a thread has no Python state),
 *	                   calls the Python function f n times, 2 ms apart
 *	                   (ctypes makes it a thread state for each call and
 *	                   deletes it after: the thread runs no Python between);
 *	                   returns when it ended
 *	wp_unbound(o, n)   as wp_callbacks, but a thread "wp_ub" makes each
 *	                   call's state itself as CPython 3.12+ makes one:
 *	                   put in the thread list first, its thread's id set
 *	                   after (_PyThreadState_New, then _PyThreadState_Bind,
 *	                   which only 3.12 exports), blocking 5 ms between the
 *	                   two (where its stack is walked), and calls the
 *	                   Python callable o; -2 where those are not exported
 *	wp_unbound_idle(o, n)
 *	                   as wp_unbound, but a thread "wp_ui" first holds a
 *	                   state that runs no Python for 5 ms, then makes the
 *	                   call's state unbound and blocks (walked: the idle
 *	                   state is its only one there), binds it, deletes the
 *	                   idle one and calls o: where the idle state was, freed
 *	                   memory reads as the thread's state running no Python
 *	wp_freed(o, n)     as wp_callbacks, but a thread "wp_fr" holds a state
 *	                   that runs no Python for 5 ms first (where its stack
 *	                   is walked and that state found), then makes the
 *	                   call's state, deletes the idle one and calls the
 *	                   Python callable o in the new one: the idle state's
 *	                   memory, freed, still reads as the thread's state
 *	                   running no Python
 *	wp_stop()          end both workers
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

typedef int CUresult;
typedef void *CUfunction, *CUstream, *CUmodule;

static CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			  unsigned, CUstream, void **, void **);
static CUresult (*sync)(CUstream);
static CUfunction fn_a, fn_b, fn_lone, fn_fwd;
static uint32_t dur_us = 20;
static int cb_n;                /* wp_callbacks()'s calls */

/* One hand-over: work posted under mu, taken by the worker, done signalled back. */
struct queue {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	int posted;             /* kernels posted, 0 when none */
	int busy;               /* taken, not yet done */
	int waiting;            /* the worker waits for work */
	int stop;
};

#define QUEUE_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, \
		     PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 }

static struct queue qa = QUEUE_INIT, qb = QUEUE_INIT;
static pthread_t ta, tb;

/* Post n kernels to q, wake its worker and wait until they are done. */
static void hand_over(struct queue *q, int n)
{
	pthread_mutex_lock(&q->mu);
	q->posted = n;
	q->busy = 1;
	pthread_cond_signal(&q->work);
	while (q->busy)
		pthread_cond_wait(&q->done, &q->mu);
	pthread_mutex_unlock(&q->mu);
}

/* The worker's side: the next batch, 0 when told to stop. */
static int take(struct queue *q)
{
	int n;

	pthread_mutex_lock(&q->mu);
	q->waiting = 1;
	while (!q->posted && !q->stop)
		pthread_cond_wait(&q->work, &q->mu);
	q->waiting = 0;
	n = q->stop ? 0 : q->posted;
	q->posted = 0;
	pthread_mutex_unlock(&q->mu);
	return n;
}

static void finish(struct queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->busy = 0;
	pthread_cond_signal(&q->done);
	pthread_mutex_unlock(&q->mu);
}

static void launch_n(CUfunction f, int n)
{
	void *params[] = { &dur_us };

	for (int i = 0; i < n; i++)
		launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
}

/*
 * A thread state made and kept, the GIL released, as PyTorch's
 * PythonEngine::thread_init does for its autograd threads (so that Python
 * hooks can run on them); in the interpreter that loaded this library.
 */
static int (*gil_ensure)(void);
static void (*gil_release)(int);
static void *(*save_thread)(void);
static void (*restore_thread)(void *);

static void *worker_a(void *arg)
{
	void *ts = NULL;
	int n, g = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "wp_a");
	if (gil_ensure && gil_release && save_thread && restore_thread) {
		g = gil_ensure();
		ts = save_thread();
	}
	while ((n = take(&qa))) {
		launch_n(fn_a, n);
		hand_over(&qb, 2);
		sync(NULL);
		finish(&qa);
	}
	if (ts) {
		restore_thread(ts);
		gil_release(g);
	}
	return NULL;
}

static void *worker_b(void *arg)
{
	int n;

	(void)arg;
	pthread_setname_np(pthread_self(), "wp_b");
	while ((n = take(&qb))) {
		launch_n(fn_b, n);
		finish(&qb);
	}
	return NULL;
}

static int waits(struct queue *q)
{
	int w;

	pthread_mutex_lock(&q->mu);
	w = q->waiting;
	pthread_mutex_unlock(&q->mu);
	return w;
}

int wp_start(const char *libcuda)
{
	CUresult (*init)(unsigned), (*getfn)(CUfunction *, CUmodule, const char *);
	struct timespec ms = { 0, 1000000 };
	void *h = dlopen(libcuda, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return -1;
	init = (CUresult (*)(unsigned))dlsym(h, "cuInit");
	getfn = (CUresult (*)(CUfunction *, CUmodule, const char *))dlsym(h, "cuModuleGetFunction");
	sync = (CUresult (*)(CUstream))dlsym(h, "cuStreamSynchronize");
	launch = (CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			       unsigned, unsigned, CUstream, void **, void **))dlsym(h, "cuLaunchKernel");
	if (!init || !getfn || !sync || !launch || init(0) || getfn(&fn_a, NULL, "attr_a") ||
	    getfn(&fn_b, NULL, "attr_b") || getfn(&fn_lone, NULL, "attr_lone") ||
	    getfn(&fn_fwd, NULL, "attr_fwd"))
		return -1;
	gil_ensure = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
	gil_release = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
	save_thread = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
	restore_thread = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
	if (pthread_create(&ta, NULL, worker_a, NULL) || pthread_create(&tb, NULL, worker_b, NULL))
		return -1;
	while (!waits(&qa) || !waits(&qb))
		nanosleep(&ms, NULL);
	return 0;
}

void wp_forward(int n)
{
	launch_n(fn_fwd, n);
}

void wp_run(int n)
{
	hand_over(&qa, n);
}

static void *lone(void *arg)
{
	struct timespec ms = { 0, 1000000 };
	int n = (int)(intptr_t)arg;

	pthread_setname_np(pthread_self(), "wp_lone");
	for (int i = 0; i < n; i++) {
		launch_n(fn_lone, 1);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

int wp_lone(int n)
{
	pthread_t t;

	if (pthread_create(&t, NULL, lone, (void *)(intptr_t)n))
		return -1;
	return pthread_join(t, NULL) ? -1 : 0;
}

static void *calls_back(void *arg)
{
	struct timespec old = { 0, 200000000 }, gap = { 0, 2000000 };
	void (*f)(int) = arg;

	pthread_setname_np(pthread_self(), "wp_cb");
	nanosleep(&old, NULL);
	for (int i = 0; i < cb_n; i++) {
		f(i);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

int wp_callbacks(void (*f)(int), int n)
{
	pthread_t t;

	cb_n = n;
	if (pthread_create(&t, NULL, calls_back, (void *)f))
		return -1;
	return pthread_join(t, NULL) ? -1 : 0;
}

struct unbound {
	void *(*state_new)(void *interp), (*bind)(void *ts), *(*main_interp)(void);
	void (*restore)(void *ts), (*clear)(void *ts), (*delete_current)(void);
	void *(*call)(void *callable, void *args), (*decref)(void *obj);
	void *(*bound_new)(void *interp), (*delete)(void *ts);  /* wp_unbound_idle */
	void *callable;
	int n, idle;
};

static void *unbound_calls(void *arg)
{
	struct timespec old = { 0, 200000000 }, made = { 0, 5000000 }, gap = { 0, 2000000 };
	struct unbound *u = arg;

	pthread_setname_np(pthread_self(), u->idle ? "wp_ui" : "wp_ub");
	nanosleep(&old, NULL);
	for (int i = 0; i < u->n; i++) {
		void *was = u->idle ? u->bound_new(u->main_interp()) : NULL, *ts, *ret;

		if (was)
			nanosleep(&made, NULL);
		ts = u->state_new(u->main_interp());
		nanosleep(&made, NULL);
		u->bind(ts);
		u->restore(ts);
		if (was) {
			u->clear(was);
			u->delete(was);
		}
		ret = u->call(u->callable, NULL);
		if (ret)
			u->decref(ret);
		u->clear(ts);
		u->delete_current();
		nanosleep(&gap, NULL);
	}
	return NULL;
}

static int unbound_run(void *callable, int n, int idle)
{
	struct unbound u = {
		.state_new = (void *(*)(void *))dlsym(RTLD_DEFAULT, "_PyThreadState_New"),
		.bind = (void (*)(void *))dlsym(RTLD_DEFAULT, "_PyThreadState_Bind"),
		.main_interp = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Main"),
		.restore = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread"),
		.clear = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyThreadState_Clear"),
		.delete_current = (void (*)(void))dlsym(RTLD_DEFAULT, "PyThreadState_DeleteCurrent"),
		.call = (void *(*)(void *, void *))dlsym(RTLD_DEFAULT, "PyObject_CallObject"),
		.decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef"),
		.bound_new = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyThreadState_New"),
		.delete = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyThreadState_Delete"),
		.callable = callable,
		.n = n,
		.idle = idle,
	};
	pthread_t t;

	if (!u.state_new || !u.bind || !u.main_interp || !u.restore || !u.clear ||
	    !u.delete_current || !u.call || !u.decref || !u.bound_new || !u.delete)
		return -2;
	if (pthread_create(&t, NULL, unbound_calls, &u))
		return -1;
	return pthread_join(t, NULL) ? -1 : 0;
}

int wp_unbound(void *callable, int n)
{
	return unbound_run(callable, n, 0);
}

int wp_unbound_idle(void *callable, int n)
{
	return unbound_run(callable, n, 1);
}

struct freed {
	void *(*state_new)(void *interp), *(*interp)(void), (*restore)(void *ts);
	void (*clear)(void *ts), (*delete)(void *ts), (*delete_current)(void);
	void *(*call)(void *callable, void *args), (*decref)(void *obj);
	void *callable;
	int n;
};

static void *freed_calls(void *arg)
{
	struct timespec old = { 0, 200000000 }, idle = { 0, 5000000 }, gap = { 0, 2000000 };
	struct freed *u = arg;

	pthread_setname_np(pthread_self(), "wp_fr");
	nanosleep(&old, NULL);
	for (int i = 0; i < u->n; i++) {
		void *was = u->state_new(u->interp()), *ts, *ret;

		nanosleep(&idle, NULL);
		ts = u->state_new(u->interp());
		u->restore(ts);
		u->clear(was);
		u->delete(was);
		ret = u->call(u->callable, NULL);
		if (ret)
			u->decref(ret);
		u->clear(ts);
		u->delete_current();
		nanosleep(&gap, NULL);
	}
	return NULL;
}

int wp_freed(void *callable, int n)
{
	struct freed u = {
		.state_new = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyThreadState_New"),
		.interp = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Head"),
		.restore = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread"),
		.clear = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyThreadState_Clear"),
		.delete = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyThreadState_Delete"),
		.delete_current = (void (*)(void))dlsym(RTLD_DEFAULT, "PyThreadState_DeleteCurrent"),
		.call = (void *(*)(void *, void *))dlsym(RTLD_DEFAULT, "PyObject_CallObject"),
		.decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef"),
		.callable = callable,
		.n = n,
	};
	pthread_t t;

	if (!u.state_new || !u.interp || !u.restore || !u.clear || !u.delete ||
	    !u.delete_current || !u.call || !u.decref)
		return -2;
	if (pthread_create(&t, NULL, freed_calls, &u))
		return -1;
	return pthread_join(t, NULL) ? -1 : 0;
}

static void stop(struct queue *q, pthread_t t)
{
	pthread_mutex_lock(&q->mu);
	q->stop = 1;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->mu);
	pthread_join(t, NULL);
}

void wp_stop(void)
{
	stop(&qa, ta);
	stop(&qb, tb);
}
