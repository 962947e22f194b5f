/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RX_PRIVATE_H
#define DROCE_RX_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include <rte_ether.h>
#include <rte_log.h>
#include <rte_ring.h>

#include "droce_roce.h"
#include "droce_rx.h"

#define RX_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_rx_logtype, \
		"droce.rx: " fmt "\n", ##__VA_ARGS__)

/* QP lookup: open addressing, twice as many slots as streams. */
#define RX_QP_SLOTS (2 * DROCE_RX_MAX_STREAMS)
/* Frames a stream holds while the placement engine finishes them. */
#define RX_PENDING 64
/* Streams one packet burst can need to ACK (RC). */
#define RX_BURST_STREAMS 32

/* The frame a stream is assembling (worker-owned). */
struct rx_frame {
	bool open;              /* a packet of it was taken */
	uint32_t page;
	uint64_t packets;
	uint64_t bytes;
	uint64_t lost;
	bool lossy;
};

/* An RDMA message in progress: FIRST seen, LAST not yet. */
struct rx_message {
	bool open;
	uint64_t va;            /* where the next packet goes */
	uint32_t page;          /* the page it lies in */
	uint32_t remaining;     /* bytes the RETH still promises */
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
	atomic_bool monitoring;         /* blocking_monitor() runs */
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
	uint64_t notified;              /* frames the monitor announced */
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
	/* RC responder */
	uint32_t msn;
	bool nak_sent;
	bool ack_due;
	uint32_t ack_psn;
	uint8_t ack_syndrome;
	struct rte_ether_addr peer_mac, our_mac;
	struct droce_rx_stream_stats stats;
};

/* A stream with frames waiting, for the run it was listed in. */
struct rx_waiting {
	struct droce_rx_stream *st;
	unsigned int run;
};

/*
 * Streams of a worker with frames waiting for their placement to finish:
 * the worker's poll hook looks at these only, however many streams it
 * owns. A stream goes in when its first frame starts to wait and leaves
 * when none does, or when its run is over (closed, perhaps started again)
 * or another worker owns it now. Every round of the hook visits every
 * entry, so a stream is listed at most twice: for a run that ended since
 * the last round and for the present one. Appended and removed by that
 * worker only.
 */
struct rx_worker {
	unsigned int nb_waiting;
	struct rx_waiting waiting[2 * DROCE_RX_MAX_STREAMS];
	uint64_t refused[DROCE_RX_REFUSAL_MAX];   /* before a stream is known */
} __rte_cache_aligned;

struct droce_rx {
	struct droce_stack *stack;
	pthread_mutex_t lock;           /* start/close/new/free */
	uint64_t qp_table[RX_QP_SLOTS]; /* qpn << 32 | (index + 1); 0 empty */
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
int rx_qp_insert(struct droce_rx *rx, uint32_t qpn, uint32_t index);
void rx_qp_remove(struct droce_rx *rx, uint32_t qpn);
void rx_stream_fail(struct droce_rx_stream *st, const char *why);

/* packet.c: the worker's share. */
void rx_udp_handler(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
		    struct rte_mbuf **pkts, uint16_t n, void *arg);
unsigned int rx_worker_hook(struct droce_lcore_ctx *ctx, void *arg);
void rx_stream_reset_worker_state(struct droce_rx_stream *st);

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

#endif /* DROCE_RX_PRIVATE_H */
