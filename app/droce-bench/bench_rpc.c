/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * rpc: hcom4db calls (lib/rpc over kernel TCP) between two processes,
 * against the same kernel's TCP with nothing on top, in the same run:
 *   - synchronous calls of 64 bytes answered with 64 bytes: round-trip
 *     p50 and p99, against a TCP ping-pong of 64-byte messages;
 *   - one-way asynchronous calls of 64 bytes, as many in flight as the
 *     session takes, and one synchronous call at the end: calls per
 *     second, against a TCP pipeline of 64-byte writes.
 * The ratio says what droce's RPC layer costs on top of its transport.
 * The server is a child process (forked before the client's threads
 * start), left to the scheduler as the TCP peer is.
 */

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "droce_net.h"
#include "hcom4db.h"
#include "bench.h"

#define RPC_ITERS 20000

/* ---- the server process ---------------------------------------------------------- */

static void
echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcServerReply(ctx, BENCH_SVC_ECHO, &msg, NULL);
}

static void
sink(OckRpcServerContext ctx, OckRpcMessage msg)
{
	(void)ctx;
	(void)msg;
}

bool
bench_rpc_services(OckRpcServer server)
{
	OckRpcService e = { BENCH_SVC_ECHO, echo }, s = { BENCH_SVC_SINK, sink };

	return OckRpcServerAddService(server, &e) == OCK_RPC_OK &&
	       OckRpcServerAddService(server, &s) == OCK_RPC_OK;
}

static RpcConfigPair config_pairs[] = {
	{ OCK_RPC_STR_SERVER_NAME, "droce-bench" }, { OCK_RPC_STR_COMMUNICATION_TYPE, "TCP" },
	{ OCK_RPC_STR_ENABLE_TLS, "no" }, { OCK_RPC_STR_SERVER_PORT_RANGE, "23000-23999" },
	{ OCK_RPC_STR_HEATBEAT_IDLE, "60" },
};

static OckRpcCreateConfig config = {
	.mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
	.configs = { (int)(sizeof(config_pairs) / sizeof(config_pairs[0])), config_pairs },
};

/* Serve until the parent closes the pipe; the port goes up it first. */
static void
server_main(int to_parent, int from_parent)
{
	OckRpcServer server;
	uint16_t port = 0, *ports;
	char **ips, c;
	int n;

	if (OckRpcServerCreateWithCfg("127.0.0.1", 0, &server, &config) == OCK_RPC_OK &&
	    bench_rpc_services(server) && OckRpcServerStart(server) == OCK_RPC_OK &&
	    OckRpcGetOobIpAndPort(server, &ips, &ports, &n))
		port = ports[0];
	if (write(to_parent, &port, sizeof(port)) != sizeof(port) || port == 0)
		_exit(1);
	while (read(from_parent, &c, 1) > 0)
		;
	OckRpcServerDestroy(server);
	_exit(0);
}

/* ---- the client ------------------------------------------------------------------- */

/* Waits of the client's own: a round of the stack it polls, if it polls
 * one (the RDMA side runs to completion), and with stepped_yield the cpu
 * to a process that shares it when the round had nothing to do; else the
 * cpu goes to the session's worker, which may share it.
 */
static struct droce_stack *stepped;
static bool stepped_yield;

void
bench_rpc_stepped(struct droce_stack *s, bool yield)
{
	stepped = s;
	stepped_yield = yield;
}

void
bench_rpc_idle(void)
{
	if (stepped == NULL || (droce_stack_poll(stepped) <= 0 && stepped_yield))
		sched_yield();
}

static atomic_ulong sunk;

static void
sunk_done(OckRpcStatus status, void *arg)
{
	(void)arg;
	if (status == OCK_RPC_OK)
		atomic_fetch_add(&sunk, 1);
}

bool
bench_rpc_pingpong(OckRpcClient c, uint64_t *rtt, unsigned int iters)
{
	uint8_t q[BENCH_TCP_BYTES] = { 1 }, r[BENCH_TCP_BYTES];

	for (unsigned int i = 0; i < iters; i++) {
		OckRpcMessage req = { q, sizeof(q) }, rsp = { r, sizeof(r) };
		uint64_t t0 = rte_rdtsc();

		if (OckRpcClientCall(c, BENCH_SVC_ECHO, &req, &rsp, NULL) != OCK_RPC_OK ||
		    rsp.len != sizeof(q))
			return false;
		rtt[i] = rte_rdtsc() - t0;
	}
	return true;
}

double
bench_rpc_rate(OckRpcClient c, size_t bytes, unsigned int count)
{
	static uint8_t q[BENCH_RPC_BYTES_MAX];
	OckRpcMessage req = { q, bytes }, rsp = { q, BENCH_TCP_BYTES };
	OckRpcMessage small = { q, BENCH_TCP_BYTES };
	OckRpcCallDone done = { sunk_done, NULL };
	double t0 = bench_now(), t;
	OckRpcStatus st;

	if (bytes > sizeof(q))
		return -1;
	atomic_store(&sunk, 0);
	for (unsigned int i = 0; i < count; i++) {

		/* A full session says so: the call is made again. */
		while ((st = OckRpcClientCall(c, BENCH_SVC_SINK, &req, NULL, &done)) ==
		       OCK_RPC_ERR_NO_MEMORY)
			bench_rpc_idle();
		if (st != OCK_RPC_OK)
			return -1;
	}
	/* Answered after every call before it: the session keeps order (a
	 * full session refuses it as it did the others).
	 */
	while ((st = OckRpcClientCall(c, BENCH_SVC_ECHO, &small, &rsp, NULL)) ==
	       OCK_RPC_ERR_NO_MEMORY)
		bench_rpc_idle();
	if (st != OCK_RPC_OK)
		return -1;
	t = bench_now() - t0;
	while (atomic_load(&sunk) < count)
		bench_rpc_idle();
	return count / t;
}

/* A window's call: its buffers, and whether it is answered. */
struct window_call {
	uint8_t q[BENCH_TCP_BYTES], r[BENCH_TCP_BYTES];
	OckRpcMessage req, rsp;
	OckRpcCallDone done;
	atomic_int ended;       /* 0 in flight, 1 answered, 2 failed */
};

static void
window_done(OckRpcStatus status, void *arg)
{
	struct window_call *c = arg;

	atomic_store_explicit(&c->ended, status == OCK_RPC_OK && c->rsp.len == BENCH_TCP_BYTES
				       ? 1 : 2, memory_order_release);
}

/* Calls of BENCH_TCP_BYTES answered alike, BENCH_RPC_WINDOW in flight,
 * until @p count are answered or, with @p stop, until *stop is set; how
 * many were answered in @p answered_out. Calls per second, -1 if one failed.
 */
static double
window_run(const OckRpcClient *c, unsigned int nb, uint64_t count, const atomic_bool *stop,
	   uint64_t *answered_out)
{
	static struct window_call w[BENCH_RPC_WINDOW];
	uint64_t issued = 0, answered = 0;
	double t0 = bench_now();

	/* Call i takes slot i % BENCH_RPC_WINDOW, once call i - WINDOW, the
	 * oldest in flight then, is answered; it goes to session i % nb.
	 */
	while (answered < count) {
		struct window_call *k;
		int e;

		if (stop != NULL && issued < count &&
		    atomic_load_explicit(stop, memory_order_acquire))
			count = issued;  /* no more calls: those in flight end */
		if (issued < count && issued - answered < BENCH_RPC_WINDOW) {
			k = &w[issued % BENCH_RPC_WINDOW];
			k->req = (OckRpcMessage){ k->q, sizeof(k->q) };
			k->rsp = (OckRpcMessage){ k->r, sizeof(k->r) };
			k->done = (OckRpcCallDone){ window_done, k };
			atomic_store(&k->ended, 0);
			if (OckRpcClientCall(c[issued % nb], BENCH_SVC_ECHO, &k->req, &k->rsp,
					     &k->done) != OCK_RPC_OK)
				return -1;
			issued++;
			continue;
		}
		e = atomic_load_explicit(&w[answered % BENCH_RPC_WINDOW].ended,
					 memory_order_acquire);
		if (e == 2)
			return -1;
		if (e == 1)
			answered++;
		else
			bench_rpc_idle();
	}
	if (answered_out != NULL)
		*answered_out = answered;
	return answered / (bench_now() - t0);
}

double
bench_rpc_window_over(const OckRpcClient *c, unsigned int nb, unsigned int count)
{
	return window_run(c, nb, count, NULL, NULL);
}

double
bench_rpc_window_until(OckRpcClient c, const atomic_bool *stop, uint64_t *answered)
{
	return window_run(&c, 1, UINT64_MAX, stop, answered);
}

double
bench_rpc_window(OckRpcClient c, unsigned int count)
{
	return bench_rpc_window_over(&c, 1, count);
}

int
bench_rpc(const struct bench_opts *o)
{
	static uint64_t rtt[RPC_ITERS];
	static struct bench_rdma_rtt rdma;
	double rpc_p50[BENCH_MAX_ROUNDS], rpc_p99[BENCH_MAX_ROUNDS], rr[BENCH_MAX_ROUNDS];
	double tcp_p50[BENCH_MAX_ROUNDS], tcp_p99[BENCH_MAX_ROUNDS], tr[BENCH_MAX_ROUNDS];
	double rw[BENCH_MAX_ROUNDS];
	unsigned int n = o->rounds;
	int to_child[2], to_parent[2], status, ret = 1;
	OckRpcClient client = 0;
	uint16_t port = 0;
	pid_t pid;

	if (pipe(to_child) != 0 || pipe(to_parent) != 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		server_main(to_parent[1], to_child[0]);
	}
	close(to_child[0]);
	close(to_parent[1]);
	if (pid < 0 || read(to_parent[0], &port, sizeof(port)) != sizeof(port) || port == 0 ||
	    OckRpcClientConnectWithCfg("127.0.0.1", port, &client, &config) != OCK_RPC_OK) {
		fprintf(stderr, "droce-bench rpc: no server\n");
		goto out;
	}
	printf("  64-byte calls over TCP loopback; server in a child process; %u round trips and %u one-way calls a round\n",
	       RPC_ITERS, BENCH_TCP_RATE_COUNT);
	for (unsigned int r = 0; r < o->rounds; r++) {
		if (!bench_rpc_pingpong(client, rtt, RPC_ITERS) ||
		    (bench_percentiles(rtt, RPC_ITERS, &rpc_p50[r], &rpc_p99[r]),
		     (rr[r] = bench_rpc_rate(client, BENCH_TCP_BYTES, BENCH_TCP_RATE_COUNT)) < 0) ||
		    (rw[r] = bench_rpc_window(client, BENCH_TCP_RATE_COUNT)) < 0 ||
		    !bench_tcp_pingpong(rtt, RPC_ITERS)) {
			fprintf(stderr, "droce-bench rpc: a pass failed\n");
			goto out;
		}
		bench_percentiles(rtt, RPC_ITERS, &tcp_p50[r], &tcp_p99[r]);
		tr[r] = bench_tcp_rate();
		printf("  round %u: call p50 %.1f us (TCP %.1f), p99 %.1f us (TCP %.1f); one-way %.0f calls/s (TCP %.0f msg/s); %u in flight %.0f calls/s\n",
		       r + 1, rpc_p50[r], tcp_p50[r], rpc_p99[r], tcp_p99[r], rr[r], tr[r],
		       BENCH_RPC_WINDOW, rw[r]);
		fflush(stdout);
	}
	if (bench_rpc_rdma_rtt(o, &rdma) != 0)
		goto out;
	for (unsigned int r = 0; r < n; r++)
		printf("  RDMA round %u: call p50 %.1f us, p99 %.1f us; %u in flight %.0f calls/s\n",
		       r + 1, rdma.p50[r], rdma.p99[r], BENCH_RPC_WINDOW, rdma.rate[r]);
	printf("  sync call 64 B, p50: droce RDMA %.1f us, droce TCP %.1f us, kernel TCP ping-pong %.1f us: RDMA %.2fx and TCP %.2fx the kernel's\n",
	       bench_median(rdma.p50, n), bench_median(rpc_p50, n), bench_median(tcp_p50, n),
	       bench_median(rdma.p50, n) / bench_median(tcp_p50, n),
	       bench_median(rpc_p50, n) / bench_median(tcp_p50, n));
	printf("  sync call 64 B, p99: droce RDMA %.1f us, droce TCP %.1f us, kernel TCP ping-pong %.1f us: RDMA %.2fx and TCP %.2fx the kernel's\n",
	       bench_median(rdma.p99, n), bench_median(rpc_p99, n), bench_median(tcp_p99, n),
	       bench_median(rdma.p99, n) / bench_median(tcp_p99, n),
	       bench_median(rpc_p99, n) / bench_median(tcp_p99, n));
	printf("  64 B calls, %u in flight: droce RDMA %.0f calls/s, droce TCP %.0f calls/s, kernel TCP pipeline %.0f msg/s: RDMA %.2fx and TCP %.2fx the kernel's\n",
	       BENCH_RPC_WINDOW, bench_median(rdma.rate, n), bench_median(rw, n),
	       bench_median(tr, n), bench_median(rdma.rate, n) / bench_median(tr, n),
	       bench_median(rw, n) / bench_median(tr, n));
	printf("  one-way async 64 B over TCP: %.0f calls/s vs TCP pipeline %.0f msg/s = %.2fx\n",
	       bench_median(rr, n), bench_median(tr, n), bench_median(rr, n) / bench_median(tr, n));
	ret = 0;
out:
	if (client != 0)
		OckRpcClientDisconnect(client);
	close(to_child[1]);     /* the server ends */
	close(to_parent[0]);
	if (pid > 0 && waitpid(pid, &status, 0) < 0)
		kill(pid, SIGKILL);
	return ret;
}
