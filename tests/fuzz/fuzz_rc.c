/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * libFuzzer target: lib/rc's responder (and completer), reached the way a
 * NIC reaches them: the input is a packet from its IP header on; it gets
 * an Ethernet header and goes through a ring-backed port, the worker poll,
 * the RoCE demux and the owner's round to an RC QP in RTS. The QP's
 * region has guard bytes around it that must stay intact; a QP the input
 * moved to ERR is taken back to RTS for the next input, and the QP's
 * state survives between inputs, so sequences of packets are fuzzed too.
 *
 * As in fuzz_rx, the low byte of the IPv4 identification field picks
 * which parts are fixed up to pass the checks (a bit set keeps the part
 * as the input has it):
 *   bit 0  the IP addresses (else peer -> droce)
 *   bit 1  the dest QP (else the QP's)
 *   bit 2  the PSN (else the one the responder expects)
 *   bit 3  the RETH/AtomicETH rkey and VA (else folded into the region)
 *   bit 4  the ICRC (else recomputed)
 *   bit 5  the lengths and the IP checksum
 *   bits 6-7  copies after the first (PSN one further each)
 */

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_eal.h>
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

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUR_IP "198.18.0.1"
#define PEER_IP "198.18.0.2"
#define REGION (64u * 1024)
#define GUARD 4096
#define GUARD_FILL 0x5a
#define PEER_QPN 0x11

static struct droce_stack *stack;
static struct droce_rc_device *dev;
static struct droce_pd *pd;
static struct droce_cq *cq;
static struct droce_qp *qp;
static struct droce_mr *mr;
static uint8_t *memory;            /* guard | region | guard */
static struct rte_mempool *pool;
static struct rte_ring *rx_ring, *tx_ring[2];
static struct rte_ether_addr our_mac;

static void
die(const char *what)
{
	fprintf(stderr, "fuzz_rc: %s\n", what);
	exit(1);
}

static void
post_receives(void)
{
	struct droce_sge sge = { (uintptr_t)memory + GUARD, REGION / 2, mr->lkey };
	struct droce_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	while (atomic_load(&qp->rq.producer) - atomic_load(&qp->rq.consumer) < 8 &&
	       droce_post_recv(qp, &wr, &bad) == 0)
		;
}

/* RESET -> INIT -> RTR -> RTS, as a peer's connection would. */
static void
qp_to_rts(void)
{
	struct droce_qp_attr a = { .qp_state = DROCE_QPS_RESET };

	if (droce_modify_qp(qp, &a, DROCE_QP_STATE) != 0)
		die("modify_qp RESET");
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_INIT, .port_num = 1,
		.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |
				   DROCE_ACCESS_REMOTE_ATOMIC,
	};
	if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY_INDEX | DROCE_QP_PORT |
			    DROCE_QP_ACCESS_FLAGS) != 0)
		die("modify_qp INIT");
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTR, .path_mtu = DROCE_MTU_1024, .dest_qp_num = PEER_QPN,
		.rq_psn = 0x100, .max_dest_rd_atomic = 4, .min_rnr_timer = 1,
		.ah_attr = { .hop_limit = 64 },
	};
	droce_gid_from_ipv4(inet_addr(PEER_IP), a.ah_attr.dgid);
	if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
			    DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC |
			    DROCE_QP_MIN_RNR_TIMER) != 0)
		die("modify_qp RTR");
	a = (struct droce_qp_attr){
		.qp_state = DROCE_QPS_RTS, .sq_psn = 0x500, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 4,
	};
	if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
			    DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
			    DROCE_QP_MAX_QP_RD_ATOMIC) != 0)
		die("modify_qp RTS");
	post_receives();
}

static void
teardown(void)
{
	droce_stack_stop(stack);
	droce_destroy_qp(qp);
	droce_dereg_mr(mr);
	droce_destroy_cq(cq);
	droce_dealloc_pd(pd);
	droce_rc_close(dev);
	droce_stack_destroy(stack);
	free(memory);
	droce_test_eal_cleanup();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char prefix[64], lcores[32];
	char *eal[] = { (*argv)[0], "--no-pci", "--no-huge", "-m", "256",
			"--file-prefix", prefix, DROCE_TEST_EAL_QUIET, "--lcores", lcores,
			"--log-level", "*:error", NULL };
	char *const overrides[] = {
		"port.0.device=net_ring_fuzzrc", "port.0.address=" OUR_IP "/24",
		"stats.period=0",
	};
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	struct droce_qp_init_attr ia = {
		.qp_type = DROCE_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	char err[DROCE_ERR_LEN];
	cpu_set_t set;
	int cpu = 0;

	(void)argc;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	snprintf(lcores, sizeof(lcores), "0@%d,1@%d", cpu, cpu);
	snprintf(prefix, sizeof(prefix), "droce-fuzz-rc-%d", getpid());
	if (droce_test_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		die("rte_eal_init");
	rx_ring = rte_ring_create("fuzzrc_rx", 256, SOCKET_ID_ANY, 0);
	tx_ring[0] = rte_ring_create("fuzzrc_tx0", 1024, SOCKET_ID_ANY, 0);
	tx_ring[1] = rte_ring_create("fuzzrc_tx1", 1024, SOCKET_ID_ANY, 0);
	if (rx_ring == NULL || tx_ring[0] == NULL || tx_ring[1] == NULL ||
	    rte_eth_from_rings("fuzzrc", &rx_ring, 1, tx_ring, 2, SOCKET_ID_ANY) < 0)
		die("ring port");
	if (droce_conf_load(&conf, NULL, overrides, RTE_DIM(overrides), err, sizeof(err)) != 0 ||
	    droce_lcores_layout(&conf, "--lcores", &layout, err, sizeof(err)) != 0 ||
	    (stack = droce_stack_create(&conf, &layout, err, sizeof(err))) == NULL ||
	    (dev = droce_rc_open(stack, 0, err, sizeof(err))) == NULL)
		die(err);
	if (droce_stack_start(stack, false) != 0)
		die("stack start");
	droce_port_mac(stack, 0, &our_mac);
	/* Room for what the QP may hold (RC_HELD_PKTS requests while it
	 * answers a READ) besides the inputs in flight.
	 */
	pool = rte_pktmbuf_pool_create("fuzzrc_pool", 4096, 0, 0, 10240, SOCKET_ID_ANY);
	memory = malloc(REGION + 2 * GUARD);
	if (pool == NULL || memory == NULL)
		die("memory");
	memset(memory, GUARD_FILL, REGION + 2 * GUARD);
	pd = droce_alloc_pd(dev);
	cq = droce_create_cq(dev, 1024);
	mr = droce_reg_mr(pd, memory + GUARD, REGION,
			  DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
			  DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qp = droce_create_qp(pd, &ia);
	if (pd == NULL || cq == NULL || mr == NULL || qp == NULL)
		die("verbs objects");
	qp_to_rts();
	atexit(teardown);
	return 0;
}

static void
fix_up(uint8_t *l3, uint32_t len, unsigned int copy)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;
	uint32_t ihl = (uint32_t)(ip->version_ihl & 0x0f) * 4;
	uint8_t ctl = (uint8_t)rte_be_to_cpu_16(ip->packet_id);
	struct droce_bth *bth;
	struct droce_pkt pkt;

	if (len < ihl + sizeof(struct rte_udp_hdr) + sizeof(*bth) + DROCE_ICRC_LEN || ihl < 20)
		return;
	bth = (struct droce_bth *)(l3 + ihl + sizeof(struct rte_udp_hdr));
	if (!(ctl & 0x01)) {
		ip->src_addr = inet_addr(PEER_IP);
		ip->dst_addr = inet_addr(OUR_IP);
	}
	if (!(ctl & 0x02))
		bth->qpn = (bth->qpn & rte_cpu_to_be_32(0xff000000u)) |
			   rte_cpu_to_be_32(droce_qp_num(qp));
	if (!(ctl & 0x04))
		bth->apsn = (bth->apsn & rte_cpu_to_be_32(~DROCE_PSN_MASK)) |
			    rte_cpu_to_be_32(droce_psn_add(qp->resp.psn, copy));
	if (!(ctl & 0x08) &&
	    droce_roce_parse(bth, len - ihl - (uint32_t)sizeof(struct rte_udp_hdr), &pkt) ==
	    DROCE_PARSE_OK) {
		struct droce_reth *reth = (struct droce_reth *)(uintptr_t)droce_pkt_ext(&pkt,
										      DROCE_EXT_RETH);
		struct droce_atmeth *atm =
			(struct droce_atmeth *)(uintptr_t)droce_pkt_ext(&pkt, DROCE_EXT_ATMETH);

		if (reth != NULL) {
			reth->rkey = rte_cpu_to_be_32(mr->rkey);
			reth->va = rte_cpu_to_be_64(mr->iova +
						    rte_be_to_cpu_64(reth->va) % (REGION + 2048));
		}
		if (atm != NULL) {
			atm->rkey = rte_cpu_to_be_32(mr->rkey);
			atm->va = rte_cpu_to_be_64(mr->iova + rte_be_to_cpu_64(atm->va) % REGION);
		}
	}
	if (!(ctl & 0x20)) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(l3 + ihl);

		ip->version_ihl = (uint8_t)(0x40 | (ihl / 4));
		ip->fragment_offset = 0;
		ip->next_proto_id = IPPROTO_UDP;
		ip->total_length = rte_cpu_to_be_16((uint16_t)len);
		udp->dst_port = rte_cpu_to_be_16(DROCE_ROCE_UDP_PORT);
		udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - ihl));
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	if (!(ctl & 0x10)) {
		uint32_t icrc = droce_icrc(l3, len - DROCE_ICRC_LEN);

		for (int i = 0; i < 4; i++)
			l3[len - DROCE_ICRC_LEN + i] = (uint8_t)(icrc >> (8 * i));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct droce_wc wc[64];
	unsigned int copies;
	struct rte_mbuf *m;

	if (size < 20 || size > 9000)
		return -1;
	copies = 1 + (data[5] >> 6); /* the identification's low byte, bits 6-7 */
	for (unsigned int c = 0; c < copies; c++) {
		struct rte_ether_hdr *eth;

		m = rte_pktmbuf_alloc(pool);
		if (m == NULL)
			break; /* the QP holds them all: let it answer first */
		if (rte_pktmbuf_tailroom(m) < sizeof(*eth) + size)
			die("mbuf too small");
		eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)(sizeof(*eth) + size));
		eth->dst_addr = our_mac;
		eth->src_addr = (struct rte_ether_addr){ .addr_bytes = { 2, 0, 0, 0, 0, 2 } };
		eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
		memcpy(eth + 1, data, size);
		/* Copies after the first are fixed up after the first has been
		 * taken, so that their PSNs follow the responder.
		 */
		fix_up((uint8_t *)(eth + 1), (uint32_t)size, c);
		if (rte_ring_enqueue(rx_ring, m) != 0)
			die("rx ring full");
	}
	for (int i = 0; i < 4; i++) {
		droce_worker_poll(stack, 0);
		droce_control_poll(stack);
	}
	/* What droce sent (ACKs, READ answers, ARP) goes nowhere. */
	for (int q = 0; q < 2; q++)
		while (rte_ring_dequeue(tx_ring[q], (void **)&m) == 0)
			rte_pktmbuf_free(m);
	while (droce_poll_cq(cq, 64, wc) > 0)
		;
	for (uint32_t i = 0; i < GUARD; i++)
		if (memory[i] != GUARD_FILL || memory[GUARD + REGION + i] != GUARD_FILL)
			die("a guard byte changed: a write outside the region");
	if (droce_qp_state(qp) != DROCE_QPS_RTS)
		qp_to_rts();
	else
		post_receives();
	return 0;
}
