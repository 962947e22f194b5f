/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The responder's work that a frame, a gap or an ACK needs once; the
 * steps every packet takes are in responder.h. A frame ends with its
 * immediate (or when a packet of another page starts one), waits until
 * its placement batch is complete, then goes to the application's queue
 * in order. Packets held behind a PSN gap wait in slots by PSN until the
 * gap fills or is given up.
 */

#include <string.h>

#include <rte_cycles.h>

#include "responder.h"

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
	rx_count(&st->stats.acks, 1);
	droce_tx(ctx, st->port, m);
}

void
rx_burst_end(struct rx_burst *b)
{
	droce_free_received(b->done, b->nb_done);
	b->nb_done = 0;
	for (unsigned int i = 0; i < b->nb_ack; i++)
		if (b->to_ack[i]->ack_due)
			send_ack(b->ctx, b->to_ack[i]);
	b->nb_ack = 0;
}

/* RC: an ACK (or NAK) is owed to the packet's sender; sent once per
 * burst, for the newest PSN.
 */
void
rx_acknowledge(struct rx_burst *b, struct droce_rx_stream *st, const struct rte_mbuf *m,
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

/* The device's 16-bit frame number, continued past its wrap: a step of
 * under half its range either way from the frame before, so that a frame
 * late behind the next one (reordered on the way) or a sensor started
 * again steps back rather than on by nearly 65536. Never below zero.
 */
uint64_t
rx_extend_frame_number(struct droce_rx_stream *st, uint16_t fn)
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

	/* A locked add: a failure raised on another thread counts the
	 * frames it leaves behind in the same counter.
	 */
	if (!rx_monitoring(st) || atomic_load_explicit(&st->failed, memory_order_relaxed)) {
		__atomic_fetch_add(&st->stats.frames_dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	while (rte_ring_sp_enqueue_elem(st->frames, f, sizeof(*f)) != 0) {
		/* Full: the oldest waiting frame makes room, under the
		 * consumer's lock and only when it is free: a consumer that
		 * holds it may be taking a frame, making room itself, and then
		 * no frame is to be dropped (a dequeue here would drop one
		 * too many). The application being this slow is the only way
		 * here, so the worker's try costs the data path nothing.
		 */
		if (pthread_mutex_trylock(&st->lock) != 0)
			continue;
		if (rte_ring_full(st->frames) &&
		    rte_ring_mc_dequeue_elem(st->frames, &old, sizeof(old)) == 0)
			__atomic_fetch_add(&st->stats.frames_dropped, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&st->lock);
	}
	rx_store64(&st->delivered, st->delivered + 1);
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
		__atomic_fetch_add(&st->stats.frames_dropped, st->pending_count,
				   __ATOMIC_RELAXED);
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

/* Close the frame being assembled; it completes with its placement. */
void
rx_finish_frame(struct rx_worker *w, struct droce_rx_stream *st, uint32_t imm, uint32_t psn)
{
	struct rx_frame *c = &st->cur;
	uint64_t tsc = rte_get_tsc_cycles();
	uint64_t page_addr = (uint64_t)(uintptr_t)st->buf.gpu + (uint64_t)c->page * st->page_size;
	struct rx_pending *p;

	st->sequence++;
	rx_count(&st->stats.frames, 1);
	if (c->lossy)
		rx_count(&st->stats.frames_lossy, 1);
	/* Many frames can end in one go (the packets held behind a gap that
	 * is given up): those whose placement is done make room first.
	 */
	if (st->pending_count == RX_PENDING)
		complete_frames(st);
	if (st->pending_count == RX_PENDING) {
		/* The engine is that far behind: the frame is lost to it.
		 * (frames_dropped: locked adds, see deliver().)
		 */
		__atomic_fetch_add(&st->stats.frames_dropped, 1, __ATOMIC_RELAXED);
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

/*
 * Of a gap of @p gap packets before a frame's first packet seen,
 * @p page_off bytes into its page, those that were this frame's: its data
 * before that point (the metadata block may sit past the frame's end) in
 * packets of the size the sensor sends, all of them full but a frame's
 * last.
 */
uint32_t
rx_lost_head(const struct droce_rx_stream *st, uint32_t payload_len, bool ends,
	     uint64_t page_off, uint32_t gap)
{
	uint32_t per_packet = RTE_MAX(st->packet_payload, ends ? 0 : payload_len);
	uint64_t before = RTE_MIN(page_off, (uint64_t)st->frame_size);

	if (per_packet == 0)
		per_packet = payload_len;
	if (per_packet == 0)
		return 0;
	return (uint32_t)RTE_MIN((before + per_packet - 1) / per_packet, (uint64_t)gap);
}

/* RC takes packets in order only: a duplicate is ACKed again, a gap NAKed
 * once (the requester goes back to the expected PSN). RC PSNs are 24 bits.
 */
void
rx_rc_out_of_order(struct rx_burst *b, struct droce_rx_stream *st, struct rte_mbuf *m,
		   enum psn_verdict order)
{
	if (order == PSN_AHEAD && !st->nak_sent) {
		st->nak_sent = true;
		rx_acknowledge(b, st, m, st->expected_psn, AETH_NAK_SEQ);
	} else if (order == PSN_BEHIND && !st->nak_sent) {
		rx_acknowledge(b, st, m, (st->expected_psn - 1) & DROCE_PSN_MASK, AETH_ACK);
	}
	rx_refuse(st, m, DROCE_RX_STALE_PSN);
}

/* ---- UC: packets held behind a PSN gap ------------------------------------- */

static inline struct rte_mbuf **
reorder_slot(struct droce_rx_stream *st, uint32_t psn)
{
	return &st->reorder.slot[psn & (st->reorder.window - 1)];
}

/* Hold a packet that came ahead of a gap, if the gap may still fill: its
 * ICRC is checked first where the stream checks it at all, so that a bad
 * packet cannot take a good one's place. @p p is the caller's copy (the
 * packet of the fast path stays in registers).
 */
bool
rx_reorder_hold(struct rx_burst *b, struct droce_rx_stream *st, struct rx_packet *p,
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
		rx_count(&st->stats.handed_over, 1);
	rx_count(&st->stats.held, 1);
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
void
rx_reorder_release(struct rx_burst *b, struct droce_rx_stream *st)
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
void
rx_reorder_give_up_gap(struct rx_burst *b, struct droce_rx_stream *st)
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
	rx_reorder_release(b, st);
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

	rx_reorder_give_up_gap(b, st);
	while (r->held != 0) {
		uint32_t gap;
		struct rte_mbuf **slot = reorder_first_held(st, &gap);

		if (slot == NULL || now - rx_note(*slot)->held_tsc <= r->timeout_tsc)
			break;
		rx_reorder_give_up_gap(b, st);
	}
}

/* Give up every gap: all held packets in PSN order. */
static void
reorder_flush(struct rx_burst *b, struct droce_rx_stream *st)
{
	while (st->reorder.held != 0)
		rx_reorder_give_up_gap(b, st);
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
