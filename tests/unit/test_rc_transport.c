/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/rc's transport: two stacks in one process, each on a ring port, and
 * this test as the wire between them, so that it can drop, duplicate and
 * reorder RoCE packets at will and step both sides in turn. The QPs talk
 * RoCEv2 through the whole stack (ARP, IPv4, UDP, the RoCE demux, ICRC).
 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "droce_core.h"
#include "droce_net.h"
#include "droce_rc.h"
#include "droce_roce.h"
#include "rc_private.h"
#include "test_eal.h"
#include "rc_pair.h"

#define BUF_SIZE (8u << 20)
#define MAX_WR 256

static void register_post_from_hook(struct side *s);

static struct side A = { .name = "rcA", .address = "198.18.0.1",
			 .before_start = register_post_from_hook };
static struct side B = { .name = "rcB", .address = "198.18.0.2" };

/* ---- the wire -------------------------------------------------------------------- */

struct faults {
	unsigned int drop_pct, dup_pct, reorder_pct, corrupt_pct;
	bool drop_all;
	uint64_t dropped, duplicated, reordered, corrupted;
	uint64_t chained;               /* zero-copy frames read off their chain */
	/* ... whose region changed after they were built: a resend still
	 * queued when its work request completed and the slot was reused.
	 * Their ICRC no longer matches and the peer drops them.
	 */
	uint64_t stale;
};

static struct faults wire;
/* RoCE frames each lcore's TX queue sent, since the group's setup. */
static uint64_t roce_sent_on[RC_PAIR_MAX_LCORES];
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

static bool
is_roce(struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);

	return eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4) &&
	       ip->next_proto_id == IPPROTO_UDP &&
	       udp->dst_port == RTE_BE16(DROCE_ROCE_UDP_PORT);
}

/* What a NIC does with a chained frame: reads its segments into one
 * buffer and frees them, so that a zero-copy sender's region is free
 * again and a fault flips a bit of the wire's copy, not of the region.
 */
static struct rte_mbuf *
wire_read_chain(struct rte_mbuf *m, struct side *to)
{
	struct rte_mbuf *copy = rte_pktmbuf_copy(m, droce_port_pool(to->stack, 0), 0, UINT32_MAX);

	assert_non_null(copy);
	assert_int_equal(copy->nb_segs, 1);
	rte_pktmbuf_free(m);
	wire.chained++;
	if (!droce_icrc_ok(rte_pktmbuf_mtod_offset(copy, const uint8_t *, RTE_ETHER_HDR_LEN),
			   rte_pktmbuf_pkt_len(copy) - RTE_ETHER_HDR_LEN))
		wire.stale++;
	return copy;
}

/* Move what @p from sent to @p to, with the faults asked for. */
static void
wire_move(struct side *from, struct side *to)
{
	static struct rte_mbuf *held;

	for (unsigned int q = 0; q < from->nb_tx; q++) {
		struct rte_mbuf *m;

		while (rte_ring_dequeue(from->tx[q], (void **)&m) == 0) {
			if (m->nb_segs > 1)
				m = wire_read_chain(m, to);
			if (m != NULL && is_roce(m)) {
				bool corrupted;

				roce_sent_on[q]++;
				if (wire.drop_all || rng() % 100 < wire.drop_pct) {
					wire.dropped++;
					rte_pktmbuf_free(m);
					continue;
				}
				corrupted = rng() % 100 < wire.corrupt_pct;
				if (corrupted) {
					/* A byte from the BTH on flipped, the ICRC left as it was. */
					uint32_t from = RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) +
							sizeof(struct rte_udp_hdr);
					uint32_t at = from + rng() % (rte_pktmbuf_data_len(m) - from);

					*rte_pktmbuf_mtod_offset(m, uint8_t *, at) ^= (uint8_t)(1u << (rng() % 8));
					wire.corrupted++;
				}
				if (rng() % 100 < wire.dup_pct) {
					struct rte_mbuf *copy = rte_pktmbuf_copy(m, m->pool, 0,
										 UINT32_MAX);

					if (copy != NULL && rte_ring_enqueue(to->rx, copy) == 0) {
						wire.duplicated++;
						wire.corrupted += corrupted;
					} else {
						rte_pktmbuf_free(copy);
					}
				}
				if (held == NULL && rng() % 100 < wire.reorder_pct) {
					held = m; /* goes after the next one */
					wire.reordered++;
					continue;
				}
			}
			if (m != NULL && rte_ring_enqueue(to->rx, m) != 0)
				rte_pktmbuf_free(m);
			if (held != NULL && rte_ring_enqueue(to->rx, held) != 0)
				rte_pktmbuf_free(held);
			held = NULL;
		}
	}
	if (held != NULL && rte_ring_enqueue(to->rx, held) != 0)
		rte_pktmbuf_free(held);
	held = NULL;
}

/* One round of both sides. */
static void
pump(void)
{
	rc_pair_poll(&A);
	wire_move(&A, &B);
	rc_pair_poll(&B);
	wire_move(&B, &A);
}

/* Pump until @p n completions came on @p cq (or the time is up). */
static int
poll_until(struct droce_cq *cq, struct droce_wc *wc, int n, double seconds)
{
	uint64_t until = rte_get_timer_cycles() + (uint64_t)(seconds * (double)rte_get_timer_hz());
	int got = 0;

	while (got < n && rte_get_timer_cycles() < until) {
		pump();
		got += droce_poll_cq(cq, n - got, wc + got);
	}
	return got;
}

/* Move what @p from sent to @p to but its RoCE frames, which stay on
 * the wire in their order; true when one is there.
 */
static bool
wire_move_all_but_roce(struct side *from, struct side *to)
{
	bool roce = false;

	for (unsigned int q = 0; q < from->nb_tx; q++) {
		unsigned int n = rte_ring_count(from->tx[q]);

		for (unsigned int i = 0; i < n; i++) {
			struct rte_mbuf *m = NULL;

			assert_int_equal(rte_ring_dequeue(from->tx[q], (void **)&m), 0);
			if (is_roce(m)) {
				roce = true;
				assert_int_equal(rte_ring_enqueue(from->tx[q], m), 0);
			} else if (rte_ring_enqueue(to->rx, m) != 0) {
				rte_pktmbuf_free(m);
			}
		}
	}
	return roce;
}

/* Poll both sides until a RoCE frame of @p s waits on the wire; ARP
 * goes across meanwhile (a worker owner may need it, and take a post's
 * doorbell a round or two late).
 */
static bool
poll_until_sent(struct side *s, struct side *peer)
{
	for (int round = 0; round < 1000; round++) {
		rc_pair_poll(s);
		if (wire_move_all_but_roce(s, peer))
			return true;
		rc_pair_poll(peer);
		wire_move_all_but_roce(peer, s);
	}
	return false;
}

/* ---- the two sides ------------------------------------------------------------------ */

static void
side_up(struct side *s)
{
	rc_pair_side_up(s);
	/* port.0.tx.chains = yes (rc_pair.h): every test sends from its
	 * MRs, as droce does to a NIC that reads by DMA.
	 */
	assert_true(droce_rc_zero_copy(s->dev));
	s->scq = droce_create_cq(s->dev, 4096);
	s->rcq = droce_create_cq(s->dev, 4096);
	s->buf = aligned_alloc(4096, BUF_SIZE);
	assert_non_null(s->buf);
	s->mr = droce_reg_mr(s->pd, s->buf, BUF_SIZE - (1u << 20),
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
			     DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC);
	s->ro_mr = droce_reg_mr(s->pd, s->buf + BUF_SIZE - (1u << 20), 1u << 20,
				DROCE_ACCESS_REMOTE_READ);
	assert_non_null(s->mr);
	assert_non_null(s->ro_mr);
}

static void
side_down(struct side *s)
{
	assert_int_equal(droce_dereg_mr(s->mr), 0);
	assert_int_equal(droce_dereg_mr(s->ro_mr), 0);
	assert_int_equal(droce_destroy_cq(s->scq), 0);
	assert_int_equal(droce_destroy_cq(s->rcq), 0);
	rc_pair_side_down(s);
	free(s->buf);
}

struct qp_params {
	uint32_t sq_psn_a, sq_psn_b;
	struct rc_pair_params qp;
};

static const struct qp_params default_params = {
	.sq_psn_a = 0x100, .sq_psn_b = 0x200000,
	.qp = {
		.access = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |
			  DROCE_ACCESS_REMOTE_ATOMIC,
		.mtu = DROCE_MTU_1024, .timeout = 8, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .max_rd_atomic = 16, .max_dest_rd_atomic = 16,
	},
};

static void
qps_up(const struct qp_params *p)
{
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC,
		.cap = { .max_send_wr = MAX_WR, .max_recv_wr = MAX_WR, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};

	memset(&wire, 0, sizeof(wire));
	ia.send_cq = A.scq;
	ia.recv_cq = A.rcq;
	A.qp = droce_create_qp(A.pd, &ia);
	ia.send_cq = B.scq;
	ia.recv_cq = B.rcq;
	B.qp = droce_create_qp(B.pd, &ia);
	assert_non_null(A.qp);
	assert_non_null(B.qp);
	rc_pair_connect(&A, &B, p->sq_psn_a, p->sq_psn_b, &p->qp);
	rc_pair_connect(&B, &A, p->sq_psn_b, p->sq_psn_a, &p->qp);
}

static void
qps_down(void)
{
	struct droce_wc wc[64];

	assert_int_equal(droce_destroy_qp(A.qp), 0);
	assert_int_equal(droce_destroy_qp(B.qp), 0);
	for (int i = 0; i < 10; i++)
		pump();
	while (droce_poll_cq(A.scq, 64, wc) > 0 || droce_poll_cq(A.rcq, 64, wc) > 0 ||
	       droce_poll_cq(B.scq, 64, wc) > 0 || droce_poll_cq(B.rcq, 64, wc) > 0)
		;
	memset(&wire, 0, sizeof(wire));
}

/* ---- helpers for work requests ----------------------------------------------------- */

static void
post_recv(struct side *s, uint64_t wr_id, uint64_t offset, uint32_t len)
{
	struct droce_sge sge = { .addr = (uintptr_t)s->buf + offset, .length = len,
				 .lkey = s->mr->lkey };
	struct droce_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(droce_post_recv(s->qp, &wr, &bad), 0);
}

static int
post_send(struct side *s, uint64_t wr_id, enum droce_wr_opcode op, struct droce_sge *sge,
	  int nsge, uint64_t remote, uint32_t rkey, uint32_t imm)
{
	struct droce_send_wr wr = {
		.wr_id = wr_id, .sg_list = sge, .num_sge = nsge, .opcode = op,
		.send_flags = DROCE_SEND_SIGNALED, .imm_data = htonl(imm),
	}, *bad;

	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = rkey;
	return droce_post_send(s->qp, &wr, &bad);
}

static void
fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void
expect_wc(const struct droce_wc *wc, uint64_t wr_id, enum droce_wc_status status,
	  enum droce_wc_opcode opcode)
{
	if (wc->wr_id != wr_id || wc->status != status || wc->opcode != opcode)
		fail_msg("completion wr_id %lu status %s opcode %d; expected wr_id %lu %s opcode %d",
			 (unsigned long)wc->wr_id, droce_wc_status_str(wc->status), wc->opcode,
			 (unsigned long)wr_id, droce_wc_status_str(status), opcode);
}

/* ---- the tests --------------------------------------------------------------------- */

/* A 64 KiB WRITE of @p seed's bytes from A's region to B's, checked. */
static void
write_64k(uint64_t wr_id, uint32_t seed)
{
	struct droce_sge sge = { (uintptr_t)A.buf, 65536, A.mr->lkey };
	struct droce_wc wc[1];

	fill(A.buf, 65536, seed);
	assert_int_equal(post_send(&A, wr_id, DROCE_WR_RDMA_WRITE, &sge, 1,
				   (uintptr_t)B.buf + 8192, B.mr->rkey, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], wr_id, DROCE_WC_SUCCESS, DROCE_WC_RDMA_WRITE);
	assert_memory_equal(B.buf + 8192, A.buf, 65536);
}

/* Payloads of 1 KiB and more leave from their region, chained behind
 * their headers (the wire reads the chains as a NIC would): a WRITE's and
 * a READ answer's, byte-exact; with zero copy off they are copied. A
 * region whose packets still wait in the port cannot go yet.
 */
/* A's WRITE of @p len bytes from @p src (key @p lkey) to B's buffer at
 * @p b_off.
 */
static void
write_from(uint64_t wr_id, const uint8_t *src, uint32_t len, uint32_t lkey, size_t b_off)
{
	struct droce_sge sge = { (uintptr_t)src, len, lkey };

	assert_int_equal(post_send(&A, wr_id, DROCE_WR_RDMA_WRITE, &sge, 1,
				   (uintptr_t)B.buf + b_off, B.mr->rkey, 0), 0);
}

/* The older WRITE @p older completes, then @p gone, whose region went
 * while it was posted, fails with a local protection error.
 */
static void
expect_older_then_key_gone(uint64_t older, uint64_t gone)
{
	struct droce_wc wc[2];

	assert_int_equal(poll_until(A.scq, wc, 2, 5), 2);
	expect_wc(&wc[0], older, DROCE_WC_SUCCESS, DROCE_WC_RDMA_WRITE);
	expect_wc(&wc[1], gone, DROCE_WC_LOC_PROT_ERR, DROCE_WC_RDMA_WRITE);
}

static void
test_zero_copy(void **state)
{
	struct droce_rc_stats a0, a1, b0, b1;
	struct droce_sge sge;
	struct droce_wc wc[2];
	struct droce_mr *mr;

	(void)state;
	assert_true(droce_rc_zero_copy(A.dev));
	qps_up(&default_params);
	droce_rc_query_stats(A.dev, &a0);
	droce_rc_query_stats(B.dev, &b0);
	write_64k(1, 3);
	/* Read back: B's answers are copied (its region may change while
	 * it is read).
	 */
	sge = (struct droce_sge){ (uintptr_t)A.buf + 131072, 65536, A.mr->lkey };
	memset(A.buf + 131072, 0, 65536);
	assert_int_equal(post_send(&A, 2, DROCE_WR_RDMA_READ, &sge, 1, (uintptr_t)B.buf + 8192,
				   B.mr->rkey, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 2, DROCE_WC_SUCCESS, DROCE_WC_RDMA_READ);
	assert_memory_equal(A.buf + 131072, A.buf, 65536);
	droce_rc_query_stats(A.dev, &a1);
	droce_rc_query_stats(B.dev, &b1);
	assert_true(a1.tx_zero_copy - a0.tx_zero_copy >= 64);
	assert_int_equal(b1.tx_zero_copy, b0.tx_zero_copy);
	assert_true(wire.chained >= 64);

	/* Off: copied, the same bytes. */
	assert_int_equal(droce_rc_set_zero_copy(A.dev, false), 0);
	assert_false(droce_rc_zero_copy(A.dev));
	write_64k(3, 4);
	droce_rc_query_stats(A.dev, &a0);
	assert_int_equal(a0.tx_zero_copy, a1.tx_zero_copy);
	assert_int_equal(droce_rc_set_zero_copy(A.dev, true), 0);

	/* Deregistered while its packets wait on the wire: not yet (on the
	 * control lcore, at once). The ACK timeout passes, and the resend
	 * finds the key gone: a local protection error, as ibverbs has it,
	 * and the QP in ERR.
	 */
	mr = droce_reg_mr(A.pd, A.buf + (4u << 20), 8192, 0);
	assert_non_null(mr);
	write_from(4, A.buf + (4u << 20), 8192, mr->lkey, 0);
	assert_true(poll_until_sent(&A, &B));
	assert_int_equal(droce_dereg_mr(mr), -EBUSY);
	rte_delay_ms(20); /* the ACK timeout is about 1 ms */
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 4, DROCE_WC_LOC_PROT_ERR, DROCE_WC_RDMA_WRITE);
	assert_int_equal(droce_dereg_mr(mr), 0);
	qps_down();

	/* The same behind an older WQE that waits for its ACK: the older
	 * completes when its ACK comes (from the first sending: nothing
	 * past the failed WQE is sent again), then this one fails.
	 */
	qps_up(&default_params);
	mr = droce_reg_mr(A.pd, A.buf + (4u << 20), 8192, 0);
	assert_non_null(mr);
	write_from(5, A.buf, 4096, A.mr->lkey, 0);
	write_from(6, A.buf + (4u << 20), 8192, mr->lkey, 8192);
	assert_true(poll_until_sent(&A, &B));
	assert_int_equal(droce_dereg_mr(mr), -EBUSY);
	rte_delay_ms(20);
	expect_older_then_key_gone(5, 6);
	assert_int_equal(droce_dereg_mr(mr), 0);
	qps_down();

	/* A region gone before the WQE's first packet, an older WQE on the
	 * wire (a post behind it waits for the next round): the same.
	 */
	qps_up(&default_params);
	mr = droce_reg_mr(A.pd, A.buf + (4u << 20), 8192, 0);
	assert_non_null(mr);
	write_from(7, A.buf, 4096, A.mr->lkey, 0);
	assert_true(poll_until_sent(&A, &B));
	write_from(8, A.buf + (4u << 20), 8192, mr->lkey, 8192);
	assert_int_equal(droce_dereg_mr(mr), 0);
	expect_older_then_key_gone(7, 8);
	qps_down();
}

/* SENDs of sizes around the path MTU, with and without immediate data. */
static void
test_send_sizes(void **state)
{
	static const uint32_t sizes[] = { 0, 1, 1023, 1024, 1025, 4096, 10247, 65536 };
	struct droce_wc wc[2];

	(void)state;
	qps_up(&default_params);
	for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
		uint32_t len = sizes[i];
		struct droce_sge sge = { .addr = (uintptr_t)A.buf, .length = len,
					 .lkey = A.mr->lkey };

		fill(A.buf, len, i);
		memset(B.buf, 0xee, len + 16);
		post_recv(&B, 100 + i, 0, 65536 + 16);
		assert_int_equal(post_send(&A, i, i & 1 ? DROCE_WR_SEND_WITH_IMM : DROCE_WR_SEND,
					   &sge, 1, 0, 0, 0xabc000 + i), 0);
		assert_int_equal(poll_until(B.rcq, wc, 1, 5), 1);
		expect_wc(&wc[0], 100 + i, DROCE_WC_SUCCESS, DROCE_WC_RECV);
		assert_int_equal(wc[0].byte_len, len);
		assert_int_equal(wc[0].src_qp, droce_qp_num(A.qp));
		assert_int_equal(wc[0].qp_num, droce_qp_num(B.qp));
		if (i & 1) {
			assert_true(wc[0].wc_flags & DROCE_WC_WITH_IMM);
			assert_int_equal(ntohl(wc[0].imm_data), 0xabc000 + i);
		} else {
			assert_false(wc[0].wc_flags & DROCE_WC_WITH_IMM);
		}
		assert_memory_equal(A.buf, B.buf, len);
		assert_int_equal(B.buf[len], 0xee);
		assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
		expect_wc(&wc[0], i, DROCE_WC_SUCCESS, DROCE_WC_SEND);
	}
	qps_down();
}

/* WRITE with immediate, READ back through scattered SGEs, the atomics. */
static void
test_write_read_atomic(void **state)
{
	struct droce_wc wc[2];
	struct droce_sge sge[3];
	uint64_t *target = (uint64_t *)(B.buf + 2 * 1048576);
	struct droce_send_wr wr, *bad;

	(void)state;
	qps_up(&default_params);
	fill(A.buf, 300000, 7);
	sge[0] = (struct droce_sge){ (uintptr_t)A.buf, 100000, A.mr->lkey };
	sge[1] = (struct droce_sge){ (uintptr_t)A.buf + 100000, 1, A.mr->lkey };
	sge[2] = (struct droce_sge){ (uintptr_t)A.buf + 100001, 199999, A.mr->lkey };
	post_recv(&B, 55, 0, 16);
	assert_int_equal(post_send(&A, 1, DROCE_WR_RDMA_WRITE_WITH_IMM, sge, 3,
				   (uintptr_t)B.buf + 4096, B.mr->rkey, 0x1234), 0);
	assert_int_equal(poll_until(B.rcq, wc, 1, 5), 1);
	expect_wc(&wc[0], 55, DROCE_WC_SUCCESS, DROCE_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc[0].byte_len, 300000);
	assert_int_equal(ntohl(wc[0].imm_data), 0x1234);
	assert_memory_equal(B.buf + 4096, A.buf, 300000);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 1, DROCE_WC_SUCCESS, DROCE_WC_RDMA_WRITE);

	/* READ it back into three other pieces of A. */
	memset(A.buf + 400000, 0, 300000);
	sge[0] = (struct droce_sge){ (uintptr_t)A.buf + 400000, 5000, A.mr->lkey };
	sge[1] = (struct droce_sge){ (uintptr_t)A.buf + 405000, 95000, A.mr->lkey };
	sge[2] = (struct droce_sge){ (uintptr_t)A.buf + 500000, 200000, A.mr->lkey };
	assert_int_equal(post_send(&A, 2, DROCE_WR_RDMA_READ, sge, 3,
				   (uintptr_t)B.buf + 4096, B.mr->rkey, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 2, DROCE_WC_SUCCESS, DROCE_WC_RDMA_READ);
	assert_int_equal(wc[0].byte_len, 300000);
	assert_memory_equal(A.buf + 400000, A.buf, 300000);

	/* Compare-and-swap that matches, one that does not, fetch-and-add. */
	*target = 41;
	memset(&wr, 0, sizeof(wr));
	sge[0] = (struct droce_sge){ (uintptr_t)A.buf + 800000, 8, A.mr->lkey };
	wr = (struct droce_send_wr){ .wr_id = 3, .sg_list = sge, .num_sge = 1,
				     .opcode = DROCE_WR_ATOMIC_CMP_AND_SWP,
				     .send_flags = DROCE_SEND_SIGNALED };
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = B.mr->rkey;
	wr.wr.atomic.compare_add = 41;
	wr.wr.atomic.swap = 99;
	assert_int_equal(droce_post_send(A.qp, &wr, &bad), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 3, DROCE_WC_SUCCESS, DROCE_WC_COMP_SWAP);
	assert_int_equal(*(uint64_t *)(A.buf + 800000), 41);
	assert_int_equal(*target, 99);
	wr.wr_id = 4;
	assert_int_equal(droce_post_send(A.qp, &wr, &bad), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	assert_int_equal(*(uint64_t *)(A.buf + 800000), 99);
	assert_int_equal(*target, 99);
	wr.wr_id = 5;
	wr.opcode = DROCE_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 1000;
	assert_int_equal(droce_post_send(A.qp, &wr, &bad), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 5, DROCE_WC_SUCCESS, DROCE_WC_FETCH_ADD);
	assert_int_equal(*(uint64_t *)(A.buf + 800000), 99);
	assert_int_equal(*target, 1099);
	qps_down();
}

/* A CNP (or any packet of another transport) at the QP's expected PSN
 * is not a request: it is counted and dropped, and the real request with
 * that PSN is executed, not taken for a duplicate.
 */
static void
test_other_transport_dropped(void **state)
{
	struct droce_sge sge = { (uintptr_t)A.buf, 100, 0 };
	struct droce_rc_stats before, after;
	struct droce_frame_spec spec = {
		.src_ip4 = inet_addr(A.address), .dst_ip4 = inet_addr(B.address),
		.opcode = DROCE_OP_CNP,
	};
	struct droce_wc wc[2];
	struct rte_mbuf *m;

	(void)state;
	qps_up(&default_params);
	sge.lkey = A.mr->lkey;
	for (int i = 0; i < 3; i++)
		pump(); /* ARP both ways */
	droce_port_mac(B.stack, 0, &spec.dst_mac);
	spec.dest_qp = droce_qp_num(B.qp);
	spec.psn = B.qp->resp.psn;
	m = rte_pktmbuf_alloc(droce_port_pool(A.stack, 0));
	assert_non_null(m);
	assert_int_equal(droce_frame_build(m, &spec), 0);
	spec.opcode = DROCE_OP_UD | DROCE_OP_SEND_ONLY;
	droce_rc_query_stats(B.dev, &before);
	assert_int_equal(rte_ring_enqueue(B.rx, m), 0);
	m = rte_pktmbuf_alloc(droce_port_pool(A.stack, 0));
	assert_non_null(m);
	assert_int_equal(droce_frame_build(m, &spec), 0);
	assert_int_equal(rte_ring_enqueue(B.rx, m), 0);
	pump();
	droce_rc_query_stats(B.dev, &after);
	assert_int_equal(after.bad_packet - before.bad_packet, 2);
	post_recv(&B, 5, 0, 4096);
	assert_int_equal(post_send(&A, 6, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(poll_until(B.rcq, wc, 1, 5), 1);
	expect_wc(&wc[0], 5, DROCE_WC_SUCCESS, DROCE_WC_RECV);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 6, DROCE_WC_SUCCESS, DROCE_WC_SEND);
	qps_down();
}

/* A SEND with no receive posted: RNR NAKs until one is, then success. */
static void
test_rnr_then_success(void **state)
{
	struct droce_sge sge = { (uintptr_t)A.buf, 3000, 0 };
	struct droce_rc_stats before, after;
	struct droce_wc wc[2];

	(void)state;
	qps_up(&default_params);
	sge.lkey = A.mr->lkey;
	fill(A.buf, 3000, 3);
	droce_rc_query_stats(B.dev, &before);
	assert_int_equal(post_send(&A, 9, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 0.05), 0);
	droce_rc_query_stats(B.dev, &after);
	assert_true(after.rnr_naks_sent > before.rnr_naks_sent);
	post_recv(&B, 10, 0, 4096);
	assert_int_equal(poll_until(B.rcq, wc, 1, 5), 1);
	expect_wc(&wc[0], 10, DROCE_WC_SUCCESS, DROCE_WC_RECV);
	assert_memory_equal(B.buf, A.buf, 3000);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 9, DROCE_WC_SUCCESS, DROCE_WC_SEND);
	qps_down();
}

/* rnr_retry 0: the first RNR NAK ends the send. */
static void
test_rnr_retry_exceeded(void **state)
{
	struct qp_params p = default_params;
	struct droce_sge sge = { (uintptr_t)A.buf, 100, 0 };
	struct droce_wc wc[4];

	(void)state;
	p.qp.rnr_retry = 0;
	qps_up(&p);
	sge.lkey = A.mr->lkey;
	assert_int_equal(post_send(&A, 1, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(post_send(&A, 2, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 2, 5), 2);
	expect_wc(&wc[0], 1, DROCE_WC_RNR_RETRY_EXC_ERR, DROCE_WC_SEND);
	expect_wc(&wc[1], 2, DROCE_WC_WR_FLUSH_ERR, DROCE_WC_SEND);
	assert_int_equal(droce_qp_state(A.qp), DROCE_QPS_ERR);
	qps_down();
}

/* A WRITE into a read-only region: a remote access error, the requester's
 * QP in ERR with the rest flushed, and not one byte written.
 */
static void
test_write_to_read_only(void **state)
{
	uint8_t *ro = B.buf + BUF_SIZE - (1u << 20);
	struct droce_sge sge = { (uintptr_t)A.buf, 2048, 0 };
	struct droce_wc wc[4];

	(void)state;
	qps_up(&default_params);
	sge.lkey = A.mr->lkey;
	fill(A.buf, 2048, 1);
	memset(ro, 0x5a, 2048);
	assert_int_equal(post_send(&A, 1, DROCE_WR_RDMA_WRITE, &sge, 1, (uintptr_t)ro,
				   B.ro_mr->rkey, 0), 0);
	assert_int_equal(post_send(&A, 2, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 2, 5), 2);
	expect_wc(&wc[0], 1, DROCE_WC_REM_ACCESS_ERR, DROCE_WC_RDMA_WRITE);
	expect_wc(&wc[1], 2, DROCE_WC_WR_FLUSH_ERR, DROCE_WC_SEND);
	for (int i = 0; i < 2048; i++)
		assert_int_equal(ro[i], 0x5a);
	assert_int_equal(droce_qp_state(A.qp), DROCE_QPS_ERR);
	assert_int_equal(droce_qp_state(B.qp), DROCE_QPS_ERR);
	qps_down();
}

/* A READ on a QP that grants no remote read: an invalid request. */
static void
test_read_not_granted(void **state)
{
	struct qp_params p = default_params;
	struct droce_sge sge = { (uintptr_t)A.buf, 64, 0 };
	struct droce_wc wc[2];

	(void)state;
	p.qp.access = DROCE_ACCESS_REMOTE_WRITE;
	qps_up(&p);
	sge.lkey = A.mr->lkey;
	assert_int_equal(post_send(&A, 1, DROCE_WR_RDMA_READ, &sge, 1, (uintptr_t)B.buf,
				   B.mr->rkey, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 1, DROCE_WC_REM_INV_REQ_ERR, DROCE_WC_RDMA_READ);
	qps_down();
}

/* The NAK that ends a READ comes after the local ACK timer fired and
 * rewound the send queue, before the resend: it still ends the WQE (the
 * peer's QP is in ERR and would never answer the resend).
 */
static void
test_nak_after_rewind(void **state)
{
	struct qp_params p = default_params;
	struct droce_sge sge = { (uintptr_t)A.buf, 64, 0 };
	struct droce_rc_stats before, after;
	struct droce_wc wc[2];

	(void)state;
	p.qp.access = DROCE_ACCESS_REMOTE_WRITE;
	qps_up(&p);
	sge.lkey = A.mr->lkey;
	droce_rc_query_stats(A.dev, &before);
	assert_int_equal(post_send(&A, 1, DROCE_WR_RDMA_READ, &sge, 1, (uintptr_t)B.buf,
				   B.mr->rkey, 0), 0);
	assert_true(poll_until_sent(&A, &B));
	wire_move(&A, &B);
	assert_true(poll_until_sent(&B, &A)); /* its NAK waits on the wire */
	rte_delay_us_block(20000); /* 20 ms: the ACK timeout is about 1 ms */
	wire_move(&B, &A);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 1, DROCE_WC_REM_INV_REQ_ERR, DROCE_WC_RDMA_READ);
	droce_rc_query_stats(A.dev, &after);
	assert_true(after.retransmits > before.retransmits); /* the timer did fire */
	qps_down();
}

/* A SEND longer than the receive posted for it. */
static void
test_send_too_long(void **state)
{
	struct droce_sge sge = { (uintptr_t)A.buf, 5000, 0 };
	struct droce_wc wc[2];

	(void)state;
	qps_up(&default_params);
	sge.lkey = A.mr->lkey;
	post_recv(&B, 7, 0, 4000);
	assert_int_equal(post_send(&A, 1, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(poll_until(B.rcq, wc, 1, 5), 1);
	expect_wc(&wc[0], 7, DROCE_WC_LOC_LEN_ERR, DROCE_WC_RECV);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 1, DROCE_WC_REM_INV_REQ_ERR, DROCE_WC_SEND);
	qps_down();
}

/* Nothing gets through: the local ACK timer spends retry_cnt, then the
 * send fails with RETRY_EXC_ERR.
 */
static void
test_retry_exceeded(void **state)
{
	struct qp_params p = default_params;
	struct droce_sge sge = { (uintptr_t)A.buf, 100, 0 };
	struct droce_rc_stats st;
	struct droce_wc wc[2];

	(void)state;
	p.qp.retry_cnt = 2;
	p.qp.timeout = 10; /* 4 ms */
	qps_up(&p);
	sge.lkey = A.mr->lkey;
	post_recv(&B, 1, 0, 4096);
	wire.drop_all = true;
	assert_int_equal(post_send(&A, 1, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 1, DROCE_WC_RETRY_EXC_ERR, DROCE_WC_SEND);
	droce_rc_query_stats(A.dev, &st);
	assert_true(st.timeouts >= 3);
	assert_int_equal(wire.dropped, 3);
	qps_down();
}

/* Pump until the TSC reaches @p until; A's timeouts counted by then,
 * and in @p read_at (if not NULL) when they were read.
 */
static uint64_t
timeouts_by(uint64_t until, uint64_t *read_at)
{
	struct droce_rc_stats st;

	while (rte_get_timer_cycles() < until)
		pump();
	droce_rc_query_stats(A.dev, &st);
	if (read_at != NULL)
		*read_at = rte_get_timer_cycles();
	return st.timeouts;
}

/* The local ACK timeout runs from the last send, as rxe restarts its
 * timer: a send half way through moves it. The timer set for the first
 * send fires early, finds the later deadline and waits for it; then the
 * timeout counts.
 */
static void
test_ack_timeout_moves_with_sends(void **state)
{
	struct qp_params p = default_params;
	struct droce_sge sge = { (uintptr_t)A.buf, 100, 0 };
	uint64_t t = rte_get_timer_hz() * 4096 * 4096 / 1000000000ull; /* timeout 12: 16.8 ms */
	uint64_t before, t0, t1, sent, n, read_at, seen, dropped;
	struct droce_rc_stats st;

	(void)state;
	p.qp.timeout = 12;
	qps_up(&p);
	sge.lkey = A.mr->lkey;
	post_recv(&B, 1, 0, 4096);
	post_recv(&B, 2, 0, 4096);
	wire.drop_all = true;
	droce_rc_query_stats(A.dev, &st);
	before = st.timeouts;
	t0 = rte_get_timer_cycles();
	assert_int_equal(post_send(&A, 1, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	n = timeouts_by(t0 + t / 2, &read_at);
	if (read_at < t0 + t)
		assert_int_equal(n, before);
	t1 = rte_get_timer_cycles();
	dropped = wire.dropped;
	assert_int_equal(post_send(&A, 2, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	while (wire.dropped == dropped && rte_get_timer_cycles() < t0 + 10 * t)
		pump();
	sent = rte_get_timer_cycles();  /* it left by then */
	assert_true(wire.dropped > dropped);
	/* The second send left at t1 or later, so its deadline is t1 + t at
	 * the earliest. Half way from the first one's to that: none yet. Only
	 * a thread that kept the cpu can tell. One that lost it for most of a
	 * timeout may see the first deadline pass before the second send
	 * left, or read the count after the second deadline: the timeout
	 * must still come.
	 */
	n = timeouts_by(t0 + t + (t1 - t0) / 2, &read_at);
	if (sent < t0 + t && read_at < t1 + t)
		assert_int_equal(n, before);
	/* seen: when a pump had ended that saw it, not before its time. */
	do {
		pump();
		seen = rte_get_timer_cycles();
		droce_rc_query_stats(A.dev, &st);
	} while (st.timeouts == before && seen < t1 + 10 * t);
	assert_true(st.timeouts > before);
	if (sent < t0 + t)
		assert_true(seen >= t1 + t);
	qps_down();
}

/* Frames waiting on @p s's TX rings, the wire's side of its port. */
static unsigned int
frames_waiting(const struct side *s)
{
	unsigned int n = 0;

	for (unsigned int q = 0; q < s->nb_tx; q++)
		n += rte_ring_count(s->tx[q]);
	return n;
}

/* A's SENDs @p first .. @p first + @p n - 1, each into B's receive of
 * the same wr_id: both sides complete them, in order.
 */
static void
expect_sends_done(uint64_t first, int n)
{
	struct droce_wc wc[4];

	assert_true(n <= (int)RTE_DIM(wc));
	assert_int_equal(poll_until(A.scq, wc, n, 5), n);
	for (int i = 0; i < n; i++)
		expect_wc(&wc[i], first + (uint64_t)i, DROCE_WC_SUCCESS, DROCE_WC_SEND);
	assert_int_equal(poll_until(B.rcq, wc, n, 5), n);
	for (int i = 0; i < n; i++)
		expect_wc(&wc[i], first + (uint64_t)i, DROCE_WC_SUCCESS, DROCE_WC_RECV);
}

/* Posted on the owner's thread between rounds (this thread runs both
 * sides' rounds), a send to a QP with nothing unacknowledged leaves in
 * the post itself; one behind a packet in flight waits for the round, so
 * that a pipeline's sends leave together. With the QP's lock held on this
 * thread, as a CQ callback under the owner's publish has it, the post
 * leaves the send to the round instead of taking the lock again.
 */
static void
test_idle_qp_sends_at_once(void **state)
{
	struct droce_sge sge = { (uintptr_t)A.buf, 64, 0 };

	(void)state;
	qps_up(&default_params);
	sge.lkey = A.mr->lkey;
	/* One exchange first: ARP answered, everything acknowledged. */
	post_recv(&B, 1, 0, 4096);
	assert_int_equal(post_send(&A, 1, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	expect_sends_done(1, 1);
	assert_int_equal(frames_waiting(&A), 0);

	post_recv(&B, 2, 0, 4096);
	post_recv(&B, 3, 0, 4096);
	assert_int_equal(post_send(&A, 2, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(frames_waiting(&A), 1);
	assert_int_equal(post_send(&A, 3, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(frames_waiting(&A), 1);
	rc_pair_poll(&A);
	assert_int_equal(frames_waiting(&A), 2);

	expect_sends_done(2, 2);
	assert_int_equal(frames_waiting(&A), 0);

	post_recv(&B, 4, 0, 4096);
	rte_spinlock_lock(&A.qp->lock);
	assert_int_equal(post_send(&A, 4, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(frames_waiting(&A), 0);
	rte_spinlock_unlock(&A.qp->lock);
	rc_pair_poll(&A);
	assert_int_equal(frames_waiting(&A), 1);
	expect_sends_done(4, 1);
	qps_down();
}

/* A control hook of A's, registered after lib/rc's: when armed, it posts
 * one SEND on A's QP from inside the round, as lib/rpc's workers do.
 */
static struct droce_sge hook_sge;
static bool hook_armed;

static unsigned int
post_from_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	(void)ctx;
	(void)arg;
	if (hook_armed) {
		hook_armed = false;
		assert_int_equal(post_send(&A, 6, DROCE_WR_SEND, &hook_sge, 1, 0, 0, 0), 0);
	}
	return 0;
}

static void
register_post_from_hook(struct side *s)
{
	assert_int_equal(droce_control_hook_register(s->stack, post_from_hook, NULL), 0);
}

/* A send that a later control hook posts, behind a packet in flight,
 * leaves in that same round (lib/rc's last hook): on the control lcore's
 * QPs. A worker's QP takes it in the worker's next round.
 */
static void
test_hook_post_leaves_in_round(void **state)
{
	(void)state;
	qps_up(&default_params);
	hook_sge = (struct droce_sge){ (uintptr_t)A.buf, 64, A.mr->lkey };
	post_recv(&B, 5, 0, 4096);
	post_recv(&B, 6, 0, 4096);
	/* One SEND out and not acknowledged: the QP is not idle. */
	assert_int_equal(post_send(&A, 5, DROCE_WR_SEND, &hook_sge, 1, 0, 0, 0), 0);
	assert_true(poll_until_sent(&A, &B));
	assert_int_equal(frames_waiting(&A), 1);
	hook_armed = true;
	droce_control_poll(A.stack);
	assert_false(hook_armed);
	assert_int_equal(frames_waiting(&A), A.owners == DROCE_RC_OWNERS_CONTROL ? 2 : 1);
	expect_sends_done(5, 2);
	qps_down();
}

/* One SEND's ACK may wait: B's round that took it sends nothing. It
 * leaves at B's next round's start, or with B's answer, which the test
 * (the owner's thread) posts between rounds to an idle QP. Two SENDs in
 * one round are a pipeline: their ACK leaves at that round's end.
 */
static void
lone_send_taken(uint64_t wr_id, struct droce_sge *sge)
{
	struct droce_wc wc;

	post_recv(&B, wr_id, 0, 4096);
	assert_int_equal(post_send(&A, wr_id, DROCE_WR_SEND, sge, 1, 0, 0, 0), 0);
	rc_pair_poll(&A);
	rc_pair_move(&A, &B);
	rc_pair_poll(&B);
	assert_int_equal(droce_poll_cq(B.rcq, 1, &wc), 1);
	expect_wc(&wc, wr_id, DROCE_WC_SUCCESS, DROCE_WC_RECV);
}

static void
test_lone_ack_waits_for_answer(void **state)
{
	struct droce_sge sge_a, sge_b;
	struct droce_wc wc;

	(void)state;
	qps_up(&default_params);
	sge_a = (struct droce_sge){ (uintptr_t)A.buf, 64, A.mr->lkey };
	sge_b = (struct droce_sge){ (uintptr_t)B.buf + 65536, 64, B.mr->lkey };
	post_recv(&B, 1, 0, 4096);
	assert_int_equal(post_send(&A, 1, DROCE_WR_SEND, &sge_a, 1, 0, 0, 0), 0);
	expect_sends_done(1, 1);        /* ARP answered, all acknowledged */

	/* Nothing answers: the ACK goes in the next round. */
	lone_send_taken(2, &sge_a);
	assert_int_equal(frames_waiting(&B), 0);
	rc_pair_poll(&B);
	assert_int_equal(frames_waiting(&B), 1);
	assert_int_equal(poll_until(A.scq, &wc, 1, 5), 1);
	expect_wc(&wc, 2, DROCE_WC_SUCCESS, DROCE_WC_SEND);

	/* B answers: the ACK leaves with the answer. */
	post_recv(&A, 10, 8192, 4096);
	lone_send_taken(3, &sge_a);
	assert_int_equal(post_send(&B, 10, DROCE_WR_SEND, &sge_b, 1, 0, 0, 0), 0);
	assert_int_equal(frames_waiting(&B), 2);
	assert_int_equal(poll_until(A.rcq, &wc, 1, 5), 1);
	expect_wc(&wc, 10, DROCE_WC_SUCCESS, DROCE_WC_RECV);
	assert_int_equal(poll_until(A.scq, &wc, 1, 5), 1);
	expect_wc(&wc, 3, DROCE_WC_SUCCESS, DROCE_WC_SEND);
	assert_int_equal(poll_until(B.scq, &wc, 1, 5), 1);
	expect_wc(&wc, 10, DROCE_WC_SUCCESS, DROCE_WC_SEND);

	/* Two in one round: their ACK is not held. */
	post_recv(&B, 4, 0, 4096);
	post_recv(&B, 5, 0, 4096);
	assert_int_equal(post_send(&A, 4, DROCE_WR_SEND, &sge_a, 1, 0, 0, 0), 0);
	assert_int_equal(post_send(&A, 5, DROCE_WR_SEND, &sge_a, 1, 0, 0, 0), 0);
	rc_pair_poll(&A);
	assert_int_equal(frames_waiting(&A), 2);
	rc_pair_move(&A, &B);
	rc_pair_poll(&B);
	assert_int_equal(frames_waiting(&B), 1);
	expect_sends_done(4, 2);
	qps_down();
}

/* Messages across the 24-bit PSN wrap, both directions. */
static void
test_psn_wrap(void **state)
{
	struct qp_params p = default_params;
	struct droce_wc wc[64];

	(void)state;
	p.sq_psn_a = 0xfffff0;
	p.sq_psn_b = 0xfffffe;
	qps_up(&p);
	for (int i = 0; i < 8; i++) {
		struct droce_sge sge = { (uintptr_t)A.buf + 8192 * i, 5000, A.mr->lkey };

		fill(A.buf + 8192 * i, 5000, 40 + i);
		post_recv(&B, i, 8192 * i, 8192);
		assert_int_equal(post_send(&A, i, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	}
	assert_int_equal(poll_until(B.rcq, wc, 8, 5), 8);
	for (int i = 0; i < 8; i++) {
		expect_wc(&wc[i], i, DROCE_WC_SUCCESS, DROCE_WC_RECV);
		assert_memory_equal(B.buf + 8192 * i, A.buf + 8192 * i, 5000);
	}
	assert_int_equal(poll_until(A.scq, wc, 8, 5), 8);
	/* B reads across its own wrap. */
	fill(A.buf + 1048576, 20000, 5);
	{
		struct droce_sge sge = { (uintptr_t)B.buf + 1048576, 20000, B.mr->lkey };
		struct droce_send_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1,
					    .opcode = DROCE_WR_RDMA_READ,
					    .send_flags = DROCE_SEND_SIGNALED }, *bad;

		wr.wr.rdma.remote_addr = (uintptr_t)A.buf + 1048576;
		wr.wr.rdma.rkey = A.mr->rkey;
		assert_int_equal(droce_post_send(B.qp, &wr, &bad), 0);
	}
	assert_int_equal(poll_until(B.scq, wc, 1, 5), 1);
	expect_wc(&wc[0], 77, DROCE_WC_SUCCESS, DROCE_WC_RDMA_READ);
	assert_memory_equal(B.buf + 1048576, A.buf + 1048576, 20000);
	qps_down();
}

/* A QP of A's in RTS, with @p cq for both queues, towards an address
 * no one answers ARP for (198.18.0.77): ACK timeout 10 (4.2 ms), two
 * retries.
 */
static struct droce_qp *
qp_to_nobody(struct droce_cq *cq)
{
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_INIT, .port_num = 1 };
	struct droce_qp *qp = droce_create_qp(A.pd, &ia);

	assert_non_null(qp);
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX |
					 DROCE_QP_PORT | DROCE_QP_ACCESS_FLAGS), 0);
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTR, .path_mtu = DROCE_MTU_1024, .dest_qp_num = 0x10001,
		.rq_psn = 1, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = { .hop_limit = 64 },
	};
	droce_gid_from_ipv4(inet_addr("198.18.0.77"), a.ah_attr.dgid);
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_AV |
					 DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN |
					 DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC |
					 DROCE_QP_MIN_RNR_TIMER), 0);
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTS, .sq_psn = 1, .timeout = 10, .retry_cnt = 2,
		.rnr_retry = 2, .max_rd_atomic = 1,
	};
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN |
					 DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT |
					 DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC), 0);
	return qp;
}

/* A peer whose address no one answers ARP for: the SEND cannot go, and
 * fails with RETRY_EXC_ERR after the local ACK timeout times retry_cnt + 1
 * (2^10 * 4.096 us * 3, 12.6 ms), as if its packets had been lost; the
 * next is flushed.
 */
static void
test_peer_never_answers_arp(void **state)
{
	struct droce_sge sge = { .addr = (uintptr_t)A.buf, .length = 100, .lkey = A.mr->lkey };
	struct droce_wc wc[2];
	uint64_t t0;

	(void)state;
	A.qp = qp_to_nobody(A.scq);
	t0 = rte_get_timer_cycles();
	assert_int_equal(post_send(&A, 1, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(post_send(&A, 2, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
	assert_int_equal(poll_until(A.scq, wc, 2, 5), 2);
	expect_wc(&wc[0], 1, DROCE_WC_RETRY_EXC_ERR, DROCE_WC_SEND);
	assert_int_equal(wc[1].status, DROCE_WC_WR_FLUSH_ERR);
	assert_true(rte_get_timer_cycles() - t0 >= rte_get_timer_hz() * 12 / 1000);
	assert_int_equal(droce_qp_state(A.qp), DROCE_QPS_ERR);
	assert_int_equal(droce_destroy_qp(A.qp), 0);
	for (int i = 0; i < 4; i++)
		pump();
}

/* What the notify callback on A's send CQ does to another QP of the same
 * owner: post a SEND to it, or move it to ERR.
 */
static struct droce_qp *notify_other;
static bool notify_moves_to_err;
static unsigned int notify_calls;
static int notify_ret;

static void
act_on_other_qp(void *arg)
{
	struct droce_sge sge = { (uintptr_t)A.buf, 100, A.mr->lkey };
	struct droce_send_wr wr = { .wr_id = 99, .sg_list = &sge, .num_sge = 1,
				    .opcode = DROCE_WR_SEND }, *bad;
	struct droce_qp_attr err = { .qp_state = DROCE_QPS_ERR };

	(void)arg;
	notify_calls++;
	notify_ret = notify_moves_to_err ? droce_modify_qp(notify_other, &err, DROCE_QP_STATE)
					 : droce_post_send(notify_other, &wr, &bad);
}

/* A CQ's notify callback may post to another QP in RTS or move one to
 * ERR (include/droce_rc.h). Both publish the owner's completions again
 * from within the signal: a post from the ACK timer's callback (outside
 * the owner's round) runs that QP's turn at once, a move to ERR flushes
 * it. The completion that signalled comes once.
 */
static void
test_notify_acts_on_other_qp(void **state)
{
	struct droce_cq *other_cq = droce_create_cq(A.dev, 16);
	struct qp_params p = default_params;
	struct droce_sge sge = { (uintptr_t)A.buf, 100, 0 };
	struct droce_wc wc[4];

	(void)state;
	assert_non_null(other_cq);
	p.qp.timeout = 10; /* 4 ms */
	for (int moves = 0; moves < 2; moves++) {
		p.qp.retry_cnt = moves ? 7 : 0;
		qps_up(&p);
		sge.lkey = A.mr->lkey;
		notify_other = qp_to_nobody(other_cq);
		notify_moves_to_err = moves;
		notify_calls = 0;
		notify_ret = -1;
		assert_int_equal(droce_cq_set_notify(A.scq, act_on_other_qp, NULL), 0);
		assert_int_equal(droce_req_notify_cq(A.scq, 0), 0);
		post_recv(&B, 1, 0, 4096);
		/* Posting: the SEND is lost and the ACK timer fails it. */
		wire.drop_all = !moves;
		assert_int_equal(post_send(&A, 1, DROCE_WR_SEND, &sge, 1, 0, 0, 0), 0);
		assert_int_equal(poll_until(A.scq, wc, 1, 5), 1);
		expect_wc(&wc[0], 1, moves ? DROCE_WC_SUCCESS : DROCE_WC_RETRY_EXC_ERR,
			  DROCE_WC_SEND);
		for (int i = 0; i < 20; i++)
			pump();
		assert_int_equal(droce_poll_cq(A.scq, 4, wc), 0);
		assert_int_equal(notify_calls, 1);
		assert_int_equal(notify_ret, 0);
		assert_int_equal(droce_qp_state(notify_other),
				 moves ? DROCE_QPS_ERR : DROCE_QPS_RTS);
		assert_int_equal(droce_cq_set_notify(A.scq, NULL, NULL), 0);
		wire.drop_all = false;
		qps_down();
		assert_int_equal(droce_destroy_qp(notify_other), 0);
		while (droce_poll_cq(other_cq, 4, wc) > 0)
			;
	}
	assert_int_equal(droce_destroy_cq(other_cq), 0);
}

/* Where the two QPs stand, when a run did not finish. */
static void
print_stuck(unsigned int done, const struct droce_rc_stats *st, const struct droce_rc_stats *bst)
{
	struct rc_send_wqe *w = rc_queue_slot(&A.qp->sq, atomic_load(&A.qp->sq.consumer));

	print_message("stuck at %u: A req.psn %x comp.psn %x head %u consumer %u rd_atomic %u | B resp.psn %x answering %p held %u\n",
		      done, A.qp->req.psn, A.qp->comp.psn, A.qp->req.head,
		      atomic_load(&A.qp->sq.consumer), A.qp->req.rd_atomic, B.qp->resp.psn,
		      (void *)B.qp->resp.answering, B.qp->resp.held_count);
	print_message("A: %lu wrong state, %lu answers in | B: %lu wrong state, %lu duplicates, %lu sent\n",
		      (unsigned long)st->wrong_state, (unsigned long)st->acks_received,
		      (unsigned long)bst->wrong_state, (unsigned long)bst->duplicates,
		      (unsigned long)bst->tx_packets);
	print_message("A's oldest WQE: opcode %d, PSNs %x..%x, %u of %u bytes sent, %u received\n",
		      w->wr.opcode, w->first_psn, w->last_psn, w->sent, w->length, w->received);
}

/* RC_TEST_MESSAGES=N makes the long random runs N messages (the CI
 * keeps them short).
 */
static unsigned int
messages(unsigned int usual)
{
	const char *v = getenv("RC_TEST_MESSAGES");

	return v != NULL && atoi(v) > 0 ? (unsigned int)atoi(v) : usual;
}

/* Random SENDs, WRITEs with immediate and READs of random sizes and SGE
 * lists, on a wire that drops, duplicates and reorders 10 % of the RoCE
 * packets: every message arrives once, in order, byte for byte.
 */
static void
run_random(unsigned int count, uint32_t max_len, unsigned int drop, unsigned int dup,
	   unsigned int reorder, unsigned int corrupt)
{
	/* Slots for the messages in flight, inside the read-write region. */
	const uint32_t SLOT = max_len + 4096;
	const unsigned int SLOTS = RTE_MIN(16u, (BUF_SIZE - (2u << 20)) / SLOT);
	static uint8_t expect[(1u << 20) + 4096];
	struct droce_rc_stats st, st0, bst, bst0;
	unsigned int done = 0, posted = 0, recv_seen = 0;
	uint64_t refused;
	uint64_t until = rte_get_timer_cycles() + (60 + count / 100) * rte_get_timer_hz();
	uint32_t lens[MAX_WR];
	int ops[MAX_WR];
	struct qp_params params = default_params;

	/* A READ of 1 MiB is answered in 1024 packets: a local ACK timeout
	 * of 16 ms rather than 1, which a slow round (a sanitizer's build, a
	 * busy machine) would outlast again and again, each time asking
	 * again for what is on its way.
	 */
	if (max_len > 65536)
		params.qp.timeout = 12;
	qps_up(&params);
	droce_rc_query_stats(A.dev, &st0);
	droce_rc_query_stats(B.dev, &bst0);
	wire.drop_pct = drop;
	wire.dup_pct = dup;
	wire.reorder_pct = reorder;
	wire.corrupt_pct = corrupt;
	while (done < count && rte_get_timer_cycles() < until) {
		struct droce_wc wc[16];
		int n;

		/* Keep up to SLOTS messages in flight, each in its own slot. */
		while (posted < count && posted - done < SLOTS) {
			unsigned int slot = posted % SLOTS;
			uint32_t len = rng() % 4 == 0 ? rng() % (max_len + 1) : rng() % 3000;
			int op = (int)(rng() % 3);
			uint8_t *src = A.buf + (size_t)slot * SLOT;
			struct droce_sge sge[4];
			int nsge = 1 + (int)(rng() % 4);
			uint32_t off = 0;

			fill(src, len, posted);
			for (int k = 0; k < nsge; k++) {
				uint32_t piece = k == nsge - 1 ? len - off : rng() % (len - off + 1);

				sge[k] = (struct droce_sge){ (uintptr_t)src + off, piece,
							     A.mr->lkey };
				off += piece;
			}
			lens[posted % MAX_WR] = len;
			ops[posted % MAX_WR] = op;
			if (op == 0) {
				post_recv(&B, posted, (size_t)slot * SLOT, SLOT);
				assert_int_equal(post_send(&A, posted, DROCE_WR_SEND, sge, nsge,
							   0, 0, 0), 0);
			} else if (op == 1) {
				post_recv(&B, posted, 0, 0);
				assert_int_equal(post_send(&A, posted, DROCE_WR_RDMA_WRITE_WITH_IMM,
							   sge, nsge,
							   (uintptr_t)B.buf + (size_t)slot * SLOT,
							   B.mr->rkey, posted), 0);
			} else {
				/* READ B's slot (what was last put there) into A's. */
				fill(B.buf + (size_t)slot * SLOT, len, posted ^ 0x55);
				assert_int_equal(post_send(&A, posted, DROCE_WR_RDMA_READ, sge,
							   nsge,
							   (uintptr_t)B.buf + (size_t)slot * SLOT,
							   B.mr->rkey, 0), 0);
			}
			posted++;
		}
		pump();
		while ((n = droce_poll_cq(B.rcq, 16, wc)) > 0)
			for (int k = 0; k < n; k++) {
				assert_int_equal(wc[k].status, DROCE_WC_SUCCESS);
				/* In order: the receives complete in posting order. */
				assert_true(wc[k].wr_id >= recv_seen);
				recv_seen = (unsigned int)wc[k].wr_id + 1;
				assert_int_equal(wc[k].byte_len, lens[wc[k].wr_id % MAX_WR]);
			}
		n = droce_poll_cq(A.scq, 16, wc);
		for (int k = 0; k < n; k++) {
			unsigned int id = (unsigned int)wc[k].wr_id;
			unsigned int slot = id % SLOTS;
			uint32_t len = lens[id % MAX_WR];

			if (wc[k].status != DROCE_WC_SUCCESS)
				fail_msg("message %u: %s", id, droce_wc_status_str(wc[k].status));
			if (id != done)
				fail_msg("completion of %u came when %u was next", id, done);
			fill(expect, len, ops[id % MAX_WR] == 2 ? id ^ 0x55 : id);
			if (memcmp(ops[id % MAX_WR] == 2 ? A.buf + (size_t)slot * SLOT
						         : B.buf + (size_t)slot * SLOT,
				   expect, len) != 0)
				fail_msg("message %u (op %d, %u bytes): bytes differ", id,
					 ops[id % MAX_WR], len);
			done++;
		}
	}
	for (int i = 0; i < 10; i++)
		pump(); /* what is still on the wire is counted too */
	droce_rc_query_stats(A.dev, &st);
	droce_rc_query_stats(B.dev, &bst);
	st.retransmits -= st0.retransmits;
	st.timeouts -= st0.timeouts;
	st.seq_naks_received -= st0.seq_naks_received;
	st.rx_ring_full = bst.rx_ring_full;
	print_message("%u messages; wire: %lu dropped, %lu duplicated, %lu reordered, %lu corrupted, %lu stale; A: %lu go-back-N, %lu timeouts, %lu seq NAKs in, %lu ring full\n",
		      done, (unsigned long)wire.dropped, (unsigned long)wire.duplicated,
		      (unsigned long)wire.reordered, (unsigned long)wire.corrupted,
		      (unsigned long)wire.stale,
		      (unsigned long)st.retransmits,
		      (unsigned long)st.timeouts, (unsigned long)st.seq_naks_received,
		      (unsigned long)st.rx_ring_full);
	if (done != count)
		print_stuck(done, &st, &bst);
	assert_int_equal(done, count);
	if (drop != 0)
		assert_true(st.retransmits > 0);
	/* Corrupted frames were refused as such. A few never reach lib/rc:
	 * a flipped QPN bit may send one to lib/rx (QPNs below 0x10000) or
	 * to no one.
	 */
	refused = st.bad_icrc - st0.bad_icrc + st.bad_packet - st0.bad_packet +
		  bst.bad_icrc - bst0.bad_icrc + bst.bad_packet - bst0.bad_packet;
	assert_true(refused <= wire.corrupted + wire.stale);
	assert_true(refused >= wire.corrupted * 9 / 10);
	qps_down();
}

static void
test_random_clean(void **state)
{
	(void)state;
	run_random(messages(2000), 65536, 0, 0, 0, 0);
}

static void
test_random_drops(void **state)
{
	(void)state;
	run_random(500, 65536, 10, 0, 0, 0);
}

static void
test_random_duplicates(void **state)
{
	(void)state;
	run_random(500, 65536, 0, 10, 0, 0);
}

static void
test_random_reordered(void **state)
{
	(void)state;
	run_random(500, 65536, 0, 0, 10, 0);
}

/* Frames with a flipped bit: SENDs and WRITEs check their ICRC while
 * copying, where the message's own place is written; what is refused is
 * sent again and every message still arrives byte-exact.
 */
static void
test_random_corrupted(void **state)
{
	(void)state;
	run_random(500, 65536, 0, 0, 0, 10);
}

/* Messages up to 1 MiB (a READ of 1024 answer packets), with faults. */
static void
test_random_large(void **state)
{
	(void)state;
	run_random(100, 1u << 20, 10, 10, 10, 5);
}

static void
test_random_faults(void **state)
{
	(void)state;
	run_random(messages(2000), 65536, 10, 10, 10, 0);
}

static void
claim_handler(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
	      struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	(void)ctx;
	(void)port;
	(void)queue;
	(void)arg;
	rte_pktmbuf_free_bulk(pkts, n);
}

/* The RoCE demux: who has which QPNs, ranges that cross refused, a
 * narrower range inside lib/rc's taking its QPNs (as lib/rx's streams
 * are told when they ask for a QPN lib/rc has).
 */
static void
test_qpn_claims(void **state)
{
	(void)state;
	assert_int_equal(droce_roce_claim_qps(A.stack, 0x10000, DROCE_QPN_MASK, claim_handler,
					      NULL), -EEXIST);
	assert_int_equal(droce_roce_claim_qps(A.stack, 0x8000, 0x20000, claim_handler, NULL),
			 -EEXIST);
	assert_int_equal(droce_roce_claim_qps(A.stack, 5, 4, claim_handler, NULL), -EINVAL);
	assert_false(droce_roce_qp_claimed_by(A.stack, 0x20005, claim_handler, NULL));
	assert_int_equal(droce_roce_claim_qps(A.stack, 0x20000, 0x20010, claim_handler, NULL), 0);
	assert_true(droce_roce_qp_claimed_by(A.stack, 0x20005, claim_handler, NULL));
	assert_false(droce_roce_qp_claimed_by(A.stack, 0x30000, claim_handler, NULL));
	droce_roce_release_qps(A.stack, claim_handler, NULL);
	assert_false(droce_roce_qp_claimed_by(A.stack, 0x20005, claim_handler, NULL));
}

/* QPs on the workers: a QP's slot says which (two workers here). That
 * the second worker's QPs get their packets (the first receives them
 * all: one RX queue) and send on its own TX queue, test_senders shows.
 */
static void
test_qps_spread_over_workers(void **state)
{
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC, .send_cq = A.scq, .recv_cq = A.rcq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct droce_qp *qp[4];
	int seen[2] = { 0, 0 };

	(void)state;
	if (A.owners != DROCE_RC_OWNERS_WORKERS)
		skip();
	for (int i = 0; i < 4; i++) {
		qp[i] = droce_create_qp(A.pd, &ia);
		assert_non_null(qp[i]);
		assert_in_range(droce_qp_owner(qp[i]), 0, 1);
		seen[droce_qp_owner(qp[i])]++;
		/* The owner follows the slot, the QPN's low 16 bits. */
		assert_int_equal(droce_qp_owner(qp[i]), (int)((droce_qp_num(qp[i]) & 0xffff) % 2));
	}
	assert_int_equal(seen[0], 2);
	assert_int_equal(seen[1], 2);
	for (int i = 0; i < 4; i++)
		assert_int_equal(droce_destroy_qp(qp[i]), 0);
	for (int i = 0; i < 4; i++)
		pump();
}

/* What a thread that is no lcore (of the stack or of EAL's) gets for
 * moving a QP to ERR, or for posting a receive or a send to one in ERR.
 */
enum elsewhere_step { TO_ERR, POST_RECV, POST_SEND };

struct elsewhere {
	struct droce_qp *qp;
	enum elsewhere_step step;
	int ret;
};

static void *
flush_elsewhere(void *arg)
{
	struct elsewhere *e = arg;
	struct droce_sge sge = { (uintptr_t)A.buf, 64, A.mr->lkey };
	struct droce_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *rbad = NULL;
	struct droce_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				     .opcode = DROCE_WR_SEND }, *sbad = NULL;

	switch (e->step) {
	case TO_ERR:
		e->ret = droce_modify_qp(e->qp, &(struct droce_qp_attr){ .qp_state = DROCE_QPS_ERR },
					 DROCE_QP_STATE);
		break;
	case POST_RECV:
		e->ret = droce_post_recv(e->qp, &rwr, &rbad);
		break;
	case POST_SEND:
		e->ret = droce_post_send(e->qp, &swr, &sbad);
		break;
	}
	return NULL;
}

static int
run_elsewhere(struct droce_qp *qp, enum elsewhere_step step)
{
	struct elsewhere e = { .qp = qp, .step = step, .ret = 1 };
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, flush_elsewhere, &e), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	return e.ret;
}

static void
count_calls(void *arg)
{
	(*(int *)arg)++;
}

/* A QP with @p ia that a worker other than @p owner runs. The workers
 * take QP numbers by turns, except where the numbers wrap past slot 0,
 * which none takes.
 */
static struct droce_qp *
qp_of_another_owner(struct droce_qp_init_attr *ia, int owner)
{
	for (int tries = 0; tries < 4; tries++) {
		struct droce_qp *qp = droce_create_qp(A.pd, ia);

		assert_non_null(qp);
		if (droce_qp_owner(qp) != owner)
			return qp;
		assert_int_equal(droce_destroy_qp(qp), 0);
	}
	fail_msg("four QPs in a row on worker %d", owner);
	return NULL;
}

/* A CQ that signals by callback (droce_cq_set_notify()) signals on the
 * lcore that adds the completion: its QPs share one owner, and go to ERR
 * there. Both are refused with a reason, never left to race.
 */
static void
test_callback_cq_one_owner(void **state)
{
	struct droce_cq *cq = droce_create_cq(A.dev, 64);
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct droce_qp_init_attr other_ia = ia;
	struct droce_sge sge = { (uintptr_t)A.buf, 64, A.mr->lkey };
	struct droce_recv_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
	struct droce_qp_attr to_err = { .qp_state = DROCE_QPS_ERR };
	struct droce_qp *qp, *other, *same;
	struct droce_cq *other_cq;
	struct droce_wc wc[4];
	int calls = 0;

	(void)state;
	assert_non_null(cq);
	assert_int_equal(droce_cq_set_notify(cq, count_calls, &calls), 0);
	qp = qp_to_nobody(cq);
	pump();         /* its owner ran a round for it: its lcore is known */
	assert_int_not_equal(qp->owner->lcore_id, RC_LCORE_UNKNOWN);
	assert_int_equal(droce_req_notify_cq(cq, 0), 0);
	/* Moved to ERR on a thread that is not the owner's: refused, the
	 * QP left as it was.
	 */
	assert_int_equal(run_elsewhere(qp, TO_ERR), -EINVAL);
	assert_int_equal(droce_qp_state(qp), DROCE_QPS_RTS);
	/* In ERR (moved there without the callback, which then comes back
	 * on the drained CQ), a receive or a send posted elsewhere is refused
	 * too: its flush would call the callback there.
	 */
	assert_int_equal(droce_cq_set_notify(cq, NULL, NULL), 0);
	assert_int_equal(droce_modify_qp(qp, &to_err, DROCE_QP_STATE), 0);
	assert_int_equal(droce_cq_set_notify(cq, count_calls, &calls), 0);
	assert_int_equal(run_elsewhere(qp, POST_RECV), -EINVAL);
	assert_int_equal(run_elsewhere(qp, POST_SEND), -EINVAL);
	assert_int_equal(droce_poll_cq(cq, 4, wc), 0);
	assert_int_equal(calls, 0);
	/* Here, on its owner (this thread runs the rig's rounds), the
	 * receive is flushed and the callback called here.
	 */
	assert_int_equal(droce_post_recv(qp, &wr, &bad), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(droce_poll_cq(cq, 4, wc), 1);
	assert_int_equal(wc[0].wr_id, 9);
	assert_int_equal(wc[0].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(droce_modify_qp(qp, &to_err, DROCE_QP_STATE), 0);
	if (A.owners == DROCE_RC_OWNERS_WORKERS) {
		/* A QP on this CQ gets a number of its owner's, past the other
		 * worker's.
		 */
		same = droce_create_qp(A.pd, &ia);
		assert_non_null(same);
		assert_int_equal(droce_qp_owner(same), droce_qp_owner(qp));
		/* A send CQ and a receive CQ whose callbacks serve two owners
		 * cannot both be one QP's.
		 */
		other_cq = droce_create_cq(A.dev, 64);
		assert_non_null(other_cq);
		other_ia.send_cq = other_cq;
		other_ia.recv_cq = other_cq;
		other = qp_of_another_owner(&other_ia, droce_qp_owner(qp));
		assert_int_equal(droce_cq_set_notify(other_cq, count_calls, &calls), 0);
		other_ia.send_cq = cq;
		assert_null(droce_create_qp(A.pd, &other_ia));
		assert_int_equal(rte_errno, EINVAL);
		assert_int_equal(droce_cq_set_notify(other_cq, NULL, NULL), 0);
		assert_int_equal(droce_destroy_qp(other), 0);
		assert_int_equal(droce_destroy_qp(same), 0);
		assert_int_equal(droce_destroy_cq(other_cq), 0);
		/* Without the callback, QPs of both owners may share the CQ;
		 * with them there, and until the CQ has no QP, the callback is
		 * refused.
		 */
		assert_int_equal(droce_cq_set_notify(cq, NULL, NULL), 0);
		other = qp_of_another_owner(&ia, droce_qp_owner(qp));
		assert_int_equal(droce_cq_set_notify(cq, count_calls, &calls), -EINVAL);
		assert_int_equal(droce_destroy_qp(other), 0);
		assert_int_equal(droce_cq_set_notify(cq, count_calls, &calls), -EINVAL);
		assert_int_equal(droce_destroy_qp(qp), 0);
		assert_int_equal(droce_cq_set_notify(cq, count_calls, &calls), 0);
		qp = qp_to_nobody(cq);
	}
	assert_int_equal(droce_destroy_qp(qp), 0);
	for (int i = 0; i < 4; i++)
		pump();
	assert_int_equal(droce_destroy_cq(cq), 0);
}

/* Who sent the group's RoCE frames: the control lcore (queue 0), or the
 * workers, both of them.
 */
static void
test_senders(void **state)
{
	(void)state;
	print_message("RoCE frames sent by the control lcore %lu, worker 0 %lu, worker 1 %lu\n",
		      (unsigned long)roce_sent_on[0], (unsigned long)roce_sent_on[1],
		      (unsigned long)roce_sent_on[2]);
	if (A.owners == DROCE_RC_OWNERS_WORKERS) {
		assert_int_equal(roce_sent_on[0], 0);
		assert_true(roce_sent_on[1] > 0 && roce_sent_on[2] > 0);
	} else {
		assert_true(roce_sent_on[0] > 0);
		assert_int_equal(roce_sent_on[1] + roce_sent_on[2], 0);
	}
}

/* The control lcore runs every QP: sides A and B. */
static int
setup(void **state)
{
	(void)state;
	memset(roce_sent_on, 0, sizeof(roce_sent_on));
	side_up(&A);
	side_up(&B);
	return 0;
}

/* The workers run the QPs: sides of their own (their ports' names). */
static int
setup_workers(void **state)
{
	(void)state;
	A = (struct side){ .name = "rcAw", .address = "198.18.0.1",
			   .owners = DROCE_RC_OWNERS_WORKERS,
			   .before_start = register_post_from_hook };
	B = (struct side){ .name = "rcBw", .address = "198.18.0.2",
			   .owners = DROCE_RC_OWNERS_WORKERS };
	memset(roce_sent_on, 0, sizeof(roce_sent_on));
	side_up(&A);
	side_up(&B);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	side_down(&A);
	side_down(&B);
	return 0;
}

int
main(int argc, char **argv)
{
	/* Run twice: QPs on the control lcore, then on the two workers. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qpn_claims),
		cmocka_unit_test(test_qps_spread_over_workers),
		cmocka_unit_test(test_callback_cq_one_owner),
		cmocka_unit_test(test_send_sizes),
		cmocka_unit_test(test_zero_copy),
		cmocka_unit_test(test_write_read_atomic),
		cmocka_unit_test(test_other_transport_dropped),
		cmocka_unit_test(test_rnr_then_success),
		cmocka_unit_test(test_rnr_retry_exceeded),
		cmocka_unit_test(test_write_to_read_only),
		cmocka_unit_test(test_read_not_granted),
		cmocka_unit_test(test_nak_after_rewind),
		cmocka_unit_test(test_send_too_long),
		cmocka_unit_test(test_retry_exceeded),
		cmocka_unit_test(test_ack_timeout_moves_with_sends),
		cmocka_unit_test(test_idle_qp_sends_at_once),
		cmocka_unit_test(test_hook_post_leaves_in_round),
		cmocka_unit_test(test_lone_ack_waits_for_answer),
		cmocka_unit_test(test_psn_wrap),
		cmocka_unit_test(test_peer_never_answers_arp),
		cmocka_unit_test(test_notify_acts_on_other_qp),
		cmocka_unit_test(test_random_clean),
		cmocka_unit_test(test_random_drops),
		cmocka_unit_test(test_random_duplicates),
		cmocka_unit_test(test_random_reordered),
		cmocka_unit_test(test_random_corrupted),
		cmocka_unit_test(test_random_faults),
		cmocka_unit_test(test_random_large),
		cmocka_unit_test(test_senders),
	};
	int ret;

	(void)argc;
	/* Two workers per stack: the second receives nothing itself. */
	if (droce_test_eal_init_lcores(argv[0], "rct", "1024", 3) != 0)
		return 1;
	ret = cmocka_run_group_tests_name("QPs on the control lcore", tests, setup, teardown);
	ret |= cmocka_run_group_tests_name("QPs on the workers", tests, setup_workers, teardown);
	droce_test_eal_cleanup();
	return ret;
}
