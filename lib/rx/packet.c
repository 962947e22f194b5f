/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * A RoCEv2 packet's way to its stream's owner, top to bottom: parse
 * (opcode table), find the stream by QP, check everything that needs no
 * stream state (peer, opcode, P_Key, rkey, VA inside one page, the
 * metadata block whole or not at all, ICRC), and then either take it to
 * the responder (responder.c), if this worker owns the stream, or hand it
 * to the worker that does. A stream is owned by the first worker that
 * sees a packet of it that passed every check, so a forged packet cannot
 * take a stream from its sensor.
 *
 * Any worker may refuse a packet of any stream: refusal counters are
 * counted with locked adds (refusals are rare); everything else of a
 * stream only its owner writes.
 */

#include <string.h>

#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_mbuf_dyn.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "responder.h"

/* In a handed-over packet's note: its ICRC was found good. */
#define NOTE_ICRC_CHECKED 0x10000u
#define NOTE_PORT_MASK 0xffffu

int rx_note_offset = -1;

int
rx_note_register(void)
{
	static const struct rte_mbuf_dynfield note = {
		.name = "droce_rx_note",
		.size = sizeof(struct rx_note),
		.align = __alignof__(struct rx_note),
	};

	if (rx_note_offset < 0)
		rx_note_offset = rte_mbuf_dynfield_register(&note);
	return rx_note_offset < 0 ? -rte_errno : 0;
}

void
rx_refuse(struct droce_rx_stream *st, struct rte_mbuf *m, enum droce_rx_refusal why)
{
	rx_count_refusal(st, why);
	rte_pktmbuf_free(m);
}

static inline void
refuse_unknown(struct rx_worker *w, struct rte_mbuf *m, enum droce_rx_refusal why)
{
	rx_count(&w->refused[why], 1);
	rte_pktmbuf_free(m);
}

void
rx_burst_init(struct rx_burst *b, struct droce_lcore_ctx *ctx, struct rx_worker *w,
	      unsigned int me)
{
	b->ctx = ctx;
	b->w = w;
	b->me = me;
	b->nb_ack = 0;
	b->nb_done = 0;
}

void
rx_list_waiting(struct rx_worker *w, struct droce_rx_stream *st)
{
	if (st->listed || w->nb_waiting == RTE_DIM(w->waiting))
		return;
	st->listed = true;
	w->waiting[w->nb_waiting++] = (struct rx_waiting){
		.st = st,
		.run = atomic_load_explicit(&st->run, memory_order_relaxed),
	};
}

/* Opcodes a sensor stream takes: RDMA WRITE, on UC or RC. */
static inline bool
write_opcode(uint8_t op)
{
	uint8_t t = op & 0xe0, o = op & 0x1f;

	return (t == DROCE_OP_UC || t == DROCE_OP_RC) &&
	       o >= DROCE_OP_WRITE_FIRST && o <= DROCE_OP_WRITE_ONLY_IMM;
}

/*
 * The ICRC verdicts on a burst's next packets, taken at the end of the
 * packet before them; each verdict waits for its packet's turn. A large
 * packet's is taken while the placement before it drains its streaming
 * stores. Small packets of one length are checked four at once
 * (droce_icrc_ok_x4()): one small packet's CRC leaves the multiplier idle
 * while its steps wait on each other, four share each step. Whether to
 * take them is guessed from the stream before, across bursts too (a
 * sensor's packets come in long runs); a packet of another stream is
 * checked in its turn.
 */
#define ICRC_GROUP 4
/* The longest frame checked in a group: the four-at-once pass's limit. */
#define ICRC_GROUP_MAX_FRAME (DROCE_UDP_PKT_L3_OFFSET + DROCE_ICRC_X4_MAX_LEN)

struct rx_icrc_ahead {
	uint16_t first, end;    /* the burst's packets first.. end - 1 */
	unsigned int ok;        /* bit k: packet first + k's ICRC is good */
};

/* The verdict on the burst's packet @p i, taken in order: 1 good, 0 bad,
 * -1 not taken.
 */
static inline int
icrc_ahead_verdict(const struct rx_icrc_ahead *a, uint16_t i)
{
	return i < a->end ? (int)(a->ok >> (i - a->first)) & 1 : -1;
}

/* Whether @p m, whose IP header is at @p l3_off, has a good ICRC. */
static inline bool
packet_icrc_ok(const struct rte_mbuf *m, uint32_t l3_off)
{
	return droce_icrc_ok(rte_pktmbuf_mtod_offset(m, const uint8_t *, l3_off),
			     rte_pktmbuf_data_len(m) - l3_off);
}

/* Whether @p m's ICRC is good: @p ahead, the verdict taken ahead, or now. */
static inline bool
icrc_good(int ahead, const struct rte_mbuf *m, uint32_t l3_off)
{
	return ahead >= 0 ? ahead != 0 : packet_icrc_ok(m, l3_off);
}

/* Take the verdicts on the burst's packet @p first and, where they are
 * small, one segment each and of one length, on up to three after it. A
 * short group (a burst's last packets) fills up with its last packet
 * again: one pass costs about what two packets checked one at a time do.
 */
static inline void
icrc_ahead_take(struct rx_icrc_ahead *a, struct rte_mbuf *const *burst, uint16_t first,
		uint16_t n)
{
	struct rte_mbuf *const *pkts = burst + first;
	/* At least Ethernet, IPv4 and UDP headers: the worker checked them. */
	uint32_t len = rte_pktmbuf_data_len(pkts[0]);
	const void *l3[ICRC_GROUP];
	unsigned int k = 0;

	a->first = first;
	if (len <= ICRC_GROUP_MAX_FRAME)
		for (; k < ICRC_GROUP && first + k < n; k++) {
			if (rte_pktmbuf_data_len(pkts[k]) != len ||
			    rte_pktmbuf_pkt_len(pkts[k]) != len)
				break;
			l3[k] = rte_pktmbuf_mtod_offset(pkts[k], const void *,
							DROCE_UDP_PKT_L3_OFFSET);
		}
	if (k >= 2) {
		a->end = first + k;
		for (unsigned int j = k; j < ICRC_GROUP; j++)
			l3[j] = l3[k - 1];
		a->ok = droce_icrc_ok_x4(l3, len - DROCE_UDP_PKT_L3_OFFSET);
		return;
	}
	a->end = first + 1;
	a->ok = packet_icrc_ok(pkts[0], DROCE_UDP_PKT_L3_OFFSET);
}

/* Everything about a packet that its stream's state does not decide, so
 * that any worker can check it: what a packet that passes may do depends
 * only on the PSN and the message it belongs to.
 */
static inline enum droce_rx_refusal
check_packet(struct droce_rx_stream *st, struct rx_packet *p, bool owner,
	     int icrc_ahead)
{
	enum droce_rx_refusal why;

	if (!write_opcode(p->pkt.opcode))
		return DROCE_RX_BAD_OPCODE;
	if (droce_bth_pkey(p->pkt.bth) != st->pkey)
		return DROCE_RX_BAD_PKEY;
	if (p->pkt.info->flags & DROCE_HDR_RETH) {
		why = rx_check_destination(st, p, owner);
		if (why != RX_ACCEPT)
			return why;
	}
	if (st->icrc_first && !p->icrc_checked) {
		if (!icrc_good(icrc_ahead, p->m, p->l3_off))
			return DROCE_RX_BAD_ICRC;
		p->icrc_checked = true;
	}
	return RX_ACCEPT;
}

/* Give a packet to the worker that owns its stream. */
static void
hand_over(struct droce_rx *rx, struct droce_rx_stream *st, unsigned int owner,
	  uint16_t port, struct rte_mbuf *m, bool icrc_checked)
{
	rx_note(m)->handoff = port | (icrc_checked ? NOTE_ICRC_CHECKED : 0);
	if (rte_ring_mp_enqueue(rx->workers[owner - 1].handoff, m) != 0)
		rx_refuse(st, m, DROCE_RX_HANDOFF_FULL);
}

/* The stream a burst's last packet went to, with its QP: the packets of
 * one sensor come in runs, and the next one of the run skips the lookup
 * and the checks that hold for the whole burst. Its port and queue are
 * the burst's; a close detaches the stream and then waits for the
 * worker's round to end (droce_stack_quiesce()); a failure raised by
 * another thread meanwhile is seen from the next burst on, as one raised
 * just after a packet's check always was.
 */
struct rx_last_stream {
	struct droce_rx_stream *st;
	uint32_t qpn;
};

/* The stream of QP @p qpn, if it takes packets on this port and queue
 * (DROCE_RX_ANY_QUEUE: any); @p m is refused if not.
 */
static struct droce_rx_stream *
stream_for_qp(struct droce_rx *rx, struct rx_worker *w, uint16_t port, uint16_t queue,
	      uint32_t qpn, struct rte_mbuf *m)
{
	struct droce_rx_stream *st = rx_stream_of_qp(rx, qpn);

	if (st == NULL) {
		refuse_unknown(w, m, DROCE_RX_UNKNOWN_QP);
		return NULL;
	}
	if (!atomic_load_explicit(&st->attached, memory_order_acquire) ||
	    atomic_load_explicit(&st->failed, memory_order_relaxed)) {
		rx_refuse(st, m, DROCE_RX_NOT_STARTED);
		return NULL;
	}
	if (port != st->port || (st->queue != DROCE_RX_ANY_QUEUE &&
				 queue != DROCE_RX_ANY_QUEUE && queue != st->queue)) {
		rx_refuse(st, m, DROCE_RX_WRONG_PORT);
		return NULL;
	}
	return st;
}

/* The stream of a packet from @p ip, if it takes it from there. */
static inline struct droce_rx_stream *
stream_of(struct droce_rx *rx, struct rx_worker *w, uint16_t port, uint16_t queue,
	  const struct rx_packet *p, const struct rte_ipv4_hdr *ip,
	  struct rx_last_stream *last)
{
	uint32_t qpn = droce_bth_dqpn(p->pkt.bth);

	if (unlikely(last->st == NULL || qpn != last->qpn)) {
		struct droce_rx_stream *st = stream_for_qp(rx, w, port, queue, qpn, p->m);

		if (st == NULL)
			return NULL;
		*last = (struct rx_last_stream){ .st = st, .qpn = qpn };
	}
	if (ip->src_addr != last->st->peer) {
		rx_refuse(last->st, p->m, DROCE_RX_WRONG_PEER);
		return NULL;
	}
	return last->st;
}

/*
 * A packet of @p st that this worker received (or was handed): checked
 * here, then taken to the responder by the owner, or handed to it. The
 * first worker that has a packet that passed every check and starts a
 * message (a RETH) owns the stream from then on; the compare-and-swap (a
 * locked instruction) only while it has none.
 */
static __rte_always_inline void
packet_input(struct droce_rx *rx, struct rx_burst *b, struct droce_rx_stream *st,
	     uint16_t port, struct rx_packet *p, int icrc_ahead)
{
	unsigned int owner = atomic_load_explicit(&st->owner, memory_order_relaxed);
	enum droce_rx_refusal why = check_packet(st, p, owner == b->me, icrc_ahead);

	if (why != RX_ACCEPT)
		return rx_refuse(st, p->m, why);
	if (unlikely(owner != b->me)) {
		if (owner == 0 && !(p->pkt.info->flags & DROCE_HDR_RETH))
			return rx_refuse(st, p->m, DROCE_RX_NO_MESSAGE);
		if (owner != 0 ||
		    (!atomic_compare_exchange_strong(&st->owner, &owner, b->me) &&
		     owner != b->me))
			return hand_over(rx, st, owner, port, p->m, p->icrc_checked);
	}
	rx_respond(b, st, p);
}

/*
 * The fast path. Most of a sensor's packets are WRITE ONLYs of the frame
 * in progress, each the one its stream expects next. For a packet of the
 * burst's last stream, one look at its BTH and RETH against what the
 * stream expects tells whether it is such a packet; if so, it skips the
 * opcode table, the stream lookup and the general cases of the checks
 * and the responder's steps (execute() with the branches such a packet
 * cannot take left out: the frame takes it as it is, and its message
 * opens and ends with it). Any other packet, and any packet a check would
 * refuse, takes the general path, which judges it as before: the fast
 * path changes nothing until it has decided to take the packet.
 *
 * What holds for the whole run of a stream's packets is looked at once
 * (fast_run_begin()), and what the run changes in the stream is written
 * back once (fast_run_end()), before any packet takes the general path
 * and at the end of the burst: only the general path changes what the
 * run looked at, and a WRITE ONLY without immediate never ends a frame.
 */
bool rx_fast_path = true;

#define FAST_HDR_LEN (sizeof(struct droce_bth) + sizeof(struct droce_reth))
#define FAST_OPCODE (DROCE_OP_UC | DROCE_OP_WRITE_ONLY)
#define FAST_L3_OFF DROCE_UDP_PKT_L3_OFFSET
#define FAST_UDP_OFF (FAST_L3_OFF + sizeof(struct rte_ipv4_hdr))
#define FAST_PAYLOAD_OFF (FAST_UDP_OFF + sizeof(struct rte_udp_hdr) + FAST_HDR_LEN)

struct fast_run {
	struct droce_rx_stream *st;     /* NULL: no run */
	/* The BTH's first 8 bytes, masked: opcode, no pad, transport
	 * version 0, P_Key, QP.
	 */
	uint64_t bth_key, bth_mask;
	rte_be32_t rkey;
	uint32_t expected_psn;
	uint64_t page_end;              /* the payload ends by here, from near_base */
	/* Payloads up to direct.max_len bytes are copied here (max_len 0:
	 * each goes through place()).
	 */
	struct droce_place_direct direct;
	const struct droce_rx_stream *direct_of;  /* whose window direct is */
	bool direct_ok;                 /* the placer has not failed */
	uint32_t direct_packets;        /* copied, not yet counted */
	uint64_t direct_bytes;
	bool took;                      /* a packet closed its message */
	unsigned int taken;
};

static inline uint32_t
fast_be32(const uint8_t *p)
{
	rte_be32_t v;

	memcpy(&v, p, sizeof(v));
	return rte_be_to_cpu_32(v);
}

static inline uint64_t
fast_load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Whether the burst's last stream can take packets on the fast path;
 * if so the run starts with what it needs of the stream.
 */
static __rte_always_inline bool
fast_run_begin(struct fast_run *r, const struct rx_burst *b, const struct rx_last_stream *last)
{
	struct droce_rx_stream *st = last->st;
	uint8_t key[8], mask[8] = { 0xff, DROCE_BTH_PAD_MASK | DROCE_BTH_TVER_MASK,
				    0xff, 0xff, 0, 0xff, 0xff, 0xff };

	if (st == NULL || atomic_load_explicit(&st->owner, memory_order_relaxed) != b->me ||
	    !st->cur.open || !st->psn_valid || st->reorder.held != 0 ||
	    st->near_page != st->cur.page)
		return false;
	key[0] = FAST_OPCODE;
	key[1] = 0;
	key[2] = (uint8_t)(st->pkey >> 8);
	key[3] = (uint8_t)st->pkey;
	key[4] = 0;
	key[5] = (uint8_t)(last->qpn >> 16);
	key[6] = (uint8_t)(last->qpn >> 8);
	key[7] = (uint8_t)last->qpn;
	memcpy(&r->bth_key, key, sizeof(key));
	memcpy(&r->bth_mask, mask, sizeof(mask));
	r->rkey = rte_cpu_to_be_32(st->rkey);
	r->expected_psn = st->expected_psn;
	r->page_end = RTE_MIN(st->metadata_offset, st->page_size);
	/* A fused ICRC is checked in place()'s copy. The window is asked for
	 * once a burst and stream: a stream whose packets keep taking the
	 * general path begins a run at each of them.
	 */
	if (r->direct_of != st) {
		r->direct_of = st;
		if ((st->icrc && !st->icrc_first) ||
		    droce_placer_direct(st->placer, &r->direct) != 0)
			r->direct.max_len = 0;
	}
	r->direct_ok = !droce_placer_failed(st->placer);
	r->direct_packets = 0;
	r->direct_bytes = 0;
	r->took = false;
	r->st = st;
	return true;
}

/* The run's changes into its stream. */
static __rte_always_inline void
fast_run_end(struct fast_run *r)
{
	struct droce_rx_stream *st = r->st;

	if (st == NULL)
		return;
	r->st = NULL;
	if (r->direct_packets != 0) {
		st->cur.packets += r->direct_packets;
		st->cur.bytes += r->direct_bytes;
		rx_count(&st->stats.packets, r->direct_packets);
		rx_count(&st->stats.bytes, r->direct_bytes);
		droce_placer_count_direct(st->placer, r->direct_packets, r->direct_bytes);
	}
	if (!r->took)
		return;
	st->expected_psn = r->expected_psn;
	st->msg.open = false;   /* what else it holds means nothing then */
}

/* A small payload (32 bytes or more) copied as place_checked() would,
 * with ordinary stores: its first and last 32 bytes, overlapping where it
 * is shorter than 64, and the 32-byte pieces between.
 */
#define FAST_COPY_MIN 32

static __rte_always_inline void
copy_small(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	for (uint32_t o = 32; o + 32 < len; o += 32)
		memcpy(dst + o, src + o, 32);
	memcpy(dst, src, 32);
	memcpy(dst + len - 32, src + len - 32, 32);
}

static __rte_always_inline bool
fast_take(struct rx_burst *b, struct fast_run *r, struct rte_mbuf *m,
	  int icrc_ahead)
{
	struct droce_rx_stream *st = r->st;
	const uint8_t *l2 = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(l2 + FAST_L3_OFF);
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(l2 + FAST_UDP_OFF);
	const uint8_t *bth = (const uint8_t *)(udp + 1);
	const uint8_t *reth = bth + sizeof(struct droce_bth);
	uint32_t roce_len, len, psn;
	uint64_t buf_off, from_near;

	/* An IPv4 header without options; the UDP length lies inside the
	 * frame (the worker checked it).
	 */
	if (ip->version_ihl != RTE_IPV4_VHL_DEF ||
	    rte_pktmbuf_data_len(m) != rte_pktmbuf_pkt_len(m))
		return false;
	roce_len = rte_be_to_cpu_16(udp->dgram_len) - (uint32_t)sizeof(*udp);
	if (roce_len < FAST_HDR_LEN + DROCE_ICRC_LEN)
		return false;
	len = roce_len - (uint32_t)FAST_HDR_LEN - DROCE_ICRC_LEN;
	psn = fast_be32(bth + offsetof(struct droce_bth, apsn)) & DROCE_PSN_MASK;
	/* BTH; PSN; peer; the RETH's rkey and a DMA length of the payload. */
	if ((fast_load64(bth) & r->bth_mask) != r->bth_key ||
	    ((psn ^ r->expected_psn) & st->psn_mask) != 0 ||
	    ip->src_addr != st->peer ||
	    fast_load64(reth + offsetof(struct droce_reth, rkey)) !=
	    ((uint64_t)rte_cpu_to_be_32(len) << 32 | r->rkey))
		return false;
	/* The VA: in the frame's page, before its metadata block. */
	buf_off = rte_be_to_cpu_64(fast_load64(reth)) - st->device_va;
	from_near = buf_off - st->near_base;
	if (from_near >= r->page_end || from_near + len > r->page_end)
		return false;
	if (st->icrc_first && !icrc_good(icrc_ahead, m, FAST_L3_OFF))
		return false;
	if (len > st->packet_payload)
		st->packet_payload = len;
	if (r->direct_ok && len >= FAST_COPY_MIN && len <= r->direct.max_len &&
	    buf_off + len <= r->direct.size) {
		copy_small(r->direct.cpu + buf_off, l2 + FAST_PAYLOAD_OFF, len);
		done_add(b, m);
		r->direct_packets++;
		r->direct_bytes += len;
	} else {
		struct rx_packet p = {
			.m = m, .l3_off = FAST_L3_OFF, .payload_off = FAST_PAYLOAD_OFF,
			.psn = psn, .icrc_checked = st->icrc_first,
		};
		struct rx_dest d = {
			.buf_off = buf_off, .page = st->near_page, .page_off = from_near,
		};

		p.pkt.payload_len = len;
		if (!count_placement(b, st, &p, place(st, &p, &d)))
			count_lost(st, 1);
	}
	r->expected_psn = (psn + 1) & st->psn_mask;
	r->took = true;
	r->taken++;
	return true;
}

/*
 * A coming packet's lines are asked for twice: far ahead into L2 (T1),
 * then near into L1 (T0). Packets a NIC wrote lie a buffer apart, too far
 * for the hardware prefetcher to stream from one into the next, and the
 * misses L1 keeps in flight are too few to cover memory's latency at its
 * bandwidth; L2 keeps several times more, so the far request does the
 * waiting and the near one finds the lines in L2. Up to a jumbo frame.
 */
#define PREFETCH_BYTES 9216
#define PREFETCH_FAR 8
#define PREFETCH_NEAR 2
/* A packet of a few lines is in flight soon enough with the near request
 * alone; for it the far one would be a loop's worth of instructions. Its
 * near one goes as far ahead as a group of ICRCs taken ahead reaches.
 */
#define PREFETCH_FAR_MIN 512
#define PREFETCH_NEAR_SMALL (ICRC_GROUP + 1)

static inline void
prefetch_far(const struct rte_mbuf *m)
{
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = RTE_MIN(rte_pktmbuf_data_len(m), (uint32_t)PREFETCH_BYTES);

	if (len < PREFETCH_FAR_MIN)
		return;
	for (uint32_t o = RTE_CACHE_LINE_SIZE; o < len; o += RTE_CACHE_LINE_SIZE)
		rte_prefetch1(b + o);
}

/* Only a packet of @p lo to @p hi - 1 bytes. */
static inline void
prefetch_near(const struct rte_mbuf *m, uint32_t lo, uint32_t hi)
{
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = RTE_MIN(rte_pktmbuf_data_len(m), (uint32_t)PREFETCH_BYTES);

	if (len < lo || len >= hi)
		return;
	for (uint32_t o = RTE_CACHE_LINE_SIZE; o < len; o += RTE_CACHE_LINE_SIZE)
		rte_prefetch0(b + o);
}

/* What the turns before the burst's first would have asked for. */
static inline void
prefetch_start(struct rte_mbuf *const *pkts, uint16_t n)
{
	for (uint16_t k = PREFETCH_NEAR; k < PREFETCH_FAR && k < n; k++)
		prefetch_far(pkts[k]);
	for (uint16_t k = 1; k < PREFETCH_NEAR_SMALL && k < n; k++)
		prefetch_near(pkts[k], 0, k < PREFETCH_NEAR ? UINT32_MAX : PREFETCH_FAR_MIN);
}

/* The requests made in packet @p i's turn, for the packets after it. */
static inline void
prefetch_turn(struct rte_mbuf *const *pkts, uint16_t i, uint16_t n)
{
	if (i + PREFETCH_FAR < n)
		prefetch_far(pkts[i + PREFETCH_FAR]);
	if (i + PREFETCH_NEAR < n)
		prefetch_near(pkts[i + PREFETCH_NEAR], PREFETCH_FAR_MIN, UINT32_MAX);
	if (i + PREFETCH_NEAR_SMALL < n)
		prefetch_near(pkts[i + PREFETCH_NEAR_SMALL], 0, PREFETCH_FAR_MIN);
}

void
rx_udp_handler(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
	       struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct droce_rx *rx = arg;
	int wi = droce_lcore_worker_index(ctx);
	struct rx_last_stream last = { .st = NULL };
	struct rx_icrc_ahead icrc = { .end = 0 };
	bool icrc_guess = rx->workers[wi].icrc_guess;
	struct fast_run run = { .st = NULL };
	bool fast = rx_fast_path;
	struct rx_burst b;

	rx_burst_init(&b, ctx, &rx->workers[wi], (unsigned int)wi + 1);
	prefetch_start(pkts, n);
	if (icrc_guess && n > 0)
		icrc_ahead_take(&icrc, pkts, 0, n);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct droce_rx_stream *st;
		struct rx_packet p;

		prefetch_turn(pkts, i, n);
		if (fast && (run.st != NULL || fast_run_begin(&run, &b, &last)) &&
		    fast_take(&b, &run, m, icrc_ahead_verdict(&icrc, i))) {
			st = run.st;
		} else {
			fast_run_end(&run);
			if (!rx_packet_parse(m, &p)) {
				refuse_unknown(b.w, m, DROCE_RX_NOT_ROCE);
				continue;
			}
			st = stream_of(rx, b.w, port, queue, &p, rte_pktmbuf_mtod_offset(m,
					const struct rte_ipv4_hdr *, DROCE_UDP_PKT_L3_OFFSET), &last);
			if (st == NULL)
				continue;
			packet_input(rx, &b, st, port, &p, icrc_ahead_verdict(&icrc, i));
		}
		icrc_guess = st->icrc_first;
		if (icrc_guess && i + 1 < n && i + 1 >= icrc.end)
			icrc_ahead_take(&icrc, pkts, i + 1, n);
	}
	b.w->icrc_guess = icrc_guess;
	fast_run_end(&run);
	b.w->fast_taken += run.taken;
	rx_burst_end(&b);
}

/* Packets other workers handed to this one, through the same checks
 * (the stream may have been started again since) but the ICRC found
 * good before.
 */
static unsigned int
take_handed_over(struct droce_rx *rx, struct rx_burst *b)
{
	struct rte_mbuf *pkts[RX_HANDOFF_BURST];
	struct rx_last_stream last = { .st = NULL };
	unsigned int n = rte_ring_sc_dequeue_burst(b->w->handoff, (void **)pkts,
						   RX_HANDOFF_BURST, NULL);

	for (unsigned int i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m,
				const struct rte_ipv4_hdr *, DROCE_UDP_PKT_L3_OFFSET);
		uint32_t note = rx_note(m)->handoff;
		uint16_t port = (uint16_t)(note & NOTE_PORT_MASK);
		struct droce_rx_stream *st;
		struct rx_packet p;

		if (!rx_packet_parse(m, &p)) {
			refuse_unknown(b->w, m, DROCE_RX_NOT_ROCE);
			continue;
		}
		p.icrc_checked = (note & NOTE_ICRC_CHECKED) != 0;
		p.handed_over = true;
		st = stream_of(rx, b->w, port, DROCE_RX_ANY_QUEUE, &p, ip, &last);
		if (st != NULL)
			packet_input(rx, b, st, port, &p, -1);
	}
	return n;
}

unsigned int
rx_worker_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	struct droce_rx *rx = arg;
	int wi = droce_lcore_worker_index(ctx);
	unsigned int busy;
	struct rx_burst b;
	struct rx_worker *w;

	if (wi < 0)
		return 0;
	w = &rx->workers[wi];
	rx_burst_init(&b, ctx, w, (unsigned int)wi + 1);
	busy = take_handed_over(rx, &b);
	for (unsigned int i = 0; i < w->nb_waiting;) {
		struct droce_rx_stream *st = w->waiting[i].st;
		bool current = atomic_load_explicit(&st->run, memory_order_relaxed) ==
			       w->waiting[i].run;
		unsigned int left = 0;

		/* The frames and packets of a run that is over (or of a
		 * stream another worker owns now) are not this worker's any
		 * more; the stream's memory outlives this.
		 */
		if (current && atomic_load_explicit(&st->attached, memory_order_acquire) &&
		    atomic_load_explicit(&st->owner, memory_order_relaxed) == b.me)
			left = rx_stream_attend(&b, st);
		if (left == 0) {
			if (current)
				st->listed = false;
			w->waiting[i] = w->waiting[--w->nb_waiting];
			continue;
		}
		busy += left;
		i++;
	}
	rx_burst_end(&b);
	return busy;
}
