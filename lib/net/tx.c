/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * TX: each lcore owns TX queue ctx->txq on every port and buffers packets
 * per port, so sending never takes a lock. A packet the queue refuses is
 * counted as tx_full and its tx counts taken back. A port that is not
 * started has no queue to give a packet to (ethdev's stand-in burst
 * refuses it with an error and a stack dump): a packet sent to it is
 * dropped as port_stopped, as a teardown's last frames are. Stopping the
 * stack flushes every lcore's buffers before the ports stop.
 *
 * A round ends with a flush only when it buffered a frame that must
 * leave: lazy frames alone (droce_tx_lazy()) wait for the next flush, the
 * next round's start at the latest.
 */

#include <rte_malloc.h>

#include "net_private.h"

static void
tx_refused(struct rte_mbuf **unsent, uint16_t count, void *userdata)
{
	struct droce_counters *c = userdata;
	uint64_t bytes = 0;

	for (uint16_t i = 0; i < count; i++) {
		bytes += rte_pktmbuf_pkt_len(unsent[i]);
		rte_pktmbuf_free(unsent[i]);
	}
	net_count(&c->drop[DROCE_DROP_TX_FULL], count);
	net_count(&c->tx_packets, -(uint64_t)count);
	net_count(&c->tx_bytes, -bytes);
}

int
net_tx_init(struct droce_lcore_ctx *ctx, const struct net_port *p)
{
	struct rte_eth_dev_tx_buffer *b;

	b = rte_zmalloc_socket("droce_txb", RTE_ETH_TX_BUFFER_SIZE(NET_BURST),
			       0, rte_eth_dev_socket_id(p->port_id));
	if (b == NULL)
		return -ENOMEM;
	rte_eth_tx_buffer_init(b, NET_BURST);
	rte_eth_tx_buffer_set_err_callback(b, tx_refused,
					   &ctx->port_counters[p->index]);
	ctx->txb[p->index] = b;
	return 0;
}

void
net_tx_free(struct droce_lcore_ctx *ctx)
{
	for (unsigned int i = 0; i < DROCE_MAX_PORTS; i++) {
		struct rte_eth_dev_tx_buffer *b = ctx->txb[i];

		if (b == NULL)
			continue;
		for (uint16_t k = 0; k < b->length; k++)
			rte_pktmbuf_free(b->pkts[k]);
		rte_free(b);
		ctx->txb[i] = NULL;
	}
}

void
net_tx(struct droce_lcore_ctx *ctx, struct net_port *p, struct rte_mbuf *m)
{
	struct droce_counters *c = &ctx->port_counters[p->index];

	if (unlikely(!p->started)) {
		rte_pktmbuf_free(m);
		net_count(&c->drop[DROCE_DROP_PORT_STOPPED], 1);
		return;
	}
	net_count(&c->tx_packets, 1);
	net_count(&c->tx_bytes, rte_pktmbuf_pkt_len(m));
	if (unlikely(p->capture) && net_is_roce(m))
		net_capture(ctx, p, m, ctx->txq, false);
	if (m == ctx->tx_lazy_frame)
		ctx->tx_lazy = true;
	else
		ctx->tx_urgent = true;
	rte_eth_tx_buffer(p->port_id, ctx->txq, ctx->txb[p->index], m);
}

void
net_tx_flush(struct droce_lcore_ctx *ctx)
{
	const struct droce_stack *s = ctx->stack;

	ctx->tx_urgent = false;
	ctx->tx_lazy = false;
	for (uint16_t i = 0; i < s->nb_ports; i++)
		if (ctx->txb[i]->length != 0)
			rte_eth_tx_buffer_flush(s->port[i]->port_id, ctx->txq,
						ctx->txb[i]);
}

void
net_tx_round_begin(struct droce_lcore_ctx *ctx)
{
	if (unlikely(ctx->tx_lazy))
		net_tx_flush(ctx);
}

void
net_tx_round_end(struct droce_lcore_ctx *ctx)
{
	if (ctx->tx_urgent)
		net_tx_flush(ctx);
}

/* Only @p m itself is lazy: what the send makes on its way (an ARP
 * request) must leave, and so must @p m if ARP holds it and sends it later.
 */
void
droce_tx_lazy(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m)
{
	ctx->tx_lazy_frame = m;
	droce_tx(ctx, port, m);
	ctx->tx_lazy_frame = NULL;
}

int
droce_eth_send_lazy(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m,
		    rte_be32_t dst)
{
	int ret;

	ctx->tx_lazy_frame = m;
	ret = droce_eth_send(ctx, port, m, dst);
	ctx->tx_lazy_frame = NULL;
	return ret;
}
