/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_GPU_H
#define DROCE_GPU_H

/**
 * @file
 * droce gpu: GPU memory through gpudev, and the placement engine that
 * puts received payload there.
 *
 * Placement has two modes behind one interface:
 * - copy: the worker writes the payload through the CPU mapping of the
 *   GPU memory (the memory itself on the host driver, a GDRCopy mapping
 *   on CUDA), optionally checking the ICRC in the same pass;
 * - gather: the worker appends (source, destination offset, length)
 *   entries to an rte_gpu_comm_list item; an engine (a persistent CUDA
 *   kernel, or a CPU reference on the host driver) moves the bytes and
 *   marks the item DONE. The mbufs are freed only then.
 * Either way a batch of entries ends with droce_placer_submit(), which
 * returns a ticket; the batch's bytes are in GPU memory once
 * droce_placer_completed() reaches that ticket.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Find a gpudev device.
 *
 * @param spec
 *   "host" (droce's host device), "cuda:N" (CUDA device N), or "auto"
 *   (cuda:0 if there is one, else host).
 * @param dev_id
 *   Receives the device id.
 * @param err
 *   Receives a message listing the devices there are, on failure.
 * @param errlen
 *   Size of @p err.
 * @return
 *   0, -EINVAL for a malformed spec, -ENODEV when there is no such device.
 */
int droce_gpu_find(const char *spec, int16_t *dev_id, char *err, size_t errlen);

/** GPU memory, and where the CPU sees it. */
struct droce_gpu_buf {
	int16_t dev_id;
	void *gpu;       /**< GPU address */
	void *cpu;       /**< CPU mapping, NULL when the device has none */
	size_t size;
};

/**
 * Allocate GPU memory and map it for the CPU where the device can.
 *
 * @return
 *   0; -ENOMEM when the device has not that much memory left (the message
 *   says how much was asked), -EINVAL for a zero size or an alignment that
 *   is not a power of two.
 */
int droce_gpu_buf_alloc(int16_t dev_id, size_t size, size_t align,
			struct droce_gpu_buf *buf, char *err, size_t errlen);

/** Unmap and free; a zeroed buffer is allowed. */
void droce_gpu_buf_free(struct droce_gpu_buf *buf);

/**
 * Check that @p pages pages of @p page_size bytes fit in @p buf.
 *
 * @return
 *   0, or -ENOSPC with a message giving both sizes.
 */
int droce_gpu_buf_fits(const struct droce_gpu_buf *buf, size_t page_size,
		       unsigned int pages, char *err, size_t errlen);

/**
 * Register the memory of a mempool with the device, so that the GPU can
 * read mbuf payload (gather mode).
 */
int droce_gpu_mempool_register(int16_t dev_id, struct rte_mempool *mp,
			       char *err, size_t errlen);

/** Undo droce_gpu_mempool_register(). */
int droce_gpu_mempool_unregister(int16_t dev_id, struct rte_mempool *mp);

/** Placement modes. */
enum droce_place_mode {
	DROCE_PLACE_AUTO = 0, /**< copy where a CPU mapping exists, else gather */
	DROCE_PLACE_COPY,
	DROCE_PLACE_GATHER,
};

/** "copy", "gather", "auto". */
const char *droce_place_mode_name(enum droce_place_mode mode);

/** Parse "copy", "gather" or "auto"; -EINVAL otherwise. */
int droce_place_mode_parse(const char *s, enum droce_place_mode *mode);

/** How copy placement writes payloads of 256 bytes and more. */
enum droce_copy_stores {
	/** Non-temporal stores: no line is read first or kept in the cache;
	 *  for memory the CPU does not read soon (a GPU's, a frame taken
	 *  later), and packets that come from memory (no DDIO). The writes
	 *  are fenced before a frame is announced.
	 */
	DROCE_COPY_STREAMING = 0,
	/** Ordinary stores, each stream's next destination prefetched into
	 *  L2: faster while the packets are still in the cache (a NIC that
	 *  writes into L3) and few streams write at once.
	 */
	DROCE_COPY_CACHED,
};

/** How a placer is made. */
struct droce_placer_conf {
	const struct droce_gpu_buf *buf; /**< destination */
	enum droce_place_mode mode;
	uint32_t nb_items;      /**< gather: comm list items (0: 64) */
	uint32_t item_entries;  /**< gather: entries per item (0: 256, at most 1024) */
	/** Gather on a device without a GPU engine (host): false lets the
	 *  caller run the CPU engine with droce_placer_engine_poll() (tests);
	 *  true runs it on a thread of its own.
	 */
	bool engine_thread;
	/** Copy mode: check the ICRC in the copy's own pass, which reads the
	 *  payload once instead of twice. The price: a packet that fails has
	 *  already written its bytes (inside its destination range). Off, the
	 *  check comes first and a failing packet writes nothing.
	 */
	bool fused_icrc;
	/** Copy mode: a placed entry's mbuf goes back to the caller, who
	 *  frees it (in bulk, say, at the end of its burst, with
	 *  rte_pktmbuf_free_bulk(), cheaper than rte_pktmbuf_free() each).
	 *  droce_place() and droce_place_icrc() then return 1 for it.
	 *  Refused entries are freed as always; gather keeps its mbufs until
	 *  their batch is done, and returns 0.
	 */
	bool caller_frees;
	/** Copy mode: the stores of payloads of 256 bytes and more. */
	enum droce_copy_stores stores;
};

/** Counters of a placer; one writer, the worker. */
struct droce_placer_stats {
	uint64_t entries;       /**< entries placed */
	uint64_t bytes;         /**< their bytes */
	uint64_t submitted;     /**< batches submitted */
	uint64_t completed;     /**< batches completed */
	uint64_t out_of_range;  /**< entries refused: outside the buffer */
	uint64_t no_item;       /**< entries refused: all items busy */
	uint64_t icrc_failed;   /**< entries whose ICRC did not match */
	uint64_t device_failed; /**< batches the device failed */
};

struct droce_placer;

/**
 * Create a placer on @p conf->buf.
 *
 * @return
 *   The placer, or NULL with a message: copy asked on memory the CPU cannot
 *   map, gather on a device without mem_register, out of memory.
 */
struct droce_placer *droce_placer_create(const struct droce_placer_conf *conf,
					 char *err, size_t errlen);

/** Stop the engine, free what is left (mbufs included). */
void droce_placer_destroy(struct droce_placer *pl);

/** The mode in use (AUTO resolved). */
enum droce_place_mode droce_placer_mode(const struct droce_placer *pl);

/**
 * Place @p len bytes of @p m, from @p src_off, at @p dst_off of the buffer.
 * Takes @p m in every case (but one): copy frees it at once, gather once the
 * batch is DONE, and an error frees it too; a copy placer made with
 * caller_frees hands it back. Zero-length entries are allowed.
 *
 * Gather entries not yet completed are copied in parallel (a GPU's warps
 * take them in no set order): where two of them overlap, either may land
 * last. lib/rx writes a place again only for a later frame, whose batch
 * comes long after; a retransmission writes the same bytes.
 *
 * @return
 *   0; 1 when placed and @p m is the caller's again (caller_frees);
 *   -ERANGE when the destination leaves the buffer or the source the
 *   mbuf (nothing written); -ENOBUFS when every gather item is still busy;
 *   -EIO when the device failed. Each is counted.
 */
int droce_place(struct droce_placer *pl, struct rte_mbuf *m, uint32_t src_off,
		uint64_t dst_off, uint32_t len);

/**
 * As droce_place(), checking the RoCEv2 ICRC of the packet as well: before
 * anything is written, or in the same pass as the copy when the placer was
 * made with fused_icrc (copy mode).
 *
 * @param l3_off
 *   Offset of the IP header in @p m; the packet runs to its ICRC.
 * @return
 *   As droce_place(), and -EBADMSG when the ICRC does not match.
 */
int droce_place_icrc(struct droce_placer *pl, struct rte_mbuf *m,
		     uint32_t l3_off, uint32_t payload_off, uint64_t dst_off,
		     uint32_t len);

/**
 * Where a copy placer lets its caller copy small payloads itself. A call
 * per packet costs more than a 64-byte copy; lib/rx's fast path copies
 * such payloads into @p cpu with ordinary stores, as droce_place() would,
 * and counts them with droce_placer_count_direct().
 */
struct droce_place_direct {
	uint8_t *cpu;           /**< the buffer's CPU mapping */
	size_t size;            /**< its bytes */
	uint32_t max_len;       /**< the largest payload to copy so */
};

/**
 * The direct window of @p pl, for payloads up to @p d->max_len bytes.
 * The caller keeps droce_place()'s rules: the whole destination inside the
 * buffer, and nothing placed once the placer failed
 * (droce_placer_failed()). A batch's direct copies are ordered with the
 * rest by droce_placer_submit().
 *
 * @return
 *   0; -ENOTSUP when @p pl gathers (the device moves the bytes).
 */
int droce_placer_direct(const struct droce_placer *pl, struct droce_place_direct *d);

/** Count @p entries direct copies of @p bytes in all among the placed. */
void droce_placer_count_direct(struct droce_placer *pl, uint64_t entries,
			       uint64_t bytes);

/**
 * End the current batch: gather marks its item READY for the engine; copy
 * orders the writes (rte_gpu_wmb).
 *
 * @return
 *   The batch's ticket (counting from 1).
 */
uint64_t droce_placer_submit(struct droce_placer *pl);

/**
 * Collect finished batches, in order, and free their mbufs.
 *
 * @return
 *   The highest ticket up to which every batch is complete.
 */
uint64_t droce_placer_completed(struct droce_placer *pl);

/** True once the device failed a batch; no later batch completes. */
bool droce_placer_failed(const struct droce_placer *pl);

/**
 * CPU reference engine, one step: move the bytes of every READY item in
 * order and mark it DONE. For placers made with engine_thread = false.
 *
 * @return
 *   Items processed.
 */
unsigned int droce_placer_engine_poll(struct droce_placer *pl);

/** The placer's counters. */
void droce_placer_stats(const struct droce_placer *pl,
			struct droce_placer_stats *stats);

/* For GPU drivers: an engine that runs gather lists on the device. */

/** What a gather engine works on. */
struct droce_gather_job {
	int16_t dev_id;
	struct rte_gpu_comm_list *list; /**< nb_items items, in a ring */
	uint32_t nb_items;
	const uint64_t *dst_off;        /**< item i, entry j: [i * 1024 + j] */
	uint8_t *dst;                   /**< GPU address of the buffer */
	size_t dst_size;
	volatile uint32_t *quit;        /**< set to 1 to stop the engine */
};

/** A driver's gather engine. */
struct droce_gather_engine {
	const char *name_prefix;        /**< devices it serves, by name */
	/** Start working on @p job; returns a handle, or NULL with @p err. */
	void *(*start)(const struct droce_gather_job *job, char *err, size_t errlen);
	/** Stop (job->quit is already set) and release. */
	void (*stop)(void *handle);
};

/** Register a driver's engine (a static object). */
int droce_gather_engine_register(const struct droce_gather_engine *engine);

/** Log type of droce's gpu library. */
extern int droce_gpu_logtype;

#ifdef __cplusplus
}
#endif

#endif /* DROCE_GPU_H */
