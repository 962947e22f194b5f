/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RC_H
#define DROCE_RC_H

/**
 * @file
 * RoCEv2 Reliable Connection transport in software, with a verbs API.
 *
 * The objects, calls and constants are shaped after rdma-core's
 * libibverbs, so that code written for ibv_* reads the same here: a
 * device (ibv_context) on one port of a droce stack, protection domains,
 * memory regions with lkey/rkey and access flags, completion queues,
 * queue pairs with ibverbs' state machine, post_send / post_recv with
 * work requests and scatter/gather lists, and poll_cq returning work
 * completions. The numeric values of the enums are libibverbs' own.
 *
 * Calls return 0 or a negative errno, or NULL with rte_errno set; every
 * refusal is also logged (type droce.rc) with what was wrong and what is
 * allowed.
 *
 * Threads: a device and its objects are created and destroyed by one
 * thread at a time. post_send / post_recv may be called from any thread
 * (posts to one queue are serialised among the posters only); poll_cq
 * from one thread per CQ.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct droce_stack;
struct droce_gpu_buf;

/** A device: the RC transport on one port of a stack (ibv_context). */
struct droce_rc_device;
/** Protection domain (ibv_pd). */
struct droce_pd;
/** Completion queue (ibv_cq). */
struct droce_cq;
/** Queue pair (ibv_qp). */
struct droce_qp;

/* ---- device -------------------------------------------------------------- */

/** Limits of a device: what ibv_query_device would report. */
struct droce_rc_device_attr {
	uint32_t max_qp;          /**< queue pairs at once */
	uint32_t max_qp_wr;       /**< work requests per send or receive queue */
	uint32_t max_sge;         /**< scatter/gather entries per work request */
	uint32_t max_cqe;         /**< entries per completion queue */
	uint32_t max_mr;          /**< memory regions at once */
	uint64_t max_mr_size;     /**< bytes per memory region */
	uint32_t max_msg_size;    /**< bytes per message */
	uint32_t max_inline_data; /**< bytes a send may carry inline */
	uint8_t max_qp_rd_atom;   /**< READ/atomic requests in flight, as requester */
	uint8_t max_qp_init_rd_atom; /**< ... as responder */
};

/**
 * Open the RC transport on port @p port of @p stack. The stack need not
 * be started yet.
 *
 * @return
 *   The device, or NULL with the reason in @p err.
 */
struct droce_rc_device *droce_rc_open(struct droce_stack *stack, uint16_t port,
				      char *err, size_t errlen);

/** Which lcores run a device's QPs (their packets, sends and timers). */
enum droce_rc_owners {
	/** The control lcore runs every QP (the default). */
	DROCE_RC_OWNERS_CONTROL,
	/** Each worker lcore runs a share of the QPs, a QP on one worker
	 *  only (its slot, the low bits of its number, modulo the workers):
	 *  no lock between lcores on the data path. The workers must
	 *  busy-poll (worker.poll.enable=yes): a sleeping worker would not
	 *  see a doorbell. ARP still runs on the control lcore, which hands
	 *  each QP its peer's MAC.
	 */
	DROCE_RC_OWNERS_WORKERS,
};

/** How a device is opened. */
struct droce_rc_conf {
	enum droce_rc_owners owners;
};

/**
 * As droce_rc_open(), with @p conf (NULL: the defaults).
 *
 * @return
 *   The device, or NULL with the reason in @p err (workers that do not
 *   busy-poll, say).
 */
struct droce_rc_device *droce_rc_open_conf(struct droce_stack *stack, uint16_t port,
					   const struct droce_rc_conf *conf, char *err,
					   size_t errlen);

/** What a device's transport has done and refused (all QPs). */
struct droce_rc_stats {
	uint64_t rx_packets;        /**< RC packets the owner lcores took */
	uint64_t tx_packets;        /**< RC packets it sent */
	uint64_t rx_ring_full;      /**< packets the workers could not hand over */
	uint64_t bad_icrc;          /**< dropped: ICRC */
	uint64_t bad_packet;        /**< dropped: headers, P_Key */
	uint64_t unknown_qp;        /**< dropped: no such QP */
	uint64_t wrong_peer;        /**< dropped: not from the QP's peer or port */
	uint64_t wrong_state;       /**< dropped: the QP takes no packets now */
	uint64_t retransmits;       /**< go-back-N restarts */
	uint64_t timeouts;          /**< local ACK timeouts */
	uint64_t seq_naks_sent;     /**< PSN-sequence NAKs sent */
	uint64_t seq_naks_received; /**< ... received */
	uint64_t rnr_naks_sent;     /**< RNR NAKs sent (no receive posted) */
	uint64_t rnr_naks_received; /**< ... received */
	uint64_t duplicates;        /**< duplicate requests answered */
	uint64_t acks_sent;         /**< ACKs and NAKs sent */
	uint64_t acks_received;     /**< ACKs, NAKs and READ/atomic answers received */
	uint64_t held_full;         /**< requests dropped while a READ was answered */
	uint64_t tx_zero_copy;      /**< packets sent from their memory region, not copied */
};

/** The device's counters (a snapshot; the owner lcores write them). */
void droce_rc_query_stats(const struct droce_rc_device *dev, struct droce_rc_stats *stats);

/** What a device holds now. */
struct droce_rc_objects {
	uint32_t qps, cqs, mrs, pds;
};

/** Count what @p dev holds: after a run, what was left behind. */
void droce_rc_query_objects(const struct droce_rc_device *dev, struct droce_rc_objects *objs);

/**
 * Close a device. Its QPs, CQs, MRs and PDs must have been destroyed.
 *
 * @return
 *   0, or -EBUSY (logged: which objects are left) and nothing closed.
 */
int droce_rc_close(struct droce_rc_device *dev);

/** Fill @p attr with the device's limits. */
void droce_rc_query_device(const struct droce_rc_device *dev,
			   struct droce_rc_device_attr *attr);

/**
 * Send the payloads of SENDs and WRITEs, 1 KiB and more a packet,
 * straight from their memory region (@p on) or copy them into the packet.
 * Zero copy chains an mbuf attached to the region (an external buffer)
 * behind the headers' mbuf, so it needs a port set up for multi-segment
 * packets (port.N.tx.chains = yes, and a device that has them), and host
 * memory the port can read: any, for a driver that copies each frame
 * with the CPU (memif, af_packet, pcap, ring, null, tap); DPDK memory in
 * IOVA-as-VA mode for a device that reads by DMA. GPU memory and READ
 * answers (whose memory may change while it is read) are always copied.
 * On by default where the port takes chained packets. On a NIC it spares
 * the CPU the copy; a vdev's driver copies anyway (over memif it measured
 * slower than copying). Any thread, at any time.
 *
 * @return
 *   0, or -ENOTSUP when @p on and the port takes no chained packets.
 */
int droce_rc_set_zero_copy(struct droce_rc_device *dev, bool on);

/** Whether droce_rc_set_zero_copy() has zero copy on now. */
bool droce_rc_zero_copy(const struct droce_rc_device *dev);

/** The port's address as a RoCEv2 GID (::ffff:a.b.c.d), 16 bytes. */
void droce_rc_query_gid(const struct droce_rc_device *dev, uint8_t gid[16]);

/** The IPv4-mapped GID of @p ip4 (network byte order). */
void droce_gid_from_ipv4(uint32_t ip4, uint8_t gid[16]);

/**
 * The IPv4 address (network byte order) in an IPv4-mapped GID.
 *
 * @return
 *   0, or -EINVAL when @p gid is not ::ffff:a.b.c.d.
 */
int droce_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip4);

/* ---- protection domains and memory regions ------------------------------- */

/** Allocate a protection domain; NULL with rte_errno ENOMEM. */
struct droce_pd *droce_alloc_pd(struct droce_rc_device *dev);

/**
 * Free a protection domain.
 *
 * @return
 *   0, or -EBUSY while MRs or QPs use it.
 */
int droce_dealloc_pd(struct droce_pd *pd);

/** Memory access rights (ibv_access_flags). */
enum droce_access_flags {
	DROCE_ACCESS_LOCAL_WRITE = 1,
	DROCE_ACCESS_REMOTE_WRITE = 1 << 1,
	DROCE_ACCESS_REMOTE_READ = 1 << 2,
	DROCE_ACCESS_REMOTE_ATOMIC = 1 << 3,
	DROCE_ACCESS_ZERO_BASED = 1 << 5,
};

/** A registered memory region (ibv_mr). */
struct droce_mr {
	struct droce_rc_device *dev;
	struct droce_pd *pd;
	void *addr;       /**< where the CPU reaches the memory */
	size_t length;
	uint64_t iova;    /**< the address work requests and peers name */
	uint32_t lkey;
	uint32_t rkey;
	int access;       /**< enum droce_access_flags */
};

/**
 * Register @p length bytes of host memory at @p addr, named by their own
 * virtual addresses (DROCE_ACCESS_ZERO_BASED: by offsets from 0).
 *
 * @return
 *   The region, or NULL with rte_errno: EINVAL for a NULL address, a
 *   length of 0 or over the device's max_mr_size, unknown access bits, or
 *   remote write or atomic without local write (as ibverbs); ENOMEM when
 *   the device holds max_mr regions.
 */
struct droce_mr *droce_reg_mr(struct droce_pd *pd, void *addr, size_t length,
			      int access);

/**
 * Register memory that work requests and peers name by @p iova (as
 * ibv_reg_mr_iova). Same errors as droce_reg_mr().
 */
struct droce_mr *droce_reg_mr_iova(struct droce_pd *pd, void *addr, size_t length,
				   uint64_t iova, int access);

/**
 * Register @p length bytes at offset @p offset of gpudev memory @p buf,
 * reached through its CPU mapping and named by its GPU addresses.
 *
 * @return
 *   The region, or NULL with rte_errno: ENOTSUP when the buffer has no
 *   CPU mapping, ERANGE when the range is not inside it, else as
 *   droce_reg_mr().
 */
struct droce_mr *droce_reg_mr_gpu(struct droce_pd *pd, const struct droce_gpu_buf *buf,
				  size_t offset, size_t length, int access);

/**
 * Deregister a memory region. Returns once no lcore of the stack can be
 * reading or writing the region (it waits for their rounds in progress,
 * droce_stack_quiesce()) and no packet sent from it (zero copy, see
 * droce_rc_set_zero_copy()) waits in the port to be read: its memory may
 * be freed then. From the call on its keys no longer work: a work request
 * that must still send from it (its first packets, or a retransmission)
 * fails with a local protection error, logged. The QP sends nothing past
 * it, the older work requests complete as their answers come (as rxe's
 * completer long had it; recent kernels flush them), then it
 * completes and the QP goes to ERR.
 *
 * @return
 *   0 when the memory may be freed.
 *   -EBUSY (logged the first time for a region) when mbufs sent from the
 *   region are still held by the port's driver: after a second of asking
 *   every owner lcore to have them freed, or at once (having asked) when
 *   called on an lcore, whose round must go on. The keys no longer work;
 *   the memory must stay until a later call returns 0.
 */
int droce_dereg_mr(struct droce_mr *mr);

/* ---- completion queues --------------------------------------------------- */

/** Work completion status (ibv_wc_status). */
enum droce_wc_status {
	DROCE_WC_SUCCESS,
	DROCE_WC_LOC_LEN_ERR,
	DROCE_WC_LOC_QP_OP_ERR,
	DROCE_WC_LOC_EEC_OP_ERR,
	DROCE_WC_LOC_PROT_ERR,
	DROCE_WC_WR_FLUSH_ERR,
	DROCE_WC_MW_BIND_ERR,
	DROCE_WC_BAD_RESP_ERR,
	DROCE_WC_LOC_ACCESS_ERR,
	DROCE_WC_REM_INV_REQ_ERR,
	DROCE_WC_REM_ACCESS_ERR,
	DROCE_WC_REM_OP_ERR,
	DROCE_WC_RETRY_EXC_ERR,
	DROCE_WC_RNR_RETRY_EXC_ERR,
	DROCE_WC_LOC_RDD_VIOL_ERR,
	DROCE_WC_REM_INV_RD_REQ_ERR,
	DROCE_WC_REM_ABORT_ERR,
	DROCE_WC_INV_EECN_ERR,
	DROCE_WC_INV_EEC_STATE_ERR,
	DROCE_WC_FATAL_ERR,
	DROCE_WC_RESP_TIMEOUT_ERR,
	DROCE_WC_GENERAL_ERR,
};

/** Name of a status, as ibv_wc_status_str() gives it. */
const char *droce_wc_status_str(enum droce_wc_status status);

/** What a work completion completed (ibv_wc_opcode). */
enum droce_wc_opcode {
	DROCE_WC_SEND,
	DROCE_WC_RDMA_WRITE,
	DROCE_WC_RDMA_READ,
	DROCE_WC_COMP_SWAP,
	DROCE_WC_FETCH_ADD,
	DROCE_WC_RECV = 1 << 7,
	DROCE_WC_RECV_RDMA_WITH_IMM,
};

/** Work completion flags (ibv_wc_flags). */
enum droce_wc_flags {
	DROCE_WC_WITH_IMM = 1 << 1,
};

/** A work completion (ibv_wc). */
struct droce_wc {
	uint64_t wr_id;
	enum droce_wc_status status;
	enum droce_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;   /**< network byte order, as ibverbs */
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
};

/**
 * Create a completion queue of at least @p cqe entries.
 *
 * @return
 *   The CQ, or NULL with rte_errno: EINVAL for 0 or more than max_cqe
 *   entries, ENOMEM.
 */
struct droce_cq *droce_create_cq(struct droce_rc_device *dev, int cqe);

/**
 * Destroy a completion queue.
 *
 * @return
 *   0, or -EBUSY while a QP uses it.
 */
int droce_destroy_cq(struct droce_cq *cq);

/**
 * Take up to @p num_entries completions, oldest first.
 *
 * @return
 *   How many were taken (0: none), or -EINVAL for a negative count.
 */
int droce_poll_cq(struct droce_cq *cq, int num_entries, struct droce_wc *wc);

/**
 * An eventfd that becomes readable when a completion is added after
 * droce_req_notify_cq() armed the CQ (the completion channel of ibverbs,
 * one per CQ). Read it (8 bytes) to clear it; it stays the CQ's.
 */
int droce_cq_event_fd(const struct droce_cq *cq);

/**
 * Arm the CQ: the next completion added signals its eventfd once. As
 * with ibverbs, poll again after arming: a completion added before the
 * call does not signal.
 *
 * @return
 *   0.
 */
int droce_req_notify_cq(struct droce_cq *cq, int solicited_only);

/**
 * Signal an armed CQ by calling @p fn (@p arg) instead of writing its
 * eventfd (NULL @p fn: the eventfd again). @p fn runs on the lcore that
 * adds the completion, the owner of the CQ's QPs (droce_qp_owner()), in
 * its round: for a poller on that same lcore, which then learns of new
 * completions without a system call. That poller arms the CQ
 * (droce_req_notify_cq()) on that lcore too: arming and adding are then
 * ordered by the lcore's program, with no fence.
 *
 * So the CQ's QPs share one owner, and are moved to ERR (or posted to in
 * ERR, which flushes them) on that lcore: a flush adds its completions,
 * and calls @p fn, on the thread that causes it. With
 * DROCE_RC_OWNERS_WORKERS a QP's number picks its owner:
 * droce_create_qp() gives a QP on such a CQ a number of its other QPs'
 * owner. This call fails on a CQ that QPs of two owners have used since
 * it last had none. droce_modify_qp() to ERR, droce_post_send() and
 * droce_post_recv() in ERR fail on any other thread than the owner's
 * lcore (a worker owner's once it has run a round). lib/cm moves a
 * connection's QP to ERR on the control lcore (a DREQ, a disconnect): a
 * QP it manages gets a CQ with a callback only if the control lcore owns
 * it.
 *
 * Set it while no completion can be added (before the QP moves on from
 * RESET, or once it is in ERR and drained). @p fn runs under the lock of
 * the QP whose completion it signals: it may poll, post to a QP in RTS
 * and move another QP to ERR, but must not modify or destroy that QP, nor
 * post sends or receives to it in ERR (the flush takes the lock). Best:
 * note the work and return, as lib/rpc's callbacks do.
 *
 * @return
 *   0, or -EINVAL (logged) when QPs of two owners have used the CQ since
 *   it last had none.
 */
int droce_cq_set_notify(struct droce_cq *cq, void (*fn)(void *arg), void *arg);

/* ---- queue pairs --------------------------------------------------------- */

/** Queue pair types (ibv_qp_type). */
enum droce_qp_type {
	DROCE_QPT_RC = 2,
	DROCE_QPT_UC,
	DROCE_QPT_UD,
};

/** Queue pair states (ibv_qp_state). */
enum droce_qp_state {
	DROCE_QPS_RESET,
	DROCE_QPS_INIT,
	DROCE_QPS_RTR,
	DROCE_QPS_RTS,
	DROCE_QPS_SQD,
	DROCE_QPS_SQE,
	DROCE_QPS_ERR,
};

/** Name of a state ("RTS"). */
const char *droce_qp_state_str(enum droce_qp_state state);

/** Path MTU (ibv_mtu). */
enum droce_mtu {
	DROCE_MTU_256 = 1,
	DROCE_MTU_512,
	DROCE_MTU_1024,
	DROCE_MTU_2048,
	DROCE_MTU_4096,
};

/** Bytes of a path MTU; 0 for a value that is none. */
uint32_t droce_mtu_to_bytes(enum droce_mtu mtu);

/** Sizes of a QP's queues (ibv_qp_cap). */
struct droce_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/** What a QP is made with (ibv_qp_init_attr). */
struct droce_qp_init_attr {
	void *qp_context;
	struct droce_cq *send_cq;
	struct droce_cq *recv_cq;
	struct droce_qp_cap cap;
	enum droce_qp_type qp_type;
	int sq_sig_all;          /**< every send completes with a CQE */
};

/**
 * The path to the peer (ibv_ah_attr with a GRH, as RoCEv2 has): its GID,
 * which for droce is an IPv4-mapped address, the IP header's TTL and TOS,
 * and the UDP source port (0: derived from the QP numbers, as the kernel
 * does for RoCE NICs).
 */
struct droce_ah_attr {
	uint8_t dgid[16];
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint16_t udp_sport;
};

/** Which fields of struct droce_qp_attr a modify sets (ibv_qp_attr_mask). */
enum droce_qp_attr_mask {
	DROCE_QP_STATE = 1 << 0,
	DROCE_QP_CUR_STATE = 1 << 1,
	DROCE_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	DROCE_QP_ACCESS_FLAGS = 1 << 3,
	DROCE_QP_PKEY_INDEX = 1 << 4,
	DROCE_QP_PORT = 1 << 5,
	DROCE_QP_QKEY = 1 << 6,
	DROCE_QP_AV = 1 << 7,
	DROCE_QP_PATH_MTU = 1 << 8,
	DROCE_QP_TIMEOUT = 1 << 9,
	DROCE_QP_RETRY_CNT = 1 << 10,
	DROCE_QP_RNR_RETRY = 1 << 11,
	DROCE_QP_RQ_PSN = 1 << 12,
	DROCE_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	DROCE_QP_ALT_PATH = 1 << 14,
	DROCE_QP_MIN_RNR_TIMER = 1 << 15,
	DROCE_QP_SQ_PSN = 1 << 16,
	DROCE_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	DROCE_QP_PATH_MIG_STATE = 1 << 18,
	DROCE_QP_CAP = 1 << 19,
	DROCE_QP_DEST_QPN = 1 << 20,
};

/** A QP's attributes (ibv_qp_attr), those droce has. */
struct droce_qp_attr {
	enum droce_qp_state qp_state;
	enum droce_qp_state cur_qp_state;
	enum droce_mtu path_mtu;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	int qp_access_flags;
	struct droce_qp_cap cap;
	struct droce_ah_attr ah_attr;
	uint16_t pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;   /**< 5-bit RNR timer code the responder sends */
	uint8_t port_num;        /**< 1, the device's one port */
	uint8_t timeout;         /**< local ACK timeout 4.096 us * 2^timeout; 0: none */
	uint8_t retry_cnt;       /**< 0..7, 7 = retry for ever */
	uint8_t rnr_retry;       /**< 0..7, 7 = retry for ever */
};

/**
 * Create a queue pair in state RESET.
 *
 * @return
 *   The QP, or NULL with rte_errno: EINVAL for a missing CQ, a CQ of
 *   another device, a send and a receive CQ with callbacks whose QPs two
 *   owners run (droce_cq_set_notify()), queue sizes of 0 or over the
 *   device's limits, a type droce has not; ENOMEM when the device holds
 *   max_qp QPs, or no number is left for the owner a CQ with a callback
 *   keeps its QPs on.
 */
struct droce_qp *droce_create_qp(struct droce_pd *pd, struct droce_qp_init_attr *attr);

/** The QP's number (ibv_qp.qp_num). */
uint32_t droce_qp_num(const struct droce_qp *qp);

/** Who runs @p qp: -1 for the control lcore, else the worker's index. */
int droce_qp_owner(const struct droce_qp *qp);

/** The QP's state as last set (ibv_qp.state). */
enum droce_qp_state droce_qp_state(const struct droce_qp *qp);

/**
 * Change a QP's attributes and state, as ibv_modify_qp: the transition
 * from the current state to attr->qp_state (when DROCE_QP_STATE is in
 * @p attr_mask) must be one ibverbs allows for the QP's type, with every
 * attribute it requires in @p attr_mask and none it does not allow, each
 * in its range.
 *
 * @return
 *   0, or -EINVAL (logged: the transition, and the attribute missing,
 *   not allowed or out of range; to ERR off the owner of a QP whose CQ
 *   has a callback), -ENOTSUP for what droce has not (alternate paths,
 *   path migration), and nothing changed.
 */
int droce_modify_qp(struct droce_qp *qp, struct droce_qp_attr *attr, int attr_mask);

/**
 * The QP's current attributes (all of them, whatever @p attr_mask) and
 * what it was made with.
 *
 * @return
 *   0.
 */
int droce_query_qp(struct droce_qp *qp, struct droce_qp_attr *attr, int attr_mask,
		   struct droce_qp_init_attr *init_attr);

/**
 * Destroy a QP. Outstanding work requests are dropped without
 * completions.
 *
 * @return
 *   0.
 */
int droce_destroy_qp(struct droce_qp *qp);

/* ---- work requests ------------------------------------------------------- */

/** A scatter/gather entry (ibv_sge): @p length bytes at @p addr, an
 * address in the region of @p lkey.
 */
struct droce_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/** Send work request opcodes (ibv_wr_opcode). */
enum droce_wr_opcode {
	DROCE_WR_RDMA_WRITE,
	DROCE_WR_RDMA_WRITE_WITH_IMM,
	DROCE_WR_SEND,
	DROCE_WR_SEND_WITH_IMM,
	DROCE_WR_RDMA_READ,
	DROCE_WR_ATOMIC_CMP_AND_SWP,
	DROCE_WR_ATOMIC_FETCH_AND_ADD,
};

/** Send flags (ibv_send_flags). */
enum droce_send_flags {
	DROCE_SEND_FENCE = 1 << 0,
	DROCE_SEND_SIGNALED = 1 << 1,
	DROCE_SEND_SOLICITED = 1 << 2,
	DROCE_SEND_INLINE = 1 << 3,
};

/** A send work request (ibv_send_wr). */
struct droce_send_wr {
	uint64_t wr_id;
	struct droce_send_wr *next;
	struct droce_sge *sg_list;
	int num_sge;
	enum droce_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm_data;   /**< network byte order, as ibverbs */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
	} wr;
};

/** A receive work request (ibv_recv_wr). */
struct droce_recv_wr {
	uint64_t wr_id;
	struct droce_recv_wr *next;
	struct droce_sge *sg_list;
	int num_sge;
};

/**
 * Queue send work requests, in list order. Each is checked before it is
 * queued: the QP in RTS (or, for no more than queuing, SQD), an opcode
 * its type has, num_sge within max_send_sge, each SGE inside a region of
 * the QP's PD with the rights the opcode needs (local write for a READ's
 * or an atomic's target), a total of at most max_msg_size, inline data
 * within max_inline_data, an 8-byte atomic target aligned to 8, and room
 * in the send queue.
 *
 * @return
 *   0, or a negative errno with @p bad_wr at the first request not queued
 *   (it and those after it are not): -EINVAL (logged: which field; in
 *   ERR, off the owner of a QP whose CQ has a callback), -ENOMEM when the
 *   send queue is full.
 */
int droce_post_send(struct droce_qp *qp, struct droce_send_wr *wr,
		    struct droce_send_wr **bad_wr);

/**
 * Queue receive work requests: the QP in any state but RESET (ibverbs
 * allows posting from INIT on), num_sge within max_recv_sge, each SGE in
 * a region of the QP's PD with local write.
 *
 * @return
 *   0, or a negative errno with @p bad_wr at the first request not queued
 *   (-EINVAL, logged, also in ERR off the owner of a QP whose CQ has a
 *   callback).
 */
int droce_post_recv(struct droce_qp *qp, struct droce_recv_wr *wr,
		    struct droce_recv_wr **bad_wr);

/* ---- CQ reactor ---------------------------------------------------------- */

/*
 * A completion-queue reactor in the manner of a libfabric CQ reactor: it
 * turns the completions of a send or a receive socket into what the
 * application wants to hear (the keys of finished sends, the bytes of
 * received messages), keeps the sockets' buffers going round, and leaves a
 * drained CQ armed so that its eventfd wakes a caller that sleeps on it.
 *
 * A socket is a QP's send or receive side together with that side's CQ
 * and a pool of registered buffers. The socket's CQ must carry that QP's
 * completions of that side only, and a QP has at most one socket of each
 * side: a QP whose send and receive CQ are one CQ is refused, and
 * completions the socket does not know (another QP's, another socket's)
 * are reported as errors.
 *
 * Threads: droce_rc_send_socket_send() and droce_rc_send_socket_send_zc()
 * may be called from any thread; the *_cq_event calls of one socket from
 * one thread at a time, which is where the callbacks run.
 *
 * Teardown: move the QP to ERR (or let every send complete), destroy its
 * sockets, then the QP, then the reactor.
 */

/** Completions the reactor reads from a CQ per call, at most. */
#define DROCE_CQ_REACTOR_MAX_EVENTS 32

/** A CQ reactor (the callbacks and counters shared by its sockets). */
struct droce_cq_reactor;
/** A QP's send side with its send CQ and, buffered, a pool of send buffers. */
struct droce_rc_send_socket;
/** A QP's receive side with its receive CQ and a pool of posted buffers. */
struct droce_rc_recv_socket;

/**
 * Called for each message a receive socket took in, on the thread that
 * called droce_cq_reactor_on_recv_cq_event().
 *
 * @param arg
 *   The reactor's @p arg.
 * @param data
 *   The message's bytes, in the socket's buffer; valid until the callback
 *   returns (the buffer is posted again after it). NULL for a WRITE with
 *   immediate, whose bytes went where the peer wrote them.
 * @param len
 *   Bytes at @p data (0 for a WRITE with immediate).
 * @param wc
 *   The completion: wc->qp_num names the socket's QP, wc->src_qp the
 *   peer's, wc->wc_flags & DROCE_WC_WITH_IMM says whether wc->imm_data
 *   (network byte order) holds, wc->opcode is DROCE_WC_RECV or
 *   DROCE_WC_RECV_RDMA_WITH_IMM, wc->byte_len the bytes the peer sent.
 */
typedef void (*droce_on_data_cb)(void *arg, const void *data, uint32_t len,
				 const struct droce_wc *wc);

/**
 * Called for each completion in error, after it was logged: one with an
 * error status, or one the socket does not know or cannot take.
 *
 * @param arg
 *   The @p arg given to droce_cq_reactor_set_on_error().
 * @param wc
 *   The completion. For a send its wr_id is the caller's key; for a
 *   receive it is the index of the socket's buffer; for a completion the
 *   socket does not know (status may be success) it is as found.
 * @param send
 *   true for a send socket's completion, false for a receive socket's.
 */
typedef void (*droce_on_cq_error_cb)(void *arg, const struct droce_wc *wc, bool send);

/** Called for each send completed with success, with its key. */
typedef void (*droce_on_send_completed_cb)(void *arg, uint64_t key);

/** What a reactor has seen, over all its sockets. */
struct droce_cq_reactor_stats {
	uint64_t sends_completed;  /**< send completions with success */
	uint64_t send_errors;      /**< send completions in error (see on_error) */
	uint64_t messages;         /**< receive completions handed to on_data */
	uint64_t recv_errors;      /**< receive completions in error (see on_error) */
	uint64_t repost_failures;  /**< receive buffers that could not be posted again */
	uint64_t arms;             /**< times a drained CQ was armed */
	uint64_t self_wakes;       /**< full batches: the CQ's eventfd made readable */
};

/**
 * Create a reactor for sockets on @p dev.
 *
 * @param dev
 *   The device whose QPs the sockets use.
 * @param on_data
 *   Called for each message received (see droce_on_data_cb); required.
 * @param arg
 *   Passed to @p on_data.
 * @return
 *   The reactor, or NULL with rte_errno: EINVAL for a NULL @p dev or
 *   @p on_data, ENOMEM.
 */
struct droce_cq_reactor *droce_cq_reactor_create(struct droce_rc_device *dev,
						 droce_on_data_cb on_data, void *arg);

/**
 * Have @p on_error called for each error completion (NULL: none). Error
 * completions are logged and counted whether or not there is one.
 *
 * @return
 *   0, or -EINVAL for a NULL reactor.
 */
int droce_cq_reactor_set_on_error(struct droce_cq_reactor *reactor,
				  droce_on_cq_error_cb on_error, void *arg);

/** The reactor's counters (a snapshot). */
void droce_cq_reactor_query_stats(const struct droce_cq_reactor *reactor,
				  struct droce_cq_reactor_stats *stats);

/**
 * Destroy a reactor (NULL: nothing).
 *
 * @return
 *   0, or -EBUSY (logged) while sockets of it exist.
 */
int droce_cq_reactor_destroy(struct droce_cq_reactor *reactor);

/** How a send socket sends. */
enum droce_rc_send_kind {
	/** The caller's bytes are copied into a buffer of the socket's pool. */
	DROCE_RC_SEND_BUFFERED,
	/** The caller's registered memory is sent from where it is. */
	DROCE_RC_SEND_ZERO_COPY,
};

/** What a send socket is made with. */
struct droce_rc_send_socket_attr {
	enum droce_rc_send_kind kind;
	/** Buffered: buffers in the pool, 1..the QP's max_send_wr. Zero
	 * copy: 0 (the QP's max_send_wr sends may be in flight).
	 */
	uint32_t nb_buffers;
	/** Buffered: bytes per buffer, 1..the device's max_msg_size; the
	 * most one send may carry. Zero copy: 0.
	 */
	uint32_t buffer_size;
	/** Called for each send completed with success; may be NULL. */
	droce_on_send_completed_cb on_send_completed;
	void *arg;                 /**< passed to on_send_completed */
};

/**
 * Make a send socket of @p qp's send side. A buffered socket allocates
 * and registers its pool in the QP's PD. The QP may be in any state;
 * sends need RTS.
 *
 * @return
 *   The socket, or NULL with rte_errno: EINVAL (logged: which attribute
 *   and what is allowed) for a NULL argument, a QP that is not RC or
 *   is of another device, a QP whose send and receive CQ are one, sizes
 *   out of range, a send CQ with fewer entries than the socket may have
 *   sends in flight (an overrun would lose their buffers); ENOMEM.
 */
struct droce_rc_send_socket *
droce_rc_send_socket_create(struct droce_cq_reactor *reactor, struct droce_qp *qp,
			    const struct droce_rc_send_socket_attr *attr);

/**
 * Destroy a send socket (NULL: nothing). Sends still in flight hold
 * their buffers: with the QP in ERR their completions (flushed) are
 * taken from the CQ here, without callbacks; otherwise the call refuses.
 *
 * @return
 *   0, or -EBUSY (logged: how many sends are in flight) and nothing done.
 */
int droce_rc_send_socket_destroy(struct droce_rc_send_socket *sock);

/**
 * Send @p len bytes at @p data as one SEND, copied first into a buffer
 * of the socket's pool, so that @p data may be reused at once. The buffer
 * goes back to the pool when the send completes (with success or not).
 *
 * @param key
 *   Returned by droce_cq_reactor_on_send_cq_event() when the send has
 *   completed (the work request's wr_id, for the caller).
 * @return
 *   0, or -EAGAIN when every buffer of the pool is in flight (call the
 *   reactor, then try again), -EMSGSIZE when @p len is over the buffer
 *   size, -EINVAL for a NULL socket, a zero-copy socket or NULL @p data
 *   with a @p len, or the error of droce_post_send() (all but -EAGAIN
 *   logged).
 */
int droce_rc_send_socket_send(struct droce_rc_send_socket *sock, const void *data,
			      size_t len, uint64_t key);

/**
 * Send the bytes of @p n SGEs, in memory registered in the QP's PD, as
 * one SEND. The memory must stay as it is until the send's key comes
 * back (with success or in an error).
 *
 * @return
 *   0, or -EAGAIN when the QP's max_send_wr sends are in flight, -EINVAL
 *   for a NULL socket, a buffered socket, @p n negative or over the QP's
 *   max_send_sge, a NULL @p sge with an @p n, or the error of
 *   droce_post_send() (an SGE not in a region of the QP's PD, the QP not
 *   in RTS); all but -EAGAIN logged.
 */
int droce_rc_send_socket_send_zc(struct droce_rc_send_socket *sock,
				 const struct droce_sge *sge, int n, uint64_t key);

/** Sends the socket can take now: free pool buffers, or free send slots. */
uint32_t droce_rc_send_socket_available(const struct droce_rc_send_socket *sock);

/** The eventfd of the socket's send CQ (see droce_cq_event_fd()). */
int droce_rc_send_socket_event_fd(const struct droce_rc_send_socket *sock);

/**
 * Handle a send socket's CQ event (or just poll it): read up to a batch
 * (DROCE_CQ_REACTOR_MAX_EVENTS, or @p max_keys if fewer) of completions.
 * Each success gives its key, in @p keys in completion order, which for
 * an RC QP is the order of the sends; each completion, success or not,
 * gives its buffer back to a buffered socket's pool and frees its slot.
 * Then on_send_completed is called for each success. An error completion
 * is logged (status, key, QP), counted, handed to the reactor's on_error
 * and gives no key. Buffered and zero-copy sockets behave the same.
 *
 * When the batch does not fill, the CQ has been drained: the call arms it
 * (droce_req_notify_cq()) and polls once more, so that a completion that
 * came in between is not left without a wake-up. When the batch fills,
 * more may wait: the call makes the CQ's eventfd readable itself, so a
 * caller that sleeps on it comes straight back. Either way a caller may
 * sleep on the eventfd after any call; reading the eventfd is the
 * caller's business.
 *
 * @return
 *   The number of keys in @p keys (0..max_keys), or -EINVAL (logged) for
 *   a NULL reactor or socket, a socket of another reactor, NULL @p keys
 *   or @p max_keys < 1.
 */
int droce_cq_reactor_on_send_cq_event(struct droce_cq_reactor *reactor,
				      struct droce_rc_send_socket *sock,
				      uint64_t *keys, int max_keys);

/** What a receive socket is made with. */
struct droce_rc_recv_socket_attr {
	uint32_t nb_buffers;       /**< 1..the QP's max_recv_wr, all posted */
	uint32_t buffer_size;      /**< bytes per buffer: the longest message taken */
};

/**
 * Make a receive socket of @p qp's receive side: allocate its pool,
 * register it in the QP's PD with local write and post every buffer. The
 * QP must be in INIT or later (where receives may be posted).
 *
 * @return
 *   The socket, or NULL with rte_errno: EINVAL (logged) for a NULL
 *   argument, a QP that is not RC, is of another device or is in RESET,
 *   a QP whose send and receive CQ are one, sizes out of range (the
 *   receive queue must have room for every buffer, the receive CQ an
 *   entry for each); ENOMEM; or the error
 *   of droce_post_recv() when it took no buffer. Should it take some and
 *   then refuse (another thread posting to the QP), the socket goes on
 *   with fewer, the rest counted in repost_failures.
 */
struct droce_rc_recv_socket *
droce_rc_recv_socket_create(struct droce_cq_reactor *reactor, struct droce_qp *qp,
			    const struct droce_rc_recv_socket_attr *attr);

/**
 * Destroy a receive socket (NULL: nothing). Posted buffers belong to the
 * QP until they complete: with the QP in ERR they have been flushed and
 * their completions are taken from the CQ here, without callbacks;
 * otherwise, with buffers posted, the call refuses.
 *
 * @return
 *   0, or -EBUSY (logged: how many buffers are posted) and nothing done.
 */
int droce_rc_recv_socket_destroy(struct droce_rc_recv_socket *sock);

/** Buffers of the socket posted now. */
uint32_t droce_rc_recv_socket_posted(const struct droce_rc_recv_socket *sock);

/** The eventfd of the socket's receive CQ (see droce_cq_event_fd()). */
int droce_rc_recv_socket_event_fd(const struct droce_rc_recv_socket *sock);

/**
 * Handle a receive socket's CQ event (or just poll it): read up to a
 * batch (DROCE_CQ_REACTOR_MAX_EVENTS) of completions, call the reactor's
 * on_data for each success, in order, then post those buffers again. An
 * error completion is logged (status, buffer, QP), counted and handed to
 * on_error; its buffer is not posted again, as a QP that completes a
 * receive in error is in ERR, where a post would only be flushed. Arming
 * and the full batch are as for droce_cq_reactor_on_send_cq_event().
 *
 * @return
 *   The number of messages handed to on_data (0..the batch), or -EINVAL
 *   (logged) for a NULL reactor or socket or a socket of another reactor.
 */
int droce_cq_reactor_on_recv_cq_event(struct droce_cq_reactor *reactor,
				      struct droce_rc_recv_socket *sock);

#ifdef __cplusplus
}
#endif

#endif /* DROCE_RC_H */
