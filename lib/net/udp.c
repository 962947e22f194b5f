/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* UDP handlers by destination port, and the echo service (RFC 862). */

#include <rte_udp.h>

#include "net_private.h"

int
droce_udp_register(struct droce_stack *s, uint16_t udp_port,
		   enum droce_udp_where where, droce_udp_handler_t fn,
		   void *arg)
{
	struct net_udp_handler *h;

	if (udp_port == 0 || fn == NULL)
		return -EINVAL;
	if (s->started)
		return -EBUSY;
	if (s->udp_map[udp_port] != 0)
		return -EEXIST;
	if (s->nb_udp_handlers == NET_MAX_UDP_HANDLERS)
		return -ENOSPC;
	h = &s->udp_handler[s->nb_udp_handlers++];
	h->fn = fn;
	h->arg = arg;
	h->where = where;
	h->udp_port = udp_port;
	s->udp_map[udp_port] = s->nb_udp_handlers;
	return 0;
}

/* Echo each datagram's payload back to its sender. */
void
net_udp_echo(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
	     struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	RTE_SET_USED(arg);
	RTE_SET_USED(queue);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m,
				const struct rte_ipv4_hdr *, DROCE_UDP_PKT_L3_OFFSET);
		const struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m,
				const struct rte_udp_hdr *, droce_udp_pkt_l4_offset(m));
		rte_be32_t peer = ip->src_addr;
		uint16_t peer_port = rte_be_to_cpu_16(udp->src_port);
		uint16_t own_port = rte_be_to_cpu_16(udp->dst_port);

		rte_pktmbuf_adj(m, (uint16_t)(droce_udp_pkt_l4_offset(m) +
					      sizeof(*udp)));
		droce_udp_send(ctx, port, m, peer, own_port, peer_port);
	}
}
