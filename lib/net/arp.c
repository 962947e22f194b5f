/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * ARP (RFC 826) on the control lcore: answer requests for the port's
 * address, learn from requests and replies addressed to us, resolve next
 * hops for IPv4 output while holding a few packets, refresh entries older
 * than arp.timeout, and announce the address at start (gratuitous ARP).
 *
 * Entry life: INCOMPLETE (request sent, packets held) -> REACHABLE
 * (answered) -> STALE (older than arp.timeout: still used, request sent)
 * -> REACHABLE again, or removed when the retries go unanswered.
 *
 * What a host on the link can make droce do is bounded: an entry is
 * created by a request addressed to us or by our own need to send, a
 * reply changes only an entry we asked about, a sender that is not a host
 * of the subnet teaches nothing; at most NET_ARP_INCOMPLETE_MAX
 * resolutions run at once (the oldest gives way, resolved neighbours
 * never do) and new ones start at most NET_ARP_REQUESTS_PER_S a second.
 */

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_errno.h>

#include "net_private.h"

static uint64_t
retry_ticks(void)
{
	return rte_get_timer_hz() * NET_ARP_RETRY_MS / 1000;
}

/* The last entry found is looked at first: the control lcore sends to
 * one peer frame after frame, and a compare costs less than the hash. A
 * freed entry says so (ARP_FREE), one taken again holds its new address.
 */
static struct arp_entry *
arp_lookup(struct net_port *p, rte_be32_t ip)
{
	struct arp_entry *e = p->arp_last;
	int pos;

	if (e != NULL && e->ip == ip && e->state != ARP_FREE)
		return e;
	pos = rte_hash_lookup(p->arp_hash, &ip);
	if (pos < 0)
		return NULL;
	p->arp_last = &p->arp[pos];
	return p->arp_last;
}

/* Drop the held packets of an entry that will not resolve. */
static void
arp_drop_pending(struct droce_lcore_ctx *ctx, struct net_port *p,
		 struct arp_entry *e)
{
	for (uint8_t i = 0; i < e->nb_pending; i++)
		droce_drop(ctx, p->index, e->pending[i],
			   DROCE_DROP_ARP_UNRESOLVED);
	e->nb_pending = 0;
}

static void
arp_set_state(struct net_port *p, struct arp_entry *e, int state)
{
	if (e->state == ARP_INCOMPLETE)
		p->arp_incomplete--;
	if (state == ARP_INCOMPLETE)
		p->arp_incomplete++;
	e->state = state;
}

static void
arp_remove(struct net_port *p, struct arp_entry *e)
{
	rte_timer_stop_sync(&e->timer);
	rte_hash_del_key(p->arp_hash, &e->ip);
	arp_drop_pending(p->stack->control, p, e);
	arp_set_state(p, e, ARP_FREE);
}

static struct rte_mbuf *
arp_build(struct droce_lcore_ctx *ctx, struct net_port *p, uint16_t op,
	  const struct rte_ether_addr *eth_dst, rte_be32_t target)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;

	if (m == NULL) {
		net_count(&ctx->port_counters[p->index].drop[DROCE_DROP_NO_MBUF], 1);
		return NULL;
	}
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m,
			sizeof(*eth) + sizeof(*arp));
	arp = (struct rte_arp_hdr *)(eth + 1);
	eth->dst_addr = *eth_dst;
	eth->src_addr = p->mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = sizeof(rte_be32_t);
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = p->mac;
	arp->arp_data.arp_sip = p->addr;
	memset(&arp->arp_data.arp_tha, 0, sizeof(arp->arp_data.arp_tha));
	arp->arp_data.arp_tip = target;
	return m;
}

static void
arp_send_request(struct droce_lcore_ctx *ctx, struct net_port *p,
		 rte_be32_t target)
{
	static const struct rte_ether_addr broadcast = {
		.addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	struct rte_mbuf *m = arp_build(ctx, p, RTE_ARP_OP_REQUEST, &broadcast,
				       target);

	if (m != NULL)
		net_tx(ctx, p, m);
}

int
net_arp_announce(struct droce_lcore_ctx *ctx, struct net_port *p)
{
	/* Gratuitous ARP: a request for our own address updates neighbours. */
	arp_send_request(ctx, p, p->addr);
	return 0;
}

static void arp_timer_expired(struct rte_timer *t, void *arg);

static void
arp_arm(struct arp_entry *e)
{
	rte_timer_reset_sync(&e->timer, retry_ticks(), SINGLE, rte_lcore_id(),
			     arp_timer_expired, e);
}

/* No answer for a while: ask again, or give up after the retries. */
static void
arp_timer_expired(struct rte_timer *t, void *arg)
{
	struct arp_entry *e = arg;
	struct net_port *p = e->port;
	struct droce_lcore_ctx *ctx = p->stack->control;

	RTE_SET_USED(t);
	if (e->state == ARP_REACHABLE)
		return;
	if (++e->tries > NET_ARP_RETRIES) {
		NET_LOG(DEBUG, "port %u: no ARP answer for " NET_IPV4_FMT
			" after %u requests", p->index, NET_IPV4_BYTES(e->ip),
			NET_ARP_RETRIES + 1);
		arp_remove(p, e);
		return;
	}
	arp_send_request(ctx, p, e->ip);
	arp_arm(e);
}

/* The oldest entry in @p state, or NULL. */
static struct arp_entry *
arp_oldest(struct net_port *p, bool incomplete)
{
	struct arp_entry *oldest = NULL;

	for (unsigned int i = 0; i < NET_ARP_ENTRIES; i++) {
		struct arp_entry *e = &p->arp[i];

		if (e->state == ARP_FREE || (e->state == ARP_INCOMPLETE) != incomplete)
			continue;
		if (oldest == NULL || e->confirmed_tsc < oldest->confirmed_tsc)
			oldest = e;
	}
	return oldest;
}

/* Whether a new resolution may start now: a bucket of
 * NET_ARP_REQUESTS_PER_S tokens, refilled at that rate.
 */
static bool
arp_may_resolve(struct net_port *p)
{
	uint64_t now = rte_get_timer_cycles();

	p->arp_tokens += (double)(now - p->arp_tokens_tsc) * NET_ARP_REQUESTS_PER_S /
			 (double)rte_get_timer_hz();
	if (p->arp_tokens > NET_ARP_REQUESTS_PER_S)
		p->arp_tokens = NET_ARP_REQUESTS_PER_S;
	p->arp_tokens_tsc = now;
	if (p->arp_tokens < 1)
		return false;
	p->arp_tokens -= 1;
	return true;
}

/*
 * An entry for @p ip, INCOMPLETE until it is learnt. Room is made, when
 * resolutions already fill their share or the table is full, from the
 * oldest resolution in progress, and only when there is none from the
 * least recently confirmed neighbour.
 */
static struct arp_entry *
arp_create(struct net_port *p, rte_be32_t ip)
{
	struct arp_entry *e;
	int pos;

	if (p->arp_incomplete >= NET_ARP_INCOMPLETE_MAX)
		arp_remove(p, arp_oldest(p, true));
	pos = rte_hash_add_key(p->arp_hash, &ip);
	if (pos == -ENOSPC) {
		e = arp_oldest(p, true);
		if (e == NULL)
			e = arp_oldest(p, false);
		if (e == NULL)
			return NULL;
		arp_remove(p, e);
		pos = rte_hash_add_key(p->arp_hash, &ip);
	}
	if (pos < 0)
		return NULL;
	e = &p->arp[pos];
	e->ip = ip;
	e->state = ARP_FREE;
	arp_set_state(p, e, ARP_INCOMPLETE);
	e->tries = 0;
	e->nb_pending = 0;
	e->port = p;
	e->confirmed_tsc = rte_get_timer_cycles();
	return e;
}

static void
arp_send_pending(struct droce_lcore_ctx *ctx, struct net_port *p,
		 struct arp_entry *e)
{
	for (uint8_t i = 0; i < e->nb_pending; i++) {
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(e->pending[i],
						struct rte_ether_hdr *);

		eth->dst_addr = e->mac;
		net_tx(ctx, p, e->pending[i]);
	}
	e->nb_pending = 0;
}

/* What @p ip's owner told us: a request of its own to us creates or
 * refreshes its entry; a reply changes only an entry we asked about.
 */
static void
arp_learn(struct droce_lcore_ctx *ctx, struct net_port *p, rte_be32_t ip,
	  const struct rte_ether_addr *mac, bool request)
{
	struct arp_entry *e = arp_lookup(p, ip);

	if (e == NULL) {
		if (!request)
			return;
		e = arp_create(p, ip);
		if (e == NULL)
			return;
	} else if (!request && e->state == ARP_REACHABLE) {
		return;   /* unsolicited: not a word of it is taken */
	}
	rte_timer_stop_sync(&e->timer);
	e->mac = *mac;
	arp_set_state(p, e, ARP_REACHABLE);
	e->tries = 0;
	e->confirmed_tsc = rte_get_timer_cycles();
	arp_send_pending(ctx, p, e);
}

/* A sender address that names a host of our subnet: not zero (a probe),
 * not ours, not the subnet's network or broadcast address.
 */
static bool
arp_sender_is_host(const struct net_port *p, rte_be32_t sip)
{
	return sip != 0 && sip != p->addr && net_on_link(p, sip) &&
	       sip != p->broadcast && (p->broadcast == 0 || sip != (p->addr & p->netmask));
}

static bool
arp_valid(const struct rte_arp_hdr *arp)
{
	return arp->arp_hardware == RTE_BE16(RTE_ARP_HRD_ETHER) &&
	       arp->arp_protocol == RTE_BE16(RTE_ETHER_TYPE_IPV4) &&
	       arp->arp_hlen == RTE_ETHER_ADDR_LEN &&
	       arp->arp_plen == sizeof(rte_be32_t) &&
	       (arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REQUEST) ||
		arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REPLY)) &&
	       rte_is_unicast_ether_addr(&arp->arp_data.arp_sha) &&
	       !rte_is_zero_ether_addr(&arp->arp_data.arp_sha);
}

/* Turn a request for our address into the reply, in place. */
static void
arp_reply(struct droce_lcore_ctx *ctx, struct net_port *p, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);
	uint32_t frame = sizeof(*eth) + sizeof(*arp);

	arp->arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY);
	arp->arp_data.arp_tha = arp->arp_data.arp_sha;
	arp->arp_data.arp_tip = arp->arp_data.arp_sip;
	arp->arp_data.arp_sha = p->mac;
	arp->arp_data.arp_sip = p->addr;
	eth->dst_addr = arp->arp_data.arp_tha;
	eth->src_addr = p->mac;
	if (rte_pktmbuf_pkt_len(m) > frame)
		rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_pkt_len(m) - frame));
	net_tx(ctx, p, m);
}

void
net_arp_input(struct droce_lcore_ctx *ctx, struct net_port *p,
	      struct rte_mbuf *m)
{
	const struct rte_arp_hdr *arp;
	rte_be32_t sip, tip;

	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + sizeof(*arp)) {
		droce_drop(ctx, p->index, m, DROCE_DROP_TRUNCATED);
		return;
	}
	arp = rte_pktmbuf_mtod_offset(m, const struct rte_arp_hdr *,
				      RTE_ETHER_HDR_LEN);
	if (!arp_valid(arp)) {
		droce_drop(ctx, p->index, m, DROCE_DROP_ARP_BAD);
		return;
	}
	sip = arp->arp_data.arp_sip;
	tip = arp->arp_data.arp_tip;
	if (sip == p->addr) {
		if (!rte_is_same_ether_addr(&arp->arp_data.arp_sha, &p->mac) &&
		    !p->arp_conflict_logged) {
			NET_LOG(WARNING, "port %u: " RTE_ETHER_ADDR_PRT_FMT
				" claims our address " NET_IPV4_FMT, p->index,
				RTE_ETHER_ADDR_BYTES(&arp->arp_data.arp_sha),
				NET_IPV4_BYTES(sip));
			p->arp_conflict_logged = true;
		}
		droce_drop(ctx, p->index, m, DROCE_DROP_ARP_BAD);
		return;
	}
	if (tip != p->addr) {
		droce_drop(ctx, p->index, m, DROCE_DROP_NOT_FOR_US);
		return;
	}
	/* A probe (sender 0.0.0.0) is answered, and teaches nothing. */
	if (sip != 0 && !arp_sender_is_host(p, sip)) {
		droce_drop(ctx, p->index, m, DROCE_DROP_ARP_BAD);
		return;
	}
	if (sip != 0)
		arp_learn(ctx, p, sip, &arp->arp_data.arp_sha,
			  arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REQUEST));
	if (arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REQUEST))
		arp_reply(ctx, p, m);
	else
		rte_pktmbuf_free(m);
}

int
net_arp_ready(struct droce_lcore_ctx *ctx, struct net_port *p, rte_be32_t next_hop,
	      struct rte_ether_addr *mac)
{
	struct arp_entry *e = arp_lookup(p, next_hop);

	if (e == NULL) {
		if (arp_may_resolve(p) && (e = arp_create(p, next_hop)) != NULL) {
			arp_send_request(ctx, p, next_hop);
			arp_arm(e);
		}
		return -EAGAIN;
	}
	if (e->state == ARP_INCOMPLETE)
		return -EAGAIN;
	if (mac != NULL)
		*mac = e->mac;
	return 0;
}

void
net_arp_output(struct droce_lcore_ctx *ctx, struct net_port *p,
	       struct rte_mbuf *m, rte_be32_t next_hop)
{
	struct arp_entry *e = arp_lookup(p, next_hop);
	struct rte_ether_hdr *eth;

	if (e == NULL) {
		if (!arp_may_resolve(p) || (e = arp_create(p, next_hop)) == NULL) {
			droce_drop(ctx, p->index, m, DROCE_DROP_ARP_UNRESOLVED);
			return;
		}
		arp_send_request(ctx, p, next_hop);
		arp_arm(e);
	}
	if (e->state == ARP_INCOMPLETE) {
		if (e->nb_pending == NET_ARP_PENDING)
			droce_drop(ctx, p->index, m, DROCE_DROP_ARP_UNRESOLVED);
		else
			e->pending[e->nb_pending++] = m;
		return;
	}
	/* An entry confirmed since the round's time was read is fresh. */
	if (e->state == ARP_REACHABLE && net_round_tsc(ctx) > e->confirmed_tsc &&
	    net_round_tsc(ctx) - e->confirmed_tsc > p->stack->arp_timeout_tsc) {
		/* Keep sending to the known MAC while asking again. */
		arp_set_state(p, e, ARP_STALE);
		e->tries = 0;
		arp_send_request(ctx, p, next_hop);
		arp_arm(e);
	}
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	eth->dst_addr = e->mac;
	net_tx(ctx, p, m);
}

int
net_arp_init(struct net_port *p)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters hp = {
		.name = name,
		.entries = NET_ARP_ENTRIES,
		.key_len = sizeof(rte_be32_t),
		.socket_id = rte_eth_dev_socket_id(p->port_id),
	};

	snprintf(name, sizeof(name), "droce%u_arp%u", p->stack->instance,
		 p->index);
	p->arp_hash = rte_hash_create(&hp);
	if (p->arp_hash == NULL)
		return -rte_errno;
	for (unsigned int i = 0; i < NET_ARP_ENTRIES; i++)
		rte_timer_init(&p->arp[i].timer);
	p->arp_tokens = NET_ARP_REQUESTS_PER_S;
	p->arp_tokens_tsc = rte_get_timer_cycles();
	return 0;
}

void
net_arp_free(struct net_port *p)
{
	for (unsigned int i = 0; i < NET_ARP_ENTRIES; i++) {
		struct arp_entry *e = &p->arp[i];

		rte_timer_stop_sync(&e->timer);
		for (uint8_t k = 0; k < e->nb_pending; k++)
			rte_pktmbuf_free(e->pending[k]);
		e->nb_pending = 0;
		e->state = ARP_FREE;
	}
	p->arp_incomplete = 0;
	rte_hash_free(p->arp_hash);
	p->arp_hash = NULL;
}
