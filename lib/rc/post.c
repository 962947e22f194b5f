/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Posting work requests: each request is checked whole against the QP
 * and its regions before it is queued, so that a bad one is refused at
 * the call, with bad_wr pointing at it, and never half sent.
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <rte_common.h>
#include <rte_malloc.h>

#include "rc_private.h"

int
rc_queue_init(struct rc_queue *q, uint32_t max_wr, uint32_t wqe_size)
{
	q->max_wr = max_wr;
	q->size = rte_align32pow2(max_wr);
	q->wqe_size = RTE_ALIGN_CEIL(wqe_size, 8u);
	q->wqe = rte_zmalloc("droce_wq", (size_t)q->size * q->wqe_size, RTE_CACHE_LINE_SIZE);
	rte_spinlock_init(&q->post_lock);
	atomic_init(&q->producer, 0);
	atomic_init(&q->consumer, 0);
	return q->wqe == NULL ? -ENOMEM : 0;
}

void
rc_queue_free(struct rc_queue *q)
{
	rte_free(q->wqe);
	q->wqe = NULL;
}

static inline uint32_t
queue_used(struct rc_queue *q, uint32_t producer)
{
	return producer - atomic_load_explicit(&q->consumer, memory_order_acquire);
}

/* ---- send ------------------------------------------------------------------ */

/* What each opcode needs: a type that has it, and local write on its SGEs
 * (those a READ or an atomic writes into).
 */
static bool
opcode_known(enum droce_wr_opcode op)
{
	return (unsigned int)op <= DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

static bool
opcode_writes_local(enum droce_wr_opcode op)
{
	return op == DROCE_WR_RDMA_READ || op == DROCE_WR_ATOMIC_CMP_AND_SWP ||
	       op == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

static bool
opcode_atomic(enum droce_wr_opcode op)
{
	return op == DROCE_WR_ATOMIC_CMP_AND_SWP || op == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

static int
sges_check(const struct droce_qp *qp, const struct droce_sge *sge, int n, int access,
	   uint64_t *total, const char *call, uint64_t wr_id)
{
	*total = 0;
	for (int i = 0; i < n; i++) {
		*total += sge[i].length;
		if (sge[i].length != 0 &&
		    rc_mr_check(qp->pd, sge[i].lkey, sge[i].addr, sge[i].length, access) == NULL)
			return RC_REFUSE(EINVAL, "%s: QP 0x%x, wr_id %" PRIu64 ": SGE %d (lkey 0x%x, %u bytes at 0x%" PRIx64 ") is not inside a region of the QP's PD%s",
					 call, qp->qpn, wr_id, i, sge[i].lkey, sge[i].length,
					 sge[i].addr, access ? " with local write" : "");
	}
	if (*total > qp->dev->attr.max_msg_size)
		return RC_REFUSE(EINVAL, "%s: QP 0x%x, wr_id %" PRIu64 ": %" PRIu64 " bytes; allowed: up to %u",
				 call, qp->qpn, wr_id, *total, qp->dev->attr.max_msg_size);
	return 0;
}

/* One send request against the QP; @p total: its message's bytes. */
static int
send_check(const struct droce_qp *qp, const struct droce_send_wr *wr, uint64_t *total)
{
	const struct droce_qp_cap *cap = &qp->init.cap;
	bool is_inline = (wr->send_flags & DROCE_SEND_INLINE) != 0;

	if (!opcode_known(wr->opcode))
		return RC_REFUSE(EINVAL, "post_send: QP 0x%x, wr_id %" PRIu64 ": opcode %d; allowed: %d..%d",
				 qp->qpn, wr->wr_id, wr->opcode, DROCE_WR_RDMA_WRITE,
				 DROCE_WR_ATOMIC_FETCH_AND_ADD);
	if (qp->init.qp_type == DROCE_QPT_UC &&
	    (wr->opcode == DROCE_WR_RDMA_READ || opcode_atomic(wr->opcode)))
		return RC_REFUSE(EINVAL, "post_send: QP 0x%x, wr_id %" PRIu64 ": a UC QP has no RDMA READ or atomics",
				 qp->qpn, wr->wr_id);
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > cap->max_send_sge)
		return RC_REFUSE(EINVAL, "post_send: QP 0x%x, wr_id %" PRIu64 ": num_sge %d; allowed: 0..%u",
				 qp->qpn, wr->wr_id, wr->num_sge, cap->max_send_sge);
	if (wr->num_sge != 0 && wr->sg_list == NULL)
		return RC_REFUSE(EINVAL, "post_send: QP 0x%x, wr_id %" PRIu64 ": num_sge %d and no sg_list",
				 qp->qpn, wr->wr_id, wr->num_sge);
	if (opcode_atomic(wr->opcode)) {
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return RC_REFUSE(EINVAL, "post_send: QP 0x%x, wr_id %" PRIu64 ": an atomic takes one SGE of 8 bytes",
					 qp->qpn, wr->wr_id);
		if (wr->wr.atomic.remote_addr & 7)
			return RC_REFUSE(EINVAL, "post_send: QP 0x%x, wr_id %" PRIu64 ": atomic remote_addr 0x%" PRIx64 " is not 8-byte aligned",
					 qp->qpn, wr->wr_id, wr->wr.atomic.remote_addr);
	}
	if (is_inline) {
		if (opcode_writes_local(wr->opcode))
			return RC_REFUSE(EINVAL, "post_send: QP 0x%x, wr_id %" PRIu64 ": inline is for SEND and RDMA WRITE only",
					 qp->qpn, wr->wr_id);
		*total = 0;
		for (int i = 0; i < wr->num_sge; i++)
			*total += wr->sg_list[i].length;
		if (*total > cap->max_inline_data)
			return RC_REFUSE(EINVAL, "post_send: QP 0x%x, wr_id %" PRIu64 ": %" PRIu64 " inline bytes; allowed: up to %u (max_inline_data)",
					 qp->qpn, wr->wr_id, *total, cap->max_inline_data);
		return 0;
	}
	return sges_check(qp, wr->sg_list, wr->num_sge,
			  opcode_writes_local(wr->opcode) ? DROCE_ACCESS_LOCAL_WRITE : 0, total,
			  "post_send", wr->wr_id);
}

/* Copy a checked request into its slot; inline data is taken now, as the
 * caller may reuse its buffers as soon as the call returns.
 */
static void
send_store(const struct droce_qp *qp, struct rc_send_wqe *wqe, const struct droce_send_wr *wr,
	   uint64_t total)
{
	wqe->wr = *wr;
	wqe->wr.next = NULL;
	wqe->wr.sg_list = NULL;
	wqe->length = (uint32_t)total;
	wqe->signaled = qp->init.sq_sig_all || (wr->send_flags & DROCE_SEND_SIGNALED);
	wqe->started = false;
	wqe->local_error = DROCE_WC_SUCCESS;
	if (wr->send_flags & DROCE_SEND_INLINE) {
		uint8_t *data = (uint8_t *)(wqe->sge + qp->init.cap.max_send_sge);

		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(data, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			data += wr->sg_list[i].length;
		}
		wqe->wr.num_sge = 0;
		return;
	}
	if (wr->num_sge != 0) /* a zero-length send may name no list */
		memcpy(wqe->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*wr->sg_list));
}

/* A post to a QP in ERR completes at once, flushed; the owner may be
 * flushing the same queues.
 */
static void
qp_flush_locked(struct droce_qp *qp)
{
	rte_spinlock_lock(&qp->lock);
	rc_qp_flush(qp);
	rc_unlock(&qp->lock);
}

static bool
may_post_send(enum droce_qp_state s)
{
	return s == DROCE_QPS_RTS || s == DROCE_QPS_SQD || s == DROCE_QPS_SQE ||
	       s == DROCE_QPS_ERR;
}

int
droce_post_send(struct droce_qp *qp, struct droce_send_wr *wr, struct droce_send_wr **bad_wr)
{
	struct rc_queue *q = &qp->sq;
	enum droce_qp_state state = qp->attr.qp_state;
	uint32_t producer;
	int ret = 0;

	if (!may_post_send(state)) {
		*bad_wr = wr;
		return RC_REFUSE(EINVAL, "post_send: QP 0x%x is in %s; sends are posted in RTS (SQD, SQE: queued; ERR: flushed)",
				 qp->qpn, droce_qp_state_str(state));
	}
	if (state == DROCE_QPS_ERR && (ret = rc_qp_flush_check(qp, "post_send")) != 0) {
		*bad_wr = wr;
		return ret;
	}
	rte_spinlock_lock(&q->post_lock);
	producer = atomic_load_explicit(&q->producer, memory_order_relaxed);
	for (; wr != NULL; wr = wr->next) {
		uint64_t total;

		if (queue_used(q, producer) == q->max_wr) {
			ret = RC_REFUSE(ENOMEM, "post_send: QP 0x%x: the send queue holds its %u requests",
					qp->qpn, q->max_wr);
			break;
		}
		ret = send_check(qp, wr, &total);
		if (ret != 0)
			break;
		send_store(qp, rc_queue_slot(q, producer), wr, total);
		producer++;
	}
	atomic_store_explicit(&q->producer, producer, memory_order_release);
	rc_unlock(&q->post_lock);
	if (ret != 0)
		*bad_wr = wr;
	if (state == DROCE_QPS_ERR)
		qp_flush_locked(qp);
	else
		rc_qp_send_posted(qp);
	return ret;
}

/* ---- receive --------------------------------------------------------------- */

int
droce_post_recv(struct droce_qp *qp, struct droce_recv_wr *wr, struct droce_recv_wr **bad_wr)
{
	struct rc_queue *q = &qp->rq;
	enum droce_qp_state state = qp->attr.qp_state;
	uint32_t producer;
	int ret = 0;

	if (state == DROCE_QPS_RESET) {
		*bad_wr = wr;
		return RC_REFUSE(EINVAL, "post_recv: QP 0x%x is in RESET; receives are posted from INIT on",
				 qp->qpn);
	}
	if (state == DROCE_QPS_ERR && (ret = rc_qp_flush_check(qp, "post_recv")) != 0) {
		*bad_wr = wr;
		return ret;
	}
	rte_spinlock_lock(&q->post_lock);
	producer = atomic_load_explicit(&q->producer, memory_order_relaxed);
	for (; wr != NULL; wr = wr->next) {
		struct rc_recv_wqe *wqe;
		uint64_t total;

		if (queue_used(q, producer) == q->max_wr) {
			ret = RC_REFUSE(ENOMEM, "post_recv: QP 0x%x: the receive queue holds its %u requests",
					qp->qpn, q->max_wr);
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->init.cap.max_recv_sge ||
		    (wr->num_sge != 0 && wr->sg_list == NULL)) {
			ret = RC_REFUSE(EINVAL, "post_recv: QP 0x%x, wr_id %" PRIu64 ": num_sge %d; allowed: 0..%u, with an sg_list",
					qp->qpn, wr->wr_id, wr->num_sge, qp->init.cap.max_recv_sge);
			break;
		}
		ret = sges_check(qp, wr->sg_list, wr->num_sge, DROCE_ACCESS_LOCAL_WRITE, &total,
				 "post_recv", wr->wr_id);
		if (ret != 0)
			break;
		wqe = rc_queue_slot(q, producer);
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = (uint32_t)wr->num_sge;
		wqe->length = (uint32_t)total;
		if (wr->num_sge != 0)
			memcpy(wqe->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*wr->sg_list));
		producer++;
	}
	atomic_store_explicit(&q->producer, producer, memory_order_release);
	rc_unlock(&q->post_lock);
	if (ret != 0)
		*bad_wr = wr;
	if (state == DROCE_QPS_ERR)
		qp_flush_locked(qp);
	return ret;
}

/* ---- flush ----------------------------------------------------------------- */

const enum droce_wc_opcode rc_wc_opcode[DROCE_WR_ATOMIC_FETCH_AND_ADD + 1] = {
	[DROCE_WR_RDMA_WRITE] = DROCE_WC_RDMA_WRITE,
	[DROCE_WR_RDMA_WRITE_WITH_IMM] = DROCE_WC_RDMA_WRITE,
	[DROCE_WR_SEND] = DROCE_WC_SEND,
	[DROCE_WR_SEND_WITH_IMM] = DROCE_WC_SEND,
	[DROCE_WR_RDMA_READ] = DROCE_WC_RDMA_READ,
	[DROCE_WR_ATOMIC_CMP_AND_SWP] = DROCE_WC_COMP_SWAP,
	[DROCE_WR_ATOMIC_FETCH_AND_ADD] = DROCE_WC_FETCH_ADD,
};

static uint32_t
flush_queue(struct droce_qp *qp, struct rc_queue *q, struct droce_cq *cq, bool send)
{
	uint32_t producer = atomic_load_explicit(&q->producer, memory_order_acquire);
	uint32_t consumer = atomic_load_explicit(&q->consumer, memory_order_relaxed);
	uint32_t lost = 0;

	for (; consumer != producer; consumer++) {
		const void *slot = rc_queue_slot(q, consumer);
		struct droce_wc wc = {
			.status = DROCE_WC_WR_FLUSH_ERR, .qp_num = qp->qpn,
		};

		if (send) {
			const struct rc_send_wqe *wqe = slot;

			wc.wr_id = wqe->wr.wr_id;
			wc.opcode = rc_wc_opcode[wqe->wr.opcode];
		} else {
			wc.wr_id = ((const struct rc_recv_wqe *)slot)->wr_id;
			wc.opcode = DROCE_WC_RECV;
		}
		if (rc_cq_add(cq, &wc) != 0)
			lost++;
	}
	atomic_store_explicit(&q->consumer, consumer, memory_order_release);
	return lost;
}

int
rc_qp_flush_check(const struct droce_qp *qp, const char *what)
{
	int ret = rc_cq_flush_check(qp->init.send_cq, qp->owner, qp->qpn, what);

	return ret != 0 ? ret : rc_cq_flush_check(qp->init.recv_cq, qp->owner, qp->qpn, what);
}

void
rc_qp_flush(struct droce_qp *qp)
{
	uint32_t lost;

	/* The owner's completions go before the flushed ones. On another
	 * thread its stage holds none of this QP's: the owner empties it
	 * before it lets go of the lock this caller holds.
	 */
	if (rte_lcore_id() == qp->owner->lcore_id)
		rc_owner_publish(qp->owner);
	lost = flush_queue(qp, &qp->sq, qp->init.send_cq, true) +
	       flush_queue(qp, &qp->rq, qp->init.recv_cq, false);

	if (lost != 0)
		RC_LOG(ERR, "QP 0x%x: %u flushed work requests found their CQ full (an overrun)",
		       qp->qpn, lost);
}
