/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * A stream: the receiver interface seen from the application. start()
 * and close() run on control threads; blocking_monitor() on a thread of
 * its own; get_next_frame() on the application's. Workers reach a stream
 * only through the QP table, so close() unlinks it there and waits for
 * the workers to finish their round before tearing anything down.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_random.h>

#include "rx_private.h"

/* Idle rounds of the monitor before it naps between looks. */
#define MONITOR_SPINS 4096
#define MONITOR_NAP_NS 20000

struct droce_rx_stream *
droce_rx_stream_new(struct droce_rx *rx)
{
	struct droce_rx_stream *st = NULL;
	pthread_condattr_t ca;

	pthread_mutex_lock(&rx->lock);
	for (uint32_t i = 0; i < DROCE_RX_MAX_STREAMS && st == NULL; i++) {
		if (rx->streams[i] != NULL && !rx->streams[i]->in_use) {
			st = rx->streams[i];          /* a slot freed before */
		} else if (rx->streams[i] == NULL) {
			/* Stream memory lives as long as the rx: a worker may
			 * still look at a stream it owned for one round.
			 */
			st = rte_zmalloc("droce_rx_stream", sizeof(*st),
					 RTE_CACHE_LINE_SIZE);
			if (st == NULL)
				break;
			st->rx = rx;
			st->index = i;
			pthread_mutex_init(&st->lock, NULL);
			pthread_condattr_init(&ca);
			pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
			pthread_cond_init(&st->cond, &ca);
			pthread_condattr_destroy(&ca);
			rx->streams[i] = st;
		}
	}
	if (st != NULL) {
		st->in_use = true;
		st->ever_started = false;
		st->frame_ready = NULL;
		st->frame_ready_arg = NULL;
	}
	pthread_mutex_unlock(&rx->lock);
	return st;
}

static int
param_error(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
param_error(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

/* The device-facing getters mean something only once start() ran. */
static bool
ever_started(const struct droce_rx_stream *st)
{
	if (!st->ever_started)
		rte_errno = EINVAL;
	return st->ever_started;
}

/* The droce port that @p names. */
static int
find_port(const struct droce_rx *rx, const struct droce_rx_params *p,
	  uint16_t *port, char *err, size_t errlen)
{
	uint16_t n = droce_stack_nb_ports(rx->stack);

	if (p->device == NULL) {
		if (p->port >= n)
			return param_error(err, errlen, -ENODEV,
					   "rx: port %u: no such port; allowed: 0..%d",
					   p->port, (int)n - 1);
		*port = p->port;
		return 0;
	}
	for (uint16_t i = 0; i < n; i++) {
		char name[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(droce_port_ethdev(rx->stack, i),
						 name) == 0 &&
		    strcmp(name, p->device) == 0) {
			*port = i;
			return 0;
		}
	}
	return param_error(err, errlen, -ENODEV,
			   "rx: device \"%s\": not a port of this stack", p->device);
}

static int
check_layout(const struct droce_rx_params *p, char *err, size_t errlen)
{
	if (p->pages < 1 || p->pages > DROCE_HSB_MAX_PAGES)
		return param_error(err, errlen, -EINVAL,
				   "rx: %u pages; allowed: 1..%u", p->pages,
				   DROCE_HSB_MAX_PAGES);
	if (p->imm == DROCE_HSB_IMM_LITE && p->pages > 256)
		return param_error(err, errlen, -EINVAL,
				   "rx: %u pages; the hsb-lite immediate names at most 256",
				   p->pages);
	if (p->frame_size == 0)
		return param_error(err, errlen, -EINVAL,
				   "rx: frame size 0; allowed: at least 1 byte");
	if (p->metadata_offset < p->frame_size || p->metadata_offset % 128 != 0 ||
	    p->metadata_offset > SIZE_MAX - 2 * DROCE_HSB_METADATA_SIZE)
		return param_error(err, errlen, -EINVAL,
				   "rx: metadata offset %zu: allowed: a multiple of 128, at least the frame size %zu",
				   p->metadata_offset, p->frame_size);
	if (p->page_size < p->metadata_offset + 128 || p->page_size % 128 != 0)
		return param_error(err, errlen, -EINVAL,
				   "rx: page size %zu: allowed: a multiple of 128, at least metadata offset + 128 = %zu",
				   p->page_size, p->metadata_offset + 128);
	if (p->queue_size < 1 || p->queue_size > 65536)
		return param_error(err, errlen, -EINVAL,
				   "rx: queue size %u; allowed: 1..65536", p->queue_size);
	if (p->qp > DROCE_QPN_MASK || p->qp == 1)
		return param_error(err, errlen, -EINVAL,
				   "rx: QP %#x; allowed: 0 (droce picks), 2..0xffffff", p->qp);
	if ((unsigned int)p->icrc > DROCE_RX_ICRC_OFF)
		return param_error(err, errlen, -EINVAL,
				   "rx: ICRC mode %d; allowed: on, fused, off", (int)p->icrc);
	if ((unsigned int)p->copy_stores > DROCE_COPY_CACHED)
		return param_error(err, errlen, -EINVAL,
				   "rx: copy stores %d; allowed: streaming, cached",
				   (int)p->copy_stores);
	if ((unsigned int)p->imm > DROCE_HSB_IMM_OPAQUE)
		return param_error(err, errlen, -EINVAL,
				   "rx: immediate format %d; allowed: hsb, hsb-lite, opaque",
				   (int)p->imm);
	if (p->reorder_window > DROCE_RX_REORDER_MAX ||
	    (p->reorder_window & (p->reorder_window - 1)) != 0)
		return param_error(err, errlen, -EINVAL,
				   "rx: reorder window %u; allowed: 0 (off) or a power of two up to %u",
				   p->reorder_window, DROCE_RX_REORDER_MAX);
	if (p->buf == NULL || p->buf->gpu == NULL)
		return param_error(err, errlen, -EINVAL, "rx: no frame buffer");
	/* The sensor writes page n at device_va + n x page_size: the last
	 * page's end must be an address, checked without wrapping.
	 */
	if (p->page_size > UINT64_MAX / p->pages ||
	    p->device_va > UINT64_MAX - ((uint64_t)p->page_size * p->pages - 1))
		return param_error(err, errlen, -EINVAL,
				   "rx: device address %#" PRIx64 " + %u pages of %zu bytes passes 2^64; allowed: an address whose pages end below it",
				   p->device_va, p->pages, p->page_size);
	return droce_gpu_buf_fits(p->buf, p->page_size, p->pages, err, errlen) == 0
	       ? 0 : -EINVAL;
}

/* A QP number no stream uses. */
static uint32_t
pick_qp(struct droce_rx *rx)
{
	for (;;) {
		uint32_t q = rx->next_qp;

		rx->next_qp = rx->next_qp >= RX_LAST_QPN ? RX_FIRST_QPN : rx->next_qp + 1;
		if (rx_stream_of_qp(rx, q) == NULL)
			return q;
	}
}

static int
make_queues(struct droce_rx_stream *st, unsigned int pages, char *err, size_t errlen)
{
	char name[RTE_RING_NAMESIZE];
	uint64_t *page_frame;
	uint32_t *page_psn;

	if (st->frames == NULL || rte_ring_get_capacity(st->frames) != st->queue_size) {
		rte_ring_free(st->frames);
		snprintf(name, sizeof(name), "droce_rxf_%p", (void *)st);
		st->frames = rte_ring_create_elem(name, sizeof(struct droce_rx_frame_info),
						  st->queue_size, SOCKET_ID_ANY,
						  RING_F_SP_ENQ | RING_F_EXACT_SZ);
		if (st->frames == NULL)
			return param_error(err, errlen, -ENOMEM,
					   "rx: no frame queue of %u: %s", st->queue_size,
					   rte_strerror(rte_errno));
	} else {
		rte_ring_reset(st->frames);
	}
	/* frame_intact() reads these on the application's thread, under the
	 * stream's lock.
	 */
	page_frame = rte_zmalloc("droce_rx_pages", sizeof(uint64_t) * pages, 0);
	page_psn = rte_malloc("droce_rx_psn", sizeof(uint32_t) * pages, 0);
	if (page_frame != NULL && page_psn != NULL)
		memset(page_psn, 0xff, sizeof(uint32_t) * pages);
	pthread_mutex_lock(&st->lock);
	rte_free(st->page_frame);
	rte_free(st->page_psn);
	st->page_frame = page_frame;
	st->page_psn = page_psn;
	st->pages = page_frame != NULL && page_psn != NULL ? pages : 0;
	pthread_mutex_unlock(&st->lock);
	if (st->pages == 0)
		return param_error(err, errlen, -ENOMEM, "rx: out of memory");
	rte_free(st->reorder.slot);
	st->reorder.slot = NULL;
	if (st->reorder.window != 0) {
		st->reorder.slot = rte_zmalloc("droce_rx_reorder",
					       sizeof(struct rte_mbuf *) * st->reorder.window,
					       RTE_CACHE_LINE_SIZE);
		if (st->reorder.slot == NULL)
			return param_error(err, errlen, -ENOMEM, "rx: out of memory");
	}
	return 0;
}

/* Undo what start() set up; the stream is unlinked and no worker is in it. */
static void
teardown(struct droce_rx_stream *st)
{
	rx_reorder_drop(st);
	droce_placer_destroy(st->placer);
	st->placer = NULL;
}

int
droce_rx_stream_start(struct droce_rx_stream *st, const struct droce_rx_params *p,
		      char *err, size_t errlen)
{
	struct droce_rx *rx = st->rx;
	/* The worker frees placed mbufs a burst at a time (packet.c). */
	struct droce_placer_conf pc = { .buf = p->buf, .mode = p->placement,
					.engine_thread = true,
					.fused_icrc = p->icrc == DROCE_RX_ICRC_FUSED,
					.caller_frees = true, .stores = p->copy_stores };
	struct in_addr peer;
	uint16_t port = 0;
	int ret;

	err[0] = '\0';
	if (atomic_load(&st->started)) {
		if (!atomic_load(&st->failed))
			return param_error(err, errlen, -EBUSY,
					   "rx: stream QP %#x is running; close it first", st->qpn);
		droce_rx_stream_close(st); /* start again after a failure */
	}
	ret = find_port(rx, p, &port, err, errlen);
	if (ret == 0)
		ret = check_layout(p, err, errlen);
	if (ret == 0 && (p->peer_ip == NULL || inet_pton(AF_INET, p->peer_ip, &peer) != 1))
		ret = param_error(err, errlen, -EINVAL,
				  "rx: peer_ip \"%s\" is not a valid IPv4 address",
				  p->peer_ip != NULL ? p->peer_ip : "(none)");
	/* An RC device on the same stack takes QPNs from 0x10000 up. */
	if (ret == 0 && p->qp != 0 &&
	    !droce_roce_qp_claimed_by(rx->stack, p->qp, rx_udp_handler, rx))
		ret = param_error(err, errlen, -EADDRINUSE,
				  "rx: QP %#x is taken by another RoCE service on this stack (lib/rc has 0x10000 up); allowed: 2..%#x",
				  p->qp, RX_LAST_QPN);
	if (ret != 0)
		return ret;

	pthread_mutex_lock(&rx->lock);
	st->port = port;
	st->queue = p->queue;
	st->peer = peer.s_addr;
	st->qpn = p->qp != 0 ? p->qp : pick_qp(rx);
	st->rkey = p->rkey;
	while (st->rkey == 0)
		st->rkey = (uint32_t)rte_rand();
	st->pkey = p->pkey != 0 ? p->pkey : DROCE_PKEY_DEFAULT;
	st->imm = p->imm;
	st->icrc = p->icrc != DROCE_RX_ICRC_OFF;
	st->icrc_first = p->icrc == DROCE_RX_ICRC_ON;
	/* The HSB IP counts PSNs in 20 bits (they share its immediate). */
	st->psn_mask = p->imm == DROCE_HSB_IMM_CURRENT ? DROCE_HSB_PSN_MASK
						    : DROCE_PSN_MASK;
	st->remote_qp = p->remote_qp;
	st->device_va = p->device_va;
	rx_reorder_drop(st);
	st->reorder.window = p->reorder_window;
	st->reorder.timeout_tsc = (uint64_t)(p->reorder_timeout_us != 0
					     ? p->reorder_timeout_us
					     : DROCE_RX_REORDER_TIMEOUT_US) *
				  rte_get_tsc_hz() / 1000000;
	st->frame_size = p->frame_size;
	st->page_size = p->page_size;
	st->metadata_offset = p->metadata_offset;
	st->queue_size = p->queue_size;
	st->buf = *p->buf;
	droce_port_mac(rx->stack, port, &st->our_mac);
	ret = make_queues(st, p->pages, err, errlen);
	if (ret == 0) {
		st->placer = droce_placer_create(&pc, err, errlen);
		if (st->placer == NULL)
			ret = -EINVAL;
	}
	if (ret == 0) {
		rx_stream_reset_worker_state(st);
		st->delivered = 0;
		memset(&st->stats, 0, sizeof(st->stats));
		atomic_store(&st->failed, false);
		atomic_store(&st->attached, true);
		ret = rx_qp_insert(rx, st->qpn, st->index);
		if (ret == -EEXIST)
			snprintf(err, errlen, "rx: QP %#x is another stream's", st->qpn);
		else if (ret != 0)
			snprintf(err, errlen, "rx: no room for QP %#x", st->qpn);
	}
	if (ret != 0) {
		atomic_store(&st->attached, false);
		teardown(st);
	} else {
		atomic_store(&st->started, true);
		st->ever_started = true;
		RX_LOG(INFO, "stream QP %#x rkey %#x on port %u from %s: %u pages of %zu bytes, %s placement%s%s",
		       st->qpn, st->rkey, port, p->peer_ip, st->pages, st->page_size,
		       droce_place_mode_name(droce_placer_mode(st->placer)),
		       droce_placer_mode(st->placer) == DROCE_PLACE_COPY &&
		       p->copy_stores == DROCE_COPY_CACHED ? " (cached stores)" : "",
		       p->icrc == DROCE_RX_ICRC_ON ? "" : p->icrc == DROCE_RX_ICRC_FUSED
		       ? ", ICRC checked during the copy" : ", ICRC not checked");
	}
	pthread_mutex_unlock(&rx->lock);
	return ret;
}

void
droce_rx_stream_close(struct droce_rx_stream *st)
{
	struct droce_rx *rx = st->rx;

	pthread_mutex_lock(&rx->lock);
	if (!atomic_load(&st->started)) {
		pthread_mutex_unlock(&rx->lock);
		return;
	}
	atomic_store(&st->attached, false);
	rx_qp_remove(rx, st->qpn);
	/* Rounds that began before the unlinking are over once this returns;
	 * later rounds see the stream detached and only drop it from their
	 * worker's list (its memory outlives the rx).
	 */
	droce_stack_quiesce(rx->stack);
	teardown(st);
	pthread_mutex_lock(&st->lock);
	atomic_fetch_add(&st->run, 1);
	atomic_store(&st->started, false);
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
	pthread_mutex_unlock(&rx->lock);
}

void
droce_rx_stream_free(struct droce_rx_stream *st)
{
	if (st == NULL)
		return;
	droce_rx_stream_close(st);
	/* Wait for a monitor still returning. */
	while (atomic_load(&st->monitor_run) != 0)
		rte_pause();
	pthread_mutex_lock(&st->rx->lock);
	rte_ring_free(st->frames);
	st->frames = NULL;
	pthread_mutex_lock(&st->lock);
	rte_free(st->page_frame);
	rte_free(st->page_psn);
	st->page_frame = NULL;
	st->page_psn = NULL;
	st->pages = 0;
	pthread_mutex_unlock(&st->lock);
	rte_free(st->reorder.slot);
	st->reorder.slot = NULL;
	st->reorder.window = 0;
	st->in_use = false;
	pthread_mutex_unlock(&st->rx->lock);
}

static void
wake(struct droce_rx_stream *st)
{
	pthread_mutex_lock(&st->lock);
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

int
droce_rx_stream_blocking_monitor(struct droce_rx_stream *st)
{
	unsigned int idle = 0, run, mine;
	uint64_t notified;
	bool started;

	/* started and run change together under the lock (in close()). */
	pthread_mutex_lock(&st->lock);
	started = atomic_load(&st->started);
	run = atomic_load(&st->run);
	notified = rx_load64(&st->delivered);
	if (started)
		atomic_store(&st->monitor_run, run + 1);
	pthread_mutex_unlock(&st->lock);
	if (!started)
		return -EINVAL;
	while (atomic_load(&st->run) == run) {
		uint64_t done = rx_load64(&st->delivered);

		if (done == notified) {
			if (++idle < MONITOR_SPINS) {
				rte_pause();
			} else {
				struct timespec ts = { .tv_nsec = MONITOR_NAP_NS };

				nanosleep(&ts, NULL);
			}
			continue;
		}
		idle = 0;
		/* One call per frame that became available, on this thread;
		 * none after a fatal event (get_next_frame() gives nothing).
		 */
		if (atomic_load(&st->failed))
			notified = done;
		for (; notified < done && atomic_load(&st->run) == run; notified++)
			if (st->frame_ready != NULL)
				st->frame_ready(st->frame_ready_arg);
		wake(st);
	}
	/* The run may have a monitor of its own by now (close, start and
	 * blocking_monitor() again while this one was in a callback): only
	 * this run's mark is this monitor's to clear.
	 */
	mine = run + 1;
	atomic_compare_exchange_strong(&st->monitor_run, &mine, 0);
	wake(st);
	return 0;
}

bool
droce_rx_stream_monitoring(const struct droce_rx_stream *st)
{
	return rx_monitoring(st);
}

static void
deadline_after(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* At take time: did a later frame write this frame's page? */
static void
mark_overwritten(const struct droce_rx_stream *st, struct droce_rx_frame_info *f)
{
	uint64_t last_frame = rx_load64(&st->page_frame[f->page]);
	uint32_t meta_psn = __atomic_load_n(&st->page_psn[f->page], __ATOMIC_ACQUIRE);

	/* A later frame opened there, or (HSB) wrote a block of its own. */
	f->overwritten = last_frame != f->sequence ||
			 (f->metadata.present && meta_psn != f->metadata.psn);
}

bool
droce_rx_stream_get_next_frame(struct droce_rx_stream *st, unsigned int timeout_ms,
			       struct droce_rx_frame_info *info)
{
	struct timespec deadline;
	bool got = false;

	if (!ever_started(st))
		return false;
	deadline_after(&deadline, timeout_ms);
	pthread_mutex_lock(&st->lock);
	for (;;) {
		if (!atomic_load(&st->started) || atomic_load(&st->failed))
			break;
		if (rte_ring_mc_dequeue_elem(st->frames, info, sizeof(*info)) == 0) {
			mark_overwritten(st, info);
			/* Cumulative, as of now: what the application missed. */
			info->dropped = __atomic_load_n(&st->stats.frames_dropped,
							__ATOMIC_RELAXED);
			got = true;
			break;
		}
		if (timeout_ms == 0 ||
		    pthread_cond_timedwait(&st->cond, &st->lock, &deadline) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&st->lock);
	return got;
}

bool
droce_rx_stream_frame_intact(struct droce_rx_stream *st,
			     const struct droce_rx_frame_info *info)
{
	struct droce_rx_frame_info now = *info;
	bool intact = false;

	/* start() may be reallocating the pages meanwhile. */
	pthread_mutex_lock(&st->lock);
	if (info->page < st->pages && st->page_frame != NULL) {
		mark_overwritten(st, &now);
		intact = !now.overwritten;
	}
	pthread_mutex_unlock(&st->lock);
	return intact;
}

bool
droce_rx_stream_frames_ready(struct droce_rx_stream *st)
{
	bool ready;

	if (atomic_load(&st->failed))
		return true;
	pthread_mutex_lock(&st->lock);
	ready = atomic_load(&st->started) && !rte_ring_empty(st->frames);
	pthread_mutex_unlock(&st->lock);
	return ready;
}

void
droce_rx_stream_set_frame_ready(struct droce_rx_stream *st, void (*cb)(void *arg),
				void *arg)
{
	st->frame_ready_arg = arg;
	st->frame_ready = cb;
}

bool
droce_rx_stream_receive_path_failed(const struct droce_rx_stream *st)
{
	return atomic_load(&st->failed);
}

uint32_t
droce_rx_stream_qp_number(const struct droce_rx_stream *st)
{
	return ever_started(st) ? st->qpn : 0;
}

uint32_t
droce_rx_stream_rkey(const struct droce_rx_stream *st)
{
	return ever_started(st) ? st->rkey : 0;
}

uint64_t
droce_rx_stream_external_frame_memory(const struct droce_rx_stream *st)
{
	return ever_started(st) ? st->device_va : 0;
}
size_t droce_rx_stream_frame_size(const struct droce_rx_stream *st) { return st->frame_size; }
size_t droce_rx_stream_page_size(const struct droce_rx_stream *st) { return st->page_size; }
unsigned int droce_rx_stream_pages(const struct droce_rx_stream *st) { return st->pages; }

void
droce_rx_stream_stats(const struct droce_rx_stream *st, struct droce_rx_stream_stats *s)
{
	const uint64_t *src = (const uint64_t *)&st->stats;
	uint64_t *dst = (uint64_t *)s;

	/* Word by word, relaxed: the owner worker writes them meanwhile. */
	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}
