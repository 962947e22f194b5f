/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* ICMP on the control lcore: echo requests get their reply (RFC 792). */

#include <rte_icmp.h>

#include "net_private.h"

void
net_icmp_input(struct droce_lcore_ctx *ctx, struct net_port *p,
	       struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m,
			const struct rte_ipv4_hdr *, m->l2_len);
	uint32_t offset = m->l2_len + m->l3_len;
	uint32_t len = rte_pktmbuf_pkt_len(m) - offset;
	struct rte_icmp_hdr *icmp;
	rte_be32_t src = ip->src_addr;
	uint16_t sum;

	if (len < sizeof(*icmp) ||
	    rte_pktmbuf_data_len(m) < offset + sizeof(*icmp)) {
		droce_drop(ctx, p->index, m, DROCE_DROP_TRUNCATED);
		return;
	}
	if (rte_raw_cksum_mbuf(m, offset, len, &sum) != 0 || sum != 0xffff) {
		droce_drop(ctx, p->index, m, DROCE_DROP_L4_BAD_CKSUM);
		return;
	}
	icmp = rte_pktmbuf_mtod_offset(m, struct rte_icmp_hdr *, offset);
	if (icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0) {
		droce_drop(ctx, p->index, m, DROCE_DROP_ICMP_UNHANDLED);
		return;
	}

	/* The reply carries the request's identifier, sequence and data,
	 * behind a fresh IPv4 header (the request's options are not echoed).
	 */
	rte_pktmbuf_adj(m, (uint16_t)offset);
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = 0;
	rte_raw_cksum_mbuf(m, 0, len, &sum);
	icmp->icmp_cksum = (uint16_t)~sum;
	droce_ipv4_send(ctx, p->index, m, IPPROTO_ICMP, src);
}
