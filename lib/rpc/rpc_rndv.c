/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Rendezvous messages, on the server: the REQUEST carries descriptors of
 * the client's registered buffers (1..4: address, length, rkey); the
 * server allocates each with its rndv malloc callback, RDMA-READs them
 * on the session's QP, and hands them to the rendezvous service's
 * handler once every READ is in. The context lives until
 * OckRpcServerCleanupRndvCtx, which gives the buffers back with the
 * rndv free callback; it answers as a plain message's does.
 *
 * On a TLS session the client seals each buffer (rpc_tls_seal()) into
 * one of its own, registered and reused: the server READs ciphertext and
 * unseals it in place before the handler sees it; a tag that does not
 * match ends the session.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "droce_rc.h"
#include "rpc_private.h"
#include "rpc_rdma.h"
#include "rpc_tls.h"

/* A READ brings at most this much: the session's SENDs (replies,
 * heartbeats) pass between the pieces (see rpc_rdma.c's OPS_IN_FLIGHT),
 * and on a lossy link a piece still comes within a heartbeat.
 */
#define READ_PIECE (64u * 1024)
/* A buffer's pieces asked for at once: the next one is on its way while
 * one comes in, so no round trip leaves the link idle between them.
 */
#define PIECES_IN_FLIGHT 2

struct rndv_buf;

struct rndv_piece {
	struct rpc_rdma_op op;
	struct rndv_buf *buf;
};

struct rndv_buf {
	struct rndv_piece piece[PIECES_IN_FLIGHT];
	struct rpc_rndv_in *in;
	uintptr_t addr;                 /* from rndv malloc; 0: none yet */
	uint32_t len;
	uint32_t read;                  /* bytes asked for so far */
	unsigned int out;               /* pieces in flight */
	uint32_t lkey, rkey;
	uint64_t remote;
	struct droce_mr *own_mr;        /* registered for this message alone */
	uint8_t nonce[RPC_SEAL_NONCE], tag[RPC_SEAL_TAG];       /* sealed */
};

struct rpc_rndv_in {
	struct rpc_ctx *ctx;
	OckRpcMsgRndvHandler handler;
	OckRpcRndvMemFree mfree;
	unsigned int count;
	unsigned int pending;           /* READs out, and the poster's guard */
	bool failed;
	bool sealed;                    /* the READs bring ciphertext */
	atomic_bool cleaned;
	struct rndv_buf buf[RPC_RNDV_MAX];
};

void
rpc_rndv_release(struct rpc_rndv_in *in)
{
	for (unsigned int i = 0; i < in->count; i++) {
		struct rndv_buf *b = &in->buf[i];

		/* A READ target: the port never sends from it, but were it to, its memory stays. */
		if (rpc_rdma_dereg(b->own_mr) != 0)
			continue;
		if (b->addr != 0 && in->mfree(b->addr) != 0)
			RPC_LOG(WARNING, "rendezvous: the rndv free callback refused 0x%" PRIxPTR,
				b->addr);
	}
	free(in);
}

/* Every READ is in (or failed): the handler gets the message. */
static void
deliver(struct rpc_rndv_in *in)
{
	struct rpc_ctx *ctx = in->ctx;
	OckRpcRndvMessage msg = { .cnt = (uint16_t)in->count };

	if (in->failed || ctx->s->state == SESSION_ENDED) {
		/* A READ that fails breaks the QP, and with it the session:
		 * the caller hears of that.
		 */
		rpc_ctx_unref(ctx);
		return;
	}
	for (unsigned int i = 0; in->sealed && i < in->count; i++) {
		struct rndv_buf *b = &in->buf[i];

		if (!rpc_tls_unseal(ctx->s->tls, (void *)b->addr, b->len, b->nonce, b->tag)) {
			struct rpc_session *s = ctx->s;

			RPC_LOG(ERR, "session with %s: rendezvous buffer %u (%" PRIu32 " bytes) failed its tag (changed on the way, or not sealed by the peer); the session ends",
				s->peer, i, b->len);
			rpc_ctx_unref(ctx);
			rpc_session_close(s, OCK_RPC_ERR_DECRYPT);
			return;
		}
	}
	for (unsigned int i = 0; i < in->count; i++)
		msg.msg[i] = (OckRpcMessage){ (void *)in->buf[i].addr, in->buf[i].len };
	in->handler((OckRpcServerRndvContext)(uintptr_t)ctx, msg);
}

static void
step_done(struct rpc_rndv_in *in)
{
	if (--in->pending == 0)
		deliver(in);
}

static void read_done(struct rpc_rdma_op *op, enum droce_wc_status status);

/* The next piece of @p b's READ, in @p p (one of its pieces, not out). */
static void
read_piece(struct rndv_buf *b, struct rndv_piece *p)
{
	uint32_t n = RTE_MIN(b->len - b->read, READ_PIECE);

	p->buf = b;
	p->op = (struct rpc_rdma_op){
		.done = read_done, .opcode = DROCE_WR_RDMA_READ,
		.local = { .addr = b->addr + b->read, .length = n, .lkey = b->lkey },
		.remote = b->remote + b->read, .rkey = b->rkey,
	};
	b->read += n;
	b->out++;
	rpc_rdma_post(b->in->ctx->s, &p->op);
}

static void
read_done(struct rpc_rdma_op *op, enum droce_wc_status status)
{
	struct rndv_piece *p = container_of(op, struct rndv_piece, op);
	struct rndv_buf *b = p->buf;

	b->out--;
	if (status != DROCE_WC_SUCCESS && !b->in->failed) {
		b->in->failed = true;
		RPC_LOG(NOTICE, "session with %s: a rendezvous READ of %" PRIu32 " bytes failed: %s",
			b->in->ctx->s->peer, b->len, droce_wc_status_str(status));
	}
	/* The peer's bytes came: as alive as a frame from it would prove. */
	if (status == DROCE_WC_SUCCESS)
		rpc_session_peer_alive(b->in->ctx->s);
	if (!b->in->failed && b->read < b->len) {
		read_piece(b, p);
		return;
	}
	/* The buffer is done when its last piece is in. */
	if (b->out == 0)
		step_done(b->in);
}

/* Buffer @p b of @p len bytes for the READ of @p d; false when none. */
static bool
buffer_for(struct rpc_session *s, struct rndv_buf *b, const struct rpc_rndv *d)
{
	const struct rpc_conf *conf = &s->server->conf;
	uint16_t port = rpc_rdma_port(s);
	struct droce_mr *mr;
	uintptr_t addr = 0;
	uint32_t key = 0;

	if (conf->rndv_alloc(d->len, &addr, &key) != 0 || addr == 0) {
		RPC_LOG(ERR, "session with %s: the rndv malloc callback gave no %" PRIu32 " bytes",
			s->peer, d->len);
		return false;
	}
	b->addr = addr;
	b->len = d->len;
	/* In a region of ours with that key: its registration; else one of
	 * its own for this message.
	 */
	mr = rpc_mr_droce(key, addr, d->len, port);
	if (mr == NULL)
		mr = b->own_mr = rpc_rdma_reg(port, (void *)addr, d->len);
	if (mr == NULL)
		return false;
	b->remote = d->addr;
	memcpy(b->nonce, d->nonce, sizeof(b->nonce));
	memcpy(b->tag, d->tag, sizeof(b->tag));
	b->lkey = mr->lkey;
	b->rkey = d->rkey;
	return true;
}

void
rpc_rndv_take(struct rpc_session *s, const struct rpc_frame *f, const uint8_t *payload)
{
	OckRpcMsgRndvHandler handler = NULL;
	struct rpc_rndv desc[RPC_RNDV_MAX];
	struct rpc_rndv_in *in;
	struct rpc_ctx *ctx;

	if (s->server != NULL && s->server->conf.rndv)
		handler = atomic_load_explicit(&s->server->rndv_services[f->service],
					       memory_order_acquire);
	if (handler == NULL) {
		RPC_LOG(WARNING, "session with %s: no rendezvous service %u", s->peer, f->service);
		rpc_session_refuse(s, f, OCK_RPC_ERR_MISMATCH_MSG_ID);
		return;
	}
	if (s->ops != &rpc_rdma_ops) {
		RPC_LOG(WARNING, "session with %s: a rendezvous message over TCP", s->peer);
		rpc_session_refuse(s, f, OCK_RPC_ERR_RDMA_NOT_ENABLE);
		return;
	}
	if (rpc_rndv_decode(f, payload, UINT64_MAX, desc) == 0) {
		RPC_LOG(ERR, "session with %s: rendezvous descriptors of no length", s->peer);
		rpc_session_close(s, OCK_RPC_ERR_DESERIALIZE);
		return;
	}
	/* On a TLS session the buffers are sealed, and only there. */
	if (((f->flags & RPC_FLAG_SEALED) != 0) != (s->tls != NULL)) {
		RPC_LOG(ERR, "session with %s: a rendezvous call %s on a session %s TLS", s->peer,
			s->tls != NULL ? "in the clear" : "sealed", s->tls != NULL ? "with" : "without");
		rpc_session_refuse(s, f, OCK_RPC_ERR_ENCRYPT);
		return;
	}
	ctx = rpc_ctx_new(s, f);
	in = calloc(1, sizeof(*in));
	if (ctx == NULL || in == NULL) {
		free(in);
		if (ctx != NULL)
			rpc_ctx_unref(ctx);
		rpc_session_refuse(s, f, OCK_RPC_ERR_NO_MEMORY);
		return;
	}
	ctx->rndv = in;
	in->ctx = ctx;
	in->handler = handler;
	in->mfree = s->server->conf.rndv_free;
	in->sealed = (f->flags & RPC_FLAG_SEALED) != 0;
	atomic_init(&in->cleaned, false);
	for (in->count = 0; in->count < f->rndv_count; in->count++) {
		struct rndv_buf *b = &in->buf[in->count];

		b->in = in;
		if (!buffer_for(s, b, &desc[in->count])) {
			in->count++;    /* what it got goes back too */
			rpc_session_refuse(s, f, OCK_RPC_ERR_NO_MEMORY);
			rpc_ctx_unref(ctx);
			return;
		}
	}
	/* The guard: READs that fail at once must not end it mid-loop. */
	in->pending = in->count + 1;
	for (unsigned int i = 0; i < in->count; i++) {
		struct rndv_buf *b = &in->buf[i];

		/* At least one READ each, of no bytes for an empty buffer. */
		read_piece(b, &b->piece[0]);
		for (unsigned int k = 1; k < PIECES_IN_FLIGHT && !in->failed && b->read < b->len; k++)
			read_piece(b, &b->piece[k]);
	}
	step_done(in);
}

int
rpc_rndv_cleanup(struct rpc_ctx *ctx)
{
	bool cleaned = false;

	if (ctx->rndv == NULL || !atomic_compare_exchange_strong(&ctx->rndv->cleaned, &cleaned,
								 true)) {
		RPC_LOG(ERR, "rendezvous cleanup: %s", ctx->rndv == NULL
			? "not a rendezvous message's context" : "cleaned up already");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	rpc_ctx_unref(ctx);
	return OCK_RPC_OK;
}

/* ---- buffers of sealed bytes (rendezvous, one-sided) ----------------------------------- */

/* Kept per session for the next calls; sizes in powers of two. */
#define SEALED_KEPT 8
#define SEALED_MIN (64u * 1024)

struct rpc_sealed *
rpc_sealed_get(struct rpc_session *s, uint32_t len)
{
	struct rpc_sealed **p, *b = NULL;
	size_t cap = SEALED_MIN;

	pthread_mutex_lock(&s->sealed_lock);
	for (p = &s->sealed_free; *p != NULL; p = &(*p)->next)
		if ((*p)->cap >= len) {
			b = *p;
			*p = b->next;
			s->nb_sealed_free--;
			break;
		}
	pthread_mutex_unlock(&s->sealed_lock);
	if (b != NULL)
		return b;
	while (cap < len)
		cap *= 2;
	b = calloc(1, sizeof(*b));
	if (b != NULL)
		b->mem = aligned_alloc(4096, cap);
	if (b != NULL && b->mem != NULL)
		b->mr = rpc_rdma_reg(rpc_rdma_port(s), b->mem, cap);
	if (b == NULL || b->mr == NULL) {
		RPC_LOG(ERR, "session with %s: no buffer of %zu bytes for sealed bytes", s->peer,
			cap);
		if (b != NULL)
			free(b->mem);
		free(b);
		return NULL;
	}
	b->cap = cap;
	return b;
}

static void
sealed_free(struct rpc_sealed *b)
{
	/* Peers READ it: the answers are copies, so the port never holds it. */
	if (rpc_rdma_dereg(b->mr) == 0)
		free(b->mem);
	free(b);
}

void
rpc_sealed_put(struct rpc_session *s, struct rpc_sealed *b)
{
	pthread_mutex_lock(&s->sealed_lock);
	if (s->nb_sealed_free < SEALED_KEPT) {
		b->next = s->sealed_free;
		s->sealed_free = b;
		s->nb_sealed_free++;
		b = NULL;
	}
	pthread_mutex_unlock(&s->sealed_lock);
	if (b != NULL)
		sealed_free(b);
}

void
rpc_sealed_pool_free(struct rpc_session *s)
{
	struct rpc_sealed *b;

	while ((b = s->sealed_free) != NULL) {
		s->sealed_free = b->next;
		sealed_free(b);
	}
	s->nb_sealed_free = 0;
}
