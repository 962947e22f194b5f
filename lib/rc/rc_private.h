/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RC_PRIVATE_H
#define DROCE_RC_PRIVATE_H

#include <stdatomic.h>

#include <rte_log.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "droce_rc.h"
#include "droce_roce.h"

extern int droce_rc_logtype;
#define RC_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_rc_logtype, "droce.rc: " fmt "\n", ## __VA_ARGS__)

/* Refuse a call: log why, return -err. */
#define RC_REFUSE(err, fmt, ...) \
	(RC_LOG(ERR, fmt, ## __VA_ARGS__), -(err))

/* Device limits. QPs and MRs are found by a slot in their table, taken
 * from their number or key; the rest of it is a generation, so that a
 * number or key used again soon after is not the old one's.
 */
#define RC_MAX_QP 4096
#define RC_QPN_SLOT_BITS 16
#define RC_MAX_MR 65536
#define RC_MR_GEN_BITS 8
#define RC_MAX_QP_WR 16384
#define RC_MAX_SGE 32
#define RC_MAX_CQE 65536
#define RC_MAX_MR_SIZE (1ull << 40)
#define RC_MAX_MSG_SIZE (1u << 31)
#define RC_MAX_INLINE 256
#define RC_MAX_RD_ATOMIC 128
/* Bytes a RoCEv2 packet adds to its path MTU's payload, over the IP MTU:
 * IPv4, UDP, BTH, the largest extended header and the ICRC (as rxe
 * reckons a netdev's path MTU).
 */
#define RC_PATH_MTU_OVERHEAD 80

struct droce_rc_device {
	struct droce_stack *stack;
	uint16_t port;
	uint32_t ip;                    /* network order */
	uint16_t ip_mtu;
	struct droce_rc_device_attr attr;
	uint32_t nb_pd, nb_cq;
	struct droce_mr **mr;           /* RC_MAX_MR slots */
	uint8_t *mr_gen;
	uint32_t nb_mr, mr_hint;
	struct droce_qp **qp;           /* RC_MAX_QP slots */
	uint8_t *qp_gen;
	uint32_t nb_qp, qp_hint;
};

struct droce_pd {
	struct droce_rc_device *dev;
	uint32_t users;                 /* MRs and QPs */
};

struct droce_cq {
	struct droce_rc_device *dev;
	struct rte_ring *entries;       /* struct droce_wc, MP/SC */
	uint32_t size;
	uint32_t users;                 /* QPs */
	int event_fd;
	atomic_int armed;
	uint64_t overruns;
};

/* A send work request as queued: the caller's request, its SGEs, and
 * inline data copied in.
 */
struct rc_send_wqe {
	struct droce_send_wr wr;        /* next and sg_list not used */
	uint32_t length;                /* bytes of the message */
	bool signaled;
	struct droce_sge sge[];         /* max_send_sge; inline bytes after */
};

struct rc_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;
	struct droce_sge sge[];         /* max_recv_sge */
};

/* A work queue: a ring of fixed-size WQEs. Posters (any thread) hold
 * the lock among themselves and publish the producer index; the QP's
 * owner takes from the consumer index and never locks.
 */
struct rc_queue {
	uint8_t *wqe;
	uint32_t size;                  /* slots: a power of two */
	uint32_t wqe_size;
	uint32_t max_wr;
	rte_spinlock_t post_lock;
	atomic_uint producer;
	atomic_uint consumer;
};

struct droce_qp {
	struct droce_rc_device *dev;
	struct droce_pd *pd;
	struct droce_qp_init_attr init;
	struct droce_qp_attr attr;      /* qp_state is the state */
	uint32_t qpn;
	struct rc_queue sq, rq;
};

/* device.c */
struct droce_mr *rc_mr_of_key(const struct droce_rc_device *dev, uint32_t key);
/* The region of @p lkey covering [@p addr, @p addr + @p len) with
 * @p access, on @p pd; NULL if none.
 */
struct droce_mr *rc_mr_check(const struct droce_pd *pd, uint32_t key, uint64_t addr,
			     uint64_t len, int access);
/* Where @p addr (in @p mr's address space) is for the CPU. */
static inline uint8_t *
rc_mr_cpu(const struct droce_mr *mr, uint64_t addr)
{
	return (uint8_t *)mr->addr + (addr - mr->iova);
}

/* cq.c */
/* Add a completion; -ENOSPC when the CQ is full (counted as an overrun). */
int rc_cq_add(struct droce_cq *cq, const struct droce_wc *wc);

/* qp.c */
struct droce_qp *rc_qp_of_num(const struct droce_rc_device *dev, uint32_t qpn);

/* post.c */
int rc_queue_init(struct rc_queue *q, uint32_t max_wr, uint32_t wqe_size);
void rc_queue_free(struct rc_queue *q);
/* Complete every queued WQE of @p qp with WR_FLUSH_ERR (a QP in ERR). */
void rc_qp_flush(struct droce_qp *qp);

static inline void *
rc_queue_slot(const struct rc_queue *q, uint32_t index)
{
	return q->wqe + (size_t)(index & (q->size - 1)) * q->wqe_size;
}

#endif /* DROCE_RC_PRIVATE_H */
