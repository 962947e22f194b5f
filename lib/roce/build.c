/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Frames for any opcode of the table: Ethernet, IPv4 or IPv6, UDP, BTH,
 * the opcode's extension headers where the table puts them, payload,
 * zero pad to 4 bytes, ICRC.
 */

#include <errno.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "crc32_private.h"
#include "droce_roce.h"
#include "roce_private.h"

#define IPV4_LEN sizeof(struct rte_ipv4_hdr)
#define IPV6_LEN sizeof(struct rte_ipv6_hdr)
#define UDP_LEN sizeof(struct rte_udp_hdr)

uint16_t
droce_roce_udp_sport(uint32_t qpn)
{
	/* Linux soft-RoCE: 0xC000 + hash_32(qpn, 14), the golden-ratio hash. */
	return (uint16_t)(0xc000 + ((qpn * 0x61c88647u) >> (32 - 14)));
}

static uint32_t
pad_of(const struct droce_frame_spec *spec)
{
	return (0u - spec->payload_len) & 3;
}

uint32_t
droce_frame_len(const struct droce_frame_spec *spec)
{
	const struct droce_opcode_info *info = droce_opcode(spec->opcode);

	if (info == NULL ||
	    (spec->payload_len != 0 && !(info->flags & DROCE_HDR_PAYLOAD)))
		return 0;
	return (uint32_t)(RTE_ETHER_HDR_LEN + (spec->ipv6 ? IPV6_LEN : IPV4_LEN) +
			  UDP_LEN) + info->hdr_len + spec->payload_len +
	       pad_of(spec) + DROCE_ICRC_LEN;
}

/* The checksum of the IPv4 header put_ip() writes, from its fields: the
 * header's 16-bit words summed as values. Summing the bytes just stored
 * would load them back before the stores reach the cache, a stall of
 * its own on each frame.
 */
static inline rte_be16_t
ipv4_cksum_of(uint8_t tos, uint32_t total_length, uint8_t ttl, rte_be32_t src, rte_be32_t dst)
{
	uint32_t s = rte_be_to_cpu_32(src), d = rte_be_to_cpu_32(dst);
	uint32_t sum = (uint32_t)(RTE_IPV4_VHL_DEF << 8 | tos) + total_length +
		       RTE_IPV4_HDR_DF_FLAG + (uint32_t)(ttl << 8 | IPPROTO_UDP) +
		       (s >> 16) + (s & 0xffff) + (d >> 16) + (d & 0xffff);

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return rte_cpu_to_be_16((uint16_t)~sum);
}

static void
put_ip(uint8_t *l3, const struct droce_frame_spec *spec, uint16_t l4_len)
{
	uint8_t ttl = spec->ttl != 0 ? spec->ttl : 64;

	if (spec->ipv6) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)l3;

		ip6->vtc_flow = rte_cpu_to_be_32(6u << 28 |
						 (uint32_t)spec->traffic_class << 20 |
						 (spec->flow_label & 0xfffff));
		ip6->payload_len = rte_cpu_to_be_16(l4_len);
		ip6->proto = IPPROTO_UDP;
		ip6->hop_limits = ttl;
		memcpy(ip6->src_addr, spec->src_ip6, 16);
		memcpy(ip6->dst_addr, spec->dst_ip6, 16);
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->type_of_service = spec->traffic_class;
		ip->total_length = rte_cpu_to_be_16((uint16_t)(IPV4_LEN + l4_len));
		ip->packet_id = 0;
		ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = ttl;
		ip->next_proto_id = IPPROTO_UDP;
		ip->src_addr = spec->src_ip4;
		ip->dst_addr = spec->dst_ip4;
		ip->hdr_checksum = ipv4_cksum_of(spec->traffic_class, IPV4_LEN + l4_len, ttl,
						 spec->src_ip4, spec->dst_ip4);
	}
}

static void
put_ext_headers(uint8_t *bth, const struct droce_opcode_info *info,
		const struct droce_frame_spec *spec)
{
	const uint8_t *off = info->offset;

	if (info->flags & DROCE_HDR_RETH) {
		struct droce_reth *r = (void *)(bth + off[DROCE_EXT_RETH]);

		r->va = rte_cpu_to_be_64(spec->va);
		r->rkey = rte_cpu_to_be_32(spec->rkey);
		r->dma_len = rte_cpu_to_be_32(spec->dma_len);
	}
	if (info->flags & DROCE_HDR_AETH) {
		struct droce_aeth *a = (void *)(bth + off[DROCE_EXT_AETH]);

		a->smsn = rte_cpu_to_be_32((uint32_t)spec->syndrome << 24 |
					   (spec->msn & DROCE_MSN_MASK));
	}
	if (info->flags & DROCE_HDR_ATMACK) {
		struct droce_atmack *a = (void *)(bth + off[DROCE_EXT_ATMACK]);

		a->orig = rte_cpu_to_be_64(spec->orig);
	}
	if (info->flags & DROCE_HDR_ATMETH) {
		struct droce_atmeth *a = (void *)(bth + off[DROCE_EXT_ATMETH]);

		a->va = rte_cpu_to_be_64(spec->va);
		a->rkey = rte_cpu_to_be_32(spec->rkey);
		a->swap_add = rte_cpu_to_be_64(spec->swap_add);
		a->compare = rte_cpu_to_be_64(spec->compare);
	}
	if (info->flags & DROCE_HDR_DETH) {
		struct droce_deth *d = (void *)(bth + off[DROCE_EXT_DETH]);

		d->qkey = rte_cpu_to_be_32(spec->qkey);
		d->sqp = rte_cpu_to_be_32(spec->src_qp & DROCE_QPN_MASK);
	}
	if (info->flags & DROCE_HDR_IMMDT) {
		struct droce_immdt *i = (void *)(bth + off[DROCE_EXT_IMMDT]);

		i->imm = rte_cpu_to_be_32(spec->imm);
	}
}

/* Everything up to the payload, for a frame of @p len bytes in all; the
 * caller has zeroed these bytes. Returns where the payload goes.
 */
static uint8_t *
put_headers(struct rte_ether_hdr *eth, const struct droce_frame_spec *spec, uint32_t len)
{
	const struct droce_opcode_info *info = droce_opcode(spec->opcode);
	uint32_t l3_len = spec->ipv6 ? IPV6_LEN : IPV4_LEN;
	uint16_t l4_len = (uint16_t)(len - RTE_ETHER_HDR_LEN - l3_len);
	struct rte_udp_hdr *udp;
	uint8_t *l3, *bth;

	eth->dst_addr = spec->dst_mac;
	eth->src_addr = spec->src_mac;
	eth->ether_type = spec->ipv6 ? RTE_BE16(RTE_ETHER_TYPE_IPV6)
				     : RTE_BE16(RTE_ETHER_TYPE_IPV4);
	l3 = (uint8_t *)(eth + 1);
	put_ip(l3, spec, l4_len);

	udp = (struct rte_udp_hdr *)(l3 + l3_len);
	udp->src_port = rte_cpu_to_be_16(spec->udp_src_port != 0 ? spec->udp_src_port
					 : droce_roce_udp_sport(spec->src_qp));
	udp->dst_port = RTE_BE16(DROCE_ROCE_UDP_PORT);
	udp->dgram_len = rte_cpu_to_be_16(l4_len);

	bth = (uint8_t *)(udp + 1);
	droce_bth_set((struct droce_bth *)bth, spec->opcode, spec->se,
		      spec->migreq, (uint8_t)pad_of(spec),
		      spec->pkey != 0 ? spec->pkey : DROCE_PKEY_DEFAULT,
		      spec->fecn, spec->becn, spec->dest_qp, spec->ackreq,
		      spec->psn);
	put_ext_headers(bth, info, spec);
	return bth + info->hdr_len;
}

/* The UDP checksum of an IPv6 packet in any segments. DPDK 22.11's
 * rte_ipv6_udptcp_cksum_mbuf() drops the carries of a segment that
 * starts at an odd offset, so each segment's sum is folded first.
 */
static uint16_t
udp6_cksum(const struct rte_mbuf *m, const struct rte_ipv6_hdr *ip6, uint32_t l4_off)
{
	uint32_t sum = rte_ipv6_phdr_cksum(ip6, 0), seg_start = 0;

	for (const struct rte_mbuf *seg = m; seg != NULL;
	     seg_start += rte_pktmbuf_data_len(seg), seg = seg->next) {
		uint32_t from = RTE_MAX(l4_off, seg_start);
		uint32_t to = seg_start + rte_pktmbuf_data_len(seg);
		uint32_t part;

		if (from >= to)
			continue;
		part = rte_raw_cksum(rte_pktmbuf_mtod_offset(seg, const void *, from - seg_start),
				     to - from);
		/* Bytes at an odd offset are the low halves of their words. */
		sum += (from - l4_off) & 1 ? rte_bswap16((uint16_t)part) : part;
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	return sum == 0 ? 0xffff : (uint16_t)sum; /* 0 would say "none" */
}

/* For IPv6 the UDP checksum, which covers the ICRC (IPv4 carries none:
 * RoCEv2 senders leave it 0 and the ICRC covers the bytes).
 */
static void
put_udp6_cksum(struct rte_mbuf *m, const struct droce_frame_spec *spec)
{
	uint32_t l4_off = RTE_ETHER_HDR_LEN + IPV6_LEN;

	if (spec->ipv6) {
		struct rte_ipv6_hdr *ip6 = rte_pktmbuf_mtod_offset(m, struct rte_ipv6_hdr *,
								   RTE_ETHER_HDR_LEN);
		struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, l4_off);

		udp->dgram_cksum = udp6_cksum(m, ip6, l4_off);
	}
}

int
droce_frame_build(struct rte_mbuf *m, const struct droce_frame_spec *spec)
{
	uint32_t len = droce_frame_len(spec);
	struct rte_ether_hdr *eth;
	uint8_t *payload;

	if (len == 0)
		return -EINVAL;
	if (len > UINT16_MAX || rte_pktmbuf_tailroom(m) < len)
		return -ENOSPC;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)len);
	/* Headers, pad and ICRC start at 0; given payload bytes are written
	 * once, by the copy that also runs them through the ICRC.
	 */
	if (spec->payload != NULL) {
		uint32_t payload_off = len - spec->payload_len - pad_of(spec) - DROCE_ICRC_LEN;

		memset(eth, 0, payload_off);
		memset((uint8_t *)eth + payload_off + spec->payload_len, 0,
		       len - payload_off - spec->payload_len);
	} else {
		memset(eth, 0, len);
	}
	payload = put_headers(eth, spec, len);
	if (spec->payload != NULL)
		icrc_fill_copy((uint8_t *)(eth + 1), len - RTE_ETHER_HDR_LEN,
			       (uint32_t)(payload - (uint8_t *)(eth + 1)), spec->payload,
			       spec->payload_len);
	else
		droce_icrc_fill_mbuf(m, RTE_ETHER_HDR_LEN);
	put_udp6_cksum(m, spec);
	return 0;
}

int
droce_frame_build_chained(struct rte_mbuf *m, const struct droce_frame_spec *spec,
			  struct rte_mbuf *payload, struct rte_mbuf *trailer)
{
	uint32_t len = droce_frame_len(spec);
	uint32_t tail_len = pad_of(spec) + DROCE_ICRC_LEN;
	uint32_t head_len = len - spec->payload_len - tail_len;
	struct rte_ether_hdr *eth;
	uint8_t *tail;

	if (len == 0 || spec->payload_len == 0 ||
	    rte_pktmbuf_pkt_len(payload) != spec->payload_len ||
	    rte_pktmbuf_pkt_len(m) != 0 || rte_pktmbuf_pkt_len(trailer) != 0)
		return -EINVAL;
	if (len > UINT16_MAX || rte_pktmbuf_tailroom(m) < head_len ||
	    rte_pktmbuf_tailroom(trailer) < tail_len ||
	    m->nb_segs + payload->nb_segs + trailer->nb_segs > RTE_MBUF_MAX_NB_SEGS)
		return -ENOSPC;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)head_len);
	memset(eth, 0, head_len);
	put_headers(eth, spec, len);
	tail = (uint8_t *)rte_pktmbuf_append(trailer, (uint16_t)tail_len);
	memset(tail, 0, tail_len);
	/* Cannot fail: the segment count was checked above. */
	rte_pktmbuf_chain(payload, trailer);
	rte_pktmbuf_chain(m, payload);
	droce_icrc_fill_mbuf(m, RTE_ETHER_HDR_LEN);
	put_udp6_cksum(m, spec);
	return 0;
}

/* Where an ACK's frames differ: BTH bytes 8 to 11 (AckReq, PSN) and the
 * AETH after them.
 */
#define ACK_VARIANT_OFF (RTE_ETHER_HDR_LEN + IPV4_LEN + UDP_LEN + 8)
#define ACK_VARIANT_LEN 8

int
droce_ack_proto_init(struct droce_ack_proto *proto, const struct droce_frame_spec *spec)
{
	struct droce_frame_spec s = *spec;

	if (spec->opcode != DROCE_OP_ACKNOWLEDGE || spec->ipv6 || spec->payload_len != 0)
		return -EINVAL;
	RTE_BUILD_BUG_ON(DROCE_ACK_FRAME_LEN != ACK_VARIANT_OFF + ACK_VARIANT_LEN + DROCE_ICRC_LEN);
	s.psn = 0;
	s.ackreq = false;
	s.syndrome = 0;
	s.msn = 0;
	memset(proto->bytes, 0, sizeof(proto->bytes));
	put_headers((struct rte_ether_hdr *)proto->bytes, &s, DROCE_ACK_FRAME_LEN);
	proto->crc_reg = icrc_prefix_reg(proto->bytes + RTE_ETHER_HDR_LEN,
					 ACK_VARIANT_OFF - RTE_ETHER_HDR_LEN);
	return 0;
}

int
droce_ack_build(struct rte_mbuf *m, const struct droce_ack_proto *proto, uint32_t psn,
		uint8_t syndrome, uint32_t msn)
{
	rte_be32_t variant[2] = {
		rte_cpu_to_be_32(psn & DROCE_PSN_MASK),
		rte_cpu_to_be_32((uint32_t)syndrome << 24 | (msn & DROCE_MSN_MASK)),
	};
	uint8_t *f;
	uint32_t icrc;

	if (rte_pktmbuf_tailroom(m) < DROCE_ACK_FRAME_LEN)
		return -ENOSPC;
	f = (uint8_t *)rte_pktmbuf_append(m, DROCE_ACK_FRAME_LEN);
	memcpy(f, proto->bytes, ACK_VARIANT_OFF);
	memcpy(f + ACK_VARIANT_OFF, variant, ACK_VARIANT_LEN);
	icrc = ~crc_reg(proto->crc_reg, variant, ACK_VARIANT_LEN);
	/* On the wire as the CRC's register holds it: least significant first. */
	icrc = rte_cpu_to_le_32(icrc);
	memcpy(f + ACK_VARIANT_OFF + ACK_VARIANT_LEN, &icrc, DROCE_ICRC_LEN);
	return 0;
}
