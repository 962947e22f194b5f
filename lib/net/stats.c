/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Counters seen from outside: sums per port, queue and lcore, the periodic
 * stats line and the JSON dump. Every counter has one writer (its lcore);
 * this file only reads them, relaxed, from whichever thread asks.
 */

#include <errno.h>
#include <inttypes.h>

#include <rte_cycles.h>

#include "net_private.h"

static const char *const drop_names[DROCE_DROP_MAX] = {
	[DROCE_DROP_TRUNCATED] = "truncated",
	[DROCE_DROP_NOT_FOR_US] = "not_for_us",
	[DROCE_DROP_UNKNOWN_ETHERTYPE] = "unknown_ethertype",
	[DROCE_DROP_IP_BAD_HEADER] = "ip_bad_header",
	[DROCE_DROP_IP_BAD_CKSUM] = "ip_bad_cksum",
	[DROCE_DROP_IP_FRAGMENT] = "ip_fragment",
	[DROCE_DROP_IP_BAD_SOURCE] = "ip_bad_source",
	[DROCE_DROP_UNKNOWN_IP_PROTO] = "unknown_ip_proto",
	[DROCE_DROP_UDP_BAD_LENGTH] = "udp_bad_length",
	[DROCE_DROP_L4_BAD_CKSUM] = "l4_bad_cksum",
	[DROCE_DROP_UDP_NO_HANDLER] = "udp_no_handler",
	[DROCE_DROP_ICMP_UNHANDLED] = "icmp_unhandled",
	[DROCE_DROP_ARP_BAD] = "arp_bad",
	[DROCE_DROP_ARP_UNRESOLVED] = "arp_unresolved",
	[DROCE_DROP_NO_ROUTE] = "no_route",
	[DROCE_DROP_RING_FULL] = "ring_full",
	[DROCE_DROP_TX_FULL] = "tx_full",
	[DROCE_DROP_NO_MBUF] = "no_mbuf",
	[DROCE_DROP_MTU_EXCEEDED] = "mtu_exceeded",
	[DROCE_DROP_PORT_STOPPED] = "port_stopped",
};

const char *
droce_drop_reason_name(enum droce_drop_reason reason)
{
	return (unsigned int)reason < DROCE_DROP_MAX ? drop_names[reason] : NULL;
}

uint64_t
droce_counters_drops(const struct droce_counters *c)
{
	uint64_t sum = 0;

	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++)
		sum += c->drop[r];
	return sum;
}

void
net_counters_add(struct droce_counters *sum, const struct droce_counters *c)
{
	sum->rx_packets += net_counter_read(&c->rx_packets);
	sum->rx_bytes += net_counter_read(&c->rx_bytes);
	sum->tx_packets += net_counter_read(&c->tx_packets);
	sum->tx_bytes += net_counter_read(&c->tx_bytes);
	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++)
		sum->drop[r] += net_counter_read(&c->drop[r]);
}

void
droce_queue_counters(const struct droce_stack *s, uint16_t port,
		     uint16_t queue, struct droce_counters *c)
{
	memset(c, 0, sizeof(*c));
	net_counters_add(c, &s->port[port]->rxq[queue].counters);
}

void
droce_port_counters(const struct droce_stack *s, uint16_t port,
		    struct droce_counters *c)
{
	const struct net_port *p = s->port[port];

	memset(c, 0, sizeof(*c));
	for (uint16_t q = 0; q < p->nb_rxq; q++)
		net_counters_add(c, &p->rxq[q].counters);
	for (uint32_t i = 0; i < net_nb_ctx(s); i++)
		net_counters_add(c, &net_ctx(s, i)->port_counters[port]);
}

void
droce_lcore_counters(const struct droce_stack *s, unsigned int lcore_id,
		     struct droce_counters *c)
{
	memset(c, 0, sizeof(*c));
	/* Inline workers run on the control lcore: their counts are its. */
	for (uint32_t k = 0; k < net_nb_ctx(s); k++) {
		const struct droce_lcore_ctx *ctx = net_ctx(s, k);

		if (ctx->lcore_id != lcore_id)
			continue;
		for (uint16_t i = 0; i < ctx->nb_poll; i++)
			net_counters_add(c, &ctx->poll[i].port->rxq[ctx->poll[i].queue].counters);
		for (uint16_t p = 0; p < s->nb_ports; p++)
			net_counters_add(c, &ctx->port_counters[p]);
	}
}

static void
print_drops(FILE *out, const struct droce_counters *c)
{
	const char *sep = " (";

	fprintf(out, " drop %" PRIu64, droce_counters_drops(c));
	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++) {
		if (c->drop[r] == 0)
			continue;
		fprintf(out, "%s%s %" PRIu64, sep, drop_names[r], c->drop[r]);
		sep = ", ";
	}
	if (sep[0] == ',')
		fputc(')', out);
}

void
droce_stack_print_stats_line(struct droce_stack *s, FILE *out)
{
	uint64_t now = rte_get_timer_cycles();
	double secs = (double)(now - s->stats_prev_tsc) / (double)rte_get_timer_hz();

	if (secs <= 0)
		secs = 1;
	fputs("droce:", out);
	for (uint16_t i = 0; i < s->nb_ports; i++) {
		struct droce_counters c;
		const struct droce_counters *prev = &s->stats_prev[i];

		droce_port_counters(s, i, &c);
		fprintf(out, "%s port %u rx %" PRIu64 " (%.1f kpps %.2f Mbps) tx %" PRIu64 " (%.1f kpps %.2f Mbps)",
			i ? " |" : "", i, c.rx_packets,
			(double)(c.rx_packets - prev->rx_packets) / secs / 1e3,
			(double)(c.rx_bytes - prev->rx_bytes) * 8 / secs / 1e6,
			c.tx_packets,
			(double)(c.tx_packets - prev->tx_packets) / secs / 1e3,
			(double)(c.tx_bytes - prev->tx_bytes) * 8 / secs / 1e6);
		print_drops(out, &c);
		s->stats_prev[i] = c;
	}
	for (unsigned int e = 0; e < s->nb_stats_ext; e++)
		if (s->stats_ext[e].line != NULL)
			s->stats_ext[e].line(out, secs, s->stats_ext[e].arg);
	fputc('\n', out);
	fflush(out);
	s->stats_prev_tsc = now;
}

static void
json_counters(FILE *out, const struct droce_counters *c)
{
	fprintf(out, "\"rx_packets\": %" PRIu64 ", \"rx_bytes\": %" PRIu64
		", \"tx_packets\": %" PRIu64 ", \"tx_bytes\": %" PRIu64
		", \"drops\": %" PRIu64 ", \"drop\": {",
		c->rx_packets, c->rx_bytes, c->tx_packets, c->tx_bytes,
		droce_counters_drops(c));
	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++)
		fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "", drop_names[r],
			c->drop[r]);
	fputc('}', out);
}

static void
json_port(FILE *out, const struct droce_stack *s, uint16_t i)
{
	const struct net_port *p = s->port[i];
	const struct droce_port_conf *pc = &s->conf.port[i];
	struct rte_eth_stats hw;
	struct droce_counters c;

	droce_port_counters(s, i, &c);
	memset(&hw, 0, sizeof(hw));
	rte_eth_stats_get(p->port_id, &hw);
	fprintf(out, "    {\"port\": %u, \"ethdev\": %u, \"device\": \"%s\", \"mac\": \""
		RTE_ETHER_ADDR_PRT_FMT "\", \"address\": \"" NET_IPV4_FMT "/%u\", ",
		i, p->port_id, p->name, RTE_ETHER_ADDR_BYTES(&p->mac),
		NET_IPV4_BYTES(p->addr), pc->prefix_len);
	json_counters(out, &c);
	fprintf(out, ",\n     \"hw\": {\"ipackets\": %" PRIu64 ", \"opackets\": %" PRIu64
		", \"imissed\": %" PRIu64 ", \"ierrors\": %" PRIu64
		", \"oerrors\": %" PRIu64 ", \"rx_nombuf\": %" PRIu64 "},\n     \"queues\": [",
		hw.ipackets, hw.opackets, hw.imissed, hw.ierrors, hw.oerrors,
		hw.rx_nombuf);
	for (uint16_t q = 0; q < p->nb_rxq; q++) {
		droce_queue_counters(s, i, q, &c);
		fprintf(out, "%s\n      {\"queue\": %u, \"lcore\": %u, ", q ? "," : "",
			q, p->rxq[q].lcore_id);
		json_counters(out, &c);
		fputc('}', out);
	}
	fputs("]}", out);
}

static void
json_lcore(FILE *out, const struct droce_stack *s, const struct droce_lcore_ctx *ctx,
	   int worker)
{
	struct droce_counters c;

	droce_lcore_counters(s, ctx->lcore_id, &c);
	fprintf(out, "    {\"lcore\": %u, \"role\": \"%s\"", ctx->lcore_id,
		ctx->is_control ? "control" : "worker");
	if (worker >= 0)
		fprintf(out, ", \"group\": %u, \"index\": %u",
			s->layout.worker_group[worker],
			s->layout.worker_index[worker]);
	fputs(", \"queues\": [", out);
	for (uint16_t i = 0; i < ctx->nb_poll; i++)
		fprintf(out, "%s\"%u:%u\"", i ? ", " : "",
			ctx->poll[i].port->index, ctx->poll[i].queue);
	fprintf(out, "], \"capture_lost\": %" PRIu64 ", ",
		net_counter_read(&ctx->capture_lost));
	json_counters(out, &c);
	fputc('}', out);
}

int
droce_stack_write_stats_json(const struct droce_stack *s, FILE *out)
{
	fputs("{\n  \"ports\": [\n", out);
	for (uint16_t i = 0; i < s->nb_ports; i++) {
		json_port(out, s, i);
		fputs(i + 1 < s->nb_ports ? ",\n" : "\n", out);
	}
	fputs("  ],\n  \"lcores\": [\n", out);
	json_lcore(out, s, s->control, -1);
	for (uint32_t w = 0; w < s->layout.nb_workers; w++) {
		fputs(",\n", out);
		json_lcore(out, s, s->worker[w], (int)w);
	}
	fprintf(out, "\n  ],\n  \"capture_write_errors\": %" PRIu64,
		net_counter_read(&s->capture_write_errors));
	for (unsigned int e = 0; e < s->nb_stats_ext; e++) {
		if (s->stats_ext[e].json == NULL)
			continue;
		fputs(",\n  ", out);
		s->stats_ext[e].json(out, s->stats_ext[e].arg);
	}
	fputs("\n}\n", out);
	return ferror(out) ? -EIO : 0;
}

int
droce_stats_ext_register(struct droce_stack *s, const struct droce_stats_ext *ext)
{
	if (s->nb_stats_ext == NET_MAX_STATS_EXT)
		return -ENOSPC;
	s->stats_ext[s->nb_stats_ext++] = *ext;
	return 0;
}
