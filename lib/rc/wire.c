/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Where the transport meets the stack. Each QP has one owner lcore: the
 * control lcore, or (DROCE_RC_OWNERS_WORKERS) a worker chosen by the QP's
 * slot. Workers hand the RoCEv2 packets of RC QPs to their owners through
 * lock-free rings, one per owner; threads that post work ring the owner's
 * doorbell (another ring) with the QP. The owner's round, a control or
 * worker hook, checks each packet (ICRC, QP, peer, state) and gives it to
 * the completer (responses) or the responder (requests), then lets each
 * of its QPs with work send, a budget at a time. Nothing here looks at a
 * QP that has nothing to do. Worker owners send on their own TX queues to
 * a MAC the control lcore, which runs ARP, looked up for the QP.
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_udp.h>

#include "droce_net.h"
#include "rc_private.h"

/* Frames the transport may have built and not yet seen leave. */
#define RC_TX_POOL_SIZE 4095
#define RC_TX_POOL_CACHE 128
/* Two a zero-copy frame: its payload's and its trailer's. */
#define RC_SEG_POOL_SIZE (2 * (RC_TX_POOL_SIZE + 1) - 1)
_Static_assert(RC_SEG_POOL_SIZE / 2 + RC_MR_TX_BASE < UINT16_MAX,
	       "a region's count of sending mbufs cannot overflow");

static unsigned int pools_made; /* names them: a pool may outlive its device */

/* Bursts the owner takes from the rings per round. */
#define RC_RX_BURST 64
#define RC_RX_ROUND 256
/* neigh_round()'s look at the clock, busy polling: one control round in so many. */
#define NEIGH_ROUNDS_PER_TSC 64u

/* RC QPNs: a generation above the slot, so never below 0x10000 (lib/rx
 * hands out stream QPNs below that).
 */
#define RC_FIRST_QPN (1u << RC_QPN_SLOT_BITS)
#define RC_QPN_SLOT_MASK ((1u << RC_QPN_SLOT_BITS) - 1)

struct rc_owner *
rc_owner_of_slot(struct droce_rc_device *dev, uint32_t slot)
{
	return &dev->owner[dev->nb_owners == 1 ? 0 : slot % dev->nb_owners];
}

/* ---- worker side ------------------------------------------------------------ */

/* By the QPN's slot; a packet too short to have one goes to the first
 * owner, which drops it as bad.
 */
static struct rc_owner *
owner_of_packet(struct droce_rc_device *dev, const struct rte_mbuf *m)
{
	uint32_t bth_off = droce_udp_pkt_l4_offset(m) + sizeof(struct rte_udp_hdr);
	const struct droce_bth *bth;

	if (rte_pktmbuf_data_len(m) < bth_off + sizeof(*bth))
		return &dev->owner[0];
	bth = rte_pktmbuf_mtod_offset(m, const struct droce_bth *, bth_off);
	return rc_owner_of_slot(dev, droce_bth_dqpn(bth) & RC_QPN_SLOT_MASK);
}

static void
hand_over(struct droce_rc_device *dev, struct rc_owner *o, struct rte_mbuf **pkts, uint16_t n)
{
	unsigned int sent = rte_ring_mp_enqueue_burst(o->rx_ring, (void **)pkts, n, NULL);

	if (sent < n) {
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
		__atomic_fetch_add(&dev->rx_ring_full, n - sent, __ATOMIC_RELAXED);
	}
	/* A worker owner busy-polls; the control lcore may sleep. */
	if (sent != 0 && o->worker < 0)
		droce_control_wake(dev->stack);
}

static void
rc_worker_input(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
		struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct droce_rc_device *dev = arg;
	struct rc_owner *run;
	uint16_t start = 0;

	(void)ctx;
	(void)queue;
	if (port != dev->port) {
		rte_pktmbuf_free_bulk(pkts, n);
		__atomic_fetch_add(&dev->rx_wrong_port, n, __ATOMIC_RELAXED);
		return;
	}
	if (dev->nb_owners == 1) {
		hand_over(dev, &dev->owner[0], pkts, n);
		return;
	}
	/* Runs of packets for one owner go in one enqueue. */
	run = owner_of_packet(dev, pkts[0]);
	for (uint16_t i = 1; i < n; i++) {
		struct rc_owner *o = owner_of_packet(dev, pkts[i]);

		if (o != run) {
			hand_over(dev, run, pkts + start, (uint16_t)(i - start));
			run = o;
			start = i;
		}
	}
	hand_over(dev, run, pkts + start, (uint16_t)(n - start));
}

/* ---- sending ---------------------------------------------------------------- */

bool
rc_sge_copy_in(const struct droce_qp *qp, const struct droce_sge *sge, uint32_t nb_sge,
	       uint32_t offset, const void *src, uint32_t len)
{
	const uint8_t *from = src;

	for (uint32_t i = 0; i < nb_sge && len != 0; i++) {
		struct droce_mr *mr;
		uint32_t take;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		take = RTE_MIN(len, sge[i].length - offset);
		/* The region may have been deregistered since the post. */
		mr = rc_mr_check(qp->pd, sge[i].lkey, sge[i].addr + offset, take,
				 DROCE_ACCESS_LOCAL_WRITE);
		if (mr == NULL)
			return false;
		memcpy(rc_mr_cpu(mr, sge[i].addr + offset), from, take);
		from += take;
		len -= take;
		offset = 0;
	}
	return len == 0;
}

/* rc_sge_place(), and the region it found in @p region. */
static void *
sge_region(const struct droce_qp *qp, const struct droce_sge *sge, uint32_t nb_sge,
	   uint32_t offset, uint32_t len, int access, struct droce_mr **region)
{
	for (uint32_t i = 0; i < nb_sge; i++) {
		struct droce_mr *mr;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		if (sge[i].length - offset < len)
			return NULL;
		mr = rc_mr_check(qp->pd, sge[i].lkey, sge[i].addr + offset, len, access);
		*region = mr;
		return mr != NULL ? rc_mr_cpu(mr, sge[i].addr + offset) : NULL;
	}
	return NULL;
}

void *
rc_sge_place(const struct droce_qp *qp, const struct droce_sge *sge, uint32_t nb_sge,
	     uint32_t offset, uint32_t len, int access)
{
	struct droce_mr *mr;

	return sge_region(qp, sge, nb_sge, offset, len, access, &mr);
}

/* Gather @p len bytes from the SGE list, from byte @p skip, into @p dst. */
static bool
sge_copy_out(const struct droce_qp *qp, const struct droce_sge *sge, uint32_t nb_sge,
	     uint32_t skip, uint8_t *dst, uint32_t len)
{
	for (uint32_t i = 0; i < nb_sge && len != 0; i++) {
		struct droce_mr *mr;
		uint32_t take;

		if (skip >= sge[i].length) {
			skip -= sge[i].length;
			continue;
		}
		take = RTE_MIN(len, sge[i].length - skip);
		mr = rc_mr_check(qp->pd, sge[i].lkey, sge[i].addr + skip, take, 0);
		if (mr == NULL)
			return false;
		memcpy(dst, rc_mr_cpu(mr, sge[i].addr + skip), take);
		dst += take;
		len -= take;
		skip = 0;
	}
	return len == 0;
}

/* Whether @p spec's payload, inside @p mr, goes out from there. */
static bool
zero_copy_from(const struct droce_rc_device *dev, const struct droce_mr *mr,
	       const struct droce_frame_spec *spec)
{
	return mr != NULL && spec->payload_len >= RC_ZERO_COPY_MIN && rc_mr_of(mr)->tx_from &&
	       atomic_load_explicit(&dev->zero_copy, memory_order_relaxed);
}

/* Headers into @p m, the payload attached from its region behind them:
 * the region counts the mbuf until the port has sent it.
 */
static int
build_zero_copy(struct droce_rc_device *dev, struct rte_mbuf *m, struct droce_frame_spec *spec,
		struct droce_mr *mr)
{
	struct rc_mr *rmr = rc_mr_of(mr);
	void *payload = (void *)(uintptr_t)spec->payload;
	struct rte_mbuf *seg[2];

	if (rte_pktmbuf_alloc_bulk(dev->seg_pool, seg, 2) != 0)
		return -ENOBUFS;
	rte_mbuf_ext_refcnt_update(&rmr->tx_shinfo, 1);
	/* A driver that copies reads by address; a device that reads by DMA
	 * has the memory at IOVA = VA (mr_tx_from()).
	 */
	rte_pktmbuf_attach_extbuf(seg[0], payload, (rte_iova_t)(uintptr_t)payload,
				  (uint16_t)spec->payload_len, &rmr->tx_shinfo);
	seg[0]->data_len = (uint16_t)spec->payload_len;
	seg[0]->pkt_len = spec->payload_len;
	if (droce_frame_build_chained(m, spec, seg[0], seg[1]) != 0) {
		rte_pktmbuf_free(seg[0]);
		rte_pktmbuf_free(seg[1]);
		return -ENOSPC;
	}
	return 0;
}

/* What every frame of @p qp says of the path: addresses, ports, QPNs. */
static void
spec_path(const struct droce_qp *qp, struct droce_frame_spec *spec)
{
	const struct droce_rc_device *dev = qp->dev;

	spec->src_ip4 = dev->ip;
	spec->dst_ip4 = qp->peer_ip;
	spec->ttl = qp->attr.ah_attr.hop_limit;
	spec->traffic_class = qp->attr.ah_attr.traffic_class;
	spec->udp_src_port = qp->udp_sport;
	spec->src_qp = qp->qpn;
	spec->dest_qp = qp->attr.dest_qp_num;
	if (qp->owner->worker >= 0) /* it goes out as built: droce_tx() */
		memcpy(&spec->src_mac, &dev->mac, RTE_ETHER_ADDR_LEN);
}

/* A frame for @p qp: headers from @p spec, payload copied from
 * spec->payload, or sent from there when it lies in @p mr and zero copy
 * allows.
 */
static struct rte_mbuf *
frame_out(struct droce_qp *qp, struct droce_frame_spec *spec, struct droce_mr *mr)
{
	struct droce_rc_device *dev = qp->dev;
	struct rte_mbuf *m = rte_pktmbuf_alloc(dev->pool);
	int ret;

	if (m == NULL) {
		rte_errno = ENOBUFS;
		return NULL;
	}
	spec_path(qp, spec);
	if (zero_copy_from(dev, mr, spec)) {
		ret = build_zero_copy(dev, m, spec, mr);
		if (ret == 0)
			qp->owner->stats.tx_zero_copy++;
		else
			ret = droce_frame_build(m, spec);
	} else {
		ret = droce_frame_build(m, spec);
	}
	if (ret != 0) {
		rte_pktmbuf_free(m);
		rte_errno = ENOBUFS;
		return NULL;
	}
	return m;
}

/* Fill a built frame's zeroed payload from the SGE list, then its ICRC. */
static bool
gather_payload(const struct droce_qp *qp, struct rte_mbuf *m, const struct droce_frame_spec *spec,
	       const struct droce_sge *sge, uint32_t nb_sge, uint32_t skip)
{
	uint8_t *l3 = rte_pktmbuf_mtod_offset(m, uint8_t *, RTE_ETHER_HDR_LEN);
	uint32_t payload_off = sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) +
			       droce_opcode(spec->opcode)->hdr_len;

	if (!sge_copy_out(qp, sge, nb_sge, skip, l3 + payload_off, spec->payload_len))
		return false;
	droce_icrc_fill_mbuf(m, RTE_ETHER_HDR_LEN);
	return true;
}

struct rte_mbuf *
rc_frame(struct droce_qp *qp, struct droce_frame_spec *spec, const struct droce_sge *sge,
	 uint32_t nb_sge, uint32_t skip)
{
	struct droce_mr *mr = NULL;
	struct rte_mbuf *m;

	if (spec->payload_len == 0 || spec->payload != NULL || nb_sge == 0)
		return frame_out(qp, spec, NULL);
	spec->payload = sge_region(qp, sge, nb_sge, skip, spec->payload_len, 0, &mr);
	if (spec->payload != NULL)
		return frame_out(qp, spec, mr);
	/* Spread over several SGEs: gathered into the frame. */
	m = frame_out(qp, spec, NULL);
	if (m != NULL && !gather_payload(qp, m, spec, sge, nb_sge, skip)) {
		rte_pktmbuf_free(m);
		rte_errno = EACCES;
		return NULL;
	}
	return m;
}

static void
send_frame(struct droce_qp *qp, struct rte_mbuf *m, bool lazy)
{
	struct droce_rc_device *dev = qp->dev;
	struct rc_owner *o = qp->owner;

	o->stats.tx_packets++;
	if (o->worker < 0) {
		struct droce_lcore_ctx *ctx = droce_control_ctx(dev->stack);

		if (lazy)
			droce_eth_send_lazy(ctx, dev->port, m, qp->peer_ip);
		else
			droce_eth_send(ctx, dev->port, m, qp->peer_ip);
	} else if (!atomic_load_explicit(&qp->mac_known, memory_order_acquire)) {
		/* An answer to a peer not looked up yet: it asks again. */
		droce_drop(o->ctx, dev->port, m, DROCE_DROP_ARP_UNRESOLVED);
	} else {
		/* The MAC read after the flag that says it is there. */
		uint64_t mac = atomic_load_explicit(&qp->peer_mac, memory_order_relaxed);

		memcpy(&rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->dst_addr, &mac,
		       RTE_ETHER_ADDR_LEN);
		if (lazy)
			droce_tx_lazy(o->ctx, dev->port, m);
		else
			droce_tx(o->ctx, dev->port, m);
	}
}

void
rc_send_frame(struct droce_qp *qp, struct rte_mbuf *m)
{
	send_frame(qp, m, false);
}

/* An ACK or NAK from the QP's prototype, made first if need be. */
static struct rte_mbuf *
ack_frame(struct droce_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(qp->dev->pool);

	if (m == NULL)
		return NULL;
	if (!qp->ack_proto_ready) {
		struct droce_frame_spec spec = { .opcode = DROCE_OP_ACKNOWLEDGE };

		spec_path(qp, &spec);
		/* Cannot fail: an ACKNOWLEDGE over IPv4 without payload. */
		RTE_VERIFY(droce_ack_proto_init(&qp->ack_proto, &spec) == 0);
		qp->ack_proto_ready = true;
	}
	if (droce_ack_build(m, &qp->ack_proto, psn, syndrome, qp->resp.msn) != 0) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
}

static void
send_ack(struct droce_qp *qp, uint8_t syndrome, uint32_t psn,
	 const struct rc_rd_resource *res, bool lazy)
{
	struct rte_mbuf *m;

	if (res != NULL) {
		struct droce_frame_spec spec = {
			.opcode = DROCE_OP_ATOMIC_ACKNOWLEDGE, .psn = psn, .syndrome = syndrome,
			.msn = res->msn, .orig = res->orig,
		};

		m = rc_frame(qp, &spec, NULL, 0, 0);
	} else {
		m = ack_frame(qp, syndrome, psn);
	}
	if (m == NULL)
		return; /* the requester times out and asks again */
	qp->owner->stats.acks_sent++;
	send_frame(qp, m, lazy);
}

void
rc_send_ack(struct droce_qp *qp, uint8_t syndrome, uint32_t psn,
	    const struct rc_rd_resource *res)
{
	send_ack(qp, syndrome, psn, res, false);
}

void
rc_send_ack_lazy(struct droce_qp *qp, uint8_t syndrome, uint32_t psn)
{
	send_ack(qp, syndrome, psn, NULL, true);
}

/* ---- completions and errors --------------------------------------------------- */

/* The stage is empty before the CQ signals: a notify callback may post
 * to another QP or move one to ERR, and that publishes again.
 */
void
rc_owner_publish(struct rc_owner *o)
{
	struct rc_cq_stage *st = &o->stage;
	unsigned int n = st->n, added;

	if (n == 0)
		return;
	st->n = 0;
	added = rc_cq_enqueue(st->cq, st->wc, n);
	for (unsigned int i = added; i < n; i++)
		RC_LOG(ERR, "QP 0x%x: CQ full, a completion (wr_id %" PRIu64 ", %s) is lost",
		       st->wc[i].qp_num, st->wc[i].wr_id, droce_wc_status_str(st->wc[i].status));
	if (added != 0)
		rc_cq_added(st->cq);
}

void
rc_complete(struct droce_qp *qp, struct droce_cq *cq, const struct droce_wc *wc)
{
	struct rc_cq_stage *st = &qp->owner->stage;

	if (st->n != 0 && (st->cq != cq || st->n == RC_CQ_STAGE))
		rc_owner_publish(qp->owner);
	st->cq = cq;
	st->wc[st->n++] = *wc;
}

void
rc_qp_fail(struct droce_qp *qp, const char *why)
{
	if (qp->attr.qp_state == DROCE_QPS_ERR)
		return;
	RC_LOG(NOTICE, "QP 0x%x -> ERR: %s", qp->qpn, why);
	qp->attr.qp_state = DROCE_QPS_ERR;
	rte_timer_stop(&qp->retransmit_timer);
	rte_timer_stop(&qp->rnr_timer);
	rc_qp_flush(qp);
}

/* ---- doorbells and the active list ------------------------------------------------ */

void
rc_qp_ring_doorbell(struct droce_qp *qp)
{
	struct rc_owner *o = qp->owner;
	bool rung = false;

	/* The owner's own thread between its rounds: nothing walks the
	 * active list now, and the doorbell's locked instructions would wait
	 * for the stores of the round's TX burst.
	 */
	if (o->lcore_id == rte_lcore_id() && !o->in_round) {
		rc_qp_activate(qp);
		o->posted_since_round = true;
		return;
	}
	if (!atomic_compare_exchange_strong(&qp->doorbell_rung, &rung, true))
		return; /* the owner has not taken the last one yet */
	/* The ring holds every QP once: it cannot be full. */
	RTE_VERIFY(rte_ring_mp_enqueue(o->doorbell, qp) == 0);
	if (o->worker < 0)
		droce_control_wake(qp->dev->stack);
}

static bool qp_turn_locked(struct droce_qp *qp);
static void qp_deactivate(struct droce_qp *qp);

/*
 * Sends posted on the owner's own thread between its rounds, to a QP with
 * nothing unacknowledged, go at once, as rxe's requester runs in the
 * poster's context: the wire is idle, and waiting for the next round
 * would add most of a round to every request and its response. A QP with
 * packets in flight waits for its turn, so that a pipeline's sends leave
 * in bursts. The PSNs are read without the lock: only the owner moves
 * them while the QP runs, and a modify_qp() meanwhile at worst makes this
 * guess wrong; the turn itself takes the lock. It only tries to: a held
 * lock is another thread's (its round waits) or this thread's, a CQ
 * callback's under the owner's publish, which must not take it again. The
 * turn counts as a round: a callback that posts from within it rings the
 * doorbell.
 */
void
rc_qp_send_posted(struct droce_qp *qp)
{
	struct rc_owner *o = qp->owner;

	rc_qp_ring_doorbell(qp);
	if (o->lcore_id != rte_lcore_id() || o->in_round || o->ctx == NULL ||
	    qp->comp.psn != qp->req.psn_end || !rte_spinlock_trylock(&qp->lock))
		return;
	o->in_round = true;
	o->turn_tsc = 0;
	if (!qp_turn_locked(qp))
		qp_deactivate(qp);
	o->in_round = false;
	droce_tx_flush(o->ctx);
}

void
rc_qp_activate(struct droce_qp *qp)
{
	if (qp->on_active)
		return;
	qp->on_active = true;
	TAILQ_INSERT_TAIL(&qp->owner->active, qp, active_link);
}

static void
qp_deactivate(struct droce_qp *qp)
{
	if (!qp->on_active)
		return;
	qp->on_active = false;
	TAILQ_REMOVE(&qp->owner->active, qp, active_link);
}

/* ---- the next hop of worker-owned QPs (control lcore) ------------------------------ */

void
rc_neigh_add(struct droce_qp *qp)
{
	struct droce_rc_device *dev = qp->dev;

	if (qp->owner->worker < 0)
		return;
	atomic_store(&qp->mac_known, false);
	atomic_store(&qp->peer_mac, 0);
	rte_spinlock_lock(&dev->neigh_lock);
	if (!qp->on_neigh) {
		qp->on_neigh = true;
		TAILQ_INSERT_TAIL(&dev->neigh, qp, neigh_link);
	}
	rc_unlock(&dev->neigh_lock);
	atomic_store(&dev->neigh_new, true);
	droce_control_wake(dev->stack); /* an application thread: it may */
}

void
rc_neigh_remove(struct droce_qp *qp)
{
	struct droce_rc_device *dev = qp->dev;

	if (qp->owner->worker < 0)
		return;
	rte_spinlock_lock(&dev->neigh_lock);
	if (qp->on_neigh) {
		qp->on_neigh = false;
		TAILQ_REMOVE(&dev->neigh, qp, neigh_link);
	}
	rc_unlock(&dev->neigh_lock);
}

/* Look up the MACs of the QPs: at once for a new one, every millisecond
 * while some have none (ARP resolves meanwhile), and every QP's once a
 * second (a neighbour may change its). The lookups are brief, under the
 * list's lock only: no QP's lock is held.
 */
static unsigned int
neigh_round(struct droce_lcore_ctx *ctx, void *arg)
{
	struct droce_rc_device *dev = arg;
	bool is_new = atomic_load(&dev->neigh_new);
	bool all_known = true;
	struct droce_qp *qp;
	uint64_t now;

	/* Busy polling, the clock is looked at one round in
	 * NEIGH_ROUNDS_PER_TSC: its read costs more than the rest of an idle
	 * round. An lcore in event mode runs few rounds, each of which looks.
	 */
	if (!is_new && droce_stack_busy_poll(dev->stack) &&
	    ++dev->neigh_rounds % NEIGH_ROUNDS_PER_TSC != 0)
		return 0;
	now = rte_get_timer_cycles();
	if (!is_new && now < dev->neigh_next_tsc)
		return 0;
	atomic_store(&dev->neigh_new, false);
	rte_spinlock_lock(&dev->neigh_lock);
	TAILQ_FOREACH(qp, &dev->neigh, neigh_link) {
		struct rte_ether_addr mac;
		uint64_t v = 0;

		if (droce_neigh_mac(ctx, dev->port, qp->peer_ip, &mac) != 0) {
			all_known = false;
			continue;
		}
		memcpy(&v, &mac, RTE_ETHER_ADDR_LEN);
		atomic_store_explicit(&qp->peer_mac, v, memory_order_relaxed);
		atomic_store_explicit(&qp->mac_known, true, memory_order_release);
	}
	rc_unlock(&dev->neigh_lock);
	dev->neigh_next_tsc = now + (all_known ? rte_get_timer_hz() : rte_get_timer_hz() / 1000);
	return 0;
}

/* ---- the owner's round ------------------------------------------------------------ */

static bool
state_takes_packets(enum droce_qp_state s)
{
	return s == DROCE_QPS_RTR || s == DROCE_QPS_RTS || s == DROCE_QPS_SQD ||
	       s == DROCE_QPS_SQE;
}

#define DROCE_OP_TRANSPORT_MASK 0xe0

/* The opcode prefix of the QP's transport. */
static uint8_t
qp_transport(const struct droce_qp *qp)
{
	return qp->init.qp_type == DROCE_QPT_UC ? DROCE_OP_UC : DROCE_OP_RC;
}

/* An RC request whose payload goes where the QP's state says, not where
 * its own headers say (SEND, and WRITE after the FIRST): its ICRC is
 * checked in the pass that copies it (rc_responder_input). A bad packet
 * then leaves garbage only where the message in progress is being placed,
 * which the resend overwrites before anyone is told the message is there.
 */
static bool
icrc_fusable(const struct droce_pkt *pkt)
{
	uint32_t f = pkt->info->flags;

	return (pkt->opcode & DROCE_OP_TRANSPORT_MASK) == DROCE_OP_RC &&
	       ((f & DROCE_HDR_SEND) || ((f & DROCE_HDR_WRITE) && !(f & DROCE_HDR_RETH))) &&
	       pkt->payload_len >= RC_FUSED_MIN;
}

/* Check one packet and give it to its QP's completer or responder. The
 * QP's lock is kept in @p locked from one packet to the next: a burst is
 * mostly one QP's, and the lock is then taken once for the run.
 */
static void
packet_input(struct rc_owner *o, struct rte_mbuf *m, struct droce_qp **locked)
{
	struct droce_rc_device *dev = o->dev;
	struct droce_rc_stats *stats = &o->stats;
	const struct rte_ipv4_hdr *ip;
	const struct rte_udp_hdr *udp;
	struct droce_pkt pkt;
	struct droce_qp *qp;
	uint64_t *dropped;
	uint32_t l3_len, l4_len;
	bool icrc_pending;

	stats->rx_packets++;
	if (!rte_pktmbuf_is_contiguous(m) && rte_pktmbuf_linearize(m) != 0)
		goto bad;
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, DROCE_UDP_PKT_L3_OFFSET);
	l3_len = droce_udp_pkt_l3_len(m);
	udp = rte_pktmbuf_mtod_offset(m, const struct rte_udp_hdr *, DROCE_UDP_PKT_L3_OFFSET + l3_len);
	l4_len = rte_be_to_cpu_16(udp->dgram_len);
	if (l4_len < sizeof(*udp) ||
	    droce_roce_parse(udp + 1, l4_len - (uint32_t)sizeof(*udp), &pkt) != DROCE_PARSE_OK)
		goto bad;
	icrc_pending = icrc_fusable(&pkt);
	if (!icrc_pending && !droce_icrc_ok(ip, l3_len + l4_len)) {
		stats->bad_icrc++;
		rte_pktmbuf_free(m);
		return;
	}
	if ((droce_bth_pkey(pkt.bth) & 0x7fff) != 0x7fff) {
		dropped = &stats->bad_packet;
		goto drop;
	}
	qp = rc_qp_of_num(dev, droce_bth_dqpn(pkt.bth));
	if (qp == NULL || qp->owner != o) {
		dropped = &stats->unknown_qp;
		goto drop;
	}
	if (qp != *locked) {
		if (*locked != NULL)
			rc_qp_unlock_owner(*locked);
		rte_spinlock_lock(&qp->lock);
		*locked = qp;
	}
	if (!state_takes_packets(qp->attr.qp_state) || qp->dead) {
		dropped = &stats->wrong_state;
		goto drop;
	} else if ((pkt.opcode & DROCE_OP_TRANSPORT_MASK) != qp_transport(qp)) {
		/* A CNP, or a UC/UD packet for an RC QP (and so on): not a
		 * request or response of this QP's transport.
		 */
		dropped = &stats->bad_packet;
		goto drop;
	} else if (ip->src_addr != qp->peer_ip) {
		dropped = &stats->wrong_peer;
		goto drop;
	} else if (pkt.info->flags & DROCE_HDR_RESP) {
		rc_completer_input(qp, &pkt);
		rte_pktmbuf_free(m);
		rc_qp_activate(qp);
	} else {
		rc_responder_input(qp, m, &pkt, icrc_pending); /* takes the mbuf */
		rc_qp_activate(qp);
	}
	return;
drop:
	/* A packet whose ICRC was left for the copy counts as what it is. */
	if (icrc_pending && !droce_icrc_ok(ip, l3_len + l4_len))
		dropped = &stats->bad_icrc;
	(*dropped)++;
	rte_pktmbuf_free(m);
	return;
bad:
	stats->bad_packet++;
	rte_pktmbuf_free(m);
}

static void
qp_free(struct droce_qp *qp)
{
	rte_timer_stop_sync(&qp->retransmit_timer);
	rte_timer_stop_sync(&qp->rnr_timer);
	qp_deactivate(qp);
	atomic_fetch_sub(&qp->owner->nb_qps, 1);
	rc_responder_free(qp);
	rc_queue_free(&qp->sq);
	rc_queue_free(&qp->rq);
	rte_free(qp);
}

void
rc_qp_release(struct droce_qp *qp)
{
	if (rte_lcore_id() != qp->owner->lcore_id) {
		rc_qp_ring_doorbell(qp); /* the owner frees it when it takes it */
		return;
	}
	/* On the owner: free now, unless the doorbell ring still holds it. */
	if (!atomic_load(&qp->doorbell_rung))
		qp_free(qp);
}

static void
take_doorbells(struct rc_owner *o)
{
	struct droce_qp *qps[RC_RX_BURST];
	unsigned int n;

	while ((n = rte_ring_sc_dequeue_burst(o->doorbell, (void **)qps, RC_RX_BURST,
					      NULL)) != 0)
		for (unsigned int i = 0; i < n; i++) {
			struct droce_qp *qp = qps[i];

			atomic_store(&qp->doorbell_rung, false);
			/* The flag's store before the look at dead, on any CPU:
			 * a destroyer whose doorbell found it still set relies
			 * on this look.
			 */
			atomic_thread_fence(memory_order_seq_cst);
			if (__atomic_load_n(&qp->dead, __ATOMIC_ACQUIRE))
				qp_free(qp);
			else
				rc_qp_activate(qp);
		}
}

/* One QP's turn, its lock taken: its answers and held requests, its
 * sends, the ACK it owes; the lock is let go. True while it has more to
 * do.
 */
static bool
qp_turn_locked(struct droce_qp *qp)
{
	unsigned int budget = RC_TX_BUDGET;
	bool more = false;

	if (qp->dead) {
		/* Destroyed: its CQs may be gone; the doorbell frees it. */
		rc_qp_unlock_owner(qp);
		return false;
	}
	/* Nothing goes out until ARP knows the peer: it would hold a few
	 * packets of a burst and drop the rest. A worker owner waits for the
	 * control lcore to hand it the MAC.
	 */
	if (state_takes_packets(qp->attr.qp_state) &&
	    (qp->owner->worker < 0
	     ? droce_neigh_ready(droce_control_ctx(qp->dev->stack), qp->dev->port,
				 qp->peer_ip) == -EAGAIN
	     : !atomic_load_explicit(&qp->mac_known, memory_order_acquire))) {
		/* Work that cannot go fails in time, as lost packets would. */
		if (qp->attr.qp_state == DROCE_QPS_RTS)
			rc_completer_path_wait(qp);
		more = qp->attr.qp_state != DROCE_QPS_ERR;
		rc_qp_unlock_owner(qp);
		return more;
	}
	qp->comp.path_wait_since = 0;
	if (state_takes_packets(qp->attr.qp_state)) {
		budget -= rc_responder_run(qp, budget);
		rc_responder_flush_ack(qp);
		more = qp->resp.answering != NULL || qp->resp.held_count != 0;
	}
	if (qp->attr.qp_state == DROCE_QPS_RTS && budget != 0) {
		unsigned int sent = rc_requester_run(qp, budget);

		/* A QP that found no mbuf stays on the list: no timer or
		 * packet may come to wake it (nothing of it is in flight).
		 */
		more |= sent == budget || qp->req.starved;
	} else if (qp->attr.qp_state == DROCE_QPS_RTS) {
		more = true;
	}
	if (qp->attr.qp_state == DROCE_QPS_ERR)
		rc_qp_flush(qp); /* receives posted since still complete */
	rc_qp_unlock_owner(qp);
	return more;
}

static bool
qp_turn(struct droce_qp *qp)
{
	rte_spinlock_lock(&qp->lock);
	return qp_turn_locked(qp);
}

static unsigned int
owner_round(struct rc_owner *o, struct droce_lcore_ctx *ctx)
{
	struct rte_mbuf *pkts[RC_RX_BURST];
	unsigned int n, taken = 0;
	struct droce_qp *qp, *next;

	o->ctx = ctx;
	o->lcore_id = rte_lcore_id();
	o->in_round = true;
	o->turn_tsc = 0;
	o->posted_since_round = false;
	while (taken < RC_RX_ROUND &&
	       (n = rte_ring_sc_dequeue_burst(o->rx_ring, (void **)pkts, RC_RX_BURST,
					      NULL)) != 0) {
		struct droce_qp *locked = NULL;

		for (unsigned int i = 0; i < n; i++)
			packet_input(o, pkts[i], &locked);
		if (locked != NULL)
			rc_qp_unlock_owner(locked);
		taken += n;
	}
	take_doorbells(o);
	for (qp = TAILQ_FIRST(&o->active); qp != NULL; qp = next) {
		next = TAILQ_NEXT(qp, active_link);
		if (!qp_turn(qp))
			qp_deactivate(qp);
	}
	o->in_round = false;
	return taken + !TAILQ_EMPTY(&o->active) + !rte_ring_empty(o->rx_ring);
}

/* A deregistration waits for mbufs sent from its region: a NIC frees
 * them only when its queue's own lcore asks (its next TX burst).
 */
static void
reclaim_if_asked(struct rc_owner *o, struct droce_lcore_ctx *ctx)
{
	uint32_t asked = atomic_load_explicit(&o->dev->tx_reclaim, memory_order_relaxed);

	if (asked != o->tx_reclaimed) {
		o->tx_reclaimed = asked;
		droce_tx_reclaim(ctx);
	}
}

/* The control lcore's hook: every QP (DROCE_RC_OWNERS_CONTROL). */
static unsigned int
control_owner_round(struct droce_lcore_ctx *ctx, void *arg)
{
	struct droce_rc_device *dev = arg;

	reclaim_if_asked(&dev->owner[0], ctx);
	return owner_round(&dev->owner[0], ctx);
}

/* The control lcore's last hook: the sends that the round's other hooks
 * (lib/rpc's workers) posted after the owner's round, to QPs with packets
 * in flight, leave in this round instead of the next. A round in which
 * nothing was posted since pays a load.
 */
static unsigned int
control_owner_last(struct droce_lcore_ctx *ctx, void *arg)
{
	struct droce_rc_device *dev = arg;

	if (!dev->owner[0].posted_since_round)
		return 0;
	return owner_round(&dev->owner[0], ctx);
}

/* A worker's hook (DROCE_RC_OWNERS_WORKERS): its share of the QPs, and
 * their timers (only the control lcore runs rte_timer_manage otherwise).
 * A worker without QPs or packets for them pays two loads.
 */
static unsigned int
worker_owner_round(struct droce_lcore_ctx *ctx, void *arg)
{
	struct droce_rc_device *dev = arg;
	int w = droce_lcore_worker_index(ctx);
	struct rc_owner *o;

	if (w < 0 || (uint32_t)w >= dev->nb_owners)
		return 0;
	/* Its timers go to this lcore's list: it must have one. */
	RTE_VERIFY(rte_lcore_id() < RTE_MAX_LCORE);
	o = &dev->owner[w];
	reclaim_if_asked(o, ctx);
	if (atomic_load_explicit(&o->nb_qps, memory_order_relaxed) == 0 &&
	    rte_ring_empty(o->rx_ring) && rte_ring_empty(o->doorbell))
		return 0;
	rte_timer_manage();
	return owner_round(o, ctx);
}

/* ---- setup -------------------------------------------------------------------- */

/* An owner's rings. */
static int
owner_init(struct droce_rc_device *dev, struct rc_owner *o, int worker)
{
	char name[RTE_RING_NAMESIZE];

	o->dev = dev;
	o->worker = worker;
	o->lcore_id = worker < 0 ? droce_control_lcore(dev->stack) : RC_LCORE_UNKNOWN;
	TAILQ_INIT(&o->active);
	atomic_init(&o->nb_qps, 0);
	snprintf(name, sizeof(name), "rc_rx_%p_%d", (void *)dev, worker);
	o->rx_ring = rte_ring_create(name, RC_RX_RING_SIZE, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "rc_db_%p_%d", (void *)dev, worker);
	o->doorbell = rte_ring_create(name, RC_DOORBELL_RING_SIZE, SOCKET_ID_ANY, RING_F_SC_DEQ);
	return o->rx_ring != NULL && o->doorbell != NULL ? 0 : -ENOMEM;
}

/* A frame may still sit in a TX queue or, over a ring or memif port, at
 * the peer: then its pool stays, for the EAL to take at its end.
 */
static void
pool_free_when_full(struct rte_mempool *pool, const char *what)
{
	if (pool != NULL && rte_mempool_full(pool))
		rte_mempool_free(pool);
	else if (pool != NULL)
		RC_LOG(DEBUG, "close: %u %s are still out; their pool stays",
		       pool->size - rte_mempool_avail_count(pool), what);
}

int
rc_wire_open(struct droce_rc_device *dev, char *err, size_t errlen)
{
	bool on_workers = dev->owners == DROCE_RC_OWNERS_WORKERS;
	struct rte_ether_addr mac;
	char name[RTE_MEMPOOL_NAMESIZE];
	int ret;

	droce_port_mac(dev->stack, dev->port, &mac);
	memcpy(&dev->mac, &mac, RTE_ETHER_ADDR_LEN);
	rte_spinlock_init(&dev->neigh_lock);
	TAILQ_INIT(&dev->neigh);
	/* Frames the transport builds come from a pool of its own, so that a
	 * burst of sends cannot empty the port's pool that RX refills from.
	 */
	snprintf(name, sizeof(name), "rc_tx_%u",
		 __atomic_fetch_add(&pools_made, 1, __ATOMIC_RELAXED));
	dev->pool = rte_pktmbuf_pool_create(name, RC_TX_POOL_SIZE, RC_TX_POOL_CACHE, 0,
					    (uint16_t)(RTE_PKTMBUF_HEADROOM + RTE_ETHER_HDR_LEN +
						       dev->ip_mtu),
					    SOCKET_ID_ANY);
	/* A zero-copy frame's payload and trailer segments need no room of
	 * their own beyond the trailer's pad and ICRC.
	 */
	if (dev->pool != NULL && dev->tx_chains) {
		snprintf(name, sizeof(name), "rc_seg_%u",
			 __atomic_fetch_add(&pools_made, 1, __ATOMIC_RELAXED));
		dev->seg_pool = rte_pktmbuf_pool_create(name, RC_SEG_POOL_SIZE, RC_TX_POOL_CACHE,
							0, RTE_PKTMBUF_HEADROOM + RTE_CACHE_LINE_SIZE,
							SOCKET_ID_ANY);
	}
	if (dev->pool == NULL || (dev->tx_chains && dev->seg_pool == NULL)) {
		snprintf(err, errlen, "RC device: no mbuf pool for sending: %s (give the EAL more memory with -m)",
			 rte_strerror(rte_errno));
		return -ENOMEM;
	}
	dev->nb_owners = on_workers ? droce_stack_nb_workers(dev->stack) : 1;
	dev->owner = rte_zmalloc("droce_rc_owners", sizeof(*dev->owner) * dev->nb_owners,
				 RTE_CACHE_LINE_SIZE);
	if (dev->owner == NULL) {
		snprintf(err, errlen, "RC device: out of memory for %u owners", dev->nb_owners);
		dev->nb_owners = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < dev->nb_owners; i++)
		if (owner_init(dev, &dev->owner[i], on_workers ? (int)i : -1) != 0) {
			snprintf(err, errlen, "RC device: no rings: %s", rte_strerror(rte_errno));
			return -ENOMEM;
		}
	ret = droce_roce_claim_qps(dev->stack, RC_FIRST_QPN, DROCE_QPN_MASK, rc_worker_input,
				   dev);
	if (ret != 0) {
		snprintf(err, errlen, "RC device: cannot take QPNs 0x%x..0x%x on the workers: %s%s",
			 RC_FIRST_QPN, DROCE_QPN_MASK, strerror(-ret),
			 ret == -EEXIST ? " (one RC device per stack)" : "");
		return ret;
	}
	ret = droce_control_hook_register(dev->stack,
					  on_workers ? neigh_round : control_owner_round, dev);
	if (ret == 0 && on_workers)
		ret = droce_worker_hook_register(dev->stack, worker_owner_round, dev);
	else if (ret == 0)
		ret = droce_control_hook_register_last(dev->stack, control_owner_last, dev);
	if (ret != 0) {
		/* rc_wire_close() takes back what was registered. */
		snprintf(err, errlen, "RC device: cannot run on the %s: %s%s",
			 on_workers ? "workers" : "control lcore", strerror(-ret),
			 ret == -EBUSY ? " (open it before the stack starts)" : "");
		return ret;
	}
	return 0;
}

void
rc_wire_close(struct droce_rc_device *dev)
{
	droce_roce_release_qps(dev->stack, rc_worker_input, dev);
	droce_control_hook_unregister(dev->stack, neigh_round, dev);
	droce_control_hook_unregister(dev->stack, control_owner_round, dev);
	droce_control_hook_unregister(dev->stack, control_owner_last, dev);
	droce_worker_hook_unregister(dev->stack, worker_owner_round, dev);
	for (uint32_t i = 0; dev->owner != NULL && i < dev->nb_owners; i++) {
		struct rc_owner *o = &dev->owner[i];
		struct rte_mbuf *m;
		struct droce_qp *qp;

		while (o->rx_ring != NULL && rte_ring_sc_dequeue(o->rx_ring, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		while (o->doorbell != NULL && rte_ring_sc_dequeue(o->doorbell, (void **)&qp) == 0)
			if (qp->dead)
				qp_free(qp);
		rte_ring_free(o->rx_ring);
		rte_ring_free(o->doorbell);
	}
	rte_free(dev->owner);
	dev->owner = NULL;
	pool_free_when_full(dev->pool, "frames");
	pool_free_when_full(dev->seg_pool, "zero-copy segments");
}
