/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The sensor's side of the wire: one port with one queue each way, ARP
 * (asking for the receiver's MAC, answering for our own address), bursts
 * out, and the faults a test asks for.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_pause.h>

#include "sensor.h"

#define NB_MBUFS 8191
#define NB_DESC 1024
#define BURST 32

int
sensor_port_init(struct sensor_port *p, uint16_t port_id, uint32_t mtu,
		 char *err, size_t errlen)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = NB_DESC, nb_txd = NB_DESC;
	uint32_t room = RTE_MAX((uint32_t)RTE_MBUF_DEFAULT_DATAROOM,
				mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN);
	char name[RTE_MEMPOOL_NAMESIZE];
	int ret;

	p->port_id = port_id;
	ret = rte_eth_dev_info_get(port_id, &info);
	if (ret != 0) {
		snprintf(err, errlen, "port %u: %s", port_id, rte_strerror(-ret));
		return ret;
	}
	snprintf(name, sizeof(name), "sensor_pool%u", port_id);
	p->pool = rte_pktmbuf_pool_create(name, NB_MBUFS, 256, 0,
					  (uint16_t)(room + RTE_PKTMBUF_HEADROOM),
					  (int)rte_eth_dev_socket_id(port_id));
	if (p->pool == NULL) {
		snprintf(err, errlen, "port %u: no mbuf pool: %s", port_id,
			 rte_strerror(rte_errno));
		return -ENOMEM;
	}
	ret = rte_eth_dev_configure(port_id, 1, 1, &conf);
	if (ret == 0)
		ret = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
	if (ret == 0)
		ret = rte_eth_rx_queue_setup(port_id, 0, nb_rxd,
					     rte_eth_dev_socket_id(port_id), NULL, p->pool);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(port_id, 0, nb_txd,
					     rte_eth_dev_socket_id(port_id), NULL);
	if (ret == 0 && mtu != RTE_ETHER_MTU) {
		ret = rte_eth_dev_set_mtu(port_id, (uint16_t)mtu);
		if (ret != 0)
			snprintf(err, errlen, "port %u: MTU %u: %s (device maximum %u)",
				 port_id, mtu, rte_strerror(-ret), info.max_mtu);
		if (ret != 0)
			return ret;
	}
	if (ret == 0)
		ret = rte_eth_dev_start(port_id);
	if (ret != 0) {
		snprintf(err, errlen, "port %u: setup failed: %s", port_id,
			 rte_strerror(-ret));
		return ret;
	}
	rte_eth_promiscuous_enable(port_id);
	if (rte_eth_macaddr_get(port_id, &p->mac) != 0 ||
	    rte_is_zero_ether_addr(&p->mac)) {
		/* Ring-like vdevs have none: a locally administered one. */
		rte_eth_random_addr(p->mac.addr_bytes);
	}
	return 0;
}

void
sensor_port_close(struct sensor_port *p)
{
	rte_eth_dev_stop(p->port_id);
	rte_eth_dev_close(p->port_id);
	rte_mempool_free(p->pool);
}

static struct rte_mbuf *
arp_packet(struct sensor_port *p, uint16_t op, const struct rte_ether_addr *tha,
	   rte_be32_t tip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;

	if (m == NULL)
		return NULL;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*arp));
	if (eth == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	arp = (struct rte_arp_hdr *)(eth + 1);
	eth->src_addr = p->mac;
	if (op == RTE_ARP_OP_REQUEST)
		memset(&eth->dst_addr, 0xff, sizeof(eth->dst_addr));
	else
		eth->dst_addr = *tha;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = p->mac;
	arp->arp_data.arp_sip = p->ip;
	if (op == RTE_ARP_OP_REQUEST)
		memset(&arp->arp_data.arp_tha, 0, sizeof(arp->arp_data.arp_tha));
	else
		arp->arp_data.arp_tha = *tha;
	arp->arp_data.arp_tip = tip;
	return m;
}

/* An ARP packet for us: answer a request; report a reply's sender. */
static bool
handle_arp(struct sensor_port *p, const struct rte_mbuf *m, rte_be32_t want,
	   struct rte_ether_addr *mac)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);
	bool found = false;

	if (rte_pktmbuf_data_len(m) < sizeof(*eth) + sizeof(*arp) ||
	    eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_ARP) ||
	    arp->arp_data.arp_tip != p->ip)
		return false;
	if (arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REQUEST)) {
		struct rte_mbuf *r = arp_packet(p, RTE_ARP_OP_REPLY,
						&arp->arp_data.arp_sha,
						arp->arp_data.arp_sip);

		if (r != NULL)
			sensor_tx(p, &r, 1);
	}
	if (want != 0 && arp->arp_data.arp_sip == want) {
		*mac = arp->arp_data.arp_sha;
		found = true;
	}
	return found;
}

static bool
poll_once(struct sensor_port *p, rte_be32_t want, struct rte_ether_addr *mac)
{
	struct rte_mbuf *pkts[BURST];
	uint16_t n = rte_eth_rx_burst(p->port_id, 0, pkts, BURST);
	bool found = false;

	p->rx_packets += n;
	for (uint16_t i = 0; i < n; i++) {
		found |= handle_arp(p, pkts[i], want, mac);
		rte_pktmbuf_free(pkts[i]);
	}
	return found;
}

void
sensor_port_poll(struct sensor_port *p)
{
	struct rte_ether_addr unused;

	poll_once(p, 0, &unused);
}

int
sensor_arp_resolve(struct sensor_port *p, rte_be32_t ip, struct rte_ether_addr *mac,
		   unsigned int timeout_ms)
{
	uint64_t hz = rte_get_timer_hz(), end = rte_get_timer_cycles() + timeout_ms * hz / 1000;
	uint64_t next_ask = 0;

	while (rte_get_timer_cycles() < end) {
		if (rte_get_timer_cycles() >= next_ask) {
			struct rte_mbuf *m = arp_packet(p, RTE_ARP_OP_REQUEST, NULL, ip);

			if (m != NULL)
				sensor_tx(p, &m, 1);
			next_ask = rte_get_timer_cycles() + hz / 5;   /* every 200 ms */
		}
		if (poll_once(p, ip, mac))
			return 0;
		rte_delay_us_block(100);
	}
	return -ETIMEDOUT;
}

unsigned int
sensor_tx(struct sensor_port *p, struct rte_mbuf **pkts, unsigned int n)
{
	unsigned int sent = 0;
	uint64_t give_up = rte_get_timer_cycles() + rte_get_timer_hz(); /* 1 s */

	while (sent < n) {
		uint16_t k = rte_eth_tx_burst(p->port_id, 0, pkts + sent,
					      (uint16_t)RTE_MIN(n - sent, 512u));

		sent += k;
		if (sent == n)
			break;
		p->tx_retries++;
		/* The receiver is behind: keep its replies moving meanwhile. */
		sensor_port_poll(p);
		if (rte_get_timer_cycles() > give_up)
			break;
		rte_pause();
	}
	if (sent < n)
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
	return sent;
}

/* ---- faults -------------------------------------------------------------- */

static const char *const fault_names[FAULT_MAX] = {
	[FAULT_DROP] = "drop",
	[FAULT_DUPLICATE] = "duplicate",
	[FAULT_REORDER] = "reorder",
	[FAULT_CORRUPT_ICRC] = "corrupt-icrc",
	[FAULT_WRONG_RKEY] = "wrong-rkey",
	[FAULT_WRONG_QP] = "wrong-qp",
	[FAULT_WRONG_PEER] = "wrong-peer",
	[FAULT_BAD_VA] = "bad-va",
};

const char *
sensor_fault_name(enum fault f)
{
	return (unsigned int)f < FAULT_MAX ? fault_names[f] : NULL;
}

int
sensor_faults_parse(struct sensor_faults *f, const char *spec, char *err,
		    size_t errlen)
{
	char *copy = strdup(spec), *save = NULL;
	int ret = 0;

	if (copy == NULL)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok != NULL && ret == 0;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		unsigned long long every;
		int k;

		if (eq != NULL)
			*eq = '\0';
		for (k = 0; k < FAULT_MAX && strcmp(tok, fault_names[k]) != 0; k++)
			;
		errno = 0;
		every = eq != NULL ? strtoull(eq + 1, &end, 10) : 0;
		if (k == FAULT_MAX || eq == NULL || errno != 0 || end == eq + 1 ||
		    *end != '\0' || every < 2) {
			snprintf(err, errlen,
				 "--faults \"%s\": \"%s\": allowed: NAME=N (every Nth packet, N >= 2) with NAME one of drop, duplicate, reorder, corrupt-icrc, wrong-rkey, wrong-qp, wrong-peer, bad-va",
				 spec, tok);
			ret = -EINVAL;
			break;
		}
		f->every[k] = every;
	}
	free(copy);
	return ret;
}

static struct rte_mbuf *
build(struct rte_mempool *pool, const struct droce_frame_spec *spec)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	if (m != NULL && droce_frame_build(m, spec) != 0) {
		rte_pktmbuf_free(m);
		m = NULL;
	}
	return m;
}

/* The fault for data-path packet number @n (1-based), if any. */
static int
fault_of(const struct sensor_faults *f, uint64_t n, bool last_of_frame)
{
	for (int k = 0; k < FAULT_MAX; k++)
		if (f->every[k] != 0 && n % f->every[k] == 0) {
			/* Reordering needs a successor in the same frame. */
			if (k == FAULT_REORDER && last_of_frame)
				continue;
			return k;
		}
	return -1;
}

unsigned int
sensor_faults_apply(struct sensor_faults *f, struct droce_frame_spec *spec,
		    bool last_of_frame, struct rte_mempool *pool,
		    struct rte_mbuf **out, struct sensor_expect *e)
{
	int k = fault_of(f, ++f->seen, last_of_frame);
	unsigned int n = 0;
	bool lost = true, flushed = false;

	switch (k) {
	case FAULT_DROP:
		break;
	case FAULT_WRONG_RKEY:
		spec->rkey ^= 0x1;
		break;
	case FAULT_WRONG_QP:
		spec->dest_qp ^= 0x800000;
		break;
	case FAULT_WRONG_PEER:
		spec->src_ip4 = rte_cpu_to_be_32(rte_be_to_cpu_32(spec->src_ip4) + 100);
		break;
	case FAULT_BAD_VA:
		spec->va += (uint64_t)1 << 40;
		break;
	default:
		lost = false;
		break;
	}
	if (k != FAULT_DROP && (out[n] = build(pool, spec)) != NULL) {
		if (k == FAULT_CORRUPT_ICRC) {
			/* The first payload byte: after the ICRC was computed. */
			uint8_t *b = rte_pktmbuf_mtod_offset(out[n], uint8_t *,
				rte_pktmbuf_pkt_len(out[n]) - DROCE_ICRC_LEN - spec->payload_len -
				(uint32_t)((4 - spec->payload_len % 4) % 4));

			b[0] ^= 0x80;
			lost = true;
		}
		e->bytes += spec->payload_len;
		n++;
	}
	if (k >= 0 && k != FAULT_DUPLICATE && k != FAULT_REORDER)
		e->refused[k]++;
	if (k == FAULT_DUPLICATE && n == 1 && (out[n] = build(pool, spec)) != NULL) {
		e->stale_packets++;
		e->refused[k]++;
		n++;
	}
	/* Sent after its successor. A receiver that takes packets as they
	 * come sees a gap at the successor, and this one late, unless the
	 * successor is refused itself (before its PSN counts): then this one
	 * still arrives in order. One with a reorder window holds the
	 * successor until this one fills the gap.
	 */
	if (f->held != NULL && n > 0) {
		out[n++] = f->held;
		f->held = NULL;
		flushed = true;
		e->refused[FAULT_REORDER]++;
		if (!lost && f->strict_receiver) {
			e->lost_packets++;
			e->stale_packets++;
			f->frame_lost = true;
		}
	}
	if (k == FAULT_REORDER && n == 1)
		f->held = out[--n];
	if (lost) {
		e->lost_packets++;
		f->frame_lost = true;
		f->unseen_lost++;
	}
	/* Taken in order: this packet, or the held one after a successor
	 * that is refused. The receiver has seen everything before it.
	 */
	if (n > 0 && (!lost || flushed))
		f->unseen_lost = f->unseen_frames = 0;
	e->packets += n;
	if (last_of_frame) {
		/* A frame whose end is lost ends when the next one begins. */
		e->frames++;
		e->frames_lossy += f->frame_lost;
		f->frame_lost = false;
		if (lost)
			f->unseen_frames++;
	}
	return n;
}

uint64_t
sensor_faults_finish(struct sensor_faults *f, struct sensor_expect *e)
{
	uint64_t unseen = f->unseen_frames;

	/* Frames whose end was lost were lossy; nothing finishes them. */
	e->frames_lossy -= unseen;
	e->lost_packets -= f->unseen_lost;
	f->unseen_frames = f->unseen_lost = 0;
	return unseen;
}