/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_TEST_RC_PAIR_H
#define DROCE_TEST_RC_PAIR_H

/*
 * Two droce stacks in one test process, each with an RC device on a ring
 * port; the test moves the frames between the rings (the wire) and steps
 * both stacks itself. Each stack has a worker for every EAL lcore but the
 * first, and a TX ring for each lcore. For the cmocka tests of lib/rc.
 */

#include <arpa/inet.h>

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include "droce_core.h"
#include "droce_net.h"
#include "droce_rc.h"

#define RC_PAIR_MAX_LCORES 4

/* One side: its stack, port rings and device, and what its tests use. */
struct side {
	const char *name, *address;
	enum droce_rc_owners owners;    /* who runs the device's QPs */
	struct droce_stack *stack;
	struct rte_ring *rx, *tx[RC_PAIR_MAX_LCORES]; /* the port's; tx[0] the control lcore's */
	unsigned int nb_tx;
	struct droce_rc_device *dev;
	struct droce_pd *pd;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp;
	uint8_t *buf;
	struct droce_mr *mr, *ro_mr;
	struct droce_cq_reactor *reactor;
	/* Opens what else the stack runs (a CM, say), before it starts. */
	void (*before_start)(struct side *s);
	void *user;
};

/* The stack on a ring port, an RC device, a PD; started, not launched. */
static inline void
rc_pair_side_up(struct side *s)
{
	char device[64], address[64], workers[64];
	/* Chains: lib/rc's sends of 1 KiB and more go out from their MRs. */
	char *overrides[] = { device, address, workers, "stats.period=0", "port.0.tx.chains=yes" };
	const struct droce_rc_conf rc_conf = { .owners = s->owners };
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN], name[32];

	s->nb_tx = rte_lcore_count();
	assert_true(s->nb_tx >= 2 && s->nb_tx <= RC_PAIR_MAX_LCORES);
	snprintf(name, sizeof(name), "%s_rx", s->name);
	s->rx = rte_ring_create(name, 4096, SOCKET_ID_ANY, 0);
	for (unsigned int q = 0; q < s->nb_tx; q++) {
		snprintf(name, sizeof(name), "%s_tx%u", s->name, q);
		s->tx[q] = rte_ring_create(name, 4096, SOCKET_ID_ANY, 0);
	}
	assert_true(rte_eth_from_rings(s->name, &s->rx, 1, s->tx, s->nb_tx, SOCKET_ID_ANY) >= 0);
	snprintf(device, sizeof(device), "port.0.device=net_ring_%s", s->name);
	snprintf(address, sizeof(address), "port.0.address=%s/24", s->address);
	snprintf(workers, sizeof(workers), "worker.thread.groups=%u", s->nb_tx - 1);
	if (droce_conf_load(&conf, NULL, overrides, RTE_DIM(overrides), err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (droce_lcores_layout(&conf, "--lcores (test)", &layout, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	s->stack = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (s->stack == NULL)
		fail_msg("%s", err);
	s->dev = droce_rc_open_conf(s->stack, 0, &rc_conf, err, sizeof(err));
	if (s->dev == NULL)
		fail_msg("%s", err);
	if (s->before_start != NULL)
		s->before_start(s);
	assert_int_equal(droce_stack_start(s->stack, false), 0);
	s->pd = droce_alloc_pd(s->dev);
	assert_non_null(s->pd);
}

static inline void
rc_pair_side_down(struct side *s)
{
	assert_int_equal(droce_dealloc_pd(s->pd), 0);
	droce_stack_stop(s->stack);
	assert_int_equal(droce_rc_close(s->dev), 0);
	droce_stack_destroy(s->stack);
}

/* One round of a side: what the wire brought (all of it, as a NIC queue
 * deep enough would), the QPs' turns.
 */
static inline void
rc_pair_poll(struct side *s)
{
	int i = 0;

	do {
		for (unsigned int w = 0; w + 1 < s->nb_tx; w++)
			droce_worker_poll(s->stack, w);
		droce_control_poll(s->stack);
	} while (++i < 256 && rte_ring_count(s->rx) != 0);
}

/* A clean wire: what @p from sent goes to @p to. */
static inline void
rc_pair_move(struct side *from, struct side *to)
{
	for (unsigned int q = 0; q < from->nb_tx; q++) {
		struct rte_mbuf *m;

		while (rte_ring_dequeue(from->tx[q], (void **)&m) == 0)
			if (rte_ring_enqueue(to->rx, m) != 0)
				rte_pktmbuf_free(m);
	}
}

/* One round of both sides over a clean wire. */
static inline void
rc_pair_pump(struct side *a, struct side *b)
{
	rc_pair_poll(a);
	rc_pair_move(a, b);
	rc_pair_poll(b);
	rc_pair_move(b, a);
}

/* What a connection sets, beyond the PSNs. */
struct rc_pair_params {
	int access;
	enum droce_mtu mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
};

/* @p s's QP: INIT, RTR towards @p peer's QP, RTS. */
static inline void
rc_pair_connect(struct side *s, const struct side *peer, uint32_t sq_psn, uint32_t rq_psn,
		const struct rc_pair_params *p)
{
	struct droce_qp_attr a = {
		.qp_state = DROCE_QPS_INIT, .port_num = 1, .qp_access_flags = p->access,
	};

	assert_int_equal(droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX |
					 DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS), 0);
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTR, .path_mtu = p->mtu,
		.dest_qp_num = droce_qp_num(peer->qp), .rq_psn = rq_psn,
		.max_dest_rd_atomic = p->max_dest_rd_atomic, .min_rnr_timer = p->min_rnr_timer,
		.ah_attr = { .hop_limit = 64 },
	};
	droce_gid_from_ipv4(inet_addr(peer->address), a.ah_attr.dgid);
	assert_int_equal(droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_AV |
					 DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN |
					 DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC |
					 DROCE_QP_MIN_RNR_TIMER), 0);
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTS, .sq_psn = sq_psn, .timeout = p->timeout,
		.retry_cnt = p->retry_cnt, .rnr_retry = p->rnr_retry,
		.max_rd_atomic = p->max_rd_atomic,
	};
	assert_int_equal(droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN |
					 DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT |
					 DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC), 0);
}

#endif /* DROCE_TEST_RC_PAIR_H */
