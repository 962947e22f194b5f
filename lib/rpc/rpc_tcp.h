/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RPC_TCP_H
#define DROCE_RPC_TCP_H

/*
 * The kernel TCP transport: a listening socket per server, one stream
 * socket per session, frames one after another on the stream.
 */

#include "rpc_private.h"

extern const struct rpc_transport_ops rpc_tcp_ops;

/* A session's socket is readable or writable (or failed): on its worker. */
void rpc_tcp_ready(struct rpc_watch *w, uint32_t events);
/* Write what the socket takes of the session's queue. */
void rpc_tcp_flush(struct rpc_session *s);
/* A BYE, written now if the socket takes it. */
void rpc_tcp_say_bye(struct rpc_session *s);

/* Bind and listen on srv->ip:srv->port (0: one of the range) and take
 * new sessions on the engine's first worker.
 */
OckRpcStatus rpc_tcp_listen(struct rpc_server *srv);
/* Stop taking sessions; returns when the worker has let go of it. */
void rpc_tcp_unlisten(struct rpc_server *srv);

/* Connect to @p ip:@p port and open a session there as @p conf says
 * (the server's name, our info and segment size), through @p tls if not
 * NULL: the socket, ready for a worker, and the server's segment size.
 */
OckRpcStatus rpc_tcp_connect(const char *ip, uint16_t port, const struct rpc_conf *conf,
			     struct rpc_tls *tls, int *fd, uint32_t *server_max);

#endif /* DROCE_RPC_TCP_H */
