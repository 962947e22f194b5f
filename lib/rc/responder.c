/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The responder: checks each request in the order rxe's responder does,
 * one small step each, then executes, completes and acknowledges it:
 *
 *   RESP_CHECK_PSN -> RESP_CHECK_OP_SEQ -> RESP_CHECK_OP_VALID ->
 *   RESP_CHECK_RESOURCE -> RESP_CHECK_LENGTH -> RESP_CHECK_RKEY ->
 *   RESP_EXECUTE -> (RESP_READ_REPLY | RESP_ATOMIC_REPLY | RESP_COMPLETE)
 *   -> RESP_ACKNOWLEDGE
 *
 * with the detours RESP_DUPLICATE (a PSN already taken), RESP_NAK_SEQUENCE
 * (a PSN ahead), RESP_RNR (no receive posted) and RESP_ERR_* (a NAK, then
 * the QP goes to ERR). ACKs are owed, not sent at once: the owner sends
 * one per round for the newest request that asked (coalescing). READ
 * answers go out a budget at a time; requests that come meanwhile wait.
 */

#include <inttypes.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "rc_private.h"

enum resp_step {
	RESP_CHECK_PSN,
	RESP_CHECK_OP_SEQ,
	RESP_CHECK_OP_VALID,
	RESP_CHECK_RESOURCE,
	RESP_CHECK_LENGTH,
	RESP_CHECK_RKEY,
	RESP_EXECUTE,
	RESP_READ_REPLY,
	RESP_ATOMIC_REPLY,
	RESP_COMPLETE,
	RESP_ACKNOWLEDGE,
	RESP_DUPLICATE,
	RESP_NAK_SEQUENCE,
	RESP_RNR,
	RESP_ERR_INVALID,
	RESP_ERR_LENGTH,
	RESP_ERR_ACCESS,
	RESP_ERR_OPERATIONAL,
	RESP_DONE,
};

#define SYNDROME_ACK 0x1f               /* ACK, credits not counted */
#define SYNDROME_RNR 0x20
#define SYNDROME_NAK_SEQUENCE 0x60
#define SYNDROME_NAK_INVALID 0x61
#define SYNDROME_NAK_ACCESS 0x62
#define SYNDROME_NAK_OPERATIONAL 0x63

/* One request on its way through the steps. */
struct resp_req {
	const struct droce_pkt *pkt;
	uint32_t flags;                 /* the opcode's droce_hdr_flags */
	uint32_t psn;
	uint64_t va;                    /* RETH / AtomicETH */
	uint32_t rkey, dma_len;
	struct droce_mr *mr;
	const uint8_t *l3;              /* the packet from its IP header */
	uint32_t l3_len;                /* to its end, ICRC included */
	bool icrc_pending;              /* its ICRC is not checked yet */
};

static bool
is_rc(const struct droce_qp *qp)
{
	return qp->init.qp_type == DROCE_QPT_RC;
}

static struct rc_recv_wqe *
recv_wqe(struct droce_qp *qp)
{
	return rc_queue_slot(&qp->rq, atomic_load_explicit(&qp->rq.consumer,
							   memory_order_relaxed));
}

static bool
opcode_has_imm(uint8_t opcode)
{
	return (droce_opcode(opcode)->flags & DROCE_HDR_IMMDT) != 0;
}

/* ---- the checks ------------------------------------------------------------ */

static enum resp_step
resp_check_psn(struct droce_qp *qp, const struct resp_req *r)
{
	int32_t diff = droce_psn_cmp(r->psn, qp->resp.psn);

	if (!is_rc(qp)) {
		/* UC: a gap loses the message in progress; start again here. */
		if (diff != 0) {
			qp->resp.in_message = RC_MSG_NONE;
			qp->resp.have_wqe = false;
			qp->resp.psn = r->psn;
		}
		return RESP_CHECK_OP_SEQ;
	}
	if (diff > 0)
		return RESP_NAK_SEQUENCE;
	if (diff < 0)
		return RESP_DUPLICATE;
	qp->resp.nak_sent = false;
	return RESP_CHECK_OP_SEQ;
}

static enum resp_step
resp_check_op_seq(struct droce_qp *qp, const struct resp_req *r)
{
	bool continues = (r->flags & (DROCE_HDR_MIDDLE | DROCE_HDR_LAST)) &&
			 !(r->flags & DROCE_HDR_FIRST);

	switch (qp->resp.in_message) {
	case RC_MSG_SEND:
		if (continues && (r->flags & DROCE_HDR_SEND))
			return RESP_CHECK_OP_VALID;
		break;
	case RC_MSG_WRITE:
		if (continues && (r->flags & DROCE_HDR_WRITE))
			return RESP_CHECK_OP_VALID;
		break;
	case RC_MSG_NONE:
		if (!continues)
			return RESP_CHECK_OP_VALID;
		break;
	}
	if (!is_rc(qp)) {
		/* UC drops what does not follow and waits for a new message. */
		qp->resp.in_message = RC_MSG_NONE;
		qp->resp.have_wqe = false;
		return RESP_DONE;
	}
	return RESP_ERR_INVALID;
}

static enum resp_step
resp_check_op_valid(struct droce_qp *qp, const struct resp_req *r)
{
	int access = qp->attr.qp_access_flags;

	if ((r->flags & DROCE_HDR_WRITE) && !(access & DROCE_ACCESS_REMOTE_WRITE))
		return RESP_ERR_INVALID;
	if ((r->flags & DROCE_HDR_READ) &&
	    (!(access & DROCE_ACCESS_REMOTE_READ) || qp->resp.nb_res == 0 || !is_rc(qp)))
		return RESP_ERR_INVALID;
	if ((r->flags & DROCE_HDR_ATOMIC) &&
	    (!(access & DROCE_ACCESS_REMOTE_ATOMIC) || qp->resp.nb_res == 0 || !is_rc(qp)))
		return RESP_ERR_INVALID;
	return RESP_CHECK_RESOURCE;
}

static enum resp_step
resp_check_resource(struct droce_qp *qp, const struct resp_req *r)
{
	bool needs_wqe = ((r->flags & DROCE_HDR_SEND) && (r->flags & DROCE_HDR_FIRST)) ||
			 ((r->flags & DROCE_HDR_WRITE) && opcode_has_imm(r->pkt->opcode));

	if (!needs_wqe || qp->resp.have_wqe)
		return RESP_CHECK_LENGTH;
	if (atomic_load_explicit(&qp->rq.consumer, memory_order_relaxed) ==
	    atomic_load_explicit(&qp->rq.producer, memory_order_acquire))
		return is_rc(qp) ? RESP_RNR : RESP_DONE;
	qp->resp.have_wqe = true;
	if (r->flags & DROCE_HDR_SEND)
		qp->resp.recv_offset = 0;
	return RESP_CHECK_LENGTH;
}

static enum resp_step
resp_check_length(struct droce_qp *qp, const struct resp_req *r)
{
	uint32_t len = r->pkt->payload_len, mtu = qp->mtu;
	uint32_t f = r->flags;

	if ((f & DROCE_HDR_ONLY) == DROCE_HDR_ONLY) {
		if (len > mtu)
			return RESP_ERR_INVALID;
	} else if (f & (DROCE_HDR_FIRST | DROCE_HDR_MIDDLE)) {
		if (len != mtu)
			return RESP_ERR_INVALID;
	} else if (f & DROCE_HDR_LAST) {
		if (len == 0 || len > mtu)
			return RESP_ERR_INVALID;
	}
	if ((f & DROCE_HDR_RETH) && r->dma_len > (1u << 31))
		return RESP_ERR_INVALID;
	if (f & DROCE_HDR_SEND) {
		if ((uint64_t)qp->resp.recv_offset + len > recv_wqe(qp)->length)
			return RESP_ERR_LENGTH;
	} else if (f & DROCE_HDR_WRITE) {
		uint32_t left = (f & DROCE_HDR_FIRST) ? r->dma_len : qp->resp.write_left;

		if (len > left || ((f & DROCE_HDR_LAST) && len != left))
			return RESP_ERR_INVALID;
	}
	return RESP_CHECK_RKEY;
}

static enum resp_step
resp_check_rkey(struct droce_qp *qp, struct resp_req *r)
{
	int access;
	uint32_t len = r->dma_len;

	if (r->flags & DROCE_HDR_ATOMIC) {
		if (r->va & 7)
			return RESP_ERR_INVALID;
		access = DROCE_ACCESS_REMOTE_ATOMIC;
		len = 8;
	} else if (r->flags & DROCE_HDR_READ) {
		access = DROCE_ACCESS_REMOTE_READ;
	} else if ((r->flags & DROCE_HDR_WRITE) && (r->flags & DROCE_HDR_FIRST)) {
		access = DROCE_ACCESS_REMOTE_WRITE;
	} else {
		return RESP_EXECUTE;
	}
	r->mr = NULL;
	if (len == 0)
		return RESP_EXECUTE; /* a zero-length READ or WRITE names no memory */
	r->mr = rc_mr_check(qp->pd, r->rkey, r->va, len, access);
	return r->mr != NULL ? RESP_EXECUTE : RESP_ERR_ACCESS;
}

/* ---- doing it ---------------------------------------------------------------- */

/* A packet whose ICRC was left for the copy has it checked before
 * anything acts on it; a bad one is dropped as if it never came.
 */
static bool
resp_icrc_ok(struct droce_qp *qp, struct resp_req *r)
{
	if (!r->icrc_pending)
		return true;
	r->icrc_pending = false;
	if (droce_icrc_ok(r->l3, r->l3_len))
		return true;
	qp->owner->stats.bad_icrc++;
	return false;
}

/* The payload to @p dst, checked in the same pass when that was left. */
static bool
resp_icrc_copy_ok(struct droce_qp *qp, struct resp_req *r, void *dst)
{
	const struct droce_pkt *pkt = r->pkt;

	if (!r->icrc_pending) {
		memcpy(dst, pkt->payload, pkt->payload_len);
		return true;
	}
	r->icrc_pending = false;
	if (droce_icrc_copy_ok(r->l3, r->l3_len, (uint32_t)(pkt->payload - r->l3),
			       pkt->payload_len, dst))
		return true;
	qp->owner->stats.bad_icrc++;
	return false;
}

static enum resp_step
resp_execute(struct droce_qp *qp, struct resp_req *r)
{
	const struct droce_pkt *pkt = r->pkt;
	struct rc_responder *resp = &qp->resp;

	if (r->flags & DROCE_HDR_READ)
		return RESP_READ_REPLY;
	if (r->flags & DROCE_HDR_ATOMIC)
		return RESP_ATOMIC_REPLY;
	if (r->flags & DROCE_HDR_SEND) {
		struct rc_recv_wqe *wqe = recv_wqe(qp);
		void *dst = r->icrc_pending ? rc_sge_place(qp, wqe->sge, wqe->num_sge,
							   resp->recv_offset, pkt->payload_len,
							   DROCE_ACCESS_LOCAL_WRITE)
					    : NULL;

		if (dst != NULL) {
			if (!resp_icrc_copy_ok(qp, r, dst))
				return RESP_DONE;
		} else {
			if (!resp_icrc_ok(qp, r))
				return RESP_DONE;
			if (!rc_sge_copy_in(qp, wqe->sge, wqe->num_sge, resp->recv_offset,
					    pkt->payload, pkt->payload_len))
				return RESP_ERR_OPERATIONAL;
		}
		resp->recv_offset += pkt->payload_len;
		resp->in_message = RC_MSG_SEND;
	} else {
		if (r->flags & DROCE_HDR_FIRST) {
			resp->write_rkey = r->rkey;
			resp->write_va = r->va;
			resp->write_left = r->dma_len;
			resp->write_total = r->dma_len;
		}
		if (pkt->payload_len != 0) {
			/* Looked up by key for each packet: the region may have
			 * been deregistered since the FIRST.
			 */
			struct droce_mr *mr = rc_mr_check(qp->pd, resp->write_rkey, resp->write_va,
							  pkt->payload_len,
							  DROCE_ACCESS_REMOTE_WRITE);

			if (mr == NULL)
				return RESP_ERR_ACCESS; /* which checks the ICRC first */
			if (!resp_icrc_copy_ok(qp, r, rc_mr_cpu(mr, resp->write_va)))
				return RESP_DONE;
		}
		resp->write_va += pkt->payload_len;
		resp->write_left -= pkt->payload_len;
		resp->in_message = RC_MSG_WRITE;
	}
	if (r->flags & DROCE_HDR_LAST) {
		resp->in_message = RC_MSG_NONE;
		return RESP_COMPLETE;
	}
	return RESP_ACKNOWLEDGE;
}

static struct rc_rd_resource *
resource_take(struct droce_qp *qp)
{
	struct rc_responder *resp = &qp->resp;
	struct rc_rd_resource *res = &resp->res[resp->res_next];

	/* The oldest is reused: the requester keeps no more in flight than
	 * max_dest_rd_atomic, so it no longer waits for that one.
	 */
	resp->res_next = (resp->res_next + 1) % resp->nb_res;
	return res;
}

static void
answer_start(struct droce_qp *qp, struct rc_rd_resource *res, uint32_t psn, uint32_t offset)
{
	qp->resp.answering = res;
	qp->resp.answer_psn = psn;
	qp->resp.answer_start = offset;
	qp->resp.answer_offset = offset;
}

static enum resp_step
resp_read_reply(struct droce_qp *qp, const struct resp_req *r)
{
	struct rc_rd_resource *res = resource_take(qp);
	uint32_t psns = RTE_MAX(1u, (r->dma_len + qp->mtu - 1) / qp->mtu);

	qp->resp.msn = droce_msn_add(qp->resp.msn, 1);
	*res = (struct rc_rd_resource){
		.valid = true, .first_psn = r->psn,
		.last_psn = droce_psn_add(r->psn, psns - 1),
		.va = r->va, .rkey = r->rkey, .length = r->dma_len, .msn = qp->resp.msn,
	};
	answer_start(qp, res, r->psn, 0);
	qp->resp.psn = droce_psn_add(res->last_psn, 1);
	return RESP_DONE;
}

static enum resp_step
resp_atomic_reply(struct droce_qp *qp, const struct resp_req *r)
{
	const struct droce_atmeth *a = droce_pkt_ext(r->pkt, DROCE_EXT_ATMETH);
	uint64_t *target = (uint64_t *)rc_mr_cpu(r->mr, r->va);
	struct rc_rd_resource *res = resource_take(qp);
	uint64_t orig;

	if (r->pkt->opcode == DROCE_OP_COMPARE_SWAP) {
		orig = droce_atmeth_compare(a);
		__atomic_compare_exchange_n(target, &orig, droce_atmeth_swap_add(a), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(target, droce_atmeth_swap_add(a), __ATOMIC_SEQ_CST);
	}
	qp->resp.msn = droce_msn_add(qp->resp.msn, 1);
	*res = (struct rc_rd_resource){
		.valid = true, .atomic = true, .first_psn = r->psn, .last_psn = r->psn,
		.va = r->va, .rkey = r->rkey, .length = 8, .orig = orig, .msn = qp->resp.msn,
	};
	rc_send_ack(qp, SYNDROME_ACK, r->psn, res);
	qp->resp.psn = droce_psn_add(r->psn, 1);
	return RESP_DONE;
}

static enum resp_step
resp_complete(struct droce_qp *qp, const struct resp_req *r)
{
	struct rc_responder *resp = &qp->resp;
	bool imm = opcode_has_imm(r->pkt->opcode);

	resp->msn = droce_msn_add(resp->msn, 1);
	if ((r->flags & DROCE_HDR_SEND) || imm) {
		uint32_t consumer = atomic_load_explicit(&qp->rq.consumer, memory_order_relaxed);
		struct droce_wc wc = {
			.wr_id = recv_wqe(qp)->wr_id, .status = DROCE_WC_SUCCESS,
			.opcode = (r->flags & DROCE_HDR_SEND) ? DROCE_WC_RECV
							      : DROCE_WC_RECV_RDMA_WITH_IMM,
			.byte_len = (r->flags & DROCE_HDR_SEND) ? resp->recv_offset
								: resp->write_total,
			.qp_num = qp->qpn, .src_qp = qp->attr.dest_qp_num,
		};

		if (imm) {
			wc.imm_data = rte_cpu_to_be_32(droce_immdt(droce_pkt_ext(r->pkt,
										 DROCE_EXT_IMMDT)));
			wc.wc_flags = DROCE_WC_WITH_IMM;
		}
		/* The slot is free before its CQE shows (see wqe_retire()). */
		atomic_store_explicit(&qp->rq.consumer, consumer + 1, memory_order_release);
		if (consumer + 1 != atomic_load_explicit(&qp->rq.producer, memory_order_relaxed)) {
			const struct rc_recv_wqe *next = rc_queue_slot(&qp->rq, consumer + 1);

			if (next->num_sge != 0)
				rte_prefetch0_write((const void *)(uintptr_t)next->sge[0].addr);
		}
		rc_complete(qp, qp->init.recv_cq, &wc);
		resp->have_wqe = false;
	}
	return RESP_ACKNOWLEDGE;
}

/*
 * An ACK of what came up to @p psn is owed, sent once at the QP's turn.
 * One request's may wait for the answer the application sends to it
 * (rc_send_ack_lazy()). A burst's goes at the round's end: its sender
 * pipelines, and its window waits for the ACK. So does a resend's.
 */
static void
owe_ack(struct droce_qp *qp, uint32_t psn, bool may_wait)
{
	qp->resp.ack_lazy = may_wait && !qp->resp.ack_owed;
	qp->resp.ack_owed = true;
	qp->resp.ack_psn = psn;
}

static enum resp_step
resp_acknowledge(struct droce_qp *qp, const struct resp_req *r)
{
	qp->resp.psn = droce_psn_add(r->psn, 1);
	if (is_rc(qp) && droce_bth_ackreq(r->pkt->bth))
		owe_ack(qp, r->psn, true);
	return RESP_DONE;
}

/* ---- detours ------------------------------------------------------------------ */

static struct rc_rd_resource *
resource_of(struct droce_qp *qp, uint32_t psn, bool atomic)
{
	for (uint32_t i = 0; i < qp->resp.nb_res; i++) {
		struct rc_rd_resource *res = &qp->resp.res[i];

		if (res->valid && res->atomic == atomic &&
		    droce_psn_cmp(psn, res->first_psn) >= 0 &&
		    droce_psn_cmp(psn, res->last_psn) <= 0)
			return res;
	}
	return NULL;
}

static enum resp_step
resp_duplicate(struct droce_qp *qp, const struct resp_req *r)
{
	struct rc_rd_resource *res;

	qp->owner->stats.duplicates++;
	if (r->flags & (DROCE_HDR_SEND | DROCE_HDR_WRITE)) {
		/* Not done again: the ACK says how far this side has come. */
		owe_ack(qp, droce_psn_sub(qp->resp.psn, 1), false);
		return RESP_DONE;
	}
	if (r->flags & DROCE_HDR_ATOMIC) {
		res = resource_of(qp, r->psn, true);
		if (res != NULL && res->first_psn == r->psn)
			rc_send_ack(qp, SYNDROME_ACK, r->psn, res);
		return RESP_DONE;
	}
	/* A READ asked again, perhaps for its tail only: answer from there if
	 * it lies inside what was asked first.
	 */
	res = resource_of(qp, r->psn, false);
	if (res != NULL && r->rkey == res->rkey && r->va >= res->va &&
	    r->va - res->va <= res->length && r->dma_len <= res->length - (r->va - res->va))
		answer_start(qp, res, r->psn, (uint32_t)(r->va - res->va));
	return RESP_DONE;
}

static enum resp_step
resp_nak_sequence(struct droce_qp *qp)
{
	/* One NAK per gap; the rest are dropped until the PSN shows up. */
	if (!qp->resp.nak_sent) {
		qp->resp.nak_sent = true;
		qp->owner->stats.seq_naks_sent++;
		rc_send_ack(qp, SYNDROME_NAK_SEQUENCE, qp->resp.psn, NULL);
	}
	return RESP_DONE;
}

static enum resp_step
resp_rnr(struct droce_qp *qp, const struct resp_req *r)
{
	qp->owner->stats.rnr_naks_sent++;
	rc_send_ack(qp, SYNDROME_RNR | (qp->attr.min_rnr_timer & 0x1f), r->psn, NULL);
	return RESP_DONE;
}

static enum resp_step
resp_error(struct droce_qp *qp, const struct resp_req *r, uint8_t syndrome,
	   enum droce_wc_status local, const char *why)
{
	if (local != DROCE_WC_SUCCESS && qp->resp.have_wqe) {
		uint32_t consumer = atomic_load_explicit(&qp->rq.consumer, memory_order_relaxed);
		struct droce_wc wc = {
			.wr_id = recv_wqe(qp)->wr_id, .status = local, .opcode = DROCE_WC_RECV,
			.qp_num = qp->qpn, .src_qp = qp->attr.dest_qp_num,
		};

		atomic_store_explicit(&qp->rq.consumer, consumer + 1, memory_order_release);
		rc_complete(qp, qp->init.recv_cq, &wc);
		qp->resp.have_wqe = false;
	}
	if (is_rc(qp))
		rc_send_ack(qp, syndrome, r->psn, NULL);
	rc_qp_fail(qp, why);
	return RESP_DONE;
}

/* ---- the walk --------------------------------------------------------------------- */

/* The packet from its IP header, and its length to the end (ICRC in). */
static const uint8_t *
packet_l3(const struct rte_mbuf *m, uint32_t *len)
{
	const struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m, const struct rte_udp_hdr *,
								droce_udp_pkt_l4_offset(m));

	*len = droce_udp_pkt_l3_len(m) + rte_be_to_cpu_16(udp->dgram_len);
	return rte_pktmbuf_mtod_offset(m, const uint8_t *, DROCE_UDP_PKT_L3_OFFSET);
}

static void
request_take(struct droce_qp *qp, const struct droce_pkt *pkt, const struct rte_mbuf *m,
	     bool icrc_pending)
{
	enum resp_step step = RESP_CHECK_PSN;
	struct resp_req r = {
		.pkt = pkt, .flags = pkt->info->flags, .psn = droce_bth_psn(pkt->bth),
		.icrc_pending = icrc_pending,
	};

	if (icrc_pending)
		r.l3 = packet_l3(m, &r.l3_len);

	if (r.flags & DROCE_HDR_RETH) {
		const struct droce_reth *reth = droce_pkt_ext(pkt, DROCE_EXT_RETH);

		r.va = droce_reth_va(reth);
		r.rkey = droce_reth_rkey(reth);
		r.dma_len = droce_reth_len(reth);
	} else if (r.flags & DROCE_HDR_ATOMIC) {
		const struct droce_atmeth *a = droce_pkt_ext(pkt, DROCE_EXT_ATMETH);

		r.va = droce_atmeth_va(a);
		r.rkey = droce_atmeth_rkey(a);
		r.dma_len = 8;
	}
	while (step != RESP_DONE) {
		/* The checks leave nothing that a bad packet's resend would
		 * not set the same way; what acts after them (answers, NAKs,
		 * errors) acts only on a packet whose ICRC holds. The copy
		 * (RESP_EXECUTE) checks it in its own pass.
		 */
		if (step > RESP_EXECUTE && !resp_icrc_ok(qp, &r))
			break;
		switch (step) {
		case RESP_CHECK_PSN:
			step = resp_check_psn(qp, &r);
			break;
		case RESP_CHECK_OP_SEQ:
			step = resp_check_op_seq(qp, &r);
			break;
		case RESP_CHECK_OP_VALID:
			step = resp_check_op_valid(qp, &r);
			break;
		case RESP_CHECK_RESOURCE:
			step = resp_check_resource(qp, &r);
			break;
		case RESP_CHECK_LENGTH:
			step = resp_check_length(qp, &r);
			break;
		case RESP_CHECK_RKEY:
			step = resp_check_rkey(qp, &r);
			break;
		case RESP_EXECUTE:
			step = resp_execute(qp, &r);
			break;
		case RESP_READ_REPLY:
			step = resp_read_reply(qp, &r);
			break;
		case RESP_ATOMIC_REPLY:
			step = resp_atomic_reply(qp, &r);
			break;
		case RESP_COMPLETE:
			step = resp_complete(qp, &r);
			break;
		case RESP_ACKNOWLEDGE:
			step = resp_acknowledge(qp, &r);
			break;
		case RESP_DUPLICATE:
			step = resp_duplicate(qp, &r);
			break;
		case RESP_NAK_SEQUENCE:
			step = resp_nak_sequence(qp);
			break;
		case RESP_RNR:
			step = resp_rnr(qp, &r);
			break;
		case RESP_ERR_INVALID:
			step = resp_error(qp, &r, SYNDROME_NAK_INVALID, DROCE_WC_SUCCESS,
					  "responder: invalid request (opcode sequence, access, length)");
			break;
		case RESP_ERR_LENGTH:
			step = resp_error(qp, &r, SYNDROME_NAK_INVALID, DROCE_WC_LOC_LEN_ERR,
					  "responder: a SEND longer than its receive");
			break;
		case RESP_ERR_ACCESS:
			step = resp_error(qp, &r, SYNDROME_NAK_ACCESS, DROCE_WC_SUCCESS,
					  "responder: rkey or range refused");
			break;
		case RESP_ERR_OPERATIONAL:
			step = resp_error(qp, &r, SYNDROME_NAK_OPERATIONAL, DROCE_WC_LOC_QP_OP_ERR,
					  "responder: a receive's memory is gone");
			break;
		case RESP_DONE:
			break;
		}
	}
}

/* ---- the owner's entry points -------------------------------------------------------- */

void
rc_responder_input(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *pkt,
		   bool icrc_pending)
{
	struct rc_responder *resp = &qp->resp;

	/* The READ being answered, asked again from a later point (part of
	 * the answer was lost): answer from there at once, the rest of the
	 * old answer would be wasted. Other requests keep their turn.
	 */
	if (pkt->opcode == DROCE_OP_READ_REQUEST && resp->answering != NULL &&
	    droce_psn_cmp(droce_bth_psn(pkt->bth), resp->answering->first_psn) >= 0 &&
	    droce_psn_cmp(droce_bth_psn(pkt->bth), resp->answering->last_psn) <= 0) {
		request_take(qp, pkt, m, false);
		rte_pktmbuf_free(m);
		return;
	}
	if (resp->answering != NULL || resp->held_count != 0) {
		/* Requests are taken in order: after the READ being answered. */
		if (resp->held_count == RC_HELD_PKTS) {
			qp->owner->stats.held_full++;
			rte_pktmbuf_free(m);
			return;
		}
		if (icrc_pending) { /* taken later, by held_take(), as checked */
			uint32_t len;
			const uint8_t *l3 = packet_l3(m, &len);

			if (!droce_icrc_ok(l3, len)) {
				qp->owner->stats.bad_icrc++;
				rte_pktmbuf_free(m);
				return;
			}
		}
		resp->held[(resp->held_head + resp->held_count++) % RC_HELD_PKTS] = m;
		return;
	}
	request_take(qp, pkt, m, icrc_pending);
	rte_pktmbuf_free(m);
}

/* The next packet of the READ answer in progress. */
static bool
answer_one(struct droce_qp *qp)
{
	struct rc_responder *resp = &qp->resp;
	const struct rc_rd_resource *res = resp->answering;
	uint32_t offset = resp->answer_offset;
	uint32_t len = RTE_MIN(qp->mtu, res->length - offset);
	bool first = offset == resp->answer_start, last = offset + len == res->length;
	struct droce_frame_spec spec = {
		.psn = resp->answer_psn, .syndrome = SYNDROME_ACK, .msn = res->msn,
		.payload_len = len,
	};
	struct droce_mr *mr = NULL;
	struct rte_mbuf *m;

	spec.opcode = first && last ? DROCE_OP_READ_RESPONSE_ONLY
		      : first ? DROCE_OP_READ_RESPONSE_FIRST
		      : last ? DROCE_OP_READ_RESPONSE_LAST : DROCE_OP_READ_RESPONSE_MIDDLE;
	if (len != 0) {
		mr = rc_mr_check(qp->pd, res->rkey, res->va + offset, len,
				 DROCE_ACCESS_REMOTE_READ);
		if (mr == NULL) {
			/* Deregistered while answered: the requester times out. */
			resp->answering = NULL;
			return false;
		}
		spec.payload = rc_mr_cpu(mr, res->va + offset);
	}
	/* Copied, never sent from the region: a READ's target may change
	 * while it is read, and the ICRC must hold what goes out.
	 */
	m = rc_frame(qp, &spec, NULL, 0, 0);
	if (m == NULL)
		return false;
	rc_send_frame(qp, m);
	resp->answer_offset = offset + len;
	resp->answer_psn = droce_psn_add(resp->answer_psn, 1);
	if (last)
		resp->answering = NULL;
	return true;
}

/* Parse a held packet again (it was checked when it came). */
static void
held_take(struct droce_qp *qp, struct rte_mbuf *m)
{
	const struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m, const struct rte_udp_hdr *,
								droce_udp_pkt_l4_offset(m));
	struct droce_pkt pkt;

	if (droce_roce_parse(udp + 1, rte_be_to_cpu_16(udp->dgram_len) - (uint32_t)sizeof(*udp),
			     &pkt) == DROCE_PARSE_OK)
		request_take(qp, &pkt, m, false);
	rte_pktmbuf_free(m);
}

unsigned int
rc_responder_run(struct droce_qp *qp, unsigned int budget)
{
	struct rc_responder *resp = &qp->resp;
	unsigned int sent = 0;

	while (sent < budget) {
		if (resp->answering != NULL) {
			if (!answer_one(qp))
				break;
			sent++;
			continue;
		}
		if (resp->held_count == 0)
			break;
		struct rte_mbuf *m = resp->held[resp->held_head];

		resp->held_head = (resp->held_head + 1) % RC_HELD_PKTS;
		resp->held_count--;
		held_take(qp, m);
		if (qp->attr.qp_state == DROCE_QPS_ERR)
			break;
	}
	return sent;
}

void
rc_responder_flush_ack(struct droce_qp *qp)
{
	if (!qp->resp.ack_owed)
		return;
	qp->resp.ack_owed = false;
	if (qp->resp.ack_lazy)
		rc_send_ack_lazy(qp, SYNDROME_ACK, qp->resp.ack_psn);
	else
		rc_send_ack(qp, SYNDROME_ACK, qp->resp.ack_psn, NULL);
}

static void
held_drop(struct droce_qp *qp)
{
	struct rc_responder *resp = &qp->resp;

	while (resp->held_count != 0) {
		rte_pktmbuf_free(resp->held[resp->held_head]);
		resp->held_head = (resp->held_head + 1) % RC_HELD_PKTS;
		resp->held_count--;
	}
}

int
rc_responder_init(struct droce_qp *qp)
{
	struct rc_responder *resp = &qp->resp;
	struct rc_rd_resource *res = resp->res;

	held_drop(qp);
	*resp = (struct rc_responder){
		.psn = qp->attr.rq_psn, .res = res, .nb_res = qp->attr.max_dest_rd_atomic,
	};
	if (resp->res == NULL) {
		resp->res = rte_zmalloc("droce_rc_res", sizeof(*res) * RC_MAX_RD_ATOMIC, 0);
		if (resp->res == NULL)
			return -ENOMEM;
	}
	memset(resp->res, 0, sizeof(*res) * RC_MAX_RD_ATOMIC);
	return 0;
}

void
rc_responder_free(struct droce_qp *qp)
{
	held_drop(qp);
	rte_free(qp->resp.res);
	qp->resp.res = NULL;
}
