/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The completer: what the responder's ACKs, NAKs and READ/atomic answers
 * mean for the send queue, in the steps rxe's completer takes:
 *
 *   COMP_CHECK_PSN -> COMP_CHECK_ACK -> COMP_ACKED_BEFORE (the WQEs an ACK
 *   or answer covers) -> COMP_READ | COMP_ATOMIC | COMP_ACK | COMP_RNR |
 *   COMP_NAK -> COMP_RETRY | COMP_ERROR
 *
 * An ACK covers every PSN up to its own (coalescing); an answer for a
 * READ or atomic covers every request before it; an ACK that passes a
 * READ whose data never came means the data was lost (an implied NAK).
 * The local ACK timer and the RNR timer run here too.
 */

#include <inttypes.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_cycles.h>

#include "rc_private.h"

enum comp_step {
	COMP_CHECK_PSN,
	COMP_CHECK_ACK,
	COMP_READ,
	COMP_ATOMIC,
	COMP_ACK,
	COMP_RNR,
	COMP_NAK,
	COMP_RETRY,
	COMP_DONE,
};

/* AETH syndrome: the top 3 bits say what it is. */
#define AETH_TYPE(s) ((s) >> 5)
#define AETH_TYPE_ACK 0
#define AETH_TYPE_RNR 1
#define AETH_TYPE_NAK 3
#define AETH_CODE(s) ((s) & 0x1f)
#define NAK_PSN_SEQUENCE 0
#define NAK_INVALID_REQUEST 1
#define NAK_REMOTE_ACCESS 2
#define NAK_REMOTE_OPERATIONAL 3

/* Retry counts of 7 mean for ever. */
#define RETRY_FOREVER 7

/* RNR timer codes in microseconds (IBA table 45; code 0 is the longest). */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520,
};

static struct rc_send_wqe *
oldest_wqe(struct droce_qp *qp)
{
	uint32_t consumer = atomic_load_explicit(&qp->sq.consumer, memory_order_relaxed);

	if (consumer == qp->req.head) {
		/* Nothing sent is waiting, unless the head WQE is part sent. */
		struct rc_send_wqe *wqe;

		if (consumer == atomic_load_explicit(&qp->sq.producer, memory_order_acquire))
			return NULL;
		wqe = rc_queue_slot(&qp->sq, consumer);
		return wqe->started ? wqe : NULL;
	}
	return rc_queue_slot(&qp->sq, consumer);
}

static bool
wqe_answered(const struct rc_send_wqe *wqe)
{
	return wqe->wr.opcode == DROCE_WR_RDMA_READ ||
	       wqe->wr.opcode == DROCE_WR_ATOMIC_CMP_AND_SWP ||
	       wqe->wr.opcode == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* The oldest WQE is done: a CQE when asked for (or on error), then the
 * next one.
 */
static void
wqe_retire(struct droce_qp *qp, struct rc_send_wqe *wqe, enum droce_wc_status status)
{
	uint32_t consumer = atomic_load_explicit(&qp->sq.consumer, memory_order_relaxed);
	bool complete = wqe->signaled || status != DROCE_WC_SUCCESS;
	struct droce_wc wc = {
		.wr_id = wqe->wr.wr_id, .status = status,
		.opcode = rc_wc_opcode[wqe->wr.opcode], .byte_len = wqe->length,
		.qp_num = qp->qpn,
	};

	if (wqe_answered(wqe))
		qp->req.rd_atomic--;
	if (consumer == qp->req.head)
		qp->req.head++;
	/* The slot is free before its CQE shows: a poller on another thread
	 * that posts again on seeing the CQE must find room.
	 */
	atomic_store_explicit(&qp->sq.consumer, consumer + 1, memory_order_release);
	if (complete)
		rc_complete(qp, qp->init.send_cq, &wc);
}

/* Acknowledged up to @p psn_after (exclusive). Only a PSN that moves is
 * progress: the peer is alive, the retry counts start again.
 */
static void
progress(struct droce_qp *qp, uint32_t psn_after)
{
	if (droce_psn_cmp(psn_after, qp->comp.psn) <= 0)
		return;
	qp->comp.psn = psn_after;
	/* An answer that a rewind had given up on came after all: what it
	 * acknowledges is not sent again.
	 */
	if (droce_psn_cmp(qp->comp.psn, qp->req.psn) > 0)
		qp->req.psn = qp->comp.psn;
	qp->comp.went_back = false;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_retry_left = qp->attr.rnr_retry;
}

/* An answer shows that earlier ones were lost: go back once, and let
 * the answers still on their way (to the old request) pass until the
 * resend makes progress, or each of them would start yet another resend.
 */
static enum comp_step
comp_lost(struct droce_qp *qp)
{
	if (qp->comp.went_back)
		return COMP_DONE;
	qp->comp.went_back = true;
	return COMP_RETRY;
}

/* The oldest WQE fails with @p status (a WQE the requester failed, with
 * its own): the QP goes to ERR, the rest flush.
 */
static enum comp_step
comp_error(struct droce_qp *qp, struct rc_send_wqe *wqe, enum droce_wc_status status)
{
	char why[96];

	if (wqe != NULL && wqe->local_error != DROCE_WC_SUCCESS)
		status = wqe->local_error;
	snprintf(why, sizeof(why), "send queue: %s", droce_wc_status_str(status));
	if (wqe != NULL)
		wqe_retire(qp, wqe, status);
	rc_qp_fail(qp, why);
	return COMP_DONE;
}

void
rc_completer_fail(struct droce_qp *qp, struct rc_send_wqe *wqe, enum droce_wc_status status)
{
	if (wqe == oldest_wqe(qp)) {
		comp_error(qp, wqe, status);
		return;
	}
	wqe->local_error = status;
	qp->req.stopped_at_error = true;
}

/* Fail the oldest WQE if the requester failed it (it waited for the
 * older ones): true if the QP went to ERR.
 */
static bool
comp_fail_local_error(struct droce_qp *qp)
{
	struct rc_send_wqe *wqe;

	if (likely(!qp->req.stopped_at_error))
		return false;
	wqe = oldest_wqe(qp);
	if (wqe == NULL || wqe->local_error == DROCE_WC_SUCCESS)
		return false;
	comp_error(qp, wqe, wqe->local_error);
	return true;
}

/* Every SEND/WRITE wholly before @p psn (exclusive) is acknowledged;
 * returns the first WQE that is not, or NULL. An answer for a READ or
 * atomic stops the walk at that WQE. A started WQE's PSNs hold even when
 * a rewind took it back and it is not all sent again: only an error NAK
 * (comp_check_psn()) names a PSN past what is sent now.
 */
static struct rc_send_wqe *
comp_acked_before(struct droce_qp *qp, uint32_t psn)
{
	struct rc_send_wqe *wqe;

	while ((wqe = oldest_wqe(qp)) != NULL && !wqe_answered(wqe) && wqe->started &&
	       wqe->local_error == DROCE_WC_SUCCESS && droce_psn_cmp(wqe->last_psn, psn) < 0) {
		progress(qp, droce_psn_add(wqe->last_psn, 1));
		wqe_retire(qp, wqe, DROCE_WC_SUCCESS);
	}
	return wqe;
}

/* A NAK that ends the QP: invalid request, remote access or operational. */
static bool
is_error_nak(const struct droce_pkt *pkt)
{
	uint8_t syndrome;

	if (pkt->opcode != DROCE_OP_ACKNOWLEDGE)
		return false;
	syndrome = droce_aeth_syndrome(droce_pkt_ext(pkt, DROCE_EXT_AETH));
	return AETH_TYPE(syndrome) == AETH_TYPE_NAK && AETH_CODE(syndrome) != NAK_PSN_SEQUENCE;
}

static enum comp_step
comp_check_psn(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	uint32_t psn = droce_bth_psn(pkt->bth);

	/* Answers for PSNs never sent (a ghost) or long acknowledged: stale. */
	if (droce_psn_cmp(psn, qp->req.psn_end) >= 0)
		return COMP_DONE;
	if (droce_psn_cmp(psn, qp->comp.psn) < 0)
		return COMP_DONE;
	/* Answers to what a rewind took back wait for the resend's, but for
	 * a NAK that ends the QP (the peer, in ERR, answers no resend), and
	 * for ACKs and NAKs while the requester is stopped at a WQE it
	 * failed: nothing past it is sent again, so they answer the first
	 * sending.
	 */
	if (droce_psn_cmp(psn, qp->req.psn) >= 0 && !is_error_nak(pkt) &&
	    !(pkt->opcode == DROCE_OP_ACKNOWLEDGE && qp->req.stopped_at_error))
		return COMP_DONE;
	return COMP_CHECK_ACK;
}

static enum comp_step
comp_check_ack(struct droce_qp *qp, const struct droce_pkt *pkt, struct rc_send_wqe **wqe)
{
	uint32_t psn = droce_bth_psn(pkt->bth);

	qp->owner->stats.acks_received++;
	switch (pkt->opcode) {
	case DROCE_OP_READ_RESPONSE_FIRST:
	case DROCE_OP_READ_RESPONSE_MIDDLE:
	case DROCE_OP_READ_RESPONSE_LAST:
	case DROCE_OP_READ_RESPONSE_ONLY:
		*wqe = comp_acked_before(qp, psn);
		if (*wqe == NULL || (*wqe)->wr.opcode != DROCE_WR_RDMA_READ)
			return COMP_DONE;
		return COMP_READ;
	case DROCE_OP_ATOMIC_ACKNOWLEDGE:
		*wqe = comp_acked_before(qp, psn);
		if (*wqe == NULL || !wqe_answered(*wqe) ||
		    (*wqe)->wr.opcode == DROCE_WR_RDMA_READ)
			return COMP_DONE;
		return COMP_ATOMIC;
	default: {
		uint8_t syndrome = droce_aeth_syndrome(droce_pkt_ext(pkt, DROCE_EXT_AETH));

		switch (AETH_TYPE(syndrome)) {
		case AETH_TYPE_ACK:
			return COMP_ACK;
		case AETH_TYPE_RNR:
			return COMP_RNR;
		case AETH_TYPE_NAK:
			return COMP_NAK;
		default:
			return COMP_DONE; /* reserved */
		}
	}
	}
}

/* A READ response segment: place it, complete the READ on its last. */
static enum comp_step
comp_read(struct droce_qp *qp, const struct droce_pkt *pkt, struct rc_send_wqe *wqe)
{
	uint32_t psn = droce_bth_psn(pkt->bth);
	uint32_t expected = droce_psn_add(wqe->first_psn, wqe->received / qp->mtu);
	bool last = pkt->opcode == DROCE_OP_READ_RESPONSE_LAST ||
		    pkt->opcode == DROCE_OP_READ_RESPONSE_ONLY;
	bool first = pkt->opcode == DROCE_OP_READ_RESPONSE_FIRST ||
		     pkt->opcode == DROCE_OP_READ_RESPONSE_ONLY;
	int32_t ahead = droce_psn_cmp(psn, expected);

	if (ahead < 0)
		return COMP_DONE;       /* a duplicate answer */
	if (ahead > 0)
		return comp_lost(qp);   /* answers were lost: ask for the rest */
	/* A resent READ starts its answer with FIRST/ONLY at any offset. */
	if ((first && wqe->received % qp->mtu != 0) ||
	    (!last && pkt->payload_len != qp->mtu) ||
	    pkt->payload_len > wqe->length - wqe->received)
		return comp_error(qp, wqe, DROCE_WC_BAD_RESP_ERR);
	if (!rc_sge_copy_in(qp, wqe->sge, (uint32_t)wqe->wr.num_sge, wqe->received,
			    pkt->payload, pkt->payload_len))
		return comp_error(qp, wqe, DROCE_WC_LOC_PROT_ERR);
	wqe->received += pkt->payload_len;
	progress(qp, droce_psn_add(psn, 1));
	if (!last)
		return COMP_DONE;
	if (wqe->received != wqe->length)
		return comp_error(qp, wqe, DROCE_WC_BAD_RESP_ERR);
	progress(qp, droce_psn_add(wqe->last_psn, 1));
	wqe_retire(qp, wqe, DROCE_WC_SUCCESS);
	return COMP_DONE;
}

static enum comp_step
comp_atomic(struct droce_qp *qp, const struct droce_pkt *pkt, struct rc_send_wqe *wqe)
{
	uint64_t orig = droce_atmack_orig(droce_pkt_ext(pkt, DROCE_EXT_ATMACK));

	if (droce_bth_psn(pkt->bth) != wqe->first_psn)
		return comp_lost(qp);
	if (!rc_sge_copy_in(qp, wqe->sge, 1, 0, &orig, sizeof(orig)))
		return comp_error(qp, wqe, DROCE_WC_LOC_PROT_ERR);
	progress(qp, droce_psn_add(wqe->first_psn, 1));
	wqe_retire(qp, wqe, DROCE_WC_SUCCESS);
	return COMP_DONE;
}

static enum comp_step
comp_ack(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	uint32_t psn = droce_bth_psn(pkt->bth);
	uint32_t after = droce_psn_add(psn, 1);
	struct rc_send_wqe *wqe = comp_acked_before(qp, after);

	if (wqe == NULL)
		return COMP_DONE;
	if (wqe_answered(wqe)) {
		/* An ACK past a READ or atomic whose answer never came. */
		if (droce_psn_cmp(psn, wqe->first_psn) >= 0)
			return comp_lost(qp);
		progress(qp, wqe->first_psn);
		return COMP_DONE;
	}
	/* Part of a multi-packet message. */
	if (droce_psn_cmp(psn, wqe->first_psn) >= 0)
		progress(qp, after);
	return COMP_DONE;
}

/* A NAK at @p psn acknowledges the requests before it, but not the
 * answers of a READ or atomic there (@p wqe, the oldest not done): those
 * are still owed.
 */
static void
acked_up_to(struct droce_qp *qp, const struct rc_send_wqe *wqe, uint32_t psn)
{
	if (wqe != NULL && wqe_answered(wqe) && droce_psn_cmp(psn, wqe->first_psn) > 0)
		psn = droce_psn_add(wqe->first_psn, wqe->received / qp->mtu);
	if (droce_psn_cmp(psn, qp->comp.psn) > 0)
		qp->comp.psn = psn;
}

static void
rnr_timer_expired(struct rte_timer *t, void *arg)
{
	struct droce_qp *qp = arg;

	(void)t;
	rte_spinlock_lock(&qp->lock);
	if (!qp->dead && qp->comp.rnr_waiting && qp->attr.qp_state != DROCE_QPS_ERR) {
		qp->comp.rnr_waiting = false;
		rc_requester_rewind(qp);
	}
	rc_qp_unlock_owner(qp);
}

static enum comp_step
comp_rnr(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	uint32_t psn = droce_bth_psn(pkt->bth);
	uint8_t code = AETH_CODE(droce_aeth_syndrome(droce_pkt_ext(pkt, DROCE_EXT_AETH)));
	struct rc_send_wqe *wqe = comp_acked_before(qp, psn);

	qp->owner->stats.rnr_naks_received++;
	acked_up_to(qp, wqe, psn);
	if (comp_fail_local_error(qp))
		return COMP_DONE;
	if (qp->comp.rnr_waiting)
		return COMP_DONE; /* the same refusal again: already waiting */
	if (qp->comp.rnr_retry_left == 0)
		return comp_error(qp, wqe, DROCE_WC_RNR_RETRY_EXC_ERR);
	if (qp->comp.rnr_retry_left != RETRY_FOREVER)
		qp->comp.rnr_retry_left--;
	qp->comp.rnr_waiting = true;
	rte_timer_stop(&qp->retransmit_timer);
	qp->comp.timer_armed = false;
	rte_timer_reset(&qp->rnr_timer, rte_get_timer_hz() * rnr_us[code] / 1000000 + 1,
			SINGLE, qp->owner->lcore_id, rnr_timer_expired, qp);
	return COMP_DONE;
}

static enum comp_step
comp_nak(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	uint32_t psn = droce_bth_psn(pkt->bth);
	uint8_t code = AETH_CODE(droce_aeth_syndrome(droce_pkt_ext(pkt, DROCE_EXT_AETH)));
	struct rc_send_wqe *wqe = comp_acked_before(qp, psn);

	switch (code) {
	case NAK_PSN_SEQUENCE:
		qp->owner->stats.seq_naks_received++;
		acked_up_to(qp, wqe, psn);
		return COMP_RETRY;
	case NAK_INVALID_REQUEST:
		return comp_error(qp, wqe, DROCE_WC_REM_INV_REQ_ERR);
	case NAK_REMOTE_ACCESS:
		return comp_error(qp, wqe, DROCE_WC_REM_ACCESS_ERR);
	case NAK_REMOTE_OPERATIONAL:
		return comp_error(qp, wqe, DROCE_WC_REM_OP_ERR);
	default:
		return COMP_DONE; /* reserved codes are ignored */
	}
}

/* Go back to the oldest PSN not acknowledged, spending a retry. */
static enum comp_step
comp_retry(struct droce_qp *qp)
{
	if (comp_fail_local_error(qp))
		return COMP_DONE;       /* nothing to send again before it */
	if (qp->comp.retry_left == 0)
		return comp_error(qp, oldest_wqe(qp), DROCE_WC_RETRY_EXC_ERR);
	if (qp->comp.retry_left != RETRY_FOREVER)
		qp->comp.retry_left--;
	rc_requester_rewind(qp);
	return COMP_DONE;
}

void
rc_completer_input(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	enum comp_step step = COMP_CHECK_PSN;
	struct rc_send_wqe *wqe = NULL;

	if (qp->attr.qp_state != DROCE_QPS_RTS && qp->attr.qp_state != DROCE_QPS_SQD)
		return;
	while (step != COMP_DONE) {
		switch (step) {
		case COMP_CHECK_PSN:
			step = comp_check_psn(qp, pkt);
			break;
		case COMP_CHECK_ACK:
			step = comp_check_ack(qp, pkt, &wqe);
			break;
		case COMP_READ:
			step = comp_read(qp, pkt, wqe);
			break;
		case COMP_ATOMIC:
			step = comp_atomic(qp, pkt, wqe);
			break;
		case COMP_ACK:
			step = comp_ack(qp, pkt);
			break;
		case COMP_RNR:
			step = comp_rnr(qp, pkt);
			break;
		case COMP_NAK:
			step = comp_nak(qp, pkt);
			break;
		case COMP_RETRY:
			step = comp_retry(qp);
			break;
		case COMP_DONE:
			break;
		}
	}
	if (qp->attr.qp_state != DROCE_QPS_ERR && !comp_fail_local_error(qp))
		rc_completer_arm(qp);
}

/* ---- the local ACK timer ------------------------------------------------------ */

static void
retransmit_timer_expired(struct rte_timer *t, void *arg)
{
	struct droce_qp *qp = arg;
	uint64_t now;

	rte_spinlock_lock(&qp->lock);
	qp->comp.timer_armed = false;
	if (!qp->dead &&
	    (qp->attr.qp_state == DROCE_QPS_RTS || qp->attr.qp_state == DROCE_QPS_SQD) &&
	    !qp->comp.rnr_waiting && qp->comp.psn != qp->req.psn) {
		now = rte_get_timer_cycles();
		if ((int64_t)(qp->comp.ack_deadline - now) > 0) {
			/* Sends or ACKs moved the deadline since it was set. */
			rte_timer_reset(t, qp->comp.ack_deadline - now, SINGLE,
					qp->owner->lcore_id, retransmit_timer_expired, qp);
			qp->comp.timer_armed = true;
		} else {
			qp->owner->stats.timeouts++;
			qp->comp.went_back = true;
			comp_retry(qp);
		}
	}
	rc_qp_unlock_owner(qp);
}

/* The local ACK timeout in timer ticks: 4.096 us * 2^timeout. */
static uint64_t
ack_timeout_ticks(const struct droce_qp *qp)
{
	return (uint64_t)((double)rte_get_timer_hz() * 4.096e-6 *
			  (double)(1ull << qp->attr.timeout)) + 1;
}

void
rc_completer_path_wait(struct droce_qp *qp)
{
	uint32_t consumer = atomic_load_explicit(&qp->sq.consumer, memory_order_relaxed);
	uint64_t now = rte_get_timer_cycles();
	char ip[INET_ADDRSTRLEN];

	/* Nothing has been sent: the oldest WQE posted is the one to fail. */
	if (consumer == atomic_load_explicit(&qp->sq.producer, memory_order_acquire) ||
	    qp->attr.timeout == 0 ||
	    qp->comp.retry_left == RETRY_FOREVER) {
		qp->comp.path_wait_since = 0;
		return;
	}
	if (qp->comp.path_wait_since == 0) {
		qp->comp.path_wait_since = now;
		return;
	}
	if (now - qp->comp.path_wait_since < ack_timeout_ticks(qp) * (qp->comp.retry_left + 1u))
		return;
	inet_ntop(AF_INET, &qp->peer_ip, ip, sizeof(ip));
	RC_LOG(NOTICE, "QP 0x%x: %s (or its gateway) does not answer ARP: nothing could be sent for the local ACK timeout times retry_cnt + 1",
	       qp->qpn, ip);
	comp_error(qp, rc_queue_slot(&qp->sq, consumer), DROCE_WC_RETRY_EXC_ERR);
}

/* Run the ACK timeout while PSNs are in flight, from now, as rxe restarts
 * its timer on each send. The deadline moves; the timer is set only when
 * it is not (a reset per packet takes the timer list's lock), and when it
 * fires early it is set again for what is left. Once all is acknowledged
 * it is left to fire and find nothing.
 */
void
rc_completer_arm(struct droce_qp *qp)
{
	uint64_t ticks;

	if (qp->attr.timeout == 0 || qp->comp.rnr_waiting || qp->comp.psn == qp->req.psn)
		return;
	ticks = ack_timeout_ticks(qp);
	qp->comp.ack_deadline = rc_owner_now(qp->owner) + ticks;
	if (qp->comp.timer_armed)
		return;
	rte_timer_reset(&qp->retransmit_timer, ticks, SINGLE, qp->owner->lcore_id,
			retransmit_timer_expired, qp);
	qp->comp.timer_armed = true;
}

void
rc_completer_init(struct droce_qp *qp)
{
	qp->comp.psn = qp->attr.sq_psn;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_retry_left = qp->attr.rnr_retry;
	qp->comp.rnr_waiting = false;
	qp->comp.timer_armed = false;
	qp->comp.went_back = false;
	qp->comp.path_wait_since = 0;
	qp->req.psn = qp->attr.sq_psn;
	qp->req.psn_end = qp->attr.sq_psn;
	qp->req.head = atomic_load_explicit(&qp->sq.consumer, memory_order_relaxed);
	qp->req.rd_atomic = 0;
	qp->req.unacked_pkts = 0;
	qp->req.starved = false;
	qp->req.stopped_at_error = false;
}
