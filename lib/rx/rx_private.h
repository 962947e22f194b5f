/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RX_PRIVATE_H
#define DROCE_RX_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include <rte_ether.h>
#include <rte_log.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "droce_roce.h"
#include "droce_rx.h"

#define RX_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_rx_logtype, \
		"droce.rx: " fmt "\n", ##__VA_ARGS__)

/* QP lookup: open addressing, twice as many slots as streams. */
#define RX_QP_SLOTS (2 * DROCE_RX_MAX_STREAMS)
/* Stream QPNs: above the QPs special to IB, below the RC transport's
 * (which claims 0x10000 up; lib/rc).
 */
#define RX_FIRST_QPN 0x100
#define RX_LAST_QPN 0xffff
/* Frames a stream holds while the placement engine finishes them. */
#define RX_PENDING 64
/* Streams one packet burst can need to ACK (RC). */
#define RX_BURST_STREAMS 32
/* Mbufs a copy placer is done with, freed together (droce_free_received())
 * when the burst ends or this fills.
 */
#define RX_DONE_MAX 64
/* Packets another worker can hand to one worker before it takes them:
 * af_packet's fanout rollover moves a quarter of a queue's ring (4096
 * frames in the tests) to another queue at once.
 */
#define RX_HANDOFF_SIZE 4096
/* Handed-over packets a worker takes per round. */
#define RX_HANDOFF_BURST 64

/* The verdict of a check that finds nothing wrong: every check returns
 * this or the refusal that says why not.
 */
#define RX_ACCEPT ((enum droce_rx_refusal)DROCE_RX_REFUSAL_MAX)

/* Where a payload lands: its offset in the stream's buffer, the page that
 * holds it and the offset in that page.
 */
struct rx_dest {
	uint64_t buf_off;
	uint32_t page;
	bool block;             /* the payload covers the page's metadata block */
	uint64_t page_off;
};

/* One packet on its way through a worker. */
struct rx_packet {
	struct rte_mbuf *m;
	struct droce_pkt pkt;
	uint32_t l3_off;        /* IP header, from the frame's start */
	uint32_t payload_off;   /* payload, from the frame's start */
	uint32_t psn;
	bool icrc_checked;      /* its ICRC was found good already */
	bool handed_over;       /* it came in on another worker's queue */
	struct rx_dest dest;    /* checked, when the packet has a RETH */
};

/* The frame a stream is assembling (worker-owned). */
struct rx_frame {
	bool open;              /* a packet of it was taken */
	uint32_t page;
	uint64_t packets;
	uint64_t bytes;
	uint64_t lost;
	bool lossy;
	struct droce_hsb_metadata metadata; /* present once a packet brought it */
};

/* An RDMA message in progress: FIRST seen, LAST not yet. */
struct rx_message {
	bool open;
	uint64_t buf_off;       /* where the next packet goes */
	uint32_t page;          /* the page it lies in */
	uint32_t remaining;     /* bytes the RETH still promises */
};

/* UC packets held back behind a PSN gap, each in the slot of its PSN
 * modulo the window; all of them lie within the window after the expected
 * PSN.
 */
struct rx_reorder {
	uint32_t window;        /* 0: off; else a power of two */
	uint64_t timeout_tsc;
	uint32_t held;
	uint64_t since_tsc;     /* when the gap at the expected PSN began to wait */
	struct rte_mbuf **slot;
};

struct rx_pending {
	struct droce_rx_frame_info info;
	uint64_t ticket;
};

struct droce_rx_stream {
	struct droce_rx *rx;
	uint32_t index;                 /* in rx->streams */
	bool in_use;                    /* stream_new() .. stream_free() */

	/* Control state; atomics where workers or the monitor read it. */
	atomic_bool started;            /* start() .. close() */
	atomic_bool attached;           /* workers may touch it */
	atomic_uint run;                /* close() counts it up: the
					 * monitor of an earlier run returns */
	atomic_bool failed;             /* a fatal event happened */
	atomic_uint monitor_run;        /* run + 1 of the blocking_monitor()
					 * that runs; 0: none */
	bool ever_started;

	/* Parameters, fixed while started. */
	uint16_t port;
	uint16_t queue;
	rte_be32_t peer;
	uint32_t qpn, rkey, remote_qp;
	uint16_t pkey;
	enum droce_hsb_imm imm;
	bool icrc;                      /* checked at all */
	bool icrc_first;                /* before any state changes */
	uint32_t psn_mask;              /* 20 bits for HSB, 24 otherwise */
	uint64_t device_va;             /* the sensor's address of page 0 */
	size_t frame_size, page_size, metadata_offset;
	unsigned int pages, queue_size;
	struct droce_gpu_buf buf;
	struct droce_placer *placer;

	/* Frames for the application: the owner worker enqueues (discarding
	 * the oldest when full), get_next_frame() dequeues.
	 */
	struct rte_ring *frames;
	pthread_mutex_t lock;           /* consumer side and teardown */
	pthread_cond_t cond;
	uint64_t delivered;             /* frames enqueued (worker writes) */
	void (*frame_ready)(void *arg);
	void *frame_ready_arg;

	/* Per page, for overwrite detection (worker writes, consumer reads):
	 * the sequence of the frame that last put data there, and the PSN of
	 * the last metadata block written there.
	 */
	uint64_t *page_frame;
	uint32_t *page_psn;

	/* Worker-owned state. */
	atomic_uint owner;              /* worker index + 1, 0: none yet */
	bool listed;                    /* in the owner's waiting list, this run */
	struct rx_frame cur;
	struct rx_message msg;
	/* The page the last checked address fell in, and its first byte's
	 * offset: the packets of a frame land in one page, and knowing it
	 * spares each of them a 64-bit division. Always a page that exists.
	 */
	uint32_t near_page;
	uint64_t near_base;
	bool psn_valid;
	uint32_t expected_psn;
	/* The largest payload taken: what each packet of a frame but its
	 * last carries, to tell how many a gap took from a frame's head.
	 */
	uint32_t packet_payload;
	bool have_frame_number;
	uint64_t frame_number;
	uint64_t sequence;              /* frames completed */
	struct rx_pending pending[RX_PENDING];
	unsigned int pending_head, pending_count;
	struct rx_reorder reorder;
	/* RC responder */
	uint32_t msn;
	bool nak_sent;
	bool ack_due;
	uint32_t ack_psn;
	uint8_t ack_syndrome;
	struct rte_ether_addr peer_mac, our_mac;
	struct droce_rx_stream_stats stats;
};

/* A stream with frames or packets waiting, for the run it was listed in. */
struct rx_waiting {
	struct droce_rx_stream *st;
	unsigned int run;
};

/*
 * Streams of a worker with frames waiting for their placement to finish,
 * or packets held behind a PSN gap: the worker's poll hook looks at these
 * only, however many streams it owns. A stream goes in when it starts to
 * wait and leaves when nothing does, or when its run is over (closed,
 * perhaps started again) or another worker owns it now. Every round of the
 * hook visits every entry, so a stream is listed at most twice: for a run
 * that ended since the last round and for the present one. Appended and
 * removed by that worker only.
 */
struct rx_worker {
	struct rte_ring *handoff;       /* packets other workers hand to this one */
	unsigned int nb_waiting;
	struct rx_waiting waiting[2 * DROCE_RX_MAX_STREAMS];
	uint64_t refused[DROCE_RX_REFUSAL_MAX];   /* before a stream is known */
	uint64_t fast_taken;            /* packets the fast path took (packet.c) */
	/* The last burst ended with a stream that checks ICRCs first: the
	 * next one's first packets are checked ahead too (packet.c).
	 */
	bool icrc_guess;
} __rte_cache_aligned;

/* A burst's work on a worker: the ACKs it owes and the mbufs it frees,
 * both once at its end.
 */
struct rx_burst {
	struct droce_lcore_ctx *ctx;
	struct rx_worker *w;
	unsigned int me;                /* worker index + 1, as in owner */
	unsigned int nb_ack;
	struct droce_rx_stream *to_ack[RX_BURST_STREAMS];
	unsigned int nb_done;
	struct rte_mbuf *done[RX_DONE_MAX];
};

struct droce_rx {
	struct droce_stack *stack;
	pthread_mutex_t lock;           /* start/close/new/free */
	/* QP -> stream, the table workers read (qpn << 32 | (index + 1); 0
	 * empty), and a second one it is rebuilt into when removals leave
	 * too many tombstones.
	 */
	uint64_t *qp_table;
	uint64_t qp_tables[2][RX_QP_SLOTS];
	unsigned int qp_tombstones;
	struct droce_rx_stream *streams[DROCE_RX_MAX_STREAMS];
	uint32_t next_qp;
	unsigned int nb_workers;
	struct rx_worker *workers;
	/* CLOCK_REALTIME at a TSC instant, for timestamps without syscalls. */
	uint64_t base_ns, base_tsc;
	double ns_per_tsc;
	bool callbacks_registered;
	uint64_t prev_frames, prev_bytes; /* at the last stats line */
};

#define QP_TOMBSTONE 0xffffffffu

/* rx.c */
struct droce_rx_stream *rx_stream_of_qp(const struct droce_rx *rx, uint32_t qpn);
unsigned int rx_qp_probes(const struct droce_rx *rx, uint32_t qpn);
int rx_qp_insert(struct droce_rx *rx, uint32_t qpn, uint32_t index);
void rx_qp_remove(struct droce_rx *rx, uint32_t qpn);
void rx_stream_fail(struct droce_rx_stream *st, const char *why);

/* What lib/rx notes in an mbuf on its way (an mbuf dynfield). */
struct rx_note {
	uint64_t held_tsc;      /* when a packet was held behind a gap */
	uint32_t handoff;       /* a handed-over packet's port and ICRC verdict */
};

extern int rx_note_offset;

static inline struct rx_note *
rx_note(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, rx_note_offset, struct rx_note *);
}

/* packet.c: a packet's way to its stream's owner. */
void rx_udp_handler(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
		    struct rte_mbuf **pkts, uint16_t n, void *arg);
unsigned int rx_worker_hook(struct droce_lcore_ctx *ctx, void *arg);
int rx_note_register(void);
void rx_refuse(struct droce_rx_stream *st, struct rte_mbuf *m,
	       enum droce_rx_refusal why);
void rx_burst_init(struct rx_burst *b, struct droce_lcore_ctx *ctx,
		   struct rx_worker *w, unsigned int me);
void rx_burst_end(struct rx_burst *b);
void rx_list_waiting(struct rx_worker *w, struct droce_rx_stream *st);
/* Whether the fast path runs: the tests turn it off to hold it against
 * the general path.
 */
extern bool rx_fast_path;

/* responder.c: the owner's work beside the per-packet steps (responder.h). */
unsigned int rx_stream_attend(struct rx_burst *b, struct droce_rx_stream *st);
void rx_stream_reset_worker_state(struct droce_rx_stream *st);
void rx_reorder_drop(struct droce_rx_stream *st);

/* A counter only its owner worker writes: no locked instruction. */
static inline void
rx_count(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* Any worker may refuse a packet of any stream: a locked add (refusals
 * are rare).
 */
static inline void
rx_count_refusal(struct droce_rx_stream *st, enum droce_rx_refusal why)
{
	__atomic_fetch_add(&st->stats.refused[why], 1, __ATOMIC_RELAXED);
}

/* Whether blocking_monitor() runs for the present run: frames arrive only
 * then.
 */
static inline bool
rx_monitoring(const struct droce_rx_stream *st)
{
	return atomic_load_explicit(&st->monitor_run, memory_order_acquire) ==
	       atomic_load_explicit(&st->run, memory_order_relaxed) + 1;
}

static inline uint64_t
rx_load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void
rx_store64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* A payload against its page's metadata block: before it (the common
 * case, one compare), after it, over all of it (d->block), or over a part
 * of it, which is refused: a block is decoded from one packet.
 */
static __rte_always_inline enum droce_rx_refusal
rx_check_block(const struct droce_rx_stream *st, struct rx_dest *d, uint64_t len)
{
	uint64_t md = st->metadata_offset, end = d->page_off + len;

	d->block = false;
	if (likely(end <= md) || d->page_off >= md + DROCE_HSB_METADATA_SIZE || len == 0)
		return RX_ACCEPT;
	if (d->page_off > md || end < md + DROCE_HSB_METADATA_SIZE)
		return DROCE_RX_PARTIAL_METADATA;
	d->block = true;
	return RX_ACCEPT;
}

/* The RoCEv2 part of a classified UDP/4791 packet, parsed. */
static __rte_always_inline bool
rx_packet_parse(struct rte_mbuf *m, struct rx_packet *p)
{
	uint32_t l3 = DROCE_UDP_PKT_L3_OFFSET, l4 = droce_udp_pkt_l4_offset(m);
	uint32_t bth = l4 + sizeof(struct rte_udp_hdr);
	const struct rte_udp_hdr *udp = rte_pktmbuf_mtod_offset(m, const struct rte_udp_hdr *, l4);
	uint32_t roce_len = rte_be_to_cpu_16(udp->dgram_len) - sizeof(*udp);

	if (rte_pktmbuf_data_len(m) != rte_pktmbuf_pkt_len(m) ||
	    droce_roce_parse(rte_pktmbuf_mtod_offset(m, const uint8_t *, bth),
			     roce_len, &p->pkt) != DROCE_PARSE_OK)
		return false;
	p->m = m;
	p->l3_off = l3;
	p->payload_off = bth + p->pkt.hdr_len;
	p->psn = droce_bth_psn(p->pkt.bth);
	p->icrc_checked = false;
	p->handed_over = false;
	return true;
}

/* The page of buffer offset @p off, if the buffer has it. Only the owner
 * keeps the memo of the page before (@p memo).
 */
static __rte_always_inline bool
rx_page_of(struct droce_rx_stream *st, uint64_t off, bool memo, struct rx_dest *d)
{
	uint64_t from_near = off - st->near_base; /* huge if off is below it */

	d->buf_off = off;
	if (likely(memo && from_near < st->page_size)) {
		d->page = st->near_page;
		d->page_off = from_near;
		return true;
	}
	if (off / st->page_size >= st->pages)
		return false;
	d->page = (uint32_t)(off / st->page_size);
	d->page_off = off % st->page_size;
	if (memo) {
		st->near_page = d->page;
		st->near_base = off - d->page_off;
	}
	return true;
}

/*
 * The RETH of a FIRST or ONLY packet: the rkey, the DMA length against the
 * payload, and the whole message inside one page of the buffer, where the
 * sensor's page 0 is at device_va (a VA below it wraps to an offset past
 * the buffer). Fills p->dest.
 */
static __rte_always_inline enum droce_rx_refusal
rx_check_destination(struct droce_rx_stream *st, struct rx_packet *p, bool owner)
{
	const struct droce_reth *r = droce_pkt_ext(&p->pkt, DROCE_EXT_RETH);
	uint32_t dma = droce_reth_len(r), len = p->pkt.payload_len;

	if (droce_reth_rkey(r) != st->rkey)
		return DROCE_RX_BAD_RKEY;
	if ((p->pkt.info->flags & DROCE_HDR_LAST) ? dma != len : dma < len)
		return DROCE_RX_BAD_LENGTH;
	if (!rx_page_of(st, droce_reth_va(r) - st->device_va, owner, &p->dest) ||
	    p->dest.page_off + dma > st->page_size)
		return DROCE_RX_BAD_VA;
	return rx_check_block(st, &p->dest, len);
}

#endif /* DROCE_RX_PRIVATE_H */
