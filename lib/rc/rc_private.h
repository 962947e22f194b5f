/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RC_PRIVATE_H
#define DROCE_RC_PRIVATE_H

#include <stdatomic.h>
#include <sys/queue.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_spinlock.h>
#include <rte_timer.h>

#include "droce_rc.h"
#include "droce_roce.h"

extern int droce_rc_logtype;
#define RC_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_rc_logtype, "droce.rc: " fmt "\n", ## __VA_ARGS__)

/* Refuse a call: log why, return -err. */
#define RC_REFUSE(err, fmt, ...) \
	(RC_LOG(ERR, fmt, ## __VA_ARGS__), -(err))

/* Device limits. QPs and MRs are found by a slot in their table, taken
 * from their number or key; the rest of it is a generation, so that a
 * number or key used again soon after is not the old one's.
 */
#define RC_MAX_QP 4096
#define RC_QPN_SLOT_BITS 16
#define RC_MAX_MR 65536
#define RC_MR_GEN_BITS 8
#define RC_MR_SLOT_BITS 16
#define RC_MAX_QP_WR 16384
#define RC_MAX_SGE 32
#define RC_MAX_CQE 65536
#define RC_MAX_MR_SIZE (1ull << 40)
#define RC_MAX_MSG_SIZE (1u << 31)
#define RC_MAX_INLINE 256
#define RC_MAX_RD_ATOMIC 128
/* Bytes a RoCEv2 packet adds to its path MTU's payload, over the IP MTU:
 * IPv4, UDP, BTH, the largest extended header and the ICRC (as rxe
 * reckons a netdev's path MTU).
 */
#define RC_PATH_MTU_OVERHEAD 80
/* Packets from the workers and QPs with new work, waiting for the owner. */
#define RC_RX_RING_SIZE 4096
#define RC_DOORBELL_RING_SIZE 8192
/* PSNs a requester has in flight: what a peer must be able to hold. */
#define RC_WINDOW_PSNS 1024
/* Payloads from this size have their ICRC checked in the copy's pass. */
#define RC_FUSED_MIN 256
/* Payloads from this size go out from their memory region, chained
 * behind their headers, where the port takes such packets (zero copy).
 */
#define RC_ZERO_COPY_MIN 1024
/* A registered region's count of sending mbufs starts here: at 1 the mbuf
 * library updates the count without an atomic, which two owner lcores
 * attaching at once would race on. The device's segment pool bounds the
 * mbufs out at once far below the count's 16 bits (wire.c).
 */
#define RC_MR_TX_BASE 2
/* A request asks for an ACK at least every this many packets. */
#define RC_ACKREQ_EVERY 64
/* Packets the owner sends per QP per round, so that one QP's long message
 * or READ answer does not hold the others (or fill the TX queue).
 */
#define RC_TX_BUDGET 64
/* Requests the responder keeps back while it answers a READ. */
#define RC_HELD_PKTS RC_WINDOW_PSNS



TAILQ_HEAD(rc_qp_list, droce_qp);

/* Completions an owner made while it held one QP's lock, added to their
 * CQ together before it lets go: one locked enqueue and one fence for all
 * of them instead of each (a locked instruction waits for the stores
 * before it: the payloads just copied, a memif burst's). Added before the
 * lock is released, they stay in order with the flushes of another
 * thread, which takes the lock.
 */
#define RC_CQ_STAGE 32

struct rc_cq_stage {
	struct droce_cq *cq;
	uint32_t n;
	struct droce_wc wc[RC_CQ_STAGE];
};

/* Owners' lcore before their first round: no lcore is this one. */
#define RC_LCORE_UNKNOWN RTE_MAX_LCORE

/* An lcore that runs QPs: the control lcore, or one worker of several.
 * Everything here but the rings is its own.
 */
struct rc_owner {
	struct droce_rc_device *dev;
	int worker;                     /* its index; -1: the control lcore */
	unsigned int lcore_id;          /* where its rounds run: its timers */
	struct droce_lcore_ctx *ctx;    /* its TX queue, from its rounds */
	struct rte_ring *rx_ring;       /* packets from the workers, MP/SC */
	struct rte_ring *doorbell;      /* QPs with work posted, MP/SC */
	struct rc_qp_list active;       /* QPs with work to send */
	bool in_round;                  /* owner_round() runs (its list too) */
	uint64_t turn_tsc;              /* rc_owner_now() of this turn (0: not read) */
	bool posted_since_round;        /* its thread activated a QP since */
	atomic_uint nb_qps;             /* QPs it runs */
	uint32_t tx_reclaimed;          /* the device's tx_reclaim it last did */
	struct droce_rc_stats stats;
	struct rc_cq_stage stage;       /* empty whenever no QP lock is held */
} __rte_cache_aligned;

struct droce_rc_device {
	struct droce_stack *stack;
	uint16_t port;
	enum droce_rc_owners owners;
	struct rc_owner *owner;         /* nb_owners of them */
	uint32_t nb_owners;
	struct rte_mempool *pool;       /* mbufs to send from */
	struct rte_mempool *seg_pool;   /* zero copy's payload and trailer mbufs */
	/* Counted by the workers that hand packets over (locked adds). */
	uint64_t rx_ring_full, rx_wrong_port;
	/* Worker-owned QPs with a peer: the control lcore looks up their
	 * next hop's MAC (ARP is its own) when one is new, and every second.
	 */
	rte_spinlock_t neigh_lock;
	struct rc_qp_list neigh;
	atomic_bool neigh_new;
	uint32_t neigh_rounds;          /* control rounds, for NEIGH_ROUNDS_PER_TSC */
	uint64_t neigh_next_tsc;
	uint64_t mac;                   /* the port's, in the low 6 bytes */
	uint32_t ip;                    /* network order */
	uint16_t ip_mtu;
	struct droce_rc_device_attr attr;
	uint32_t nb_pd, nb_cq;
	struct droce_mr **mr;           /* RC_MAX_MR slots */
	uint8_t *mr_gen;
	uint32_t nb_mr, mr_hint;
	/* The port takes chained packets, and reads them with the CPU (a
	 * vdev: any memory will do) or by DMA (DPDK memory in IOVA-as-VA).
	 */
	bool tx_chains, tx_by_cpu;
	atomic_bool zero_copy;          /* droce_rc_set_zero_copy() */
	/* Bumped by a deregistration that waits: each owner flushes its TX
	 * and has the drivers free what they sent.
	 */
	atomic_uint tx_reclaim;
	struct droce_qp **qp;           /* RC_MAX_QP slots */
	uint8_t *qp_gen;
	uint32_t nb_qp, qp_hint;
};

struct droce_pd {
	struct droce_rc_device *dev;
	uint32_t users;                 /* MRs and QPs */
};

struct droce_cq {
	struct droce_rc_device *dev;
	struct rte_ring *entries;       /* struct droce_wc, MP/SC */
	uint32_t size;
	uint32_t users;                 /* QPs */
	int event_fd;
	atomic_int armed;
	uint64_t overruns;
	/* Instead of the eventfd (droce_cq_set_notify()): NULL, none. */
	void (*notify)(void *arg);
	void *notify_arg;
	/* The owner its QPs share (NULL while it has none); mixed from the
	 * day QPs of two owners used it until it has none again: a callback
	 * runs on the owner that adds a completion, so it takes one owner.
	 */
	const struct rc_owner *owner;
	bool mixed_owners;
};

/* A QP of @p owner starts using @p cq, and stops. */
void rc_cq_join(struct droce_cq *cq, const struct rc_owner *owner);
void rc_cq_leave(struct droce_cq *cq);
/* The owner a new QP on @p cq must have: its QPs' while it signals by
 * callback, else NULL (any).
 */
const struct rc_owner *rc_cq_owner_wanted(const struct droce_cq *cq);
/* 0, or (logged) -EINVAL where QP @p qpn of @p owner may not be flushed
 * on this thread because @p cq signals by callback: @p what is the verb.
 */
int rc_cq_flush_check(const struct droce_cq *cq, const struct rc_owner *owner,
		      uint32_t qpn, const char *what);

/* An armed CQ's signal: its notify function, or its eventfd. */
void rc_cq_signal(struct droce_cq *cq);

/* A send work request as queued: the caller's request, its SGEs, and
 * inline data copied in; then the requester's progress through it.
 */
struct rc_send_wqe {
	struct droce_send_wr wr;        /* next and sg_list not used */
	uint32_t length;                /* bytes of the message */
	bool signaled;
	bool started;                   /* first_psn and last_psn hold */
	uint32_t first_psn, last_psn;   /* a READ spans its response PSNs */
	uint32_t sent;                  /* bytes sent (READ: asked for) */
	uint32_t received;              /* READ: bytes of response placed */
	/* Set where the requester could not send it while older WQEs were
	 * unanswered: it completes with this once it is the oldest.
	 */
	enum droce_wc_status local_error;
	struct droce_sge sge[];         /* max_send_sge; inline bytes after */
};

struct rc_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;
	struct droce_sge sge[];         /* max_recv_sge */
};

/* A work queue: a ring of fixed-size WQEs. Posters (any thread) hold
 * the lock among themselves and publish the producer index; the QP's
 * owner takes from the consumer index and never locks.
 */
struct rc_queue {
	uint8_t *wqe;
	uint32_t size;                  /* slots: a power of two */
	uint32_t wqe_size;
	uint32_t max_wr;
	rte_spinlock_t post_lock;
	atomic_uint producer;
	atomic_uint consumer;
};

/* The requester's side of the send queue: WQEs from sq.consumer (oldest
 * not completed) to head have been sent, head onward have not.
 */
struct rc_requester {
	uint32_t head;                  /* next WQE to send from */
	uint32_t psn;                   /* next PSN to send */
	uint32_t psn_end;               /* one past the highest PSN ever sent */
	uint32_t rd_atomic;             /* READs and atomics in flight */
	uint32_t unacked_pkts;          /* since the last AckReq */
	bool starved;                   /* the last send found no mbuf */
	bool stopped_at_error;          /* at a WQE with local_error */
};

/* The completer: what the peer has acknowledged. */
struct rc_completer {
	uint32_t psn;                   /* oldest PSN not acknowledged */
	uint8_t retry_left, rnr_retry_left;
	bool rnr_waiting;               /* the RNR timer runs */
	bool went_back;                 /* resent for a loss, no progress since */
	bool timer_armed;               /* the retransmit timer is set */
	uint64_t ack_deadline;          /* tsc: when the ACK timeout runs out */
	uint64_t path_wait_since;       /* tsc: waiting for ARP with work, or 0 */
};

/* A READ or atomic the responder accepted: kept to answer a duplicate. */
struct rc_rd_resource {
	bool valid, atomic;
	uint32_t first_psn, last_psn;
	uint64_t va;
	uint32_t rkey, length;
	uint64_t orig;                  /* atomic: the value before */
	uint32_t msn;
};

enum rc_resp_message {
	RC_MSG_NONE,                    /* between messages */
	RC_MSG_SEND,                    /* a SEND FIRST came, its LAST has not */
	RC_MSG_WRITE,
};

struct rc_responder {
	uint32_t psn;                   /* next PSN expected */
	uint32_t msn;
	bool nak_sent;                  /* a PSN-sequence NAK is out */
	enum rc_resp_message in_message;
	/* The SEND in progress: its receive WQE and bytes placed so far. */
	bool have_wqe;
	uint32_t recv_offset;
	/* The WRITE in progress. */
	uint32_t write_rkey;
	uint64_t write_va;
	uint32_t write_left, write_total;
	/* ACK owed for this round's requests (sent once, coalesced); lazy
	 * when it answers one request alone.
	 */
	bool ack_owed;
	bool ack_lazy;
	uint32_t ack_psn;
	/* READ answers: resources in order, and the one being answered. */
	struct rc_rd_resource *res;     /* max_dest_rd_atomic (at least 1) */
	uint32_t nb_res, res_next;
	struct rc_rd_resource *answering;
	uint32_t answer_psn, answer_start, answer_offset;
	/* Requests that came while a READ is answered. */
	struct rte_mbuf *held[RC_HELD_PKTS];
	uint32_t held_head, held_count;
};

struct droce_qp {
	struct droce_rc_device *dev;
	struct droce_pd *pd;
	struct droce_qp_init_attr init;
	struct droce_qp_attr attr;      /* qp_state is the state */
	uint32_t qpn;
	struct rc_queue sq, rq;
	/* Held by the owner while it works on the QP, and by a thread that
	 * changes its state; uncontended in the steady state.
	 */
	rte_spinlock_t lock;
	struct rc_owner *owner;         /* the lcore that runs it */
	atomic_bool doorbell_rung;      /* on the doorbell ring */
	bool on_active;                 /* on owner->active */
	bool dead;                      /* destroyed; the owner frees it */
	TAILQ_ENTRY(droce_qp) active_link;
	/* A worker-owned QP's next hop: the MAC in the low 6 bytes, written
	 * by the control lcore; known once mac_known (release) says so.
	 */
	atomic_ullong peer_mac;
	atomic_bool mac_known;
	bool on_neigh;                  /* on dev->neigh (under neigh_lock) */
	TAILQ_ENTRY(droce_qp) neigh_link;
	/* From RTR: the path. */
	uint32_t mtu;
	uint32_t peer_ip;               /* network order */
	uint16_t udp_sport;
	/* Its ACKs' common bytes, made at the first ACK after a modify_qp(). */
	bool ack_proto_ready;
	struct droce_ack_proto ack_proto;
	struct rc_requester req;
	struct rc_completer comp;
	struct rc_responder resp;
	struct rte_timer retransmit_timer, rnr_timer;
};

/* A memory region, with what the public struct does not show. */
struct rc_mr {
	struct droce_mr mr;
	/* Counts the mbufs sending from the region, plus RC_MR_TX_BASE while
	 * it is registered; deregistration waits for them.
	 */
	struct rte_mbuf_ext_shared_info tx_shinfo;
	bool tx_from;                   /* the port can send from it */
	bool unpublished;               /* its keys are gone: dereg waits */
	bool busy_told;                 /* dereg logged -EBUSY once: retries are quiet */
};

static inline struct rc_mr *
rc_mr_of(const struct droce_mr *mr)
{
	return container_of(mr, struct rc_mr, mr);
}

/* device.c */
struct droce_mr *rc_mr_of_key(const struct droce_rc_device *dev, uint32_t key);
/* The region of @p lkey covering [@p addr, @p addr + @p len) with
 * @p access, on @p pd; NULL if none.
 */
struct droce_mr *rc_mr_check(const struct droce_pd *pd, uint32_t key, uint64_t addr,
			     uint64_t len, int access);
/* Where @p addr (in @p mr's address space) is for the CPU. */
static inline uint8_t *
rc_mr_cpu(const struct droce_mr *mr, uint64_t addr)
{
	return (uint8_t *)mr->addr + (addr - mr->iova);
}

/* cq.c */
/* Add a completion; -ENOSPC when the CQ is full (counted as an overrun). */
int rc_cq_add(struct droce_cq *cq, const struct droce_wc *wc);
/* Add @p n completions in order: how many fit (the rest are overruns). */
unsigned int rc_cq_add_burst(struct droce_cq *cq, const struct droce_wc *wc, unsigned int n);
/* rc_cq_add_burst() in its two steps: the completions into the CQ (no
 * signal yet), then the signal of an armed CQ for what was added.
 */
unsigned int rc_cq_enqueue(struct droce_cq *cq, const struct droce_wc *wc, unsigned int n);
void rc_cq_added(struct droce_cq *cq);

/* qp.c */
struct droce_qp *rc_qp_of_num(const struct droce_rc_device *dev, uint32_t qpn);

/* wire.c: packets in and out, the owner's round. */
int rc_wire_open(struct droce_rc_device *dev, char *err, size_t errlen);
void rc_wire_close(struct droce_rc_device *dev);
/* Free a destroyed QP: at once on the owner lcore, else by the owner. */
void rc_qp_release(struct droce_qp *qp);
/* The owner of a new QP in @p slot. */
struct rc_owner *rc_owner_of_slot(struct droce_rc_device *dev, uint32_t slot);
/* A worker-owned QP has a new path (RTR): its MAC is looked up. Not
 * under the QP's lock.
 */
void rc_neigh_add(struct droce_qp *qp);
/* ... and no path any more (RESET, destroyed). */
void rc_neigh_remove(struct droce_qp *qp);
/* Tell the owner that @p qp has work (any thread). */
void rc_qp_ring_doorbell(struct droce_qp *qp);
/* The doorbell for sends just posted; on an idle QP's owner, they go now. */
void rc_qp_send_posted(struct droce_qp *qp);
/* Put @p qp on the owner's list of QPs with work (owner only). */
void rc_qp_activate(struct droce_qp *qp);
/* A frame for @p qp with @p spec's opcode and headers; the payload is
 * copied from spec->payload, or else taken from @p sge (n entries,
 * skipping @p skip bytes): sent from its region (zero copy: the verbs
 * forbid changing a posted send's memory) where one SGE holds it, else
 * copied. NULL with rte_errno ENOBUFS when there is no mbuf,
 * EACCES when a key no longer covers its SGE.
 */
struct rte_mbuf *rc_frame(struct droce_qp *qp, struct droce_frame_spec *spec,
			  const struct droce_sge *sge, uint32_t nb_sge, uint32_t skip);

void rc_send_frame(struct droce_qp *qp, struct rte_mbuf *m);
/* An ACK, NAK (@p syndrome) or, with @p res, an atomic ACK. */
void rc_send_ack(struct droce_qp *qp, uint8_t syndrome, uint32_t psn,
		 const struct rc_rd_resource *res);
/* As rc_send_ack(), for an ACK that may wait for the lcore's next frame
 * that must leave (droce_tx_lazy()).
 */
void rc_send_ack_lazy(struct droce_qp *qp, uint8_t syndrome, uint32_t psn);
/* Where @p len bytes at byte @p offset of the SGE list lie, when one SGE
 * holds them all and its key still allows @p access; NULL otherwise.
 */
void *rc_sge_place(const struct droce_qp *qp, const struct droce_sge *sge, uint32_t nb_sge,
		   uint32_t offset, uint32_t len, int access);
/* Copy @p len bytes of @p src into the SGE list at byte @p offset; false
 * when they do not fit or a key no longer holds.
 */
bool rc_sge_copy_in(const struct droce_qp *qp, const struct droce_sge *sge, uint32_t nb_sge,
		    uint32_t offset, const void *src, uint32_t len);
/* A completion the owner made, holding @p qp's lock: staged (see
 * struct rc_cq_stage) until rc_owner_publish().
 */
void rc_complete(struct droce_qp *qp, struct droce_cq *cq, const struct droce_wc *wc);
/* The owner's staged completions into their CQ, on the owner's lcore. */
void rc_owner_publish(struct rc_owner *o);
/* QP -> ERR from the transport: log why, flush everything. */
void rc_qp_fail(struct droce_qp *qp, const char *why);

/* requester.c */
/* Send what the window allows, at most @p budget packets; returns packets sent. */
unsigned int rc_requester_run(struct droce_qp *qp, unsigned int budget);
/* Go back to the oldest unacknowledged PSN. */
void rc_requester_rewind(struct droce_qp *qp);

/* completer.c */
void rc_completer_input(struct droce_qp *qp, const struct droce_pkt *pkt);
void rc_completer_arm(struct droce_qp *qp);
/* ARP does not know the peer yet and work waits: after the local ACK
 * timeout times retry_cnt + 1 (never for retry_cnt 7), the oldest WQE
 * fails with RETRY_EXC_ERR as if its packets had been lost.
 */
void rc_completer_path_wait(struct droce_qp *qp);
/* @p wqe could not be sent (the requester). It completes with @p status
 * once it is the oldest, so that the older ones, which the peer may have
 * taken, complete as their answers say. Then the QP goes to ERR and the
 * rest flush. Until then the requester sends nothing past it.
 */
void rc_completer_fail(struct droce_qp *qp, struct rc_send_wqe *wqe,
		       enum droce_wc_status status);
void rc_completer_init(struct droce_qp *qp);

/* responder.c */
/* @p icrc_pending: the packet's ICRC is still to be checked, in the pass
 * that copies its payload where it can (wire.c: icrc_fusable()).
 */
void rc_responder_input(struct droce_qp *qp, struct rte_mbuf *m, const struct droce_pkt *pkt,
			bool icrc_pending);
/* Answer READs and take held requests, at most @p budget packets. */
unsigned int rc_responder_run(struct droce_qp *qp, unsigned int budget);
/* Send the ACK this round owes. */
void rc_responder_flush_ack(struct droce_qp *qp);
int rc_responder_init(struct droce_qp *qp);
void rc_responder_free(struct droce_qp *qp);

/* post.c */
/* The completion opcode of each send opcode. */
extern const enum droce_wc_opcode rc_wc_opcode[DROCE_WR_ATOMIC_FETCH_AND_ADD + 1];
int rc_queue_init(struct rc_queue *q, uint32_t max_wr, uint32_t wqe_size);
void rc_queue_free(struct rc_queue *q);
/* Complete every queued WQE of @p qp with WR_FLUSH_ERR (a QP in ERR). */
void rc_qp_flush(struct droce_qp *qp);
/* 0, or (logged) -EINVAL where a flush of @p qp may not run on this
 * thread (a CQ of its signals by callback): @p what is the verb.
 */
int rc_qp_flush_check(const struct droce_qp *qp, const char *what);

static inline void *
rc_queue_slot(const struct rc_queue *q, uint32_t index)
{
	return q->wqe + (size_t)(index & (q->size - 1)) * q->wqe_size;
}

/* A spinlock's release as a plain store, which on x86 already orders
 * every earlier load and store before it (DPDK's x86 unlock is an xchg,
 * a locked instruction that waits for the core's pending stores, and
 * after a memif burst those are stores to lines of the other cpu).
 */
static inline void
rc_unlock(rte_spinlock_t *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/* The TSC for @p o's work: read once a turn (owner_round(), or an eager
 * post's), when the turn first asks, as a read costs about what a small
 * packet's handling does. A turn takes at most RC_RX_ROUND packets, so a
 * deadline set from it is early by that much at most. Outside a turn, now.
 */
static inline uint64_t
rc_owner_now(struct rc_owner *o)
{
	if (!o->in_round || o->lcore_id != rte_lcore_id())
		return rte_get_timer_cycles();
	if (o->turn_tsc == 0)
		o->turn_tsc = rte_get_timer_cycles();
	return o->turn_tsc;
}

/* The owner lets go of @p qp: its staged completions first. */
static inline void
rc_qp_unlock_owner(struct droce_qp *qp)
{
	rc_owner_publish(qp->owner);
	rc_unlock(&qp->lock);
}

#endif /* DROCE_RC_PRIVATE_H */
