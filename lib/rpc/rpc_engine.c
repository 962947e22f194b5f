/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The workers that run sessions. Each worker waits on one epoll set: its
 * sessions' sockets, its wake eventfd and, for a server, the listening
 * socket. Other threads hand work to a worker through its task queue, a
 * lock-free intrusive list (Vyukov's).
 *
 * A TCP engine's worker is a thread. With worker.poll.enable=yes it never
 * sleeps (epoll_wait with no timeout, in a loop); otherwise it sleeps in
 * epoll_wait until a socket, a task or the next deadline of its sessions
 * (heartbeat, a call's timeout) wakes it, and a pusher writes its eventfd
 * only then (a write(2) per push would cost a syscall per call).
 *
 * An RDMA engine's workers are hosted: their rounds run on droce's control
 * lcore, which owns the sessions' QPs, so that a session's packets,
 * completions and handlers need no thread hand-off. There the control
 * lcore's own sleep (event mode) stands for theirs: a push wakes it, and
 * a timer at the next deadline.
 */

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_pause.h>

#include "rpc_private.h"
#include "rpc_rdma.h"

/* Heartbeats and deadlines are looked at at least this often. */
#define SCAN_PERIOD_NS 100000000ull
#define EVENTS_PER_WAIT 64
/* How often a hosted worker asks epoll about its CM channels and
 * listeners: a connect or disconnect waits that much longer at most.
 */
#define HOSTED_EPOLL_NS 100000ull
#define HOSTED_ROUNDS_PER_TSC 32

static __thread struct rpc_worker *self;

uint64_t
rpc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t
rpc_worker_now(const struct rpc_worker *w)
{
	return w->round_ns != 0 ? w->round_ns : rpc_now_ns();
}

struct rpc_worker *
rpc_worker_self(void)
{
	return self;
}

bool
rpc_worker_would_wait_for(const struct rpc_worker *w)
{
	return self != NULL && (self == w || (self->engine->hosted && w->engine->hosted));
}

/* ---- the task queue ------------------------------------------------------------ */

static void
queue_init(struct rpc_task_queue *q)
{
	atomic_init(&q->stub.next, NULL);
	atomic_init(&q->head, &q->stub);
	q->tail = &q->stub;
}

static void
queue_push(struct rpc_task_queue *q, struct rpc_task *t)
{
	struct rpc_task *prev;

	atomic_store_explicit(&t->next, NULL, memory_order_relaxed);
	prev = atomic_exchange_explicit(&q->head, t, memory_order_acq_rel);
	atomic_store_explicit(&prev->next, t, memory_order_release);
}

/* The oldest task, or NULL: none, or a push half done (its pusher wakes
 * the worker once it is whole).
 */
/* Nothing to pop: the consumer's view (a push half done counts as none;
 * its pusher wakes the consumer).
 */
static bool
queue_empty(struct rpc_task_queue *q)
{
	return q->tail == &q->stub &&
	       atomic_load_explicit(&q->stub.next, memory_order_acquire) == NULL;
}

static struct rpc_task *
queue_pop(struct rpc_task_queue *q)
{
	struct rpc_task *tail = q->tail;
	struct rpc_task *next = atomic_load_explicit(&tail->next, memory_order_acquire);

	if (tail == &q->stub) {
		if (next == NULL)
			return NULL;
		q->tail = next;
		tail = next;
		next = atomic_load_explicit(&next->next, memory_order_acquire);
	}
	if (next != NULL) {
		q->tail = next;
		return tail;
	}
	if (tail != atomic_load_explicit(&q->head, memory_order_acquire))
		return NULL;
	queue_push(q, &q->stub);
	next = atomic_load_explicit(&tail->next, memory_order_acquire);
	if (next == NULL)
		return NULL;
	q->tail = next;
	return tail;
}

void
rpc_worker_push(struct rpc_worker *w, struct rpc_task *t)
{
	atomic_fetch_add(&w->pushers, 1);
	if (atomic_load(&w->closed)) {
		/* Its thread is gone: whatever the task does finds its session
		 * ended, here.
		 */
		atomic_fetch_sub(&w->pushers, 1);
		t->run(t);
		return;
	}
	queue_push(&w->tasks, t);
	if (w->engine->hosted) {
		rpc_rdma_wake();
		atomic_fetch_sub(&w->pushers, 1);
		return;
	}
	/* The push before the look at sleeping, as the worker's store of it
	 * before its look at the queue: one of the two sees the other.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&w->sleeping, memory_order_relaxed)) {
		uint64_t one = 1;

		/* Only a full counter refuses, and then the worker wakes anyway. */
		if (write(w->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			RPC_LOG(ERR, "worker %u: wake: %s", w->index, strerror(errno));
	}
	atomic_fetch_sub(&w->pushers, 1);
}

/* ---- epoll ---------------------------------------------------------------------- */

int
rpc_worker_watch(struct rpc_worker *w, int fd, uint32_t events, struct rpc_watch *watch)
{
	struct epoll_event ev = { .events = events, .data.ptr = watch };

	return epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

int
rpc_worker_rewatch(struct rpc_worker *w, int fd, uint32_t events, struct rpc_watch *watch)
{
	struct epoll_event ev = { .events = events, .data.ptr = watch };

	return epoll_ctl(w->epfd, EPOLL_CTL_MOD, fd, &ev) == 0 ? 0 : -errno;
}

void
rpc_worker_unwatch(struct rpc_worker *w, int fd)
{
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void
rpc_worker_ready(struct rpc_worker *w, struct rpc_watch *watch)
{
	if (watch->queued)
		return;
	watch->queued = true;
	w->nb_ready++;
	TAILQ_INSERT_TAIL(&w->ready, watch, ready_link);
}

void
rpc_worker_unready(struct rpc_worker *w, struct rpc_watch *watch)
{
	if (!watch->queued)
		return;
	watch->queued = false;
	w->nb_ready--;
	TAILQ_REMOVE(&w->ready, watch, ready_link);
}

/* From here to batch_end(), the frames that tasks and handlers queue on
 * this worker wait, to leave together: the replies to the calls a session
 * read at once in one SEND (or one sendmsg()) rather than one each. A
 * batch spans one session's watch, so no session's replies wait for
 * another's requests.
 */
static void
batch_begin(struct rpc_worker *w)
{
	w->batching = true;
}

/* Still batching: a frame that a written frame's callback queues joins
 * the list and leaves in the same drain.
 */
void
rpc_worker_flush_queued(struct rpc_worker *w)
{
	if (self != w || !w->batching)
		return;         /* nothing is queued outside a batch */
	while (w->flush_first != NULL) {
		struct rpc_session *s = w->flush_first;

		w->flush_first = s->flush_next;
		s->flush_due = false;
		rpc_session_flush(s);
		rpc_session_unref(s);
	}
}

static void
batch_end(struct rpc_worker *w)
{
	rpc_worker_flush_queued(w);
	w->batching = false;
}

/* The watches made ready before this round, as many as were queued when
 * it began: one that its own callback makes ready again waits for the
 * next round.
 */
static unsigned int
run_ready(struct rpc_worker *w)
{
	unsigned int due = w->nb_ready, n = 0;
	struct rpc_watch *watch;

	while (n < due && (watch = TAILQ_FIRST(&w->ready)) != NULL) {
		rpc_worker_unready(w, watch);
		batch_begin(w);
		watch->ready(watch, EPOLLIN);
		batch_end(w);
		n++;
	}
	return n;
}

void
rpc_worker_scan_by(struct rpc_worker *w, uint64_t when_ns)
{
	if (when_ns < w->next_scan_ns)
		w->next_scan_ns = when_ns;
}

/* ---- the loop ------------------------------------------------------------------- */

void
rpc_worker_bury(struct rpc_worker *w, struct rpc_session *s)
{
	if (self != w) {
		/* Not in a round of its worker. */
		rpc_session_release(s);
		rpc_session_unref(s);
		return;
	}
	TAILQ_INSERT_TAIL(&w->ended, s, link);
}

static void
bury_ended(struct rpc_worker *w)
{
	struct rpc_session *s;

	while ((s = TAILQ_FIRST(&w->ended)) != NULL) {
		TAILQ_REMOVE(&w->ended, s, link);
		rpc_session_release(s);
		rpc_session_unref(s);
	}
}

void
rpc_worker_flush_later(struct rpc_worker *w, struct rpc_session *s)
{
	if (self != w || !w->batching) {
		rpc_session_flush(s);
		return;
	}
	if (s->flush_due)
		return;
	s->flush_due = true;
	rpc_session_ref(s);
	s->flush_next = w->flush_first;
	w->flush_first = s;
}

/* Tasks queue calls and replies; their frames go out together after.
 * The count of tasks run.
 */
static unsigned int
run_tasks(struct rpc_worker *w)
{
	unsigned int n = 0;
	struct rpc_task *t;

	batch_begin(w);
	for (; (t = queue_pop(&w->tasks)) != NULL; n++)
		t->run(t);
	batch_end(w);
	return n;
}

static void
scan_sessions(struct rpc_worker *w, uint64_t now)
{
	struct rpc_session *s, *next;

	w->next_scan_ns = now + SCAN_PERIOD_NS;
	for (s = TAILQ_FIRST(&w->sessions); s != NULL; s = next) {
		unsigned int gen = w->sessions_gen;

		/* A scan may end sessions (its own, or another through a
		 * callback): then the walk starts again, which looks at the
		 * ones before a second time, to no effect.
		 */
		rpc_session_ref(s);
		rpc_session_scan(s, now);
		next = gen == w->sessions_gen ? TAILQ_NEXT(s, link) : TAILQ_FIRST(&w->sessions);
		rpc_session_unref(s);
	}
}

/* Milliseconds epoll may sleep: until the next scan, rounded up. */
static int
sleep_ms(const struct rpc_worker *w, uint64_t now)
{
	uint64_t ns;

	if (w->engine->busy_poll)
		return 0;
	if (w->next_scan_ns <= now)
		return 0;
	ns = w->next_scan_ns - now;
	return (int)RTE_MIN((ns + 999999) / 1000000, (uint64_t)INT_MAX);
}

/* Whether the round reads the clock: always on a thread of its own;
 * hosted, once per HOSTED_EPOLL_NS by the TSC (a third of the cost of
 * clock_gettime here), and on a busy-polling lcore, whose rounds are a
 * few hundred nanoseconds, the TSC only every HOSTED_ROUNDS_PER_TSC
 * rounds. Deadlines and heartbeats are that much late at most.
 */
static bool
round_reads_clock(struct rpc_worker *w)
{
	uint64_t tsc;

	if (!w->engine->hosted)
		return true;
	if (w->host_busy_poll && w->round_ns != 0 &&
	    ++w->rounds_unclocked < HOSTED_ROUNDS_PER_TSC)
		return false;
	w->rounds_unclocked = 0;
	tsc = rte_get_timer_cycles();
	if (tsc < w->next_read_tsc)
		return false;
	w->next_read_tsc = tsc + HOSTED_EPOLL_NS * rte_get_timer_hz() / 1000000000ull;
	return true;
}

/* Tasks, deadlines, then what epoll has ready, waiting for it when
 * @p may_sleep and nothing is due. Nonzero when there was work.
 */
static unsigned int
worker_round(struct rpc_worker *w, bool may_sleep)
{
	struct epoll_event ev[EVENTS_PER_WAIT];
	bool read_clock = round_reads_clock(w);
	unsigned int work;
	uint64_t now;
	int n, timeout = 0;

	if (read_clock)
		w->round_ns = rpc_now_ns();
	now = w->round_ns;
	work = run_tasks(w) + run_ready(w);
	if (now >= w->next_scan_ns)
		scan_sessions(w, now);
	/* Hosted: the sessions' CQs say so through the ready list; what
	 * epoll still watches (CM channels, listeners) is seldom news, looked
	 * at with the clock (round_reads_clock()). A look put off counts as
	 * work: a control lcore in event mode must not go to sleep before it
	 * was taken.
	 */
	if (w->engine->hosted && !read_clock) {
		bury_ended(w);
		return work + 1;
	}
	if (may_sleep) {
		timeout = sleep_ms(w, rpc_now_ns());
		if (timeout != 0) {
			/* Said before the last look at the queue (see rpc_worker_push()). */
			atomic_store_explicit(&w->sleeping, true, memory_order_relaxed);
			atomic_thread_fence(memory_order_seq_cst);
			if (!queue_empty(&w->tasks))
				timeout = 0;
		}
	}
	n = epoll_wait(w->epfd, ev, EVENTS_PER_WAIT, timeout);
	atomic_store_explicit(&w->sleeping, false, memory_order_relaxed);
	if (timeout != 0)
		w->round_ns = rpc_now_ns(); /* it slept: what comes in is stamped now */
	for (int i = 0; i < n; i++) {
		struct rpc_watch *watch = ev[i].data.ptr;

		if (watch == NULL) {
			uint64_t v;

			if (read(w->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				RPC_LOG(ERR, "worker %u: wake: %s", w->index, strerror(errno));
			continue;
		}
		batch_begin(w);
		watch->ready(watch, ev[i].events);
		batch_end(w);
	}
	bury_ended(w);
	return work + (unsigned int)RTE_MAX(n, 0);
}

static void *
worker_main(void *arg)
{
	struct rpc_worker *w = arg;

	self = w;
	while (!atomic_load_explicit(&w->stop, memory_order_acquire))
		worker_round(w, true);
	run_tasks(w);
	bury_ended(w);
	self = NULL;
	return NULL;
}

static void
scan_timer_expired(struct rte_timer *t, void *arg)
{
	struct rpc_worker *w = arg;

	(void)t;
	w->timer_ns = 0;
}

unsigned int
rpc_worker_hosted_round(struct rpc_worker *w)
{
	unsigned int work;

	self = w;
	work = worker_round(w, false);
	self = NULL;
	/* A control lcore in event mode sleeps until its next timer: one at
	 * the next deadline (the stack's mode decides, not the RPC
	 * configuration's worker.poll.enable).
	 */
	if (w->timer_ns != w->next_scan_ns) {
		uint64_t now = w->round_ns;
		uint64_t ns = w->next_scan_ns > now ? w->next_scan_ns - now : 0;

		w->timer_ns = w->next_scan_ns;
		rte_timer_reset(&w->scan_timer, ns * rte_get_timer_hz() / 1000000000ull, SINGLE,
				rte_lcore_id(), scan_timer_expired, w);
	}
	return work;
}

/* ---- setup ---------------------------------------------------------------------- */

static int
worker_init(struct rpc_engine *e, struct rpc_worker *w, unsigned int index)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	w->engine = e;
	w->index = index;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	queue_init(&w->tasks);
	TAILQ_INIT(&w->sessions);
	TAILQ_INIT(&w->ended);
	TAILQ_INIT(&w->ready);
	w->nb_ready = 0;
	atomic_init(&w->stop, false);
	atomic_init(&w->closed, false);
	atomic_init(&w->pushers, 0);
	atomic_init(&w->sleeping, false);
	w->next_scan_ns = 0;
	w->round_ns = 0;
	w->next_read_tsc = 0;
	rte_timer_init(&w->scan_timer);
	if (w->epfd < 0 || w->wakefd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &ev) != 0)
		return -errno;
	return 0;
}

static int
worker_start(struct rpc_worker *w, int cpu, const char *name)
{
	char tname[16];
	int ret;

	ret = pthread_create(&w->thread, NULL, worker_main, w);
	if (ret != 0)
		return -ret;
	w->thread_started = true;
	snprintf(tname, sizeof(tname), "rpc-%.6s-%u", name, w->index);
	pthread_setname_np(w->thread, tname);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		ret = pthread_setaffinity_np(w->thread, sizeof(set), &set);
		if (ret != 0)
			RPC_LOG(WARNING, "worker %u: cannot run on cpu %d: %s", w->index, cpu,
				strerror(ret));
	}
	return 0;
}

int
rpc_engine_create(const struct rpc_conf *conf, const char *name, struct rpc_engine **out)
{
	const struct droce_workers *wk = &conf->workers;
	struct rpc_engine *e = calloc(1, sizeof(*e));
	unsigned int i = 0;
	int ret = 0;

	if (e == NULL)
		return -ENOMEM;
	atomic_init(&e->refs, 1);
	e->busy_poll = conf->busy_poll;
	e->hosted = conf->type == RPC_TRANSPORT_RDMA;
	e->nb_workers = wk->nb_workers;
	e->workers = calloc(e->nb_workers, sizeof(*e->workers));
	if (e->workers == NULL) {
		free(e);
		return -ENOMEM;
	}
	for (uint16_t g = 0; g < wk->nb_groups && ret == 0; g++)
		for (uint16_t k = 0; k < wk->group[g].workers && ret == 0; k++, i++) {
			ret = worker_init(e, &e->workers[i], i);
			if (ret == 0 && e->hosted)
				ret = rpc_rdma_host(&e->workers[i]);
			else if (ret == 0)
				ret = worker_start(&e->workers[i], droce_workers_cpu(wk, g, k), name);
		}
	if (ret != 0) {
		/* i went on past the worker that failed, which is set up in part. */
		RPC_LOG(ERR, "%s: cannot start worker %u: %s", name, i - 1, strerror(-ret));
		e->nb_workers = i;
		rpc_engine_destroy(e);
		return ret;
	}
	*out = e;
	return 0;
}

static void
stop_task(struct rpc_task *t)
{
	(void)t;
}

void
rpc_engine_ref(struct rpc_engine *e)
{
	atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
}

void
rpc_engine_unref(struct rpc_engine *e)
{
	if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(e->workers);
	free(e);
}

void
rpc_engine_destroy(struct rpc_engine *e)
{
	if (e == NULL)
		return;
	for (unsigned int i = 0; i < e->nb_workers; i++) {
		struct rpc_worker *w = &e->workers[i];
		struct rpc_task wake = { .run = stop_task };

		if (w->thread_started) {
			atomic_store_explicit(&w->stop, true, memory_order_release);
			rpc_worker_push(w, &wake);
			pthread_join(w->thread, NULL);
		}
		if (e->hosted)
			rpc_rdma_unhost(w);
		/* From here pushers run their tasks themselves; what was pushed
		 * before runs now.
		 */
		atomic_store(&w->closed, true);
		while (atomic_load(&w->pushers) != 0)
			sched_yield();
		run_tasks(w);
		if (w->epfd > 0)
			close(w->epfd);
		if (w->wakefd > 0)
			close(w->wakefd);
	}
	rpc_engine_unref(e);
}

struct rpc_worker *
rpc_engine_pick(struct rpc_engine *e)
{
	unsigned int i = atomic_fetch_add_explicit(&e->next, 1, memory_order_relaxed);

	return &e->workers[i % e->nb_workers];
}

/* ---- waiting for a state -------------------------------------------------------- */

/* Looks before a waiter sleeps (tens of microseconds): a response over
 * a fast link comes in that while.
 */
#define WAIT_SPINS 2000
/* Rounds of a driven stack between looks at the clock for a deadline. */
#define DRIVE_ROUNDS_PER_CLOCK 64

/* Threads asleep in a futex wait here: a waker makes its system call
 * only when there is one (a caller that drives its own stack never
 * sleeps, and its calls end on its own thread).
 */
static atomic_int futex_sleepers;

static void
futex_sleep(atomic_int *word, int v, const struct timespec *ts)
{
	/* Counted before the kernel looks at *word (a locked add orders
	 * them): a waker that stored after that look sees the count.
	 */
	atomic_fetch_add(&futex_sleepers, 1);
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, v, ts, NULL, 0);
	atomic_fetch_sub(&futex_sleepers, 1);
}

int
rpc_wait_state(atomic_int *state, unsigned int done_mask, uint64_t deadline_ns)
{
	int v = atomic_load_explicit(state, memory_order_acquire);
	unsigned int rounds = 0;

	if ((1u << v) & done_mask)
		return v;
	while (rpc_rdma_drive()) {
		v = atomic_load_explicit(state, memory_order_acquire);
		if ((1u << v) & done_mask)
			return v;
		if (deadline_ns != 0 && ++rounds % DRIVE_ROUNDS_PER_CLOCK == 0 &&
		    rpc_now_ns() >= deadline_ns)
			return v;
	}
	for (unsigned int i = 0; i < WAIT_SPINS; i++) {
		v = atomic_load_explicit(state, memory_order_acquire);
		if ((1u << v) & done_mask)
			return v;
		rte_pause();
	}
	for (;;) {
		struct timespec ts, *tsp = NULL;
		uint64_t now;

		v = atomic_load_explicit(state, memory_order_acquire);
		if ((1u << v) & done_mask)
			return v;
		if (deadline_ns != 0) {
			now = rpc_now_ns();
			if (now >= deadline_ns)
				return v;
			ts.tv_sec = (time_t)((deadline_ns - now) / 1000000000ull);
			ts.tv_nsec = (long)((deadline_ns - now) % 1000000000ull);
			tsp = &ts;
		}
		futex_sleep(state, v, tsp);
	}
}

void
rpc_wait_zero(atomic_int *count)
{
	int v;

	while ((v = atomic_load_explicit(count, memory_order_acquire)) != 0)
		if (!rpc_rdma_drive())
			futex_sleep(count, v, NULL);
}

void
rpc_wake_state(atomic_int *state)
{
	/* The caller's store to *state before the look at the count: a
	 * sleeper not counted yet finds the new value and does not sleep.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&futex_sleepers, memory_order_relaxed) != 0)
		syscall(SYS_futex, state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
