/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RX_RESPONDER_H
#define DROCE_RX_RESPONDER_H

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
 * The steps every packet takes are inline here: they run in the worker's
 * burst loop, where a call per step and a packet passed through memory
 * cost more than the steps. What a frame, a gap or an ACK needs once is
 * in responder.c.
 */

#include <rte_branch_prediction.h>
#include <rte_common.h>

#include "rx_private.h"

/* responder.c */
void rx_finish_frame(struct rx_worker *w, struct droce_rx_stream *st, uint32_t imm,
		     uint32_t psn);
uint32_t rx_lost_head(const struct droce_rx_stream *st, uint32_t payload_len, bool ends,
		      uint64_t page_off, uint32_t gap);
void rx_acknowledge(struct rx_burst *b, struct droce_rx_stream *st,
		    const struct rte_mbuf *m, uint32_t psn, uint8_t syndrome);
uint64_t rx_extend_frame_number(struct droce_rx_stream *st, uint16_t fn);
bool rx_reorder_hold(struct rx_burst *b, struct droce_rx_stream *st, struct rx_packet *p,
		     uint32_t gap);
void rx_reorder_release(struct rx_burst *b, struct droce_rx_stream *st);
void rx_reorder_give_up_gap(struct rx_burst *b, struct droce_rx_stream *st);

/* A placed mbuf the placer handed back, freed with the burst's others. */
static __rte_always_inline void
done_add(struct rx_burst *b, struct rte_mbuf *m)
{
	if (unlikely(b->nb_done == RX_DONE_MAX)) {
		droce_free_received(b->done, b->nb_done);
		b->nb_done = 0;
	}
	b->done[b->nb_done++] = m;
}

/* AETH syndromes: ACK with no credit count, NAK PSN sequence error. */
#define AETH_ACK 0x1f
#define AETH_NAK_SEQ 0x60

static __rte_always_inline void
count_lost(struct droce_rx_stream *st, uint64_t n)
{
	st->cur.lost += n;
	st->cur.lossy = true;
	rx_count(&st->stats.lost_packets, n);
}

/*
 * Count a taken packet, and the gap of @p gap packets before it, to its
 * frame: the one open in its page, or a new one. A new page without the
 * previous frame's end ends that one; the gap took that frame's tail and,
 * if this packet is not its page's first, this frame's head.
 */
static __rte_always_inline void
frame_take(struct rx_worker *w, struct droce_rx_stream *st, const struct rx_packet *p,
	   const struct rx_dest *d, bool ends, uint32_t gap)
{
	if (st->cur.open && d->page != st->cur.page) {
		uint32_t head = rx_lost_head(st, p->pkt.payload_len, ends, d->page_off, gap);

		count_lost(st, gap - head);
		gap = head;
		st->cur.lossy = true;
		rx_finish_frame(w, st, 0, 0);
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
static __rte_always_inline bool
is_rc(const struct rx_packet *p)
{
	return (p->pkt.opcode & 0xe0) == DROCE_OP_RC;
}

/* The PSN's width: an RC requester counts in 24 bits whatever immediate
 * format the stream reads; a UC sensor as the stream says (HSB's 20).
 */
static __rte_always_inline uint32_t
psn_mask(const struct droce_rx_stream *st, const struct rx_packet *p)
{
	return is_rc(p) ? DROCE_PSN_MASK : st->psn_mask;
}

/* Where a packet stands against the expected PSN. */
enum psn_verdict { PSN_NEXT, PSN_AHEAD, PSN_BEHIND };

static __rte_always_inline enum psn_verdict
check_psn(const struct droce_rx_stream *st, const struct rx_packet *p, uint32_t *gap)
{
	uint32_t mask = psn_mask(st, p);

	*gap = st->psn_valid ? (p->psn - st->expected_psn) & mask : 0;
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
static __rte_always_inline enum droce_rx_refusal
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
	return rx_check_block(st, d, len);
}

/* Page and PSN the frame's immediate names. */
static __rte_always_inline bool
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
static __rte_always_inline bool
read_metadata(const struct droce_rx_stream *st, const struct rx_packet *p,
	      const struct rx_dest *d, struct droce_hsb_metadata *md)
{
	if (likely(!d->block))
		return false;
	droce_hsb_metadata_decode(p->pkt.payload + (st->metadata_offset - d->page_off), md);
	return true;
}

/* The packet's PSN is used up: the next one is expected. After a gap the
 * message in progress cannot be completed.
 */
static __rte_always_inline void
consume_psn(struct droce_rx_stream *st, const struct rx_packet *p, uint32_t gap)
{
	st->expected_psn = (p->psn + 1) & psn_mask(st, p);
	st->psn_valid = true;
	if (gap != 0)
		st->msg.open = false;
}

/* The packet is taken: its message moves on. */
static __rte_always_inline void
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
static __rte_always_inline int
place(struct droce_rx_stream *st, const struct rx_packet *p, const struct rx_dest *d)
{
	if (st->icrc && !p->icrc_checked)
		return droce_place_icrc(st->placer, p->m, p->l3_off, p->payload_off,
					d->buf_off, p->pkt.payload_len);
	return droce_place(st->placer, p->m, p->payload_off, d->buf_off,
			   p->pkt.payload_len);
}

/* What a placement's result @p ret (place()) means for the stream's
 * counters: true if the payload is in place.
 */
static __rte_always_inline bool
count_placement(struct rx_burst *b, struct droce_rx_stream *st, const struct rx_packet *p,
		int ret)
{
	if (unlikely(ret < 0)) {
		rx_count_refusal(st, ret == -EBADMSG ? DROCE_RX_BAD_ICRC : DROCE_RX_PLACE_FAILED);
		return false;
	}
	if (ret == 1)
		done_add(b, p->m);
	st->cur.packets++;
	st->cur.bytes += p->pkt.payload_len;
	rx_count(&st->stats.packets, 1);
	rx_count(&st->stats.bytes, p->pkt.payload_len);
	if (p->handed_over)
		rx_count(&st->stats.handed_over, 1);
	return true;
}

/*
 * A packet in PSN order (@p gap packets lost before it), through the rest
 * of the steps. A refusal here changes nothing but a counter, except for
 * a packet that has no message to belong to: its PSN is used up, and it
 * counts as lost. On UC a placement that fails uses up its PSN too (the
 * sender does not resend); on RC nothing is used up, and the requester's
 * retry fills the PSN.
 */
static __rte_always_inline void
execute(struct rx_burst *b, struct droce_rx_stream *st, struct rx_packet *p, uint32_t gap)
{
	uint32_t flags = p->pkt.info->flags, imm = 0, imm_page = 0, imm_psn = 0;
	bool ends = (flags & DROCE_HDR_IMMDT) != 0;
	struct droce_hsb_metadata md;
	enum droce_rx_refusal why;
	struct rx_dest d;
	bool have_md;

	why = check_message(st, p, gap != 0, &d);
	if (why == DROCE_RX_NO_MESSAGE) {
		consume_psn(st, p, gap);
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
	if (!count_placement(b, st, p, place(st, p, &d))) {
		if (is_rc(p))
			return;
		count_lost(st, 1);
		have_md = false;
	}
	if (have_md) {
		md.frame_number = rx_extend_frame_number(st, (uint16_t)md.frame_number);
		st->cur.metadata = md;
		__atomic_store_n(&st->page_psn[d.page], md.psn, __ATOMIC_RELEASE);
	}
	consume_psn(st, p, gap);
	advance_message(st, p, &d);
	if (is_rc(p)) {
		st->nak_sent = false;
		if (droce_bth_ackreq(p->pkt.bth) || (flags & DROCE_HDR_LAST))
			rx_acknowledge(b, st, p->m, p->psn, AETH_ACK);
		if (flags & DROCE_HDR_LAST)
			st->msn = (st->msn + 1) & DROCE_MSN_MASK;
	}
	if (!ends)
		return;
	if (imm_page != d.page)
		st->cur.lossy = true;  /* the immediate disagrees with the VA */
	rx_finish_frame(b->w, st, imm, imm_psn);
}

void rx_rc_out_of_order(struct rx_burst *b, struct droce_rx_stream *st, struct rte_mbuf *m,
			enum psn_verdict order);

/* One packet of a stream, on its owner worker, after every check that
 * needs no state.
 */
static __rte_always_inline void
rx_respond(struct rx_burst *b, struct droce_rx_stream *st, struct rx_packet *p)
{
	uint32_t gap;
	enum psn_verdict order = check_psn(st, p, &gap);

	if (unlikely(order != PSN_NEXT)) {
		if (is_rc(p))
			return rx_rc_out_of_order(b, st, p->m, order);
		if (order == PSN_AHEAD && st->reorder.window != 0) {
			/* Past the window: only the oldest gaps are given up,
			 * as far as it takes; later ones may still fill.
			 */
			while (order == PSN_AHEAD && gap >= st->reorder.window &&
			       st->reorder.held != 0) {
				rx_reorder_give_up_gap(b, st);
				order = check_psn(st, p, &gap);
			}
			if (order == PSN_AHEAD) {
				struct rx_packet held = *p;

				if (rx_reorder_hold(b, st, &held, gap))
					return;
			}
		}
		if (order == PSN_BEHIND)
			return rx_refuse(st, p->m, DROCE_RX_STALE_PSN); /* duplicate or late */
	}
	execute(b, st, p, gap);
	if (unlikely(st->reorder.held != 0))
		rx_reorder_release(b, st);
}

#endif /* DROCE_RX_RESPONDER_H */
