/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The placement engine. One worker owns a placer; nothing here locks.
 *
 * Gather keeps a ring of rte_gpu_comm_list items. The worker fills the
 * item at 'fill' (sources in pkt_list, destinations in a parallel array of
 * offsets), then marks it READY; the engine, in item order, moves the bytes
 * and marks it DONE (or ERROR); the worker recycles items from 'oldest' as
 * they finish, freeing their mbufs. Tickets are batch numbers, counted from
 * 1: batch t is complete once every item up to its last one is recycled.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_atomic.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include <rte_memcpy.h>
#include <rte_prefetch.h>

#include "droce_roce.h"
#include "gpu_private.h"

#define DEFAULT_ITEMS 64
/* Copies from this size on use streaming stores (copy_stream.c); a
 * smaller one is mostly partial lines, and a small frame may be read
 * while its lines are still in the cache.
 */
#define STREAM_COPY_MIN 256
#define DEFAULT_ITEM_ENTRIES 256

struct droce_placer {
	enum droce_place_mode mode;
	int16_t dev_id;
	uint8_t *cpu;                 /* copy: CPU mapping of the buffer */
	size_t size;
	bool fused_icrc;              /* copy: ICRC in the copy's pass */
	bool cached;                  /* copy: the mapping is host memory */
	bool caller_frees;            /* copy: placed mbufs go back */
	gpu_copy_lines_t *stream_lines; /* copy: streaming stores; NULL: none */
	struct droce_placer_stats stats;
	uint64_t batches;             /* batches submitted */
	uint64_t batches_done;        /* batches complete */
	bool failed;

	/* gather */
	struct rte_gpu_comm_list *list;
	uint32_t nb_items;
	uint32_t item_entries;
	uint64_t *dst_off;            /* registered: nb_items * PKTS_MAX */
	uint32_t fill;                /* item being filled */
	uint32_t fill_n;              /* its entries */
	uint32_t oldest;              /* oldest submitted, not yet recycled */
	uint32_t in_flight;           /* items submitted, not yet recycled */
	/* Batch whose last item is item i, 0 when it ends no batch. */
	uint64_t *batch_of_item;
	struct rte_gpu_comm_flag quit;
	struct droce_gather_job job;
	const struct droce_gather_engine *engine;
	void *engine_handle;
	uint32_t cpu_next;            /* CPU engine polled by the caller */
};

static const char *const mode_names[] = {
	[DROCE_PLACE_AUTO] = "auto",
	[DROCE_PLACE_COPY] = "copy",
	[DROCE_PLACE_GATHER] = "gather",
};

const char *
droce_place_mode_name(enum droce_place_mode mode)
{
	return (unsigned int)mode < RTE_DIM(mode_names) ? mode_names[mode] : "?";
}

int
droce_place_mode_parse(const char *s, enum droce_place_mode *mode)
{
	for (unsigned int i = 0; i < RTE_DIM(mode_names); i++) {
		if (strcmp(s, mode_names[i]) == 0) {
			*mode = (enum droce_place_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int
gather_setup(struct droce_placer *pl, const struct droce_placer_conf *conf,
	     char *err, size_t errlen)
{
	size_t off_bytes;
	int ret;

	pl->nb_items = conf->nb_items != 0 ? conf->nb_items : DEFAULT_ITEMS;
	pl->item_entries = conf->item_entries != 0 ? conf->item_entries
						   : DEFAULT_ITEM_ENTRIES;
	if (pl->item_entries > RTE_GPU_COMM_LIST_PKTS_MAX) {
		snprintf(err, errlen, "gather: %u entries per item; allowed: 1..%u",
			 pl->item_entries, RTE_GPU_COMM_LIST_PKTS_MAX);
		return -EINVAL;
	}
	pl->list = rte_gpu_comm_create_list(pl->dev_id, pl->nb_items);
	if (pl->list == NULL) {
		snprintf(err, errlen,
			 "gather: GPU device %d cannot share a list of %u items with the CPU (%s; it needs mem_register)",
			 pl->dev_id, pl->nb_items, rte_strerror(rte_errno));
		return -rte_errno;
	}
	off_bytes = sizeof(uint64_t) * pl->nb_items * RTE_GPU_COMM_LIST_PKTS_MAX;
	pl->dst_off = rte_zmalloc("droce_gather_dst", off_bytes, RTE_CACHE_LINE_SIZE);
	pl->batch_of_item = rte_zmalloc("droce_gather_batch",
					sizeof(uint64_t) * pl->nb_items, 0);
	if (pl->dst_off == NULL || pl->batch_of_item == NULL) {
		snprintf(err, errlen, "gather: out of memory");
		return -ENOMEM;
	}
	ret = rte_gpu_mem_register(pl->dev_id, off_bytes, pl->dst_off);
	if (ret == 0)
		ret = rte_gpu_comm_create_flag(pl->dev_id, &pl->quit,
					       RTE_GPU_COMM_FLAG_CPU);
	if (ret != 0) {
		snprintf(err, errlen, "gather: cannot register memory with GPU device %d: %s",
			 pl->dev_id, rte_strerror(rte_errno));
		return ret;
	}
	rte_gpu_comm_set_flag(&pl->quit, 0);

	pl->job = (struct droce_gather_job){
		.dev_id = pl->dev_id, .list = pl->list, .nb_items = pl->nb_items,
		.dst_off = pl->dst_off, .dst = conf->buf->gpu,
		.dst_size = conf->buf->size, .quit = pl->quit.ptr,
	};
	pl->engine = gpu_engine_for(pl->dev_id);
	if (pl->engine != NULL)
		pl->engine_handle = pl->engine->start(&pl->job, err, errlen);
	else if (conf->engine_thread)
		pl->engine_handle = gather_cpu_thread_start(&pl->job, err, errlen);
	else
		return 0; /* the caller polls the CPU engine */
	return pl->engine_handle != NULL ? 0 : -EIO;
}

struct droce_placer *
droce_placer_create(const struct droce_placer_conf *conf, char *err,
		    size_t errlen)
{
	struct droce_placer *pl;
	int ret = 0;

	pl = rte_zmalloc("droce_placer", sizeof(*pl), RTE_CACHE_LINE_SIZE);
	if (pl == NULL) {
		snprintf(err, errlen, "placer: out of memory");
		return NULL;
	}
	pl->dev_id = conf->buf->dev_id;
	pl->size = conf->buf->size;
	pl->cpu = conf->buf->cpu;
	pl->mode = conf->mode;
	pl->fused_icrc = conf->fused_icrc;
	pl->caller_frees = conf->caller_frees;
	/* Where the CPU's mapping is the memory itself, it is the host's,
	 * cacheable; a mapping of a device's memory (a BAR) is not, and a
	 * prefetch there would read across the bus for nothing.
	 */
	pl->cached = conf->buf->cpu != NULL && conf->buf->cpu == conf->buf->gpu;
	if (pl->mode == DROCE_PLACE_AUTO)
		pl->mode = pl->cpu != NULL ? DROCE_PLACE_COPY : DROCE_PLACE_GATHER;
	if (pl->mode == DROCE_PLACE_COPY && conf->stores == DROCE_COPY_STREAMING)
		pl->stream_lines = gpu_copy_lines_select();
	if (pl->mode == DROCE_PLACE_COPY && pl->cpu == NULL) {
		snprintf(err, errlen,
			 "copy placement needs a CPU mapping of the GPU buffer, and GPU device %d has none (on CUDA: GDRCopy, libgdrapi.so.2); allowed: rx.placement = gather or auto",
			 pl->dev_id);
		ret = -ENOTSUP;
	} else if (pl->mode == DROCE_PLACE_GATHER) {
		ret = gather_setup(pl, conf, err, errlen);
	}
	if (ret != 0) {
		droce_placer_destroy(pl);
		return NULL;
	}
	return pl;
}

static void
free_item_mbufs(struct rte_gpu_comm_list *item)
{
	for (uint32_t i = 0; i < item->num_pkts; i++)
		rte_pktmbuf_free(item->mbufs[i]);
}

void
droce_placer_destroy(struct droce_placer *pl)
{
	if (pl == NULL)
		return;
	if (pl->list != NULL) {
		if (pl->quit.ptr != NULL)
			rte_gpu_comm_set_flag(&pl->quit, 1);
		if (pl->engine_handle != NULL) {
			if (pl->engine != NULL)
				pl->engine->stop(pl->engine_handle);
			else
				gather_cpu_thread_stop(pl->engine_handle);
		}
		/* Whatever is still in the ring: its mbufs are ours to free
		 * (rte_gpu_comm_cleanup_list() only forgets them). The item
		 * being filled says how many only once it is ready (with
		 * none in it yet, the ring may be full and that item the
		 * oldest in flight).
		 */
		if (pl->fill_n != 0)
			pl->list[pl->fill].num_pkts = pl->fill_n;
		for (uint32_t i = 0; i < pl->nb_items; i++) {
			free_item_mbufs(&pl->list[i]);
			pl->list[i].num_pkts = 0;
		}
		if (pl->quit.ptr != NULL)
			rte_gpu_comm_destroy_flag(&pl->quit);
		if (pl->dst_off != NULL)
			rte_gpu_mem_unregister(pl->dev_id, pl->dst_off);
		rte_gpu_comm_destroy_list(pl->list, pl->nb_items);
	}
	rte_free(pl->dst_off);
	rte_free(pl->batch_of_item);
	rte_free(pl);
}

enum droce_place_mode
droce_placer_mode(const struct droce_placer *pl)
{
	return pl->mode;
}

bool
droce_placer_failed(const struct droce_placer *pl)
{
	return pl->failed;
}

void
droce_placer_stats(const struct droce_placer *pl, struct droce_placer_stats *s)
{
	*s = pl->stats;
}

static inline int
refuse(struct rte_mbuf *m, uint64_t *counter, int err)
{
	(*counter)++;
	rte_pktmbuf_free(m);
	return err;
}

static inline bool
in_range(const struct droce_placer *pl, const struct rte_mbuf *m,
	 uint32_t src_off, uint64_t dst_off, uint32_t len)
{
	return dst_off <= pl->size && len <= pl->size - dst_off &&
	       (uint64_t)src_off + len <= rte_pktmbuf_data_len(m);
}

/* Recycle finished items, oldest first; an ERROR item fails the placer. */
static void
recycle(struct droce_placer *pl)
{
	while (pl->in_flight != 0) {
		struct rte_gpu_comm_list *item = &pl->list[pl->oldest];
		enum rte_gpu_comm_list_status st;

		rte_gpu_comm_get_status(item, &st);
		if (st == RTE_GPU_COMM_LIST_READY)
			return;
		rte_smp_rmb(); /* the engine's writes before its DONE */
		if (st == RTE_GPU_COMM_LIST_ERROR && !pl->failed) {
			pl->failed = true;
			pl->stats.device_failed++;
			GPU_LOG(ERR, "GPU device %d failed a gather batch; placement stops",
				pl->dev_id);
		}
		free_item_mbufs(item);
		rte_gpu_comm_cleanup_list(item);
		if (pl->batch_of_item[pl->oldest] != 0 && !pl->failed) {
			pl->batches_done = pl->batch_of_item[pl->oldest];
			pl->stats.completed = pl->batches_done;
		}
		pl->batch_of_item[pl->oldest] = 0;
		pl->oldest = (pl->oldest + 1) % pl->nb_items;
		pl->in_flight--;
	}
}

/* Hand the item being filled to the engine. */
static void
gather_ready(struct droce_placer *pl, uint64_t batch)
{
	struct rte_gpu_comm_list *item = &pl->list[pl->fill];

	RTE_GPU_VOLATILE(item->num_pkts) = pl->fill_n;
	if (rte_gpu_wmb(pl->dev_id) != 0 && !pl->failed) {
		pl->failed = true;
		pl->stats.device_failed++;
	}
	pl->batch_of_item[pl->fill] = batch;
	rte_gpu_comm_set_status(item, RTE_GPU_COMM_LIST_READY);
	pl->in_flight++;
	pl->fill = (pl->fill + 1) % pl->nb_items;
	pl->fill_n = 0;
}

static inline int
gather_append(struct droce_placer *pl, struct rte_mbuf *m, const uint8_t *src,
	      uint64_t dst_off, uint32_t len)
{
	struct rte_gpu_comm_list *item = &pl->list[pl->fill];
	uint32_t slot;

	if (pl->fill_n == 0 && pl->in_flight == pl->nb_items) {
		recycle(pl);
		if (pl->in_flight == pl->nb_items)
			return refuse(m, &pl->stats.no_item, -ENOBUFS);
	}
	slot = pl->fill_n++;
	item->pkt_list[slot].addr = (uintptr_t)src;
	item->pkt_list[slot].size = len;
	item->mbufs[slot] = m;
	pl->dst_off[(size_t)pl->fill * RTE_GPU_COMM_LIST_PKTS_MAX + slot] = dst_off;
	if (pl->fill_n == pl->item_entries)
		gather_ready(pl, 0); /* full: mid-batch, no ticket of its own */
	return 0;
}

static inline bool
streams(const struct droce_placer *pl, uint32_t len)
{
	return pl->stream_lines != NULL && len >= STREAM_COPY_MIN;
}

/* A stream writes on where its last packet ended: the lines the next
 * packet of the same size will fill are asked for now, into L2 (in L1 the
 * packets of other streams, coming in between, would push them out). With
 * many streams the hardware's prefetcher, following so many destinations
 * through so much other work, leaves these stores to wait for memory.
 * Streaming stores read no line they write.
 */
static inline void
prefetch_next(const struct droce_placer *pl, uint64_t next, uint32_t len)
{
	uint64_t end = RTE_MIN(next + len, pl->size);

	if (!pl->cached)
		return;
	for (uint64_t o = next; o < end; o += RTE_CACHE_LINE_SIZE)
		rte_prefetch1(pl->cpu + o);
}

/* A copy is done with its mbuf. */
static inline int
copied(const struct droce_placer *pl, struct rte_mbuf *m)
{
	if (pl->caller_frees)
		return 1;
	rte_pktmbuf_free(m);
	return 0;
}

/* An entry that passed the placer's checks: its bytes go (or are queued). */
static inline int
place_checked(struct droce_placer *pl, struct rte_mbuf *m, uint32_t src_off,
	      uint64_t dst_off, uint32_t len)
{
	const uint8_t *src = rte_pktmbuf_mtod_offset(m, const uint8_t *, src_off);

	pl->stats.entries++;
	pl->stats.bytes += len;
	if (pl->mode == DROCE_PLACE_GATHER)
		return gather_append(pl, m, src, dst_off, len);
	if (streams(pl, len)) {
		gpu_copy_streaming(pl->stream_lines, pl->cpu + dst_off, src, len);
	} else {
		rte_memcpy(pl->cpu + dst_off, src, len);
		prefetch_next(pl, dst_off + len, len);
	}
	return copied(pl, m);
}

int
droce_place(struct droce_placer *pl, struct rte_mbuf *m, uint32_t src_off,
	    uint64_t dst_off, uint32_t len)
{
	if (unlikely(pl->failed))
		return refuse(m, &pl->stats.device_failed, -EIO);
	if (unlikely(!in_range(pl, m, src_off, dst_off, len)))
		return refuse(m, &pl->stats.out_of_range, -ERANGE);
	return place_checked(pl, m, src_off, dst_off, len);
}

int
droce_place_icrc(struct droce_placer *pl, struct rte_mbuf *m, uint32_t l3_off,
		 uint32_t payload_off, uint64_t dst_off, uint32_t len)
{
	const uint8_t *l3;
	uint32_t l3_len;
	bool stream, ok;

	if (unlikely(pl->failed))
		return refuse(m, &pl->stats.device_failed, -EIO);
	if (unlikely(!in_range(pl, m, payload_off, dst_off, len) ||
		     l3_off > payload_off ||
		     rte_pktmbuf_data_len(m) != rte_pktmbuf_pkt_len(m)))
		return refuse(m, &pl->stats.out_of_range, -ERANGE);
	l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, l3_off);
	l3_len = rte_pktmbuf_data_len(m) - l3_off;
	stream = streams(pl, len);
	if (!pl->fused_icrc || pl->mode == DROCE_PLACE_GATHER) {
		/* The verdict first: a corrupt packet writes nothing. The
		 * destination lines are asked for now (a prefetch writes
		 * nothing), so that their fetch overlaps the check's reads;
		 * streaming stores fetch none.
		 */
		if (pl->mode == DROCE_PLACE_COPY && !stream)
			for (uint32_t o = 0; o < len; o += RTE_CACHE_LINE_SIZE)
				rte_prefetch0_write(pl->cpu + dst_off + o);
		if (!droce_icrc_ok(l3, l3_len))
			return refuse(m, &pl->stats.icrc_failed, -EBADMSG);
		return place_checked(pl, m, payload_off, dst_off, len);
	}
	/* One pass: the copy and the check. */
	ok = stream ? droce_icrc_copy_stream_ok(l3, l3_len, payload_off - l3_off, len,
						pl->cpu + dst_off)
		    : droce_icrc_copy_ok(l3, l3_len, payload_off - l3_off, len,
					 pl->cpu + dst_off);
	if (!ok)
		return refuse(m, &pl->stats.icrc_failed, -EBADMSG);
	if (!stream)
		prefetch_next(pl, dst_off + len, len);
	pl->stats.entries++;
	pl->stats.bytes += len;
	return copied(pl, m);
}

int
droce_placer_direct(const struct droce_placer *pl, struct droce_place_direct *d)
{
	if (pl->mode != DROCE_PLACE_COPY)
		return -ENOTSUP;
	/* Below the streaming threshold place_checked() uses ordinary
	 * stores too.
	 */
	*d = (struct droce_place_direct){
		.cpu = pl->cpu, .size = pl->size, .max_len = STREAM_COPY_MIN - 1,
	};
	return 0;
}

void
droce_placer_count_direct(struct droce_placer *pl, uint64_t entries, uint64_t bytes)
{
	pl->stats.entries += entries;
	pl->stats.bytes += bytes;
}

uint64_t
droce_placer_submit(struct droce_placer *pl)
{
	uint64_t batch = ++pl->batches;

	pl->stats.submitted = batch;
	if (pl->mode == DROCE_PLACE_COPY) {
		/* Streaming stores, and any store into a write-combining
		 * mapping (GDRCopy's BAR), reach memory in no set order: all
		 * of the batch's first, then the device's own barrier. One
		 * fence a batch (a frame), whichever stores were used.
		 */
		rte_wmb();
		if (rte_gpu_wmb(pl->dev_id) != 0 && !pl->failed) {
			pl->failed = true;
			pl->stats.device_failed++;
			GPU_LOG(ERR, "GPU device %d failed a write barrier; placement stops",
				pl->dev_id);
		}
		if (!pl->failed)
			pl->batches_done = pl->stats.completed = batch;
		return batch;
	}
	if (pl->fill_n != 0) {
		gather_ready(pl, batch);
	} else if (pl->in_flight != 0) {
		/* Nothing new: this batch ends with the last item submitted. */
		uint32_t last = (pl->fill + pl->nb_items - 1) % pl->nb_items;

		pl->batch_of_item[last] = batch;
	} else if (!pl->failed) {
		pl->batches_done = pl->stats.completed = batch; /* empty batch */
	}
	return batch;
}

uint64_t
droce_placer_completed(struct droce_placer *pl)
{
	if (pl->mode == DROCE_PLACE_GATHER)
		recycle(pl);
	return pl->batches_done;
}

unsigned int
droce_placer_engine_poll(struct droce_placer *pl)
{
	if (pl->mode != DROCE_PLACE_GATHER || pl->engine_handle != NULL)
		return 0;
	return gather_cpu_step(&pl->job, &pl->cpu_next);
}
