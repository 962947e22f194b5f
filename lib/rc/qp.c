/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Queue pairs: creation, and the state machine of ibv_modify_qp. Which
 * transitions a QP type has, and which attributes each requires and
 * allows, is one table (the one the kernel's ib_modify_qp_is_ok keeps);
 * each attribute's range is checked in one place.
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "rc_private.h"

#define NB_STATES (DROCE_QPS_ERR + 1)
#define NB_TYPES 3
#define TYPE_INDEX(t) ((t) - DROCE_QPT_RC)

/* What a transition requires and allows besides DROCE_QP_STATE. */
struct transition {
	bool valid;
	int req[NB_TYPES];
	int opt[NB_TYPES];
};

#define ALL(mask) { (mask), (mask), (mask) }

/* Index: RC, UC, UD. */
static const struct transition transitions[NB_STATES][NB_STATES] = {
	[DROCE_QPS_RESET] = {
		[DROCE_QPS_RESET] = { .valid = true },
		[DROCE_QPS_ERR] = { .valid = true },
		[DROCE_QPS_INIT] = {
			.valid = true,
			.req = {
				DROCE_QP_PKEY_INDEX | DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS,
				DROCE_QP_PKEY_INDEX | DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS,
				DROCE_QP_PKEY_INDEX | DROCE_QP_PORT | DROCE_QP_QKEY,
			},
		},
	},
	[DROCE_QPS_INIT] = {
		[DROCE_QPS_RESET] = { .valid = true },
		[DROCE_QPS_ERR] = { .valid = true },
		[DROCE_QPS_INIT] = {
			.valid = true,
			.opt = {
				DROCE_QP_PKEY_INDEX | DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS,
				DROCE_QP_PKEY_INDEX | DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS,
				DROCE_QP_PKEY_INDEX | DROCE_QP_PORT | DROCE_QP_QKEY,
			},
		},
		[DROCE_QPS_RTR] = {
			.valid = true,
			.req = {
				DROCE_QP_AV | DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN |
				DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC |
				DROCE_QP_MIN_RNR_TIMER,
				DROCE_QP_AV | DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN |
				DROCE_QP_RQ_PSN,
				0,
			},
			.opt = {
				DROCE_QP_ALT_PATH | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY_INDEX,
				DROCE_QP_ALT_PATH | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY_INDEX,
				DROCE_QP_PKEY_INDEX | DROCE_QP_QKEY,
			},
		},
	},
	[DROCE_QPS_RTR] = {
		[DROCE_QPS_RESET] = { .valid = true },
		[DROCE_QPS_ERR] = { .valid = true },
		[DROCE_QPS_RTS] = {
			.valid = true,
			.req = {
				DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT |
				DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC,
				DROCE_QP_SQ_PSN,
				DROCE_QP_SQ_PSN,
			},
			.opt = {
				DROCE_QP_CUR_STATE | DROCE_QP_ALT_PATH | DROCE_QP_ACCESS_FLAGS |
				DROCE_QP_MIN_RNR_TIMER | DROCE_QP_PATH_MIG_STATE,
				DROCE_QP_CUR_STATE | DROCE_QP_ALT_PATH | DROCE_QP_ACCESS_FLAGS |
				DROCE_QP_PATH_MIG_STATE,
				DROCE_QP_CUR_STATE | DROCE_QP_QKEY,
			},
		},
	},
	[DROCE_QPS_RTS] = {
		[DROCE_QPS_RESET] = { .valid = true },
		[DROCE_QPS_ERR] = { .valid = true },
		[DROCE_QPS_RTS] = {
			.valid = true,
			.opt = {
				DROCE_QP_CUR_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_ALT_PATH |
				DROCE_QP_PATH_MIG_STATE | DROCE_QP_MIN_RNR_TIMER,
				DROCE_QP_CUR_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_ALT_PATH |
				DROCE_QP_PATH_MIG_STATE,
				DROCE_QP_CUR_STATE | DROCE_QP_QKEY,
			},
		},
		[DROCE_QPS_SQD] = {
			.valid = true,
			.opt = ALL(DROCE_QP_EN_SQD_ASYNC_NOTIFY),
		},
	},
	[DROCE_QPS_SQD] = {
		[DROCE_QPS_RESET] = { .valid = true },
		[DROCE_QPS_ERR] = { .valid = true },
		[DROCE_QPS_RTS] = {
			.valid = true,
			.opt = {
				DROCE_QP_CUR_STATE | DROCE_QP_ALT_PATH | DROCE_QP_ACCESS_FLAGS |
				DROCE_QP_MIN_RNR_TIMER | DROCE_QP_PATH_MIG_STATE,
				DROCE_QP_CUR_STATE | DROCE_QP_ALT_PATH | DROCE_QP_ACCESS_FLAGS |
				DROCE_QP_PATH_MIG_STATE,
				DROCE_QP_CUR_STATE | DROCE_QP_QKEY,
			},
		},
		[DROCE_QPS_SQD] = {
			.valid = true,
			.opt = {
				DROCE_QP_AV | DROCE_QP_ALT_PATH | DROCE_QP_ACCESS_FLAGS |
				DROCE_QP_PKEY_INDEX | DROCE_QP_MIN_RNR_TIMER |
				DROCE_QP_PATH_MIG_STATE | DROCE_QP_MAX_QP_RD_ATOMIC |
				DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_TIMEOUT |
				DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY,
				DROCE_QP_AV | DROCE_QP_ALT_PATH | DROCE_QP_ACCESS_FLAGS |
				DROCE_QP_PKEY_INDEX | DROCE_QP_PATH_MIG_STATE,
				DROCE_QP_PKEY_INDEX | DROCE_QP_QKEY,
			},
		},
	},
	[DROCE_QPS_SQE] = {
		[DROCE_QPS_RESET] = { .valid = true },
		[DROCE_QPS_ERR] = { .valid = true },
		[DROCE_QPS_RTS] = {
			.valid = true,
			.opt = {
				0,
				DROCE_QP_CUR_STATE | DROCE_QP_ACCESS_FLAGS,
				DROCE_QP_CUR_STATE | DROCE_QP_QKEY,
			},
		},
	},
	[DROCE_QPS_ERR] = {
		[DROCE_QPS_RESET] = { .valid = true },
		[DROCE_QPS_ERR] = { .valid = true },
	},
};

static const char *const state_name[NB_STATES] = {
	[DROCE_QPS_RESET] = "RESET", [DROCE_QPS_INIT] = "INIT", [DROCE_QPS_RTR] = "RTR",
	[DROCE_QPS_RTS] = "RTS", [DROCE_QPS_SQD] = "SQD", [DROCE_QPS_SQE] = "SQE",
	[DROCE_QPS_ERR] = "ERR",
};

const char *
droce_qp_state_str(enum droce_qp_state state)
{
	return (unsigned int)state < NB_STATES ? state_name[state] : "unknown";
}

uint32_t
droce_mtu_to_bytes(enum droce_mtu mtu)
{
	return mtu >= DROCE_MTU_256 && mtu <= DROCE_MTU_4096 ? 128u << mtu : 0;
}

/* Names of the attribute bits, for messages. */
static const char *const attr_name[] = {
	"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT",
	"QKEY", "AV", "PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN",
	"MAX_QP_RD_ATOMIC", "ALT_PATH", "MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC",
	"PATH_MIG_STATE", "CAP", "DEST_QPN",
};

#define ATTR_ALL ((1 << RTE_DIM(attr_name)) - 1)

static const char *
first_attr(int mask)
{
	return mask != 0 ? attr_name[__builtin_ctz((unsigned int)mask)] : "";
}

/* ---- the QP table ---------------------------------------------------------- */

struct droce_qp *
rc_qp_of_num(const struct droce_rc_device *dev, uint32_t qpn)
{
	uint32_t slot = qpn & ((1u << RC_QPN_SLOT_BITS) - 1);
	struct droce_qp *qp;

	if (slot >= RC_MAX_QP)
		return NULL;
	qp = dev->qp[slot];
	return qp != NULL && qp->qpn == qpn ? qp : NULL;
}

/* A free slot, the first from the one after the last taken, of owner
 * @p want if not NULL (slot 0 is never used); false when there is none.
 */
static bool
qp_slot_find(struct droce_rc_device *dev, const struct rc_owner *want, uint32_t *slot)
{
	uint32_t s = dev->qp_hint;

	for (uint32_t tried = 0; tried < RC_MAX_QP; tried++, s = (s + 1) % RC_MAX_QP) {
		if (dev->qp[s] != NULL || s == 0 ||
		    (want != NULL && rc_owner_of_slot(dev, s) != want))
			continue;
		*slot = s;
		return true;
	}
	return false;
}

/* The owner a new QP with these CQs must have (a CQ that signals by
 * callback keeps its QPs on one owner), NULL for any; -EINVAL when its
 * two CQs want two.
 */
static int
owner_wanted(const struct droce_qp_init_attr *a, const struct rc_owner **want)
{
	const struct rc_owner *s = rc_cq_owner_wanted(a->send_cq);
	const struct rc_owner *r = rc_cq_owner_wanted(a->recv_cq);

	if (s != NULL && r != NULL && s != r)
		return RC_REFUSE(EINVAL, "create_qp: its send CQ and its receive CQ signal by callback (droce_cq_set_notify()) and serve QPs of two owners (worker %d, worker %d); a QP has one",
				 s->worker, r->worker);
	*want = s != NULL ? s : r;
	return 0;
}

/* Slot @p slot for @p qp, and a number that carries the slot in its low
 * bits and a generation above them. Generation 0 is never used: no QPN
 * is below 2^16, clear of the special QPs 0 and 1 and of small numbers
 * that sensor streams are often configured with.
 */
static void
qp_slot_take(struct droce_rc_device *dev, struct droce_qp *qp, uint32_t slot)
{
	dev->qp_hint = (slot + 1) % RC_MAX_QP;
	if (++dev->qp_gen[slot] == 0)
		dev->qp_gen[slot] = 1;
	/* Its owner before anyone can find it: packets go by the slot. */
	qp->qpn = (uint32_t)dev->qp_gen[slot] << RC_QPN_SLOT_BITS | slot;
	qp->owner = rc_owner_of_slot(dev, slot);
	atomic_fetch_add(&qp->owner->nb_qps, 1);
	__atomic_store_n(&dev->qp[slot], qp, __ATOMIC_RELEASE);
	dev->nb_qp++;
}

/* ---- create and destroy ---------------------------------------------------- */

static int
cap_check(const struct droce_rc_device *dev, const struct droce_qp_init_attr *a)
{
	const struct droce_rc_device_attr *d = &dev->attr;
	const struct droce_qp_cap *c = &a->cap;

	if (a->qp_type != DROCE_QPT_RC && a->qp_type != DROCE_QPT_UC)
		return a->qp_type == DROCE_QPT_UD
		       ? RC_REFUSE(ENOTSUP, "create_qp: UD QPs are not supported yet")
		       : RC_REFUSE(EINVAL, "create_qp: QP type %d; allowed: RC (%d), UC (%d)",
				   a->qp_type, DROCE_QPT_RC, DROCE_QPT_UC);
	if (a->send_cq == NULL || a->recv_cq == NULL)
		return RC_REFUSE(EINVAL, "create_qp: a send and a receive CQ are needed");
	if (a->send_cq->dev != dev || a->recv_cq->dev != dev)
		return RC_REFUSE(EINVAL, "create_qp: a CQ of another device");
	if (c->max_send_wr == 0 || c->max_send_wr > d->max_qp_wr ||
	    c->max_recv_wr == 0 || c->max_recv_wr > d->max_qp_wr)
		return RC_REFUSE(EINVAL, "create_qp: max_send_wr %u, max_recv_wr %u; allowed: 1..%u",
				 c->max_send_wr, c->max_recv_wr, d->max_qp_wr);
	if (c->max_send_sge == 0 || c->max_send_sge > d->max_sge ||
	    c->max_recv_sge == 0 || c->max_recv_sge > d->max_sge)
		return RC_REFUSE(EINVAL, "create_qp: max_send_sge %u, max_recv_sge %u; allowed: 1..%u",
				 c->max_send_sge, c->max_recv_sge, d->max_sge);
	if (c->max_inline_data > d->max_inline_data)
		return RC_REFUSE(EINVAL, "create_qp: max_inline_data %u; allowed: 0..%u",
				 c->max_inline_data, d->max_inline_data);
	if (dev->nb_qp == d->max_qp)
		return RC_REFUSE(ENOMEM, "create_qp: the device holds its %u QPs already",
				 d->max_qp);
	return 0;
}

struct droce_qp *
droce_create_qp(struct droce_pd *pd, struct droce_qp_init_attr *attr)
{
	struct droce_rc_device *dev = pd->dev;
	const struct rc_owner *want = NULL;
	struct droce_qp *qp;
	uint32_t slot = 0;
	int ret = cap_check(dev, attr);

	if (ret == 0)
		ret = owner_wanted(attr, &want);
	/* Any owner's: cap_check() left a free slot (max_qp is the slots
	 * but slot 0), so only a wanted owner's can run out.
	 */
	if (ret == 0 && !qp_slot_find(dev, want, &slot))
		ret = RC_REFUSE(ENOMEM, "create_qp: no QP number left for worker %d, which runs the QPs of its CQ with a callback (droce_cq_set_notify())",
				want->worker);
	if (ret != 0) {
		rte_errno = -ret;
		return NULL;
	}
	qp = rte_zmalloc("droce_qp", sizeof(*qp), 0);
	if (qp == NULL ||
	    rc_queue_init(&qp->sq, attr->cap.max_send_wr,
			  sizeof(struct rc_send_wqe) +
			  attr->cap.max_send_sge * sizeof(struct droce_sge) +
			  attr->cap.max_inline_data) != 0 ||
	    rc_queue_init(&qp->rq, attr->cap.max_recv_wr,
			  sizeof(struct rc_recv_wqe) +
			  attr->cap.max_recv_sge * sizeof(struct droce_sge)) != 0) {
		if (qp != NULL) {
			rc_queue_free(&qp->sq);
			rc_queue_free(&qp->rq);
		}
		rte_free(qp);
		RC_LOG(ERR, "create_qp: out of memory for %u + %u work requests",
		       attr->cap.max_send_wr, attr->cap.max_recv_wr);
		rte_errno = ENOMEM;
		return NULL;
	}
	qp->dev = dev;
	qp->pd = pd;
	qp->init = *attr;
	qp->attr.qp_state = DROCE_QPS_RESET;
	qp->attr.cap = attr->cap;
	qp->attr.port_num = 1;
	qp->attr.path_mtu = DROCE_MTU_1024;
	rte_spinlock_init(&qp->lock);
	atomic_init(&qp->doorbell_rung, false);
	rte_timer_init(&qp->retransmit_timer);
	rte_timer_init(&qp->rnr_timer);
	if (rc_responder_init(qp) != 0) {
		rc_queue_free(&qp->sq);
		rc_queue_free(&qp->rq);
		rte_free(qp);
		RC_LOG(ERR, "create_qp: out of memory for READ resources");
		rte_errno = ENOMEM;
		return NULL;
	}
	qp_slot_take(dev, qp, slot);
	pd->users++;
	rc_cq_join(attr->send_cq, qp->owner);
	rc_cq_join(attr->recv_cq, qp->owner);
	return qp;
}

int
droce_destroy_qp(struct droce_qp *qp)
{
	struct droce_rc_device *dev = qp->dev;

	/* Off the control lcore's list first, its lock not under the QP's:
	 * the owner may wait for the QP's while the control lcore looks up.
	 */
	rc_neigh_remove(qp);
	rte_spinlock_lock(&qp->lock);
	dev->qp[qp->qpn & ((1u << RC_QPN_SLOT_BITS) - 1)] = NULL;
	dev->nb_qp--;
	qp->pd->users--;
	rc_cq_leave(qp->init.send_cq);
	rc_cq_leave(qp->init.recv_cq);
	qp->dead = true;
	rc_unlock(&qp->lock);
	rc_qp_release(qp);
	return 0;
}

uint32_t
droce_qp_num(const struct droce_qp *qp)
{
	return qp->qpn;
}

int
droce_qp_owner(const struct droce_qp *qp)
{
	return qp->owner->worker;
}

enum droce_qp_state
droce_qp_state(const struct droce_qp *qp)
{
	return qp->attr.qp_state;
}

int
droce_query_qp(struct droce_qp *qp, struct droce_qp_attr *attr, int attr_mask,
	       struct droce_qp_init_attr *init_attr)
{
	RTE_SET_USED(attr_mask);
	*attr = qp->attr;
	attr->cur_qp_state = qp->attr.qp_state;
	if (init_attr != NULL)
		*init_attr = qp->init;
	return 0;
}

/* ---- modify ---------------------------------------------------------------- */

#define QP_ACCESS_ALL (DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | \
		       DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC)

/* Each attribute in @p mask within its range. */
static int
attr_check(const struct droce_qp *qp, const struct droce_qp_attr *a, int mask)
{
	const struct droce_rc_device *dev = qp->dev;
	uint32_t ip4;

	if (mask & (DROCE_QP_ALT_PATH | DROCE_QP_PATH_MIG_STATE))
		return RC_REFUSE(ENOTSUP, "modify_qp: QP 0x%x: alternate paths and path migration are not supported",
				 qp->qpn);
	if (mask & DROCE_QP_CAP)
		return RC_REFUSE(ENOTSUP, "modify_qp: QP 0x%x: queues cannot be resized",
				 qp->qpn);
	if ((mask & DROCE_QP_CUR_STATE) && a->cur_qp_state != qp->attr.qp_state)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: cur_qp_state %s, but the QP is in %s",
				 qp->qpn, droce_qp_state_str(a->cur_qp_state),
				 droce_qp_state_str(qp->attr.qp_state));
	if ((mask & DROCE_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~QP_ACCESS_ALL))
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: unknown access bits 0x%x",
				 qp->qpn, a->qp_access_flags & ~QP_ACCESS_ALL);
	if ((mask & DROCE_QP_PKEY_INDEX) && a->pkey_index != 0)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: P_Key index %u; allowed: 0 (the default P_Key)",
				 qp->qpn, a->pkey_index);
	if ((mask & DROCE_QP_PORT) && a->port_num != 1)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: port %u; allowed: 1", qp->qpn,
				 a->port_num);
	if ((mask & DROCE_QP_AV) && droce_gid_to_ipv4(a->ah_attr.dgid, &ip4) != 0)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: the destination GID is not IPv4-mapped (::ffff:a.b.c.d); droce speaks RoCEv2 over IPv4",
				 qp->qpn);
	if (mask & DROCE_QP_PATH_MTU) {
		uint32_t bytes = droce_mtu_to_bytes(a->path_mtu);

		if (bytes == 0)
			return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: path MTU %d; allowed: %d (256) .. %d (4096)",
					 qp->qpn, a->path_mtu, DROCE_MTU_256, DROCE_MTU_4096);
		if (bytes + RC_PATH_MTU_OVERHEAD > dev->ip_mtu)
			return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: path MTU %u needs an IP MTU of %u; the port's is %u",
					 qp->qpn, bytes, bytes + RC_PATH_MTU_OVERHEAD, dev->ip_mtu);
	}
	if ((mask & DROCE_QP_TIMEOUT) && a->timeout > 31)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: timeout %u; allowed: 0..31", qp->qpn,
				 a->timeout);
	if ((mask & DROCE_QP_RETRY_CNT) && a->retry_cnt > 7)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: retry_cnt %u; allowed: 0..7", qp->qpn,
				 a->retry_cnt);
	if ((mask & DROCE_QP_RNR_RETRY) && a->rnr_retry > 7)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: rnr_retry %u; allowed: 0..7", qp->qpn,
				 a->rnr_retry);
	if ((mask & DROCE_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: min_rnr_timer %u; allowed: 0..31",
				 qp->qpn, a->min_rnr_timer);
	if ((mask & DROCE_QP_RQ_PSN) && a->rq_psn > DROCE_PSN_MASK)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: rq_psn 0x%x; allowed: 24 bits",
				 qp->qpn, a->rq_psn);
	if ((mask & DROCE_QP_SQ_PSN) && a->sq_psn > DROCE_PSN_MASK)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: sq_psn 0x%x; allowed: 24 bits",
				 qp->qpn, a->sq_psn);
	if ((mask & DROCE_QP_DEST_QPN) && a->dest_qp_num > DROCE_QPN_MASK)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: dest_qp_num 0x%x; allowed: 24 bits",
				 qp->qpn, a->dest_qp_num);
	if ((mask & DROCE_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > dev->attr.max_qp_rd_atom)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: max_rd_atomic %u; allowed: 0..%u",
				 qp->qpn, a->max_rd_atomic, dev->attr.max_qp_rd_atom);
	if ((mask & DROCE_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > dev->attr.max_qp_init_rd_atom)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: max_dest_rd_atomic %u; allowed: 0..%u",
				 qp->qpn, a->max_dest_rd_atomic, dev->attr.max_qp_init_rd_atom);
	return 0;
}

/* The transition @p from -> @p to on the QP's type, with @p mask. */
static int
transition_check(const struct droce_qp *qp, enum droce_qp_state from,
		 enum droce_qp_state to, int mask)
{
	const struct transition *t;
	int type = TYPE_INDEX(qp->init.qp_type), extra, missing;

	if ((unsigned int)to >= NB_STATES)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: state %d; allowed: RESET..ERR",
				 qp->qpn, to);
	t = &transitions[from][to];
	if (!t->valid)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: %s -> %s is not a transition a QP makes",
				 qp->qpn, droce_qp_state_str(from), droce_qp_state_str(to));
	missing = t->req[type] & ~mask;
	if (missing != 0)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: %s -> %s requires %s",
				 qp->qpn, droce_qp_state_str(from), droce_qp_state_str(to),
				 first_attr(missing));
	extra = mask & ~(DROCE_QP_STATE | t->req[type] | t->opt[type]);
	if (extra != 0)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: %s -> %s does not take %s",
				 qp->qpn, droce_qp_state_str(from), droce_qp_state_str(to),
				 first_attr(extra));
	return 0;
}

/* Copy the attributes @p mask names. */
static void
attr_apply(struct droce_qp_attr *q, const struct droce_qp_attr *a, int mask)
{
#define TAKE(bit, field) do { if (mask & (bit)) q->field = a->field; } while (0)
	TAKE(DROCE_QP_ACCESS_FLAGS, qp_access_flags);
	TAKE(DROCE_QP_PKEY_INDEX, pkey_index);
	TAKE(DROCE_QP_PORT, port_num);
	TAKE(DROCE_QP_QKEY, qkey);
	TAKE(DROCE_QP_AV, ah_attr);
	TAKE(DROCE_QP_PATH_MTU, path_mtu);
	TAKE(DROCE_QP_TIMEOUT, timeout);
	TAKE(DROCE_QP_RETRY_CNT, retry_cnt);
	TAKE(DROCE_QP_RNR_RETRY, rnr_retry);
	TAKE(DROCE_QP_RQ_PSN, rq_psn);
	TAKE(DROCE_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	TAKE(DROCE_QP_MIN_RNR_TIMER, min_rnr_timer);
	TAKE(DROCE_QP_SQ_PSN, sq_psn);
	TAKE(DROCE_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	TAKE(DROCE_QP_DEST_QPN, dest_qp_num);
	TAKE(DROCE_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
#undef TAKE
}

/* RTR: where the packets go and what a request may hold. */
static void
path_take(struct droce_qp *qp)
{
	const struct droce_ah_attr *ah = &qp->attr.ah_attr;
	uint32_t ip;

	qp->mtu = droce_mtu_to_bytes(qp->attr.path_mtu);
	qp->peer_ip = droce_gid_to_ipv4(ah->dgid, &ip) == 0 ? ip : 0;
	qp->udp_sport = ah->udp_sport != 0 ? ah->udp_sport : droce_roce_udp_sport(qp->qpn);
	rc_responder_init(qp);
}

/* A QP back in RESET: as created, its queues empty. */
static void
qp_reset(struct droce_qp *qp)
{
	struct droce_qp_attr *a = &qp->attr;

	rte_timer_stop(&qp->retransmit_timer);
	rte_timer_stop(&qp->rnr_timer);
	qp->comp.rnr_waiting = false;
	qp->comp.timer_armed = false;

	atomic_store(&qp->sq.producer, 0);
	atomic_store(&qp->sq.consumer, 0);
	atomic_store(&qp->rq.producer, 0);
	atomic_store(&qp->rq.consumer, 0);
	*a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RESET, .cap = qp->init.cap, .port_num = 1,
		.path_mtu = DROCE_MTU_1024,
	};
}

int
droce_modify_qp(struct droce_qp *qp, struct droce_qp_attr *attr, int attr_mask)
{
	enum droce_qp_state from, to;
	int ret;

	if (attr_mask & ~ATTR_ALL)
		return RC_REFUSE(EINVAL, "modify_qp: QP 0x%x: unknown attribute bits 0x%x",
				 qp->qpn, attr_mask & ~ATTR_ALL);
	/* Checked and applied under the lock: the owner may move the QP to
	 * ERR meanwhile, and an RTS written over that would bring it back.
	 */
	rte_spinlock_lock(&qp->lock);
	from = qp->attr.qp_state;
	to = (attr_mask & DROCE_QP_STATE) ? attr->qp_state : from;
	ret = transition_check(qp, from, to, attr_mask);
	if (ret == 0)
		ret = attr_check(qp, attr, attr_mask);
	if (ret == 0 && to == DROCE_QPS_ERR)
		ret = rc_qp_flush_check(qp, "modify_qp");
	if (ret != 0) {
		rc_unlock(&qp->lock);
		return ret;
	}
	if (to == DROCE_QPS_RESET) {
		qp_reset(qp);
		qp->attr.max_dest_rd_atomic = 0;
		rc_responder_init(qp);
	} else {
		attr_apply(&qp->attr, attr, attr_mask);
		if (to == DROCE_QPS_RTR && from != DROCE_QPS_RTR) {
			path_take(qp);
		} else if (attr_mask & DROCE_QP_MAX_DEST_RD_ATOMIC) {
			/* SQD -> SQD: READs and atomics already accepted keep
			 * their resources where they are (the array holds the
			 * device's maximum); new ones wrap at the new count.
			 */
			qp->resp.nb_res = qp->attr.max_dest_rd_atomic;
			if (qp->resp.nb_res != 0)
				qp->resp.res_next %= qp->resp.nb_res;
		}
		if (to == DROCE_QPS_RTS && from == DROCE_QPS_RTR)
			rc_completer_init(qp);
		qp->attr.qp_state = to;
		if (to == DROCE_QPS_ERR) {
			rte_timer_stop(&qp->retransmit_timer);
			rte_timer_stop(&qp->rnr_timer);
			rc_qp_flush(qp);
		}
		qp->ack_proto_ready = false;    /* the path may have changed */
	}
	rc_unlock(&qp->lock);
	/* A worker owner's next hop, looked up by the control lcore (its
	 * list's lock is not taken under the QP's).
	 */
	if (to == DROCE_QPS_RTR && from != DROCE_QPS_RTR)
		rc_neigh_add(qp);
	else if (to == DROCE_QPS_RESET)
		rc_neigh_remove(qp);
	/* The owner looks: work posted before RTS may go now. */
	if (to == DROCE_QPS_RTS)
		rc_qp_ring_doorbell(qp);
	return 0;
}
