/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The RC objects of a run, made and connected the way the tools make
 * theirs with ibverbs: a buffer in one MR, one CQ for both sides, an RC
 * QP taken through INIT, RTR and RTS.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_errno.h>
#include <rte_ethdev.h>

#include "droce_net.h"
#include "rc_app.h"

uint64_t
rcapp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t
rcapp_now_ms(void)
{
	return rcapp_now_us() / 1000;
}

unsigned int
rcapp_poll(struct rcapp *app)
{
	unsigned int done = 0;

	if (app->workers_inline)
		for (unsigned int w = 0; w < droce_stack_nb_workers(app->stack); w++)
			done += droce_worker_poll(app->stack, w);
	return done + droce_control_poll(app->stack);
}

bool
rcapp_idle(void *arg)
{
	struct rcapp *app = arg;
	struct droce_rc_stats st;

	rcapp_poll(app);
	droce_rc_query_stats(app->dev, &st);
	if (st.rx_packets == app->rx_seen)
		return false;
	app->rx_seen = st.rx_packets;
	return true;
}

bool
rcapp_link_up(const struct rcapp *app)
{
	struct rte_eth_link link = { 0 };

	return rte_eth_link_get_nowait(droce_port_ethdev(app->stack, 0), &link) == 0 &&
	       link.link_status == RTE_ETH_LINK_UP;
}

bool
rcapp_wait_link(struct rcapp *app, unsigned int timeout_s)
{
	uint64_t until = rcapp_now_ms() + timeout_s * 1000ull;

	while (rcapp_now_ms() < until && !rcapp_interrupted) {
		if (rcapp_link_up(app))
			return true;
		rcapp_poll(app);
	}
	return false;
}

void
rcapp_linger(struct rcapp *app, unsigned int ms)
{
	uint64_t until = rcapp_now_ms() + ms;

	while (rcapp_now_ms() < until && !rcapp_interrupted)
		rcapp_poll(app);
}

/* How long each end waits for the other's half-close, and the server for
 * the client's port to go; a gone peer answers at once, a wedged one costs
 * this much.
 */
#define PART_WAIT_MS 3000
#define LINK_DOWN_WAIT_MS 2000
/* net_memif marks the link down first and frees the connection after. */
#define LINK_DOWN_SETTLE_US 200000

static bool
port_is_memif(const struct rcapp *app)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(droce_port_ethdev(app->stack, 0), &info) == 0 &&
	       info.driver_name != NULL && strcmp(info.driver_name, "net_memif") == 0;
}

/*
 * DPDK 22.11's net_memif unmaps a link's rings from its interrupt thread
 * when the peer goes, whatever a poller is doing in them, and a port
 * stopped while that thread tears the link down is freed twice. So both
 * ends stop polling and say so with a half-close; then the client stops
 * its port (droce_stack_stop() after this), and the server waits to see
 * its link go down before it stops its own.
 */
void
rcapp_part(struct rcapp *app, struct oob *oob, bool server)
{
	uint64_t until;

	droce_stack_stop_polling(app->stack);
	if (!oob_part(oob, PART_WAIT_MS) || !server || !port_is_memif(app))
		return;
	/* From the client's half-close: its port goes after it. */
	until = rcapp_now_ms() + LINK_DOWN_WAIT_MS;
	while (rcapp_link_up(app) && rcapp_now_ms() < until && !rcapp_interrupted)
		rte_delay_us_sleep(1000);
	if (!rcapp_link_up(app))
		rte_delay_us_sleep(LINK_DOWN_SETTLE_US);
}

enum droce_mtu
rcapp_port_mtu(const struct rcapp *app)
{
	uint16_t ip_mtu = droce_port_mtu(app->stack, 0);
	enum droce_mtu m = DROCE_MTU_4096;

	while (m > DROCE_MTU_256 && droce_mtu_to_bytes(m) + RCAPP_ROCE_OVERHEAD > ip_mtu)
		m--;
	return m;
}

int
rcapp_gid_check(const uint8_t gid[16], const char *who, char *err, size_t errlen)
{
	static const uint8_t zero[16];
	char text[INET6_ADDRSTRLEN];
	uint32_t ip;

	if (memcmp(gid, zero, sizeof(zero)) == 0) {
		snprintf(err, errlen, "%s sent no GID (all zero): RoCE needs one; run it with the index of its IPv4 GID (rxe: -g 1 for ibv_rc_pingpong, -x 1 for perftest)",
			 who);
		return -1;
	}
	if (droce_gid_to_ipv4(gid, &ip) != 0) {
		inet_ntop(AF_INET6, gid, text, sizeof(text));
		snprintf(err, errlen, "%s sent GID %s, which is not IPv4-mapped (::ffff:a.b.c.d): droce speaks RoCEv2 over IPv4; give it the index of its IPv4 GID (rxe: 1)",
			 who, text);
		return -1;
	}
	return 0;
}

int
rcapp_qp_create(struct rcapp *app, size_t buf_len, int mr_access, uint32_t max_send_wr,
		uint32_t max_recv_wr, uint32_t max_sge, int qp_access, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t alloc = (buf_len + (size_t)page - 1) / (size_t)page * (size_t)page;
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC,
		.cap = { .max_send_wr = max_send_wr, .max_recv_wr = max_recv_wr,
			 .max_send_sge = max_sge, .max_recv_sge = max_sge },
	};
	struct droce_qp_attr a = {
		.qp_state = DROCE_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = qp_access,
	};
	int ret;

	app->buf = aligned_alloc((size_t)page, alloc);
	if (app->buf == NULL) {
		snprintf(err, errlen, "no memory for a %zu-byte buffer", buf_len);
		return -1;
	}
	app->buf_len = buf_len;
	/* As ibv_rc_pingpong fills its buffer: the bytes on the wire are known. */
	memset(app->buf, 0x7b, alloc);
	if (app->pd == NULL)
		app->pd = droce_alloc_pd(app->dev);
	if (app->pd != NULL)
		app->mr = droce_reg_mr(app->pd, app->buf, buf_len, mr_access);
	if (app->mr != NULL)
		app->cq = droce_create_cq(app->dev, (int)(max_send_wr + max_recv_wr));
	if (app->cq != NULL) {
		ia.send_cq = app->cq;
		ia.recv_cq = app->cq;
		app->qp = droce_create_qp(app->pd, &ia);
		app->qp_init = ia;
		app->qp_access = qp_access;
	}
	if (app->qp == NULL) {
		snprintf(err, errlen, "cannot make the %s: %s (the droce.rc log above says why)",
			 app->pd == NULL ? "PD" : app->mr == NULL ? "MR" : app->cq == NULL ? "CQ" : "QP",
			 rte_strerror(rte_errno));
		return -1;
	}
	ret = droce_modify_qp(app->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX | DROCE_QP_PORT |
			      DROCE_QP_ACCESS_FLAGS);
	if (ret != 0) {
		snprintf(err, errlen, "QP 0x%x to INIT: %s", droce_qp_num(app->qp), strerror(-ret));
		return -1;
	}
	return 0;
}

int
rcapp_qp_connect(struct rcapp *app, const struct rcapp_conn *c, bool rtr_only, char *err,
		 size_t errlen)
{
	struct droce_qp_attr a = {
		.qp_state = DROCE_QPS_RTR, .path_mtu = c->mtu, .dest_qp_num = c->dest_qpn,
		.rq_psn = c->rq_psn, .max_dest_rd_atomic = c->max_dest_rd_atomic,
		.min_rnr_timer = c->min_rnr_timer, .ah_attr = { .hop_limit = c->hop_limit },
	};
	int ret;

	memcpy(a.ah_attr.dgid, c->dgid, sizeof(a.ah_attr.dgid));
	ret = droce_modify_qp(app->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
			      DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
			      DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER);
	if (ret != 0) {
		snprintf(err, errlen, "Failed to modify QP to RTR: %s (the droce.rc log above says why)",
			 strerror(-ret));
		return -1;
	}
	if (rtr_only)
		return 0;
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTS, .timeout = c->timeout, .retry_cnt = c->retry_cnt,
		.rnr_retry = c->rnr_retry, .sq_psn = c->sq_psn, .max_rd_atomic = c->max_rd_atomic,
	};
	ret = droce_modify_qp(app->qp, &a, DROCE_QP_STATE | DROCE_QP_TIMEOUT |
			      DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY | DROCE_QP_SQ_PSN |
			      DROCE_QP_MAX_QP_RD_ATOMIC);
	if (ret != 0) {
		snprintf(err, errlen, "Failed to modify QP to RTS: %s (the droce.rc log above says why)",
			 strerror(-ret));
		return -1;
	}
	return 0;
}

uint32_t
rcapp_post_recvs(struct rcapp *app, uint64_t wr_id, uint32_t len, uint32_t n)
{
	struct droce_sge sge = { .addr = (uintptr_t)app->buf, .length = len,
				 .lkey = app->mr->lkey };
	struct droce_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	uint32_t i;

	for (i = 0; i < n; i++)
		if (droce_post_recv(app->qp, &wr, &bad) != 0)
			break;
	return i;
}

int
rcapp_post_send(struct rcapp *app, uint64_t wr_id, uint32_t len)
{
	struct droce_sge sge = { .addr = (uintptr_t)app->buf, .length = len,
				 .lkey = app->mr->lkey };
	struct droce_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = DROCE_WR_SEND,
		.send_flags = DROCE_SEND_SIGNALED,
	}, *bad;

	return droce_post_send(app->qp, &wr, &bad);
}

int
rcapp_qp_renew(struct rcapp *app, char *err, size_t errlen)
{
	struct droce_qp_attr a = {
		.qp_state = DROCE_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = app->qp_access,
	};
	struct droce_wc wc[16];
	int ret;

	droce_destroy_qp(app->qp);
	rcapp_linger(app, 1);
	while (droce_poll_cq(app->cq, RTE_DIM(wc), wc) > 0)
		; /* the old QP's flushed work */
	app->qp = droce_create_qp(app->pd, &app->qp_init);
	if (app->qp == NULL) {
		snprintf(err, errlen, "cannot make a new QP: %s (the droce.rc log above says why)",
			 rte_strerror(rte_errno));
		return -1;
	}
	ret = droce_modify_qp(app->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX | DROCE_QP_PORT |
			      DROCE_QP_ACCESS_FLAGS);
	if (ret != 0)
		snprintf(err, errlen, "QP 0x%x to INIT: %s", droce_qp_num(app->qp), strerror(-ret));
	return ret != 0 ? -1 : 0;
}

void
rcapp_qp_destroy(struct rcapp *app)
{
	struct droce_wc wc[16];

	if (app->qp != NULL) {
		droce_destroy_qp(app->qp);
		app->qp = NULL;
		/* The owner frees the QP in its round. */
		rcapp_linger(app, 10);
	}
	if (app->cq != NULL) {
		while (droce_poll_cq(app->cq, RTE_DIM(wc), wc) > 0)
			;
		droce_destroy_cq(app->cq);
	}
	/* Memory a port still sends from (zero copy) stays allocated. */
	if (app->mr != NULL && droce_dereg_mr(app->mr) != 0)
		app->buf = NULL;
	if (app->pd != NULL)
		droce_dealloc_pd(app->pd);
	free(app->buf);
	app->cq = NULL;
	app->mr = NULL;
	app->pd = NULL;
	app->buf = NULL;
}

/* The port's counters, with what it dropped and why: a frame to the peer
 * dropped here (waiting for ARP, say) is a loss the transport repairs.
 */
static void
print_port_stats(const struct rcapp *app)
{
	struct droce_counters c;

	droce_port_counters(app->stack, 0, &c);
	printf("droce-rc: port 0: rx %" PRIu64 " tx %" PRIu64 " packets, %" PRIu64 " dropped",
	       c.rx_packets, c.tx_packets, droce_counters_drops(&c));
	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++)
		if (c.drop[r] != 0)
			printf(", %s %" PRIu64, droce_drop_reason_name(r), c.drop[r]);
	putchar('\n');
}

void
rcapp_print_stats(const struct rcapp *app)
{
	struct droce_rc_stats st;

	droce_rc_query_stats(app->dev, &st);
	printf("droce-rc: RC transport: rx %" PRIu64 " tx %" PRIu64 " packets (%" PRIu64
	       " sent from their MR); retransmits %" PRIu64
	       ", timeouts %" PRIu64 ", seq NAKs sent %" PRIu64 " received %" PRIu64
	       ", RNR NAKs sent %" PRIu64 " received %" PRIu64 ", duplicates %" PRIu64
	       "; dropped: bad ICRC %" PRIu64 ", bad packet %" PRIu64 ", unknown QP %" PRIu64
	       ", wrong peer %" PRIu64 ", wrong state %" PRIu64 ", ring full %" PRIu64 "\n",
	       st.rx_packets, st.tx_packets, st.tx_zero_copy, st.retransmits, st.timeouts, st.seq_naks_sent,
	       st.seq_naks_received, st.rnr_naks_sent, st.rnr_naks_received, st.duplicates,
	       st.bad_icrc, st.bad_packet, st.unknown_qp, st.wrong_peer, st.wrong_state,
	       st.rx_ring_full);
	print_port_stats(app);
}
