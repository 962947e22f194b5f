/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RPC_RDMA_H
#define DROCE_RPC_RDMA_H

/*
 * The RDMA transport: droce's RC (lib/rc) over the process's own droce
 * stack, connected by lib/cm (the RPC port is the rdma_cm port). A
 * session's frames travel as one byte stream cut into SENDs, as rsockets
 * carries a stream over RC.
 */

#include <sys/queue.h>

#include "droce_rc.h"
#include "rpc_private.h"

extern const struct rpc_transport_ops rpc_rdma_ops;

/* Listen on srv->ip:srv->port (0: one of the range) through the CM of
 * the droce port that has that address; sessions go to the engine's
 * workers, the CM's events to its first.
 */
OckRpcStatus rpc_rdma_listen(struct rpc_server *srv);
/* Stop taking sessions; returns when the worker has let go of it. */
void rpc_rdma_unlisten(struct rpc_server *srv);
/* After the engine ended: what the listener still holds. */
void rpc_rdma_listener_free(struct rpc_server *srv);

/* Connect to @p ip:@p port and open a session there (HELLO, WELCOME),
 * through @p tls if not NULL: the connection in @p link, for
 * rpc_rdma_bind(), and the server's segment size.
 */
OckRpcStatus rpc_rdma_connect(const char *ip, uint16_t port, const struct rpc_conf *conf,
			      struct rpc_tls *tls, struct rpc_rdma_link **link,
			      uint32_t *server_max);
/* Give @p s the connection @p link, before it is adopted. */
void rpc_rdma_bind(struct rpc_session *s, struct rpc_rdma_link *link);
/* A connection that never became a session's. */
void rpc_rdma_link_free(struct rpc_rdma_link *link);

/* Whether the process's droce stack runs (it starts with the first RDMA
 * server or client).
 */
bool rpc_rdma_up(void);
/* The stack, started on first use; false (logged) when it cannot run. */
bool rpc_rdma_start(void);
/* Worker @p w's rounds run on the control lcore from now on (0), or
 * -ENOSPC; and no longer, once rpc_rdma_unhost() returns.
 */
int rpc_rdma_host(struct rpc_worker *w);
void rpc_rdma_unhost(struct rpc_worker *w);
/* A task was pushed to a hosted worker: wake the control lcore if it sleeps. */
void rpc_rdma_wake(void);
/* On the control lcore of a lent stack that its application polls itself
 * (droce_stack_poll()), outside its rounds: one round of it, true. Nothing
 * else runs that stack while its thread waits, so every wait of the
 * library there drives it instead of sleeping. Elsewhere false.
 */
bool rpc_rdma_drive(void);
/* A wait's pause: a round of the stack where rpc_rdma_drive() runs one,
 * else a sleep of @p us microseconds.
 */
void rpc_rdma_pause(unsigned int us);
/* The droce port of @p s's connection. */
uint16_t rpc_rdma_port(const struct rpc_session *s);
/* @p len bytes at @p addr registered on droce port @p port for local and
 * remote access (NULL, logged, when that fails); and let go: 0, or -EBUSY
 * (logged) when the port still sent from the region (zero copy) after a
 * second (at once on the control lcore): the control lcore then finishes
 * the deregistration later, and the memory must never be freed. NULL is
 * let go at once.
 */
struct droce_mr *rpc_rdma_reg(uint16_t port, void *addr, size_t len);
int rpc_rdma_dereg(struct droce_mr *mr);

/* A READ of the peer's @p remote / @p rkey into @p local, or a WRITE from
 * @p local there; @p done runs once, on the session's worker, with the
 * completion's status (DROCE_WC_SUCCESS, or why not).
 */
struct rpc_rdma_op {
	void (*done)(struct rpc_rdma_op *op, enum droce_wc_status status);
	TAILQ_ENTRY(rpc_rdma_op) waiting;
	enum droce_wr_opcode opcode;
	struct droce_sge local;
	uint64_t remote;
	uint32_t rkey;
};

/* Post @p op on @p s's QP, now or when the operations before it leave
 * room; on the session's worker. On a session without RDMA, or one that
 * ended, @p op is done at once with DROCE_WC_WR_FLUSH_ERR.
 */
void rpc_rdma_post(struct rpc_session *s, struct rpc_rdma_op *op);

#endif /* DROCE_RPC_RDMA_H */
