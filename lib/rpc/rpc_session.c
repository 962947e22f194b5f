/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * A session: one connection between a client and a server, run by one
 * worker. Frames come in whole from the transport (rpc_tcp.c, rpc_rdma.c) and are
 * taken here by kind; what goes out is queued and written by the
 * transport. Calls and replies from other threads arrive as tasks.
 *
 * A call ends exactly once (finish_call()): its response, its deadline,
 * the session's end, or, for a synchronous call, its caller giving up
 * first (CALL_ABANDONED; the worker then frees it when it would have
 * answered). An asynchronous call's done callback runs at that end; the
 * API returned OK for it, so it always runs.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "rpc_private.h"
#include "rpc_tcp.h"
#include "rpc_tls.h"

/* ---- lifetime ------------------------------------------------------------------- */

struct rpc_session *
rpc_session_new(struct rpc_worker *w, int fd, bool client, const struct rpc_conf *conf,
		const char *peer)
{
	struct rpc_session *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->w = w;
	s->fd = fd;
	s->ops = &rpc_tcp_ops;
	s->client = client;
	s->state = client ? SESSION_OPEN : SESSION_HELLO;
	s->max_payload = conf->segsize;
	s->peer_max_payload = conf->segsize;
	s->heartbeat_idle_s = conf->heartbeat_idle_s;
	s->on_break = conf->on_break;
	STAILQ_INIT(&s->out);
	TAILQ_INIT(&s->calls);
	TAILQ_INIT(&s->sealed_ops);
	pthread_mutex_init(&s->sealed_lock, NULL);
	atomic_init(&s->up_ctx, 0);
	atomic_init(&s->timeout_ms, -1);
	atomic_init(&s->in_flight, 0);
	s->max_in_flight = conf->segcount != 0 ? (int)conf->segcount : RPC_DEFAULT_IN_FLIGHT;
	atomic_init(&s->refs, 1);       /* the worker's, until it ends */
	atomic_init(&s->ending, false);
	atomic_init(&s->next_seq, 1);
	atomic_init(&s->end_queued, false);
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	rpc_engine_ref(w->engine);
	return s;
}

void
rpc_session_counted_open(struct rpc_session *s)
{
	s->counted_open = true;
	rpc_count(RPC_SESSIONS_OPENED, 1);
}

void
rpc_session_ref(struct rpc_session *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void
rpc_session_unref(struct rpc_session *s)
{
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	rpc_engine_unref(s->w->engine);
	rpc_sealed_pool_free(s);
	pthread_mutex_destroy(&s->sealed_lock);
	rpc_tls_free(s->tls);
	free(s->rx);
	free(s);
}

bool
rpc_session_rx_room(struct rpc_session *s, size_t need)
{
	uint8_t *b;
	size_t cap;

	if (need <= s->rx_cap)
		return true;
	cap = RTE_MAX(need, s->rx_cap * 2);
	cap = RTE_MIN(cap, (size_t)RPC_FRAME_HDR_SIZE + s->max_payload);
	cap = RTE_MAX(cap, need);
	b = realloc(s->rx, cap);
	if (b == NULL)
		return false;
	s->rx = b;
	s->rx_cap = cap;
	return true;
}

/* In order; the rest moves to the buffer's start. */
void
rpc_session_take_frames(struct rpc_session *s)
{
	size_t off = 0;

	while (s->state != SESSION_ENDED) {
		struct rpc_frame f;
		size_t len;
		/* Before its HELLO a peer has said nothing it may send more for. */
		uint32_t max = s->state == SESSION_HELLO ? RPC_HELLO_MAX_PAYLOAD : s->max_payload;
		int ret = rpc_frame_decode(s->rx + off, s->rx_len - off, max, &f, &len);

		if (ret == RPC_FRAME_SHORT) {
			if (!rpc_session_rx_room(s, len)) {
				rpc_session_close(s, OCK_RPC_ERR_NO_MEMORY);
				return;
			}
			break;
		}
		if (ret != RPC_FRAME_OK && s->state == SESSION_HELLO && s->rx_len - off >= 2 &&
		    s->rx[off] == RPC_TLS_HANDSHAKE_RECORD && s->rx[off + 1] == 3) {
			RPC_LOG(ERR, "session with %s refused: it speaks TLS, and %s=no here",
				s->peer, OCK_RPC_STR_ENABLE_TLS);
			rpc_session_close(s, OCK_RPC_ERR_DESERIALIZE);
			return;
		}
		if (ret != RPC_FRAME_OK) {
			RPC_LOG(ERR, "session with %s: a bad frame (%s) at byte %zu of what came",
				s->peer, rpc_frame_result_str(ret), off);
			rpc_session_close(s, OCK_RPC_ERR_DESERIALIZE);
			return;
		}
		s->rx_frame_end = off + len;
		rpc_session_frame_in(s, &f, s->rx + off + RPC_FRAME_HDR_SIZE);
		if (s->rx_detached) {
			/* A clone took the buffer: the rest is at a new one's start. */
			s->rx_detached = false;
			off = 0;
			continue;
		}
		off += len;
	}
	if (s->state != SESSION_ENDED && off != 0) {
		memmove(s->rx, s->rx + off, s->rx_len - off);
		s->rx_len -= off;
	}
}

void
rpc_session_peer_alive(struct rpc_session *s)
{
	s->last_rx_ns = rpc_worker_now(s->w);
	s->probe_ns = 0;
}

void
rpc_session_bytes_in(struct rpc_session *s, const void *data, size_t len)
{
	if (s->state == SESSION_ENDED)
		return;
	if (s->tls != NULL) {
		rpc_tls_bytes_in(s, data, len);
		return;
	}
	/* Any bytes prove the peer alive, a frame's first part too. */
	rpc_session_peer_alive(s);
	if (!rpc_session_rx_room(s, s->rx_len + len)) {
		rpc_session_close(s, OCK_RPC_ERR_NO_MEMORY);
		return;
	}
	memcpy(s->rx + s->rx_len, data, len);
	s->rx_len += len;
	rpc_session_take_frames(s);
}

void
rpc_session_flush(struct rpc_session *s)
{
	/* A frame's done callback may queue another and flush: the flush
	 * under way has not yet taken the frames it wrote off the queue.
	 */
	if (s->flushing) {
		s->flush_again = true;
		return;
	}
	s->flushing = true;
	do {
		s->flush_again = false;
		if (s->tls != NULL)
			rpc_tls_flush(s);
		else
			s->ops->flush(s);
	} while (s->flush_again && s->state != SESSION_ENDED);
	s->flushing = false;
}

void
rpc_session_release(struct rpc_session *s)
{
	if (s->ops->release != NULL)
		s->ops->release(s);
}

static void
adopt_task(struct rpc_task *t)
{
	struct rpc_session *s = container_of(t, struct rpc_session, adopt_task);
	int ret;

	TAILQ_INSERT_TAIL(&s->w->sessions, s, link);
	s->last_rx_ns = rpc_worker_now(s->w);
	s->attached = true;
	rpc_worker_scan_by(s->w, s->last_rx_ns + (uint64_t)s->heartbeat_idle_s * 1000000000ull);
	rpc_session_ref(s);
	/* A server's session speaks TLS if its server does. */
	if (s->server != NULL && s->server->tls != NULL && s->tls == NULL) {
		s->tls = rpc_tls_new(s->server->tls, true);
		if (s->tls == NULL) {
			RPC_LOG(ERR, "session with %s: out of memory for its TLS", s->peer);
			rpc_session_close(s, OCK_RPC_ERR_NO_MEMORY);
			rpc_session_unref(s);
			return;
		}
	}
	ret = s->ops->attach(s);
	if (ret != 0)
		rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
	else if (s->tls != NULL)
		rpc_tls_take(s);
	rpc_session_unref(s);
}

void
rpc_session_adopt(struct rpc_session *s)
{
	s->adopt_task.run = adopt_task;
	rpc_worker_push(s->w, &s->adopt_task);
}

/* ---- sending ---------------------------------------------------------------------- */

struct rpc_out *
rpc_out_alloc(size_t len)
{
	bool cached = len <= RPC_OUT_CACHED_BYTES;
	struct rpc_out *o = cached ? rpc_obj_get(RPC_OBJ_OUT) : malloc(sizeof(*o) + len);

	if (o == NULL)
		return NULL;
	memset(o, 0, sizeof(*o));
	o->buf = o->bytes;
	o->len = len;
	o->cached = cached;
	return o;
}

void
rpc_out_free(struct rpc_out *o)
{
	if (o != NULL && o->cached)
		rpc_obj_put(RPC_OBJ_OUT, o);
	else
		free(o);
}

/* A frame of @p f with @p payload copied after its header. */
static struct rpc_out *
out_new(const struct rpc_frame *f, const void *payload)
{
	struct rpc_out *o = rpc_out_alloc(RPC_FRAME_HDR_SIZE + f->payload_len);

	if (o == NULL)
		return NULL;
	rpc_frame_encode(f, o->buf);
	if (f->payload_len != 0 && payload != NULL)
		memcpy(o->buf + RPC_FRAME_HDR_SIZE, payload, f->payload_len);
	return o;
}

static void finish_call(struct rpc_call *c, OckRpcStatus status);

/* @p o left (OK) or never will (an error): whoever waits for it hears. */
static void
out_done(struct rpc_out *o, OckRpcStatus status)
{
	if (o->call != NULL)
		finish_call(o->call, status);
	if (o->done.cb != NULL)
		o->done.cb(status, o->done.arg);
	rpc_out_free(o);
}

void
rpc_session_out_sent(struct rpc_session *s, struct rpc_out *o)
{
	(void)s;
	out_done(o, OCK_RPC_OK);
}

/* Queue @p o and write what the socket takes. On the worker. */
static void
send_out(struct rpc_session *s, struct rpc_out *o)
{
	if (s->state == SESSION_ENDED) {
		out_done(o, s->end_status);
		return;
	}
	STAILQ_INSERT_TAIL(&s->out, o, link);
	rpc_count(RPC_FRAMES_OUT, 1);
	rpc_count(RPC_BYTES_OUT, o->len);
	rpc_worker_flush_later(s->w, s);
}

void
rpc_session_send(struct rpc_session *s, const struct rpc_frame *f, const void *payload)
{
	struct rpc_out *o = out_new(f, payload);

	if (o == NULL) {
		rpc_session_close(s, OCK_RPC_ERR_NO_MEMORY);
		return;
	}
	send_out(s, o);
}

static void
send_control(struct rpc_session *s, enum rpc_kind kind, int16_t status, const void *payload,
	     uint32_t len)
{
	struct rpc_frame f = { .kind = kind, .status = status, .payload_len = len };

	rpc_session_send(s, &f, payload);
}

/* ---- opening, by a client ------------------------------------------------------- */

OckRpcStatus
rpc_session_open_client(const struct rpc_opening *plain, const struct rpc_conf *conf,
			struct rpc_tls *tls, uint32_t *server_max)
{
	const struct rpc_opening *io = plain;
	struct rpc_opening tls_io;
	const char *where = io->where;
	size_t name_len = strlen(conf->name) + 1, info_len = strlen(conf->info) + 1;
	struct rpc_frame f = { .kind = RPC_HELLO,
			       .payload_len = (uint32_t)(name_len + info_len + 4) };
	uint8_t hello[RPC_FRAME_HDR_SIZE + RPC_HELLO_MAX_PAYLOAD];
	uint8_t welcome[RPC_FRAME_HDR_SIZE + 4 * RPC_NAME_MAX];
	size_t len = RPC_FRAME_HDR_SIZE;
	uint8_t *p = hello + RPC_FRAME_HDR_SIZE;
	int ret;

	if (tls != NULL) {
		OckRpcStatus st = rpc_tls_client_open(tls, plain, &tls_io);

		if (st != OCK_RPC_OK)
			return st;
		io = &tls_io;
	}
	rpc_frame_encode(&f, hello);
	memcpy(p, conf->name, name_len);
	memcpy(p + name_len, conf->info, info_len);
	rpc_put_be32(p + name_len + info_len, conf->segsize);
	ret = io->write_all(io->arg, hello, RPC_FRAME_HDR_SIZE + f.payload_len);
	if (ret == 0) {
		rpc_count(RPC_FRAMES_OUT, 1);
		rpc_count(RPC_BYTES_OUT, RPC_FRAME_HDR_SIZE + f.payload_len);
		ret = io->read_exact(io->arg, welcome, RPC_FRAME_HDR_SIZE);
	}
	while (ret == 0) {
		size_t need;
		int got = rpc_frame_decode(welcome, len, sizeof(welcome) - RPC_FRAME_HDR_SIZE - 1,
					   &f, &need);

		if (got == RPC_FRAME_SHORT) {
			ret = io->read_exact(io->arg, welcome + len, need - len);
			len = need;
			continue;
		}
		if (got != RPC_FRAME_OK || f.kind != RPC_WELCOME ||
		    (f.status == OCK_RPC_OK && f.payload_len != 4)) {
			RPC_LOG(ERR, "connect to %s: the server's answer is not a WELCOME (%s)", where,
				got < 0 ? rpc_frame_result_str(got) : "another kind, or a bad size");
			return OCK_RPC_ERR_DESERIALIZE;
		}
		rpc_count(RPC_FRAMES_IN, 1);
		rpc_count(RPC_BYTES_IN, RPC_FRAME_HDR_SIZE + (uint64_t)f.payload_len);
		if (f.status != OCK_RPC_OK) {
			rpc_count(RPC_ERR_REFUSED, 1);
			welcome[len] = '\0';
			RPC_LOG(ERR, "connect to %s refused: %s", where,
				(const char *)welcome + RPC_FRAME_HDR_SIZE);
			return (OckRpcStatus)f.status;
		}
		*server_max = rpc_get_be32(welcome + RPC_FRAME_HDR_SIZE);
		return OCK_RPC_OK;
	}
	RPC_LOG(ERR, "connect to %s: %s", where, strerror(-ret));
	/* TLS said why already: a refusal of our certificate, say. */
	return tls != NULL && ret == -EPROTO ? OCK_RPC_ERR_ENCRYPT : OCK_RPC_ERR_CONN_UNCONNECTED;
}

/* ---- ending ----------------------------------------------------------------------- */

void
rpc_session_close(struct rpc_session *s, OckRpcStatus status)
{
	struct rpc_call *c;
	struct rpc_out *o;

	if (s->state == SESSION_ENDED)
		return;
	/* What waits to go out goes first (a refusing WELCOME, a reply), as
	 * far as the socket takes it now; a failure there ends it itself.
	 */
	if (!STAILQ_EMPTY(&s->out) && s->attached && !s->closing) {
		s->closing = true;
		rpc_session_flush(s);
		if (s->state == SESSION_ENDED)
			return;
	}
	s->state = SESSION_ENDED;
	s->end_status = status;
	if (s->counted_open)
		rpc_count_session_end(status, s->on_purpose);
	atomic_store(&s->ending, true);         /* new calls are refused at once */
	if (s->attached) {
		s->attached = false;
		s->ops->detach(s);
	}
	while ((c = TAILQ_FIRST(&s->calls)) != NULL) {
		TAILQ_REMOVE(&s->calls, c, link);
		finish_call(c, status);
	}
	rpc_one_sided_session_ended(s);
	while ((o = STAILQ_FIRST(&s->out)) != NULL) {
		STAILQ_REMOVE_HEAD(&s->out, link);
		out_done(o, status);
	}
	TAILQ_REMOVE(&s->w->sessions, s, link);
	s->w->sessions_gen++;
	if (s->announced && s->on_break != NULL)
		s->on_break((OckRpcClient)(uintptr_t)s,
			    atomic_load_explicit(&s->up_ctx, memory_order_relaxed), "");
	s->announced = false;
	if (s->server != NULL)
		rpc_server_session_ended(s->server, s);
	rpc_worker_bury(s->w, s);       /* the worker's reference */
}

static void
end_task(struct rpc_task *t)
{
	struct rpc_session *s = container_of(t, struct rpc_session, end_task);

	if (s->end_quiet)
		s->announced = false;
	s->on_purpose = true;
	/* Told it ends here: the peer hears, if it still listens. */
	if (s->state == SESSION_OPEN) {
		if (s->tls != NULL)
			rpc_tls_say_bye(s);
		else
			s->ops->say_bye(s);
	}
	rpc_session_close(s, s->end_asked);
	rpc_session_unref(s);           /* the task's */
}

void
rpc_session_end(struct rpc_session *s, OckRpcStatus status, bool quiet)
{
	bool queued = false;

	if (!atomic_compare_exchange_strong(&s->end_queued, &queued, true))
		return;
	atomic_store(&s->ending, true);
	s->end_asked = status;
	s->end_quiet = quiet;
	rpc_session_ref(s);
	s->end_task.run = end_task;
	rpc_worker_push(s->w, &s->end_task);
}

/* ---- calls ------------------------------------------------------------------------ */

static void
call_free(struct rpc_call *c)
{
	atomic_fetch_sub_explicit(&c->s->in_flight, 1, memory_order_relaxed);
	for (unsigned int i = 0; i < RPC_RNDV_MAX; i++)
		if (c->sealed[i] != NULL)
			rpc_sealed_put(c->s, c->sealed[i]);
	rpc_session_unref(c->s);
	rpc_out_free(c->out);
	rpc_obj_put(RPC_OBJ_CALL, c);
}

void
rpc_call_release(struct rpc_call *c)
{
	call_free(c);
}

/* Take @p c to write its end: false if its caller gave up on it (then
 * it is freed here).
 */
static bool
claim_call(struct rpc_call *c)
{
	int state = atomic_load_explicit(&c->state, memory_order_acquire);

	if (state != CALL_ABANDONED &&
	    atomic_compare_exchange_strong(&c->state, &state, CALL_ANSWERING))
		return true;
	call_free(c);
	return false;
}

/* The end of a claimed call: its callback, or its waiting caller. */
static void
complete_call(struct rpc_call *c, OckRpcStatus status)
{
	c->status = status;
	if (c->async) {
		OckRpcCallDone done = c->done;

		call_free(c);
		done.cb(status, done.arg);
		return;
	}
	/* The caller frees it once it sees DONE. */
	atomic_store_explicit(&c->state, CALL_DONE, memory_order_release);
	rpc_wake_state(&c->state);
}

/* The end of @p c, once, on the worker. */
static void
finish_call(struct rpc_call *c, OckRpcStatus status)
{
	if (claim_call(c))
		complete_call(c, status);
}

/* The response to @p c: into the caller's buffer or one allocated. */
static OckRpcStatus
take_response(struct rpc_call *c, const struct rpc_frame *f, const uint8_t *payload)
{
	OckRpcMessage *r = c->response;

	if (f->status != OCK_RPC_OK)
		return (OckRpcStatus)f->status;
	if (c->mode == RESPONSE_ALLOC) {
		r->data = NULL;
		r->len = f->payload_len;
		if (f->payload_len == 0)
			return OCK_RPC_OK;
		r->data = malloc(f->payload_len);
		if (r->data == NULL) {
			r->len = 0;
			return OCK_RPC_ERR_NO_MEMORY;
		}
		memcpy(r->data, payload, f->payload_len);
		return OCK_RPC_OK;
	}
	if (c->mode == RESPONSE_IOV) {
		size_t room = 0, left = f->payload_len;

		for (size_t i = 0; i < c->response_count; i++)
			room += r[i].len;
		if (left > room) {
			RPC_LOG(ERR, "session with %s: response of %" PRIu32 " bytes to call %"
				PRIu64 " (service %u) does not fit its %zu bytes of buffers",
				c->s->peer, f->payload_len, c->seq, f->service, room);
			return OCK_RPC_ERR_DESERIALIZE;
		}
		for (size_t i = 0; i < c->response_count; i++) {
			size_t take = RTE_MIN(left, r[i].len);

			if (take != 0)
				memcpy(r[i].data, payload + (f->payload_len - left), take);
			r[i].len = take;
			left -= take;
		}
		return OCK_RPC_OK;
	}
	if (f->payload_len > r->len) {
		RPC_LOG(ERR, "session with %s: response of %" PRIu32 " bytes to call %" PRIu64
			" (service %u) does not fit its %zu-byte buffer",
			c->s->peer, f->payload_len, c->seq, f->service, r->len);
		return OCK_RPC_ERR_DESERIALIZE;
	}
	if (f->payload_len != 0)
		memcpy(r->data, payload, f->payload_len);
	r->len = f->payload_len;
	return OCK_RPC_OK;
}

static void
call_answered(struct rpc_session *s, const struct rpc_frame *f, const uint8_t *payload)
{
	struct rpc_call *c;

	TAILQ_FOREACH(c, &s->calls, link)
		if (c->seq == f->seq)
			break;
	if (c == NULL)
		return;         /* late: its deadline passed */
	TAILQ_REMOVE(&s->calls, c, link);
	/* Claimed first: a caller that gave up owns its buffer again. */
	if (claim_call(c))
		complete_call(c, take_response(c, f, payload));
}

static void
call_task(struct rpc_task *t)
{
	struct rpc_call *c = container_of(t, struct rpc_call, task);
	struct rpc_session *s = c->s;
	struct rpc_out *o;
	int state = CALL_QUEUED;

	if (s->state != SESSION_OPEN) {
		finish_call(c, OCK_RPC_ERR_CONN_BROKEN);
		return;
	}
	rpc_count(RPC_CALLS_MADE, 1);
	if (!atomic_compare_exchange_strong(&c->state, &state, CALL_SENT)) {
		call_free(c);   /* abandoned before it went */
		return;
	}
	o = c->out;
	c->out = NULL;
	if (c->mode == RESPONSE_NONE) {
		o->call = c;    /* done once written */
	} else {
		TAILQ_INSERT_TAIL(&s->calls, c, link);
		if (c->deadline_ns != 0)
			rpc_worker_scan_by(s->w, c->deadline_ns);
	}
	send_out(s, o);
}

OckRpcStatus
rpc_session_call(struct rpc_session *s, struct rpc_call *c)
{
	if (atomic_load(&s->ending))
		return OCK_RPC_ERR_CONN_BROKEN;
	if (atomic_fetch_add_explicit(&s->in_flight, 1, memory_order_relaxed) >= s->max_in_flight) {
		atomic_fetch_sub_explicit(&s->in_flight, 1, memory_order_relaxed);
		RPC_LOG(DEBUG, "session with %s: %d calls in flight; try again", s->peer,
			s->max_in_flight);
		return OCK_RPC_ERR_NO_MEMORY;
	}
	c->s = s;
	rpc_session_ref(s);
	atomic_init(&c->state, CALL_QUEUED);
	c->task.run = call_task;
	rpc_worker_push(s->w, &c->task);
	return OCK_RPC_OK;
}

/* ---- contexts and replies ------------------------------------------------------------ */

void
rpc_ctx_unref(struct rpc_ctx *ctx)
{
	if (atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (ctx->rndv != NULL)
		rpc_rndv_release(ctx->rndv);
	free(ctx->held_rx);
	rpc_session_unref(ctx->s);
	rpc_obj_put(RPC_OBJ_CTX, ctx);
}

bool
rpc_ctx_clone(struct rpc_ctx *ctx)
{
	struct rpc_session *s = ctx->s;

	if (ctx->in_handler && ctx->held_rx == NULL && ctx->msg.len != 0) {
		/* The buffer goes with the context; what follows the frame
		 * moves to a new one.
		 */
		size_t rest = s->rx_len - s->rx_frame_end;
		size_t cap = RTE_MAX(rest, (size_t)RPC_FRAME_HDR_SIZE);
		uint8_t *b = malloc(cap);

		if (b == NULL)
			return false;
		memcpy(b, s->rx + s->rx_frame_end, rest);
		ctx->held_rx = s->rx;
		s->rx = b;
		s->rx_len = rest;
		s->rx_cap = cap;
		s->rx_detached = true;
	}
	atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
	return true;
}

static void
reply_task(struct rpc_task *t)
{
	struct rpc_ctx *ctx = container_of(t, struct rpc_ctx, task);
	struct rpc_out *o = ctx->reply;

	ctx->reply = NULL;
	send_out(ctx->s, o);
	rpc_ctx_unref(ctx);
}

OckRpcStatus
rpc_ctx_reply(struct rpc_ctx *ctx, uint16_t service, const OckRpcMessage *reply,
	      const OckRpcCallDone *done)
{
	struct rpc_session *s = ctx->s;
	struct rpc_frame f = {
		.kind = RPC_RESPONSE, .service = service, .seq = ctx->seq,
		.payload_len = reply != NULL ? (uint32_t)reply->len : 0,
	};
	bool replied = false;
	struct rpc_out *o;

	if (reply != NULL && reply->len > RTE_MIN(s->max_payload, s->peer_max_payload)) {
		RPC_LOG(ERR, "reply of %zu bytes to service %u: more than the segment size %" PRIu32
			" (the client's %" PRIu32 ")", reply->len, service, s->max_payload,
			s->peer_max_payload);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (reply != NULL && reply->len != 0 && reply->data == NULL)
		return OCK_RPC_ERR_INVALID_PARAM;
	if (atomic_load(&ctx->replied)) {
		RPC_LOG(ERR, "service %u: call %" PRIu64 " was answered already", service, ctx->seq);
		return OCK_RPC_ERR;
	}
	if (atomic_load(&s->ending))
		return OCK_RPC_ERR_CONN_BROKEN;
	o = ctx->want_response ? out_new(&f, reply != NULL ? reply->data : NULL) : NULL;
	if (ctx->want_response && o == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	/* Once: of two replies at the same time, one goes. */
	if (!atomic_compare_exchange_strong(&ctx->replied, &replied, true)) {
		if (o != NULL)
			out_done(o, OCK_RPC_ERR);
		RPC_LOG(ERR, "service %u: call %" PRIu64 " was answered already", service, ctx->seq);
		return OCK_RPC_ERR;
	}
	if (o == NULL) {
		/* A one-way message: nobody waits for an answer. */
		if (done != NULL && done->cb != NULL)
			done->cb(OCK_RPC_OK, done->arg);
		return OCK_RPC_OK;
	}
	if (done != NULL)
		o->done = *done;
	if (rpc_worker_self() == s->w) {
		send_out(s, o);
		return OCK_RPC_OK;
	}
	atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
	ctx->reply = o;
	ctx->task.run = reply_task;
	rpc_worker_push(s->w, &ctx->task);
	return OCK_RPC_OK;
}

/* ---- frames in ------------------------------------------------------------------------- */

void
rpc_session_refuse(struct rpc_session *s, const struct rpc_frame *f, OckRpcStatus status)
{
	struct rpc_frame r = { .kind = RPC_RESPONSE, .service = f->service, .seq = f->seq,
			       .status = (int16_t)status };
	struct rpc_out *o;

	if ((f->flags & RPC_FLAG_WANT_RESPONSE) == 0)
		return;
	o = out_new(&r, NULL);
	if (o != NULL)
		send_out(s, o);
}

struct rpc_ctx *
rpc_ctx_new(struct rpc_session *s, const struct rpc_frame *f)
{
	struct rpc_ctx *ctx = rpc_obj_get(RPC_OBJ_CTX);

	if (ctx == NULL)
		return NULL;
	memset(ctx, 0, sizeof(*ctx));
	rpc_session_ref(s);
	ctx->s = s;
	ctx->seq = f->seq;
	ctx->service = f->service;
	ctx->want_response = (f->flags & RPC_FLAG_WANT_RESPONSE) != 0;
	atomic_init(&ctx->refs, 1);
	atomic_init(&ctx->replied, false);
	return ctx;
}

static void
take_request(struct rpc_session *s, const struct rpc_frame *f, uint8_t *payload)
{
	OckRpcMsgHandler handler = NULL;
	struct rpc_ctx *ctx;

	rpc_count(RPC_CALLS_SERVED, 1);
	if (f->flags & RPC_FLAG_RNDV) {
		rpc_rndv_take(s, f, payload);
		return;
	}
	if (s->server != NULL)
		handler = atomic_load_explicit(&s->server->services[f->service],
					       memory_order_acquire);
	if (handler == NULL) {
		RPC_LOG(WARNING, "session with %s: no service %u", s->peer, f->service);
		rpc_session_refuse(s, f, OCK_RPC_ERR_MISMATCH_MSG_ID);
		return;
	}
	ctx = rpc_ctx_new(s, f);
	if (ctx == NULL) {
		rpc_session_close(s, OCK_RPC_ERR_NO_MEMORY);
		return;
	}
	ctx->msg.data = f->payload_len != 0 ? payload : NULL;
	ctx->msg.len = f->payload_len;
	ctx->in_handler = true;
	handler((OckRpcServerContext)(uintptr_t)ctx, ctx->msg);
	/* The message was the receive buffer's: a clone has its own copy. */
	ctx->in_handler = false;
	rpc_ctx_unref(ctx);
}

static void
take_hello(struct rpc_session *s, const struct rpc_frame *f, const uint8_t *payload)
{
	/* "name\0info\0" and the client's segment size (4 bytes). */
	const char *name = (const char *)payload;
	size_t name_len = f->payload_len != 0 ? strnlen(name, f->payload_len) : 0;
	size_t rest = f->payload_len - RTE_MIN(name_len + 1, (size_t)f->payload_len);
	size_t info_len = rest != 0 ? strnlen(name + name_len + 1, rest) : 0;
	uint8_t welcome[4];
	const char *info;
	char text[2 * RPC_NAME_MAX + 32];
	int ret;

	if (f->payload_len == 0 || name_len == f->payload_len || rest == 0 ||
	    rest - info_len != 1 + sizeof(welcome)) {
		RPC_LOG(ERR, "session with %s: a HELLO without name, info and segment size", s->peer);
		rpc_session_close(s, OCK_RPC_ERR_DESERIALIZE);
		return;
	}
	info = name + name_len + 1;
	s->peer_max_payload = rpc_get_be32((const uint8_t *)info + info_len + 1);
	if (strcmp(name, s->server->conf.name) != 0) {
		snprintf(text, sizeof(text), "server \"%s\" is not \"%.64s\"", s->server->conf.name,
			 name);
		RPC_LOG(NOTICE, "session with %s refused: %s", s->peer, text);
		rpc_count(RPC_ERR_REFUSED, 1);
		send_control(s, RPC_WELCOME, OCK_RPC_ERR_INVALID_PARAM, text,
			     (uint32_t)strlen(text) + 1);
		rpc_session_close(s, OCK_RPC_ERR_INVALID_PARAM);
		return;
	}
	/* The new-client handler may refuse it (not 0): then it never was. */
	s->state = SESSION_OPEN;
	ret = rpc_server_session_opened(s->server, s, info);
	if (s->state != SESSION_OPEN)
		return;
	if (ret != 0) {
		snprintf(text, sizeof(text), "the new-client handler said %d", ret);
		RPC_LOG(NOTICE, "session with %s refused: %s", s->peer, text);
		rpc_count(RPC_ERR_REFUSED, 1);
		s->announced = false;
		send_control(s, RPC_WELCOME, OCK_RPC_ERR, text, (uint32_t)strlen(text) + 1);
		rpc_session_close(s, OCK_RPC_ERR);
		return;
	}
	rpc_put_be32(welcome, s->max_payload);
	rpc_session_counted_open(s);
	send_control(s, RPC_WELCOME, OCK_RPC_OK, welcome, sizeof(welcome));
}

/* Whether @p f may come now; a frame that may not ends the session. */
static bool
frame_allowed(const struct rpc_session *s, const struct rpc_frame *f)
{
	if (s->state == SESSION_HELLO)
		return f->kind == RPC_HELLO;
	switch (f->kind) {
	case RPC_REQUEST:
		return !s->client;
	case RPC_RESPONSE:
		return s->client;
	case RPC_HEARTBEAT:
	case RPC_HEARTBEAT_ACK:
	case RPC_BYE:
	case RPC_SEALED_WRITE:
	case RPC_SEALED_READ:
	case RPC_SEALED_DONE:
		return true;
	default:
		return false;
	}
}

void
rpc_session_frame_in(struct rpc_session *s, const struct rpc_frame *f, uint8_t *payload)
{
	s->last_rx_ns = rpc_worker_now(s->w);
	s->probe_ns = 0;
	rpc_count(RPC_FRAMES_IN, 1);
	rpc_count(RPC_BYTES_IN, RPC_FRAME_HDR_SIZE + (uint64_t)f->payload_len);
	if (!frame_allowed(s, f)) {
		RPC_LOG(ERR, "session with %s: a frame of kind %d here is a protocol error",
			s->peer, f->kind);
		rpc_session_close(s, OCK_RPC_ERR_DESERIALIZE);
		return;
	}
	switch (f->kind) {
	case RPC_HELLO:
		take_hello(s, f, payload);
		break;
	case RPC_REQUEST:
		take_request(s, f, payload);
		break;
	case RPC_RESPONSE:
		call_answered(s, f, payload);
		break;
	case RPC_HEARTBEAT:
		send_control(s, RPC_HEARTBEAT_ACK, 0, NULL, 0);
		break;
	case RPC_HEARTBEAT_ACK:
		rpc_count(RPC_HEARTBEATS_ANSWERED, 1);
		break;
	case RPC_BYE:
		s->on_purpose = true;
		rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
		break;
	case RPC_SEALED_WRITE:
	case RPC_SEALED_READ:
	case RPC_SEALED_DONE:
		rpc_one_sided_take(s, f, payload);
		break;
	default:
		break;
	}
}

/* ---- time --------------------------------------------------------------------------- */

/*
 * An idle session is probed after heartbeat.idle seconds without a byte
 * from its peer, and ends broken when another idle time passes without
 * one: a peer that is gone is found within twice the idle time. Before
 * that verdict the socket is read once more: a handler that kept this
 * worker busy must not make an answer waiting there look like silence.
 * A session whose HELLO has not come is not probed (its peer is not in
 * the protocol yet); it ends after the time an opening may take.
 */
static void
heartbeat(struct rpc_session *s, uint64_t now)
{
	uint64_t idle = (uint64_t)s->heartbeat_idle_s * 1000000000ull;

	if (s->state == SESSION_HELLO) {
		uint64_t wait = RTE_MAX(2 * idle, (uint64_t)RPC_OPENING_TIMEOUT_MS * 1000000ull);

		if (now - s->last_rx_ns >= wait) {
			RPC_LOG(NOTICE, "session with %s: no HELLO in %" PRIu64 " ms", s->peer,
				wait / 1000000);
			rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
		} else {
			rpc_worker_scan_by(s->w, s->last_rx_ns + wait);
		}
		return;
	}
	if (s->state != SESSION_OPEN)
		return;
	if (s->probe_ns != 0 && now - s->probe_ns >= idle) {
		s->ops->poll(s);
		if (s->state != SESSION_OPEN)
			return;
		if (s->probe_ns != 0) {
			RPC_LOG(NOTICE, "session with %s: no heartbeat for %u s; it is broken",
				s->peer, 2 * s->heartbeat_idle_s);
			rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
			return;
		}
	}
	if (s->probe_ns == 0 && now - s->last_rx_ns >= idle) {
		s->probe_ns = now;
		rpc_count(RPC_HEARTBEATS_SENT, 1);
		send_control(s, RPC_HEARTBEAT, 0, NULL, 0);
		if (s->state != SESSION_OPEN)
			return;
	}
	rpc_worker_scan_by(s->w, (s->probe_ns != 0 ? s->probe_ns : s->last_rx_ns) + idle);
}

void
rpc_session_scan(struct rpc_session *s, uint64_t now)
{
	struct rpc_call *c, *next;

	for (c = TAILQ_FIRST(&s->calls); c != NULL; c = next) {
		next = TAILQ_NEXT(c, link);
		if (c->deadline_ns == 0)
			continue;
		if (c->deadline_ns > now) {
			rpc_worker_scan_by(s->w, c->deadline_ns);
			continue;
		}
		TAILQ_REMOVE(&s->calls, c, link);
		/* A synchronous caller that gave up first counted it. */
		if (claim_call(c)) {
			rpc_count(RPC_ERR_TIMEOUT, 1);
			complete_call(c, OCK_RPC_ERR_UCP_TIMEOUT);
		}
	}
	heartbeat(s, now);
}
