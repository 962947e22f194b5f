/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The stack's life: create (ports, lcore contexts, rings), start (ports,
 * gratuitous ARP, worker launch), run (the control loop), stop, destroy.
 * Also the loops: workers poll their queues; in event mode they wait for
 * an RX interrupt, or let rte_power_pmd_mgmt pace rte_eth_rx_burst; the
 * control lcore drains the workers' rings, runs timers and flushes TX.
 */

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_interrupts.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include "net_private.h"

RTE_LOG_REGISTER(droce_net_logtype, droce.net, INFO);

/* Empty polls before an event-mode worker sleeps on its RX interrupts. */
#define IDLE_POLLS_BEFORE_SLEEP 300
/* Longest sleep, so that a stop request is seen. */
#define SLEEP_MS 100
/* A stopping worker's last rounds: its hooks finish what they hold, for
 * at most this long.
 */
#define STOP_FINISH_MS 200
/* After an RX interrupt, keep polling this long before sleeping again:
 * some PMDs show the packet a little after the interrupt (net_tap learns
 * of it from a signal that may reach the process later than epoll does).
 */
#define AWAKE_AFTER_INTERRUPT_US 2000

static unsigned int stack_instances;

static struct droce_lcore_ctx *
ctx_create(struct droce_stack *s, unsigned int lcore_id, uint16_t txq,
	   bool is_control)
{
	struct droce_lcore_ctx *ctx;

	ctx = rte_zmalloc_socket("droce_lcore", sizeof(*ctx),
				 RTE_CACHE_LINE_SIZE,
				 (int)rte_lcore_to_socket_id(lcore_id));
	if (ctx == NULL)
		return NULL;
	ctx->stack = s;
	ctx->lcore_id = lcore_id;
	ctx->txq = txq;
	ctx->is_control = is_control;
	ctx->worker_index = is_control ? -1 : txq - 1;
	return ctx;
}

static int
create_lcores(struct droce_stack *s, char *err, size_t errlen)
{
	s->control = ctx_create(s, s->layout.control_lcore, 0, true);
	if (s->control == NULL)
		goto nomem;
	for (uint32_t i = 0; i < s->layout.nb_workers; i++) {
		struct droce_lcore_ctx *w;
		char name[RTE_RING_NAMESIZE];

		w = ctx_create(s, s->layout.worker_lcore[i], (uint16_t)(i + 1),
			       false);
		if (w == NULL)
			goto nomem;
		s->worker[i] = w;
		snprintf(name, sizeof(name), "droce%u_w%u", s->instance, i);
		w->to_control = rte_ring_create(name, NET_RING_SIZE,
				(int)rte_lcore_to_socket_id(w->lcore_id),
				RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (w->to_control == NULL) {
			snprintf(err, errlen, "worker %u: ring to the control lcore: %s",
				 i, rte_strerror(rte_errno));
			return -rte_errno;
		}
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory for the lcore contexts");
	return -ENOMEM;
}

/* Spread all (port, queue) pairs over the workers, round robin. */
static void
assign_queues(struct droce_stack *s)
{
	unsigned int k = 0;

	for (uint16_t pi = 0; pi < s->nb_ports; pi++) {
		struct net_port *p = s->port[pi];

		for (uint16_t q = 0; q < p->nb_rxq; q++, k++) {
			struct droce_lcore_ctx *w =
				s->worker[k % s->layout.nb_workers];

			p->rxq[q].lcore_id = w->lcore_id;
			w->poll[w->nb_poll].port = p;
			w->poll[w->nb_poll].queue = q;
			w->nb_poll++;
		}
	}
	for (uint32_t i = 0; i < s->layout.nb_workers; i++)
		if (s->worker[i]->nb_poll == 0)
			NET_LOG(WARNING, "worker lcore %u has no RX queue to poll (more workers than queues)",
				s->worker[i]->lcore_id);
}

/* RX interrupts only if every port has them: one worker may poll queues
 * of several ports, and one way of waiting must cover them all.
 */
static int
choose_event_mode(struct droce_stack *s)
{
	bool all = true;
	int ret = 0;

	for (uint16_t i = 0; i < s->nb_ports; i++)
		all = all && s->port[i]->rx_intr;
	for (uint16_t i = 0; !all && ret == 0 && i < s->nb_ports; i++)
		ret = net_port_use_power_mgmt(s->port[i]);
	return ret;
}

static int
create_tx_buffers(struct droce_stack *s)
{
	for (uint32_t c = 0; c < net_nb_ctx(s); c++) {
		struct droce_lcore_ctx *ctx = net_ctx(s, c);

		for (uint16_t i = 0; i < s->nb_ports; i++)
			if (net_tx_init(ctx, s->port[i]) != 0)
				return -ENOMEM;
	}
	return 0;
}

struct droce_stack *
droce_stack_create(const struct droce_conf *conf,
		   const struct droce_lcore_layout *layout,
		   char *err, size_t errlen)
{
	struct droce_stack *s;
	int ret;

	err[0] = '\0';
	if (layout->nb_workers == 0) {
		snprintf(err, errlen, "no worker lcores");
		rte_errno = EINVAL;
		return NULL;
	}
	/* ARP and stats timers need the subsystem; without it rte_timer_stop
	 * fails forever and a stack that never started could not be freed.
	 */
	ret = rte_timer_subsystem_init();
	if (ret != 0 && ret != -EALREADY) {
		snprintf(err, errlen, "rte_timer_subsystem_init: %s", rte_strerror(-ret));
		rte_errno = -ret;
		return NULL;
	}
	s = rte_zmalloc("droce_stack", sizeof(*s), RTE_CACHE_LINE_SIZE);
	if (s == NULL) {
		snprintf(err, errlen, "out of memory for the stack");
		rte_errno = ENOMEM;
		return NULL;
	}
	s->conf = *conf;
	s->layout = *layout;
	s->instance = __atomic_fetch_add(&stack_instances, 1, __ATOMIC_RELAXED);
	s->arp_timeout_tsc = (uint64_t)conf->arp_timeout * rte_get_timer_hz();
	rte_timer_init(&s->stats_timer);
	s->doorbell_fd = -1;
	if (!conf->busy_poll) {
		s->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s->doorbell_fd < 0) {
			snprintf(err, errlen, "event mode: eventfd: %s",
				 strerror(errno));
			rte_free(s);
			rte_errno = errno;
			return NULL;
		}
	}

	ret = create_lcores(s, err, errlen);
	for (uint16_t i = 0; ret == 0 && i < conf->nb_ports; i++) {
		ret = net_port_create(s, i, err, errlen);
		s->nb_ports = (uint16_t)(i + 1);
	}
	if (ret == 0) {
		assign_queues(s);
		choose_event_mode(s);
		ret = create_tx_buffers(s);
		if (ret != 0)
			snprintf(err, errlen, "out of memory for TX buffers");
	}
	if (ret == 0)
		ret = net_capture_open(s, err, errlen);
	if (ret == 0 && conf->udp_echo_port != 0)
		ret = droce_udp_register(s, conf->udp_echo_port,
					 DROCE_UDP_ON_CONTROL, net_udp_echo,
					 NULL);
	if (ret != 0) {
		if (err[0] == '\0')
			snprintf(err, errlen, "%s", rte_strerror(-ret));
		droce_stack_destroy(s);
		rte_errno = -ret;
		return NULL;
	}
	return s;
}

static unsigned int
run_hooks(struct droce_lcore_ctx *ctx)
{
	const struct droce_stack *s = ctx->stack;
	unsigned int total = 0;

	for (unsigned int h = 0; h < s->nb_hooks; h++)
		total += s->hook[h].fn(ctx, s->hook[h].arg);
	return total;
}

/* The end of a round, as droce_stack_quiesce() sees it: the lcore
 * publishes the quiesce token it reads now. A quiescer whose token it
 * read had unlinked before raising it, and the next round's loads come
 * after this load, so they cannot see what was unlinked. No locked
 * instruction: one here would wait for this round's stores to lines of
 * other cores (a memif ring, a peer's buffers) to complete, every round.
 */
static inline void
round_done(struct droce_lcore_ctx *ctx)
{
	uint64_t token = __atomic_load_n(&ctx->stack->quiesce_token, __ATOMIC_ACQUIRE);

	ctx->rounds++;
	__atomic_store_n(&ctx->quiesce_seen, token, __ATOMIC_RELEASE);
}

static inline void
round_begin(struct droce_lcore_ctx *ctx)
{
	net_tx_round_begin(ctx);
	/* A TSC read between rounds (ARP's, from the lcore's own thread) is
	 * not this round's.
	 */
	ctx->round_tsc_of = 0;
}

static unsigned int
worker_poll(struct droce_lcore_ctx *ctx)
{
	unsigned int total = 0;

	round_begin(ctx);
	for (uint16_t i = 0; i < ctx->nb_poll; i++) {
		const struct net_poll_queue *pq = &ctx->poll[i];
		struct rte_mbuf *pkts[NET_BURST];
		uint16_t n;

		n = rte_eth_rx_burst(pq->port->port_id, pq->queue, pkts,
				     NET_BURST);
		if (n == 0)
			continue;
		net_classify_burst(ctx, &pq->port->rxq[pq->queue], pq->port,
				   pkts, n);
		total += n;
	}
	total += run_hooks(ctx);
	net_tx_round_end(ctx);
	round_done(ctx);
	return total;
}

/* After the stop: no more packets are taken, but what the services hold
 * (frames whose placement runs, packets waiting behind a PSN gap) is
 * finished, for at most STOP_FINISH_MS.
 */
static void
worker_finish(struct droce_lcore_ctx *ctx)
{
	uint64_t until = rte_get_tsc_cycles() + rte_get_tsc_hz() * STOP_FINISH_MS / 1000;
	unsigned int busy;

	ctx->stopping = true;
	do {
		busy = run_hooks(ctx);
		net_tx_flush(ctx);
		round_done(ctx);
	} while (busy != 0 && rte_get_tsc_cycles() < until);
	ctx->stopping = false;
}

unsigned int
droce_worker_poll(struct droce_stack *s, unsigned int worker)
{
	return worker_poll(s->worker[worker]);
}

static void
rx_intr_ctl(struct droce_lcore_ctx *ctx, int op)
{
	for (uint16_t i = 0; i < ctx->nb_poll; i++) {
		const struct net_poll_queue *pq = &ctx->poll[i];
		int ret = rte_eth_dev_rx_intr_ctl_q(pq->port->port_id,
						    pq->queue,
						    RTE_EPOLL_PER_THREAD, op,
						    NULL);

		if (ret != 0)
			NET_LOG(WARNING, "port %u queue %u: RX interrupt %s: %s",
				pq->port->index, pq->queue,
				op == RTE_INTR_EVENT_ADD ? "add" : "remove",
				rte_strerror(-ret));
	}
}

/* Event mode with RX interrupts: arm them, poll once more to close the
 * window in which a packet arrived unannounced, then sleep.
 *
 * @return
 *   True when an interrupt (or that last poll) brought packets.
 */
static bool
worker_sleep(struct droce_lcore_ctx *ctx)
{
	struct rte_epoll_event events[DROCE_MAX_PORT_QUEUES];
	int woken = 1;

	for (uint16_t i = 0; i < ctx->nb_poll; i++)
		rte_eth_dev_rx_intr_enable(ctx->poll[i].port->port_id,
					   ctx->poll[i].queue);
	if (worker_poll(ctx) == 0) {
		net_tx_flush(ctx);      /* lazy frames too: nothing follows them */
		woken = rte_epoll_wait(RTE_EPOLL_PER_THREAD, events,
				       RTE_DIM(events), SLEEP_MS);
	}
	for (uint16_t i = 0; i < ctx->nb_poll; i++)
		rte_eth_dev_rx_intr_disable(ctx->poll[i].port->port_id,
					    ctx->poll[i].queue);
	return woken > 0;
}

static int
worker_main(void *arg)
{
	struct droce_lcore_ctx *ctx = arg;
	struct droce_stack *s = ctx->stack;
	bool interrupts = !s->conf.busy_poll && ctx->nb_poll != 0 &&
			  ctx->poll[0].port->rx_intr;
	uint64_t awake_tsc = rte_get_tsc_hz() * AWAKE_AFTER_INTERRUPT_US / 1000000;
	uint64_t awake_until = 0;
	uint32_t idle_polls = 0;

	if (interrupts)
		rx_intr_ctl(ctx, RTE_INTR_EVENT_ADD);
	__atomic_store_n(&ctx->in_loop, true, __ATOMIC_RELEASE);
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		if (worker_poll(ctx) != 0) {
			idle_polls = 0;
			continue;
		}
		if (!interrupts || ++idle_polls < IDLE_POLLS_BEFORE_SLEEP ||
		    rte_get_tsc_cycles() < awake_until)
			continue;
		if (worker_sleep(ctx))
			awake_until = rte_get_tsc_cycles() + awake_tsc;
		idle_polls = 0;
	}
	worker_finish(ctx);
	__atomic_store_n(&ctx->in_loop, false, __ATOMIC_RELEASE);
	if (interrupts)
		rx_intr_ctl(ctx, RTE_INTR_EVENT_DEL);
	return 0;
}

int
droce_worker_hook_register(struct droce_stack *s, droce_worker_hook_t fn,
			   void *arg)
{
	if (s->started)
		return -EBUSY;
	if (s->nb_hooks == NET_MAX_WORKER_HOOKS)
		return -ENOSPC;
	s->hook[s->nb_hooks].fn = fn;
	s->hook[s->nb_hooks].arg = arg;
	s->nb_hooks++;
	return 0;
}

/* A control hook, before the first of those that run last unless @p last. */
static int
control_hook_add(struct droce_stack *s, droce_control_hook_t fn, void *arg, bool last)
{
	unsigned int at = s->nb_control_hooks;

	if (s->started)
		return -EBUSY;
	if (s->nb_control_hooks == NET_MAX_CONTROL_HOOKS)
		return -ENOSPC;
	while (!last && at > 0 && s->control_hook[at - 1].last)
		at--;
	memmove(&s->control_hook[at + 1], &s->control_hook[at],
		sizeof(s->control_hook[0]) * (s->nb_control_hooks - at));
	s->control_hook[at].fn = fn;
	s->control_hook[at].arg = arg;
	s->control_hook[at].last = last;
	s->nb_control_hooks++;
	return 0;
}

int
droce_control_hook_register(struct droce_stack *s, droce_control_hook_t fn, void *arg)
{
	return control_hook_add(s, fn, arg, false);
}

int
droce_control_hook_register_last(struct droce_stack *s, droce_control_hook_t fn, void *arg)
{
	return control_hook_add(s, fn, arg, true);
}

/* Remove the first entry of @p hooks that calls @p fn with @p arg. */
#define HOOK_UNREGISTER(hooks, nb, fn_, arg_) do { \
	for (unsigned int i_ = 0; i_ < (nb); i_++) \
		if ((hooks)[i_].fn == (fn_) && (hooks)[i_].arg == (arg_)) { \
			memmove(&(hooks)[i_], &(hooks)[i_ + 1], \
				sizeof((hooks)[0]) * ((nb) - i_ - 1)); \
			(nb)--; \
			break; \
		} \
} while (0)

int
droce_worker_hook_unregister(struct droce_stack *s, droce_worker_hook_t fn, void *arg)
{
	if (s->started)
		return -EBUSY;
	HOOK_UNREGISTER(s->hook, s->nb_hooks, fn, arg);
	return 0;
}

int
droce_control_hook_unregister(struct droce_stack *s, droce_control_hook_t fn, void *arg)
{
	if (s->started)
		return -EBUSY;
	HOOK_UNREGISTER(s->control_hook, s->nb_control_hooks, fn, arg);
	return 0;
}

bool
droce_stack_started(const struct droce_stack *s)
{
	return s->started;
}

void
droce_control_wake(struct droce_stack *s)
{
	net_wake_control(s);
}

void
droce_stack_quiesce(struct droce_stack *s)
{
	/* A locked add: the caller's unlinking stores are seen by anyone
	 * who sees the new token.
	 */
	uint64_t token = __atomic_add_fetch(&s->quiesce_token, 1, __ATOMIC_SEQ_CST);

	/* A control lcore asleep waits for an event or its next timer. */
	if (__atomic_load_n(&s->control->in_loop, __ATOMIC_ACQUIRE))
		net_wake_control(s);
	for (uint32_t i = 0; i <= s->layout.nb_workers; i++) {
		struct droce_lcore_ctx *w = i < s->layout.nb_workers ? s->worker[i] : s->control;

		/* Called on a worker (a stream closed from its own hook or
		 * handler): its round is this call, over when it returns.
		 */
		if (w->lcore_id == rte_lcore_id())
			continue;
		/* A worker asleep in event mode finishes its round too: its
		 * sleep is bounded by SLEEP_MS.
		 */
		while (__atomic_load_n(&w->in_loop, __ATOMIC_ACQUIRE) &&
		       __atomic_load_n(&w->quiesce_seen, __ATOMIC_ACQUIRE) < token)
			rte_pause();
	}
}

int
droce_lcore_worker_index(const struct droce_lcore_ctx *ctx)
{
	return ctx->worker_index;
}

bool
droce_lcore_stopping(const struct droce_lcore_ctx *ctx)
{
	return ctx->stopping;
}

unsigned int
droce_stack_nb_workers(const struct droce_stack *s)
{
	return s->layout.nb_workers;
}

bool
droce_stack_busy_poll(const struct droce_stack *s)
{
	return s->conf.busy_poll;
}

struct droce_stack *
droce_lcore_stack(struct droce_lcore_ctx *ctx)
{
	return ctx->stack;
}

rte_be32_t
droce_port_addr(const struct droce_stack *s, uint16_t port)
{
	return s->port[port]->addr;
}

uint16_t
droce_port_mtu(const struct droce_stack *s, uint16_t port)
{
	return s->port[port]->mtu;
}

void
droce_tx(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m)
{
	net_tx(ctx, ctx->stack->port[port], m);
}

void
droce_tx_flush(struct droce_lcore_ctx *ctx)
{
	net_tx_flush(ctx);
}

void
droce_tx_reclaim(struct droce_lcore_ctx *ctx)
{
	const struct droce_stack *s = ctx->stack;

	net_tx_flush(ctx);
	/* Drivers without it (-ENOTSUP) free in their TX burst anyway. */
	for (uint16_t i = 0; i < s->nb_ports; i++)
		rte_eth_tx_done_cleanup(s->port[i]->port_id, ctx->txq, 0);
}

static void
stats_timer_cb(struct rte_timer *t, void *arg)
{
	RTE_SET_USED(t);
	droce_stack_print_stats_line(arg, stdout);
}

int
droce_stack_start(struct droce_stack *s, bool launch)
{
	int ret;

	for (uint16_t i = 0; i < s->nb_ports; i++) {
		ret = net_port_start(s->port[i]);
		if (ret != 0)
			return ret;
	}
	/* A port may have found its interrupts unusable only now. */
	ret = choose_event_mode(s);
	if (ret != 0)
		return ret;
	s->started = true;
	for (uint16_t i = 0; i < s->nb_ports; i++)
		net_arp_announce(s->control, s->port[i]);
	net_tx_flush(s->control);

	s->stats_prev_tsc = rte_get_timer_cycles();
	if (s->conf.stats_period != 0)
		rte_timer_reset_sync(&s->stats_timer,
				     s->conf.stats_period * rte_get_timer_hz(),
				     PERIODICAL, rte_lcore_id(), stats_timer_cb,
				     s);
	if (!launch)
		return 0;
	if (s->conf.workers_inline) {
		NET_LOG(NOTICE, "worker.inline: the control lcore polls for the %u workers",
			s->layout.nb_workers);
		return 0;
	}
	for (uint32_t i = 0; i < s->layout.nb_workers; i++) {
		ret = rte_eal_remote_launch(worker_main, s->worker[i],
					    s->worker[i]->lcore_id);
		if (ret != 0) {
			NET_LOG(ERR, "cannot launch worker lcore %u: %s",
				s->worker[i]->lcore_id, rte_strerror(-ret));
			droce_stack_request_stop(s);
			rte_eal_mp_wait_lcore();
			return ret;
		}
	}
	s->launched = true;
	return 0;
}

static unsigned int
run_control_hooks(struct droce_stack *s)
{
	unsigned int total = 0;

	for (unsigned int h = 0; h < s->nb_control_hooks; h++)
		total += s->control_hook[h].fn(s->control, s->control_hook[h].arg);
	return total;
}

unsigned int
droce_control_poll(struct droce_stack *s)
{
	struct droce_lcore_ctx *ctx = s->control;
	unsigned int total = 0;

	round_begin(ctx);
	for (uint32_t i = 0; i < s->layout.nb_workers; i++) {
		struct rte_mbuf *pkts[NET_BURST];
		unsigned int n;

		n = rte_ring_sc_dequeue_burst(s->worker[i]->to_control,
					      (void **)pkts, NET_BURST, NULL);
		if (n == 0)
			continue;
		net_control_input(ctx, pkts, (uint16_t)n);
		total += n;
	}
	total += net_capture_drain(s);
	rte_timer_manage();
	total += run_control_hooks(s);
	net_tx_round_end(ctx);
	round_done(ctx);
	return total;
}

int
droce_stack_poll(struct droce_stack *s)
{
	struct droce_lcore_ctx *ctx = s->control;
	unsigned int total = 0;

	if (rte_lcore_id() != ctx->lcore_id ||
	    __atomic_load_n(&ctx->in_loop, __ATOMIC_ACQUIRE))
		return -EBUSY;
	/* In the loop for droce_stack_quiesce() while the round runs: a
	 * thread that unlinks something waits for its end.
	 */
	__atomic_store_n(&ctx->in_loop, true, __ATOMIC_SEQ_CST);
	if (s->conf.workers_inline && !s->launched)
		for (uint32_t i = 0; i < s->layout.nb_workers; i++)
			total += worker_poll(s->worker[i]);
	total += droce_control_poll(s);
	/* The application's thread may do other work now, for longer than a
	 * peer waits for an ACK: nothing stays behind for the next round.
	 */
	net_tx_round_begin(ctx);
	__atomic_store_n(&ctx->in_loop, false, __ATOMIC_RELEASE);
	return (int)RTE_MIN(total, (unsigned int)INT_MAX);
}

struct droce_lcore_ctx *
droce_control_ctx(struct droce_stack *s)
{
	return s->control;
}

unsigned int
droce_control_lcore(const struct droce_stack *s)
{
	return s->layout.control_lcore;
}

static bool
rings_empty(const struct droce_stack *s)
{
	for (uint32_t i = 0; i < s->layout.nb_workers; i++)
		if (!rte_ring_empty(s->worker[i]->to_control))
			return false;
	return true;
}

/* Event mode, nothing to do: sleep on the doorbell until a worker has
 * packets for us or the next timer is due. Saying "asleep" before looking
 * at the rings, with the worker's fence between its enqueue and its look
 * at the flag, means no wake-up is lost.
 */
static void
control_sleep(struct droce_stack *s)
{
	struct rte_epoll_event ev;
	int64_t ticks = rte_timer_next_ticks();
	int timeout_ms = SLEEP_MS;
	uint64_t count;

	if (ticks == 0)
		return;
	if (ticks > 0)
		timeout_ms = (int)RTE_MIN((uint64_t)SLEEP_MS,
					  (uint64_t)ticks * 1000 / rte_get_timer_hz() + 1);
	atomic_store(&s->control_asleep, true);
	/* The hooks look at their queues once more after "asleep", as the
	 * rings are, so that work queued by another thread just before is
	 * not left until the next timer.
	 */
	if (rings_empty(s) && run_control_hooks(s) == 0 && !atomic_load(&s->stop)) {
		net_tx_flush(s->control);
		rte_epoll_wait(RTE_EPOLL_PER_THREAD, &ev, 1, timeout_ms);
	}
	net_tx_flush(s->control);
	atomic_store(&s->control_asleep, false);
	if (read(s->doorbell_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		NET_LOG(DEBUG, "doorbell read: %s", strerror(errno));
}

void
droce_stack_run(struct droce_stack *s)
{
	bool event_mode = s->doorbell_fd >= 0;
	bool workers_here = s->conf.workers_inline && !s->launched;

	if (event_mode) {
		s->doorbell_ev.epdata.event = EPOLLIN;
		s->doorbell_ev.epdata.data = s;
		if (rte_epoll_ctl(RTE_EPOLL_PER_THREAD, EPOLL_CTL_ADD,
				  s->doorbell_fd, &s->doorbell_ev) != 0) {
			NET_LOG(WARNING, "control lcore: no doorbell (epoll: %s); it polls",
				strerror(errno));
			event_mode = false;
		}
	}
	__atomic_store_n(&s->control->in_loop, true, __ATOMIC_RELEASE);
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		/* Not launched (worker.inline, which busy-polls): their rounds
		 * run here, each before a control round, so that
		 * droce_stack_quiesce()'s wait for the control round covers them.
		 */
		if (workers_here)
			for (uint32_t i = 0; i < s->layout.nb_workers; i++)
				worker_poll(s->worker[i]);
		if (droce_control_poll(s) == 0 && event_mode)
			control_sleep(s);
	}
	if (workers_here)
		for (uint32_t i = 0; i < s->layout.nb_workers; i++)
			worker_finish(s->worker[i]);
	__atomic_store_n(&s->control->in_loop, false, __ATOMIC_RELEASE);
	if (event_mode)
		rte_epoll_ctl(RTE_EPOLL_PER_THREAD, EPOLL_CTL_DEL, s->doorbell_fd,
			      &s->doorbell_ev);
}

void
droce_stack_request_stop(struct droce_stack *s)
{
	atomic_store(&s->stop, true);
	net_wake_control(s); /* write(2) is async-signal-safe */
}

void
droce_stack_stop_polling(struct droce_stack *s)
{
	droce_stack_request_stop(s);
	if (s->launched) {
		for (uint32_t i = 0; i < s->layout.nb_workers; i++)
			rte_eal_wait_lcore(s->worker[i]->lcore_id);
		s->launched = false;
	}
	rte_timer_stop_sync(&s->stats_timer);
	/* What the workers left for the control lcore is handled, not lost,
	 * and the lcores' lazy frames leave too (no worker polls now).
	 */
	droce_control_poll(s);
	net_tx_flush(s->control);
	for (uint32_t i = 0; i < s->layout.nb_workers; i++)
		net_tx_flush(s->worker[i]);
}

void
droce_stack_stop(struct droce_stack *s)
{
	droce_stack_stop_polling(s);
	for (uint16_t i = 0; i < s->nb_ports; i++)
		net_port_stop(s->port[i]);
	s->started = false;
}

static void
ctx_free(struct droce_lcore_ctx *ctx)
{
	if (ctx == NULL)
		return;
	if (ctx->to_control != NULL) {
		struct rte_mbuf *m;

		while (rte_ring_sc_dequeue(ctx->to_control, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(ctx->to_control);
	}
	net_tx_free(ctx);
	rte_free(ctx);
}

void
droce_stack_destroy(struct droce_stack *s)
{
	if (s == NULL)
		return;
	net_telemetry_forget(s);
	if (s->started)
		droce_stack_stop(s);
	net_capture_close(s);
	/* Rings and TX buffers hold mbufs of the ports' pools: free them first. */
	for (uint32_t c = 0; c < net_nb_ctx(s); c++)
		ctx_free(net_ctx(s, c));
	for (uint16_t i = 0; i < s->nb_ports; i++)
		net_port_free(s->port[i]);
	if (s->doorbell_fd >= 0)
		close(s->doorbell_fd);
	rte_free(s);
}

struct rte_mempool *
droce_port_pool(const struct droce_stack *s, uint16_t port)
{
	return s->port[port]->pool;
}

uint16_t
droce_stack_nb_ports(const struct droce_stack *s)
{
	return s->nb_ports;
}

uint16_t
droce_port_ethdev(const struct droce_stack *s, uint16_t port)
{
	return s->port[port]->port_id;
}

void
droce_port_mac(const struct droce_stack *s, uint16_t port,
	       struct rte_ether_addr *mac)
{
	*mac = s->port[port]->mac;
}
