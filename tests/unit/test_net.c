/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/net on crafted frames. Two ring-backed ethdevs stand in for NICs:
 * the test enqueues frames on their RX rings, runs one worker poll and one
 * control poll, and reads what droce sent from their TX rings (ring 0 is
 * the control lcore's TX queue, ring 1 the worker's). Every malformed
 * frame must be dropped under the right reason and send nothing.
 */

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <setjmp.h>
#include <limits.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_timer.h>
#include <rte_udp.h>

#include "droce_core.h"
#include "droce_net.h"
#include "net_private.h"
#include "test_eal.h"

#define NB_PORTS 2
#define NB_RING_PORTS 3   /* the third for a second stack */
#define TX_RINGS 2

static struct droce_stack *stack;
static struct rte_mempool *test_pool;
static struct rte_ring *rx_ring[NB_RING_PORTS];
static struct rte_ring *tx_ring[NB_RING_PORTS][TX_RINGS];
static struct rte_ether_addr our_mac[NB_PORTS];
static struct droce_counters before;

static const struct rte_ether_addr peer_mac = {
	.addr_bytes = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } };
static const struct rte_ether_addr peer3_mac = {
	.addr_bytes = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x03 } };

/* What the worker-side UDP handler saw. */
static unsigned int worker_handler_calls;
static unsigned int worker_handler_pkts;
static uint32_t worker_handler_len;     /* the last packet's UDP payload */
static char worker_handler_payload[64];
static unsigned int second_handler_pkts;

static rte_be32_t
ip(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		abort();
	return a.s_addr;
}

/* ---- frame building ---------------------------------------------------- */

static struct rte_mbuf *
frame_alloc(void)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(test_pool);

	assert_non_null(m);
	return m;
}

/* Not inlined: gcc 12 misreads rte_pktmbuf_append's bounds (-Warray-bounds). */
static __attribute__((noinline)) void *
frame_put(struct rte_mbuf *m, size_t len)
{
	void *p = rte_pktmbuf_append(m, (uint16_t)len);

	assert_non_null(p);
	memset(p, 0, len);
	return p;
}

static struct rte_ether_hdr *
put_eth(struct rte_mbuf *m, const struct rte_ether_addr *dst,
	const struct rte_ether_addr *src, uint16_t type)
{
	struct rte_ether_hdr *eth = frame_put(m, sizeof(*eth));

	eth->dst_addr = *dst;
	eth->src_addr = *src;
	eth->ether_type = rte_cpu_to_be_16(type);
	return eth;
}

static struct rte_mbuf *
arp_frame(uint16_t op, const struct rte_ether_addr *sha, rte_be32_t spa,
	  rte_be32_t tpa, const struct rte_ether_addr *eth_dst)
{
	struct rte_mbuf *m = frame_alloc();
	struct rte_arp_hdr *arp;

	put_eth(m, eth_dst, sha, RTE_ETHER_TYPE_ARP);
	arp = frame_put(m, sizeof(*arp));
	arp->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = *sha;
	arp->arp_data.arp_sip = spa;
	arp->arp_data.arp_tip = tpa;
	return m;
}

struct ip_spec {
	rte_be32_t src, dst;
	uint8_t proto;
	uint8_t options;    /* 4-byte option words */
	uint16_t frag;      /* fragment_offset field, host order */
	int total_adjust;   /* added to the correct total length */
	bool bad_cksum;
	uint8_t version;    /* 0: 4 */
	uint8_t ihl_words;  /* 0: 5 + options */
};

/* Ethernet + IPv4 + @l4 bytes of L4 data; returns the IPv4 header. */
static struct rte_ipv4_hdr *
put_ipv4(struct rte_mbuf *m, const struct ip_spec *spec, const void *l4,
	 size_t l4_len, uint16_t port)
{
	size_t hlen = sizeof(struct rte_ipv4_hdr) + spec->options * 4u;
	struct rte_ipv4_hdr *iph;
	uint8_t *opt;

	put_eth(m, &our_mac[port], &peer_mac, RTE_ETHER_TYPE_IPV4);
	iph = frame_put(m, hlen);
	opt = (uint8_t *)(iph + 1);
	for (unsigned int i = 0; i < spec->options * 4u; i++)
		opt[i] = 1; /* NOP options */
	iph->version_ihl = (uint8_t)(((spec->version ? spec->version : 4) << 4) |
		(spec->ihl_words ? spec->ihl_words : 5 + spec->options));
	iph->total_length = rte_cpu_to_be_16((uint16_t)((int)(hlen + l4_len) +
							spec->total_adjust));
	iph->fragment_offset = rte_cpu_to_be_16(spec->frag);
	iph->time_to_live = 64;
	iph->next_proto_id = spec->proto;
	iph->src_addr = spec->src;
	iph->dst_addr = spec->dst;
	if (spec->ihl_words == 0 || spec->ihl_words * 4u <= hlen)
		iph->hdr_checksum = rte_ipv4_cksum(iph);
	if (spec->bad_cksum)
		iph->hdr_checksum ^= 0x1234;
	memcpy(frame_put(m, l4_len), l4, l4_len);
	return iph;
}

static struct rte_mbuf *
udp_frame(const struct ip_spec *spec, uint16_t sport, uint16_t dport,
	  const char *payload, int len_adjust, bool bad_cksum, bool no_cksum)
{
	uint8_t l4[256];
	size_t plen = strlen(payload);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)l4;
	struct rte_mbuf *m = frame_alloc();
	struct rte_ipv4_hdr *iph;

	memset(l4, 0, sizeof(l4));
	udp->src_port = rte_cpu_to_be_16(sport);
	udp->dst_port = rte_cpu_to_be_16(dport);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)((int)(sizeof(*udp) + plen) +
						     len_adjust));
	memcpy(udp + 1, payload, plen);
	iph = put_ipv4(m, spec, l4, sizeof(*udp) + plen, 0);
	udp = (struct rte_udp_hdr *)((uint8_t *)iph + (iph->version_ihl & 0xf) * 4);
	if (!no_cksum && len_adjust == 0 && spec->total_adjust == 0) {
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(iph, udp);
		if (bad_cksum)
			udp->dgram_cksum ^= 0x0101;
	}
	return m;
}

static struct rte_mbuf *
icmp_frame(const struct ip_spec *spec, uint8_t type, uint16_t id,
	   uint16_t seq, const char *data, bool bad_cksum)
{
	uint8_t l4[256];
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)l4;
	size_t len = sizeof(*icmp) + strlen(data);
	struct rte_mbuf *m = frame_alloc();

	memset(l4, 0, sizeof(l4));
	icmp->icmp_type = type;
	icmp->icmp_ident = rte_cpu_to_be_16(id);
	icmp->icmp_seq_nb = rte_cpu_to_be_16(seq);
	memcpy(icmp + 1, data, strlen(data));
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(l4, len);
	if (bad_cksum)
		icmp->icmp_cksum ^= 0x00ff;
	put_ipv4(m, spec, l4, len, 0);
	return m;
}

static struct ip_spec
to_us(uint8_t proto)
{
	struct ip_spec s = {
		.src = ip("198.18.0.2"), .dst = ip("198.18.0.1"), .proto = proto,
	};

	return s;
}

/* ---- running the stack ------------------------------------------------ */

static void
inject_on(uint16_t port, struct rte_mbuf *m)
{
	assert_int_equal(rte_ring_enqueue(rx_ring[port], m), 0);
	droce_worker_poll(stack, 0);
	droce_control_poll(stack);
}

static void
inject(struct rte_mbuf *m)
{
	inject_on(0, m);
}

/* Everything sent on @port since the last call, in order per TX queue. */
static unsigned int
collect(uint16_t port, struct rte_mbuf **out, unsigned int max)
{
	unsigned int n = 0;

	for (unsigned int r = 0; r < TX_RINGS; r++)
		n += rte_ring_dequeue_burst(tx_ring[port][r], (void **)out + n,
					    max - n, NULL);
	return n;
}

static void
free_all(struct rte_mbuf **pkts, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		rte_pktmbuf_free(pkts[i]);
}

static void
expect_nothing_sent(void)
{
	struct rte_mbuf *out[8];
	unsigned int n = collect(0, out, RTE_DIM(out));

	free_all(out, n);
	assert_int_equal(n, 0);
}

static void
snapshot(void)
{
	droce_port_counters(stack, 0, &before);
}

/* Since snapshot(): exactly @n drops, all under @reason. */
static void
expect_drops(enum droce_drop_reason reason, uint64_t n)
{
	struct droce_counters now;

	droce_port_counters(stack, 0, &now);
	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++) {
		uint64_t delta = now.drop[r] - before.drop[r];

		if (delta != (r == (unsigned int)reason ? n : 0))
			fail_msg("drop %s: %" PRIu64 " new, expected %" PRIu64,
				 droce_drop_reason_name(r), delta,
				 r == (unsigned int)reason ? n : 0);
	}
}

static void
expect_no_drops(void)
{
	struct droce_counters now;

	droce_port_counters(stack, 0, &now);
	assert_int_equal(droce_counters_drops(&now), droce_counters_drops(&before));
}

static struct rte_mbuf *
copy_of(const struct rte_mbuf *m)
{
	struct rte_mbuf *copy = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);

	assert_non_null(copy);
	return copy;
}

/* Send @m and check it is dropped for @reason with nothing sent: alone,
 * and behind a good packet to a worker's handler in the same burst, whose
 * header the worker compares the next packet's with (classify.c).
 */
static void
expect_dropped(struct rte_mbuf *m, enum droce_drop_reason reason)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	struct rte_mbuf *copy = copy_of(m);
	unsigned int handled = worker_handler_pkts;

	snapshot();
	inject(m);
	expect_drops(reason, 1);
	expect_nothing_sent();

	snapshot();
	assert_int_equal(rte_ring_enqueue(rx_ring[0], udp_frame(&spec, 4000, 9000, "leader",
								0, false, false)), 0);
	inject(copy);
	expect_drops(reason, 1);
	assert_int_equal(worker_handler_pkts, handled + 1);
	expect_nothing_sent();
}

static void
worker_handler(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
	       struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	(void)ctx;
	assert_int_equal(queue, 0);
	(void)arg;
	(void)port;
	worker_handler_calls++;
	worker_handler_pkts += n;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t off = droce_udp_pkt_l4_offset(pkts[i]) +
			       sizeof(struct rte_udp_hdr);
		uint32_t len = rte_pktmbuf_pkt_len(pkts[i]) - off;

		worker_handler_len = len;
		memset(worker_handler_payload, 0, sizeof(worker_handler_payload));
		memcpy(worker_handler_payload,
		       rte_pktmbuf_mtod_offset(pkts[i], char *, off),
		       RTE_MIN(len, sizeof(worker_handler_payload) - 1));
		rte_pktmbuf_free(pkts[i]);
	}
}

static void
second_handler(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
	       struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	(void)ctx;
	(void)queue;
	(void)port;
	assert_ptr_equal(arg, &second_handler_pkts);
	second_handler_pkts += n;
	rte_pktmbuf_free_bulk(pkts, n);
}

static void
make_ring_port(uint16_t port, unsigned int nb_tx)
{
	char name[32];

	snprintf(name, sizeof(name), "ring_rx%u", port);
	rx_ring[port] = rte_ring_create(name, 4096, SOCKET_ID_ANY,
					RING_F_SP_ENQ | RING_F_SC_DEQ);
	assert_non_null(rx_ring[port]);
	for (unsigned int r = 0; r < nb_tx; r++) {
		snprintf(name, sizeof(name), "ring_tx%u_%u", port, r);
		tx_ring[port][r] = rte_ring_create(name, 4096, SOCKET_ID_ANY,
						   RING_F_SP_ENQ | RING_F_SC_DEQ);
		assert_non_null(tx_ring[port][r]);
	}
	snprintf(name, sizeof(name), "t%u", port);
	assert_true(rte_eth_from_rings(name, &rx_ring[port], 1, tx_ring[port],
				       nb_tx, SOCKET_ID_ANY) >= 0);
}

static int
setup(void **state)
{
	char *const overrides[] = {
		"port.0.device=net_ring_t0", "port.0.address=198.18.0.1/24",
		"port.0.gateway=198.18.0.254", "port.0.rxd=256", "port.0.txd=256",
		"port.1.device=net_ring_t1", "port.1.address=198.18.1.0/31",
		"port.1.rxd=256", "port.1.txd=256",
		"udp.echo.port=7", "stats.period=0",
		"worker.thread.groups=1",
	};
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN];
	struct rte_mbuf *out[4];

	(void)state;
	for (uint16_t p = 0; p < NB_PORTS; p++)
		make_ring_port(p, TX_RINGS);
	test_pool = rte_pktmbuf_pool_create("test_pool", 8192, 0, 0,
					    RTE_MBUF_DEFAULT_BUF_SIZE,
					    SOCKET_ID_ANY);
	assert_non_null(test_pool);
	if (droce_conf_load(&conf, NULL, overrides, RTE_DIM(overrides), err,
			    sizeof(err)) != 0)
		fail_msg("%s", err);
	if (droce_lcores_layout(&conf, "--lcores (test)", &layout, err,
				sizeof(err)) != 0)
		fail_msg("%s", err);
	stack = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (stack == NULL)
		fail_msg("%s", err);
	assert_int_equal(droce_udp_register(stack, 9000, DROCE_UDP_ON_WORKER,
					    worker_handler, NULL), 0);
	assert_int_equal(droce_udp_register(stack, 9001, DROCE_UDP_ON_WORKER,
					    second_handler, &second_handler_pkts), 0);
	/* The registration rules, before start. */
	assert_int_equal(droce_udp_register(stack, 9000, DROCE_UDP_ON_CONTROL,
					    worker_handler, NULL), -EEXIST);
	assert_int_equal(droce_udp_register(stack, 0, DROCE_UDP_ON_WORKER,
					    worker_handler, NULL), -EINVAL);
	assert_int_equal(droce_udp_register(stack, 9002, DROCE_UDP_ON_WORKER,
					    NULL, NULL), -EINVAL);
	for (uint16_t p = 0; p < NB_PORTS; p++)
		droce_port_mac(stack, p, &our_mac[p]);
	assert_int_equal(droce_stack_start(stack, false), 0);
	/* The gratuitous ARPs are checked by their own test. */
	(void)out;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (stack != NULL) {
		droce_stack_stop(stack);
		droce_stack_destroy(stack);
	}
	return 0;
}

static const struct rte_arp_hdr *
as_arp(struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const void *);

	assert_int_equal(eth->ether_type, RTE_BE16(RTE_ETHER_TYPE_ARP));
	assert_true(rte_pktmbuf_pkt_len(m) >= sizeof(*eth) + sizeof(struct rte_arp_hdr));
	return (const struct rte_arp_hdr *)(eth + 1);
}

/* ---- tests -------------------------------------------------------------- */

static void
test_gratuitous_arp(void **state)
{
	struct rte_mbuf *out[8];
	unsigned int n;

	(void)state;
	for (uint16_t p = 0; p < NB_PORTS; p++) {
		const struct rte_ether_hdr *eth;
		const struct rte_arp_hdr *arp;

		n = collect(p, out, RTE_DIM(out));
		assert_int_equal(n, 1);
		eth = rte_pktmbuf_mtod(out[0], const void *);
		assert_true(rte_is_broadcast_ether_addr(&eth->dst_addr));
		assert_true(rte_is_same_ether_addr(&eth->src_addr, &our_mac[p]));
		arp = as_arp(out[0]);
		assert_int_equal(arp->arp_opcode, RTE_BE16(RTE_ARP_OP_REQUEST));
		assert_int_equal(arp->arp_data.arp_sip,
				 p == 0 ? ip("198.18.0.1") : ip("198.18.1.0"));
		assert_int_equal(arp->arp_data.arp_tip, arp->arp_data.arp_sip);
		free_all(out, n);
	}
}

static void
test_arp_request_gets_reply(void **state)
{
	static const struct rte_ether_addr bcast = {
		.addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	struct rte_mbuf *out[8];
	const struct rte_ether_hdr *eth;
	const struct rte_arp_hdr *arp;
	unsigned int n;

	(void)state;
	snapshot();
	inject(arp_frame(RTE_ARP_OP_REQUEST, &peer_mac, ip("198.18.0.2"),
			 ip("198.18.0.1"), &bcast));
	expect_no_drops();
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	eth = rte_pktmbuf_mtod(out[0], const void *);
	assert_true(rte_is_same_ether_addr(&eth->dst_addr, &peer_mac));
	assert_true(rte_is_same_ether_addr(&eth->src_addr, &our_mac[0]));
	arp = as_arp(out[0]);
	assert_int_equal(arp->arp_opcode, RTE_BE16(RTE_ARP_OP_REPLY));
	assert_true(rte_is_same_ether_addr(&arp->arp_data.arp_sha, &our_mac[0]));
	assert_int_equal(arp->arp_data.arp_sip, ip("198.18.0.1"));
	assert_true(rte_is_same_ether_addr(&arp->arp_data.arp_tha, &peer_mac));
	assert_int_equal(arp->arp_data.arp_tip, ip("198.18.0.2"));
	assert_int_equal(rte_pktmbuf_pkt_len(out[0]), 42);
	free_all(out, n);
}

static void
test_arp_not_for_us(void **state)
{
	static const struct rte_ether_addr bcast = {
		.addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };

	(void)state;
	expect_dropped(arp_frame(RTE_ARP_OP_REQUEST, &peer_mac, ip("198.18.0.2"),
				 ip("198.18.0.77"), &bcast),
		       DROCE_DROP_NOT_FOR_US);
}

static void
test_arp_malformed(void **state)
{
	static const struct rte_ether_addr mcast = {
		.addr_bytes = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 } };
	struct rte_mbuf *m;
	struct rte_arp_hdr *arp;

	(void)state;
	m = arp_frame(RTE_ARP_OP_REQUEST, &peer_mac, ip("198.18.0.2"),
		      ip("198.18.0.1"), &our_mac[0]);
	rte_pktmbuf_trim(m, 10);
	expect_dropped(m, DROCE_DROP_TRUNCATED);

	m = arp_frame(RTE_ARP_OP_REQUEST, &peer_mac, ip("198.18.0.2"),
		      ip("198.18.0.1"), &our_mac[0]);
	arp = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, 14);
	arp->arp_hardware = RTE_BE16(6);
	expect_dropped(m, DROCE_DROP_ARP_BAD);

	m = arp_frame(RTE_ARP_OP_REQUEST, &peer_mac, ip("198.18.0.2"),
		      ip("198.18.0.1"), &our_mac[0]);
	arp = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, 14);
	arp->arp_plen = 16;
	expect_dropped(m, DROCE_DROP_ARP_BAD);

	m = arp_frame(9, &peer_mac, ip("198.18.0.2"), ip("198.18.0.1"),
		      &our_mac[0]);
	expect_dropped(m, DROCE_DROP_ARP_BAD);

	m = arp_frame(RTE_ARP_OP_REQUEST, &mcast, ip("198.18.0.2"),
		      ip("198.18.0.1"), &our_mac[0]);
	expect_dropped(m, DROCE_DROP_ARP_BAD);

	/* Someone else claims our address: refused, logged once. */
	m = arp_frame(RTE_ARP_OP_REPLY, &peer3_mac, ip("198.18.0.1"),
		      ip("198.18.0.1"), &our_mac[0]);
	expect_dropped(m, DROCE_DROP_ARP_BAD);
}

static const struct rte_ipv4_hdr *
check_reply_ipv4(struct rte_mbuf *m, rte_be32_t dst, uint8_t proto,
		 const struct rte_ether_addr *dst_mac)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const void *);
	const struct rte_ipv4_hdr *iph = (const struct rte_ipv4_hdr *)(eth + 1);

	assert_true(rte_is_same_ether_addr(&eth->dst_addr, dst_mac));
	assert_true(rte_is_same_ether_addr(&eth->src_addr, &our_mac[0]));
	assert_int_equal(eth->ether_type, RTE_BE16(RTE_ETHER_TYPE_IPV4));
	assert_int_equal(iph->version_ihl, 0x45);
	assert_int_equal(rte_ipv4_cksum(iph), 0);
	assert_int_equal(iph->time_to_live, 64);
	assert_int_equal(iph->next_proto_id, proto);
	assert_int_equal(iph->src_addr, ip("198.18.0.1"));
	assert_int_equal(iph->dst_addr, dst);
	assert_int_equal(rte_be_to_cpu_16(iph->total_length),
			 rte_pktmbuf_pkt_len(m) - 14);
	return iph;
}

static void
check_echo_reply(struct rte_mbuf *m, rte_be32_t dst,
		 const struct rte_ether_addr *dst_mac, uint16_t id,
		 uint16_t seq, const char *data)
{
	const struct rte_ipv4_hdr *iph = check_reply_ipv4(m, dst, IPPROTO_ICMP,
							  dst_mac);
	const struct rte_icmp_hdr *icmp = (const void *)(iph + 1);
	size_t len = sizeof(*icmp) + strlen(data);

	assert_int_equal(rte_be_to_cpu_16(iph->total_length), 20 + len);
	assert_int_equal(icmp->icmp_type, RTE_IP_ICMP_ECHO_REPLY);
	assert_int_equal(icmp->icmp_code, 0);
	assert_int_equal(rte_be_to_cpu_16(icmp->icmp_ident), id);
	assert_int_equal(rte_be_to_cpu_16(icmp->icmp_seq_nb), seq);
	assert_memory_equal(icmp + 1, data, strlen(data));
	assert_int_equal(rte_raw_cksum(icmp, len), 0xffff);
}

static void
test_icmp_echo(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_ICMP);
	struct rte_mbuf *out[8];
	unsigned int n;

	(void)state;
	/* The ARP test taught droce the peer's MAC: the reply goes at once. */
	snapshot();
	inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 0x1234, 7,
			  "droce ping payload", false));
	expect_no_drops();
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	check_echo_reply(out[0], ip("198.18.0.2"), &peer_mac, 0x1234, 7,
			 "droce ping payload");
	free_all(out, n);

	/* IPv4 options are accepted; the reply has none. */
	spec.options = 2;
	inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 1, 2, "opts", false));
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	check_echo_reply(out[0], ip("198.18.0.2"), &peer_mac, 1, 2, "opts");
	free_all(out, n);
	expect_no_drops();
}

static void
test_icmp_echo_waits_for_arp(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_ICMP);
	struct rte_mbuf *out[8];
	const struct rte_arp_hdr *arp;
	unsigned int n;

	(void)state;
	spec.src = ip("198.18.0.3");
	inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 5, 1, "who", false));
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1); /* an ARP request, the reply is held */
	arp = as_arp(out[0]);
	assert_int_equal(arp->arp_opcode, RTE_BE16(RTE_ARP_OP_REQUEST));
	assert_int_equal(arp->arp_data.arp_tip, ip("198.18.0.3"));
	free_all(out, n);

	snapshot();
	inject(arp_frame(RTE_ARP_OP_REPLY, &peer3_mac, ip("198.18.0.3"),
			 ip("198.18.0.1"), &our_mac[0]));
	expect_no_drops();
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	check_echo_reply(out[0], ip("198.18.0.3"), &peer3_mac, 5, 1, "who");
	free_all(out, n);
}

static void
test_arp_unresolved(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_ICMP);
	struct rte_mbuf *out[8];
	unsigned int n, requests = 0;
	uint64_t deadline;

	(void)state;
	spec.src = ip("198.18.0.9");
	snapshot();
	for (int i = 0; i < 10; i++) /* 8 are held, 2 more are refused */
		inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 9, (uint16_t)i,
				  "nobody", false));
	expect_drops(DROCE_DROP_ARP_UNRESOLVED, 2);
	/* A request now and one per second for three more; then give up.
	 * That takes 4 s; the loop ends when it is done, and waits up to 30 s
	 * for a machine so busy that this thread seldom runs.
	 */
	deadline = rte_get_timer_cycles() + 30 * rte_get_timer_hz();
	while (rte_get_timer_cycles() < deadline) {
		struct droce_counters now;

		droce_control_poll(stack);
		n = collect(0, out, RTE_DIM(out));
		for (unsigned int i = 0; i < n; i++)
			if (as_arp(out[i])->arp_data.arp_tip == ip("198.18.0.9"))
				requests++;
		free_all(out, n);
		droce_port_counters(stack, 0, &now);
		if (now.drop[DROCE_DROP_ARP_UNRESOLVED] -
		    before.drop[DROCE_DROP_ARP_UNRESOLVED] == 10)
			break;
		usleep(10000);
	}
	expect_drops(DROCE_DROP_ARP_UNRESOLVED, 10);
	assert_int_equal(requests, 4);
}

/* The spoofed sources of test_arp_hostile_neighbours(): 198.18.0.100 on. */
#define SPOOFED_FIRST 100u
#define SPOOFED_COUNT 150u

/* The address an ARP request @p m asks for (network order), or 0. */
static rte_be32_t
arp_request_for(struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const void *);
	const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);

	if (eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_ARP) ||
	    arp->arp_opcode != RTE_BE16(RTE_ARP_OP_REQUEST))
		return 0;
	return arp->arp_data.arp_tip;
}

/* Which spoofed source @p m asks for, or -1. */
static int
spoofed_target(struct rte_mbuf *m)
{
	uint32_t host = rte_be_to_cpu_32(arp_request_for(m)) -
			rte_be_to_cpu_32(ip("198.18.0.0"));

	return host >= SPOOFED_FIRST && host < SPOOFED_FIRST + SPOOFED_COUNT
	       ? (int)(host - SPOOFED_FIRST) : -1;
}

/* A request for a host that never answers: a spoofed source, or .77. */
static bool
unanswered_asked(struct rte_mbuf *m)
{
	return spoofed_target(m) >= 0 || arp_request_for(m) == ip("198.18.0.77");
}

/* What port 0 sent, less the requests for hosts that never answer: they
 * are asked again each second, and a loaded machine can make any step of
 * the test take that long.
 */
static unsigned int
collect_but_unanswered(struct rte_mbuf **out, unsigned int max)
{
	unsigned int n = collect(0, out, max), kept = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (unanswered_asked(out[i]))
			rte_pktmbuf_free(out[i]);
		else
			out[kept++] = out[i];
	}
	return kept;
}

/* What a host on the link can make droce's ARP do: a reply we did not ask
 * for changes nothing and creates nothing, the subnet's network and
 * broadcast addresses are no senders, and a flood of pings from spoofed
 * on-link sources starts at most NET_ARP_REQUESTS_PER_S resolutions (at
 * most NET_ARP_INCOMPLETE_MAX at once) while the known neighbours keep
 * their entries and a new one can still be resolved.
 */
static void
test_arp_hostile_neighbours(void **state)
{
	static const struct rte_ether_addr fake = {
		.addr_bytes = { 0x02, 0x66, 0x66, 0x66, 0x66, 0x66 } };
	struct ip_spec spec = to_us(IPPROTO_ICMP);
	struct rte_mbuf *out[300];
	bool asked[SPOOFED_COUNT] = { false };
	unsigned int n, requests = 0;

	(void)state;
	/* The peer's address claimed by another MAC, in a reply. */
	snapshot();
	inject(arp_frame(RTE_ARP_OP_REPLY, &fake, ip("198.18.0.2"), ip("198.18.0.1"),
			 &our_mac[0]));
	expect_no_drops();
	inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 1, 1, "still you", false));
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	check_echo_reply(out[0], ip("198.18.0.2"), &peer_mac, 1, 1, "still you");
	free_all(out, n);
	/* A reply from a host we never asked: no entry, it is asked first. */
	inject(arp_frame(RTE_ARP_OP_REPLY, &fake, ip("198.18.0.77"), ip("198.18.0.1"),
			 &our_mac[0]));
	spec.src = ip("198.18.0.77");
	inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 2, 1, "who", false));
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	assert_int_equal(as_arp(out[0])->arp_opcode, RTE_BE16(RTE_ARP_OP_REQUEST));
	free_all(out, n);
	/* The subnet's network and broadcast addresses are no hosts. */
	snapshot();
	inject(arp_frame(RTE_ARP_OP_REQUEST, &fake, ip("198.18.0.255"), ip("198.18.0.1"),
			 &our_mac[0]));
	inject(arp_frame(RTE_ARP_OP_REQUEST, &fake, ip("198.18.0.0"), ip("198.18.0.1"),
			 &our_mac[0]));
	expect_drops(DROCE_DROP_ARP_BAD, 2);
	expect_nothing_sent();
	/* Pings from 150 spoofed on-link sources, in one go: the sources
	 * asked for count, not how often (a second's retry).
	 */
	for (unsigned int i = 0; i < SPOOFED_COUNT; i++) {
		spec.src = rte_cpu_to_be_32(rte_be_to_cpu_32(ip("198.18.0.0")) +
					    SPOOFED_FIRST + i);
		inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 3, (uint16_t)i, "x", false));
	}
	n = collect(0, out, RTE_DIM(out));
	for (unsigned int i = 0; i < n; i++) {
		int k = spoofed_target(out[i]);

		assert_true(unanswered_asked(out[i]));
		if (k >= 0 && !asked[k])
			requests++;
		if (k >= 0)
			asked[k] = true;
	}
	free_all(out, n);
	print_message("  %u spoofed sources: %u asked for\n", SPOOFED_COUNT, requests);
	assert_true(requests <= NET_ARP_REQUESTS_PER_S + 2);
	/* The neighbours known before are still answered at once. */
	spec = to_us(IPPROTO_ICMP);
	inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 4, 1, "after", false));
	n = collect_but_unanswered(out, RTE_DIM(out));
	assert_int_equal(n, 1);
	check_echo_reply(out[0], ip("198.18.0.2"), &peer_mac, 4, 1, "after");
	free_all(out, n);
	/* And a new one is resolved, once the rate allows a request. */
	rte_delay_ms(50);
	spec.src = ip("198.18.0.60");
	inject(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 5, 1, "new", false));
	n = collect_but_unanswered(out, RTE_DIM(out));
	assert_int_equal(n, 1);
	assert_int_equal(as_arp(out[0])->arp_data.arp_tip, ip("198.18.0.60"));
	free_all(out, n);
	inject(arp_frame(RTE_ARP_OP_REPLY, &peer3_mac, ip("198.18.0.60"), ip("198.18.0.1"),
			 &our_mac[0]));
	n = collect_but_unanswered(out, RTE_DIM(out));
	assert_int_equal(n, 1);
	check_echo_reply(out[0], ip("198.18.0.60"), &peer3_mac, 5, 1, "new");
	free_all(out, n);
	/* The hosts that never answered do now: the tests after this one see
	 * no request of theirs asked again. What answers they held leaves.
	 */
	for (unsigned int i = 0; i <= SPOOFED_COUNT; i++) {
		rte_be32_t host = i < SPOOFED_COUNT
				  ? rte_cpu_to_be_32(rte_be_to_cpu_32(ip("198.18.0.0")) +
						     SPOOFED_FIRST + i)
				  : ip("198.18.0.77");

		inject(arp_frame(RTE_ARP_OP_REPLY, &fake, host, ip("198.18.0.1"), &our_mac[0]));
		free_all(out, collect(0, out, RTE_DIM(out)));
	}
}

static void
test_ethernet_and_ipv4_malformed(void **state)
{
	static const struct rte_ether_addr other = {
		.addr_bytes = { 0x02, 0x99, 0, 0, 0, 1 } };
	struct ip_spec spec;
	struct rte_mbuf *m;
	uint8_t junk[8] = { 0 };

	(void)state;
	m = frame_alloc();
	frame_put(m, 10);
	expect_dropped(m, DROCE_DROP_TRUNCATED);

	m = frame_alloc();
	put_eth(m, &other, &peer_mac, RTE_ETHER_TYPE_IPV4);
	frame_put(m, 40);
	expect_dropped(m, DROCE_DROP_NOT_FOR_US);

	m = frame_alloc();
	put_eth(m, &our_mac[0], &peer_mac, RTE_ETHER_TYPE_IPV6);
	frame_put(m, 60);
	expect_dropped(m, DROCE_DROP_UNKNOWN_ETHERTYPE);

	m = frame_alloc();
	put_eth(m, &our_mac[0], &peer_mac, RTE_ETHER_TYPE_IPV4);
	frame_put(m, 12);
	expect_dropped(m, DROCE_DROP_TRUNCATED);

	spec = to_us(IPPROTO_UDP);
	spec.version = 6;
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_IP_BAD_HEADER);
	spec = to_us(IPPROTO_UDP);
	spec.ihl_words = 4;
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_IP_BAD_HEADER);
	spec = to_us(IPPROTO_UDP);
	spec.ihl_words = 15; /* 60-byte header in a 29-byte packet */
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_TRUNCATED);
	spec = to_us(IPPROTO_UDP);
	spec.total_adjust = 100;
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_TRUNCATED);
	spec = to_us(IPPROTO_UDP);
	spec.total_adjust = -20; /* total length 9 < header 20 */
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_IP_BAD_HEADER);
	spec = to_us(IPPROTO_UDP);
	spec.bad_cksum = true;
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_IP_BAD_CKSUM);
	spec.options = 1; /* the general sum, for headers with options */
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_IP_BAD_CKSUM);
	/* Any bit of the header changed after the sum was taken, in the
	 * bytes no earlier check looks at.
	 */
	spec = to_us(IPPROTO_UDP);
	for (unsigned int byte = 1; byte < sizeof(struct rte_ipv4_hdr); byte++) {
		if (byte == 2 || byte == 3) /* total length: checked first */
			continue;
		for (unsigned int bit = 0; bit < 8; bit++) {
			struct rte_mbuf *m = udp_frame(&spec, 1, 9000, "x", 0, false, true);

			rte_pktmbuf_mtod_offset(m, uint8_t *, RTE_ETHER_HDR_LEN)[byte] ^=
				(uint8_t)(1u << bit);
			expect_dropped(m, DROCE_DROP_IP_BAD_CKSUM);
		}
	}
	spec = to_us(IPPROTO_UDP);
	spec.frag = RTE_IPV4_HDR_MF_FLAG;
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_IP_FRAGMENT);
	spec.frag = 185; /* a later fragment */
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_IP_FRAGMENT);
	spec = to_us(IPPROTO_UDP);
	spec.dst = ip("198.18.0.50");
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_NOT_FOR_US);
	spec.dst = ip("198.18.0.255");
	expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
		       DROCE_DROP_NOT_FOR_US);
	{
		const char *bad_sources[] = { "127.0.0.1", "0.0.0.0", "224.0.0.1",
			"240.0.0.1", "255.255.255.255", "198.18.0.255",
			"198.18.0.1" };

		for (unsigned int i = 0; i < RTE_DIM(bad_sources); i++) {
			spec = to_us(IPPROTO_UDP);
			spec.src = ip(bad_sources[i]);
			expect_dropped(udp_frame(&spec, 1, 9000, "x", 0, false, true),
				       DROCE_DROP_IP_BAD_SOURCE);
		}
	}
	spec = to_us(IPPROTO_TCP);
	m = frame_alloc();
	put_ipv4(m, &spec, junk, sizeof(junk), 0);
	expect_dropped(m, DROCE_DROP_UNKNOWN_IP_PROTO);
}

static void
test_udp_to_worker_handler(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	struct rte_mbuf *m;

	(void)state;
	worker_handler_calls = 0;
	worker_handler_pkts = 0;
	snapshot();
	inject(udp_frame(&spec, 4000, 9000, "to the worker", 0, false, false));
	assert_int_equal(worker_handler_calls, 1);
	assert_string_equal(worker_handler_payload, "to the worker");
	/* No checksum (0) is allowed for UDP over IPv4. */
	inject(udp_frame(&spec, 4000, 9000, "no cksum", 0, false, true));
	assert_int_equal(worker_handler_pkts, 2);
	/* Ethernet padding behind the datagram is cut off. */
	m = udp_frame(&spec, 4000, 9000, "pad", 0, false, false);
	frame_put(m, 18);
	inject(m);
	assert_int_equal(worker_handler_pkts, 3);
	assert_string_equal(worker_handler_payload, "pad");
	expect_no_drops();
	expect_nothing_sent();

	/* A burst reaches the handler as one call. */
	worker_handler_calls = 0;
	for (int i = 0; i < 5; i++)
		assert_int_equal(rte_ring_enqueue(rx_ring[0],
			udp_frame(&spec, 4000, 9000, "burst", 0, false, false)), 0);
	droce_worker_poll(stack, 0);
	assert_int_equal(worker_handler_calls, 1);
	assert_int_equal(worker_handler_pkts, 8);

	/* Behind a packet of its flow, one that differs where packets of a
	 * flow may (source port, ID, TTL, lengths, checksums) is taken the
	 * same way, its Ethernet pad cut off.
	 */
	assert_int_equal(rte_ring_enqueue(rx_ring[0],
		udp_frame(&spec, 4000, 9000, "first of the flow", 0, false, false)), 0);
	m = udp_frame(&spec, 4001, 9000, "next", 0, false, false);
	{
		struct rte_ipv4_hdr *iph = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *,
								   RTE_ETHER_HDR_LEN);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(iph + 1);

		iph->time_to_live = 7;
		iph->packet_id = RTE_BE16(99);
		iph->hdr_checksum = 0;
		iph->hdr_checksum = rte_ipv4_cksum(iph);
		udp->dgram_cksum = 0;
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(iph, udp);
	}
	frame_put(m, 18);
	assert_int_equal(rte_ring_enqueue(rx_ring[0], m), 0);
	droce_worker_poll(stack, 0);
	assert_int_equal(worker_handler_pkts, 10);
	assert_string_equal(worker_handler_payload, "next");
	assert_int_equal(worker_handler_len, 4);

	/* Two handlers in one burst: each gets its own packets, in one call. */
	worker_handler_calls = 0;
	second_handler_pkts = 0;
	for (int i = 0; i < 6; i++)
		assert_int_equal(rte_ring_enqueue(rx_ring[0],
			udp_frame(&spec, 4000, i % 2 ? 9001 : 9000, "mixed", 0,
				  false, false)), 0);
	droce_worker_poll(stack, 0);
	assert_int_equal(worker_handler_calls, 1);
	assert_int_equal(worker_handler_pkts, 13);
	assert_int_equal(second_handler_pkts, 3);
	expect_no_drops();
}

static void
test_udp_malformed(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	struct rte_mbuf *m;
	uint8_t four[4] = { 0 };

	(void)state;
	expect_dropped(udp_frame(&spec, 4000, 9000, "longer", 5, false, true),
		       DROCE_DROP_UDP_BAD_LENGTH);
	expect_dropped(udp_frame(&spec, 4000, 9000, "shorter", -3, false, true),
		       DROCE_DROP_UDP_BAD_LENGTH);
	expect_dropped(udp_frame(&spec, 4000, 9000, "cksum", 0, true, false),
		       DROCE_DROP_L4_BAD_CKSUM);
	expect_dropped(udp_frame(&spec, 4000, 9999, "nobody", 0, false, false),
		       DROCE_DROP_UDP_NO_HANDLER);
	m = frame_alloc();
	put_ipv4(m, &spec, four, sizeof(four), 0);
	expect_dropped(m, DROCE_DROP_TRUNCATED);
	/* Cut short on the way: both lengths claim bytes the frame lacks. */
	m = udp_frame(&spec, 4000, 9000, "cut short", 0, false, true);
	assert_int_equal(rte_pktmbuf_trim(m, 3), 0);
	expect_dropped(m, DROCE_DROP_TRUNCATED);
}

/* What the worker made of one packet: drops by reason, packets the
 * handler got (and the UDP payload length of the last), packets sent.
 */
struct verdict_seen {
	uint64_t drop[DROCE_DROP_MAX];
	unsigned int handled;
	uint32_t len;
	unsigned int sent;
};

/* @p m alone, or in one burst behind @p leader (NULL: alone), a packet
 * the worker hands to its handler.
 */
static void
see_verdict(struct rte_mbuf *m, struct rte_mbuf *leader, struct verdict_seen *v)
{
	unsigned int handled = worker_handler_pkts;
	struct rte_mbuf *out[8];
	struct droce_counters now;

	memset(v, 0, sizeof(*v));       /* compared whole, padding too */
	snapshot();
	if (leader != NULL) {
		assert_int_equal(rte_ring_enqueue(rx_ring[0], leader), 0);
		handled++;
	}
	inject(m);
	droce_port_counters(stack, 0, &now);
	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++)
		v->drop[r] = now.drop[r] - before.drop[r];
	v->handled = worker_handler_pkts - handled;
	v->len = v->handled != 0 ? worker_handler_len : 0;
	v->sent = collect(0, out, RTE_DIM(out));
	free_all(out, v->sent);
}

/*
 * Behind a packet of its flow, a packet is judged as it is alone: every
 * bit of the Ethernet, IPv4 and UDP headers flipped in turn, and the first
 * byte of the payload, where the worker compares a packet with the one
 * before it (classify.c) or checks what it does not compare. Each flip
 * once as it is, and once with the checksums made right again, so that
 * the field's own check judges it; each behind a packet of another size
 * (only the fields a flow shares compared) and behind the packet as it
 * was (every byte compared).
 */
static void
test_flow_memo_judges_as_classify(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	const size_t ip_off = RTE_ETHER_HDR_LEN;
	const size_t udp_off = ip_off + sizeof(struct rte_ipv4_hdr);
	const size_t hdr = udp_off + sizeof(struct rte_udp_hdr);

	(void)state;
	for (unsigned int k = 0; k < 2 * (hdr + 1) * 8; k++) {
		size_t byte = k / 8 % (hdr + 1);
		unsigned int bit = k % 8;
		bool fix_sums = k >= (hdr + 1) * 8;
		struct rte_mbuf *m = udp_frame(&spec, 4000, 9000, "memo", 0, false, false);
		struct rte_ipv4_hdr *iph = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *,
								   ip_off);
		struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *,
								  udp_off);
		struct rte_mbuf *unchanged = copy_of(m);
		struct verdict_seen alone, behind, behind_twin;

		rte_pktmbuf_mtod(m, uint8_t *)[byte] ^= (uint8_t)(1u << bit);
		if (fix_sums && byte >= ip_off && byte < udp_off &&
		    byte != ip_off + offsetof(struct rte_ipv4_hdr, hdr_checksum) &&
		    byte != ip_off + offsetof(struct rte_ipv4_hdr, hdr_checksum) + 1 &&
		    iph->version_ihl == RTE_IPV4_VHL_DEF) {
			iph->hdr_checksum = 0;
			iph->hdr_checksum = rte_ipv4_cksum(iph);
		}
		if (fix_sums && byte >= ip_off && byte < udp_off + 6 &&
		    iph->version_ihl == RTE_IPV4_VHL_DEF &&
		    rte_be_to_cpu_16(iph->total_length) == rte_pktmbuf_pkt_len(m) - ip_off &&
		    rte_be_to_cpu_16(udp->dgram_len) == rte_pktmbuf_pkt_len(m) - udp_off) {
			udp->dgram_cksum = 0;
			udp->dgram_cksum = rte_ipv4_udptcp_cksum(iph, udp);
		}
		see_verdict(copy_of(m), udp_frame(&spec, 4000, 9000, "leader", 0, false, false),
			    &behind);
		see_verdict(copy_of(m), unchanged, &behind_twin);
		see_verdict(m, NULL, &alone);
		if (memcmp(&alone, &behind, sizeof(alone)) != 0 ||
		    memcmp(&alone, &behind_twin, sizeof(alone)) != 0)
			fail_msg("byte %zu bit %u%s: %u handled, %u sent alone; %u, %u behind a packet of its flow; %u, %u behind the packet unchanged",
				 byte, bit, fix_sums ? " (sums made right)" : "", alone.handled,
				 alone.sent, behind.handled, behind.sent, behind_twin.handled,
				 behind_twin.sent);
	}
}

/* Behind a packet with the same header bytes, a frame with Ethernet's
 * pad after it is trimmed, and one cut short is dropped, as alone. No
 * UDP checksum: nothing but the frame's length tells them from their twin.
 */
static void
test_flow_memo_judges_lengths(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	struct rte_mbuf *m = udp_frame(&spec, 4000, 9000, "memo", 0, false, true);
	struct verdict_seen alone, behind;
	struct rte_mbuf *padded = copy_of(m), *cut = copy_of(m);
	char *pad = rte_pktmbuf_append(padded, 10);

	(void)state;
	assert_non_null(pad);
	memset(pad, 0xa5, 10);
	see_verdict(copy_of(padded), copy_of(m), &behind);
	see_verdict(padded, NULL, &alone);
	assert_memory_equal(&alone, &behind, sizeof(alone));
	assert_int_equal(behind.handled, 1);
	assert_int_equal(behind.len, 4);
	assert_int_equal(rte_pktmbuf_trim(cut, 1), 0);
	see_verdict(copy_of(cut), copy_of(m), &behind);
	see_verdict(cut, NULL, &alone);
	assert_memory_equal(&alone, &behind, sizeof(alone));
	assert_int_equal(behind.handled, 0);
	assert_int_equal(behind.drop[DROCE_DROP_TRUNCATED], 1);
	rte_pktmbuf_free(m);
}

/* Behind its unchanged twin, a packet the NIC flagged as having a bad IP
 * or UDP checksum is dropped as alone: the same bytes do not overrule the
 * NIC.
 */
static void
test_flow_memo_keeps_nic_verdicts(void **state)
{
	struct net_port *p = stack->port[0];
	struct ip_spec spec = to_us(IPPROTO_UDP);
	bool ip_offload = p->ip_cksum_offload, l4_offload = p->l4_cksum_offload;
	static const struct {
		uint64_t flag;
		enum droce_drop_reason reason;
	} flagged[] = {
		{ RTE_MBUF_F_RX_IP_CKSUM_BAD, DROCE_DROP_IP_BAD_CKSUM },
		{ RTE_MBUF_F_RX_L4_CKSUM_BAD, DROCE_DROP_L4_BAD_CKSUM },
	};

	(void)state;
	p->ip_cksum_offload = true;
	p->l4_cksum_offload = true;
	for (unsigned int k = 0; k < RTE_DIM(flagged); k++) {
		struct rte_mbuf *m = udp_frame(&spec, 4000, 9000, "flagged", 0, false, false);
		struct verdict_seen alone, behind;

		m->ol_flags = flagged[k].flag;
		see_verdict(copy_of(m), udp_frame(&spec, 4000, 9000, "flagged", 0, false, false),
			    &behind);
		see_verdict(m, NULL, &alone);
		assert_memory_equal(&alone, &behind, sizeof(alone));
		assert_int_equal(behind.handled, 0);
		assert_int_equal(behind.drop[flagged[k].reason], 1);
	}
	p->ip_cksum_offload = ip_offload;
	p->l4_cksum_offload = l4_offload;
}

/* A worker handler finds the UDP payload behind an IPv4 header with
 * options (droce_udp_pkt_l4_offset()), alone and behind a packet of its
 * flow without them.
 */
static void
test_worker_handler_ip_options(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	struct verdict_seen alone, behind;

	(void)state;
	spec.options = 2;
	see_verdict(udp_frame(&spec, 4000, 9000, "optioned", 0, false, false), NULL, &alone);
	assert_int_equal(alone.handled, 1);
	assert_int_equal(alone.len, 8);
	assert_string_equal(worker_handler_payload, "optioned");
	see_verdict(udp_frame(&spec, 4000, 9000, "after", 0, false, false),
		    udp_frame(&(struct ip_spec){ .src = spec.src, .dst = spec.dst,
						 .proto = IPPROTO_UDP },
			      4000, 9000, "leader", 0, false, false), &behind);
	assert_int_equal(behind.handled, 1);
	assert_int_equal(behind.len, 5);
	assert_string_equal(worker_handler_payload, "after");
}

static unsigned int extbuf_freed;

static void
extbuf_free(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
	extbuf_freed++;
}

/*
 * droce_free_received() gives every kind of mbuf back whole: plain ones
 * of two pools, a chain, a clone (its parent keeps its other reference),
 * one with a second reference, one with an external buffer (whose free
 * callback runs), in one call.
 */
static void
test_free_received(void **state)
{
	static uint8_t ext[1024] __rte_aligned(64);
	struct rte_mbuf_ext_shared_info *shinfo;
	uint16_t ext_len = sizeof(ext);
	struct rte_mbuf *external;
	struct rte_mempool *other = rte_pktmbuf_pool_create("test_free_other", 64, 0, 0,
							    RTE_MBUF_DEFAULT_BUF_SIZE,
							    SOCKET_ID_ANY);
	unsigned int test_free = rte_mempool_avail_count(test_pool);
	struct rte_mbuf *pkts[9], *parent, *shared;

	(void)state;
	assert_non_null(other);
	extbuf_freed = 0;
	shinfo = rte_pktmbuf_ext_shinfo_init_helper(ext, &ext_len, extbuf_free, NULL);
	assert_non_null(shinfo);
	external = frame_alloc();
	rte_pktmbuf_attach_extbuf(external, ext, rte_mem_virt2iova(ext), ext_len, shinfo);
	pkts[0] = frame_alloc();
	pkts[1] = frame_alloc();
	pkts[2] = rte_pktmbuf_alloc(other);
	assert_non_null(pkts[2]);
	pkts[3] = frame_alloc();
	assert_int_equal(rte_pktmbuf_chain(pkts[3], frame_alloc()), 0);
	parent = frame_alloc();
	pkts[4] = rte_pktmbuf_clone(parent, test_pool);
	assert_non_null(pkts[4]);
	shared = frame_alloc();
	rte_mbuf_refcnt_update(shared, 1);
	pkts[5] = shared;
	pkts[6] = frame_alloc();
	pkts[7] = rte_pktmbuf_alloc(other);
	assert_non_null(pkts[7]);
	pkts[8] = external;
	droce_free_received(pkts, RTE_DIM(pkts));
	assert_int_equal(extbuf_freed, 1);
	assert_int_equal(rte_mbuf_refcnt_read(parent), 1);
	assert_int_equal(rte_mbuf_refcnt_read(shared), 1);
	rte_pktmbuf_free(parent);
	rte_pktmbuf_free(shared);
	assert_int_equal(rte_mempool_avail_count(test_pool), test_free);
	assert_int_equal(rte_mempool_avail_count(other), 64);
	rte_mempool_free(other);
}

static void
test_udp_echo(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	struct rte_mbuf *out[8];
	const struct rte_ipv4_hdr *iph;
	const struct rte_udp_hdr *udp;
	unsigned int n;

	(void)state;
	snapshot();
	inject(udp_frame(&spec, 40000, 7, "echo me", 0, false, false));
	expect_no_drops();
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	iph = check_reply_ipv4(out[0], ip("198.18.0.2"), IPPROTO_UDP, &peer_mac);
	udp = (const struct rte_udp_hdr *)(iph + 1);
	assert_int_equal(rte_be_to_cpu_16(udp->src_port), 7);
	assert_int_equal(rte_be_to_cpu_16(udp->dst_port), 40000);
	assert_int_equal(rte_be_to_cpu_16(udp->dgram_len), 8 + 7);
	assert_memory_equal(udp + 1, "echo me", 7);
	assert_int_equal(rte_ipv4_udptcp_cksum_verify(iph, udp), 0);
	free_all(out, n);
}

/* Ethernet padding spread over two segments (a chained mbuf): the echo
 * reply carries the datagram only, none of the pad.
 */
static void
test_udp_echo_pad_in_two_segments(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	struct rte_mbuf *m, *tail, *out[8];
	const struct rte_ipv4_hdr *iph;
	unsigned int n;

	(void)state;
	m = udp_frame(&spec, 40001, 7, "pad", 0, false, false);
	frame_put(m, 6);           /* 6 bytes of pad here ... */
	tail = frame_alloc();
	frame_put(tail, 4);        /* ... and 4 in a second segment */
	assert_int_equal(rte_pktmbuf_chain(m, tail), 0);
	snapshot();
	inject(m);
	expect_no_drops();
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	iph = check_reply_ipv4(out[0], ip("198.18.0.2"), IPPROTO_UDP, &peer_mac);
	assert_int_equal(rte_pktmbuf_pkt_len(out[0]), 14 + 20 + 8 + 3);
	assert_int_equal(rte_be_to_cpu_16(iph->total_length), 20 + 8 + 3);
	free_all(out, n);
}

/* With the NIC's L4 checksum offload: BAD is dropped, GOOD taken, and
 * NONE (the data verified, the field holding a partial sum, as virtio
 * hands packets over) taken too, not checked again in software.
 */
static void
test_udp_cksum_offload_flags(void **state)
{
	struct net_port *p = stack->port[0];
	struct ip_spec spec = to_us(IPPROTO_UDP);
	bool offload = p->l4_cksum_offload;
	struct rte_mbuf *m, *out[8];
	unsigned int n;

	(void)state;
	p->l4_cksum_offload = true;
	m = udp_frame(&spec, 40002, 7, "partial", 0, true, false);
	m->ol_flags = RTE_MBUF_F_RX_L4_CKSUM_NONE;
	snapshot();
	inject(m);
	expect_no_drops();
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	free_all(out, n);
	m = udp_frame(&spec, 40002, 7, "bad", 0, false, false);
	m->ol_flags = RTE_MBUF_F_RX_L4_CKSUM_BAD;
	expect_dropped(m, DROCE_DROP_L4_BAD_CKSUM);
	p->l4_cksum_offload = offload;
}

static void
test_icmp_malformed(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_ICMP);
	struct rte_mbuf *m;
	uint8_t four[4] = { 8, 0, 0, 0 };

	(void)state;
	expect_dropped(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 1, 1, "x", true),
		       DROCE_DROP_L4_BAD_CKSUM);
	expect_dropped(icmp_frame(&spec, 13, 1, 1, "timestamp", false),
		       DROCE_DROP_ICMP_UNHANDLED);
	expect_dropped(icmp_frame(&spec, RTE_IP_ICMP_ECHO_REPLY, 1, 1, "r", false),
		       DROCE_DROP_ICMP_UNHANDLED);
	m = frame_alloc();
	put_ipv4(m, &spec, four, sizeof(four), 0);
	expect_dropped(m, DROCE_DROP_TRUNCATED);
}

static void
test_ring_full(void **state)
{
	static const struct rte_ether_addr bcast = {
		.addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	struct droce_counters now;
	struct rte_mbuf *out[64];
	unsigned int n, sent = 0;
	const unsigned int total = 1100;

	(void)state;
	snapshot();
	/* Workers poll, the control lcore does not: the ring fills up. */
	for (unsigned int i = 0; i < total; i++) {
		assert_int_equal(rte_ring_enqueue(rx_ring[0],
			arp_frame(RTE_ARP_OP_REQUEST, &peer_mac, ip("198.18.0.2"),
				  ip("198.18.0.1"), &bcast)), 0);
		if (i % 32 == 31)
			droce_worker_poll(stack, 0);
	}
	droce_worker_poll(stack, 0);
	droce_port_counters(stack, 0, &now);
	assert_true(now.drop[DROCE_DROP_RING_FULL] -
		    before.drop[DROCE_DROP_RING_FULL] >= total - 1024);
	/* What the ring held is answered, nothing lost silently. */
	while (droce_control_poll(stack) != 0)
		while ((n = collect(0, out, RTE_DIM(out))) != 0) {
			sent += n;
			free_all(out, n);
		}
	while ((n = collect(0, out, RTE_DIM(out))) != 0) {
		sent += n;
		free_all(out, n);
	}
	droce_port_counters(stack, 0, &now);
	assert_int_equal(sent + now.drop[DROCE_DROP_RING_FULL] -
			 before.drop[DROCE_DROP_RING_FULL], total);
}

static void
test_send_errors(void **state)
{
	struct droce_lcore_ctx *ctx = droce_control_ctx(stack);
	struct rte_mbuf *m, *out[8];
	const struct rte_arp_hdr *arp;
	unsigned int n;

	(void)state;
	/* Larger than the MTU. */
	snapshot();
	m = frame_alloc();
	frame_put(m, 1500);
	assert_int_equal(droce_udp_send(ctx, 0, m, ip("198.18.0.2"), 1, 2),
			 -EMSGSIZE);
	expect_drops(DROCE_DROP_MTU_EXCEEDED, 1);

	/* Off-link goes to the gateway: droce asks for the gateway's MAC. */
	m = frame_alloc();
	frame_put(m, 10);
	assert_int_equal(droce_udp_send(ctx, 0, m, ip("203.0.113.5"), 1, 2), 0);
	droce_control_poll(stack);
	n = collect(0, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	arp = as_arp(out[0]);
	assert_int_equal(arp->arp_data.arp_tip, ip("198.18.0.254"));
	free_all(out, n);

	/* Port 1 has no gateway. */
	m = frame_alloc();
	frame_put(m, 10);
	assert_int_equal(droce_udp_send(ctx, 1, m, ip("203.0.113.5"), 1, 2),
			 -ENETUNREACH);
	{
		struct droce_counters c1;

		droce_port_counters(stack, 1, &c1);
		assert_int_equal(c1.drop[DROCE_DROP_NO_ROUTE], 1);
	}
}

static void
test_second_port(void **state)
{
	struct ip_spec spec = to_us(IPPROTO_UDP);
	struct droce_counters c1;

	(void)state;
	/* One worker polls both ports; each port checks its own address.
	 * Port 1 is a /31: its peer has the address that would be the
	 * broadcast of a shorter prefix, and /31 has none (RFC 3021).
	 */
	spec.dst = ip("198.18.1.0");
	spec.src = ip("198.18.1.1");
	worker_handler_pkts = 0;
	{
		struct rte_mbuf *m = udp_frame(&spec, 1, 9000, "port one", 0,
					       false, false);
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, void *);

		eth->dst_addr = our_mac[1];
		inject_on(1, m);
	}
	assert_int_equal(worker_handler_pkts, 1);
	assert_string_equal(worker_handler_payload, "port one");
	droce_port_counters(stack, 1, &c1);
	assert_true(c1.rx_packets >= 1);
}

static void
test_counters_add_up(void **state)
{
	struct droce_counters port, q, l0, l1;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	droce_port_counters(stack, 0, &port);
	droce_queue_counters(stack, 0, 0, &q);
	droce_lcore_counters(stack, 0, &l0);
	droce_lcore_counters(stack, 1, &l1);
	/* Port 0's RX is its one queue; its TX is what both lcores sent. */
	assert_int_equal(port.rx_packets, q.rx_packets);
	assert_true(port.tx_packets > 0);
	assert_true(l0.tx_packets + l1.tx_packets >= port.tx_packets);
	assert_int_equal(l1.rx_packets >= q.rx_packets, 1);

	f = open_memstream(&buf, &len);
	assert_int_equal(droce_stack_write_stats_json(stack, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "\"ports\": ["));
	assert_non_null(strstr(buf, "\"ring_full\": "));
	assert_non_null(strstr(buf, "\"role\": \"worker\""));
	free(buf);
	f = open_memstream(&buf, &len);
	droce_stack_print_stats_line(stack, f);
	fclose(f);
	assert_non_null(strstr(buf, "port 0 rx"));
	assert_non_null(strstr(buf, "not_for_us"));
	free(buf);
	assert_string_equal(droce_drop_reason_name(DROCE_DROP_TX_FULL), "tx_full");
	assert_null(droce_drop_reason_name(DROCE_DROP_MAX));
	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++)
		assert_non_null(droce_drop_reason_name(r));
}

/* A second stack with arp.timeout=1 on its own ring port: entries older
 * than that are still used while droce asks again, and an entry whose
 * owner stops answering is removed.
 */
static void
test_arp_refresh(void **state)
{
	char *kv[] = { "port.0.device=net_ring_t2", "port.0.address=198.18.2.1/24",
		       "port.0.rxd=256", "port.0.txd=256", "arp.timeout=1",
		       "stats.period=0" };
	static const struct rte_ether_addr bcast = {
		.addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	struct droce_stack *main_stack = stack;
	struct droce_lcore_layout layout;
	struct rte_mbuf *out[16];
	char err[DROCE_ERR_LEN];
	static struct droce_conf conf;
	struct ip_spec spec = to_us(IPPROTO_ICMP);
	unsigned int n, arp_requests;
	uint64_t deadline;

	(void)state;
	make_ring_port(2, TX_RINGS);
	assert_int_equal(droce_conf_load(&conf, NULL, kv, RTE_DIM(kv), err,
					 sizeof(err)), 0);
	assert_int_equal(droce_lcores_layout(&conf, "test", &layout, err,
					     sizeof(err)), 0);
	stack = droce_stack_create(&conf, &layout, err, sizeof(err));
	assert_non_null(stack);
	droce_port_mac(stack, 0, &our_mac[0]);
	assert_int_equal(droce_stack_start(stack, false), 0);
	free_all(out, collect(2, out, RTE_DIM(out))); /* gratuitous ARP */

	spec.src = ip("198.18.2.2");
	spec.dst = ip("198.18.2.1");
	inject_on(2, arp_frame(RTE_ARP_OP_REQUEST, &peer_mac, spec.src,
			       spec.dst, &bcast));
	n = collect(2, out, RTE_DIM(out));
	assert_int_equal(n, 1); /* the reply */
	free_all(out, n);

	/* Older than arp.timeout: the echo reply goes at once, with a request. */
	rte_delay_ms(1100);
	inject_on(2, icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 1, 1, "stale", false));
	n = collect(2, out, RTE_DIM(out));
	assert_int_equal(n, 2);
	arp_requests = 0;
	for (unsigned int i = 0; i < n; i++) {
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(out[i], const void *);

		if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_ARP)) {
			assert_int_equal(as_arp(out[i])->arp_data.arp_tip, spec.src);
			arp_requests++;
		} else {
			assert_true(rte_is_same_ether_addr(&eth->dst_addr, &peer_mac));
		}
	}
	assert_int_equal(arp_requests, 1);
	free_all(out, n);

	/* Nobody answers: three more requests a second apart, and a second
	 * after the last the entry is gone; the next echo reply waits for a
	 * fresh resolution. The waits go by the clock (the timers do), so a
	 * busy machine that seldom runs this thread makes them no shorter:
	 * up to 30 s for the requests, then 2 s for the entry to go, in which
	 * no fifth request may come.
	 */
	deadline = rte_get_timer_cycles() + 30 * rte_get_timer_hz();
	for (bool all_sent = false; rte_get_timer_cycles() < deadline;) {
		droce_control_poll(stack);
		n = collect(2, out, RTE_DIM(out));
		arp_requests += n;
		free_all(out, n);
		if (!all_sent && arp_requests >= 4) {
			all_sent = true;
			deadline = rte_get_timer_cycles() + 2 * rte_get_timer_hz();
		}
		usleep(10000);
	}
	assert_int_equal(arp_requests, 4);
	inject_on(2, icmp_frame(&spec, RTE_IP_ICMP_ECHO_REQUEST, 1, 2, "gone", false));
	n = collect(2, out, RTE_DIM(out));
	assert_int_equal(n, 1);
	assert_int_equal(as_arp(out[0])->arp_data.arp_tip, spec.src);
	free_all(out, n);

	droce_stack_stop(stack);
	droce_stack_destroy(stack);
	stack = main_stack;
	droce_port_mac(stack, 0, &our_mac[0]);
}

static void
test_register_rules(void **state)
{
	(void)state;
	assert_int_equal(droce_udp_register(stack, 5000, DROCE_UDP_ON_WORKER,
					    worker_handler, NULL), -EBUSY);
}

/* A stack of its own on one port given by @kv; the test fails if none. */
static struct droce_stack *
other_stack(char **kv, unsigned int n)
{
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN];
	struct droce_stack *s = NULL;

	if (droce_conf_load(&conf, NULL, kv, (int)n, err, sizeof(err)) != 0 ||
	    droce_lcores_layout(&conf, "test", &layout, err, sizeof(err)) != 0 ||
	    (s = droce_stack_create(&conf, &layout, err, sizeof(err))) == NULL)
		fail_msg("%s", err);
	return s;
}

/* Workers polled by the control lcore's thread (droce_lcores_layout_here,
 * as in an application's EAL) share its lcore id: that lcore's counters
 * are all of theirs, every queue's.
 */
/* A stack on net_null @p device, two queues, two workers that this
 * thread polls (droce_lcores_layout_here()); not started.
 */
static struct droce_stack *
stack_polled_here(const char *device)
{
	char dev_kv[64];
	char *kv[] = { dev_kv, "port.0.address=198.18.8.1/24",
		       "port.0.queues=2", "port.0.rxd=256", "port.0.txd=256", "stats.period=0",
		       "worker.thread.groups=2", "worker.inline=yes" };
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN];
	struct droce_stack *s;

	snprintf(dev_kv, sizeof(dev_kv), "port.0.device=%s", device);
	if (droce_conf_load(&conf, NULL, kv, RTE_DIM(kv), err, sizeof(err)) != 0 ||
	    droce_lcores_layout_here(&conf, &layout, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	s = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (s == NULL)
		fail_msg("%s", err);
	return s;
}

static void
test_inline_workers_count_on_control_lcore(void **state)
{
	struct droce_counters port, lcore, q0, q1;
	struct droce_stack *s;

	(void)state;
	s = stack_polled_here("net_null_inline");
	assert_int_equal(droce_control_lcore(s), rte_lcore_id());
	assert_int_equal(droce_stack_start(s, false), 0);
	/* net_null's queues always have packets (not for us: dropped). */
	droce_worker_poll(s, 0);
	droce_worker_poll(s, 1);
	droce_port_counters(s, 0, &port);
	droce_queue_counters(s, 0, 0, &q0);
	droce_queue_counters(s, 0, 1, &q1);
	droce_lcore_counters(s, rte_lcore_id(), &lcore);
	assert_true(q0.rx_packets > 0 && q1.rx_packets > 0);
	assert_int_equal(lcore.rx_packets, q0.rx_packets + q1.rx_packets);
	assert_int_equal(lcore.rx_packets, port.rx_packets);
	droce_stack_stop(s);
	droce_stack_destroy(s);
}

/* droce_stack_poll() from a control hook, inside a round: refused. */
static int nested_poll = 1;

static unsigned int
poll_from_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	(void)ctx;
	nested_poll = droce_stack_poll(arg);
	return 0;
}

static void *
poll_from_other_thread(void *arg)
{
	return (void *)(intptr_t)droce_stack_poll(arg);
}

/* One droce_stack_poll() on the control lcore's thread runs each worker
 * it polls and the control round; anywhere else, and inside a round, it
 * is refused and runs nothing.
 */
static void
test_stack_poll_here(void **state)
{
	struct droce_counters q0, q1, after;
	struct droce_stack *s;
	pthread_t t;
	void *other;

	(void)state;
	s = stack_polled_here("net_null_poll");
	assert_int_equal(droce_control_hook_register(s, poll_from_hook, s), 0);
	assert_int_equal(droce_stack_start(s, false), 0);
	/* net_null's queues always have packets: one round takes both's. */
	assert_true(droce_stack_poll(s) > 0);
	assert_int_equal(nested_poll, -EBUSY);
	droce_queue_counters(s, 0, 0, &q0);
	droce_queue_counters(s, 0, 1, &q1);
	assert_true(q0.rx_packets > 0 && q1.rx_packets > 0);
	assert_int_equal(pthread_create(&t, NULL, poll_from_other_thread, s), 0);
	assert_int_equal(pthread_join(t, &other), 0);
	assert_int_equal((int)(intptr_t)other, -EBUSY);
	droce_queue_counters(s, 0, 0, &after);
	assert_int_equal(after.rx_packets, q0.rx_packets);
	droce_stack_stop(s);
	droce_stack_destroy(s);
}

/* The control hooks' order in a round: what each ran, by its argument. */
static char hooks_ran[8];
static unsigned int nb_hooks_ran;

static unsigned int
note_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	(void)ctx;
	if (nb_hooks_ran < sizeof(hooks_ran) - 1)
		hooks_ran[nb_hooks_ran++] = *(const char *)arg;
	return 0;
}

/* Hooks registered "last" run after all the others, whenever these came,
 * each kind in its order of registration; one unregistered runs no more;
 * none is taken once the stack runs.
 */
static void
test_control_hooks_last(void **state)
{
	static const char a = 'a', b = 'b', c = 'c', x = 'x', y = 'y';
	struct droce_stack *s;

	(void)state;
	s = stack_polled_here("net_null_hooks");
	assert_int_equal(droce_control_hook_register(s, note_hook, (void *)&a), 0);
	assert_int_equal(droce_control_hook_register_last(s, note_hook, (void *)&x), 0);
	assert_int_equal(droce_control_hook_register(s, note_hook, (void *)&b), 0);
	assert_int_equal(droce_control_hook_register_last(s, note_hook, (void *)&y), 0);
	assert_int_equal(droce_control_hook_register(s, note_hook, (void *)&c), 0);
	assert_int_equal(droce_control_hook_unregister(s, note_hook, (void *)&b), 0);
	assert_int_equal(droce_stack_start(s, false), 0);
	assert_int_equal(droce_control_hook_register_last(s, note_hook, (void *)&b), -EBUSY);
	memset(hooks_ran, 0, sizeof(hooks_ran));
	nb_hooks_ran = 0;
	assert_true(droce_stack_poll(s) >= 0);
	assert_string_equal(hooks_ran, "acxy");
	droce_stack_stop(s);
	droce_stack_destroy(s);
}

/* net_round_tsc() as a control hook reads it twice, the clock moving
 * between the two reads.
 */
static uint64_t hook_now[2];

static void
wait_ticks(uint64_t ticks)
{
	uint64_t until = rte_get_timer_cycles() + ticks;

	while (rte_get_timer_cycles() < until)
		rte_pause();
}

static unsigned int
now_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	(void)arg;
	hook_now[0] = net_round_tsc(ctx);
	wait_ticks(1000);
	hook_now[1] = net_round_tsc(ctx);
	return 0;
}

/* A round reads the TSC once, when it first asks, and not before it
 * started: a read between two rounds (ARP's, from the lcore's own
 * thread) does not stand for the next one.
 */
static void
test_round_tsc(void **state)
{
	struct droce_lcore_ctx *ctx;
	struct droce_stack *s;
	uint64_t between;

	(void)state;
	s = stack_polled_here("net_null_now");
	ctx = droce_control_ctx(s);
	assert_int_equal(droce_control_hook_register(s, now_hook, NULL), 0);
	assert_int_equal(droce_stack_start(s, false), 0);
	assert_true(droce_stack_poll(s) >= 0);
	assert_int_equal(hook_now[1], hook_now[0]);
	between = net_round_tsc(ctx);
	assert_true(between > hook_now[1]);
	wait_ticks(1000);
	assert_int_equal(net_round_tsc(ctx), between);
	assert_true(droce_stack_poll(s) >= 0);
	assert_true(hook_now[0] >= between + 1000);
	assert_int_equal(hook_now[1], hook_now[0]);
	droce_stack_stop(s);
	droce_stack_destroy(s);
}

/* What the lazy-frame hook sends in the next round: lazy frames, then
 * urgent ones, then lazy IPv4 frames to a neighbour ARP does not know.
 */
static unsigned int hook_lazy, hook_urgent, hook_lazy_unknown;

static struct rte_mbuf *
small_frame(struct droce_stack *s)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(droce_port_pool(s, 0));

	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, 60));
	memset(rte_pktmbuf_mtod(m, void *), 0, 60);
	return m;
}

static unsigned int
send_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	struct droce_stack *s = arg;

	for (; hook_lazy != 0; hook_lazy--)
		droce_tx_lazy(ctx, 0, small_frame(s));
	for (; hook_urgent != 0; hook_urgent--)
		droce_tx(ctx, 0, small_frame(s));
	for (; hook_lazy_unknown != 0; hook_lazy_unknown--)
		droce_eth_send_lazy(ctx, 0, small_frame(s), ip("198.18.8.77"));
	return 0;
}

/* Frames the device took since the last call. */
static uint64_t
device_took(uint16_t port_id)
{
	static uint64_t seen;
	struct rte_eth_stats st;
	uint64_t n;

	assert_int_equal(rte_eth_stats_get(port_id, &st), 0);
	n = st.opackets - seen;
	seen = st.opackets;
	return n;
}

/* A round that buffered lazy frames alone ends without a flush; the next
 * round's start flushes them, as does an urgent frame at a round's end or
 * a droce_tx_flush() between rounds. A lazy frame that ARP holds leaves
 * later; the request ARP sends for it is not lazy. A round that the
 * application's thread runs (droce_stack_poll()) leaves none behind, and
 * the stack's stop sends what is left.
 */
static void
test_lazy_frames_wait(void **state)
{
	struct droce_stack *s;
	struct droce_lcore_ctx *ctx;
	uint16_t port_id;

	(void)state;
	s = stack_polled_here("net_null_lazy");
	assert_int_equal(rte_eth_dev_get_port_by_name("net_null_lazy", &port_id), 0);
	assert_int_equal(droce_control_hook_register(s, send_hook, s), 0);
	assert_int_equal(droce_stack_start(s, false), 0);
	ctx = droce_control_ctx(s);
	droce_control_poll(s);
	device_took(port_id);

	hook_lazy = 2;
	droce_control_poll(s);
	assert_int_equal(device_took(port_id), 0);
	droce_control_poll(s);
	assert_int_equal(device_took(port_id), 2);
	droce_control_poll(s);
	assert_int_equal(device_took(port_id), 0);

	hook_lazy = 1;
	hook_urgent = 1;
	droce_control_poll(s);
	assert_int_equal(device_took(port_id), 2);

	hook_lazy = 1;
	droce_control_poll(s);
	assert_int_equal(device_took(port_id), 0);
	droce_tx_flush(ctx);
	assert_int_equal(device_took(port_id), 1);

	/* ARP holds the frame; its request is not lazy. */
	hook_lazy_unknown = 1;
	droce_control_poll(s);
	assert_int_equal(device_took(port_id), 1);

	hook_lazy = 1;
	assert_true(droce_stack_poll(s) >= 0);
	assert_int_equal(device_took(port_id), 1);

	hook_lazy = 1;          /* sent in the stop's last round */
	droce_stack_stop_polling(s);
	assert_int_equal(device_took(port_id), 1);
	droce_stack_stop(s);
	droce_stack_destroy(s);
}

/* A port that is not started, before the stack starts or after it
 * stopped, takes no packet: each is freed and counted as port_stopped,
 * never handed to the device (whose stand-in burst would log an error).
 */
static void
test_stopped_port_drops(void **state)
{
	struct droce_counters c0, c1;
	struct droce_lcore_ctx *ctx;
	struct droce_stack *s;
	uint16_t port_id;
	unsigned int in_use;

	(void)state;
	s = stack_polled_here("net_null_stopped");
	assert_int_equal(rte_eth_dev_get_port_by_name("net_null_stopped", &port_id), 0);
	ctx = droce_control_ctx(s);
	in_use = rte_mempool_in_use_count(droce_port_pool(s, 0));
	droce_port_counters(s, 0, &c0);
	droce_tx(ctx, 0, small_frame(s));
	droce_tx_flush(ctx);
	droce_port_counters(s, 0, &c1);
	assert_int_equal(c1.drop[DROCE_DROP_PORT_STOPPED] - c0.drop[DROCE_DROP_PORT_STOPPED], 1);
	assert_int_equal(c1.tx_packets - c0.tx_packets, 0);
	assert_int_equal(rte_mempool_in_use_count(droce_port_pool(s, 0)), in_use);

	assert_int_equal(droce_stack_start(s, false), 0);
	assert_true(droce_stack_poll(s) >= 0);
	device_took(port_id);
	droce_port_counters(s, 0, &c0);
	droce_tx(ctx, 0, small_frame(s));
	droce_tx_flush(ctx);
	assert_int_equal(device_took(port_id), 1);
	droce_port_counters(s, 0, &c1);
	assert_int_equal(c1.tx_packets - c0.tx_packets, 1);
	assert_int_equal(c1.drop[DROCE_DROP_PORT_STOPPED], c0.drop[DROCE_DROP_PORT_STOPPED]);

	droce_stack_stop(s);
	in_use = rte_mempool_in_use_count(droce_port_pool(s, 0));
	droce_port_counters(s, 0, &c0);
	droce_tx_lazy(ctx, 0, small_frame(s));
	droce_tx(ctx, 0, small_frame(s));
	droce_tx_flush(ctx);
	droce_port_counters(s, 0, &c1);
	assert_int_equal(c1.drop[DROCE_DROP_PORT_STOPPED] - c0.drop[DROCE_DROP_PORT_STOPPED], 2);
	assert_int_equal(c1.tx_packets - c0.tx_packets, 0);
	assert_int_equal(c1.drop[DROCE_DROP_TX_FULL], c0.drop[DROCE_DROP_TX_FULL]);
	assert_int_equal(rte_mempool_in_use_count(droce_port_pool(s, 0)), in_use);
	assert_int_equal(device_took(port_id), 0);
	droce_stack_destroy(s);
}

/* port.N.mac goes on the device before it starts and is the port's MAC
 * from then on. net_null takes any address; net_ring has no mac_addr_set
 * at all, and droce answers for the address itself.
 */
static void
test_configured_mac(void **state)
{
	static const struct rte_ether_addr want = {
		.addr_bytes = { 0x02, 0x00, 0x00, 0x00, 0x07, 0x01 } };
	char *on_null[] = { "port.0.device=net_null_mac", "port.0.address=198.18.7.1/24",
			    "port.0.rxd=256", "port.0.txd=256", "stats.period=0",
			    "port.0.mac=02:00:00:00:07:01" };
	char *on_ring[] = { "port.0.device=net_ring_mac", "port.0.address=198.18.7.1/24",
			    "port.0.rxd=256", "port.0.txd=256", "stats.period=0",
			    "port.0.mac=02:00:00:00:07:01" };
	struct rte_ring *rx, *tx[TX_RINGS];
	struct rte_ether_addr mac, dev_mac;
	struct droce_stack *s;
	uint16_t port_id;

	(void)state;
	s = other_stack(on_null, RTE_DIM(on_null));
	droce_port_mac(s, 0, &mac);
	assert_true(rte_is_same_ether_addr(&mac, &want));
	assert_int_equal(rte_eth_dev_get_port_by_name("net_null_mac", &port_id), 0);
	assert_int_equal(rte_eth_macaddr_get(port_id, &dev_mac), 0);
	assert_true(rte_is_same_ether_addr(&dev_mac, &want));
	droce_stack_destroy(s);

	rx = rte_ring_create("ring_mac_rx", 256, SOCKET_ID_ANY, 0);
	tx[0] = rte_ring_create("ring_mac_tx0", 256, SOCKET_ID_ANY, 0);
	tx[1] = rte_ring_create("ring_mac_tx1", 256, SOCKET_ID_ANY, 0);
	assert_true(rte_eth_from_rings("mac", &rx, 1, tx, TX_RINGS,
				       SOCKET_ID_ANY) >= 0);
	s = other_stack(on_ring, RTE_DIM(on_ring));
	droce_port_mac(s, 0, &mac);
	assert_true(rte_is_same_ether_addr(&mac, &want));
	assert_int_equal(droce_stack_start(s, false), 0);
	droce_stack_destroy(s);
}

/* droce_stack_quiesce() on a worker's own lcore, while that worker is in
 * its loop (a stream closed from its own hook): its round is the caller's,
 * so the call returns instead of waiting for itself.
 */
static atomic_bool quiesced;

static int
quiesce_on_worker(void *arg)
{
	droce_stack_quiesce(arg);
	atomic_store(&quiesced, true);
	return 0;
}

static void
test_quiesce_on_own_worker(void **state)
{
	struct droce_lcore_ctx *w = stack->worker[0];
	bool returned;

	(void)state;
	atomic_store(&quiesced, false);
	__atomic_store_n(&w->in_loop, true, __ATOMIC_RELEASE);   /* as worker_main */
	assert_int_equal(rte_eal_remote_launch(quiesce_on_worker, stack, w->lcore_id), 0);
	for (int i = 0; i < 2000 && !atomic_load(&quiesced); i++)
		usleep(1000);
	returned = atomic_load(&quiesced);
	/* Let a caller stuck on its own round go before failing. */
	__atomic_store_n(&w->in_loop, false, __ATOMIC_RELEASE);
	rte_eal_wait_lcore(w->lcore_id);
	assert_true(returned);
}

/* droce_stack_quiesce() from another thread waits for the round each
 * polling lcore is in to end: a worker held inside its hook keeps it
 * waiting, and the hook's return (the round's end) lets it go.
 */
static atomic_bool hook_hold, hook_inside, quiesce_returned;

static unsigned int
holding_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	(void)ctx;
	(void)arg;
	if (!atomic_load(&hook_hold))
		return 0;
	atomic_store(&hook_inside, true);
	for (int i = 0; i < 4000 && atomic_load(&hook_hold); i++)
		usleep(500);    /* bounded: a failed test cannot hang here */
	return 0;
}

static void *
quiesce_thread(void *arg)
{
	droce_stack_quiesce(arg);
	atomic_store(&quiesce_returned, true);
	return NULL;
}

static void
test_quiesce_waits_for_round(void **state)
{
	char *kv[] = { "port.0.device=net_null_quiesce", "port.0.address=198.18.9.1/24",
		       "port.0.rxd=256", "port.0.txd=256", "stats.period=0" };
	struct droce_stack *s;
	pthread_t t;
	bool early;

	(void)state;
	s = other_stack(kv, RTE_DIM(kv));
	atomic_store(&hook_hold, true);
	atomic_store(&hook_inside, false);
	atomic_store(&quiesce_returned, false);
	assert_int_equal(droce_worker_hook_register(s, holding_hook, NULL), 0);
	assert_int_equal(droce_stack_start(s, true), 0);
	for (int i = 0; i < 2000 && !atomic_load(&hook_inside); i++)
		usleep(1000);
	assert_true(atomic_load(&hook_inside));
	assert_int_equal(pthread_create(&t, NULL, quiesce_thread, s), 0);
	usleep(50000);
	early = atomic_load(&quiesce_returned);
	atomic_store(&hook_hold, false);
	for (int i = 0; i < 2000 && !atomic_load(&quiesce_returned); i++)
		usleep(1000);
	assert_true(atomic_load(&quiesce_returned));
	pthread_join(t, NULL);
	droce_stack_stop(s);
	droce_stack_destroy(s);
	assert_false(early);
}

/* droce_stack_stop_polling(): the launched worker returns and polls no
 * more, and the port stays started (net_null's link up) until
 * droce_stack_stop().
 */
static void
test_stop_polling_leaves_ports_started(void **state)
{
	char *kv[] = { "port.0.device=net_null_part", "port.0.address=198.18.9.1/24",
		       "port.0.rxd=256", "port.0.txd=256", "stats.period=0" };
	struct droce_counters before = { 0 }, after;
	struct rte_eth_link link;
	struct droce_stack *s;
	uint16_t port_id;

	(void)state;
	s = other_stack(kv, RTE_DIM(kv));
	assert_int_equal(rte_eth_dev_get_port_by_name("net_null_part", &port_id), 0);
	assert_int_equal(droce_stack_start(s, true), 0);
	/* net_null's queues always have packets: the worker counts them. */
	for (int i = 0; i < 2000 && before.rx_packets == 0; i++) {
		usleep(1000);
		droce_port_counters(s, 0, &before);
	}
	assert_true(before.rx_packets > 0);
	droce_stack_stop_polling(s);
	assert_int_equal(rte_eal_get_lcore_state(s->worker[0]->lcore_id), WAIT);
	droce_port_counters(s, 0, &before);
	usleep(20000);
	droce_port_counters(s, 0, &after);
	assert_int_equal(after.rx_packets, before.rx_packets);
	assert_int_equal(rte_eth_link_get_nowait(port_id, &link), 0);
	assert_int_equal(link.link_status, RTE_ETH_LINK_UP);
	droce_stack_stop(s);
	assert_int_equal(rte_eth_link_get_nowait(port_id, &link), 0);
	assert_int_equal(link.link_status, RTE_ETH_LINK_DOWN);
	droce_stack_destroy(s);
}

static void
test_create_errors(void **state)
{
	struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN];
	struct rte_ring *one_tx;
	char *bad_device[] = { "port.0.device=no_such_dev0",
			       "port.0.address=198.18.5.1/24" };
	char *one_queue[] = { "port.0.device=net_ring_small",
			      "port.0.address=198.18.5.1/24" };
	char *many_rxq[] = { "port.0.device=net_ring_small",
			     "port.0.address=198.18.5.1/24", "port.0.queues=4" };

	(void)state;
	assert_int_equal(droce_conf_load(&conf, NULL, bad_device, 2, err,
					 sizeof(err)), 0);
	assert_int_equal(droce_lcores_layout(&conf, "test", &layout, err,
					     sizeof(err)), 0);
	assert_null(droce_stack_create(&conf, &layout, err, sizeof(err)));
	assert_non_null(strstr(err, "command line 'port.0.device=no_such_dev0'"));
	assert_non_null(strstr(err, "no such ethdev"));
	assert_non_null(strstr(err, "net_ring_t0"));

	one_tx = rte_ring_create("ring_small_rx", 64, SOCKET_ID_ANY, 0);
	assert_true(rte_eth_from_rings("small", &one_tx, 1, &one_tx, 1,
				       SOCKET_ID_ANY) >= 0);
	assert_int_equal(droce_conf_load(&conf, NULL, one_queue, 2, err,
					 sizeof(err)), 0);
	assert_null(droce_stack_create(&conf, &layout, err, sizeof(err)));
	assert_non_null(strstr(err, "has at most 1 TX queue but droce needs 2"));

	assert_int_equal(droce_conf_load(&conf, NULL, many_rxq, 3, err,
					 sizeof(err)), 0);
	assert_null(droce_stack_create(&conf, &layout, err, sizeof(err)));
	assert_non_null(strstr(err, "port.0.queues = 4: device net_ring_small has at most 1 RX queue"));
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gratuitous_arp),
		cmocka_unit_test(test_arp_request_gets_reply),
		cmocka_unit_test(test_arp_not_for_us),
		cmocka_unit_test(test_arp_malformed),
		cmocka_unit_test(test_icmp_echo),
		cmocka_unit_test(test_icmp_echo_waits_for_arp),
		cmocka_unit_test(test_arp_unresolved),
		cmocka_unit_test(test_arp_hostile_neighbours),
		cmocka_unit_test(test_ethernet_and_ipv4_malformed),
		cmocka_unit_test(test_udp_to_worker_handler),
		cmocka_unit_test(test_udp_malformed),
		cmocka_unit_test(test_flow_memo_judges_as_classify),
		cmocka_unit_test(test_flow_memo_judges_lengths),
		cmocka_unit_test(test_flow_memo_keeps_nic_verdicts),
		cmocka_unit_test(test_worker_handler_ip_options),
		cmocka_unit_test(test_free_received),
		cmocka_unit_test(test_udp_echo),
		cmocka_unit_test(test_udp_echo_pad_in_two_segments),
		cmocka_unit_test(test_udp_cksum_offload_flags),
		cmocka_unit_test(test_icmp_malformed),
		cmocka_unit_test(test_ring_full),
		cmocka_unit_test(test_send_errors),
		cmocka_unit_test(test_second_port),
		cmocka_unit_test(test_counters_add_up),
		cmocka_unit_test(test_arp_refresh),
		cmocka_unit_test(test_inline_workers_count_on_control_lcore),
		cmocka_unit_test(test_stack_poll_here),
		cmocka_unit_test(test_control_hooks_last),
		cmocka_unit_test(test_round_tsc),
		cmocka_unit_test(test_lazy_frames_wait),
		cmocka_unit_test(test_stopped_port_drops),
		cmocka_unit_test(test_register_rules),
		cmocka_unit_test(test_quiesce_on_own_worker),
		cmocka_unit_test(test_quiesce_waits_for_round),
		cmocka_unit_test(test_stop_polling_leaves_ports_started),
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_configured_mac),
	};
	int ret;

	(void)argc;
	if (droce_test_eal_init_stepped(argv[0], "net", "256") != 0)
		return 1;
	ret = cmocka_run_group_tests(tests, setup, teardown);
	droce_test_eal_cleanup();
	return ret;
}
