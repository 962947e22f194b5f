/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * QP1 on RoCEv2: CM MADs in UD SEND ONLY packets (see cm_gsi.h).
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_udp.h>

#include "cm_gsi.h"
#include "droce_roce.h"

RTE_LOG_REGISTER(droce_cm_logtype, droce.cm, INFO);
#define CM_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_cm_logtype, "droce.cm: " fmt "\n", ## __VA_ARGS__)

/* Packets waiting for the control lcore, and MADs being sent. CM traffic
 * is a few packets a connection: small is enough.
 */
#define GSI_RING_SIZE 1024
#define GSI_POOL_SIZE 1023
#define GSI_BURST 32

struct cm_gsi {
	struct droce_stack *stack;
	uint16_t port;
	uint32_t ip;                    /* the port's, network order */
	struct rte_ring *rx_ring;       /* from the workers, MP/SC */
	struct rte_mempool *pool;
	uint32_t psn;                   /* of the next MAD sent */
	cm_gsi_rx_t fn;
	void *arg;
	uint64_t ring_full;             /* the workers' count (locked adds) */
	struct cm_gsi_stats stats;      /* the control lcore's */
};

static unsigned int pools_made;

const char *
cm_gsi_drop_name(enum cm_gsi_drop why)
{
	static const char *const names[CM_GSI_DROP_MAX] = {
		[CM_GSI_BAD_HEADERS] = "bad_headers",
		[CM_GSI_NOT_UD_SEND] = "not_ud_send",
		[CM_GSI_BAD_PKEY] = "bad_pkey",
		[CM_GSI_BAD_QKEY] = "bad_qkey",
		[CM_GSI_BAD_ICRC] = "bad_icrc",
		[CM_GSI_BAD_LENGTH] = "bad_length",
		[CM_GSI_WRONG_PORT] = "wrong_port",
		[CM_GSI_RING_FULL] = "ring_full",
	};

	return (unsigned int)why < CM_GSI_DROP_MAX ? names[why] : "?";
}

/* ---- worker side ------------------------------------------------------------ */

static void
gsi_worker_input(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
		 struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct cm_gsi *g = arg;
	unsigned int sent;

	(void)ctx;
	(void)port;     /* in each mbuf: judged on the control lcore */
	(void)queue;
	sent = rte_ring_mp_enqueue_burst(g->rx_ring, (void **)pkts, n, NULL);
	if (sent < n) {
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
		__atomic_fetch_add(&g->ring_full, n - sent, __ATOMIC_RELAXED);
	}
	if (sent != 0)
		droce_control_wake(g->stack);
}

/* ---- control lcore -------------------------------------------------------------- */

/* The steps a packet to QP1 takes before its MAD is read, each a reason
 * to drop it.
 */
static enum cm_gsi_drop
gsi_check(const struct cm_gsi *g, struct rte_mbuf *m, struct droce_pkt *pkt,
	  struct cm_gsi_from *from)
{
	const struct rte_ipv4_hdr *ip;
	const struct rte_udp_hdr *udp;
	const struct droce_deth *deth;
	uint32_t l3_len, l4_off, l4_len;

	if (m->port != g->port)
		return CM_GSI_WRONG_PORT;
	l3_len = droce_udp_pkt_l3_len(m);
	l4_off = DROCE_UDP_PKT_L3_OFFSET + l3_len;
	if (!rte_pktmbuf_is_contiguous(m) ||
	    rte_pktmbuf_data_len(m) < l4_off + sizeof(*udp))
		return CM_GSI_BAD_HEADERS;
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, DROCE_UDP_PKT_L3_OFFSET);
	udp = rte_pktmbuf_mtod_offset(m, const struct rte_udp_hdr *, l4_off);
	l4_len = rte_be_to_cpu_16(udp->dgram_len);
	if (l4_len < sizeof(*udp) || l4_off + l4_len > rte_pktmbuf_data_len(m) ||
	    droce_roce_parse(udp + 1, l4_len - (uint32_t)sizeof(*udp), pkt) != DROCE_PARSE_OK)
		return CM_GSI_BAD_HEADERS;
	if (pkt->opcode != (DROCE_OP_UD | DROCE_OP_SEND_ONLY))
		return CM_GSI_NOT_UD_SEND;
	/* The default partition, full or limited member. */
	if ((droce_bth_pkey(pkt->bth) & 0x7fff) != 0x7fff)
		return CM_GSI_BAD_PKEY;
	deth = (const struct droce_deth *)droce_pkt_ext(pkt, DROCE_EXT_DETH);
	if (droce_deth_qkey(deth) != CM_GSI_QKEY)
		return CM_GSI_BAD_QKEY;
	if (!droce_icrc_ok(ip, l3_len + l4_len))
		return CM_GSI_BAD_ICRC;
	if (pkt->payload_len != CM_MAD_SIZE)
		return CM_GSI_BAD_LENGTH;
	*from = (struct cm_gsi_from){ .ip = ip->src_addr, .src_qp = droce_deth_sqpn(deth),
				      .pkey = droce_bth_pkey(pkt->bth) };
	return CM_GSI_DROP_MAX;
}

static void
gsi_packet(struct cm_gsi *g, struct rte_mbuf *m)
{
	enum cm_decode_error err;
	enum cm_gsi_drop why;
	struct cm_gsi_from from;
	struct droce_pkt pkt;
	struct cm_msg msg;

	why = gsi_check(g, m, &pkt, &from);
	if (why != CM_GSI_DROP_MAX) {
		g->stats.dropped[why]++;
		rte_pktmbuf_free(m);
		return;
	}
	err = cm_mad_decode(pkt.payload, pkt.payload_len, &msg);
	rte_pktmbuf_free(m);
	if (err != CM_DECODE_OK) {
		g->stats.not_cm[err]++;
		return;
	}
	g->stats.rx_mads++;
	g->fn(g->arg, &msg, &from);
}

static unsigned int
gsi_round(struct droce_lcore_ctx *ctx, void *arg)
{
	struct cm_gsi *g = arg;
	struct rte_mbuf *pkts[GSI_BURST];
	unsigned int n, done = 0;

	(void)ctx;
	while ((n = rte_ring_sc_dequeue_burst(g->rx_ring, (void **)pkts, GSI_BURST, NULL)) != 0) {
		for (unsigned int i = 0; i < n; i++)
			gsi_packet(g, pkts[i]);
		done += n;
	}
	return done;
}

int
cm_gsi_send(struct cm_gsi *g, uint32_t dst_ip, const struct cm_msg *msg)
{
	uint8_t mad[CM_MAD_SIZE];
	struct droce_frame_spec spec = {
		.src_ip4 = g->ip, .dst_ip4 = dst_ip,
		.opcode = DROCE_OP_UD | DROCE_OP_SEND_ONLY,
		.pkey = 0xffff, .dest_qp = CM_GSI_QPN, .src_qp = CM_GSI_QPN,
		.qkey = CM_GSI_QKEY, .payload = mad, .payload_len = CM_MAD_SIZE,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(g->pool);
	int ret;

	if (m == NULL) {
		g->stats.tx_failed++;
		return -ENOBUFS;
	}
	cm_mad_encode(msg, mad);
	spec.psn = g->psn;
	g->psn = (g->psn + 1) & DROCE_PSN_MASK;
	if (droce_frame_build(m, &spec) != 0) {
		rte_pktmbuf_free(m);
		g->stats.tx_failed++;
		return -EINVAL;
	}
	ret = droce_eth_send(droce_control_ctx(g->stack), g->port, m, dst_ip);
	if (ret != 0)
		g->stats.tx_failed++;
	else
		g->stats.tx_mads++;
	return ret;
}

void
cm_gsi_stats(const struct cm_gsi *g, struct cm_gsi_stats *stats)
{
	*stats = g->stats;
	stats->dropped[CM_GSI_RING_FULL] = __atomic_load_n(&g->ring_full, __ATOMIC_RELAXED);
}

/* ---- setup ---------------------------------------------------------------------- */

struct cm_gsi *
cm_gsi_open(struct droce_stack *stack, uint16_t port, cm_gsi_rx_t fn, void *arg, char *err,
	    size_t errlen)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	struct cm_gsi *g;
	int ret;

	if (stack == NULL || port >= droce_stack_nb_ports(stack) || fn == NULL) {
		snprintf(err, errlen, "QP1: %s", fn == NULL ? "no callback for the MADs"
			 : "no such port");
		return NULL;
	}
	g = rte_zmalloc("droce_cm_gsi", sizeof(*g), 0);
	if (g == NULL) {
		snprintf(err, errlen, "QP1: out of memory (give the EAL more with -m)");
		return NULL;
	}
	*g = (struct cm_gsi){ .stack = stack, .port = port, .fn = fn, .arg = arg,
			      .ip = droce_port_addr(stack, port) };
	snprintf(name, sizeof(name), "cm_gsi_%u",
		 __atomic_fetch_add(&pools_made, 1, __ATOMIC_RELAXED));
	g->pool = rte_pktmbuf_pool_create(name, GSI_POOL_SIZE, 32, 0,
					  RTE_PKTMBUF_HEADROOM + 512, SOCKET_ID_ANY);
	snprintf(name, sizeof(name), "cm_gsi_rx_%p", (void *)g);
	g->rx_ring = rte_ring_create(name, GSI_RING_SIZE, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (g->pool == NULL || g->rx_ring == NULL) {
		snprintf(err, errlen, "QP1: no %s: %s", g->pool == NULL ? "mbuf pool" : "ring",
			 rte_strerror(rte_errno));
		cm_gsi_close(g);
		return NULL;
	}
	ret = droce_roce_claim_qps(stack, CM_GSI_QPN, CM_GSI_QPN, gsi_worker_input, g);
	if (ret != 0) {
		snprintf(err, errlen, "QP1: cannot take QPN 1 on the workers: %s%s", strerror(-ret),
			 ret == -EEXIST ? " (one QP1 per stack)" : "");
		cm_gsi_close(g);
		return NULL;
	}
	ret = droce_control_hook_register(stack, gsi_round, g);
	if (ret != 0) {
		snprintf(err, errlen, "QP1: cannot run on the control lcore: %s%s", strerror(-ret),
			 ret == -EBUSY ? " (open it before the stack starts)" : "");
		cm_gsi_close(g);
		return NULL;
	}
	return g;
}

void
cm_gsi_close(struct cm_gsi *g)
{
	struct rte_mbuf *m;

	if (g == NULL)
		return;
	droce_roce_release_qps(g->stack, gsi_worker_input, g);
	droce_control_hook_unregister(g->stack, gsi_round, g);
	while (g->rx_ring != NULL && rte_ring_sc_dequeue(g->rx_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(g->rx_ring);
	/* A MAD may still wait for ARP or sit at a ring port's peer. */
	if (g->pool != NULL && rte_mempool_full(g->pool))
		rte_mempool_free(g->pool);
	else if (g->pool != NULL)
		CM_LOG(DEBUG, "close: %u MADs are still out; their pool stays",
		       GSI_POOL_SIZE - rte_mempool_avail_count(g->pool));
	rte_free(g);
}
