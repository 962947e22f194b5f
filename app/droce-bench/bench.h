/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_BENCH_H
#define DROCE_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hcom4db.h"

#define BENCH_MAX_ROUNDS 20
#define BENCH_MAX_SAMPLES 600

struct bench_opts {
	unsigned int seconds;    /* per side and round (packet-rate cases) */
	unsigned int rounds;
	const char *testpmd;
	char cpus[64];           /* "A,B": the two cpus both sides run on */
	bool rc_peer;            /* run as the rc case's peer process */
};

struct bench_case {
	const char *name;
	const char *what;
	int (*run)(const struct bench_opts *o);
};

/* Median of @n values, at most BENCH_MAX_SAMPLES (left as they are: the
 * samples of one side stay paired with the other sides' by index).
 */
double bench_median(const double *v, unsigned int n);

/* Seconds since an arbitrary start, from the TSC. */
double bench_now(void);

/* Allow 512-bit vectors (rte_vect_set_max_simd_bitwidth), if the CPU has
 * what droce's and DPDK's 512-bit CRCs need; false, and nothing changed,
 * if not. The caller puts the EAL's bitwidth back.
 */
bool bench_allow_512(void);

/* Kernel TCP over loopback, the baseline of the RPC and RC cases
 * (bench_rc.c): a ping-pong of BENCH_TCP_BYTES messages with a peer
 * process (round trips in TSC cycles), and the messages per second of a
 * pipeline of BENCH_TCP_RATE_COUNT of them.
 */
#define BENCH_TCP_BYTES 64
#define BENCH_TCP_RATE_COUNT 400000
bool bench_tcp_pingpong(uint64_t *rtt, unsigned int iters);
double bench_tcp_rate(void);
/* p50 and p99 of @p n round trips (TSC cycles, sorted here), in microseconds. */
void bench_percentiles(uint64_t *tsc, unsigned int n, double *p50, double *p99);

/* Port @p name, probed already, started with one queue each way of 512
 * descriptors and a pool of its own (*@p pool, NULL if none was made);
 * bench_port_down() undoes it and removes the device.
 */
int bench_port_up(const char *name, uint16_t *port_id, struct rte_mempool **pool, char *err,
		  size_t errlen);
void bench_port_down(uint16_t port_id, struct rte_mempool *pool);

int bench_rx_drop(const struct bench_opts *o);
int bench_icrc(const struct bench_opts *o);
int bench_icrc_copy(const struct bench_opts *o);
int bench_place(const struct bench_opts *o);
int bench_stream_place(const struct bench_opts *o);
int bench_stream_pps(const struct bench_opts *o);
int bench_stream_scale(const struct bench_opts *o);
int bench_stream_rpc(const struct bench_opts *o);
int bench_rc(const struct bench_opts *o);
int bench_rpc(const struct bench_opts *o);

/*
 * hcom4db calls, for rpc and rpc-tls (bench_rpc.c): a server's two
 * services (BENCH_SVC_ECHO answers with the request, BENCH_SVC_SINK takes
 * one-way calls); round trips of BENCH_TCP_BYTES-byte calls in TSC
 * cycles; and calls per second of @p count one-way calls of @p bytes
 * (at most BENCH_RPC_BYTES_MAX) and a sync call after them, -1 if one
 * failed.
 */
#define BENCH_SVC_ECHO 0
#define BENCH_SVC_SINK 1
#define BENCH_RPC_BYTES_MAX 65536
#define BENCH_RPC_WINDOW 32
struct droce_stack;
bool bench_rpc_services(OckRpcServer server);
/* Calls per second of @p count BENCH_TCP_BYTES-byte calls answered alike,
 * BENCH_RPC_WINDOW in flight; -1 if one failed.
 */
double bench_rpc_window(OckRpcClient c, unsigned int count);
/* The same over @p nb sessions, call i on session i % nb. */
double bench_rpc_window_over(const OckRpcClient *c, unsigned int nb, unsigned int count);
/* The same on one session until @p stop is set, the calls in flight then
 * answered; how many were in @p answered.
 */
double bench_rpc_window_until(OckRpcClient c, const atomic_bool *stop, uint64_t *answered);
/* The stack this process's client thread polls itself (run to
 * completion): its waits for answers run its rounds; with @p yield, a
 * round with nothing to do gives the cpu to whoever shares it.
 */
void bench_rpc_stepped(struct droce_stack *s, bool yield);
/* One such wait. */
void bench_rpc_idle(void);
bool bench_rpc_pingpong(OckRpcClient c, uint64_t *rtt, unsigned int iters);
double bench_rpc_rate(OckRpcClient c, size_t bytes, unsigned int count);
int bench_rpc_tls(const struct bench_opts *o);
/* Over RDMA (rpc-tls's two processes on net_memif, the client run to
 * completion): per round, p50 and p99 of 64-byte round trips (us) and
 * calls/s with BENCH_RPC_WINDOW in flight.
 */
struct bench_rdma_rtt {
	double p50[BENCH_MAX_ROUNDS], p99[BENCH_MAX_ROUNDS], rate[BENCH_MAX_ROUNDS];
};
int bench_rpc_rdma_rtt(const struct bench_opts *o, struct bench_rdma_rtt *f);
/* rpc-scale: calls/s over 1, 100 and 1000 RDMA sessions of one client
 * thread, and the memory an idle session takes on either side.
 */
int bench_rpc_scale(const struct bench_opts *o);
/*
 * The server side of rpc-tls over RDMA alone (both its servers, TLS and
 * plaintext, their certificates made for it), at @p ip on a droce stack
 * of its own, the server end of a net_memif pair at @p sock: a process of
 * this program whose one thread polls on @p cpu and gives it away while
 * it has nothing to do, for a cpu that this process's client shares
 * (stream-rpc).
 */
struct bench_rdma_server {
	pid_t pid;
	int in;                 /* its stdin (it is ended by a kill) */
	void *out;              /* its stdout (a FILE) */
	char conf[128], sock[128];
	uint16_t plain_port, secure_port;
};
int bench_rdma_server_start(struct bench_rdma_server *srv, const char *ip, unsigned int cpu);
void bench_rdma_server_stop(struct bench_rdma_server *srv);
/* rpc-tls over RDMA: this program as one of the two sides (before any EAL). */
int bench_rpc_tls_side(int argc, char **argv);
/* The other process of the rc case (droce-bench -- --rc-peer). */
int bench_rc_peer(void);

#endif /* DROCE_BENCH_H */
