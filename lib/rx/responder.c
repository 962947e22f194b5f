/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The responder: what the worker that owns a stream does with a packet
 * that passed every check that needs no state (packet.c), in named steps
 * as rxe's responder is shaped:
 *
 *   check_psn      in order, ahead of a gap (held back while it may fill,
 *                  with a reorder window), or behind (a duplicate)
 *   check_message  a MIDDLE or LAST belongs to the message in progress
 *   check_imm      the immediate names a page that exists
 *   execute        the frame takes the packet, the placer its payload,
 *                  the metadata block is decoded where a packet covers it
 *   acknowledge    RC: ACK what was placed, NAK a gap once
 *
 * A frame ends with its immediate (or when a packet of another page
 * starts one), waits until its placement batch is complete, then goes to
 * the application's queue in order.
 */

#include <string.h>

#include <rte_cycles.h>

#include "rx_private.h"

static inline void
count(uint64_t *c, uint64_t n)
{
	rx_count(c, n);
}

void
rx_reorder_drop(struct droce_rx_stream *st)
{
	struct rx_reorder *r = &st->reorder;

	for (uint32_t i = 0; r->held != 0 && i < r->window; i++)
		if (r->slot[i] != NULL) {
			rte_pktmbuf_free(r->slot[i]);
			r->slot[i] = NULL;
			r->held--;
		}
	r->held = 0;
}

void
rx_stream_reset_worker_state(struct droce_rx_stream *st)
{
	atomic_store(&st->owner, 0);
	st->listed = false;
	memset(&st->cur, 0, sizeof(st->cur));
	memset(&st->msg, 0, sizeof(st->msg));
	st->near_page = 0;
	st->near_base = 0;
	st->psn_valid = false;
	st->packet_payload = 0;
	st->have_frame_number = false;
	st->sequence = 0;
	st->pending_head = st->pending_count = 0;
	rx_reorder_drop(st);
	st->msn = 0;
	st->nak_sent = false;
	st->ack_due = false;
	st->ack_syndrome = 0;
}

/* ---- the end of a burst: ACKs and mbufs, once ---------------------------- */

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

void
rx_burst_end(struct rx_burst *b)
{
	rte_pktmbuf_free_bulk(b->done, b->nb_done);
	b->nb_done = 0;
	for (unsigned int i = 0; i < b->nb_ack; i++)
		if (b->to_ack[i]->ack_due)
			send_ack(b->ctx, b->to_ack[i]);
	b->nb_ack = 0;
}

/* A placed mbuf the placer handed back, freed with the burst's others. */
static inline void
done_add(struct rx_burst *b, struct rte_mbuf *m)
{
	if (unlikely(b->nb_done == RX_DONE_MAX)) {
		rte_pktmbuf_free_bulk(b->done, b->nb_done);
		b->nb_done = 0;
	}
	b->done[b->nb_done++] = m;
}

/* AETH syndromes: ACK with no credit count, NAK PSN sequence error. */
#define AETH_ACK 0x1f
#define AETH_NAK_SEQ 0x60

/* RC: an ACK (or NAK) is owed to the packet's sender; sent once per
 * burst, for the newest PSN.
 */
static void
acknowledge(struct rx_burst *b, struct droce_rx_stream *st, const struct rte_mbuf *m,
	    uint32_t psn, uint8_t syndrome)
{
	st->peer_mac = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *)->src_addr;
	st->ack_psn = psn;
	st->ack_syndrome = syndrome;
	if (st->ack_due)
		return;
	st->ack_due = true;
	if (b->nb_ack < RX_BURST_STREAMS)
		b->to_ack[b->nb_ack++] = st;
	else
		send_ack(b->ctx, st);
}

/* ---- frames ----------------------------------------------------------------- */

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
finish_frame(struct rx_worker *w, struct droce_rx_stream *st, uint32_t imm, uint32_t psn)
{
	struct rx_frame *c = &st->cur;
	uint64_t tsc = rte_get_tsc_cycles();
	uint64_t page_addr = (uint64_t)(uintptr_t)st->buf.gpu + (uint64_t)c->page * st->page_size;
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
	rx_list_waiting(w, st);
	p = &st->pending[(st->pending_head + st->pending_count++) % RX_PENDING];
	p->info = (struct droce_rx_frame_info){
		.frame_memory = page_addr,
		.metadata_memory = page_addr + st->metadata_offset,
		.page = c->page, .immediate = imm, .psn = psn,
		.metadata = c->metadata,
		.received_tsc = tsc,
		.received_ns = st->rx->base_ns +
			       (uint64_t)((double)(tsc - st->rx->base_tsc) * st->rx->ns_per_tsc),
		.packets = c->packets, .bytes = c->bytes, .lost_packets = c->lost,
		.lossy = c->lossy, .sequence = st->sequence,
	};
	p->ticket = droce_placer_submit(st->placer);
	memset(c, 0, sizeof(*c));
}

static void
count_lost(struct droce_rx_stream *st, uint64_t n)
{
	st->cur.lost += n;
	st->cur.lossy = true;
	count(&st->stats.lost_packets, n);
}

/*
 * Of a gap of @p gap packets before a frame's first packet seen,
 * @p page_off bytes into its page, those that were this frame's: its data
 * before that point (the metadata block may sit past the frame's end) in
 * packets of the size the sensor sends, all of them full but a frame's
 * last.
 */
static uint32_t
lost_head(const struct droce_rx_stream *st, const struct rx_packet *p, bool ends,
	  uint64_t page_off, uint32_t gap)
{
	uint32_t per_packet = RTE_MAX(st->packet_payload, ends ? 0 : p->pkt.payload_len);
	uint64_t before = RTE_MIN(page_off, (uint64_t)st->frame_size);

	if (per_packet == 0)
		per_packet = p->pkt.payload_len;
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
frame_take(struct rx_worker *w, struct droce_rx_stream *st, const struct rx_packet *p,
	   const struct rx_dest *d, bool ends, uint32_t gap)
{
	if (st->cur.open && d->page != st->cur.page) {
		uint32_t head = lost_head(st, p, ends, d->page_off, gap);

		count_lost(st, gap - head);
		gap = head;
		st->cur.lossy = true;
		finish_frame(w, st, 0, 0);
	}
	if (!st->cur.open) {
		st->cur.open = true;
		st->cur.page = d->page;
		/* Frames start at their page's start: one first seen past
		 * it lost its beginning, to a gap or to a stream started
		 * while its sensor was mid-frame.
		 */
		if (d->page_off != 0)
			st->cur.lossy = true;
		rx_store64(&st->page_frame[d->page], st->sequence + 1);
		__atomic_store_n(&st->page_psn[d->page], UINT32_MAX, __ATOMIC_RELEASE);
	}
	if (gap != 0)
		count_lost(st, gap);
	if (p->pkt.payload_len > st->packet_payload)
		st->packet_payload = p->pkt.payload_len;
}

/* ---- the steps ------------------------------------------------------------- */

/* RC (ACKed, in order only) or UC. */
static inline bool
is_rc(const struct rx_packet *p)
{
	return (p->pkt.opcode & 0xe0) == DROCE_OP_RC;
}

/* Where a packet stands against the expected PSN. */
enum psn_verdict { PSN_NEXT, PSN_AHEAD, PSN_BEHIND };

static inline enum psn_verdict
check_psn(const struct droce_rx_stream *st, uint32_t psn, uint32_t *gap)
{
	uint32_t mask = st->psn_mask;

	*gap = st->psn_valid ? (psn - st->expected_psn) & mask : 0;
	if (*gap == 0)
		return PSN_NEXT;
	return *gap > mask / 2 ? PSN_BEHIND : PSN_AHEAD;
}

/*
 * Where a packet's payload goes, for a packet checked in packet.c (FIRST
 * and ONLY: p->dest) or one that continues the message in progress
 * (MIDDLE and LAST), which must then exist: after a PSN gap the message
 * in progress is broken, its remaining packets have nowhere to go (IBTA
 * UC drops them too). A message lies in one page, the page its first
 * packet was checked for (it may end there: a packet of no bytes at its
 * very end).
 */
static enum droce_rx_refusal
check_message(const struct droce_rx_stream *st, const struct rx_packet *p, bool gap,
	      struct rx_dest *d)
{
	uint32_t len = p->pkt.payload_len;

	if (p->pkt.info->flags & DROCE_HDR_RETH) {
		*d = p->dest;
		return RX_ACCEPT;
	}
	if (!st->msg.open || gap)
		return DROCE_RX_NO_MESSAGE;
	if ((p->pkt.info->flags & DROCE_HDR_LAST) ? len != st->msg.remaining
						   : len > st->msg.remaining)
		return DROCE_RX_BAD_LENGTH;
	d->buf_off = st->msg.buf_off;
	d->page = st->msg.page;
	d->page_off = st->msg.buf_off - (uint64_t)st->msg.page * st->page_size;
	if (rx_covers_part_of_block(st, d->page_off, len))
		return DROCE_RX_PARTIAL_METADATA;
	return RX_ACCEPT;
}

/* Page and PSN the frame's immediate names. */
static bool
check_imm(const struct droce_rx_stream *st, uint32_t imm, uint32_t data_page,
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

/* The metadata block, when the packet's payload covers it (whole: a part
 * was refused in the checks); read now, kept only once the packet is
 * placed.
 */
static inline bool
read_metadata(const struct droce_rx_stream *st, const struct rx_packet *p,
	      const struct rx_dest *d, struct droce_hsb_metadata *md)
{
	uint64_t len = p->pkt.payload_len;

	if (d->page_off > st->metadata_offset ||
	    d->page_off + len < st->metadata_offset + DROCE_HSB_METADATA_SIZE)
		return false;
	droce_hsb_metadata_decode(p->pkt.payload + (st->metadata_offset - d->page_off), md);
	return true;
}

/* The packet's PSN is used up: the next one is expected. After a gap the
 * message in progress cannot be completed.
 */
static inline void
consume_psn(struct droce_rx_stream *st, uint32_t psn, uint32_t gap)
{
	st->expected_psn = (psn + 1) & st->psn_mask;
	st->psn_valid = true;
	if (gap != 0)
		st->msg.open = false;
}

/* The packet is taken: its message moves on. */
static void
advance_message(struct droce_rx_stream *st, const struct rx_packet *p,
		const struct rx_dest *d)
{
	uint32_t flags = p->pkt.info->flags;

	if (flags & DROCE_HDR_RETH) {
		st->msg.remaining = droce_reth_len(droce_pkt_ext(&p->pkt, DROCE_EXT_RETH));
		st->msg.page = d->page;
	}
	st->msg.buf_off = d->buf_off + p->pkt.payload_len;
	st->msg.remaining -= p->pkt.payload_len;
	st->msg.open = !(flags & DROCE_HDR_LAST);
}

/* The payload into the stream's buffer, its ICRC checked in the copy's
 * pass where that was asked for and not done yet.
 */
static inline int
place(struct droce_rx_stream *st, const struct rx_packet *p, const struct rx_dest *d)
{
	if (st->icrc && !p->icrc_checked)
		return droce_place_icrc(st->placer, p->m, p->l3_off, p->payload_off,
					d->buf_off, p->pkt.payload_len);
	return droce_place(st->placer, p->m, p->payload_off, d->buf_off,
			   p->pkt.payload_len);
}

/*
 * A packet in PSN order (@p gap packets lost before it), through the rest
 * of the steps. A refusal here changes nothing but a counter, except for
 * a packet that has no message to belong to: its PSN is used up, and it
 * counts as lost. On UC a placement that fails uses up its PSN too (the
 * sender does not resend); on RC nothing is used up, and the requester's
 * retry fills the PSN.
 */
static void
execute(struct rx_burst *b, struct droce_rx_stream *st, struct rx_packet *p, uint32_t gap)
{
	uint32_t flags = p->pkt.info->flags, imm = 0, imm_page = 0, imm_psn = 0;
	bool ends = (flags & DROCE_HDR_IMMDT) != 0;
	struct droce_hsb_metadata md;
	enum droce_rx_refusal why;
	struct rx_dest d;
	bool have_md;
	int ret;

	why = check_message(st, p, gap != 0, &d);
	if (why == DROCE_RX_NO_MESSAGE) {
		consume_psn(st, p->psn, gap);
		count_lost(st, (uint64_t)gap + 1);
		return rx_refuse(st, p->m, why);
	}
	if (why != RX_ACCEPT)
		return rx_refuse(st, p->m, why);
	if (ends) {
		imm = droce_immdt(droce_pkt_ext(&p->pkt, DROCE_EXT_IMMDT));
		if (!check_imm(st, imm, d.page, p->psn, &imm_page, &imm_psn))
			return rx_refuse(st, p->m, DROCE_RX_BAD_IMM_PAGE);
	}
	/* Read before the placement, which may free the mbuf. */
	have_md = read_metadata(st, p, &d, &md);
	frame_take(b->w, st, p, &d, ends, gap);
	ret = place(st, p, &d);
	if (unlikely(ret < 0)) {
		rx_count_refusal(st, ret == -EBADMSG ? DROCE_RX_BAD_ICRC
				 : DROCE_RX_PLACE_FAILED);
		if (is_rc(p))
			return;
		count_lost(st, 1);
		have_md = false;
	} else {
		if (ret == 1)
			done_add(b, p->m);
		st->cur.packets++;
		st->cur.bytes += p->pkt.payload_len;
		count(&st->stats.packets, 1);
		count(&st->stats.bytes, p->pkt.payload_len);
		if (p->handed_over)
			count(&st->stats.handed_over, 1);
	}
	if (have_md) {
		md.frame_number = extend_frame_number(st, (uint16_t)md.frame_number);
		st->cur.metadata = md;
		__atomic_store_n(&st->page_psn[d.page], md.psn, __ATOMIC_RELEASE);
	}
	consume_psn(st, p->psn, gap);
	advance_message(st, p, &d);
	if (is_rc(p)) {
		st->nak_sent = false;
		if (droce_bth_ackreq(p->pkt.bth) || (flags & DROCE_HDR_LAST))
			acknowledge(b, st, p->m, p->psn, AETH_ACK);
		if (flags & DROCE_HDR_LAST)
			st->msn = (st->msn + 1) & DROCE_MSN_MASK;
	}
	if (!ends)
		return;
	if (imm_page != d.page)
		st->cur.lossy = true;  /* the immediate disagrees with the VA */
	finish_frame(b->w, st, imm, imm_psn);
}

/* RC takes packets in order only: a duplicate is ACKed again, a gap NAKed
 * once (the requester goes back to the expected PSN).
 */
static void
rc_out_of_order(struct rx_burst *b, struct droce_rx_stream *st, struct rx_packet *p,
		enum psn_verdict order)
{
	if (order == PSN_AHEAD && !st->nak_sent) {
		st->nak_sent = true;
		acknowledge(b, st, p->m, st->expected_psn, AETH_NAK_SEQ);
	} else if (order == PSN_BEHIND && !st->nak_sent) {
		acknowledge(b, st, p->m, (st->expected_psn - 1) & st->psn_mask, AETH_ACK);
	}
	rx_refuse(st, p->m, DROCE_RX_STALE_PSN);
}

/* ---- UC: packets held behind a PSN gap ------------------------------------- */

static inline struct rte_mbuf **
reorder_slot(struct droce_rx_stream *st, uint32_t psn)
{
	return &st->reorder.slot[psn & (st->reorder.window - 1)];
}

/* Hold a packet that came ahead of a gap, if the gap may still fill: its
 * ICRC is checked first where the stream checks it at all, so that a bad
 * packet cannot take a good one's place.
 */
static bool
reorder_hold(struct rx_burst *b, struct droce_rx_stream *st, struct rx_packet *p,
	     uint32_t gap)
{
	struct rx_reorder *r = &st->reorder;
	struct rte_mbuf **slot;

	if (gap >= r->window)
		return false;
	if (st->icrc && !p->icrc_checked &&
	    !droce_icrc_ok(rte_pktmbuf_mtod_offset(p->m, const uint8_t *, p->l3_off),
			   rte_pktmbuf_data_len(p->m) - p->l3_off)) {
		rx_refuse(st, p->m, DROCE_RX_BAD_ICRC);
		return true;
	}
	slot = reorder_slot(st, p->psn);
	if (*slot != NULL) {
		rx_refuse(st, p->m, DROCE_RX_STALE_PSN);   /* it came twice */
		return true;
	}
	*slot = p->m;
	rx_note(p->m)->held_tsc = rte_get_tsc_cycles();
	if (r->held++ == 0)
		r->since_tsc = rx_note(p->m)->held_tsc;
	if (p->handed_over)
		count(&st->stats.handed_over, 1);
	count(&st->stats.held, 1);
	rx_list_waiting(b->w, st);
	return true;
}

/* A held packet, taken out of its slot, for execute(). */
static void
reorder_take(struct droce_rx_stream *st, struct rte_mbuf **slot, struct rx_packet *p)
{
	struct rte_mbuf *m = *slot;

	*slot = NULL;
	st->reorder.held--;
	/* Parsed and checked when it came; the stream is the same run. */
	rx_packet_parse(m, p);
	p->icrc_checked = st->icrc;
	if (p->pkt.info->flags & DROCE_HDR_RETH)
		rx_check_destination(st, p, true);
}

/* The held packets that follow the expected PSN without a gap. */
static void
reorder_release(struct rx_burst *b, struct droce_rx_stream *st)
{
	struct rx_reorder *r = &st->reorder;

	while (r->held != 0) {
		struct rte_mbuf **slot = reorder_slot(st, st->expected_psn);
		struct rx_packet p;

		if (*slot == NULL)
			break;
		/* A packet refused without using up its PSN leaves a gap:
		 * the next look finds its slot empty.
		 */
		reorder_take(st, slot, &p);
		execute(b, st, &p, 0);
	}
	r->since_tsc = rte_get_tsc_cycles();
}

/* The first held packet after the expected PSN: after the oldest gap. */
static struct rte_mbuf **
reorder_first_held(struct droce_rx_stream *st, uint32_t *gap)
{
	for (*gap = 1; *gap < st->reorder.window; (*gap)++) {
		struct rte_mbuf **slot = reorder_slot(st, st->expected_psn + *gap);

		if (*slot != NULL)
			return slot;
	}
	return NULL;
}

/* Give up the oldest gap: the first held packet is taken with the
 * packets before it lost, then those that follow it without a gap.
 */
static void
reorder_give_up_gap(struct rx_burst *b, struct droce_rx_stream *st)
{
	struct rx_packet p;
	uint32_t gap;
	struct rte_mbuf **slot = reorder_first_held(st, &gap);

	if (slot == NULL) {
		rx_reorder_drop(st);   /* cannot be: every held packet lies in the window */
		return;
	}
	reorder_take(st, slot, &p);
	execute(b, st, &p, gap);
	reorder_release(b, st);
}

/*
 * Nothing filled the gap at the expected PSN for the timeout: give it up,
 * and every later gap whose first packet after it was held as long. A gap
 * that is being filled (its packets come in order, from another worker's
 * backlog) is never given up, however long the packets after it wait.
 */
static void
reorder_time_out(struct rx_burst *b, struct droce_rx_stream *st, uint64_t now)
{
	struct rx_reorder *r = &st->reorder;

	reorder_give_up_gap(b, st);
	while (r->held != 0) {
		uint32_t gap;
		struct rte_mbuf **slot = reorder_first_held(st, &gap);

		if (slot == NULL || now - rx_note(*slot)->held_tsc <= r->timeout_tsc)
			break;
		reorder_give_up_gap(b, st);
	}
}

/* Give up every gap: all held packets in PSN order. */
static void
reorder_flush(struct rx_burst *b, struct droce_rx_stream *st)
{
	while (st->reorder.held != 0)
		reorder_give_up_gap(b, st);
}

/* ---- a packet's way, and the worker's rounds ---------------------------------- */

void
rx_respond(struct rx_burst *b, struct droce_rx_stream *st, struct rx_packet *p)
{
	uint32_t gap;
	enum psn_verdict order = check_psn(st, p->psn, &gap);

	if (unlikely(order != PSN_NEXT)) {
		if (is_rc(p))
			return rc_out_of_order(b, st, p, order);
		if (order == PSN_AHEAD && st->reorder.window != 0) {
			/* Past the window: only the oldest gaps are given up,
			 * as far as it takes; later ones may still fill.
			 */
			while (order == PSN_AHEAD && gap >= st->reorder.window &&
			       st->reorder.held != 0) {
				reorder_give_up_gap(b, st);
				order = check_psn(st, p->psn, &gap);
			}
			if (order == PSN_AHEAD && reorder_hold(b, st, p, gap))
				return;
		}
		if (order == PSN_BEHIND)
			return rx_refuse(st, p->m, DROCE_RX_STALE_PSN); /* duplicate or late */
	}
	execute(b, st, p, gap);
	if (unlikely(st->reorder.held != 0))
		reorder_release(b, st);
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

/* What the owner's round does for a listed stream: finish frames, give
 * up on a gap that waited too long (or at once when the stack stops).
 * Returns what still waits.
 */
unsigned int
rx_stream_attend(struct rx_burst *b, struct droce_rx_stream *st)
{
	struct rx_reorder *r = &st->reorder;

	if (r->held != 0) {
		uint64_t now = rte_get_tsc_cycles();

		if (droce_lcore_stopping(b->ctx))
			reorder_flush(b, st);
		else if (now - r->since_tsc > r->timeout_tsc)
			reorder_time_out(b, st, now);
	}
	return complete_frames(st) + r->held;
}
