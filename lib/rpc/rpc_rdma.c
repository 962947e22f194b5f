/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * RPC over droce's RC. An hcom4db application knows nothing of DPDK, so
 * the first RDMA server or client starts the process's droce stack on a
 * thread of the library's own, which becomes the EAL's main lcore and
 * runs the control loop (lib/rc's QPs and lib/cm live there); the stack
 * then stays for the life of the process, as an EAL cannot start twice.
 * An application that started the EAL itself keeps its lcores: the
 * library's thread then registers as an lcore of that EAL and polls the
 * stack's workers too (worker.inline).
 *
 * The control lcore also runs the RPC workers of RDMA servers and clients
 * (hosted, see rpc_engine.c) and makes and destroys lib/rc's objects,
 * which take one thread at a time: another thread hands that work over
 * and waits (host_call()), holding no lock the control lcore might want.
 *
 * A session's connection (a link) is a QP with a CQ for each side: its
 * receives are lib/rc's CQ reactor's receive socket; its sends come from
 * a registered pool of chunks here, on the send CQ that the one-sided
 * operations (rendezvous READs, OckRpcRead/Write) complete on too. The
 * session's frames are one byte stream cut into SENDs of up to a chunk;
 * the receiver appends each SEND to the session's buffer and cuts frames
 * there, as over TCP. The RPC worker that owns the session watches the
 * CQs' eventfds in its epoll set with its other sessions, in its rounds
 * on the control lcore.
 */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "droce_cm.h"
#include "droce_net.h"
#include "droce_rc.h"
#include "droce_rpc.h"
#include "rpc_rdma.h"
#include "rpc_tls.h"

/* Bytes one SEND carries at most: a frame longer goes in several. */
#define CHUNK 8192
#define SEND_BUFFERS 16
/* READs in flight each way that a connection offers. */
#define RD_ATOMIC 8
/* One-sided operations in flight on a session. The requester sends
 * nothing while a READ's response PSNs fill its window (rxe's does the
 * same), so a SEND posted behind a READ waits for it: two at a time, the
 * second asked for while the first comes in, short (rendezvous reads in
 * pieces), and the SENDs a completion frees posted before the next one
 * keep replies and heartbeats moving.
 */
#define OPS_IN_FLIGHT 2
#define SEND_DEPTH (SEND_BUFFERS + OPS_IN_FLIGHT)
/* More receives than the peer has sends in flight: RNR waits are rare. */
#define RECV_BUFFERS 32
#define RC_RETRIES 7
/* The QPs' local ACK timeout: 4.096 us * 2^14, 67 ms (ibv_rc_pingpong's):
 * a lost packet at the end of a burst costs that, not rdma_cm's second,
 * which would stall a session past its heartbeat on a lossy link.
 */
#define ACK_TIMEOUT 14
#define RNR_RETRY_FOR_EVER 7
/* A connect's CM tries: 4.096 us * 2^18, about a second each, 9 in all,
 * within the opening's RPC_OPENING_TIMEOUT_MS. rdma_cm's 4.3 s tries
 * leave room for two, and on a lossy link both can be lost.
 */
#define CM_RESPONSE_TIMEOUT 18
#define CM_RETRIES 8
/* A socket's flushed completions reach its CQ on the control lcore. */
#define TEARDOWN_WAIT_MS 1000
/* How long a session's last SENDs (a refusing WELCOME, a BYE) may wait
 * for their ACK before the DREQ stops the QP: a few RC retries.
 */
#define LINGER_MS 1000

/* ---- the process's stack ------------------------------------------------------------ */

struct host_port {
	struct droce_rc_device *dev;
	struct droce_pd *pd;
	struct droce_cm *cm;
};

enum host_state { HOST_DOWN, HOST_STARTING, HOST_UP, HOST_FAILED, HOST_STOPPING, HOST_STOPPED };

/* RPC workers the control lcore runs; more servers' than a process has. */
#define HOSTED_MAX 256
#define HOST_CALLS 1024

static struct {
	pthread_mutex_t lock;           /* its start and stop */
	pthread_cond_t started;
	enum host_state state;
	struct rte_ring *calls;         /* struct host_call, for the control lcore */
	atomic_bool looping;            /* the control loop runs them */
	struct rpc_worker *_Atomic hosted[HOSTED_MAX];
	/* Links whose DREQ waits for their last SENDs' ACK (control lcore only). */
	TAILQ_HEAD(, rpc_rdma_link) lingering;
	/* Regions to deregister once the port lets go of them (control lcore only). */
	TAILQ_HEAD(, parked_mr) parked;
	uint64_t parked_next_try;
	atomic_uint nb_hosted_slots;    /* slots ever used: the round's bound */
	bool app_eal;                   /* the application started the EAL */
	bool lent;                      /* the application's stack (droce_rpc_attach()) */
	pthread_t thread;
	struct droce_eal_start eal;
	struct droce_conf conf;
	struct droce_stack *stack;
	struct host_port port[DROCE_MAX_PORTS];
	char err[DROCE_ERR_LEN];
} host = { .lock = PTHREAD_MUTEX_INITIALIZER, .started = PTHREAD_COND_INITIALIZER,
	    .lingering = TAILQ_HEAD_INITIALIZER(host.lingering),
	    .parked = TAILQ_HEAD_INITIALIZER(host.parked) };

static unsigned int lingering_round(void);
static unsigned int parked_round(void);
static void lingering_end(const struct rpc_rdma_listener *only);

#define ENV_CONF "DROCE_HCOM_CONF"
#define ENV_EAL "DROCE_HCOM_EAL"
#define LINK_WAIT_MS 5000
/* How long the exit waits for the stack to stop. */
#define STOP_WAIT_S 2
#define EAL_ARGS_MAX 64

/* EAL arguments from the environment, split at blanks; argv[0] ours. */
static int
eal_args(char *buf, size_t len, char **argv)
{
	const char *env = getenv(ENV_EAL);
	int argc = 0;

	argv[argc++] = (char *)"droce-hcom";
	/* An application's log shows droce's notices and worse unless the
	 * user's own --log-level (after this one) says more.
	 */
	argv[argc++] = (char *)"--log-level=droce.*:notice";
	if (env == NULL)
		snprintf(buf, len, "--file-prefix droce-hcom-%d", (int)getpid());
	else if ((size_t)snprintf(buf, len, "%s", env) >= len)
		return -1;
	for (char *save = NULL, *tok = strtok_r(buf, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc == EAL_ARGS_MAX - 1)
			return -1;
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	return argc;
}

/* lib/rc runs one RC device per stack: RPC over RDMA uses the first
 * port; the others carry what else the stack does.
 */
#define RDMA_PORTS 1

static int
host_ports_open(void)
{
	if (host.conf.nb_ports > RDMA_PORTS)
		RPC_LOG(WARNING, "%u droce ports configured: RPC over RDMA uses port 0 (%s) alone",
			host.conf.nb_ports, host.conf.port[0].device);
	for (uint16_t p = 0; p < RDMA_PORTS; p++) {
		struct host_port *hp = &host.port[p];

		hp->dev = droce_rc_open(host.stack, p, host.err, sizeof(host.err));
		if (hp->dev == NULL)
			return -1;
		hp->pd = droce_alloc_pd(hp->dev);
		if (hp->pd == NULL) {
			snprintf(host.err, sizeof(host.err), "port %u: no protection domain: %s", p,
				 rte_strerror(rte_errno));
			return -1;
		}
		hp->cm = droce_cm_open(host.stack, p, host.err, sizeof(host.err));
		if (hp->cm == NULL)
			return -1;
	}
	return 0;
}

/* ---- the control lcore's work for the library ---------------------------------------- */

struct host_call {
	void (*fn)(void *arg);
	void *arg;
	atomic_int done;
};

static bool
on_control_lcore(void)
{
	return rte_lcore_id() == droce_control_lcore(host.stack);
}

static unsigned int
run_host_calls(void)
{
	struct host_call *calls[32];
	unsigned int n = rte_ring_sc_dequeue_burst(host.calls, (void **)calls, RTE_DIM(calls),
						   NULL);

	for (unsigned int i = 0; i < n; i++) {
		calls[i]->fn(calls[i]->arg);
		atomic_store_explicit(&calls[i]->done, 1, memory_order_release);
		rpc_wake_state(&calls[i]->done);
	}
	return n;
}

/* @p fn (@p arg) on the control lcore; returns when it returned. */
static void
host_call(void (*fn)(void *arg), void *arg)
{
	struct host_call c = { .fn = fn, .arg = arg };

	/* Here, or with the loop gone (the process exits): no one else runs
	 * lib/rc's calls.
	 */
	if (!atomic_load(&host.looping) || on_control_lcore()) {
		fn(arg);
		return;
	}
	atomic_init(&c.done, 0);
	while (rte_ring_mp_enqueue(host.calls, &c) != 0)
		sched_yield();
	droce_control_wake(host.stack);
	rpc_wait_state(&c.done, 1u << 1, 0);
}

/* The control hook: the calls handed over, then the hosted workers' rounds. */
static unsigned int
host_round(struct droce_lcore_ctx *ctx, void *arg)
{
	unsigned int slots = atomic_load_explicit(&host.nb_hosted_slots, memory_order_acquire);
	unsigned int work = run_host_calls() + lingering_round() + parked_round();

	(void)ctx;
	(void)arg;
	for (unsigned int i = 0; i < slots; i++) {
		struct rpc_worker *w = atomic_load_explicit(&host.hosted[i], memory_order_acquire);

		if (w != NULL)
			work += rpc_worker_hosted_round(w);
	}
	return work;
}

int
rpc_rdma_host(struct rpc_worker *w)
{
	w->host_busy_poll = host.stack != NULL && droce_stack_busy_poll(host.stack);
	for (unsigned int i = 0; i < HOSTED_MAX; i++) {
		struct rpc_worker *none = NULL;

		if (!atomic_compare_exchange_strong(&host.hosted[i], &none, w))
			continue;
		/* The slot filled before the bound that shows it. */
		for (unsigned int n = atomic_load(&host.nb_hosted_slots);
		     n <= i && !atomic_compare_exchange_weak(&host.nb_hosted_slots, &n, i + 1);)
			;
		return 0;
	}
	RPC_LOG(ERR, "the control lcore runs %u RPC workers of RDMA servers and clients already, the most it takes",
		HOSTED_MAX);
	return -ENOSPC;
}

void
rpc_rdma_unhost(struct rpc_worker *w)
{
	bool found = false;

	for (unsigned int i = 0; i < HOSTED_MAX && !found; i++) {
		struct rpc_worker *mine = w;

		found = atomic_compare_exchange_strong(&host.hosted[i], &mine, NULL);
	}
	if (!found)
		return;
	/* Its round, if one runs, ends before this returns; on the control
	 * lcore none does (this is another's round, or no round).
	 */
	if (atomic_load(&host.looping) && !on_control_lcore())
		droce_stack_quiesce(host.stack);
	rte_timer_stop_sync(&w->scan_timer);
}

void
rpc_rdma_wake(void)
{
	droce_control_wake(host.stack);
}

bool
rpc_rdma_drive(void)
{
	/* lent: set before any session, by droce_rpc_attach(); looping:
	 * until droce_rpc_detach(), after which the stack may be gone.
	 */
	return host.lent && atomic_load_explicit(&host.looping, memory_order_acquire) &&
	       droce_stack_poll(host.stack) >= 0;
}

void
rpc_rdma_pause(unsigned int us)
{
	if (!rpc_rdma_drive())
		usleep(us);
}

/* Lib/rc and lib/cm on the stack's port, the ring of calls for its
 * control lcore and the hook that runs them: 0, or -1 with host.err set.
 */
static int
host_hook_up(void)
{
	int ret;

	if (host_ports_open() != 0)
		return -1;
	host.calls = rte_ring_create("hcom_host_calls", HOST_CALLS, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (host.calls == NULL) {
		snprintf(host.err, sizeof(host.err), "no ring for the control lcore's calls: %s",
			 rte_strerror(rte_errno));
		return -1;
	}
	/* After lib/rc's and lib/cm's: a round's completions reach the
	 * workers in the same round.
	 */
	ret = droce_control_hook_register(host.stack, host_round, NULL);
	if (ret != 0) {
		snprintf(host.err, sizeof(host.err), "no control hook for the RPC workers: %s",
			 rte_strerror(-ret));
		return -1;
	}
	return 0;
}

/* The EAL from DROCE_HCOM_EAL, this thread its main lcore: HOST_UP,
 * HOST_DOWN (bad arguments) or HOST_FAILED, with host.err set.
 */
static enum host_state
eal_start_here(struct droce_lcore_layout *layout)
{
	static char args[4096];
	static char *argv[EAL_ARGS_MAX];
	int argc = eal_args(args, sizeof(args), argv);

	if (argc < 0) {
		snprintf(host.err, sizeof(host.err), "%s: longer than %zu bytes or %d arguments",
			 ENV_EAL, sizeof(args) - 1, EAL_ARGS_MAX - 2);
		return HOST_DOWN;
	}
	/* From here on a failure is for good: an EAL does not start twice. */
	if (droce_eal_start(&host.eal, &host.conf, argc, argv, host.err, sizeof(host.err)) != 0 ||
	    droce_lcores_layout(&host.conf, host.eal.lcore_option, layout, host.err,
				sizeof(host.err)) != 0)
		return HOST_FAILED;
	return HOST_UP;
}

/* The application's EAL: this thread registered in it, the workers polled
 * here. HOST_UP, HOST_DOWN (the configuration cannot work so) or
 * HOST_FAILED, with host.err set.
 */
static enum host_state
eal_join(struct droce_lcore_layout *layout)
{
	if (getenv(ENV_EAL) != NULL)
		RPC_LOG(WARNING, "%s is ignored: the application started the EAL", ENV_EAL);
	if (!host.conf.workers_inline) {
		if (!host.conf.busy_poll) {
			snprintf(host.err, sizeof(host.err),
				 "the application started the EAL, so the library's one thread polls droce's workers (worker.inline), which needs worker.poll.enable = yes (%s)",
				 droce_conf_origin(&host.conf, "worker.poll.enable"));
			return HOST_DOWN;
		}
		host.conf.workers_inline = true;
	}
	if (host.conf.control_cpu >= 0) {
		rte_cpuset_t cpus;

		CPU_ZERO(&cpus);
		CPU_SET(host.conf.control_cpu, &cpus);
		if (rte_thread_set_affinity(&cpus) != 0) {
			snprintf(host.err, sizeof(host.err), "control.cpu = %d (%s): cannot run there",
				 host.conf.control_cpu, droce_conf_origin(&host.conf, "control.cpu"));
			return HOST_DOWN;
		}
	}
	if (rte_thread_register() != 0) {
		snprintf(host.err, sizeof(host.err),
			 "the application started the EAL, and it gave the library's thread no lcore id: %s",
			 rte_strerror(rte_errno));
		return HOST_FAILED;
	}
	RPC_LOG(NOTICE, "the application started the EAL: the library's stack runs on lcore %u, which polls the %u workers",
		rte_lcore_id(), host.conf.workers.nb_workers);
	if (droce_lcores_layout_here(&host.conf, layout, host.err, sizeof(host.err)) != 0)
		return HOST_FAILED;
	return HOST_UP;
}

/* HOST_UP; HOST_DOWN when the configuration is missing or wrong (a later
 * call may try again); HOST_FAILED.
 */
static enum host_state
host_start(void)
{
	struct droce_lcore_layout layout;
	const char *file = getenv(ENV_CONF);
	enum host_state st;
	int ret;

	if (file == NULL) {
		snprintf(host.err, sizeof(host.err),
			 "RDMA needs a droce port: set %s to a droce configuration file with port.0.device and port.0.address (and %s to EAL arguments); see the README's \"Using droce as hcom4db\"",
			 ENV_CONF, ENV_EAL);
		return HOST_DOWN;
	}
	if (droce_conf_load(&host.conf, file, NULL, 0, host.err, sizeof(host.err)) != 0)
		return HOST_DOWN;
	/* The stack's periodic line would land in the application's log. */
	if (strcmp(droce_conf_origin(&host.conf, "stats.period"), "default") == 0)
		host.conf.stats_period = 0;
	if (host.conf.nb_ports == 0) {
		snprintf(host.err, sizeof(host.err), "%s (%s): no port; give port.0.device and port.0.address",
			 file, ENV_CONF);
		return HOST_DOWN;
	}
	/* An EAL counts its lcores from its start on. */
	host.app_eal = rte_lcore_count() != 0;
	st = host.app_eal ? eal_join(&layout) : eal_start_here(&layout);
	if (st != HOST_UP)
		return st;
	host.stack = droce_stack_create(&host.conf, &layout, host.err, sizeof(host.err));
	if (host.stack == NULL || host_hook_up() != 0)
		return HOST_FAILED;
	ret = droce_stack_start(host.stack, true);
	if (ret != 0) {
		snprintf(host.err, sizeof(host.err), "the stack did not start: %s",
			 rte_strerror(-ret));
		return HOST_FAILED;
	}
	return HOST_UP;
}

static void *
host_main(void *arg)
{
	enum host_state st = host_start();

	(void)arg;
	/* Before anyone hears it is up: from then on calls wait for the loop. */
	atomic_store(&host.looping, st == HOST_UP);
	pthread_mutex_lock(&host.lock);
	host.state = st;
	pthread_cond_broadcast(&host.started);
	pthread_mutex_unlock(&host.lock);
	if (st != HOST_UP) {
		pthread_detach(pthread_self());
		return NULL;
	}
	droce_stack_run(host.stack);
	/* On the control lcore, as the stop must be. */
	droce_stack_stop(host.stack);
	lingering_end(NULL);
	/* Callers from now on run their calls themselves; these came before. */
	atomic_store(&host.looping, false);
	run_host_calls();
	if (host.app_eal)
		rte_thread_unregister();
	pthread_mutex_lock(&host.lock);
	host.state = HOST_STOPPED;
	pthread_cond_broadcast(&host.started);
	pthread_mutex_unlock(&host.lock);
	return NULL;
}

/* At exit (or when the library is unloaded): the control loop and the
 * workers stop before the process's destructors, DPDK's among them, run
 * under their feet (and, registered with atexit() too, before OpenSSL's
 * exit handler). The stack is not freed: sessions an application left
 * open may still name its objects.
 */
static void __attribute__((destructor))
host_stop(void)
{
	struct timespec until;
	bool stopped;

	pthread_mutex_lock(&host.lock);
	/* A lent stack is its owner's to stop. */
	if (host.state != HOST_UP || host.lent) {
		pthread_mutex_unlock(&host.lock);
		return;
	}
	host.state = HOST_STOPPING;
	droce_stack_request_stop(host.stack);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STOP_WAIT_S;
	while (host.state == HOST_STOPPING &&
	       pthread_cond_timedwait(&host.started, &host.lock, &until) == 0)
		;
	stopped = host.state == HOST_STOPPED;
	pthread_mutex_unlock(&host.lock);
	/* Its end, thread-local destructors (OpenSSL's) included, before
	 * the process's; one that did not stop in time is left running.
	 */
	if (stopped)
		pthread_join(host.thread, NULL);
	else
		pthread_detach(host.thread);
}

int
droce_rpc_attach(struct droce_stack *stack, const struct droce_conf *conf, char *err,
		 size_t errlen)
{
	int ret = 0;

	pthread_mutex_lock(&host.lock);
	if (host.state != HOST_DOWN) {
		snprintf(err, errlen, "RPC over RDMA runs on a droce stack already");
		ret = -EBUSY;
		goto out;
	}
	host.conf = *conf;
	host.stack = stack;
	host.lent = true;
	rpc_tls_library_init();
	if (host_hook_up() != 0) {
		snprintf(err, errlen, "%s", host.err);
		host.state = HOST_FAILED;
		ret = -EINVAL;
		goto out;
	}
	if (rpc_stats_register(stack) != 0)
		RPC_LOG(WARNING, "the stack's stats line and JSON will not show RPC's counters");
	/* Calls from other threads wait for the control loop from now on;
	 * its own thread runs them at once.
	 */
	atomic_store(&host.looping, true);
	host.state = HOST_UP;
out:
	pthread_mutex_unlock(&host.lock);
	return ret;
}

void
droce_rpc_detach(void)
{
	pthread_mutex_lock(&host.lock);
	if (host.lent && host.state == HOST_UP) {
		lingering_end(NULL);
		atomic_store(&host.looping, false);
		run_host_calls();
		host.state = HOST_STOPPED;
	}
	pthread_mutex_unlock(&host.lock);
}

bool
rpc_rdma_start(void)
{
	char err[DROCE_ERR_LEN];
	enum host_state st;

	pthread_mutex_lock(&host.lock);
	if (host.state == HOST_DOWN) {
		host.state = HOST_STARTING;
		/* At exit the stack stops before OpenSSL's exit handler (which
		 * an earlier registration runs later) takes the thread-local
		 * state the control thread's end gives back.
		 */
		rpc_tls_library_init();
		atexit(host_stop);
		if (pthread_create(&host.thread, NULL, host_main, NULL) != 0) {
			snprintf(host.err, sizeof(host.err), "no thread for the stack");
			host.state = HOST_DOWN;
		}
	}
	while (host.state == HOST_STARTING)
		pthread_cond_wait(&host.started, &host.lock);
	st = host.state;
	if (st == HOST_DOWN)
		snprintf(err, sizeof(err), "%s", host.err);
	pthread_mutex_unlock(&host.lock);
	if (st != HOST_UP)
		RPC_LOG(ERR, "RDMA transport: %s", st == HOST_DOWN ? err : host.err);
	return st == HOST_UP;
}

static bool
in_subnet(const struct droce_port_conf *pc, uint32_t ip)
{
	uint32_t mask = pc->prefix_len == 0 ? 0 : htonl(~0u << (32 - pc->prefix_len));

	return ((pc->addr ^ ip) & mask) == 0;
}

/* The port with address @p ip (INADDR_ANY: the first), or -1. */
static int
port_of_address(uint32_t ip)
{
	for (uint16_t p = 0; p < RDMA_PORTS; p++)
		if (ip == INADDR_ANY || host.conf.port[p].addr == ip)
			return p;
	return -1;
}

/* The port that reaches @p ip: on its subnet and not that address, else
 * with a gateway.
 */
static int
port_towards(uint32_t ip)
{
	for (uint16_t p = 0; p < RDMA_PORTS; p++)
		if (in_subnet(&host.conf.port[p], ip) && host.conf.port[p].addr != ip)
			return p;
	for (uint16_t p = 0; p < RDMA_PORTS; p++)
		if (host.conf.port[p].gateway != 0)
			return p;
	return -1;
}

/* A connect right after the start would find no link (memif's takes a
 * moment); a port still down after the wait is logged and tried anyway.
 */
static void
wait_link(uint16_t port)
{
	uint64_t until = rpc_now_ns() + LINK_WAIT_MS * 1000000ull;
	struct rte_eth_link link = { 0 };

	while (rte_eth_link_get_nowait(droce_port_ethdev(host.stack, port), &link) == 0 &&
	       link.link_status != RTE_ETH_LINK_UP && rpc_now_ns() < until)
		usleep(1000);
	if (link.link_status != RTE_ETH_LINK_UP)
		RPC_LOG(WARNING, "droce port %u (%s): link still down after %u ms", port,
			host.conf.port[port].device, LINK_WAIT_MS);
}

/* ---- links -------------------------------------------------------------------------- */

struct rpc_rdma_link {
	struct rpc_watch send_watch, recv_watch, cm_watch;
	/* Its CQs signal the worker's ready list, not their eventfds. */
	bool notified;
	uint16_t port;
	struct rpc_session *s;          /* once it has one */
	struct rpc_rdma_listener *listener; /* accepted by it */
	TAILQ_ENTRY(rpc_rdma_link) listener_link;
	TAILQ_ENTRY(rpc_rdma_link) linger_link; /* in host.lingering */
	uint64_t linger_until_ns;
	bool lingering, released;
	struct droce_cm_channel *ch;    /* a client's own */
	struct droce_cm_id *id;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp;
	struct droce_cq_reactor *reactor;
	struct droce_rc_recv_socket *rx;
	/* The send pool: chunks free, and sends and operations on the QP. */
	uint8_t *pool;
	struct droce_mr *pool_mr;
	uint16_t free_chunk[SEND_BUFFERS];
	unsigned int nb_free, nb_ops, max_ops;
	TAILQ_HEAD(, rpc_rdma_op) waiting;      /* operations without a slot yet */
	bool reaping;                   /* operations wait until the SENDs went */
	bool established, disconnected, failed;
	/* What came before there was a session (after a client's WELCOME). */
	uint8_t *early;
	size_t early_len, early_cap;
	uint8_t *stage;                 /* small frames packed into one SEND */
};

struct rpc_rdma_listener {
	struct rpc_server *srv;
	uint16_t port;                  /* droce's */
	struct droce_cm_channel *ch;
	struct droce_cm_id *id;
	pthread_mutex_t lock;           /* links: the CM's worker and the sessions' */
	TAILQ_HEAD(, rpc_rdma_link) links;
};

/* A @p what completed in error: the link is done, and its session ends.
 * A flush is the QP put in ERR (the peer's DREQ, say): worth a line, not
 * an alarm.
 */
static void
link_broken(struct rpc_rdma_link *l, const char *what, enum droce_wc_status status)
{
	struct rpc_session *s = l->s;

	l->failed = true;
	if (s == NULL || s->state == SESSION_ENDED)
		return;
	if (status == DROCE_WC_WR_FLUSH_ERR)
		RPC_LOG(INFO, "session with %s: its QP stopped (a %s flushed)", s->peer, what);
	else
		RPC_LOG(NOTICE, "session with %s: a %s completed in error (%s): the connection is broken",
			s->peer, what, droce_wc_status_str(status));
	rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
}

static void
link_on_data(void *arg, const void *data, uint32_t len, const struct droce_wc *wc)
{
	struct rpc_rdma_link *l = arg;

	(void)wc;
	if (l->s != NULL) {
		rpc_session_bytes_in(l->s, data, len);
		return;
	}
	if (l->early_len + len > l->early_cap) {
		size_t cap = RTE_MAX(l->early_len + len, 2 * l->early_cap);
		uint8_t *b = realloc(l->early, cap);

		if (b == NULL) {
			l->failed = true;
			return;
		}
		l->early = b;
		l->early_cap = cap;
	}
	memcpy(l->early + l->early_len, data, len);
	l->early_len += len;
}

static void
link_on_error(void *arg, const struct droce_wc *wc, bool send)
{
	struct rpc_rdma_link *l = arg;

	(void)send;             /* the reactor has the receive side only */
	link_broken(l, "receive", wc->status);
}

/* Wait for the socket's flushed receives to reach its CQ, then destroy it. */
static void
destroy_recv_socket(struct rpc_rdma_link *l)
{
	for (unsigned int ms = 0; droce_rc_recv_socket_destroy(l->rx) == -EBUSY &&
				  ms < TEARDOWN_WAIT_MS; ms++)
		rpc_rdma_pause(1000);
}

/* ---- the send side: chunks and operations on the send CQ ------------------------ */

static int link_post_op(struct rpc_rdma_link *l, struct rpc_rdma_op *op);

/* Operations that waited for a slot, in order; on a failed link they
 * end at once.
 */
static void
post_waiting(struct rpc_rdma_link *l)
{
	struct rpc_rdma_op *op;

	while ((op = TAILQ_FIRST(&l->waiting)) != NULL) {
		int ret = l->failed ? -EIO : link_post_op(l, op);

		if (ret == -EAGAIN)
			return;
		TAILQ_REMOVE(&l->waiting, op, waiting);
		if (ret != 0)
			op->done(op, DROCE_WC_WR_FLUSH_ERR);
	}
}

/* A send's work request id is its chunk's index; an operation's, its
 * address (never below SEND_BUFFERS).
 */
static void
take_completion(struct rpc_rdma_link *l, const struct droce_wc *wc)
{
	if (wc->wr_id < SEND_BUFFERS) {
		l->free_chunk[l->nb_free++] = (uint16_t)wc->wr_id;
	} else {
		struct rpc_rdma_op *op = (struct rpc_rdma_op *)(uintptr_t)wc->wr_id;

		l->nb_ops--;
		op->done(op, wc->status);
	}
	if (wc->status != DROCE_WC_SUCCESS && !l->failed)
		link_broken(l, "send", wc->status);
}

/* Take the send CQ's completions; leave it armed when it is empty. The
 * operations their ends start wait (see post_waiting()).
 */
static void
reap(struct rpc_rdma_link *l)
{
	struct droce_wc wc[DROCE_CQ_REACTOR_MAX_EVENTS];
	bool armed = false;

	l->reaping = true;
	for (;;) {
		int n = droce_poll_cq(l->scq, RTE_DIM(wc), wc);

		for (int i = 0; i < n; i++)
			take_completion(l, &wc[i]);
		if (n > 0)
			continue;
		if (armed)
			break;
		/* A completion between the last poll and the arming would not
		 * signal: poll once more after it.
		 */
		droce_req_notify_cq(l->scq, 0);
		armed = true;
	}
	l->reaping = false;
}

/* At the end, the QP in ERR: every send and operation comes back (the
 * operations' ends run).
 */
static void
reap_all(struct rpc_rdma_link *l)
{
	l->failed = true;
	post_waiting(l);
	for (unsigned int ms = 0;
	     (l->nb_free != SEND_BUFFERS || l->nb_ops != 0) && ms < TEARDOWN_WAIT_MS; ms++) {
		reap(l);
		post_waiting(l);
		if (l->nb_free != SEND_BUFFERS || l->nb_ops != 0)
			rpc_rdma_pause(1000);
	}
}

/* One SEND of @p len bytes (at most a chunk), copied into a chunk. */
static int
link_send(struct rpc_rdma_link *l, const void *data, size_t len)
{
	uint16_t chunk;
	struct droce_sge sge;
	struct droce_send_wr wr, *bad;
	int ret;

	if (l->nb_free == 0)
		return -EAGAIN;
	chunk = l->free_chunk[--l->nb_free];
	memcpy(l->pool + (size_t)chunk * CHUNK, data, len);
	sge = (struct droce_sge){ .addr = (uintptr_t)(l->pool + (size_t)chunk * CHUNK),
				  .length = (uint32_t)len, .lkey = l->pool_mr->lkey };
	wr = (struct droce_send_wr){ .wr_id = chunk, .sg_list = &sge, .num_sge = 1,
				     .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED };
	ret = droce_post_send(l->qp, &wr, &bad);
	if (ret != 0)
		l->free_chunk[l->nb_free++] = chunk;
	return ret;
}

/* @p op on the QP; its end runs on its completion. */
static int
link_post_op(struct rpc_rdma_link *l, struct rpc_rdma_op *op)
{
	struct droce_sge sge = op->local;
	struct droce_send_wr wr = {
		.wr_id = (uintptr_t)op, .sg_list = &sge, .num_sge = 1, .opcode = op->opcode,
		.send_flags = DROCE_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = op->remote, .rkey = op->rkey },
	}, *bad;
	int ret;

	if (l->nb_ops == l->max_ops)
		return -EAGAIN;
	ret = droce_post_send(l->qp, &wr, &bad);
	if (ret == 0)
		l->nb_ops++;
	return ret;
}

/* On the control lcore (host_call()). */
static void
link_destroy(void *arg)
{
	struct rpc_rdma_link *l = arg;

	if (l->id != NULL)
		droce_cm_destroy_id(l->id);
	if (l->qp != NULL) {
		if (l->rx != NULL)
			destroy_recv_socket(l);
		droce_destroy_qp(l->qp);
	}
	/* A pool the port still reads (droce_dereg_mr() said why) is left
	 * allocated rather than freed under it.
	 */
	if (l->pool_mr == NULL || droce_dereg_mr(l->pool_mr) == 0)
		free(l->pool);
	/* lib/rc's destroy calls take no NULL; a link half made has some. */
	if (l->scq != NULL)
		droce_destroy_cq(l->scq);
	if (l->rcq != NULL)
		droce_destroy_cq(l->rcq);
	droce_cq_reactor_destroy(l->reactor);
	if (l->ch != NULL)
		droce_cm_destroy_channel(l->ch);
	free(l->early);
	free(l->stage);
	free(l);
}

/* The QP stopped and every send and operation back, their ends run:
 * outside the lock, as an operation's end may let go of registrations.
 */
static void
link_stop(struct rpc_rdma_link *l)
{
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_ERR };

	if (l->id != NULL && l->established && !l->disconnected) {
		l->disconnected = true;
		droce_cm_disconnect(l->id);
	}
	if (l->qp == NULL)
		return;
	droce_modify_qp(l->qp, &a, DROCE_QP_STATE);
	reap_all(l);
}

/* On the control lcore: a lingering link goes when its linger ends. */
static void
link_free_here(void *arg)
{
	struct rpc_rdma_link *l = arg;

	if (l->lingering) {
		l->released = true;
		return;
	}
	link_stop(l);
	link_destroy(l);
}

void
rpc_rdma_link_free(struct rpc_rdma_link *l)
{
	if (l != NULL)
		host_call(link_free_here, l);
}

/* The linger of @p l ends: its DREQ goes, and if its session let go of
 * it, so does the link.
 */
static void
linger_end(struct rpc_rdma_link *l)
{
	TAILQ_REMOVE(&host.lingering, l, linger_link);
	l->lingering = false;
	if (!l->disconnected) {
		l->disconnected = true;
		droce_cm_disconnect(l->id);
	}
	if (l->released)
		link_free_here(l);
}

/* In each control round while links linger: those whose SENDs were all
 * acknowledged (or failed), or whose time is up, end.
 */
static unsigned int
lingering_round(void)
{
	struct rpc_rdma_link *l, *next;
	unsigned int n = 0;
	uint64_t now;

	if (TAILQ_EMPTY(&host.lingering))
		return 0;
	now = rpc_now_ns();
	for (l = TAILQ_FIRST(&host.lingering); l != NULL; l = next, n++) {
		next = TAILQ_NEXT(l, linger_link);
		reap(l);
		if (l->nb_free == SEND_BUFFERS || l->failed || now >= l->linger_until_ns)
			linger_end(l);
	}
	/* Counted as work: an idle control lcore would sleep through them. */
	return n;
}

/* Every lingering link (of @p only, if given) ends now. */
static void
lingering_end(const struct rpc_rdma_listener *only)
{
	struct rpc_rdma_link *l, *next;

	for (l = TAILQ_FIRST(&host.lingering); l != NULL; l = next) {
		next = TAILQ_NEXT(l, linger_link);
		if (only == NULL || l->listener == only)
			linger_end(l);
	}
}

struct link_make {
	struct rpc_rdma_link *l;
	const char *who;
	bool ok;
};

/* The link's lib/rc objects, on the control lcore (host_call()); on
 * failure, logged and destroyed with the link.
 */
static void
link_make(void *arg)
{
	struct link_make *m = arg;
	struct rpc_rdma_link *l = m->l;
	struct host_port *hp = &host.port[l->port];
	struct droce_qp_attr init = {
		.qp_state = DROCE_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_READ |
				   DROCE_ACCESS_REMOTE_WRITE,
	};
	const char *what = "its memory or CQs";

	l->pool_mr = droce_reg_mr(hp->pd, l->pool, (size_t)SEND_BUFFERS * CHUNK,
				  DROCE_ACCESS_LOCAL_WRITE);
	l->scq = droce_create_cq(hp->dev, SEND_DEPTH);
	l->rcq = droce_create_cq(hp->dev, RECV_BUFFERS);
	if (l->pool_mr != NULL && l->scq != NULL && l->rcq != NULL) {
		what = "a QP";
		l->qp = droce_create_qp(hp->pd, &(struct droce_qp_init_attr){
			.qp_type = DROCE_QPT_RC, .send_cq = l->scq, .recv_cq = l->rcq,
			.sq_sig_all = 1,
			.cap = { .max_send_wr = SEND_DEPTH, .max_recv_wr = RECV_BUFFERS,
				 .max_send_sge = 1, .max_recv_sge = 1 } });
	}
	if (l->qp != NULL && droce_modify_qp(l->qp, &init, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX |
					     DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS) == 0) {
		what = "a CQ reactor";
		l->reactor = droce_cq_reactor_create(hp->dev, link_on_data, l);
	}
	if (l->reactor != NULL) {
		droce_cq_reactor_set_on_error(l->reactor, link_on_error, l);
		what = "a receive socket";
		l->rx = droce_rc_recv_socket_create(l->reactor, l->qp,
			&(struct droce_rc_recv_socket_attr){ .nb_buffers = RECV_BUFFERS,
							     .buffer_size = CHUNK });
	}
	m->ok = l->rx != NULL;
	if (!m->ok) {
		RPC_LOG(ERR, "%s: could not make %s for a connection on droce port %u (the droce.rc log says why)",
			m->who, what, l->port);
		link_destroy(l);
	}
}

/* A QP in INIT on @p port with its CQs, reactor and sockets. */
static struct rpc_rdma_link *
link_new(uint16_t port, const char *who)
{
	struct rpc_rdma_link *l = calloc(1, sizeof(*l));
	struct link_make m = { .l = l, .who = who };

	if (l == NULL || (l->stage = malloc(CHUNK)) == NULL ||
	    posix_memalign((void **)&l->pool, RTE_CACHE_LINE_SIZE,
			   (size_t)SEND_BUFFERS * CHUNK) != 0) {
		if (l != NULL)
			free(l->stage);
		free(l);
		RPC_LOG(ERR, "%s: no memory for a connection", who);
		return NULL;
	}
	l->port = port;
	l->max_ops = OPS_IN_FLIGHT;
	TAILQ_INIT(&l->waiting);
	for (uint16_t c = 0; c < SEND_BUFFERS; c++)
		l->free_chunk[l->nb_free++] = SEND_BUFFERS - 1 - c;
	host_call(link_make, &m);
	return m.ok ? l : NULL;
}

/* Connected: operations in flight as many as the READs the exchange
 * settled on allow.
 */
static void
link_connected(struct rpc_rdma_link *l)
{
	struct droce_qp_attr a;

	l->established = true;
	if (droce_query_qp(l->qp, &a, DROCE_QP_MAX_QP_RD_ATOMIC, NULL) == 0)
		l->max_ops = RTE_MAX(1u, RTE_MIN((unsigned int)a.max_rd_atomic,
						 (unsigned int)OPS_IN_FLIGHT));
}

static struct droce_cm_conn_param
conn_param(void)
{
	return (struct droce_cm_conn_param){ .responder_resources = RD_ATOMIC,
					     .initiator_depth = RD_ATOMIC,
					     .retry_count = RC_RETRIES, .ack_timeout = ACK_TIMEOUT,
					     .rnr_retry_count = RNR_RETRY_FOR_EVER,
					     .cm_response_timeout = CM_RESPONSE_TIMEOUT,
					     .max_cm_retries = CM_RETRIES };
}

static void
drain_eventfd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RPC_LOG(DEBUG, "eventfd: %s", strerror(errno));
}

/* ---- a session's connection, on its worker ---------------------------------------- */

static void
rdma_poll(struct rpc_session *s)
{
	/* Handlers may end it meanwhile: it stays until this returns. */
	rpc_session_ref(s);
	droce_cq_reactor_on_recv_cq_event(s->rdma->reactor, s->rdma->rx);
	rpc_session_unref(s);
}

static void
recv_ready(struct rpc_watch *w, uint32_t events)
{
	struct rpc_rdma_link *l = container_of(w, struct rpc_rdma_link, recv_watch);

	(void)events;
	if (!l->notified)
		drain_eventfd(droce_rc_recv_socket_event_fd(l->rx));
	rdma_poll(l->s);
}

/* Frames queued, or TLS records of them not yet written. */
static bool
frames_waiting(struct rpc_session *s)
{
	return !STAILQ_EMPTY(&s->out) || (s->tls != NULL && rpc_tls_pending(s));
}

static void
rdma_flush(struct rpc_session *s)
{
	struct rpc_rdma_link *l = s->rdma;

	while (s->state != SESSION_ENDED && !STAILQ_EMPTY(&s->out) && l->nb_free != 0) {
		struct rpc_out *o = STAILQ_FIRST(&s->out);
		const uint8_t *data = o->buf + o->off;
		size_t len = RTE_MIN(o->len - o->off, (size_t)CHUNK);
		int ret;

		/* Small frames share a SEND: a SEND each would cost a packet
		 * and a completion per call.
		 */
		if (len < CHUNK && STAILQ_NEXT(o, link) != NULL) {
			len = 0;
			for (; o != NULL && len < CHUNK; o = STAILQ_NEXT(o, link)) {
				size_t n = RTE_MIN(o->len - o->off, CHUNK - len);

				memcpy(l->stage + len, o->buf + o->off, n);
				len += n;
			}
			data = l->stage;
		}
		ret = link_send(l, data, len);
		if (ret == -EAGAIN)
			return;         /* a send completion calls again */
		if (ret != 0) {
			RPC_LOG(NOTICE, "session with %s: send: %s", s->peer, strerror(-ret));
			rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
			return;
		}
		while ((o = STAILQ_FIRST(&s->out)) != NULL && len >= o->len - o->off) {
			len -= o->len - o->off;
			STAILQ_REMOVE_HEAD(&s->out, link);
			rpc_session_out_sent(s, o);
			if (s->state == SESSION_ENDED)
				return;
		}
		if (o != NULL)
			o->off += len;
	}
}

/* As many chunks of @p data as there are free: the bytes they took. */
static ssize_t
rdma_write(struct rpc_session *s, const void *data, size_t len)
{
	struct rpc_rdma_link *l = s->rdma;
	size_t done = 0;

	while (done < len && l->nb_free != 0) {
		size_t n = RTE_MIN(len - done, (size_t)CHUNK);
		int ret = link_send(l, (const uint8_t *)data + done, n);

		if (ret != 0)
			return done != 0 ? (ssize_t)done : ret;
		done += n;
	}
	return done != 0 ? (ssize_t)done : -EAGAIN;
}

static void
send_ready(struct rpc_watch *w, uint32_t events)
{
	struct rpc_rdma_link *l = container_of(w, struct rpc_rdma_link, send_watch);
	struct rpc_session *s = l->s;

	(void)events;
	if (!l->notified)
		drain_eventfd(droce_cq_event_fd(l->scq));
	rpc_session_ref(s);
	reap(l);
	/* The SENDs first: an operation posted before them would hold them. */
	if (s->state != SESSION_ENDED && frames_waiting(s))
		rpc_session_flush(s);
	if (s->state != SESSION_ENDED)
		post_waiting(l);
	rpc_session_unref(s);
}

/* A client's CM events: the server's DREQ. */
static void
client_cm_ready(struct rpc_watch *w, uint32_t events)
{
	struct rpc_rdma_link *l = container_of(w, struct rpc_rdma_link, cm_watch);
	struct droce_cm_event ev;

	(void)events;
	while (droce_cm_get_event(l->ch, &ev) == 0) {
		if (ev.event != DROCE_CM_EVENT_DISCONNECTED || l->s->state == SESSION_ENDED)
			continue;
		l->disconnected = true;
		RPC_LOG(INFO, "session with %s: the server disconnected", l->s->peer);
		rpc_session_close(l->s, OCK_RPC_ERR_CONN_BROKEN);
	}
}

/* A completion on an armed CQ of an attached link (on the control
 * lcore, in lib/rc's round): its watch runs in the worker's next round.
 */
static void
send_notified(void *arg)
{
	struct rpc_rdma_link *l = arg;

	rpc_worker_ready(l->s->w, &l->send_watch);
}

static void
recv_notified(void *arg)
{
	struct rpc_rdma_link *l = arg;

	rpc_worker_ready(l->s->w, &l->recv_watch);
}

/* On the control lcore (host_call()). */
static void
link_unnotify(void *arg)
{
	struct rpc_rdma_link *l = arg;

	droce_cq_set_notify(l->scq, NULL, NULL);
	droce_cq_set_notify(l->rcq, NULL, NULL);
}

static int
rdma_attach(struct rpc_session *s)
{
	struct rpc_rdma_link *l = s->rdma;
	int ret;

	l->send_watch.ready = send_ready;
	l->recv_watch.ready = recv_ready;
	l->cm_watch.ready = client_cm_ready;
	/* On the lcore that adds the CQs' completions (the control lcore,
	 * lib/rc's default owner: -1), they reach the worker's ready list with
	 * no eventfd written, epoll asked or eventfd read: three system
	 * calls a completion, most of a small call's round trip.
	 */
	l->notified = on_control_lcore() && droce_qp_owner(l->qp) < 0;
	if (l->notified) {
		/* The link's CQs serve its QP alone: one owner. */
		ret = droce_cq_set_notify(l->scq, send_notified, l);
		if (ret == 0)
			ret = droce_cq_set_notify(l->rcq, recv_notified, l);
	} else {
		ret = rpc_worker_watch(s->w, droce_cq_event_fd(l->scq), EPOLLIN, &l->send_watch);
		if (ret == 0)
			ret = rpc_worker_watch(s->w, droce_rc_recv_socket_event_fd(l->rx), EPOLLIN,
					       &l->recv_watch);
	}
	if (ret == 0 && l->ch != NULL)
		ret = rpc_worker_watch(s->w, droce_cm_channel_fd(l->ch), EPOLLIN, &l->cm_watch);
	if (ret != 0) {
		RPC_LOG(ERR, "session with %s: cannot watch its CQs: %s", s->peer, strerror(-ret));
		return ret;
	}
	/* Bytes after the WELCOME came with it; both CQs are armed here. */
	if (l->early_len != 0) {
		rpc_session_bytes_in(s, l->early, l->early_len);
		l->early_len = 0;
	}
	reap(l);
	rdma_poll(s);
	return 0;
}

static void
rdma_say_bye(struct rpc_session *s)
{
	struct rpc_frame f = { .kind = RPC_BYE };
	uint8_t hdr[RPC_FRAME_HDR_SIZE];

	if (!STAILQ_EMPTY(&s->out))
		return;
	rpc_frame_encode(&f, hdr);
	if (link_send(s->rdma, hdr, sizeof(hdr)) == 0)
		rpc_count_bye();
}

static void
rdma_detach(struct rpc_session *s)
{
	struct rpc_rdma_link *l = s->rdma;

	if (l->notified) {
		/* The control lcore may be adding completions: there, then
		 * no callback touches the ready list from here on.
		 */
		host_call(link_unnotify, l);
		rpc_worker_unready(s->w, &l->send_watch);
		rpc_worker_unready(s->w, &l->recv_watch);
		l->notified = false;
	} else {
		rpc_worker_unwatch(s->w, droce_cq_event_fd(l->scq));
		rpc_worker_unwatch(s->w, droce_rc_recv_socket_event_fd(l->rx));
	}
	if (l->ch != NULL)
		rpc_worker_unwatch(s->w, droce_cm_channel_fd(l->ch));
	if (!l->established || l->disconnected)
		return;
	/* The peer hears of the end with a DREQ, which would overtake SENDs
	 * not yet acknowledged (a refusing WELCOME, a BYE) and lose them:
	 * on the control lcore the DREQ waits for their ACK a while.
	 */
	if (l->nb_free != SEND_BUFFERS && !l->failed && atomic_load(&host.looping) &&
	    on_control_lcore()) {
		l->linger_until_ns = rpc_now_ns() + LINGER_MS * 1000000ull;
		l->lingering = true;
		TAILQ_INSERT_TAIL(&host.lingering, l, linger_link);
		return;
	}
	l->disconnected = true;
	droce_cm_disconnect(l->id);
}

static void
rdma_release(struct rpc_session *s)
{
	struct rpc_rdma_link *l = s->rdma;
	struct rpc_rdma_listener *ls = l->listener;

	s->rdma = NULL;
	l->s = NULL;
	if (ls != NULL) {
		pthread_mutex_lock(&ls->lock);
		TAILQ_REMOVE(&ls->links, l, listener_link);
		pthread_mutex_unlock(&ls->lock);
	}
	rpc_rdma_link_free(l);
}

void
rpc_rdma_post(struct rpc_session *s, struct rpc_rdma_op *op)
{
	struct rpc_rdma_link *l = s->rdma;

	if (l == NULL || s->state == SESSION_ENDED || l->failed) {
		op->done(op, DROCE_WC_WR_FLUSH_ERR);
		return;
	}
	/* Frames queued before it go first, as far as there are send slots:
	 * a SEND behind a READ waits for all of the READ's answer at the
	 * peer. A written frame's callback may end the session meanwhile.
	 */
	if (!l->reaping && frames_waiting(s)) {
		rpc_session_flush(s);
		if (s->state == SESSION_ENDED || l->failed) {
			op->done(op, DROCE_WC_WR_FLUSH_ERR);
			return;
		}
	}
	TAILQ_INSERT_TAIL(&l->waiting, op, waiting);
	if (!l->reaping)
		post_waiting(l);
}

uint16_t
rpc_rdma_port(const struct rpc_session *s)
{
	return s->droce_port;
}

bool
rpc_rdma_up(void)
{
	bool up;

	pthread_mutex_lock(&host.lock);
	up = host.state == HOST_UP;
	pthread_mutex_unlock(&host.lock);
	return up;
}

struct reg {
	uint16_t port;
	void *addr;
	size_t len;
	struct droce_mr *mr;
	int err;
};

static void
reg_on_control(void *arg)
{
	struct reg *r = arg;

	r->mr = droce_reg_mr(host.port[r->port].pd, r->addr, r->len, DROCE_ACCESS_LOCAL_WRITE |
			     DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_WRITE);
	r->err = rte_errno;
}

struct droce_mr *
rpc_rdma_reg(uint16_t port, void *addr, size_t len)
{
	struct reg r = { .port = port, .addr = addr, .len = len };

	host_call(reg_on_control, &r);
	if (r.mr == NULL)
		RPC_LOG(ERR, "%zu bytes at %p: droce port %u does not register them: %s", len, addr,
			port, rte_strerror(r.err));
	return r.mr;
}

/* A region whose deregistration found the port still sending from it
 * (zero copy, droce_dereg_mr() -EBUSY): the control lcore tries again
 * until lib/rc lets go of it. Its memory stays the caller's, not freed.
 */
struct parked_mr {
	TAILQ_ENTRY(parked_mr) next;
	struct droce_mr *mr;
};

/* How long a thread that may wait gives the port to let go of a region. */
#define DEREG_WAIT_MS 1000

static unsigned int
parked_round(void)
{
	struct parked_mr *p, *next;
	unsigned int left = 0;
	uint64_t now;

	if (TAILQ_EMPTY(&host.parked))
		return 0;
	now = rte_get_timer_cycles();
	if (now < host.parked_next_try)
		return 1;
	host.parked_next_try = now + rte_get_timer_hz() / 1000;
	for (p = TAILQ_FIRST(&host.parked); p != NULL; p = next) {
		next = TAILQ_NEXT(p, next);
		if (droce_dereg_mr(p->mr) != 0) {
			left++;
			continue;
		}
		TAILQ_REMOVE(&host.parked, p, next);
		free(p);
	}
	return left;
}

struct dereg {
	struct droce_mr *mr;
	int ret;
};

static void
dereg_on_control(void *arg)
{
	struct dereg *d = arg;

	d->ret = droce_dereg_mr(d->mr);
}

static void
park_on_control(void *arg)
{
	TAILQ_INSERT_TAIL(&host.parked, (struct parked_mr *)arg, next);
}

int
rpc_rdma_dereg(struct droce_mr *mr)
{
	struct dereg d = { .mr = mr };
	struct parked_mr *p;

	if (mr == NULL)
		return 0;
	host_call(dereg_on_control, &d);
	/* Each try on the control lcore, where lib/rc's objects live; the
	 * waits between them on this thread, where they stall nothing.
	 */
	for (unsigned int ms = 0; d.ret == -EBUSY && !on_control_lcore() && ms < DEREG_WAIT_MS;
	     ms++) {
		rte_delay_us_sleep(1000);
		host_call(dereg_on_control, &d);
	}
	if (d.ret == 0)
		return 0;
	p = malloc(sizeof(*p));
	if (p == NULL) {
		RPC_LOG(ERR, "no memory to keep a region for a later deregistration: it stays registered");
		return d.ret;
	}
	p->mr = mr;
	host_call(park_on_control, p);
	return d.ret;
}

const struct rpc_transport_ops rpc_rdma_ops = {
	.attach = rdma_attach,
	.poll = rdma_poll,
	.flush = rdma_flush,
	.write = rdma_write,
	.say_bye = rdma_say_bye,
	.detach = rdma_detach,
	.release = rdma_release,
};

void
rpc_rdma_bind(struct rpc_session *s, struct rpc_rdma_link *l)
{
	s->ops = &rpc_rdma_ops;
	s->rdma = l;
	s->droce_port = l->port;
	l->s = s;
}

/* ---- servers ------------------------------------------------------------------------ */

static struct rpc_rdma_link *
listener_find(struct rpc_rdma_listener *ls, const struct droce_cm_id *id)
{
	struct rpc_rdma_link *l;

	TAILQ_FOREACH(l, &ls->links, listener_link)
		if (l->id == id)
			return l;
	return NULL;
}

static void
peer_name(uint32_t ip, uint16_t port, char *out, size_t len)
{
	char text[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &ip, text, sizeof(text));
	snprintf(out, len, "%s:%u", text, port);
}

static void
take_request(struct rpc_rdma_listener *ls, const struct droce_cm_event *ev)
{
	struct droce_cm_conn_param param = conn_param();
	struct rpc_rdma_link *l;
	struct rpc_session *s;
	char who[96], peer[64];

	snprintf(who, sizeof(who), "server %s", ls->srv->conf.name);
	if (atomic_load(&ls->srv->destroying) || !rpc_server_admit(ls->srv) ||
	    (l = link_new(ls->port, who)) == NULL) {
		droce_cm_reject(ev->id, NULL, 0);
		droce_cm_destroy_id(ev->id);
		return;
	}
	l->id = ev->id;
	l->listener = ls;
	param.responder_resources = RTE_MIN(param.responder_resources, ev->initiator_depth);
	param.initiator_depth = RTE_MIN(param.initiator_depth, ev->responder_resources);
	if (droce_cm_accept(l->id, l->qp, &param) != 0) {
		RPC_LOG(ERR, "%s: cannot accept a connection (the droce.cm log says why)", who);
		rpc_rdma_link_free(l);
		return;
	}
	/* The QP is in RTS: the session starts now, not at the RTU, which a
	 * lossy link may drop (the client's HELLO then stands for it, as a
	 * first packet does for an IB CM).
	 */
	link_connected(l);
	peer_name(ev->peer_ip, ev->peer_port, peer, sizeof(peer));
	s = rpc_session_new(rpc_engine_pick(ls->srv->engine), -1, false, &ls->srv->conf, peer);
	if (s == NULL) {
		rpc_rdma_link_free(l);
		return;
	}
	rpc_rdma_bind(s, l);
	s->server = ls->srv;
	pthread_mutex_lock(&ls->lock);
	TAILQ_INSERT_TAIL(&ls->links, l, listener_link);
	pthread_mutex_unlock(&ls->lock);
	rpc_server_session_add(ls->srv, s);
	rpc_session_adopt(s);
}

static void
listener_ready(struct rpc_watch *w, uint32_t events)
{
	struct rpc_server *srv = container_of(w, struct rpc_server, watch);
	struct rpc_rdma_listener *ls = srv->rdma;
	struct droce_cm_event ev;

	(void)events;
	while (droce_cm_get_event(ls->ch, &ev) == 0) {
		struct rpc_rdma_link *l;

		if (ev.event == DROCE_CM_EVENT_CONNECT_REQUEST) {
			take_request(ls, &ev);
			continue;
		}
		pthread_mutex_lock(&ls->lock);
		l = listener_find(ls, ev.id);
		if (l == NULL) {
			pthread_mutex_unlock(&ls->lock);
			continue;
		}
		/* The client left, or its REP went unanswered for good. */
		if (ev.event == DROCE_CM_EVENT_DISCONNECTED || ev.event == DROCE_CM_EVENT_REJECTED ||
		    ev.event == DROCE_CM_EVENT_UNREACHABLE)
			rpc_session_end(l->s, OCK_RPC_ERR_CONN_BROKEN, false);
		pthread_mutex_unlock(&ls->lock);
	}
}

OckRpcStatus
rpc_rdma_listen(struct rpc_server *srv)
{
	struct rpc_rdma_listener *ls;
	struct in_addr ip;
	int port, ret = -EINVAL;

	if (inet_pton(AF_INET, srv->ip, &ip) != 1) {
		RPC_LOG(ERR, "server %s: \"%s\" is not an IPv4 address", srv->conf.name, srv->ip);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (!rpc_rdma_start())
		return OCK_RPC_ERR_RDMA_NOT_ENABLE;
	port = port_of_address(ip.s_addr);
	if (port < 0) {
		RPC_LOG(ERR, "server %s: %s is not droce port 0's address (%s: port.0.address), which RPC over RDMA uses; allowed: that address or 0.0.0.0",
			srv->conf.name, srv->ip, getenv(ENV_CONF));
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	ls = calloc(1, sizeof(*ls));
	if (ls == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	ls->srv = srv;
	ls->port = (uint16_t)port;
	pthread_mutex_init(&ls->lock, NULL);
	TAILQ_INIT(&ls->links);
	ls->ch = droce_cm_create_channel(host.port[port].cm);
	if (ls->ch != NULL)
		ls->id = droce_cm_create_id(ls->ch, ls);
	if (ls->id != NULL) {
		if (srv->port != 0)
			ret = droce_cm_listen(ls->id, srv->port);
		for (uint32_t p = srv->conf.range_first;
		     srv->port == 0 && p <= srv->conf.range_last && ret != 0; p++)
			if ((ret = droce_cm_listen(ls->id, (uint16_t)p)) == 0)
				srv->port = (uint16_t)p;
	}
	if (ret == 0) {
		srv->rdma = ls;
		srv->watch.ready = listener_ready;
		ret = rpc_worker_watch(&srv->engine->workers[0], droce_cm_channel_fd(ls->ch),
				       EPOLLIN, &srv->watch);
		if (ret == 0) {
			RPC_LOG(INFO, "server %s listens on %s:%u (RDMA, droce port %d)",
				srv->conf.name, srv->ip, srv->port, port);
			return OCK_RPC_OK;
		}
	}
	if (srv->port != 0)
		RPC_LOG(ERR, "server %s: cannot listen on %s:%u: %s", srv->conf.name, srv->ip,
			srv->port, strerror(-ret));
	else
		RPC_LOG(ERR, "server %s: no free port on %s in %u-%u", srv->conf.name, srv->ip,
			srv->conf.range_first, srv->conf.range_last);
	srv->rdma = NULL;
	if (ls->id != NULL)
		droce_cm_destroy_id(ls->id);
	if (ls->ch != NULL)
		droce_cm_destroy_channel(ls->ch);
	pthread_mutex_destroy(&ls->lock);
	free(ls);
	return OCK_RPC_ERR;
}

struct unlisten {
	struct rpc_task task;
	struct rpc_server *srv;
	atomic_int done;
};

static void
unlisten_task(struct rpc_task *t)
{
	struct unlisten *u = container_of(t, struct unlisten, task);

	rpc_worker_unwatch(&u->srv->engine->workers[0], droce_cm_channel_fd(u->srv->rdma->ch));
	atomic_store_explicit(&u->done, 1, memory_order_release);
	rpc_wake_state(&u->done);
}

void
rpc_rdma_unlisten(struct rpc_server *srv)
{
	struct unlisten u = { .task.run = unlisten_task, .srv = srv };

	if (srv->rdma == NULL)
		return;
	/* On the worker that may be in listener_ready() for it. */
	atomic_init(&u.done, 0);
	rpc_worker_push(&srv->engine->workers[0], &u.task);
	rpc_wait_state(&u.done, 1u << 1, 0);
	droce_cm_destroy_id(srv->rdma->id);
	srv->rdma->id = NULL;
}

static void
end_lingering_of(void *ls)
{
	lingering_end(ls);
}

void
rpc_rdma_listener_free(struct rpc_server *srv)
{
	struct rpc_rdma_listener *ls = srv->rdma;

	if (ls == NULL)
		return;
	/* Every link was a session's, released with it; those that linger
	 * hold CM ids of its channel.
	 */
	RTE_VERIFY(TAILQ_EMPTY(&ls->links));
	host_call(end_lingering_of, ls);
	droce_cm_destroy_channel(ls->ch);
	pthread_mutex_destroy(&ls->lock);
	free(ls);
	srv->rdma = NULL;
}

/* ---- clients ------------------------------------------------------------------------ */

/* The opening's I/O, on the connecting thread: it polls the CQs itself. */
struct opening {
	struct rpc_rdma_link *l;
	uint64_t deadline_ns;
};

static int
wait_fd(int fd, const struct opening *op)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t now = rpc_now_ns();

	if (now >= op->deadline_ns)
		return -ETIMEDOUT;
	if (rpc_rdma_drive())
		return 0;
	/* A short sleep: a CQ signals only once armed. */
	if (poll(&pfd, 1, (int)RTE_MIN((op->deadline_ns - now) / 1000000 + 1, 10u)) > 0)
		drain_eventfd(fd);
	return 0;
}

static int
opening_write(void *arg, const void *buf, size_t len)
{
	struct opening *op = arg;
	struct rpc_rdma_link *l = op->l;
	const uint8_t *p = buf;

	while (len != 0) {
		size_t n = RTE_MIN(len, (size_t)CHUNK);
		int ret = link_send(l, p, n);

		if (ret == -EAGAIN) {
			reap(l);
			ret = l->failed ? -ECONNRESET : wait_fd(droce_cq_event_fd(l->scq), op);
			if (ret != 0)
				return ret;
			continue;
		}
		if (ret != 0)
			return ret;
		p += n;
		len -= n;
	}
	return 0;
}

static int
opening_read(void *arg, void *buf, size_t len)
{
	struct opening *op = arg;
	struct rpc_rdma_link *l = op->l;

	while (l->early_len < len) {
		int ret;

		if (droce_cq_reactor_on_recv_cq_event(l->reactor, l->rx) > 0)
			continue;
		ret = l->failed ? -ECONNRESET : wait_fd(droce_rc_recv_socket_event_fd(l->rx), op);
		if (ret != 0)
			return ret;
	}
	memcpy(buf, l->early, len);
	memmove(l->early, l->early + len, l->early_len - len);
	l->early_len -= len;
	return 0;
}

/* The CM's answer to our REQ. */
static int
await_established(struct rpc_rdma_link *l, const struct opening *op, const char *where)
{
	struct droce_cm_event ev;

	for (;;) {
		if (droce_cm_get_event(l->ch, &ev) != 0) {
			if (wait_fd(droce_cm_channel_fd(l->ch), op) != 0) {
				RPC_LOG(ERR, "connect to %s: no answer from the server's CM in %u ms",
					where, RPC_OPENING_TIMEOUT_MS);
				return -1;
			}
			continue;
		}
		if (ev.event == DROCE_CM_EVENT_ESTABLISHED) {
			link_connected(l);
			return 0;
		}
		if (ev.event == DROCE_CM_EVENT_REJECTED && ev.status == 8)
			RPC_LOG(ERR, "connect to %s: refused, nothing listens on that port", where);
		else if (ev.event == DROCE_CM_EVENT_UNREACHABLE)
			RPC_LOG(ERR, "connect to %s: unreachable (%s)", where,
				ev.status == -EHOSTUNREACH ? "no ARP answer" : "the CM did not answer");
		else
			RPC_LOG(ERR, "connect to %s: CM event %s (status %d)", where,
				droce_cm_event_str(ev.event), ev.status);
		return -1;
	}
}

OckRpcStatus
rpc_rdma_connect(const char *ip, uint16_t port, const struct rpc_conf *conf,
		 struct rpc_tls *tls, struct rpc_rdma_link **out, uint32_t *server_max)
{
	struct droce_cm_conn_param param = conn_param();
	struct opening op = { .deadline_ns = rpc_now_ns() +
					     RPC_OPENING_TIMEOUT_MS * 1000000ull };
	char where[2 * RPC_NAME_MAX];
	struct rpc_rdma_link *l;
	struct in_addr dst;
	OckRpcStatus st;
	int p;

	if (inet_pton(AF_INET, ip, &dst) != 1) {
		RPC_LOG(ERR, "connect: \"%s\" is not an IPv4 address", ip);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (!rpc_rdma_start())
		return OCK_RPC_ERR_RDMA_NOT_ENABLE;
	snprintf(where, sizeof(where), "%s:%u (server %s)", ip, port, conf->name);
	/* The CM's answer comes through the control lcore: a thread that
	 * runs it can wait for it only by driving the stack (which this
	 * tries, a round).
	 */
	if (on_control_lcore() && !rpc_rdma_drive()) {
		RPC_LOG(ERR, "connect to %s: not from a handler of an RDMA session, which runs on droce's control lcore; connect from another thread",
			where);
		return OCK_RPC_ERR;
	}
	p = port_towards(dst.s_addr);
	if (p < 0) {
		RPC_LOG(ERR, "connect to %s: droce port 0, which RPC over RDMA uses, does not reach it (not on port.0.address's subnet, no port.0.gateway)",
			where);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	wait_link((uint16_t)p);
	l = link_new((uint16_t)p, where);
	if (l == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	op.l = l;
	l->ch = droce_cm_create_channel(host.port[p].cm);
	if (l->ch != NULL)
		l->id = droce_cm_create_id(l->ch, l);
	if (l->id == NULL) {
		rpc_rdma_link_free(l);
		return OCK_RPC_ERR_NO_MEMORY;
	}
	if (droce_cm_connect(l->id, dst.s_addr, port, l->qp, &param) != 0 ||
	    await_established(l, &op, where) != 0) {
		rpc_rdma_link_free(l);
		return OCK_RPC_ERR_CONN_UNCONNECTED;
	}
	st = rpc_session_open_client(&(struct rpc_opening){ .write_all = opening_write,
							    .read_exact = opening_read,
							    .arg = &op, .where = where },
				     conf, tls, server_max);
	if (st != OCK_RPC_OK) {
		rpc_rdma_link_free(l);
		return st;
	}
	*out = l;
	return OCK_RPC_OK;
}
