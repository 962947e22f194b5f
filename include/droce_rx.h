/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RX_H
#define DROCE_RX_H

/**
 * @file
 * droce rx: sensor frames (Holoscan Sensor Bridge style RoCEv2 RDMA
 * writes) into GPU pages, behind the C form of the HSB receiver interface
 * (RoceReceiverInterfaceV2).
 *
 * One droce_rx serves a stack: it takes UDP port 4791 on the workers and
 * hands each packet to its stream by destination QP. A stream is one
 * receiver: start(), close(), blocking_monitor(), get_next_frame(),
 * frames_ready(), set_frame_ready(), the getters and receive_path_failed(),
 * with the interface's semantics:
 * - frames are returned in the order they are received;
 * - with queue_size frames waiting, the next one to complete discards the
 *   oldest waiting one, and `dropped` counts it;
 * - frames arrive only while blocking_monitor() runs; the frame-ready
 *   callback runs on its thread, is registered before it starts, and
 *   stays registered across starts;
 * - close() works from any thread, also while blocking_monitor() runs,
 *   and does nothing on a receiver never started;
 * - after a fatal event (port removed or reset, the placement device
 *   failed) get_next_frame() returns false at once, frames_ready() returns
 *   true, and nothing arrives until start() again.
 *
 * Every packet is checked before its bytes go anywhere: source IP, QP,
 * rkey, opcode, P_Key, ICRC (unless rx.icrc=off or fused) and that
 * VA..VA+len lies inside one page of the stream's buffer and covers a
 * page's metadata block whole or not at all. A refused packet costs a
 * counter, never a byte outside the buffer.
 *
 * The metadata block is decoded from the packet that covers it, wherever
 * that packet starts: the frame's last data packet (the device's
 * "embedded" layout) or a packet of its own.
 *
 * One worker owns a stream: the first to see a packet of it that passed
 * every check. A packet of the stream that comes in on another worker's
 * queue is checked there and handed to the owner through a ring; with a
 * reorder window (UC), packets after a PSN gap wait there for the gap to
 * fill, so that the stream still sees its packets in PSN order.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "droce_gpu.h"
#include "droce_hsb.h"
#include "droce_net.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most streams one droce_rx serves. */
#define DROCE_RX_MAX_STREAMS 4096
/** Any RX queue (droce_rx_params.queue). */
#define DROCE_RX_ANY_QUEUE UINT16_MAX

/** How a stream checks the ICRC (rx.icrc). */
enum droce_rx_icrc {
	DROCE_RX_ICRC_ON = 0,  /**< checked before a byte is written */
	DROCE_RX_ICRC_FUSED,   /**< checked in the copy's pass: one read of the
				 *  payload, but a corrupt packet's bytes land
				 *  in its (checked) range; its frame is flagged */
	DROCE_RX_ICRC_OFF,     /**< trust the link */
};

/** Arguments of start(). */
struct droce_rx_params {
	const char *device;     /**< ethdev name of the port, or NULL: @p port */
	uint16_t port;          /**< droce port index (when @p device is NULL) */
	uint16_t queue;         /**< RX queue of the stream, or DROCE_RX_ANY_QUEUE */
	const struct droce_gpu_buf *buf; /**< frame memory (cu_buffer, size) */
	size_t frame_size;      /**< bytes of frame data per frame */
	size_t page_size;       /**< bytes from one page to the next */
	unsigned int pages;     /**< pages the device cycles through, 1..4096 */
	size_t metadata_offset; /**< from the page start, 128-byte block */
	const char *peer_ip;    /**< the only address data is taken from */
	unsigned int queue_size;/**< frames held for the application, >= 1 */
	uint32_t qp;            /**< QP number; 0: droce picks one */
	uint32_t rkey;          /**< rkey; 0: droce picks one */
	uint16_t pkey;          /**< P_Key accepted; 0: 0xFFFF */
	enum droce_hsb_imm imm; /**< immediate format */
	enum droce_place_mode placement; /**< copy, gather or auto */
	enum droce_rx_icrc icrc;/**< ICRC check (default on) */
	enum droce_copy_stores copy_stores; /**< copy placement: streaming (default) or cached */
	uint32_t remote_qp;     /**< RC: the requester's QP, for ACKs */
	/** Device address of page 0, as the sensor was programmed
	 *  (external_frame_memory()); 0 as an HSB's receiver registers it.
	 *  The sensor writes page n at device_va + n x page_size.
	 */
	uint64_t device_va;
	/** UC: packets held back while a PSN gap may still fill (packets
	 *  that came in by another queue, or reordered on the way), at most;
	 *  a power of two up to DROCE_RX_REORDER_MAX. 0: a gap is a loss at
	 *  once.
	 */
	uint32_t reorder_window;
	/** How long a gap may wait to fill, in microseconds (with
	 *  @p reorder_window); 0: DROCE_RX_REORDER_TIMEOUT_US.
	 */
	uint32_t reorder_timeout_us;
};

/** Largest reorder window. */
#define DROCE_RX_REORDER_MAX 8192
/** Default wait for a PSN gap to fill. */
#define DROCE_RX_REORDER_TIMEOUT_US 20000

/** What get_next_frame() hands out (RoceReceiverFrameInfoV1 and more). */
struct droce_rx_frame_info {
	uint64_t frame_memory;     /**< GPU address of the frame's page */
	uint64_t metadata_memory;  /**< GPU address of its metadata block */
	uint32_t page;
	uint32_t immediate;
	uint32_t psn;              /**< from the immediate (HSB) or the BTH */
	struct droce_hsb_metadata metadata; /**< frame_number extended */
	uint64_t received_ns;      /**< CLOCK_REALTIME at the last packet */
	uint64_t received_tsc;     /**< TSC at the last packet */
	uint64_t packets;          /**< data packets placed */
	uint64_t bytes;            /**< their payload bytes */
	/** PSN gaps and refused packets. A gap across two frames' boundary
	 * is split: the later frame has the packets its data before its
	 * first packet seen makes (in the stream's largest payload), the
	 * earlier one the rest.
	 */
	uint64_t lost_packets;
	/** Never a clean frame: something was lost. Also set, with no lost
	 * packet counted, when the stream started while the sensor was
	 * mid-frame (its first packet seen is past the page's start).
	 */
	bool lossy;
	bool overwritten;          /**< a later frame wrote its page meanwhile */
	uint64_t dropped;          /**< frames discarded so far, when taken */
	uint64_t sequence;         /**< frames completed on this stream so far */
};

/** Why packets were refused, per stream or for the whole droce_rx. */
enum droce_rx_refusal {
	DROCE_RX_NOT_ROCE,       /**< not a parsable RoCEv2 packet */
	DROCE_RX_UNKNOWN_QP,     /**< no stream has that QP */
	DROCE_RX_NOT_STARTED,    /**< the stream is closed or failed */
	DROCE_RX_WRONG_PORT,     /**< the stream is on another port or queue */
	DROCE_RX_HANDOFF_FULL,   /**< came in on another worker's queue, and the
				  *  owner's hand-over ring was full */
	DROCE_RX_WRONG_PEER,     /**< source IP is not peer_ip */
	DROCE_RX_BAD_OPCODE,     /**< not an RDMA WRITE opcode */
	DROCE_RX_BAD_PKEY,
	DROCE_RX_BAD_RKEY,
	DROCE_RX_BAD_VA,         /**< outside one page of the buffer */
	DROCE_RX_PARTIAL_METADATA, /**< covers part of a page's metadata block */
	DROCE_RX_BAD_LENGTH,     /**< DMA length disagrees with the payload */
	DROCE_RX_BAD_ICRC,
	DROCE_RX_BAD_IMM_PAGE,   /**< page index of the immediate out of range */
	DROCE_RX_STALE_PSN,      /**< behind the expected PSN: duplicate or late */
	DROCE_RX_NO_MESSAGE,     /**< MIDDLE or LAST without a FIRST */
	DROCE_RX_PLACE_FAILED,   /**< no gather item free, device failed */
	DROCE_RX_REFUSAL_MAX
};

/** Name of a refusal ("bad_rkey"), or NULL. */
const char *droce_rx_refusal_name(enum droce_rx_refusal r);

/** Counters of a stream. */
struct droce_rx_stream_stats {
	uint64_t frames;          /**< completed */
	uint64_t frames_lossy;    /**< of those, flagged */
	uint64_t frames_dropped;  /**< discarded: queue full, no monitor, or
				   *  the placement engine too far behind */
	uint64_t packets;         /**< placed */
	uint64_t bytes;
	uint64_t lost_packets;
	uint64_t acks;            /**< RC: ACK and NAK packets sent */
	uint64_t handed_over;     /**< taken after coming in on another
				   *  worker's queue */
	uint64_t held;            /**< held back behind a PSN gap, taken later in
				   *  PSN order (or when the gap was given up) */
	uint64_t refused[DROCE_RX_REFUSAL_MAX];
};

struct droce_rx;
struct droce_rx_stream;

/**
 * Serve RoCEv2 on @p stack: takes UDP port 4791 on the workers. Call
 * before droce_stack_start().
 */
struct droce_rx *droce_rx_create(struct droce_stack *stack, char *err,
				 size_t errlen);

/** Close every stream and free; after droce_stack_stop(). */
void droce_rx_destroy(struct droce_rx *rx);

/** Packets that found no stream, by reason. */
void droce_rx_refusals(const struct droce_rx *rx,
		       uint64_t refused[DROCE_RX_REFUSAL_MAX]);

/** A new receiver (not started). */
struct droce_rx_stream *droce_rx_stream_new(struct droce_rx *rx);

/** Close and free a receiver. */
void droce_rx_stream_free(struct droce_rx_stream *st);

/**
 * Configure the receiver and start taking its packets.
 *
 * @return
 *   0; -EINVAL with a message for arguments out of range (peer_ip not an
 *   address, buffer too small for pages x page_size, metadata outside the
 *   page, ...); -ENODEV for an unknown device or port; -EEXIST for a QP
 *   already in use; -EBUSY when already started. A receiver whose receive
 *   path failed is closed first (its blocking_monitor() returns).
 */
int droce_rx_stream_start(struct droce_rx_stream *st,
			  const struct droce_rx_params *p, char *err,
			  size_t errlen);

/** End the run; blocking_monitor() returns. Any thread. */
void droce_rx_stream_close(struct droce_rx_stream *st);

/**
 * Run the receiver until close(): frames arrive only while this runs.
 *
 * @return
 *   0 after close(); -EINVAL when start() has not been called.
 */
int droce_rx_stream_blocking_monitor(struct droce_rx_stream *st);

/** True while blocking_monitor() runs (frames are being delivered). */
bool droce_rx_stream_monitoring(const struct droce_rx_stream *st);

/**
 * Take the next completed frame, waiting up to @p timeout_ms.
 *
 * @return
 *   True with @p info filled; false on timeout, at once after a fatal
 *   event, or (rte_errno = EINVAL) when start() has not been called.
 */
bool droce_rx_stream_get_next_frame(struct droce_rx_stream *st,
				    unsigned int timeout_ms,
				    struct droce_rx_frame_info *info);

/**
 * Whether a frame taken earlier is still what its page holds: false once
 * a later frame has written to the page (the device has no flow control).
 * Ask after reading the frame, to know the read saw that frame only.
 */
bool droce_rx_stream_frame_intact(struct droce_rx_stream *st,
				  const struct droce_rx_frame_info *info);

/** False when get_next_frame() would wait; true after a fatal event. */
bool droce_rx_stream_frames_ready(struct droce_rx_stream *st);

/**
 * Run @p cb (on the blocking_monitor() thread) once per frame that
 * becomes available. NULL stops it. Register before blocking_monitor()
 * starts; it stays across starts.
 */
void droce_rx_stream_set_frame_ready(struct droce_rx_stream *st,
				     void (*cb)(void *arg), void *arg);

/** True once a fatal event stopped the receive path. */
bool droce_rx_stream_receive_path_failed(const struct droce_rx_stream *st);

/** QP number the device must send to; 0 (rte_errno = EINVAL) before start(). */
uint32_t droce_rx_stream_qp_number(const struct droce_rx_stream *st);
/** rkey the device must present; 0 (rte_errno = EINVAL) before start(). */
uint32_t droce_rx_stream_rkey(const struct droce_rx_stream *st);
/**
 * Device view of the first page: droce_rx_params.device_va, 0 unless the
 * sensor was programmed otherwise (rte_errno = EINVAL before start()).
 */
uint64_t droce_rx_stream_external_frame_memory(const struct droce_rx_stream *st);
/** frame_size as start() got it. */
size_t droce_rx_stream_frame_size(const struct droce_rx_stream *st);
/** page_size as start() got it. */
size_t droce_rx_stream_page_size(const struct droce_rx_stream *st);
/** pages as start() got it. */
unsigned int droce_rx_stream_pages(const struct droce_rx_stream *st);

/** The stream's counters. */
void droce_rx_stream_stats(const struct droce_rx_stream *st,
			   struct droce_rx_stream_stats *stats);

/**
 * Mark every stream of @p port failed, as the port's removal does
 * (RTE_ETH_EVENT_INTR_RMV and _RESET lead here).
 */
void droce_rx_port_failed(struct droce_rx *rx, uint16_t port);

/** Log type of droce's rx library. */
extern int droce_rx_logtype;

#ifdef __cplusplus
}
#endif

#endif /* DROCE_RX_H */
