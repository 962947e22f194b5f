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

/* Connect to @p ip:@p port and open a session there (HELLO, WELCOME):
 * the connection in @p link, for rpc_rdma_bind(), and the server's
 * segment size.
 */
OckRpcStatus rpc_rdma_connect(const char *ip, uint16_t port, const struct rpc_conf *conf,
			      struct rpc_rdma_link **link, uint32_t *server_max);
/* Give @p s the connection @p link, before it is adopted. */
void rpc_rdma_bind(struct rpc_session *s, struct rpc_rdma_link *link);
/* A connection that never became a session's. */
void rpc_rdma_link_free(struct rpc_rdma_link *link);

#endif /* DROCE_RPC_RDMA_H */
