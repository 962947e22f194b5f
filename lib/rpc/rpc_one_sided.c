/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * hcom4db's one-sided operations, OckRpcRead/Write(Sgl): each piece an
 * RDMA READ or WRITE between a region of the caller's and one of the
 * peer's, posted on the session's QP from its worker; the last piece's
 * end ends the operation.
 *
 * On a TLS session no piece crosses the wire in the clear, and the
 * target's CPU takes part (the frames are in rpc_frame.h):
 *   WRITE: the caller seals the piece into a staging buffer and WRITEs
 *          the ciphertext to the target's address; a SEALED_WRITE then
 *          has the target unseal it there, in place.
 *   READ:  a SEALED_READ has the target seal its bytes into a staging
 *          buffer of its own and WRITE them into the caller's memory,
 *          which the caller unseals in place.
 * A piece ends with the target's SEALED_DONE, when the plaintext is where
 * it belongs. A tag that does not match ends the session with
 * OCK_RPC_ERR_DECRYPT, as a rendezvous buffer's does; an address outside
 * the target's regions ends it as RC's remote access error would.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_private.h"
#include "rpc_rdma.h"
#include "rpc_tls.h"

/* ---- the caller's side ---------------------------------------------------------- */

enum piece_state {
	PIECE_MOVING,           /* its RDMA operation is on the QP */
	PIECE_ASKED,            /* sealed: its frame went, the SEALED_DONE is awaited */
	PIECE_ENDED,
};

struct one_sided_piece {
	struct rpc_rdma_op op;
	struct rpc_one_sided *os;
	enum piece_state state;
	struct rpc_sealed_piece sealed;         /* its frame's payload */
	struct rpc_sealed *staging;             /* a sealed WRITE's ciphertext */
};

enum { ONE_SIDED_RUNNING, ONE_SIDED_OK, ONE_SIDED_FAILED };

/* One call of OckRpcRead/Write(Sgl), on the session's worker from its
 * task on.
 */
struct rpc_one_sided {
	struct rpc_task task;
	TAILQ_ENTRY(rpc_one_sided) link;        /* sealed: in its session's list */
	struct rpc_session *s;
	enum droce_wr_opcode opcode;
	bool sealed;
	uint64_t seq;                           /* sealed: its frames' */
	unsigned int count, pending;
	bool failed;
	OckRpcCallDone cb;                      /* asynchronous: runs on the worker */
	atomic_int state;                       /* synchronous: the caller waits on it */
	struct one_sided_piece piece[RPC_SGL_MAX];
};

static const char *
opcode_name(enum droce_wr_opcode opcode)
{
	return opcode == DROCE_WR_RDMA_READ ? "READ" : "WRITE";
}

static void
one_sided_end(struct rpc_one_sided *os)
{
	struct rpc_session *s = os->s;

	if (os->sealed)
		TAILQ_REMOVE(&s->sealed_ops, os, link);
	for (unsigned int i = 0; i < os->count; i++)
		if (os->piece[i].staging != NULL)
			rpc_sealed_put(s, os->piece[i].staging);
	if (os->cb.cb != NULL) {
		os->cb.cb(os->failed ? OCK_RPC_ERR : OCK_RPC_OK, os->cb.arg);
		free(os);
	} else {
		/* The caller frees it once it has seen the state. */
		atomic_store_explicit(&os->state, os->failed ? ONE_SIDED_FAILED : ONE_SIDED_OK,
				      memory_order_release);
		rpc_wake_state(&os->state);
	}
	rpc_session_unref(s);
}

/* One step less before the end; the last ends it. */
static void
one_sided_step_done(struct rpc_one_sided *os)
{
	if (--os->pending == 0)
		one_sided_end(os);
}

static void
piece_end(struct one_sided_piece *p, bool ok)
{
	p->state = PIECE_ENDED;
	if (!ok)
		p->os->failed = true;
	one_sided_step_done(p->os);
}

/* Sealed: the piece's frame to the target, whose SEALED_DONE ends it. */
static void
piece_ask(struct one_sided_piece *p, enum rpc_kind kind)
{
	struct rpc_one_sided *os = p->os;
	struct rpc_frame f = { .kind = kind, .service = (uint16_t)(p - os->piece),
			       .seq = os->seq, .payload_len = RPC_SEALED_PIECE_SIZE };
	uint8_t payload[RPC_SEALED_PIECE_SIZE];

	if (os->s->state != SESSION_OPEN) {
		piece_end(p, false);
		return;
	}
	rpc_sealed_piece_encode(&p->sealed, payload);
	/* Asked before it goes: a session that ends on the way ends it. */
	p->state = PIECE_ASKED;
	rpc_session_send(os->s, &f, payload);
}

static void
piece_moved(struct rpc_rdma_op *op, enum droce_wc_status status)
{
	struct one_sided_piece *p = container_of(op, struct one_sided_piece, op);
	struct rpc_one_sided *os = p->os;

	if (status == DROCE_WC_SUCCESS && op->opcode == DROCE_WR_RDMA_READ)
		rpc_session_peer_alive(os->s);
	if (status != DROCE_WC_SUCCESS) {
		if (!os->failed)
			RPC_LOG(NOTICE, "session with %s: a one-sided %s of %" PRIu32
				" bytes failed: %s", os->s->peer, opcode_name(op->opcode),
				op->local.length, droce_wc_status_str(status));
		piece_end(p, false);
		return;
	}
	if (os->sealed)
		piece_ask(p, RPC_SEALED_WRITE);
	else
		piece_end(p, true);
}

static void
piece_start(struct one_sided_piece *p)
{
	struct rpc_one_sided *os = p->os;

	if (os->sealed && os->opcode == DROCE_WR_RDMA_READ) {
		piece_ask(p, RPC_SEALED_READ);
		return;
	}
	p->state = PIECE_MOVING;
	rpc_rdma_post(os->s, &p->op);
}

static void
one_sided_task(struct rpc_task *t)
{
	struct rpc_one_sided *os = container_of(t, struct rpc_one_sided, task);
	struct rpc_session *s = os->s;

	if (os->sealed) {
		os->seq = ++s->sealed_op_seq;
		TAILQ_INSERT_TAIL(&s->sealed_ops, os, link);
	}
	/* The guard: pieces that fail at once must not end it mid-loop. */
	os->pending = os->count + 1;
	for (unsigned int i = 0; i < os->count; i++)
		piece_start(&os->piece[i]);
	one_sided_step_done(os);
}

/* The target's answer to a piece. */
static void
take_done(struct rpc_session *s, const struct rpc_frame *f, const uint8_t *payload)
{
	struct rpc_sealed_piece answer;
	struct one_sided_piece *p;
	struct rpc_one_sided *os;

	TAILQ_FOREACH(os, &s->sealed_ops, link)
		if (os->seq == f->seq)
			break;
	p = os != NULL && f->service < os->count ? &os->piece[f->service] : NULL;
	if (p == NULL || p->state != PIECE_ASKED) {
		RPC_LOG(ERR, "session with %s: a SEALED_DONE for piece %u of operation %" PRIu64
			", which awaits none", s->peer, f->service, f->seq);
		rpc_session_close(s, OCK_RPC_ERR_DESERIALIZE);
		return;
	}
	if (f->status != OCK_RPC_OK) {
		RPC_LOG(NOTICE, "session with %s: the peer refused piece %u of a one-sided %s (%"
			PRIu32 " bytes at 0x%" PRIx64 ", rkey 0x%" PRIx32 "): status %d", s->peer,
			f->service, opcode_name(os->opcode), p->sealed.len, p->sealed.addr,
			p->sealed.rkey, f->status);
		piece_end(p, false);
		return;
	}
	if (os->opcode == DROCE_WR_RDMA_READ) {
		rpc_sealed_piece_decode(payload, &answer);
		if (!rpc_tls_unseal(s->tls, (void *)(uintptr_t)p->sealed.back_addr, p->sealed.len,
				    answer.nonce, answer.tag)) {
			RPC_LOG(ERR, "session with %s: piece %u of a one-sided READ (%" PRIu32
				" bytes) failed its tag (changed on the way, or not sealed by the peer); the session ends",
				s->peer, f->service, p->sealed.len);
			piece_end(p, false);
			rpc_session_close(s, OCK_RPC_ERR_DECRYPT);
			return;
		}
	}
	piece_end(p, true);
}

void
rpc_one_sided_session_ended(struct rpc_session *s)
{
	struct rpc_one_sided *os, *next;

	for (os = TAILQ_FIRST(&s->sealed_ops); os != NULL; os = next) {
		next = TAILQ_NEXT(os, link);
		/* A guard of its own: ending its pieces must not free it mid-loop. */
		os->pending++;
		for (unsigned int i = 0; i < os->count; i++)
			if (os->piece[i].state == PIECE_ASKED)
				piece_end(&os->piece[i], false);
		one_sided_step_done(os);
	}
}

/* A TLS session's piece: a WRITE's sealed here, on the caller's thread
 * (its key is the session's, fixed since the handshake); a READ's told
 * where the target's sealed bytes go.
 */
static OckRpcStatus
seal_piece(struct rpc_session *s, struct one_sided_piece *p, const OckRpcRequest *r,
	   const struct droce_mr *local)
{
	p->sealed = (struct rpc_sealed_piece){ .addr = r->rAddress, .len = r->size,
					       .rkey = r->rKey };
	if (p->op.opcode == DROCE_WR_RDMA_READ) {
		p->sealed.back_addr = r->lAddress;
		p->sealed.back_rkey = local->rkey;
		return OCK_RPC_OK;
	}
	p->staging = rpc_sealed_get(s, r->size);
	if (p->staging == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	if (!rpc_tls_seal(s->tls, (const void *)r->lAddress, p->staging->mem, r->size,
			  p->sealed.nonce, p->sealed.tag)) {
		RPC_LOG(ERR, "session with %s: sealing a one-sided WRITE's %" PRIu32 " bytes failed",
			s->peer, r->size);
		return OCK_RPC_ERR_ENCRYPT;
	}
	p->op.local = (struct droce_sge){ .addr = (uintptr_t)p->staging->mem, .length = r->size,
					  .lkey = p->staging->mr->lkey };
	return OCK_RPC_OK;
}

static void
one_sided_free(struct rpc_one_sided *os)
{
	for (unsigned int i = 0; i < os->count; i++)
		if (os->piece[i].staging != NULL)
			rpc_sealed_put(os->s, os->piece[i].staging);
	free(os);
}

/* Each piece's local memory in a region with its key, on the session's
 * droce port; the remote address and key are the peer's region's.
 */
static int
one_sided(OckRpcClient client, const OckRpcRequest *req, unsigned int count,
	  enum droce_wr_opcode opcode, const OckRpcCallDone *cb, const char *what)
{
	struct rpc_session *s = (struct rpc_session *)(uintptr_t)client;
	struct rpc_one_sided *os;
	OckRpcStatus st;
	int state;

	if (client == 0 || req == NULL || count == 0 || count > RPC_SGL_MAX ||
	    (cb != NULL && cb->cb == NULL)) {
		RPC_LOG(ERR, "%s: %s", what, client == 0 ? "no client" : req == NULL ? "no request"
			: cb != NULL && cb->cb == NULL ? "a done without a callback"
			: "1..16 pieces");
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (s->ops != &rpc_rdma_ops) {
		RPC_LOG(ERR, "%s: one-sided operations need %s=RDMA", what,
			OCK_RPC_STR_COMMUNICATION_TYPE);
		return OCK_RPC_ERR_RDMA_NOT_ENABLE;
	}
	if (cb == NULL && rpc_worker_would_wait_for(s->w)) {
		RPC_LOG(ERR, "%s: a synchronous one from where the session runs (its own worker, or droce's control lcore) would wait for itself",
			what);
		return OCK_RPC_ERR;
	}
	if (atomic_load(&s->ending))
		return OCK_RPC_ERR_CONN_BROKEN;
	os = calloc(1, sizeof(*os));
	if (os == NULL)
		return OCK_RPC_ERR_NO_MEMORY;
	os->s = s;
	os->opcode = opcode;
	os->sealed = s->tls != NULL;
	for (unsigned int i = 0; i < count; i++) {
		struct one_sided_piece *p = &os->piece[i];
		struct droce_mr *mr = req[i].size == 0 ? NULL
				      : rpc_mr_droce(req[i].lKey, req[i].lAddress, req[i].size,
						     rpc_rdma_port(s));

		if (mr == NULL) {
			RPC_LOG(ERR, "%s: piece %u (%" PRIu32 " bytes at 0x%" PRIxPTR ", key 0x%" PRIx32
				") is not in a memory region with that key", what, i, req[i].size,
				req[i].lAddress, req[i].lKey);
			one_sided_free(os);
			return OCK_RPC_ERR_INVALID_PARAM;
		}
		*p = (struct one_sided_piece){
			.os = os,
			.op = { .done = piece_moved, .opcode = opcode,
				.local = { .addr = req[i].lAddress, .length = req[i].size,
					   .lkey = mr->lkey },
				.remote = req[i].rAddress, .rkey = req[i].rKey },
		};
		os->count = i + 1;      /* what it holds goes back with it */
		st = os->sealed ? seal_piece(s, p, &req[i], mr) : OCK_RPC_OK;
		if (st != OCK_RPC_OK) {
			one_sided_free(os);
			return st;
		}
	}
	if (cb != NULL)
		os->cb = *cb;
	atomic_init(&os->state, ONE_SIDED_RUNNING);
	rpc_session_ref(s);
	os->task.run = one_sided_task;
	rpc_worker_push(s->w, &os->task);
	if (cb != NULL)
		return OCK_RPC_OK;
	state = rpc_wait_state(&os->state, 1u << ONE_SIDED_OK | 1u << ONE_SIDED_FAILED, 0);
	free(os);
	return state == ONE_SIDED_OK ? OCK_RPC_OK : OCK_RPC_ERR;
}

int
OckRpcRead(OckRpcClient client, OckRpcRequest *req, OckRpcCallDone *cb)
{
	return one_sided(client, req, 1, DROCE_WR_RDMA_READ, cb, "read");
}

int
OckRpcReadSgl(OckRpcClient client, OckRpcSglRequest *req, OckRpcCallDone *cb)
{
	return one_sided(client, req != NULL ? req->iov : NULL, req != NULL ? req->iovCount : 0,
			 DROCE_WR_RDMA_READ, cb, "read SGL");
}

int
OckRpcWrite(OckRpcClient client, OckRpcRequest *req, OckRpcCallDone *cb)
{
	return one_sided(client, req, 1, DROCE_WR_RDMA_WRITE, cb, "write");
}

int
OckRpcWriteSgl(OckRpcClient client, OckRpcSglRequest *req, OckRpcCallDone *cb)
{
	return one_sided(client, req != NULL ? req->iov : NULL, req != NULL ? req->iovCount : 0,
			 DROCE_WR_RDMA_WRITE, cb, "write SGL");
}

/* ---- the target's side ---------------------------------------------------------- */

/* A SEALED_READ's bytes on their way back: sealed, then WRITten. */
struct sealed_reply {
	struct rpc_rdma_op op;
	struct rpc_session *s;
	uint64_t seq;
	uint16_t index;
	struct rpc_sealed_piece piece;
	struct rpc_sealed *staging;
};

static void
answer(struct rpc_session *s, uint64_t seq, uint16_t index, const struct rpc_sealed_piece *p,
       OckRpcStatus status)
{
	struct rpc_frame f = { .kind = RPC_SEALED_DONE, .service = index, .status = (int16_t)status,
			       .seq = seq, .payload_len = RPC_SEALED_PIECE_SIZE };
	uint8_t payload[RPC_SEALED_PIECE_SIZE];

	rpc_sealed_piece_encode(p, payload);
	rpc_session_send(s, &f, payload);
}

/* Whether @p p's bytes are ours to touch, as the QP's rkey check would
 * have it; if so the regions stay locked. If not, the peer hears why and
 * the session ends, as RC's remote access error ends a connection.
 */
static bool
lock_target(struct rpc_session *s, const struct rpc_frame *f, const struct rpc_sealed_piece *p)
{
	if (p->len != 0 && rpc_mr_lock_remote(p->rkey, p->addr, p->len, rpc_rdma_port(s)))
		return true;
	RPC_LOG(WARNING, "session with %s: a one-sided %s of %" PRIu32 " bytes at 0x%" PRIx64
		", rkey 0x%" PRIx32 ": not in a region of ours with that key; the session ends",
		s->peer, f->kind == RPC_SEALED_READ ? "READ" : "WRITE", p->len, p->addr, p->rkey);
	answer(s, f->seq, f->service, p, OCK_RPC_ERR_INVALID_PARAM);
	rpc_session_close(s, OCK_RPC_ERR_CONN_BROKEN);
	return false;
}

static void
take_sealed_write(struct rpc_session *s, const struct rpc_frame *f, const uint8_t *payload)
{
	struct rpc_sealed_piece p;
	bool ok;

	rpc_sealed_piece_decode(payload, &p);
	if (!lock_target(s, f, &p))
		return;
	ok = rpc_tls_unseal(s->tls, (void *)(uintptr_t)p.addr, p.len, p.nonce, p.tag);
	rpc_mr_unlock_remote();
	if (!ok) {
		RPC_LOG(ERR, "session with %s: a one-sided WRITE's %" PRIu32 " bytes at 0x%" PRIx64
			" failed their tag (changed on the way, or not sealed by the peer); the session ends",
			s->peer, p.len, p.addr);
		rpc_session_close(s, OCK_RPC_ERR_DECRYPT);
		return;
	}
	answer(s, f->seq, f->service, &p, OCK_RPC_OK);
}

static void
reply_written(struct rpc_rdma_op *op, enum droce_wc_status status)
{
	struct sealed_reply *r = container_of(op, struct sealed_reply, op);

	/* Failed, the QP broke: the session ends, and the caller hears that. */
	if (status == DROCE_WC_SUCCESS && r->s->state == SESSION_OPEN)
		answer(r->s, r->seq, r->index, &r->piece, OCK_RPC_OK);
	rpc_sealed_put(r->s, r->staging);
	rpc_session_unref(r->s);
	free(r);
}

static void
take_sealed_read(struct rpc_session *s, const struct rpc_frame *f, const uint8_t *payload)
{
	struct rpc_sealed_piece p;
	struct sealed_reply *r;
	bool sealed;

	rpc_sealed_piece_decode(payload, &p);
	if (!lock_target(s, f, &p))
		return;
	r = calloc(1, sizeof(*r));
	if (r != NULL)
		r->staging = rpc_sealed_get(s, p.len);
	if (r == NULL || r->staging == NULL) {
		rpc_mr_unlock_remote();
		answer(s, f->seq, f->service, &p, OCK_RPC_ERR_NO_MEMORY);
		free(r);
		return;
	}
	r->piece = p;
	sealed = rpc_tls_seal(s->tls, (const void *)(uintptr_t)p.addr, r->staging->mem, p.len,
			      r->piece.nonce, r->piece.tag);
	rpc_mr_unlock_remote();
	if (!sealed) {
		RPC_LOG(ERR, "session with %s: sealing a one-sided READ's %" PRIu32 " bytes failed",
			s->peer, p.len);
		answer(s, f->seq, f->service, &p, OCK_RPC_ERR_ENCRYPT);
		rpc_sealed_put(s, r->staging);
		free(r);
		return;
	}
	r->s = s;
	r->seq = f->seq;
	r->index = f->service;
	r->op = (struct rpc_rdma_op){
		.done = reply_written, .opcode = DROCE_WR_RDMA_WRITE,
		.local = { .addr = (uintptr_t)r->staging->mem, .length = r->piece.len,
			   .lkey = r->staging->mr->lkey },
		.remote = r->piece.back_addr, .rkey = r->piece.back_rkey,
	};
	rpc_session_ref(s);
	rpc_rdma_post(s, &r->op);
}

void
rpc_one_sided_take(struct rpc_session *s, const struct rpc_frame *f, const uint8_t *payload)
{
	if (s->tls == NULL || s->ops != &rpc_rdma_ops) {
		RPC_LOG(ERR, "session with %s: a sealed one-sided frame on a session without TLS over RDMA",
			s->peer);
		rpc_session_close(s, OCK_RPC_ERR_DESERIALIZE);
		return;
	}
	switch (f->kind) {
	case RPC_SEALED_WRITE:
		take_sealed_write(s, f, payload);
		break;
	case RPC_SEALED_READ:
		take_sealed_read(s, f, payload);
		break;
	default:
		take_done(s, f, payload);
		break;
	}
}
