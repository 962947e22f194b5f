/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * What a worker does with each received packet, top to bottom:
 * Ethernet -> IPv4 checks -> UDP checks -> the UDP port's handler.
 * ARP and ICMP, and UDP for control handlers, go to the control lcore.
 * Everything else is dropped under the reason it failed, on the RX queue
 * it came from. Headers must lie in the first segment: droce's mbufs hold
 * a whole MTU-sized frame, so only a malformed packet fails that.
 */

#include <string.h>

#include <rte_prefetch.h>

#include "net_private.h"

/* The packet's way, decided by classify_one(). */
enum verdict {
	VERDICT_DROP,
	VERDICT_CONTROL,
	VERDICT_HANDLER,
};

struct classify_out {
	enum droce_drop_reason reason; /* VERDICT_DROP */
	uint8_t handler;               /* VERDICT_HANDLER */
	bool roce;                     /* UDP to 4791, whatever the verdict */
};

#define PTYPE_ARP (RTE_PTYPE_L2_ETHER_ARP)
#define PTYPE_UDP (RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | RTE_PTYPE_L4_UDP)
#define PTYPE_ICMP (RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | RTE_PTYPE_L4_ICMP)

static inline enum verdict
drop(struct classify_out *out, enum droce_drop_reason reason)
{
	out->reason = reason;
	return VERDICT_DROP;
}

/* Header fields in host order. DPDK 22.11's rte_be_to_cpu_16/32 swap
 * bytes in inline assembly, which the compiler can neither fold into a
 * compare nor schedule; the builtins it can.
 */
static inline uint16_t
be16(rte_be16_t v)
{
	return __builtin_bswap16(v);
}

static inline uint32_t
be32(rte_be32_t v)
{
	return __builtin_bswap32(v);
}

/* Sources no host may claim: this network, loopback, multicast, class E,
 * our subnet's broadcast address, and our own address (a loop or a spoof).
 */
static inline bool
bad_source(const struct net_port *p, rte_be32_t src)
{
	uint32_t a = be32(src);

	/* 0/8 wraps to the top and joins 224/3 in one compare. */
	return a - 0x01000000u >= 0xdf000000u || (a >> 24) == 127 ||
	       src == p->addr || src == p->broadcast;
}

/* The ones' complement sum of a header with a right checksum is 0xffff.
 * The common 20-byte header is summed as two 64-bit words and a 32-bit
 * one with end-around carries, folded at the end (RFC 1071: the sum may
 * be taken in any word size and either byte order); DPDK's rte_raw_cksum()
 * walks it 16 bits at a time. Headers with options take that general way.
 */
static inline bool
ipv4_header_sum_ok(const struct rte_ipv4_hdr *ip)
{
	uint64_t w0, w1, sum;
	uint32_t w2;

	if (ip->version_ihl != RTE_IPV4_VHL_DEF)
		return rte_ipv4_cksum(ip) == 0;
	memcpy(&w0, ip, sizeof(w0));
	memcpy(&w1, (const uint8_t *)ip + 8, sizeof(w1));
	memcpy(&w2, (const uint8_t *)ip + 16, sizeof(w2));
	sum = w0 + w1;
	sum += sum < w1;
	sum += w2;
	sum += sum < w2;
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static inline bool
ip_cksum_bad(const struct net_port *p, const struct rte_mbuf *m,
	     const struct rte_ipv4_hdr *ip)
{
	if (p->ip_cksum_offload) {
		uint64_t f = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;

		if (f == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
			return false;
		if (f == RTE_MBUF_F_RX_IP_CKSUM_BAD)
			return true;
	}
	return !ipv4_header_sum_ok(ip);
}

static __rte_always_inline bool
udp_cksum_bad(const struct net_port *p, const struct rte_mbuf *m,
	      const struct rte_ipv4_hdr *ip, const struct rte_udp_hdr *udp)
{
	if (udp->dgram_cksum == 0) /* the sender computed none */
		return false;
	if (p->l4_cksum_offload) {
		uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;

		/* NONE: the data is verified, the checksum field is not
		 * finished (virtio hands over partial checksums so).
		 */
		if (f == RTE_MBUF_F_RX_L4_CKSUM_GOOD || f == RTE_MBUF_F_RX_L4_CKSUM_NONE)
			return false;
		if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD)
			return true;
	}
	if (rte_pktmbuf_is_contiguous(m))
		return rte_ipv4_udptcp_cksum_verify(ip, udp) != 0;
	return rte_ipv4_udptcp_cksum_mbuf_verify(m, ip, (uint16_t)(RTE_ETHER_HDR_LEN +
							 rte_ipv4_hdr_len(ip))) != 0;
}

/* net_control_input() and net_icmp_input() find the headers by these.
 * Worker handlers go without: the store would take the mbuf's second
 * line (droce_udp_handler_t).
 */
static inline void
set_header_lengths(struct rte_mbuf *m, uint16_t ihl)
{
	/* Both lengths in one store, not two read-modify-writes of bit
	 * fields; the other offload fields mean nothing on receive.
	 */
	m->tx_offload = rte_mbuf_tx_offload(RTE_ETHER_HDR_LEN, ihl, 0, 0, 0, 0, 0);
}

static inline enum verdict
classify_udp(const struct droce_stack *s, const struct net_port *p,
	     struct rte_mbuf *m, const struct rte_ipv4_hdr *ip, uint16_t ihl,
	     uint16_t l4_len, struct classify_out *out)
{
	const struct rte_udp_hdr *udp;
	uint8_t h;

	if (l4_len < sizeof(*udp) ||
	    rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + ihl + sizeof(*udp))
		return drop(out, DROCE_DROP_TRUNCATED);
	udp = (const struct rte_udp_hdr *)((const uint8_t *)ip + ihl);
	/* A UDP length that disagrees with the IP payload is a lie either way. */
	if (be16(udp->dgram_len) != l4_len)
		return drop(out, DROCE_DROP_UDP_BAD_LENGTH);
	out->roce = udp->dst_port == RTE_BE16(4791);
	if (udp_cksum_bad(p, m, ip, udp))
		return drop(out, DROCE_DROP_L4_BAD_CKSUM);
	h = s->udp_map[be16(udp->dst_port)];
	if (h == 0)
		return drop(out, DROCE_DROP_UDP_NO_HANDLER);
	m->packet_type = PTYPE_UDP;
	out->handler = (uint8_t)(h - 1);
	if (s->udp_handler[h - 1].where == DROCE_UDP_ON_WORKER)
		return VERDICT_HANDLER;
	set_header_lengths(m, ihl);
	return VERDICT_CONTROL;
}

/* Cut @p m to its first @p len bytes. The pad may spread over segments,
 * which rte_pktmbuf_trim() (the last segment only) does not reach.
 */
static void
trim_to(struct rte_mbuf *m, uint32_t len)
{
	struct rte_mbuf *seg = m;
	uint32_t left = len;
	uint16_t segs = 1;

	if (rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_pkt_len(m) - len)) == 0)
		return;
	while (seg->data_len < left) {
		left -= seg->data_len;
		seg = seg->next;
		segs++;
	}
	seg->data_len = (uint16_t)left;
	rte_pktmbuf_free(seg->next);
	seg->next = NULL;
	m->nb_segs = segs;
	m->pkt_len = len;
}

static inline enum verdict
classify_ipv4(const struct droce_stack *s, const struct net_port *p,
	      struct rte_mbuf *m, struct classify_out *out)
{
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m,
			const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN);
	uint32_t in_frame = rte_pktmbuf_pkt_len(m) - RTE_ETHER_HDR_LEN;
	uint16_t ihl, total;

	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + sizeof(*ip))
		return drop(out, DROCE_DROP_TRUNCATED);
	if (likely(ip->version_ihl == RTE_IPV4_VHL_DEF)) {
		ihl = sizeof(*ip);      /* no options: one compare */
	} else {
		if ((ip->version_ihl >> 4) != 4)
			return drop(out, DROCE_DROP_IP_BAD_HEADER);
		ihl = (uint16_t)((ip->version_ihl & RTE_IPV4_HDR_IHL_MASK) *
				 RTE_IPV4_IHL_MULTIPLIER);
		if (ihl < sizeof(*ip))
			return drop(out, DROCE_DROP_IP_BAD_HEADER);
		if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + ihl)
			return drop(out, DROCE_DROP_TRUNCATED);
	}
	total = be16(ip->total_length);
	if (total < ihl)
		return drop(out, DROCE_DROP_IP_BAD_HEADER);
	if (total > in_frame)
		return drop(out, DROCE_DROP_TRUNCATED);
	if (ip_cksum_bad(p, m, ip))
		return drop(out, DROCE_DROP_IP_BAD_CKSUM);
	if ((ip->fragment_offset &
	     RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0)
		return drop(out, DROCE_DROP_IP_FRAGMENT);
	/* No TTL check: a host takes what reaches it (RFC 1122 3.2.1.7). */
	if (ip->dst_addr != p->addr)
		return drop(out, DROCE_DROP_NOT_FOR_US);
	if (bad_source(p, ip->src_addr))
		return drop(out, DROCE_DROP_IP_BAD_SOURCE);
	/* Ethernet pads short frames; the IP length is the truth. */
	if (in_frame > total)
		trim_to(m, RTE_ETHER_HDR_LEN + total);
	switch (ip->next_proto_id) {
	case IPPROTO_UDP:
		return classify_udp(s, p, m, ip, ihl, (uint16_t)(total - ihl), out);
	case IPPROTO_ICMP:
		m->packet_type = PTYPE_ICMP;
		set_header_lengths(m, ihl);
		return VERDICT_CONTROL;
	default:
		return drop(out, DROCE_DROP_UNKNOWN_IP_PROTO);
	}
}

/* rte_is_same_ether_addr() ORs three 16-bit differences; two loads
 * (4 and 2 bytes) do.
 */
static inline bool
same_mac(const struct rte_ether_addr *a, const struct rte_ether_addr *b)
{
	uint32_t a4, b4;
	uint16_t a2, b2;

	memcpy(&a4, a->addr_bytes, 4);
	memcpy(&b4, b->addr_bytes, 4);
	memcpy(&a2, a->addr_bytes + 4, 2);
	memcpy(&b2, b->addr_bytes + 4, 2);
	return ((a4 ^ b4) | (uint32_t)(a2 ^ b2)) == 0;
}

static inline enum verdict
classify_one(const struct droce_stack *s, const struct net_port *p,
	     struct rte_mbuf *m, struct classify_out *out)
{
	const struct rte_ether_hdr *eth;

	out->roce = false;
	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN)
		return drop(out, DROCE_DROP_TRUNCATED);
	eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	if (!same_mac(&eth->dst_addr, &p->mac) &&
	    !rte_is_broadcast_ether_addr(&eth->dst_addr))
		return drop(out, DROCE_DROP_NOT_FOR_US);
	m->port = p->index;
	switch (eth->ether_type) {
	case RTE_BE16(RTE_ETHER_TYPE_IPV4):
		return classify_ipv4(s, p, m, out);
	case RTE_BE16(RTE_ETHER_TYPE_ARP):
		m->packet_type = PTYPE_ARP;
		return VERDICT_CONTROL;
	default:
		return drop(out, DROCE_DROP_UNKNOWN_ETHERTYPE);
	}
}

/*
 * A burst is mostly one flow's packets. Once a UDP packet of a header
 * without options went to a worker's handler, a packet whose first 40
 * bytes equal its bytes wherever two packets of one flow agree (the
 * destination MAC, EtherType, version and header length, fragment bits,
 * protocol, addresses, destination port) passed every check that looks
 * at those bytes; only the fields that change from packet to packet are
 * left to check: lengths and checksums. A packet that differs, or fails
 * one of those, takes classify_one(), which judges it as before.
 *
 * A sensor's packets of one size agree in all 40 bytes (its IP ID is 0):
 * then the IP header is the one whose checksum was found right, and a
 * frame of the same length has the same lengths to check, so only the
 * UDP checksum, which covers the payload, is left.
 */
#define FLOW_WORDS 5

struct flow_memo {
	uint64_t hdr[FLOW_WORDS];
	/* After classify_one()'s trim: a frame that came padded (a UDP
	 * payload under 18 bytes) never equals it and takes the flow path.
	 */
	uint32_t pkt_len;
	uint8_t handler;
	bool roce;
	bool valid;
};

static const union {
	uint8_t bytes[FLOW_WORDS * 8];
	uint64_t words[FLOW_WORDS];
} flow_mask = { .bytes = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0,       /* dst MAC, src MAC */
	0, 0, 0, 0, 0xff, 0xff, 0xff, 0,                /* type, version/IHL, TOS */
	0, 0, 0, 0, 0xff, 0xff, 0, 0xff,                /* length, ID, fragment, TTL, proto */
	0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,       /* checksum, src, dst */
	0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0,             /* dst, src port, dst port, length */
} };

#define FLOW_HDR_LEN (RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + \
		      sizeof(struct rte_udp_hdr))

static inline uint64_t
load64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

/* @p m, which went to a worker's handler, becomes the burst's memo. */
static inline void
flow_memo_set(struct flow_memo *memo, const struct rte_mbuf *m,
	      const struct classify_out *out)
{
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);

	memo->valid = b[RTE_ETHER_HDR_LEN] == RTE_IPV4_VHL_DEF;
	if (!memo->valid)
		return;
	for (unsigned int k = 0; k < FLOW_WORDS; k++)
		memo->hdr[k] = load64(b + 8 * k);
	memo->pkt_len = rte_pktmbuf_pkt_len(m);
	memo->handler = out->handler;
	memo->roce = out->roce;
}

/* @p m, of the memo's flow, as classify_one() leaves a packet for a
 * worker's handler.
 */
static inline void
flow_memo_ready(const struct net_port *p, struct rte_mbuf *m)
{
	m->port = p->index;
	m->packet_type = PTYPE_UDP;
}

/* Whether @p m is of the memo's flow and its own fields pass; if so it
 * is made ready for the handler as classify_one() would.
 */
static inline bool
flow_memo_take(const struct net_port *p, struct rte_mbuf *m,
	       const struct flow_memo *memo)
{
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(b + RTE_ETHER_HDR_LEN);
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);
	uint32_t in_frame = rte_pktmbuf_pkt_len(m) - RTE_ETHER_HDR_LEN;
	uint64_t diff[FLOW_WORDS], any = 0, flow = 0;
	uint16_t total;

	if (rte_pktmbuf_data_len(m) < FLOW_HDR_LEN)
		return false;
	for (unsigned int k = 0; k < FLOW_WORDS; k++) {
		diff[k] = load64(b + 8 * k) ^ memo->hdr[k];
		any |= diff[k];
	}
	/* The same bytes as the memo's: only a NIC's own verdict on the IP
	 * checksum (which may be BAD for no reason these bytes show) and
	 * the UDP checksum can differ.
	 */
	if (any == 0 && rte_pktmbuf_pkt_len(m) == memo->pkt_len &&
	    !(p->ip_cksum_offload && (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) ==
	      RTE_MBUF_F_RX_IP_CKSUM_BAD)) {
		if (udp_cksum_bad(p, m, ip, udp))
			return false;
		flow_memo_ready(p, m);
		return true;
	}
	for (unsigned int k = 0; k < FLOW_WORDS; k++)
		flow |= diff[k] & flow_mask.words[k];
	if (flow != 0)
		return false;
	total = be16(ip->total_length);
	if (total < sizeof(*ip) + sizeof(*udp) || total > in_frame ||
	    be16(udp->dgram_len) != total - sizeof(*ip) ||
	    ip_cksum_bad(p, m, ip) || udp_cksum_bad(p, m, ip, udp))
		return false;
	if (in_frame > total)
		trim_to(m, RTE_ETHER_HDR_LEN + total);
	flow_memo_ready(p, m);
	return true;
}

/* How far ahead the loop prefetches mbufs, and frame headers (which
 * need their mbuf's first line for where they are).
 */
#define MBUF_AHEAD 8
#define PREFETCH_AHEAD 2

/* One call per handler with its packets, in arrival order. A burst rarely
 * holds more than one handler's packets: then no copy.
 */
static void
run_handlers(struct droce_lcore_ctx *ctx, const struct net_port *p,
	     uint16_t queue, struct rte_mbuf **pkts, const uint8_t *handler_of,
	     uint16_t n, uint32_t used)
{
	const struct net_udp_handler *handlers = ctx->stack->udp_handler;

	if ((used & (used - 1)) == 0) {
		const struct net_udp_handler *uh = &handlers[handler_of[0]];

		uh->fn(ctx, p->index, queue, pkts, n, uh->arg);
		return;
	}
	while (used != 0) {
		unsigned int h = (unsigned int)__builtin_ctz(used);
		struct rte_mbuf *mine[NET_BURST];
		uint16_t nb_mine = 0;

		used &= used - 1;
		for (uint16_t i = 0; i < n; i++)
			if (handler_of[i] == h)
				mine[nb_mine++] = pkts[i];
		handlers[h].fn(ctx, p->index, queue, mine, nb_mine,
			       handlers[h].arg);
	}
}

static void
to_control(struct droce_lcore_ctx *ctx, struct net_rxq *rxq,
	   struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent = (uint16_t)rte_ring_sp_enqueue_burst(ctx->to_control,
							    (void **)pkts, n,
							    NULL);

	if (sent != 0)
		net_wake_control(ctx->stack);
	if (sent < n) {
		net_count(&rxq->counters.drop[DROCE_DROP_RING_FULL], n - sent);
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
	}
}

void
net_classify_burst(struct droce_lcore_ctx *ctx, struct net_rxq *rxq,
		   struct net_port *p, struct rte_mbuf **pkts, uint16_t n)
{
	const struct droce_stack *s = ctx->stack;
	struct rte_mbuf *for_handler[NET_BURST], *for_control[NET_BURST];
	struct rte_mbuf *dropped[NET_BURST];
	uint8_t handler_of[NET_BURST];
	uint16_t nb_handler = 0, nb_control = 0, nb_dropped = 0;
	/* Drops are tallied here and added to the shared counters once. */
	uint16_t drops[DROCE_DROP_MAX] = { 0 };
	uint32_t used_handlers = 0;
	uint64_t bytes = 0;
	struct flow_memo memo = { .valid = false };

	RTE_BUILD_BUG_ON(NET_MAX_UDP_HANDLERS > 32);
	/* Each mbuf's first line, where its data starts, well before its
	 * header is asked for: a PMD that wrote the burst's mbufs just now
	 * has them here already; one that only hands over pointers (ring, a
	 * software queue) does not. All of a burst's at once would fill the
	 * core's line fill buffers and stall the loop before it starts.
	 */
	for (uint16_t i = 0; i < n && i < MBUF_AHEAD; i++)
		rte_prefetch0(pkts[i]);
	for (uint16_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct classify_out out;
		enum verdict verdict;

		if (i + MBUF_AHEAD < n)
			rte_prefetch0(pkts[i + MBUF_AHEAD]);
		if (i + PREFETCH_AHEAD < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + PREFETCH_AHEAD],
						       void *));
		bytes += rte_pktmbuf_pkt_len(m);
		if (memo.valid && flow_memo_take(p, m, &memo)) {
			if (unlikely(p->capture) && memo.roce)
				net_capture(ctx, p, m, rxq->queue, true);
			handler_of[nb_handler] = memo.handler;
			for_handler[nb_handler++] = m;
			continue;
		}
		verdict = classify_one(s, p, m, &out);
		if (unlikely(p->capture) && out.roce)
			net_capture(ctx, p, m, rxq->queue, true);
		switch (verdict) {
		case VERDICT_DROP:
			drops[out.reason]++;
			dropped[nb_dropped++] = m;
			break;
		case VERDICT_CONTROL:
			for_control[nb_control++] = m;
			break;
		case VERDICT_HANDLER:
			used_handlers |= 1u << out.handler;
			handler_of[nb_handler] = out.handler;
			for_handler[nb_handler++] = m;
			flow_memo_set(&memo, m, &out);
			break;
		}
	}
	net_count(&rxq->counters.rx_packets, n);
	net_count(&rxq->counters.rx_bytes, bytes);
	if (nb_dropped != 0) {
		for (unsigned int r = 0; r < DROCE_DROP_MAX; r++)
			if (drops[r] != 0)
				net_count(&rxq->counters.drop[r], drops[r]);
		rte_pktmbuf_free_bulk(dropped, nb_dropped);
	}
	if (nb_handler != 0)
		run_handlers(ctx, p, rxq->queue, for_handler, handler_of,
			     nb_handler, used_handlers);
	if (nb_control != 0)
		to_control(ctx, rxq, for_control, nb_control);
}

/* Consecutive UDP packets for one control handler on one port. */
struct udp_run {
	uint8_t handler;
	uint16_t port;
	uint16_t n;
	struct rte_mbuf *pkts[NET_BURST];
};

static void
udp_run_flush(struct droce_lcore_ctx *ctx, struct udp_run *run)
{
	const struct net_udp_handler *uh = &ctx->stack->udp_handler[run->handler];

	if (run->n == 0)
		return;
	uh->fn(ctx, run->port, DROCE_ANY_QUEUE, run->pkts, run->n, uh->arg);
	run->n = 0;
}

void
net_control_input(struct droce_lcore_ctx *ctx, struct rte_mbuf **pkts,
		  uint16_t n)
{
	struct droce_stack *s = ctx->stack;
	struct udp_run run = { .n = 0 };

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct net_port *p = s->port[m->port];
		const struct rte_udp_hdr *udp;
		uint8_t h;

		if (m->packet_type != PTYPE_UDP) {
			udp_run_flush(ctx, &run);
			if (m->packet_type == PTYPE_ARP)
				net_arp_input(ctx, p, m);
			else
				net_icmp_input(ctx, p, m);
			continue;
		}
		udp = rte_pktmbuf_mtod_offset(m, const struct rte_udp_hdr *,
					      m->l2_len + m->l3_len);
		h = (uint8_t)(s->udp_map[be16(udp->dst_port)] - 1);
		if (run.n != 0 && (run.handler != h || run.port != p->index ||
				   run.n == NET_BURST))
			udp_run_flush(ctx, &run);
		run.handler = h;
		run.port = p->index;
		run.pkts[run.n++] = m;
	}
	udp_run_flush(ctx, &run);
}
