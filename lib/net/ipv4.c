/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * IPv4 output on the control lcore: prepend the IPv4 header, choose the
 * next hop (on-link destination or the port's gateway), prepend Ethernet
 * and hand the frame to ARP, which sends it or holds it while it resolves.
 */

#include <rte_udp.h>

#include "net_private.h"

void
droce_drop(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m,
	   enum droce_drop_reason reason)
{
	net_count(&ctx->port_counters[port].drop[reason], 1);
	rte_pktmbuf_free(m);
}

static int
drop_with(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m,
	  enum droce_drop_reason reason, int err)
{
	droce_drop(ctx, port, m, reason);
	return err;
}

/* Prepend the IPv4 header; the data of @m is the L4 header onward. */
static struct rte_ipv4_hdr *
ipv4_prepend(struct droce_lcore_ctx *ctx, const struct net_port *p,
	     struct rte_mbuf *m, uint8_t proto, rte_be32_t dst)
{
	uint32_t total = rte_pktmbuf_pkt_len(m) + sizeof(struct rte_ipv4_hdr);
	struct rte_ipv4_hdr *ip;

	ip = (struct rte_ipv4_hdr *)rte_pktmbuf_prepend(m, sizeof(*ip));
	if (ip == NULL)
		return NULL;
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16((uint16_t)total);
	ip->packet_id = rte_cpu_to_be_16(ctx->ip_id++);
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = NET_IPV4_TTL;
	ip->next_proto_id = proto;
	ip->hdr_checksum = 0;
	ip->src_addr = p->addr;
	ip->dst_addr = dst;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	m->l3_len = sizeof(*ip);
	return ip;
}

/* Choose the next hop, prepend Ethernet, let ARP send it. */
static int
ipv4_route(struct droce_lcore_ctx *ctx, struct net_port *p,
	   struct rte_mbuf *m, rte_be32_t dst)
{
	rte_be32_t next_hop = net_on_link(p, dst) ? dst : p->gateway;
	struct rte_ether_hdr *eth;

	if (next_hop == 0)
		return drop_with(ctx, p->index, m, DROCE_DROP_NO_ROUTE,
				 -ENETUNREACH);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, sizeof(*eth));
	if (eth == NULL)
		return drop_with(ctx, p->index, m, DROCE_DROP_NO_MBUF, -ENOBUFS);
	eth->src_addr = p->mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	m->l2_len = sizeof(*eth);
	net_arp_output(ctx, p, m, next_hop);
	return 0;
}

static int
check_send(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m,
	   uint32_t headers)
{
	const struct droce_stack *s = ctx->stack;

	RTE_VERIFY(ctx->is_control); /* ARP state belongs to the control lcore */
	RTE_VERIFY(port < s->nb_ports);
	if (rte_pktmbuf_pkt_len(m) + headers > s->port[port]->mtu)
		return drop_with(ctx, port, m, DROCE_DROP_MTU_EXCEEDED,
				 -EMSGSIZE);
	if (rte_pktmbuf_headroom(m) < headers + RTE_ETHER_HDR_LEN)
		return drop_with(ctx, port, m, DROCE_DROP_NO_MBUF, -ENOBUFS);
	return 0;
}

int
droce_ipv4_send(struct droce_lcore_ctx *ctx, uint16_t port,
		struct rte_mbuf *m, uint8_t proto, rte_be32_t dst)
{
	struct net_port *p;
	int ret;

	ret = check_send(ctx, port, m, sizeof(struct rte_ipv4_hdr));
	if (ret != 0)
		return ret;
	p = ctx->stack->port[port];
	ipv4_prepend(ctx, p, m, proto, dst);
	return ipv4_route(ctx, p, m, dst);
}

int
droce_neigh_ready(struct droce_lcore_ctx *ctx, uint16_t port, rte_be32_t dst)
{
	return droce_neigh_mac(ctx, port, dst, NULL);
}

int
droce_neigh_mac(struct droce_lcore_ctx *ctx, uint16_t port, rte_be32_t dst,
		struct rte_ether_addr *mac)
{
	const struct droce_stack *s = ctx->stack;
	struct net_port *p;
	rte_be32_t next_hop;

	RTE_VERIFY(ctx->is_control);
	RTE_VERIFY(port < s->nb_ports);
	p = s->port[port];
	next_hop = net_on_link(p, dst) ? dst : p->gateway;
	if (next_hop == 0)
		return -ENETUNREACH;
	return net_arp_ready(ctx, p, next_hop, mac);
}

int
droce_eth_send(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m, rte_be32_t dst)
{
	const struct droce_stack *s = ctx->stack;
	struct rte_ether_hdr *eth;
	struct net_port *p;
	rte_be32_t next_hop;

	RTE_VERIFY(ctx->is_control); /* ARP state belongs to the control lcore */
	RTE_VERIFY(port < s->nb_ports);
	p = s->port[port];
	if (rte_pktmbuf_pkt_len(m) < RTE_ETHER_HDR_LEN)
		return drop_with(ctx, port, m, DROCE_DROP_TRUNCATED, -EINVAL);
	if (rte_pktmbuf_pkt_len(m) - RTE_ETHER_HDR_LEN > p->mtu)
		return drop_with(ctx, port, m, DROCE_DROP_MTU_EXCEEDED, -EMSGSIZE);
	next_hop = net_on_link(p, dst) ? dst : p->gateway;
	if (next_hop == 0)
		return drop_with(ctx, port, m, DROCE_DROP_NO_ROUTE, -ENETUNREACH);
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	eth->src_addr = p->mac;
	m->l2_len = sizeof(*eth);
	net_arp_output(ctx, p, m, next_hop);
	return 0;
}

int
droce_udp_send(struct droce_lcore_ctx *ctx, uint16_t port,
	       struct rte_mbuf *m, rte_be32_t dst, uint16_t src_port,
	       uint16_t dst_port)
{
	const uint32_t headers = sizeof(struct rte_ipv4_hdr) +
				 sizeof(struct rte_udp_hdr);
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	struct net_port *p;
	int ret;

	ret = check_send(ctx, port, m, headers);
	if (ret != 0)
		return ret;
	p = ctx->stack->port[port];
	udp = (struct rte_udp_hdr *)rte_pktmbuf_prepend(m, sizeof(*udp));
	udp->src_port = rte_cpu_to_be_16(src_port);
	udp->dst_port = rte_cpu_to_be_16(dst_port);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)rte_pktmbuf_pkt_len(m));
	udp->dgram_cksum = 0;
	ip = ipv4_prepend(ctx, p, m, IPPROTO_UDP, dst);
	if (rte_pktmbuf_is_contiguous(m))
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	else
		udp->dgram_cksum = rte_ipv4_udptcp_cksum_mbuf(m, ip,
							      sizeof(*ip));
	return ipv4_route(ctx, p, m, dst);
}
