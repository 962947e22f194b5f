/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * One UDP port (4791) for every RoCEv2 consumer of a stack: the sensor
 * receiver and the RC transport claim ranges of destination QPNs and each
 * burst is cut into runs by owner. A burst for one owner (the sensor
 * path's usual case) is handed on whole, without a copy.
 */

#include <errno.h>
#include <pthread.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "droce_net.h"
#include "droce_roce.h"

#define DEMUX_MAX_STACKS 16
#define DEMUX_MAX_CLAIMS 8

struct demux_claim {
	uint32_t first, last;
	droce_udp_handler_t fn;
	void *arg;
};

struct roce_demux {
	struct droce_stack *stack;
	bool registered;                /* the UDP port is ours on this stack */
	/* Claims are written before nb_claims counts them (release), so a
	 * worker sees whole ones; the narrowest range holding a QPN wins.
	 */
	unsigned int nb_claims;
	struct demux_claim claim[DEMUX_MAX_CLAIMS];
};

static struct roce_demux demuxes[DEMUX_MAX_STACKS];
static pthread_mutex_t demux_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct demux_claim *
claim_of(const struct roce_demux *d, unsigned int nb, uint32_t qpn)
{
	const struct demux_claim *best = NULL;

	for (unsigned int i = 0; i < nb; i++) {
		const struct demux_claim *c = &d->claim[i];

		if (qpn >= c->first && qpn <= c->last &&
		    (best == NULL || c->last - c->first < best->last - best->first))
			best = c;
	}
	return best;
}

/* The owner of a packet; NULL when none claims it or it has no BTH (it is
 * then dropped here).
 */
static const struct demux_claim *
packet_owner(struct droce_lcore_ctx *ctx, uint16_t port, const struct roce_demux *d,
	     unsigned int nb, struct rte_mbuf *m, uint32_t *last_qpn,
	     const struct demux_claim **last_owner)
{
	uint32_t bth_off = droce_udp_pkt_l4_offset(m) + sizeof(struct rte_udp_hdr);
	const struct droce_bth *bth;
	const struct demux_claim *c;
	uint32_t qpn;

	if (rte_pktmbuf_data_len(m) < bth_off + sizeof(*bth)) {
		/* Whoever claims everything judges what is not RoCE. */
		c = claim_of(d, nb, 0);
		if (c == NULL || c->first != 0 || c->last != DROCE_QPN_MASK) {
			droce_drop(ctx, port, m, DROCE_DROP_TRUNCATED);
			return NULL;
		}
		return c;
	}
	bth = rte_pktmbuf_mtod_offset(m, const struct droce_bth *, bth_off);
	qpn = droce_bth_dqpn(bth);
	/* A burst is mostly runs of one QP: its owner is looked up once. */
	if (qpn != *last_qpn) {
		*last_qpn = qpn;
		*last_owner = claim_of(d, nb, qpn);
	}
	c = *last_owner;
	if (c == NULL)
		droce_drop(ctx, port, m, DROCE_DROP_UDP_NO_HANDLER);
	return c;
}

static void
demux_burst(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
	    struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	const struct roce_demux *d = arg;
	unsigned int nb = __atomic_load_n(&d->nb_claims, __ATOMIC_ACQUIRE);
	const struct demux_claim *run_owner = NULL, *last_owner = NULL;
	uint32_t last_qpn = UINT32_MAX;
	uint16_t run_start = 0, run_len = 0;

	/* One consumer that claims every QPN (the sensor path alone) also
	 * judges packets with no BTH: the burst is its own.
	 */
	if (nb == 1 && d->claim[0].first == 0 && d->claim[0].last == DROCE_QPN_MASK) {
		d->claim[0].fn(ctx, port, queue, pkts, n, d->claim[0].arg);
		return;
	}
	for (uint16_t i = 0; i < n; i++) {
		const struct demux_claim *c = packet_owner(ctx, port, d, nb, pkts[i],
							   &last_qpn, &last_owner);

		/* A run is packets side by side for one owner; a dropped one
		 * ends it.
		 */
		if (c != NULL && c == run_owner && run_start + run_len == i) {
			run_len++;
			continue;
		}
		if (run_len != 0)
			run_owner->fn(ctx, port, queue, &pkts[run_start], run_len, run_owner->arg);
		run_owner = c;
		run_start = i;
		run_len = c != NULL;
	}
	if (run_len != 0)
		run_owner->fn(ctx, port, queue, &pkts[run_start], run_len, run_owner->arg);
}

static struct roce_demux *
demux_of(struct droce_stack *s, bool create)
{
	struct roce_demux *free_slot = NULL;

	for (unsigned int i = 0; i < DEMUX_MAX_STACKS; i++) {
		if (demuxes[i].stack == s)
			return &demuxes[i];
		if (demuxes[i].stack == NULL && free_slot == NULL)
			free_slot = &demuxes[i];
	}
	if (!create || free_slot == NULL)
		return NULL;
	*free_slot = (struct roce_demux){ .stack = s };
	return free_slot;
}

static bool
ranges_cross(const struct demux_claim *c, uint32_t first, uint32_t last)
{
	bool apart = last < c->first || first > c->last;
	bool nested = (first >= c->first && last <= c->last) ||
		      (c->first >= first && c->last <= last);

	return !apart && (!nested || (first == c->first && last == c->last));
}

int
droce_roce_claim_qps(struct droce_stack *s, uint32_t first_qpn, uint32_t last_qpn,
		     droce_udp_handler_t fn, void *arg)
{
	struct roce_demux *d;
	int ret = 0;

	if (s == NULL || fn == NULL || first_qpn > last_qpn || last_qpn > DROCE_QPN_MASK)
		return -EINVAL;
	pthread_mutex_lock(&demux_lock);
	d = demux_of(s, true);
	if (d == NULL) {
		ret = -ENOSPC;
		goto out;
	}
	for (unsigned int i = 0; i < d->nb_claims; i++)
		if (ranges_cross(&d->claim[i], first_qpn, last_qpn)) {
			ret = -EEXIST;
			goto out;
		}
	if (d->nb_claims == DEMUX_MAX_CLAIMS) {
		ret = -ENOSPC;
		goto out;
	}
	if (!d->registered) {
		ret = droce_udp_register(s, DROCE_ROCE_UDP_PORT, DROCE_UDP_ON_WORKER,
					 demux_burst, d);
		if (ret != 0)
			goto out;
		d->registered = true;
	}
	d->claim[d->nb_claims] = (struct demux_claim){
		.first = first_qpn, .last = last_qpn, .fn = fn, .arg = arg,
	};
	__atomic_store_n(&d->nb_claims, d->nb_claims + 1, __ATOMIC_RELEASE);
out:
	if (d != NULL && !d->registered)
		d->stack = NULL;
	pthread_mutex_unlock(&demux_lock);
	return ret;
}

void
droce_roce_release_qps(struct droce_stack *s, droce_udp_handler_t fn, void *arg)
{
	struct roce_demux *d;

	pthread_mutex_lock(&demux_lock);
	d = demux_of(s, false);
	if (d != NULL) {
		unsigned int kept = 0;

		for (unsigned int i = 0; i < d->nb_claims; i++)
			if (d->claim[i].fn != fn || d->claim[i].arg != arg)
				d->claim[kept++] = d->claim[i];
		d->nb_claims = kept;
		/* The slot is free again with its last claim: a later stack
		 * may be given the same address.
		 */
		if (kept == 0)
			d->stack = NULL;
	}
	pthread_mutex_unlock(&demux_lock);
}

bool
droce_roce_qp_claimed_by(struct droce_stack *s, uint32_t qpn, droce_udp_handler_t fn,
			 const void *arg)
{
	const struct demux_claim *c;
	struct roce_demux *d;
	bool mine;

	pthread_mutex_lock(&demux_lock);
	d = demux_of(s, false);
	c = d != NULL ? claim_of(d, d->nb_claims, qpn) : NULL;
	mine = c != NULL && c->fn == fn && c->arg == arg;
	pthread_mutex_unlock(&demux_lock);
	return mine;
}
