/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * A RoCEv2 packet's way through a worker, top to bottom: parse (opcode
 * table), find the stream by QP, check it (owner, peer, opcode, P_Key,
 * PSN, rkey, VA inside one page), then hand its payload to the stream's
 * placer, with the ICRC checked there. The last packet of a frame (an
 * immediate) closes the frame: it waits in the stream's pending list until
 * its placement batch is complete, then goes to the application's queue.
 *
 * Only the worker that owns a stream touches its state here; what the
 * application reads is written with atomic stores.
 */

#include <string.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "rx_private.h"

static inline void
count(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static inline void
refuse(struct droce_rx_stream *st, struct rte_mbuf *m, enum droce_rx_refusal why)
{
	count(&st->stats.refused[why], 1);
	rte_pktmbuf_free(m);
}

void
rx_stream_reset_worker_state(struct droce_rx_stream *st)
{
	atomic_store(&st->owner, 0);
	memset(&st->cur, 0, sizeof(st->cur));
	memset(&st->msg, 0, sizeof(st->msg));
	st->near_page = 0;
	st->near_base = 0;
	st->psn_valid = false;
	st->packet_payload = 0;
	st->have_frame_number = false;
	st->sequence = 0;
	st->pending_head = st->pending_count = 0;
	st->msn = 0;
	st->nak_sent = false;
	st->ack_due = false;
	st->ack_syndrome = 0;
}

/* The device's 16-bit frame number, continued past its wrap: a step of
 * under half its range either way from the frame before, so that a frame
 * late behind the next one (reordered on the way) or a sensor started
 * again steps back rather than on by nearly 65536. Never below zero.
 */
static uint64_t
extend_frame_number(struct droce_rx_stream *st, uint16_t fn)
{
	int16_t step = (int16_t)(uint16_t)(fn - (uint16_t)st->frame_number);

	if (!st->have_frame_number) {
		st->have_frame_number = true;
		st->frame_number = fn;
	} else if (step >= 0 || st->frame_number >= (uint64_t)-(int32_t)step) {
		st->frame_number += (uint64_t)(int64_t)step;
	} else {
		st->frame_number += (uint16_t)step;
	}
	return st->frame_number;
}

/* The block HSB writes after the frame, with its frame number extended. */
static void
decode_metadata(struct droce_rx_stream *st, const uint8_t *b,
		struct droce_hsb_metadata *md)
{
	droce_hsb_metadata_decode(b, md);
	md->frame_number = extend_frame_number(st, (uint16_t)md->frame_number);
}

/* Hand a finished frame to the application: the queue drops its oldest
 * waiting frame when full. Frames arrive only while the monitor runs.
 */
static void
deliver(struct droce_rx_stream *st, struct droce_rx_frame_info *f)
{
	struct droce_rx_frame_info old;

	if (!atomic_load_explicit(&st->monitoring, memory_order_acquire)) {
		count(&st->stats.frames_dropped, 1);
		return;
	}
	while (rte_ring_sp_enqueue_elem(st->frames, f, sizeof(*f)) != 0)
		if (rte_ring_mc_dequeue_elem(st->frames, &old, sizeof(old)) == 0)
			count(&st->stats.frames_dropped, 1);
	rx_store64(&st->delivered, st->delivered + 1);
}

/* Close the frame being assembled; it completes with its placement. */
static void
finish_frame(struct rx_worker *w, struct droce_rx_stream *st, uint32_t imm,
	     uint32_t psn, const struct droce_hsb_metadata *md)
{
	struct rx_frame *c = &st->cur;
	uint64_t tsc = rte_get_tsc_cycles();
	struct rx_pending *p;

	st->sequence++;
	count(&st->stats.frames, 1);
	if (c->lossy)
		count(&st->stats.frames_lossy, 1);
	if (st->pending_count == RX_PENDING) {
		/* The engine is that far behind: the frame is lost to it. */
		count(&st->stats.frames_dropped, 1);
		droce_placer_submit(st->placer);
		memset(c, 0, sizeof(*c));
		return;
	}
	if (st->pending_count == 0 && w->nb_waiting < RTE_DIM(w->waiting))
		w->waiting[w->nb_waiting++] = (struct rx_waiting){
			.st = st,
			.run = atomic_load_explicit(&st->run, memory_order_relaxed),
		};
	p = &st->pending[(st->pending_head + st->pending_count++) % RX_PENDING];
	p->info = (struct droce_rx_frame_info){
		.frame_memory = (uint64_t)(uintptr_t)st->buf.gpu + (uint64_t)c->page * st->page_size,
		.metadata_memory = (uint64_t)(uintptr_t)st->buf.gpu +
				   (uint64_t)c->page * st->page_size + st->metadata_offset,
		.page = c->page, .immediate = imm, .psn = psn,
		.received_tsc = tsc,
		.received_ns = st->rx->base_ns +
			       (uint64_t)((double)(tsc - st->rx->base_tsc) * st->rx->ns_per_tsc),
		.packets = c->packets, .bytes = c->bytes, .lost_packets = c->lost,
		.lossy = c->lossy, .sequence = st->sequence,
	};
	if (md != NULL)
		p->info.metadata = *md;
	p->ticket = droce_placer_submit(st->placer);
	memset(c, 0, sizeof(*c));
}

/* Opcodes a sensor stream takes: RDMA WRITE, on UC or RC. */
static inline bool
write_opcode(uint8_t op)
{
	uint8_t t = op & 0xe0, o = op & 0x1f;

	return (t == DROCE_OP_UC || t == DROCE_OP_RC) &&
	       o >= DROCE_OP_WRITE_FIRST && o <= DROCE_OP_WRITE_ONLY_IMM;
}

/* Where a packet stands against the expected PSN. */
enum psn_verdict { PSN_NEXT, PSN_AHEAD, PSN_BEHIND };

static inline enum psn_verdict
psn_compare(const struct droce_rx_stream *st, uint32_t psn, uint32_t *gap)
{
	uint32_t mask = st->psn_mask;

	*gap = st->psn_valid ? (psn - st->expected_psn) & mask : 0;
	if (*gap == 0)
		return PSN_NEXT;
	return *gap > mask / 2 ? PSN_BEHIND : PSN_AHEAD;
}

/* Where a payload goes: its offset in the buffer, the page that holds it
 * and its offset there.
 */
struct rx_dest {
	uint64_t va;
	uint32_t page;
	uint64_t in_page;
};

/* The page of offset @p va, if the buffer has it. */
static inline bool
page_of(struct droce_rx_stream *st, uint64_t va, struct rx_dest *d)
{
	uint64_t from_near = va - st->near_base; /* huge if va is below it */

	d->va = va;
	if (likely(from_near < st->page_size)) {
		d->page = st->near_page;
		d->in_page = from_near;
		return true;
	}
	if (va / st->page_size >= st->pages)
		return false;
	d->page = (uint32_t)(va / st->page_size);
	d->in_page = va % st->page_size;
	st->near_page = d->page;
	st->near_base = va - d->in_page;
	return true;
}

/* Where the payload goes, or why not; changes nothing but the memo of
 * the near page. The whole RDMA message must lie in one page, so MIDDLE
 * and LAST packets cannot leave it either. After a PSN gap the message
 * in progress is broken: its remaining packets have nowhere to go (IBTA
 * UC drops them too).
 */
static enum droce_rx_refusal
destination(struct droce_rx_stream *st, const struct droce_pkt *pkt,
	    bool gap, struct rx_dest *d)
{
	uint32_t len = pkt->payload_len;

	if (pkt->info->flags & DROCE_HDR_RETH) {
		const struct droce_reth *r = droce_pkt_ext(pkt, DROCE_EXT_RETH);
		uint32_t dma = droce_reth_len(r);

		if (droce_reth_rkey(r) != st->rkey)
			return DROCE_RX_BAD_RKEY;
		if ((pkt->info->flags & DROCE_HDR_LAST) ? dma != len : dma < len)
			return DROCE_RX_BAD_LENGTH;
		if (!page_of(st, droce_reth_va(r), d) || d->in_page + dma > st->page_size)
			return DROCE_RX_BAD_VA;
		return DROCE_RX_REFUSAL_MAX;
	}
	if (!st->msg.open || gap)
		return DROCE_RX_NO_MESSAGE;
	if ((pkt->info->flags & DROCE_HDR_LAST) ? len != st->msg.remaining
						: len > st->msg.remaining)
		return DROCE_RX_BAD_LENGTH;
	/* Inside the page its message's first packet was checked for (it
	 * may end there: a packet of no bytes at the very end).
	 */
	d->va = st->msg.va;
	d->page = st->msg.page;
	d->in_page = st->msg.va - (uint64_t)st->msg.page * st->page_size;
	return DROCE_RX_REFUSAL_MAX;
}

/* The packet is taken: its message moves on. */
static void
advance_message(struct droce_rx_stream *st, const struct droce_pkt *pkt,
		const struct rx_dest *d)
{
	uint32_t flags = pkt->info->flags;

	if (flags & DROCE_HDR_RETH) {
		st->msg.remaining = droce_reth_len(droce_pkt_ext(pkt, DROCE_EXT_RETH));
		st->msg.page = d->page;
	}
	st->msg.va = d->va + pkt->payload_len;
	st->msg.remaining -= pkt->payload_len;
	st->msg.open = !(flags & DROCE_HDR_LAST);
}

/* Page and PSN the frame's immediate names. */
static bool
decode_imm(const struct droce_rx_stream *st, uint32_t imm, uint32_t data_page,
	   uint32_t bth_psn, uint32_t *page, uint32_t *psn)
{
	switch (st->imm) {
	case DROCE_HSB_IMM_CURRENT:
		*page = imm & 0xfff;
		*psn = (imm >> 12) & DROCE_HSB_PSN_MASK;
		break;
	case DROCE_HSB_IMM_LITE:
		*page = imm & 0xff;
		*psn = imm >> 8;
		break;
	default:
		*page = data_page;
		*psn = bth_psn;
		break;
	}
	return *page < st->pages;
}

/* AETH syndromes: ACK with no credit count, NAK PSN sequence error. */
#define AETH_ACK 0x1f
#define AETH_NAK_SEQ 0x60

/* RC: an ACK (or NAK) is owed to the packet's sender; sent once per
 * burst, for the newest PSN.
 */
static void
ack_due(struct droce_rx_stream *st, const struct rte_mbuf *m, uint32_t psn,
	uint8_t syndrome, bool *ack)
{
	st->peer_mac = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *)->src_addr;
	st->ack_psn = psn;
	st->ack_syndrome = syndrome;
	st->ack_due = true;
	*ack = true;
}

static void
count_lost(struct droce_rx_stream *st, uint64_t n)
{
	st->cur.lost += n;
	st->cur.lossy = true;
	count(&st->stats.lost_packets, n);
}

/* Mbufs a copy placer is done with, freed together when the burst ends
 * (or this fills): rte_pktmbuf_free_bulk() puts them back into their pool
 * in one go, 41 instructions a packet where rte_pktmbuf_free() took 58.
 */
#define RX_DONE_MAX 64

struct rx_done {
	unsigned int n;
	struct rte_mbuf *m[RX_DONE_MAX];
};

static inline void
done_add(struct rx_done *d, struct rte_mbuf *m)
{
	if (unlikely(d->n == RX_DONE_MAX)) {
		rte_pktmbuf_free_bulk(d->m, d->n);
		d->n = 0;
	}
	d->m[d->n++] = m;
}

/*
 * The ICRC verdict on a burst's next packet, taken as soon as the packet
 * before it is placed. The CRC is pure arithmetic on lines already
 * prefetched; the placement before it ends in streaming stores that drain
 * to memory for a while after they issue. Taken there, the CRC runs in
 * that while; taken in its turn, behind the next packet's parse and
 * checks, it came after the drain. 4096-byte placement with the ICRC
 * checked first: 0.60x -> 0.77x memcpy (1408-byte: no change, 0.55-0.60x;
 * the worker's instructions, CRC included, outlast the drain there).
 * Guessed from the stream before (a burst of one sensor's packets is the
 * rule); a packet of another stream is checked in its turn.
 */
struct rx_icrc_ahead {
	const struct rte_mbuf *m;       /* the packet it is for; NULL: none */
	bool ok;
};

/* Whether @p m, whose IP header is at @p l3_off, has a good ICRC. */
static inline bool
packet_icrc_ok(const struct rte_mbuf *m, uint32_t l3_off)
{
	return droce_icrc_ok(rte_pktmbuf_mtod_offset(m, const uint8_t *, l3_off),
			     rte_pktmbuf_data_len(m) - l3_off);
}

static inline void
icrc_ahead_take(struct rx_icrc_ahead *a, const struct rte_mbuf *m)
{
	a->m = m;
	a->ok = packet_icrc_ok(m, m->l2_len);
}

/* packet_icrc_ok(), or the verdict taken ahead for @p m. */
static inline bool
icrc_good(const struct rx_icrc_ahead *a, const struct rte_mbuf *m, uint32_t l3_off)
{
	return a->m == m ? a->ok : packet_icrc_ok(m, l3_off);
}

/*
 * Of a gap of @p gap packets before a frame's first packet seen, @p in_page
 * bytes into its page, those that were this frame's: its data before that
 * point (the metadata block may sit past the frame's end) in packets of
 * the size the sensor sends, all of them full but a frame's last.
 */
static uint32_t
lost_head(const struct droce_rx_stream *st, const struct droce_pkt *pkt, bool ends,
	  uint64_t in_page, uint32_t gap)
{
	uint32_t per_packet = RTE_MAX(st->packet_payload, ends ? 0 : pkt->payload_len);
	uint64_t before = RTE_MIN(in_page, (uint64_t)st->frame_size);

	if (per_packet == 0)
		per_packet = pkt->payload_len;
	if (per_packet == 0)
		return 0;
	return (uint32_t)RTE_MIN((before + per_packet - 1) / per_packet, (uint64_t)gap);
}

/*
 * Count a taken packet, and the gap of @p gap packets before it, to its
 * frame: the one open in its page, or a new one. A new page without the
 * previous frame's end ends that one; the gap took that frame's tail and,
 * if this packet is not its page's first, this frame's head.
 */
static void
frame_take(struct rx_worker *w, struct droce_rx_stream *st, const struct droce_pkt *pkt,
	   const struct rx_dest *d, bool ends, uint32_t gap)
{
	if (st->cur.open && d->page != st->cur.page) {
		uint32_t head = lost_head(st, pkt, ends, d->in_page, gap);

		count_lost(st, gap - head);
		gap = head;
		st->cur.lossy = true;
		finish_frame(w, st, 0, 0, NULL);
	}
	if (!st->cur.open) {
		st->cur.open = true;
		st->cur.page = d->page;
		/* Frames start at their page's start: one first seen past
		 * it lost its beginning, to a gap or to a stream started
		 * while its sensor was mid-frame.
		 */
		if (d->in_page != 0)
			st->cur.lossy = true;
		rx_store64(&st->page_frame[d->page], st->sequence + 1);
		__atomic_store_n(&st->page_psn[d->page], UINT32_MAX, __ATOMIC_RELEASE);
	}
	if (gap != 0)
		count_lost(st, gap);
	if (pkt->payload_len > st->packet_payload)
		st->packet_payload = pkt->payload_len;
}

/* One packet of one stream, on its owner worker. Every check comes
 * before any state changes, so a refused packet changes nothing but a
 * counter: not the PSN, not the message, not a byte of the buffer. The
 * one exception passed every check but has no message to belong to (a
 * MIDDLE or LAST without its FIRST): its PSN is used up, and it counts
 * as lost.
 */
static void
stream_packet(struct rx_worker *w, struct droce_rx_stream *st, struct rte_mbuf *m,
	      uint32_t l3_off, uint32_t bth_off, const struct droce_pkt *pkt,
	      const struct rx_icrc_ahead *icrc, bool *ack, struct rx_done *done)
{
	uint32_t flags = pkt->info->flags, psn = droce_bth_psn(pkt->bth);
	uint32_t payload_off = bth_off + pkt->hdr_len, page, gap;
	uint32_t imm = 0, imm_page = 0, imm_psn = 0;
	bool ends = (flags & DROCE_HDR_IMMDT) != 0, rc;
	struct droce_hsb_metadata md;   /* filled only where present */
	enum droce_rx_refusal why;
	enum psn_verdict order;
	struct rx_dest d = { 0 };
	int ret;

	md.present = false;

	if (!write_opcode(pkt->opcode))
		return refuse(st, m, DROCE_RX_BAD_OPCODE);
	if (droce_bth_pkey(pkt->bth) != st->pkey)
		return refuse(st, m, DROCE_RX_BAD_PKEY);
	rc = (pkt->opcode & 0xe0) == DROCE_OP_RC;
	order = psn_compare(st, psn, &gap);
	why = destination(st, pkt, order == PSN_AHEAD, &d);
	if (why != DROCE_RX_REFUSAL_MAX && why != DROCE_RX_NO_MESSAGE)
		return refuse(st, m, why);
	if (st->icrc_first && !icrc_good(icrc, m, l3_off))
		return refuse(st, m, DROCE_RX_BAD_ICRC);
	if (rc && order != PSN_NEXT) {
		/* In order only: a duplicate is ACKed again, a gap NAKed
		 * once (the requester goes back to the expected PSN).
		 */
		if (order == PSN_AHEAD && !st->nak_sent) {
			st->nak_sent = true;
			ack_due(st, m, st->expected_psn, AETH_NAK_SEQ, ack);
		} else if (order == PSN_BEHIND && !st->nak_sent) {
			ack_due(st, m, (st->expected_psn - 1) & st->psn_mask,
				AETH_ACK, ack);
		}
		return refuse(st, m, DROCE_RX_STALE_PSN);
	}
	if (order == PSN_BEHIND)
		return refuse(st, m, DROCE_RX_STALE_PSN); /* duplicate or late */
	page = d.page;
	if (ends && why != DROCE_RX_NO_MESSAGE) {
		imm = droce_immdt(droce_pkt_ext(pkt, DROCE_EXT_IMMDT));
		if (!decode_imm(st, imm, page, psn, &imm_page, &imm_psn))
			return refuse(st, m, DROCE_RX_BAD_IMM_PAGE);
	}
	/* From here on the packet's PSN is used up, and the packets of a
	 * gap before it are lost. UC: the message they were part of cannot
	 * be completed.
	 */
	st->expected_psn = (psn + 1) & st->psn_mask;
	st->psn_valid = true;
	if (order == PSN_AHEAD)
		st->msg.open = false;
	if (why == DROCE_RX_NO_MESSAGE) {
		count_lost(st, (uint64_t)gap + 1);
		return refuse(st, m, why);
	}
	/* Taken. */
	st->nak_sent = false;
	advance_message(st, pkt, &d);
	/* The metadata block rides in the last packet: decode it now,
	 * placement may free the mbuf at once.
	 */
	if (ends && d.in_page == st->metadata_offset &&
	    pkt->payload_len >= DROCE_HSB_METADATA_USED)
		decode_metadata(st, pkt->payload, &md);
	frame_take(w, st, pkt, &d, ends, gap);
	if (rc && (droce_bth_ackreq(pkt->bth) || (flags & DROCE_HDR_LAST)))
		ack_due(st, m, psn, AETH_ACK, ack);
	if (rc && (flags & DROCE_HDR_LAST))
		st->msn = (st->msn + 1) & DROCE_MSN_MASK;
	ret = st->icrc && !st->icrc_first
	      ? droce_place_icrc(st->placer, m, l3_off, payload_off, d.va,
				 pkt->payload_len)
	      : droce_place(st->placer, m, payload_off, d.va, pkt->payload_len);
	if (ret >= 0) {
		if (ret == 1)
			done_add(done, m);
		st->cur.packets++;
		st->cur.bytes += pkt->payload_len;
		count(&st->stats.packets, 1);
		count(&st->stats.bytes, pkt->payload_len);
	} else {
		count(&st->stats.refused[ret == -EBADMSG ? DROCE_RX_BAD_ICRC
					 : DROCE_RX_PLACE_FAILED], 1);
		count_lost(st, 1);
	}
	if (!ends)
		return;
	if (imm_page != page)
		st->cur.lossy = true;  /* the immediate disagrees with the VA */
	if (md.present)
		__atomic_store_n(&st->page_psn[page], md.psn, __ATOMIC_RELEASE);
	finish_frame(w, st, imm, imm_psn, md.present ? &md : NULL);
}

/* RC: one ACK (or NAK) per stream and burst, to the packet's sender. */
static void
send_ack(struct droce_lcore_ctx *ctx, struct droce_rx_stream *st)
{
	struct droce_frame_spec spec = {
		.src_mac = st->our_mac, .dst_mac = st->peer_mac,
		.src_ip4 = droce_port_addr(st->rx->stack, st->port),
		.dst_ip4 = st->peer,
		.opcode = DROCE_OP_RC | DROCE_OP_ACKNOWLEDGE,
		.dest_qp = st->remote_qp, .src_qp = st->qpn, .psn = st->ack_psn,
		.syndrome = st->ack_syndrome, .msn = st->msn,
	};
	struct rte_mbuf *m;

	st->ack_due = false;
	m = rte_pktmbuf_alloc(droce_port_pool(st->rx->stack, st->port));
	if (m == NULL || droce_frame_build(m, &spec) != 0) {
		rte_pktmbuf_free(m);
		return;
	}
	count(&st->stats.acks, 1);
	droce_tx(ctx, st->port, m);
}

static inline void
refuse_unknown(struct rx_worker *w, struct rte_mbuf *m, enum droce_rx_refusal why)
{
	count(&w->refused[why], 1);
	rte_pktmbuf_free(m);
}

/* The stream a burst's last packet went to, with its QP: the packets of
 * one sensor come in runs, and the next one of the run skips the lookup
 * and the checks that hold for the whole burst. Its port and queue are
 * the burst's; a close detaches the stream and then waits for the
 * worker's round to end (droce_stack_quiesce()); a failure raised by
 * another thread meanwhile is seen from the next burst on, as one raised
 * just after a packet's check always was.
 */
struct rx_claimed {
	struct droce_rx_stream *st;
	uint32_t qpn;
};

/* The stream of QP @p qpn, if this worker may handle its packets on this
 * port and queue; @p m is refused if not.
 */
static struct droce_rx_stream *
stream_for_qp(struct droce_rx *rx, struct rx_worker *w, unsigned int me, uint16_t port,
	      uint16_t queue, uint32_t qpn, struct rte_mbuf *m)
{
	struct droce_rx_stream *st = rx_stream_of_qp(rx, qpn);
	unsigned int owner;

	if (st == NULL) {
		refuse_unknown(w, m, DROCE_RX_UNKNOWN_QP);
		return NULL;
	}
	if (!atomic_load_explicit(&st->attached, memory_order_acquire) ||
	    atomic_load_explicit(&st->failed, memory_order_relaxed)) {
		refuse(st, m, DROCE_RX_NOT_STARTED);
		return NULL;
	}
	if (port != st->port || (st->queue != DROCE_RX_ANY_QUEUE && queue != st->queue)) {
		refuse(st, m, DROCE_RX_WRONG_PORT);
		return NULL;
	}
	/* The first worker to see the stream owns it from then on; the
	 * compare-and-swap (a locked instruction) only while it has none.
	 */
	owner = atomic_load_explicit(&st->owner, memory_order_relaxed);
	if (unlikely(owner != me)) {
		if (owner != 0 ||
		    (!atomic_compare_exchange_strong(&st->owner, &owner, me) && owner != me)) {
			refuse(st, m, DROCE_RX_WRONG_WORKER);
			return NULL;
		}
	}
	return st;
}

/* The stream of a packet, if this worker may handle it. */
static struct droce_rx_stream *
claim(struct droce_rx *rx, struct rx_worker *w, unsigned int me, uint16_t port,
      uint16_t queue, struct rte_mbuf *m, const struct droce_pkt *pkt,
      const struct rte_ipv4_hdr *ip, struct rx_claimed *last)
{
	uint32_t qpn = droce_bth_dqpn(pkt->bth);

	if (unlikely(last->st == NULL || qpn != last->qpn)) {
		struct droce_rx_stream *st = stream_for_qp(rx, w, me, port, queue, qpn, m);

		if (st == NULL)
			return NULL;
		*last = (struct rx_claimed){ .st = st, .qpn = qpn };
	}
	if (ip->src_addr != last->st->peer) {
		refuse(last->st, m, DROCE_RX_WRONG_PEER);
		return NULL;
	}
	return last->st;
}

/* How much of a coming packet is asked for while an earlier one is
 * handled: all of it, up to a jumbo frame, so that its lines come in under
 * the checks and copies before it. On a machine whose L3 held the buffer,
 * 4096-byte placement went from 0.85-0.89x to 1.00x memcpy with ICRC off,
 * 0.53-0.57x to 0.60x with it checked first and 0.62-0.68x to 0.80x fused,
 * against the first 2 KiB only (on an earlier machine, with less cache,
 * 4 KiB payloads with the ICRC checked first had been slower with all of it).
 */
#define PREFETCH_NEXT_BYTES 9216
/* How many packets ahead that is. One packet's checks and copy take less
 * time than its lines take to come from L3 or memory: one ahead, 1408-byte
 * placement with ICRC off reached 0.71x memcpy on a machine whose L3 held
 * the buffer; two ahead, 0.82-0.85x (three: no better).
 */
#define PREFETCH_AHEAD 2

static inline void
prefetch_packet(const struct rte_mbuf *m)
{
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = RTE_MIN(rte_pktmbuf_data_len(m), (uint32_t)PREFETCH_NEXT_BYTES);

	/* The first line was asked for by the classifier. */
	for (uint32_t o = RTE_CACHE_LINE_SIZE; o < len; o += RTE_CACHE_LINE_SIZE)
		rte_prefetch0(b + o);
	/* Freeing the mbuf reads its second line (m->next), which nothing
	 * before it here reads.
	 */
	rte_mbuf_prefetch_part2((struct rte_mbuf *)(uintptr_t)m);
}

void
rx_udp_handler(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
	       struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct droce_rx *rx = arg;
	int wi = droce_lcore_worker_index(ctx);
	struct rx_worker *w = &rx->workers[wi];
	struct droce_rx_stream *to_ack[RX_BURST_STREAMS];
	struct rx_claimed last = { .st = NULL };
	struct rx_icrc_ahead icrc = { .m = NULL };
	unsigned int nb_ack = 0;
	struct rx_done done;

	done.n = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint32_t l3 = m->l2_len, bth = m->l2_len + m->l3_len + sizeof(struct rte_udp_hdr);
		const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m,
				const struct rte_ipv4_hdr *, l3);
		const struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m,
				const struct rte_udp_hdr *, l3 + m->l3_len);
		uint32_t roce_len = rte_be_to_cpu_16(udp->dgram_len) - sizeof(*udp);
		struct droce_rx_stream *st;
		struct droce_pkt pkt;
		bool ack = false, listed;

		if (i == 0)
			for (uint16_t k = 1; k < PREFETCH_AHEAD && k < n; k++)
				prefetch_packet(pkts[k]);
		if (i + PREFETCH_AHEAD < n)
			prefetch_packet(pkts[i + PREFETCH_AHEAD]);
		if (rte_pktmbuf_data_len(m) != rte_pktmbuf_pkt_len(m) ||
		    droce_roce_parse(rte_pktmbuf_mtod_offset(m, const uint8_t *, bth),
				     roce_len, &pkt) != DROCE_PARSE_OK) {
			refuse_unknown(w, m, DROCE_RX_NOT_ROCE);
			continue;
		}
		st = claim(rx, w, (unsigned int)wi + 1, port, queue, m, &pkt, ip, &last);
		if (st == NULL)
			continue;
		listed = st->ack_due;
		stream_packet(w, st, m, l3, bth, &pkt, &icrc, &ack, &done);
		if (st->icrc_first && i + 1 < n)
			icrc_ahead_take(&icrc, pkts[i + 1]);
		/* ACKs wait for the end of the burst: one per stream. */
		if (ack && !listed) {
			if (nb_ack < RX_BURST_STREAMS)
				to_ack[nb_ack++] = st;
			else
				send_ack(ctx, st);
		}
	}
	rte_pktmbuf_free_bulk(done.m, done.n);
	for (unsigned int i = 0; i < nb_ack; i++)
		if (to_ack[i]->ack_due)
			send_ack(ctx, to_ack[i]);
}

/* Frames whose placement finished go to the application, in order. */
static unsigned int
complete_frames(struct droce_rx_stream *st)
{
	uint64_t done;

	if (st->pending_count == 0)
		return 0;
	if (droce_placer_failed(st->placer)) {
		rx_stream_fail(st, "the placement device failed");
		st->pending_count = 0;
		return 0;
	}
	done = droce_placer_completed(st->placer);
	while (st->pending_count != 0 && st->pending[st->pending_head].ticket <= done) {
		struct rx_pending *p = &st->pending[st->pending_head];

		deliver(st, &p->info);
		st->pending_head = (st->pending_head + 1) % RX_PENDING;
		st->pending_count--;
	}
	return st->pending_count;
}

unsigned int
rx_worker_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	struct droce_rx *rx = arg;
	int wi = droce_lcore_worker_index(ctx);
	struct rx_worker *w;
	unsigned int pending = 0;

	if (wi < 0)
		return 0;
	w = &rx->workers[wi];
	for (unsigned int i = 0; i < w->nb_waiting;) {
		struct droce_rx_stream *st = w->waiting[i].st;
		unsigned int left = 0;

		/* The frames of a run that is over (or of a stream another
		 * worker owns now) are not this worker's any more; the
		 * stream's memory outlives this.
		 */
		if (atomic_load_explicit(&st->attached, memory_order_acquire) &&
		    atomic_load_explicit(&st->run, memory_order_relaxed) == w->waiting[i].run &&
		    atomic_load_explicit(&st->owner, memory_order_relaxed) ==
		    (unsigned int)wi + 1)
			left = complete_frames(st);
		if (left == 0) {
			w->waiting[i] = w->waiting[--w->nb_waiting];
			continue;
		}
		pending += left;
		i++;
	}
	return pending;
}
