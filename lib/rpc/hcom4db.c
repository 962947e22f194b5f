/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The hcom4db.h functions over lib/rpc's sessions. Handles are pointers:
 * an OckRpcServer is a struct rpc_server, an OckRpcClient a session (the
 * client's own, or on a server the one a client opened), an
 * OckRpcServerContext a struct rpc_ctx.
 *
 * Servers have their own workers (worker.thread.groups); the clients of
 * a process share one worker, started with the first of them.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_log.h>

#include "rpc_private.h"
#include "rpc_rdma.h"
#include "rpc_tcp.h"
#include "rpc_tls.h"

RTE_LOG_REGISTER(rpc_logtype, droce.rpc, INFO);

/* ---- the external logger ---------------------------------------------------------- */

static _Atomic(OckRpcLogHandler) log_handler;
static FILE *log_stream;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* DPDK's log levels (1 emergency .. 8 debug) as hcom4db's 0 debug .. 3 error. */
static int
hcom_level(uint32_t rte_level)
{
	if (rte_level >= RTE_LOG_DEBUG)
		return 0;
	if (rte_level >= RTE_LOG_NOTICE)
		return 1;
	if (rte_level == RTE_LOG_WARNING)
		return 2;
	return 3;
}

/* The log stream's writes: one line each (the stream is line-buffered). */
static ssize_t
log_write(void *cookie, const char *buf, size_t size)
{
	OckRpcLogHandler h = atomic_load(&log_handler);
	char line[1024];
	size_t n = RTE_MIN(size, sizeof(line) - 1);

	(void)cookie;
	memcpy(line, buf, n);
	while (n != 0 && line[n - 1] == '\n')
		n--;
	line[n] = '\0';
	if (h != NULL)
		h(hcom_level((uint32_t)rte_log_cur_msg_loglevel()), line);
	return (ssize_t)size;
}

void
OckRpcSetExternalLogger(OckRpcLogHandler h)
{
	static const cookie_io_functions_t io = { .write = log_write };

	pthread_mutex_lock(&log_lock);
	atomic_store(&log_handler, h);
	if (h != NULL && log_stream == NULL) {
		log_stream = fopencookie(NULL, "w", io);
		if (log_stream != NULL) {
			setvbuf(log_stream, NULL, _IOLBF, 0);
			rte_openlog_stream(log_stream);
		}
	} else if (h == NULL && log_stream != NULL) {
		/* The stream stays: a worker may be writing to it now. */
		rte_openlog_stream(NULL);
	} else if (h != NULL) {
		rte_openlog_stream(log_stream);
	}
	pthread_mutex_unlock(&log_lock);
}

/* openGauss looks this one up by name and does without it where it is
 * missing; it is OckRpcSetExternalLogger under an older name.
 */
void Hcom4dbSetLogFunc(OckRpcLogHandler h);

void
Hcom4dbSetLogFunc(OckRpcLogHandler h)
{
	OckRpcSetExternalLogger(h);
}

/* ---- servers -------------------------------------------------------------------------- */

static struct rpc_server *
server_of(OckRpcServer h)
{
	return (struct rpc_server *)h;
}

static struct rpc_session *
session_of(OckRpcClient h)
{
	return (struct rpc_session *)h;
}

static struct rpc_ctx *
ctx_of(OckRpcServerContext h)
{
	return (struct rpc_ctx *)h;
}

OckRpcStatus
OckRpcServerCreateWithCfg(const char *ip, uint16_t port, OckRpcServer *server,
			  OckRpcCreateConfig *configs)
{
	struct rpc_server *srv;
	OckRpcStatus st;

	if (ip == NULL || server == NULL) {
		RPC_LOG(ERR, "server create: no %s", ip == NULL ? "address" : "place for the server");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (port != 0 && port < 1024) {
		RPC_LOG(ERR, "server create: port %u: 0 (one of server.create.range) or 1024..65535",
			port);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	st = rpc_conf_read(configs, false, &srv->conf);
	if (st != OCK_RPC_OK) {
		free(srv);
		return st;
	}
	/* Its certificate and key are loaded now (the passphrase erased). */
	if (srv->conf.tls) {
		char who[96];

		snprintf(who, sizeof(who), "server %s", srv->conf.name);
		srv->tls = rpc_tls_ctx_new(&srv->conf, true, who, &st);
		if (srv->tls == NULL) {
			free(srv);
			return st;
		}
	}
	snprintf(srv->ip, sizeof(srv->ip), "%s", ip);
	srv->port = port;
	srv->listen_fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	TAILQ_INIT(&srv->sessions);
	TAILQ_INIT(&srv->opening);
	atomic_init(&srv->nb_sessions, 0);
	*server = (OckRpcServer)(uintptr_t)srv;
	return OCK_RPC_OK;
}

bool
OckRpcGetOobIpAndPort(OckRpcServer server, char ***ipArray, uint16_t **portArray, int *length)
{
	struct rpc_server *srv = server_of(server);
	char **ips;
	uint16_t *ports;

	if (srv == NULL || ipArray == NULL || portArray == NULL || length == NULL)
		return false;
	ips = malloc(sizeof(*ips));
	ports = malloc(sizeof(*ports));
	if (ips == NULL || ports == NULL || (ips[0] = strdup(srv->ip)) == NULL) {
		free(ips);
		free(ports);
		return false;
	}
	ports[0] = srv->port;
	*ipArray = ips;
	*portArray = ports;
	*length = 1;
	return true;
}

OckRpcStatus
OckRpcServerAddService(OckRpcServer server, OckRpcService *service)
{
	struct rpc_server *srv = server_of(server);

	if (srv == NULL || service == NULL || service->handler == NULL ||
	    service->id > RPC_SERVICE_MAX) {
		RPC_LOG(ERR, "add service: %s", srv == NULL ? "no server" : service == NULL ? "no service"
			: service->handler == NULL ? "no handler" : "ids are 0..999");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	atomic_store_explicit(&srv->services[service->id], service->handler, memory_order_release);
	return OCK_RPC_OK;
}

OckRpcStatus
OckRpcServerAddRndvService(OckRpcServer server, OckRpcRndvService *service)
{
	struct rpc_server *srv = server_of(server);

	if (srv == NULL || service == NULL || service->handler == NULL ||
	    service->id > RPC_SERVICE_MAX)
		return OCK_RPC_ERR_INVALID_PARAM;
	if (!srv->conf.rndv) {
		RPC_LOG(ERR, "server %s: rendezvous service %u needs %s=yes", srv->conf.name,
			service->id, OCK_RPC_STR_ENABLE_SEND_RNDV);
		return OCK_RPC_ERR_RDMA_NOT_ENABLE;
	}
	atomic_store_explicit(&srv->rndv_services[service->id], service->handler,
			      memory_order_release);
	return OCK_RPC_OK;
}

OckRpcStatus
OckRpcServerStart(OckRpcServer server)
{
	struct rpc_server *srv = server_of(server);
	OckRpcStatus st;
	int ret;

	if (srv == NULL)
		return OCK_RPC_ERR_INVALID_PARAM;
	if (srv->started) {
		RPC_LOG(ERR, "server %s: started already", srv->conf.name);
		return OCK_RPC_ERR;
	}
	/* An RDMA server's workers run on the stack's control lcore. */
	if (srv->conf.type == RPC_TRANSPORT_RDMA && !rpc_rdma_start())
		return OCK_RPC_ERR_RDMA_NOT_ENABLE;
	ret = rpc_engine_create(&srv->conf, srv->conf.name, &srv->engine);
	if (ret != 0)
		return ret == -ENOMEM ? OCK_RPC_ERR_NO_MEMORY : OCK_RPC_ERR;
	st = srv->conf.type == RPC_TRANSPORT_RDMA ? rpc_rdma_listen(srv) : rpc_tcp_listen(srv);
	if (st != OCK_RPC_OK) {
		rpc_engine_destroy(srv->engine);
		srv->engine = NULL;
		return st;
	}
	srv->started = true;
	return OCK_RPC_OK;
}

/* Under the server's lock. */
static void
opening_remove(struct rpc_server *srv, struct rpc_session *s)
{
	if (!s->opening)
		return;
	TAILQ_REMOVE(&srv->opening, s, opening_link);
	s->opening = false;
	srv->nb_opening--;
}

int
rpc_server_session_opened(struct rpc_server *srv, struct rpc_session *s, const char *info)
{
	pthread_mutex_lock(&srv->lock);
	opening_remove(srv, s);
	pthread_mutex_unlock(&srv->lock);
	s->announced = true;
	if (srv->conf.on_new == NULL)
		return 0;
	return srv->conf.on_new((OckRpcClient)(uintptr_t)s,
				atomic_load_explicit(&s->up_ctx, memory_order_relaxed), info);
}

void
rpc_server_session_add(struct rpc_server *srv, struct rpc_session *s)
{
	pthread_mutex_lock(&srv->lock);
	TAILQ_INSERT_TAIL(&srv->sessions, s, server_link);
	atomic_fetch_add(&srv->nb_sessions, 1);
	TAILQ_INSERT_TAIL(&srv->opening, s, opening_link);
	s->opening = true;
	srv->nb_opening++;
	pthread_mutex_unlock(&srv->lock);
}

bool
rpc_server_admit(struct rpc_server *srv)
{
	struct rpc_session *oldest = NULL;

	pthread_mutex_lock(&srv->lock);
	/* Those ended for room hold their memory until their ends run. */
	if (srv->nb_dropping >= RPC_OPENING_MAX) {
		pthread_mutex_unlock(&srv->lock);
		return false;
	}
	if (srv->nb_opening >= RPC_OPENING_MAX) {
		/* Held past the lock: its end may run here, and take it. */
		oldest = TAILQ_FIRST(&srv->opening);
		opening_remove(srv, oldest);
		oldest->dropped = true;
		srv->nb_dropping++;
		rpc_session_ref(oldest);
	}
	pthread_mutex_unlock(&srv->lock);
	if (oldest != NULL) {
		rpc_count(RPC_OPENINGS_DROPPED, 1);
		rpc_session_end(oldest, OCK_RPC_ERR_CONN_BROKEN, true);
		rpc_session_unref(oldest);
	}
	return true;
}

void
rpc_server_session_ended(struct rpc_server *srv, struct rpc_session *s)
{
	pthread_mutex_lock(&srv->lock);
	TAILQ_REMOVE(&srv->sessions, s, server_link);
	opening_remove(srv, s);
	if (s->dropped)
		srv->nb_dropping--;
	pthread_mutex_unlock(&srv->lock);
	if (atomic_fetch_sub(&srv->nb_sessions, 1) == 1)
		rpc_wake_state(&srv->nb_sessions);
}

void
OckRpcServerDestroy(OckRpcServer server)
{
	struct rpc_server *srv = server_of(server);
	struct rpc_session *s;

	if (srv == NULL)
		return;
	if (srv->engine != NULL) {
		for (unsigned int i = 0; i < srv->engine->nb_workers; i++)
			if (rpc_worker_would_wait_for(&srv->engine->workers[i])) {
				RPC_LOG(ERR, "server %s: destroyed from a handler that runs where its sessions do (its own worker, or droce's control lcore for RDMA); it cannot wait for them",
					srv->conf.name);
				return;
			}
		rpc_tcp_unlisten(srv);
		rpc_rdma_unlisten(srv);
	}
	/* Every session ends on its worker (its break handler runs there);
	 * then the workers stop.
	 */
	pthread_mutex_lock(&srv->lock);
	TAILQ_FOREACH(s, &srv->sessions, server_link)
		rpc_session_end(s, OCK_RPC_ERR_CONN_BROKEN, false);
	pthread_mutex_unlock(&srv->lock);
	rpc_wait_zero(&srv->nb_sessions);
	rpc_engine_destroy(srv->engine);
	rpc_rdma_listener_free(srv);
	rpc_tls_ctx_free(srv->tls);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}

/* ---- contexts and replies --------------------------------------------------------------- */

OckRpcStatus
OckRpcServerReply(OckRpcServerContext ctx, uint16_t msgId, OckRpcMessage *reply,
		  OckRpcCallDone *done)
{
	if (ctx == 0 || msgId > RPC_SERVICE_MAX || (done != NULL && done->cb == NULL)) {
		RPC_LOG(ERR, "reply: %s", ctx == 0 ? "no context" : msgId > RPC_SERVICE_MAX
			? "ids are 0..999" : "a done without a callback");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	return rpc_ctx_reply(ctx_of(ctx), msgId, reply, done);
}

OckRpcStatus
OckRpcServerReplyRndv(OckRpcServerRndvContext ctx, uint16_t msgId, OckRpcMessage *reply,
		      OckRpcCallDone *done)
{
	return OckRpcServerReply((OckRpcServerContext)ctx, msgId, reply, done);
}

int
OckRpcGetClient(OckRpcServerContext ctx, OckRpcClient *client)
{
	if (ctx == 0 || client == NULL)
		return OCK_RPC_ERR_INVALID_PARAM;
	*client = (OckRpcClient)(uintptr_t)ctx_of(ctx)->s;
	return OCK_RPC_OK;
}

int
OckRpcGetRndvClient(OckRpcServerRndvContext ctx, OckRpcClient *client)
{
	return OckRpcGetClient((OckRpcServerContext)ctx, client);
}

OckRpcServerContext
OckRpcCloneCtx(OckRpcServerContext ctx)
{
	if (ctx == 0 || !rpc_ctx_clone(ctx_of(ctx)))
		return 0;
	return ctx;
}

void
OckRpcDeCloneCtx(OckRpcServerContext ctx)
{
	if (ctx != 0)
		rpc_ctx_unref(ctx_of(ctx));
}

void
OckRpcServerCleanupCtx(OckRpcServerContext ctx)
{
	(void)ctx;      /* contexts end with their handlers, or DeClone */
}

int
OckRpcServerCleanupRndvCtx(OckRpcServerRndvContext ctx)
{
	return ctx == 0 ? OCK_RPC_ERR_INVALID_PARAM : rpc_rndv_cleanup(ctx_of(ctx));
}

OckRpcServerContext
OckRpcServerCtxBuilderThreadLocal(OckRpcServer server)
{
	(void)server;
	return 0;
}

void
OckRpcServerCtxCleanupThreadLocal(OckRpcServer server, OckRpcServerContext ctx)
{
	(void)server;
	(void)ctx;
}

void
OckRpcDisableSecureHmac(void)
{
}

/* ---- clients ---------------------------------------------------------------------------- */

/*
 * The clients' worker, one per transport (RDMA's is hosted on the control
 * lcore, TCP's a thread): started by the first client (with its settings)
 * and stopped when the last one disconnects, so that a process whose
 * clients are gone runs no thread of ours (a library unloaded with its
 * thread still running would crash). A disconnect from the worker itself
 * (in a break handler) leaves it to the next.
 */
static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct rpc_engine *engine;
	unsigned int nb_clients;
} clients[2];                           /* [0] TCP, [1] RDMA */

static struct rpc_engine *
clients_engine_get(const struct rpc_conf *conf)
{
	unsigned int k = conf->type == RPC_TRANSPORT_RDMA;
	struct rpc_engine *e;
	struct rpc_conf one = *conf;
	char err[DROCE_ERR_LEN];

	pthread_mutex_lock(&clients_lock);
	if (clients[k].engine == NULL) {
		droce_workers_parse(&one.workers, "1", "", false, err, sizeof(err));
		if (rpc_engine_create(&one, "clients", &clients[k].engine) != 0)
			clients[k].engine = NULL;
	}
	e = clients[k].engine;
	if (e != NULL)
		clients[k].nb_clients++;
	pthread_mutex_unlock(&clients_lock);
	return e;
}

static void
clients_engine_put(const struct rpc_engine *e)
{
	struct rpc_worker *me = rpc_worker_self();
	struct rpc_engine *gone = NULL;
	unsigned int k = e->hosted;

	pthread_mutex_lock(&clients_lock);
	if (--clients[k].nb_clients == 0 && (me == NULL || me->engine != clients[k].engine)) {
		gone = clients[k].engine;
		clients[k].engine = NULL;
	}
	pthread_mutex_unlock(&clients_lock);
	/* Outside the lock: a hosted engine's end waits for a control round,
	 * whose handlers may connect or disconnect meanwhile.
	 */
	rpc_engine_destroy(gone);
}

OckRpcStatus
OckRpcClientConnectWithCfg(const char *ip, uint16_t port, OckRpcClient *client,
			   OckRpcCreateConfig *configs)
{
	struct rpc_conf conf;
	struct rpc_engine *e;
	struct rpc_session *s;
	struct rpc_rdma_link *link = NULL;
	struct rpc_tls *tls = NULL;
	uint32_t server_max;
	char peer[64];
	OckRpcStatus st;
	int fd = -1;

	if (ip == NULL || client == NULL || port == 0) {
		RPC_LOG(ERR, "connect: %s", ip == NULL ? "no address" : client == NULL
			? "no place for the client" : "port 0");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	st = rpc_conf_read(configs, true, &conf);
	if (st != OCK_RPC_OK)
		return st;
	if (conf.type == RPC_TRANSPORT_RDMA && !rpc_rdma_start())
		return OCK_RPC_ERR_RDMA_NOT_ENABLE;
	snprintf(peer, sizeof(peer), "%s:%u", ip, port);
	/* A connect's own certificate and key, loaded for it. */
	if (conf.tls) {
		char who[160];
		struct rpc_tls_ctx *c;

		snprintf(who, sizeof(who), "connect to %s (server %s)", peer, conf.name);
		c = rpc_tls_ctx_new(&conf, false, who, &st);
		if (c == NULL)
			return st;
		tls = rpc_tls_new(c, false);
		rpc_tls_ctx_free(c);
		if (tls == NULL)
			return OCK_RPC_ERR_NO_MEMORY;
	}
	e = clients_engine_get(&conf);
	if (e == NULL) {
		rpc_tls_free(tls);
		return OCK_RPC_ERR_NO_MEMORY;
	}
	if (conf.type == RPC_TRANSPORT_RDMA)
		st = rpc_rdma_connect(ip, port, &conf, tls, &link, &server_max);
	else
		st = rpc_tcp_connect(ip, port, &conf, tls, &fd, &server_max);
	if (st != OCK_RPC_OK) {
		rpc_tls_free(tls);
		clients_engine_put(e);
		return st;
	}
	s = rpc_session_new(rpc_engine_pick(e), fd, true, &conf, peer);
	if (s == NULL) {
		if (fd >= 0)
			close(fd);
		rpc_rdma_link_free(link);
		rpc_tls_free(tls);
		clients_engine_put(e);
		return OCK_RPC_ERR_NO_MEMORY;
	}
	s->tls = tls;
	if (link != NULL)
		rpc_rdma_bind(s, link);
	s->peer_max_payload = server_max;
	/* A client hears of its session's break if it gave a handler. */
	s->announced = conf.on_break != NULL;
	rpc_session_ref(s);     /* the application's, until it disconnects */
	rpc_session_counted_open(s);
	rpc_session_adopt(s);
	*client = (OckRpcClient)(uintptr_t)s;
	return OCK_RPC_OK;
}

void
OckRpcClientDisconnect(OckRpcClient client)
{
	struct rpc_session *s = session_of(client);
	struct rpc_engine *e;

	if (s == NULL || !s->client)
		return;
	e = s->w->engine;
	/* Asked for: the break handler does not run. */
	rpc_session_end(s, OCK_RPC_ERR_CONN_BROKEN, true);
	rpc_session_unref(s);
	clients_engine_put(e);
}

void
OckRpcClientDisconnectBreakHandler(OckRpcClient client)
{
	OckRpcClientDisconnect(client);
}

int
OckRpcSetUpCtx(OckRpcClient client, uint64_t ctx)
{
	if (client == 0)
		return OCK_RPC_ERR_INVALID_PARAM;
	atomic_store(&session_of(client)->up_ctx, ctx);
	return OCK_RPC_OK;
}

int
OckRpcGetUpCtx(OckRpcClient client, uint64_t *ctx)
{
	if (client == 0 || ctx == NULL)
		return OCK_RPC_ERR_INVALID_PARAM;
	*ctx = atomic_load(&session_of(client)->up_ctx);
	return OCK_RPC_OK;
}

/* Longer than this is never (about 31 years; nanoseconds stay in 64 bits). */
#define TIMEOUT_MS_MAX 1000000000000ll

void
OckRpcClientSetTimeout(OckRpcClient client, int64_t timeout)
{
	if (client != 0 && session_of(client)->client)
		atomic_store(&session_of(client)->timeout_ms,
			     timeout > TIMEOUT_MS_MAX ? -1 : timeout);
}

/* ---- calls ---------------------------------------------------------------------------- */

/* How the caller wants its answer: none, allocated, or into buffers. */
static OckRpcStatus
response_mode(OckRpcMessage *rsp, size_t count, struct rpc_call *c)
{
	c->response = rsp;
	c->response_count = count;
	if (rsp == NULL || count == 0) {
		c->mode = RESPONSE_NONE;
		return OCK_RPC_OK;
	}
	if (count == 1 && rsp->data == NULL && rsp->len == 0) {
		c->mode = RESPONSE_ALLOC;
		return OCK_RPC_OK;
	}
	for (size_t i = 0; i < count; i++)
		if (rsp[i].data == NULL && rsp[i].len != 0)
			return OCK_RPC_ERR_INVALID_PARAM;
	c->mode = count == 1 ? RESPONSE_BUFFER : RESPONSE_IOV;
	return OCK_RPC_OK;
}

/* What a call carries: pieces of bytes, or rendezvous descriptors (and,
 * sealed, the buffers the call then owns).
 */
struct call_body {
	const OckRpcMessage *pieces;
	size_t count;
	const struct rpc_rndv *rndv;
	unsigned int nb_rndv;
	struct rpc_sealed *const *sealed;
};

/* A call that will not be made gives its sealed buffers back. */
static void
drop_sealed(struct rpc_session *s, const struct call_body *body)
{
	for (unsigned int i = 0; body->sealed != NULL && i < body->nb_rndv; i++)
		rpc_sealed_put(s, body->sealed[i]);
}

/* A rendezvous call's frame: the descriptors. */
static OckRpcStatus
build_rndv_request(struct rpc_session *s, struct rpc_call *c, uint16_t service,
		   const struct call_body *body)
{
	struct rpc_frame f = { .kind = RPC_REQUEST, .service = service, .flags = RPC_FLAG_RNDV,
			       .rndv_count = (uint8_t)body->nb_rndv };

	if (body->sealed != NULL)
		f.flags |= RPC_FLAG_SEALED;
	f.payload_len = body->nb_rndv * rpc_rndv_desc_size(f.flags);
	if (c->mode != RESPONSE_NONE)
		f.flags |= RPC_FLAG_WANT_RESPONSE;
	f.seq = atomic_fetch_add_explicit(&s->next_seq, 1, memory_order_relaxed);
	c->seq = f.seq;
	c->out = rpc_out_alloc(RPC_FRAME_HDR_SIZE + f.payload_len);
	if (c->out == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	rpc_frame_encode(&f, c->out->buf);
	rpc_rndv_encode(body->rndv, body->nb_rndv, f.flags, c->out->buf + RPC_FRAME_HDR_SIZE);
	return OCK_RPC_OK;
}

/* The call's frame: its header and the pieces one after another. */
static OckRpcStatus
build_request(struct rpc_session *s, struct rpc_call *c, uint16_t service,
	      const struct call_body *body)
{
	struct rpc_frame f = { .kind = RPC_REQUEST, .service = service };
	const OckRpcMessage *pieces = body->pieces;
	size_t count = body->count;
	uint64_t total = 0;
	uint8_t *p;

	uint32_t max = RTE_MIN(s->max_payload, s->peer_max_payload);

	if (body->nb_rndv != 0)
		return build_rndv_request(s, c, service, body);

	/* Each piece on its own first: no sum of lengths can wrap. */
	for (size_t i = 0; i < count; i++) {
		if ((pieces[i].len != 0 && pieces[i].data == NULL) || pieces[i].len > max)
			total = UINT64_MAX;
		else
			total += pieces[i].len;
		if (total > max) {
			RPC_LOG(ERR, "call to service %u: a request of more than %" PRIu32
				" bytes (the segment size; the server's %" PRIu32 "), or a piece without data",
				service, s->max_payload, s->peer_max_payload);
			return OCK_RPC_ERR_INVALID_PARAM;
		}
	}
	f.payload_len = (uint32_t)total;
	f.flags = c->mode != RESPONSE_NONE ? RPC_FLAG_WANT_RESPONSE : 0;
	f.seq = atomic_fetch_add_explicit(&s->next_seq, 1, memory_order_relaxed);
	c->seq = f.seq;
	c->out = rpc_out_alloc(RPC_FRAME_HDR_SIZE + total);
	if (c->out == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	rpc_frame_encode(&f, c->out->buf);
	p = c->out->buf + RPC_FRAME_HDR_SIZE;
	for (size_t i = 0; i < count; i++) {
		if (pieces[i].len != 0)
			memcpy(p, pieces[i].data, pieces[i].len);
		p += pieces[i].len;
	}
	return OCK_RPC_OK;
}

/* A synchronous call's wait: its end, or its deadline (then given up). */
static OckRpcStatus
wait_call(struct rpc_call *c)
{
	const unsigned int done = 1u << CALL_DONE;
	int state = rpc_wait_state(&c->state, done, c->deadline_ns);
	OckRpcStatus st;

	while (state != CALL_DONE) {
		if (state == CALL_ANSWERING) {
			/* Its result is being written: it comes at once. */
			state = rpc_wait_state(&c->state, done, 0);
			continue;
		}
		if (atomic_compare_exchange_strong(&c->state, &state, CALL_ABANDONED)) {
			rpc_count(RPC_ERR_TIMEOUT, 1);
			return OCK_RPC_ERR_UCP_TIMEOUT;   /* the worker frees it */
		}
	}
	st = c->status;
	rpc_call_release(c);
	return st;
}

static OckRpcStatus
start_call(struct rpc_session *s, uint16_t service, const struct call_body *body,
	   OckRpcMessage *rsp, size_t rsp_count, const OckRpcCallDone *done)
{
	int64_t timeout = atomic_load(&s->timeout_ms);
	struct rpc_call *c;
	OckRpcStatus st;
	bool async;

	if (service > RPC_SERVICE_MAX || (done != NULL && done->cb == NULL)) {
		RPC_LOG(ERR, "call: %s", service > RPC_SERVICE_MAX ? "ids are 0..999"
			: "a done without a callback");
		drop_sealed(s, body);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (done == NULL && rpc_worker_would_wait_for(s->w)) {
		RPC_LOG(ERR, "call to service %u: a synchronous call from where the session runs (its own worker, or droce's control lcore for RDMA) would wait for itself",
			service);
		drop_sealed(s, body);
		return OCK_RPC_ERR;
	}
	c = rpc_obj_get(RPC_OBJ_CALL);
	if (c == NULL) {
		drop_sealed(s, body);
		return OCK_RPC_ERR_NO_MEMORY;
	}
	memset(c, 0, sizeof(*c));
	st = response_mode(rsp, rsp_count, c);
	if (st == OCK_RPC_OK)
		st = build_request(s, c, service, body);
	if (st != OCK_RPC_OK) {
		drop_sealed(s, body);
		rpc_out_free(c->out);
		rpc_obj_put(RPC_OBJ_CALL, c);
		return st;
	}
	/* The call's from now on: they go back when it is freed. */
	for (unsigned int i = 0; body->sealed != NULL && i < body->nb_rndv; i++)
		c->sealed[i] = body->sealed[i];
	c->async = done != NULL;
	if (done != NULL)
		c->done = *done;
	if (timeout >= 0)
		c->deadline_ns = rpc_now_ns() + (uint64_t)timeout * 1000000ull;
	/* An asynchronous call is the worker's once handed over. */
	async = c->async;
	st = rpc_session_call(s, c);
	if (st != OCK_RPC_OK) {
		drop_sealed(s, body);
		rpc_out_free(c->out);
		rpc_obj_put(RPC_OBJ_CALL, c);
		return st;
	}
	return async ? OCK_RPC_OK : wait_call(c);
}

OckRpcStatus
OckRpcClientCall(OckRpcClient client, uint16_t msgId, OckRpcMessage *request,
		 OckRpcMessage *response, OckRpcCallDone *done)
{
	if (client == 0 || request == NULL || !session_of(client)->client) {
		RPC_LOG(ERR, "call: %s", client == 0 ? "no client" : request == NULL ? "no request"
			: "a server's session is not a client");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	return start_call(session_of(client), msgId,
			  &(struct call_body){ .pieces = request, .count = 1 }, response, 1, done);
}

OckRpcStatus
OckRpcClientCallWithParam(OckRpcClientCallParams *params)
{
	if (params == NULL || params->client == 0 || !session_of(params->client)->client ||
	    params->reqIov.count == 0 ||
	    params->reqIov.count > 8 || params->reqIov.msgs == NULL ||
	    (params->rspIov.count != 0 && params->rspIov.msgs == NULL)) {
		RPC_LOG(ERR, "call with params: %s", params == NULL || params->client == 0
			? "no client" : "1..8 request pieces, and response buffers where counted");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	return start_call(session_of(params->client), params->msgId,
			  &(struct call_body){ .pieces = params->reqIov.msgs,
					       .count = params->reqIov.count },
			  params->rspIov.msgs, params->rspIov.count, params->done);
}

OckRpcStatus
OckRpcClientCallRndv(OckRpcClient client, uint16_t msgId, OckRpcMessageInfo *request,
		     OckRpcMessage *response, OckRpcCallDone *done)
{
	OckRpcMessageInfoIov iov = { .count = 1, .reqs = request };

	if (request == NULL) {
		RPC_LOG(ERR, "rendezvous call: no request");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	return OckRpcClientCallRndvIov(client, msgId, &iov, response, done);
}

/* On a TLS session the peer READs sealed copies of the buffers: each
 * into a buffer of the session's, its descriptor pointing there.
 */
static bool
seal_buffers(struct rpc_session *s, const OckRpcMessageInfoIov *request,
	     struct rpc_rndv desc[RPC_RNDV_MAX], struct rpc_sealed *sealed[RPC_RNDV_MAX])
{
	for (size_t i = 0; i < request->count; i++) {
		const OckRpcMessageInfo *r = &request->reqs[i];

		sealed[i] = rpc_sealed_get(s, r->size);
		if (sealed[i] == NULL ||
		    !rpc_tls_seal(s->tls, (const void *)r->lAddress, sealed[i]->mem, r->size,
				  desc[i].nonce, desc[i].tag)) {
			if (sealed[i] != NULL)
				RPC_LOG(ERR, "session with %s: sealing a rendezvous buffer failed",
					s->peer);
			for (size_t k = 0; k <= i; k++)
				if (sealed[k] != NULL)
					rpc_sealed_put(s, sealed[k]);
			return false;
		}
		desc[i].addr = (uintptr_t)sealed[i]->mem;
		desc[i].rkey = sealed[i]->mr->rkey;
	}
	return true;
}

/* The peer READs the buffers: each must lie in a memory region with its
 * key, registered on the session's droce port.
 */
OckRpcStatus
OckRpcClientCallRndvIov(OckRpcClient client, uint16_t msgId, OckRpcMessageInfoIov *request,
			OckRpcMessage *response, OckRpcCallDone *done)
{
	struct rpc_rndv desc[RPC_RNDV_MAX];
	struct rpc_sealed *sealed[RPC_RNDV_MAX];
	struct rpc_session *s = session_of(client);

	if (client == 0 || !s->client || request == NULL || request->reqs == NULL ||
	    request->count == 0 || request->count > RPC_RNDV_MAX) {
		RPC_LOG(ERR, "rendezvous call: %s", client == 0 || !s->client ? "no client"
			: "1..4 registered buffers");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (s->ops != &rpc_rdma_ops) {
		RPC_LOG(ERR, "rendezvous call to service %u: needs %s=RDMA (the peer READs the buffers)",
			msgId, OCK_RPC_STR_COMMUNICATION_TYPE);
		return OCK_RPC_ERR_RDMA_NOT_ENABLE;
	}
	for (size_t i = 0; i < request->count; i++) {
		const OckRpcMessageInfo *r = &request->reqs[i];
		struct droce_mr *mr = r->size == 0 ? NULL
				      : rpc_mr_droce(r->lKey, r->lAddress, r->size, rpc_rdma_port(s));

		if (mr == NULL) {
			RPC_LOG(ERR, "rendezvous call to service %u: buffer %zu (%" PRIu32 " bytes at 0x%" PRIxPTR
				", key 0x%" PRIx32 ") is not in a memory region with that key",
				msgId, i, r->size, r->lAddress, r->lKey);
			return OCK_RPC_ERR_INVALID_PARAM;
		}
		desc[i] = (struct rpc_rndv){ .addr = r->lAddress, .len = r->size, .rkey = mr->rkey };
	}
	if (s->tls != NULL && !seal_buffers(s, request, desc, sealed))
		return OCK_RPC_ERR_ENCRYPT;
	return start_call(s, msgId, &(struct call_body){ .rndv = desc,
							 .nb_rndv = (unsigned int)request->count,
							 .sealed = s->tls != NULL ? sealed : NULL },
			  response, 1, done);
}
