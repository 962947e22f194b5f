/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The requester: turns send WQEs into request packets, one path-MTU
 * segment at a time, in the steps rxe's requester takes:
 *
 *   REQ_NEXT_WQE -> REQ_CHECK_FENCE -> REQ_CHECK_RD_ATOMIC -> REQ_START_WQE
 *   -> REQ_CHECK_WINDOW -> REQ_SEND_PACKET -> (REQ_WQE_SENT) -> REQ_NEXT_WQE
 *
 * and REQ_KEY_GONE when a region the WQE sends from was deregistered:
 * the requester stops at that WQE until the completer fails it.
 *
 * A WQE's PSNs are fixed when it starts (a READ takes one per response
 * packet it will get), so that a go-back-N resend carries the same PSNs
 * as the first time and the responder can tell it is a duplicate.
 */

#include <inttypes.h>

#include <rte_common.h>
#include <rte_errno.h>

#include "rc_private.h"

enum req_step {
	REQ_NEXT_WQE,
	REQ_CHECK_FENCE,
	REQ_CHECK_RD_ATOMIC,
	REQ_START_WQE,
	REQ_CHECK_WINDOW,
	REQ_SEND_PACKET,
	REQ_WQE_SENT,
	REQ_KEY_GONE,
	REQ_STOP,           /* nothing more this round */
};

static bool
wqe_is_read(const struct rc_send_wqe *wqe)
{
	return wqe->wr.opcode == DROCE_WR_RDMA_READ;
}

static bool
wqe_is_atomic(const struct rc_send_wqe *wqe)
{
	return wqe->wr.opcode == DROCE_WR_ATOMIC_CMP_AND_SWP ||
	       wqe->wr.opcode == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* PSNs the WQE's message takes. */
static uint32_t
wqe_psns(const struct droce_qp *qp, const struct rc_send_wqe *wqe)
{
	if (wqe_is_atomic(wqe))
		return 1;
	return RTE_MAX(1u, (wqe->length + qp->mtu - 1) / qp->mtu);
}

/* Requests in flight that a responder must keep state for: a QP given
 * max_rd_atomic 0 still sends one at a time rather than never.
 */
static uint32_t
rd_atomic_limit(const struct droce_qp *qp)
{
	return RTE_MAX(1u, (uint32_t)qp->attr.max_rd_atomic);
}

static enum req_step
req_check_fence(struct droce_qp *qp, const struct rc_send_wqe *wqe)
{
	/* A fenced request waits for the READs and atomics before it. */
	if ((wqe->wr.send_flags & DROCE_SEND_FENCE) && qp->req.rd_atomic != 0)
		return REQ_STOP;
	return REQ_CHECK_RD_ATOMIC;
}

static enum req_step
req_check_rd_atomic(struct droce_qp *qp, const struct rc_send_wqe *wqe)
{
	if ((wqe_is_read(wqe) || wqe_is_atomic(wqe)) && qp->req.rd_atomic >= rd_atomic_limit(qp))
		return REQ_STOP;
	return REQ_START_WQE;
}

static enum req_step
req_start_wqe(struct droce_qp *qp, struct rc_send_wqe *wqe)
{
	wqe->started = true;
	wqe->first_psn = qp->req.psn;
	wqe->last_psn = droce_psn_add(qp->req.psn, wqe_psns(qp, wqe) - 1);
	wqe->sent = 0;
	wqe->received = 0;
	if (wqe_is_read(wqe) || wqe_is_atomic(wqe))
		qp->req.rd_atomic++;
	return REQ_CHECK_WINDOW;
}

static enum req_step
req_check_window(const struct droce_qp *qp)
{
	if (droce_psn_sub(qp->req.psn, qp->comp.psn) >= RC_WINDOW_PSNS)
		return REQ_STOP;
	return REQ_SEND_PACKET;
}

/* Opcodes of a SEND or WRITE segment, by position in the message. */
static uint8_t
segment_opcode(const struct rc_send_wqe *wqe, bool first, bool last)
{
	static const uint8_t send_ops[2][2][2] = {
		/* [imm][first][last] */
		{ { DROCE_OP_SEND_MIDDLE, DROCE_OP_SEND_LAST },
		  { DROCE_OP_SEND_FIRST, DROCE_OP_SEND_ONLY } },
		{ { DROCE_OP_SEND_MIDDLE, DROCE_OP_SEND_LAST_IMM },
		  { DROCE_OP_SEND_FIRST, DROCE_OP_SEND_ONLY_IMM } },
	};
	static const uint8_t write_ops[2][2][2] = {
		{ { DROCE_OP_WRITE_MIDDLE, DROCE_OP_WRITE_LAST },
		  { DROCE_OP_WRITE_FIRST, DROCE_OP_WRITE_ONLY } },
		{ { DROCE_OP_WRITE_MIDDLE, DROCE_OP_WRITE_LAST_IMM },
		  { DROCE_OP_WRITE_FIRST, DROCE_OP_WRITE_ONLY_IMM } },
	};
	enum droce_wr_opcode op = wqe->wr.opcode;
	bool imm = op == DROCE_WR_SEND_WITH_IMM || op == DROCE_WR_RDMA_WRITE_WITH_IMM;
	bool send = op == DROCE_WR_SEND || op == DROCE_WR_SEND_WITH_IMM;

	return (send ? send_ops : write_ops)[imm][first][last];
}

/* Sent up to @p psn_after (exclusive); a resend after a rewind stays
 * below the high-water mark the completer judges answers by.
 */
static void
req_sent_up_to(struct droce_qp *qp, uint32_t psn_after)
{
	qp->req.psn = psn_after;
	if (droce_psn_cmp(psn_after, qp->req.psn_end) > 0)
		qp->req.psn_end = psn_after;
}

/* The next segment of a SEND or WRITE. */
static bool
send_segment(struct droce_qp *qp, struct rc_send_wqe *wqe)
{
	uint32_t offset = wqe->sent;
	uint32_t len = RTE_MIN(qp->mtu, wqe->length - offset);
	bool first = offset == 0, last = offset + len == wqe->length;
	uint32_t psn = droce_psn_add(wqe->first_psn, offset / qp->mtu);
	struct droce_frame_spec spec = {
		.opcode = segment_opcode(wqe, first, last),
		.psn = psn,
		.se = last && (wqe->wr.send_flags & DROCE_SEND_SOLICITED),
		.va = wqe->wr.wr.rdma.remote_addr, .rkey = wqe->wr.wr.rdma.rkey,
		.dma_len = wqe->length,
		.imm = rte_be_to_cpu_32(wqe->wr.imm_data),
		.payload_len = len,
	};
	struct rte_mbuf *m;

	spec.ackreq = last || ++qp->req.unacked_pkts >= RC_ACKREQ_EVERY;
	if (wqe->wr.send_flags & DROCE_SEND_INLINE) {
		spec.payload = (const uint8_t *)(wqe->sge + qp->init.cap.max_send_sge) + offset;
		m = rc_frame(qp, &spec, NULL, 0, 0);
	} else {
		m = rc_frame(qp, &spec, wqe->sge, (uint32_t)wqe->wr.num_sge, offset);
	}
	if (m == NULL)
		return false;
	if (spec.ackreq)
		qp->req.unacked_pkts = 0;
	wqe->sent = offset + len;
	req_sent_up_to(qp, droce_psn_add(psn, 1));
	rc_send_frame(qp, m);
	return true;
}

/* A READ request for what has not come yet (all of it, the first time). */
static bool
send_read(struct droce_qp *qp, struct rc_send_wqe *wqe)
{
	struct droce_frame_spec spec = {
		.opcode = DROCE_OP_READ_REQUEST,
		.psn = droce_psn_add(wqe->first_psn, wqe->received / qp->mtu),
		.ackreq = true,
		.va = wqe->wr.wr.rdma.remote_addr + wqe->received,
		.rkey = wqe->wr.wr.rdma.rkey,
		.dma_len = wqe->length - wqe->received,
	};
	struct rte_mbuf *m = rc_frame(qp, &spec, NULL, 0, 0);

	if (m == NULL)
		return false;
	wqe->sent = wqe->length;
	req_sent_up_to(qp, droce_psn_add(wqe->last_psn, 1));
	qp->req.unacked_pkts = 0;
	rc_send_frame(qp, m);
	return true;
}

static bool
send_atomic(struct droce_qp *qp, struct rc_send_wqe *wqe)
{
	struct droce_frame_spec spec = {
		.opcode = wqe->wr.opcode == DROCE_WR_ATOMIC_CMP_AND_SWP ? DROCE_OP_COMPARE_SWAP
									: DROCE_OP_FETCH_ADD,
		.psn = wqe->first_psn, .ackreq = true,
		.va = wqe->wr.wr.atomic.remote_addr, .rkey = wqe->wr.wr.atomic.rkey,
		.swap_add = wqe->wr.opcode == DROCE_WR_ATOMIC_CMP_AND_SWP
			    ? wqe->wr.wr.atomic.swap : wqe->wr.wr.atomic.compare_add,
		.compare = wqe->wr.wr.atomic.compare_add,
	};
	struct rte_mbuf *m = rc_frame(qp, &spec, NULL, 0, 0);

	if (m == NULL)
		return false;
	wqe->sent = wqe->length;
	req_sent_up_to(qp, droce_psn_add(wqe->first_psn, 1));
	qp->req.unacked_pkts = 0;
	rc_send_frame(qp, m);
	return true;
}

static enum req_step
req_send_packet(struct droce_qp *qp, struct rc_send_wqe *wqe)
{
	bool sent;

	if (wqe_is_read(wqe))
		sent = send_read(qp, wqe);
	else if (wqe_is_atomic(wqe))
		sent = send_atomic(qp, wqe);
	else
		sent = send_segment(qp, wqe);
	if (!sent && rte_errno == EACCES)
		return REQ_KEY_GONE;
	qp->req.starved = !sent;
	if (!sent)
		return REQ_STOP; /* no mbuf now; the next round tries again */
	return wqe->sent >= wqe->length ? REQ_WQE_SENT : REQ_CHECK_WINDOW;
}

/* As ibverbs: the WQE fails with a local protection error, the QP too,
 * once the WQE is the oldest (rc_completer_fail()).
 */
static enum req_step
req_key_gone(struct droce_qp *qp, struct rc_send_wqe *wqe)
{
	RC_LOG(ERR, "QP 0x%x: work request %" PRIu64 " sends from a region deregistered since it was posted",
	       qp->qpn, wqe->wr.wr_id);
	rc_completer_fail(qp, wqe, DROCE_WC_LOC_PROT_ERR);
	return REQ_STOP;
}

unsigned int
rc_requester_run(struct droce_qp *qp, unsigned int budget)
{
	enum req_step step = REQ_NEXT_WQE;
	struct rc_send_wqe *wqe = NULL;
	unsigned int sent = 0;

	while (step != REQ_STOP) {
		switch (step) {
		case REQ_NEXT_WQE:
			if (qp->comp.rnr_waiting || sent == budget ||
			    qp->req.head == atomic_load_explicit(&qp->sq.producer,
								 memory_order_acquire)) {
				step = REQ_STOP;
				break;
			}
			wqe = rc_queue_slot(&qp->sq, qp->req.head);
			if (wqe->local_error != DROCE_WC_SUCCESS)
				step = REQ_STOP; /* it fails once it is the oldest */
			else
				step = wqe->started ? REQ_CHECK_WINDOW : REQ_CHECK_FENCE;
			break;
		case REQ_CHECK_FENCE:
			step = req_check_fence(qp, wqe);
			break;
		case REQ_CHECK_RD_ATOMIC:
			step = req_check_rd_atomic(qp, wqe);
			break;
		case REQ_START_WQE:
			step = req_start_wqe(qp, wqe);
			break;
		case REQ_CHECK_WINDOW:
			step = sent == budget ? REQ_STOP : req_check_window(qp);
			break;
		case REQ_SEND_PACKET:
			step = req_send_packet(qp, wqe);
			if (step != REQ_STOP)
				sent++;
			break;
		case REQ_WQE_SENT:
			qp->req.head++;
			step = REQ_NEXT_WQE;
			break;
		case REQ_KEY_GONE:
			step = req_key_gone(qp, wqe);
			break;
		case REQ_STOP:
			break;
		}
	}
	if (sent != 0 && qp->attr.qp_state != DROCE_QPS_ERR)
		rc_completer_arm(qp);
	return sent;
}

void
rc_requester_rewind(struct droce_qp *qp)
{
	uint32_t consumer = atomic_load_explicit(&qp->sq.consumer, memory_order_relaxed);

	for (uint32_t i = consumer; i != qp->req.head; i++) {
		struct rc_send_wqe *wqe = rc_queue_slot(&qp->sq, i);

		if (wqe_is_read(wqe))
			wqe->sent = wqe->received; /* ask again for the rest */
		else if (wqe_is_atomic(wqe) ||
			 droce_psn_cmp(qp->comp.psn, wqe->first_psn) <= 0)
			wqe->sent = 0;
		else /* acknowledged up to comp.psn */
			wqe->sent = droce_psn_sub(qp->comp.psn, wqe->first_psn) * qp->mtu;
	}
	/* The WQE being sent when the rewind came goes back too. */
	if (qp->req.head != atomic_load_explicit(&qp->sq.producer, memory_order_acquire)) {
		struct rc_send_wqe *wqe = rc_queue_slot(&qp->sq, qp->req.head);

		if (wqe->started && !wqe_is_read(wqe) && !wqe_is_atomic(wqe))
			wqe->sent = droce_psn_cmp(qp->comp.psn, wqe->first_psn) <= 0 ? 0
				    : droce_psn_sub(qp->comp.psn, wqe->first_psn) * qp->mtu;
	}
	qp->req.head = consumer;
	qp->req.psn = qp->comp.psn;
	qp->req.unacked_pkts = 0;
	qp->owner->stats.retransmits++;
	rc_qp_activate(qp);
}
