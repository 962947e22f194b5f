/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The receiver service of a stack: UDP 4791 on the workers, the QP table
 * that finds a packet's stream, the worker hook that finishes frames, and
 * the port events that are fatal to streams.
 *
 * The QP table has one writer (the control thread, under rx->lock) and
 * lock-free readers: each slot is one 64-bit word (QP number, stream index)
 * written atomically; a removed QP leaves a tombstone, so probes go on.
 * A tombstone that ends its run of slots is cleared (no probe passes it);
 * when too many others build up, the table is rebuilt into the spare one,
 * published, and the old one is left to the readers that may still be in
 * it until they finish their round (droce_stack_quiesce()). */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "rx_private.h"

RTE_LOG_REGISTER(droce_rx_logtype, droce.rx, INFO);

static const char *const refusal_names[DROCE_RX_REFUSAL_MAX] = {
	[DROCE_RX_NOT_ROCE] = "not_roce",
	[DROCE_RX_UNKNOWN_QP] = "unknown_qp",
	[DROCE_RX_NOT_STARTED] = "not_started",
	[DROCE_RX_WRONG_PORT] = "wrong_port",
	[DROCE_RX_HANDOFF_FULL] = "handoff_full",
	[DROCE_RX_WRONG_PEER] = "wrong_peer",
	[DROCE_RX_BAD_OPCODE] = "bad_opcode",
	[DROCE_RX_BAD_PKEY] = "bad_pkey",
	[DROCE_RX_BAD_RKEY] = "bad_rkey",
	[DROCE_RX_BAD_VA] = "bad_va",
	[DROCE_RX_PARTIAL_METADATA] = "partial_metadata",
	[DROCE_RX_BAD_LENGTH] = "bad_length",
	[DROCE_RX_BAD_ICRC] = "bad_icrc",
	[DROCE_RX_BAD_IMM_PAGE] = "bad_imm_page",
	[DROCE_RX_STALE_PSN] = "stale_psn",
	[DROCE_RX_NO_MESSAGE] = "no_message",
	[DROCE_RX_PLACE_FAILED] = "place_failed",
};

const char *
droce_rx_refusal_name(enum droce_rx_refusal r)
{
	return (unsigned int)r < DROCE_RX_REFUSAL_MAX ? refusal_names[r] : NULL;
}

static inline uint32_t
qp_hash(uint32_t qpn)
{
	return (qpn * 0x9e3779b1u) >> (32 - 13); /* RX_QP_SLOTS = 8192 */
}

/* Tombstones that make the table be rebuilt: probes for an unknown QP
 * (any forged packet) stay short.
 */
#define QP_TOMBSTONES_MAX (RX_QP_SLOTS / 16)

static inline uint32_t
qp_next(uint32_t h)
{
	return (h + 1) & (RX_QP_SLOTS - 1);
}

struct droce_rx_stream *
rx_stream_of_qp(const struct droce_rx *rx, uint32_t qpn)
{
	const uint64_t *table = __atomic_load_n(&rx->qp_table, __ATOMIC_ACQUIRE);

	RTE_BUILD_BUG_ON(RX_QP_SLOTS != 1 << 13);
	for (uint32_t i = 0, h = qp_hash(qpn); i < RX_QP_SLOTS; i++, h = qp_next(h)) {
		uint64_t e = rx_load64(&table[h]);

		if (e == 0)
			return NULL;
		if ((uint32_t)(e >> 32) == qpn && (uint32_t)e != QP_TOMBSTONE)
			return rx->streams[(uint32_t)e - 1];
	}
	return NULL;
}

/* Slots a lookup of @p qpn looks at (tests: how long a probe runs). */
unsigned int
rx_qp_probes(const struct droce_rx *rx, uint32_t qpn)
{
	unsigned int n = 0;

	for (uint32_t h = qp_hash(qpn); n < RX_QP_SLOTS; h = qp_next(h)) {
		uint64_t e = rx->qp_table[h];

		n++;
		if (e == 0 || ((uint32_t)(e >> 32) == qpn && (uint32_t)e != QP_TOMBSTONE))
			break;
	}
	return n;
}

static int
qp_place(uint64_t *table, uint32_t qpn, uint32_t index)
{
	int free_slot = -1;

	for (uint32_t i = 0, h = qp_hash(qpn); i < RX_QP_SLOTS; i++, h = qp_next(h)) {
		uint64_t e = table[h];

		if (e != 0 && (uint32_t)(e >> 32) == qpn && (uint32_t)e != QP_TOMBSTONE)
			return -EEXIST;
		if (free_slot < 0 && (e == 0 || (uint32_t)e == QP_TOMBSTONE))
			free_slot = (int)h;
		if (e == 0)
			break;
	}
	if (free_slot < 0)
		return -ENOSPC;
	rx_store64(&table[free_slot], (uint64_t)qpn << 32 | (index + 1));
	return 0;
}

int
rx_qp_insert(struct droce_rx *rx, uint32_t qpn, uint32_t index)
{
	return qp_place(rx->qp_table, qpn, index);
}

/* The live entries into the spare table, which readers then get; the old
 * one is theirs until every worker finished its round.
 */
static void
qp_rebuild(struct droce_rx *rx)
{
	uint64_t *old = rx->qp_table;
	uint64_t *fresh = old == rx->qp_tables[0] ? rx->qp_tables[1] : rx->qp_tables[0];

	memset(fresh, 0, sizeof(rx->qp_tables[0]));
	for (uint32_t h = 0; h < RX_QP_SLOTS; h++)
		if (old[h] != 0 && (uint32_t)old[h] != QP_TOMBSTONE)
			qp_place(fresh, (uint32_t)(old[h] >> 32), (uint32_t)old[h] - 1);
	__atomic_store_n(&rx->qp_table, fresh, __ATOMIC_RELEASE);
	droce_stack_quiesce(rx->stack);
	rx->qp_tombstones = 0;
}

void
rx_qp_remove(struct droce_rx *rx, uint32_t qpn)
{
	uint64_t *table = rx->qp_table;
	uint32_t h = qp_hash(qpn), i;

	for (i = 0; i < RX_QP_SLOTS; i++, h = qp_next(h)) {
		uint64_t e = table[h];

		if (e == 0)
			return;
		if ((uint32_t)(e >> 32) == qpn && (uint32_t)e != QP_TOMBSTONE)
			break;
	}
	if (i == RX_QP_SLOTS)
		return;
	if (table[qp_next(h)] != 0) {
		rx_store64(&table[h], (uint64_t)qpn << 32 | QP_TOMBSTONE);
		if (++rx->qp_tombstones > QP_TOMBSTONES_MAX)
			qp_rebuild(rx);
		return;
	}
	/* The run ends here: no probe passes this slot, nor the tombstones
	 * right before it.
	 */
	do {
		if (table[h] != 0 && (uint32_t)table[h] == QP_TOMBSTONE)
			rx->qp_tombstones--;
		rx_store64(&table[h], 0);
		h = (h + RX_QP_SLOTS - 1) & (RX_QP_SLOTS - 1);
	} while (table[h] != 0 && (uint32_t)table[h] == QP_TOMBSTONE);
}

void
rx_stream_fail(struct droce_rx_stream *st, const char *why)
{
	if (atomic_exchange(&st->failed, true))
		return;
	RX_LOG(ERR, "stream QP %#x: receive path failed: %s", st->qpn, why);
	/* Waiters in get_next_frame() return at once; the frames waiting
	 * will not be taken: they count as dropped.
	 */
	pthread_mutex_lock(&st->lock);
	__atomic_fetch_add(&st->stats.frames_dropped, rte_ring_count(st->frames),
			   __ATOMIC_RELAXED);
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

void
droce_rx_port_failed(struct droce_rx *rx, uint16_t port)
{
	for (unsigned int i = 0; i < DROCE_RX_MAX_STREAMS; i++) {
		struct droce_rx_stream *st = rx->streams[i];

		if (st != NULL && atomic_load(&st->started) && st->port == port)
			rx_stream_fail(st, "the port was removed or needs a reset");
	}
}

/* Runs on DPDK's interrupt thread. */
static int
port_event(uint16_t port_id, enum rte_eth_event_type event, void *arg,
	   void *ret_param)
{
	struct droce_rx *rx = arg;

	RTE_SET_USED(ret_param);
	for (uint16_t p = 0; p < droce_stack_nb_ports(rx->stack); p++)
		if (droce_port_ethdev(rx->stack, p) == port_id) {
			RX_LOG(ERR, "port %u: %s", p, event == RTE_ETH_EVENT_INTR_RMV
			       ? "device removed" : "device needs a reset");
			droce_rx_port_failed(rx, p);
		}
	return 0;
}

/* Every started stream's counters, added up. */
static unsigned int
totals(const struct droce_rx *rx, struct droce_rx_stream_stats *t)
{
	unsigned int n = 0;

	memset(t, 0, sizeof(*t));
	for (unsigned int i = 0; i < DROCE_RX_MAX_STREAMS; i++) {
		const struct droce_rx_stream *st = rx->streams[i];
		struct droce_rx_stream_stats s;
		const uint64_t *src = (const uint64_t *)&s;
		uint64_t *dst = (uint64_t *)t;

		if (st == NULL || !st->ever_started)
			continue;
		droce_rx_stream_stats(st, &s);
		for (size_t w = 0; w < sizeof(s) / sizeof(uint64_t); w++)
			dst[w] += src[w];
		n++;
	}
	return n;
}

static void
print_refusals(FILE *out, const uint64_t *refused)
{
	bool any = false;

	for (int r = 0; r < DROCE_RX_REFUSAL_MAX; r++)
		if (refused[r] != 0) {
			fprintf(out, "%s%s %" PRIu64, any ? ", " : " (", refusal_names[r],
				refused[r]);
			any = true;
		}
	if (any)
		fputc(')', out);
}

static void
stats_line(FILE *out, double secs, void *arg)
{
	struct droce_rx *rx = arg;
	struct droce_rx_stream_stats t;
	uint64_t unknown[DROCE_RX_REFUSAL_MAX], bad = 0;
	unsigned int n = totals(rx, &t);

	droce_rx_refusals(rx, unknown);
	for (int r = 0; r < DROCE_RX_REFUSAL_MAX; r++) {
		t.refused[r] += unknown[r];
		bad += t.refused[r];
	}
	fprintf(out, " | rx %u stream%s: %" PRIu64 " frames (%.1f fps %.3f Gbps) lost %" PRIu64
		" lossy %" PRIu64 " dropped %" PRIu64 " bad %" PRIu64,
		n, n == 1 ? "" : "s", t.frames,
		(double)(t.frames - rx->prev_frames) / secs,
		(double)(t.bytes - rx->prev_bytes) * 8 / secs / 1e9,
		t.lost_packets, t.frames_lossy, t.frames_dropped, bad);
	print_refusals(out, t.refused);
	rx->prev_frames = t.frames;
	rx->prev_bytes = t.bytes;
}

static void
json_refusals(FILE *out, const uint64_t *refused)
{
	fputc('{', out);
	for (int r = 0; r < DROCE_RX_REFUSAL_MAX; r++)
		fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "", refusal_names[r],
			refused[r]);
	fputc('}', out);
}

static void
stats_json(FILE *out, void *arg)
{
	struct droce_rx *rx = arg;
	uint64_t unknown[DROCE_RX_REFUSAL_MAX];
	bool first = true;

	fputs("\"rx\": {\n    \"streams\": [", out);
	for (unsigned int i = 0; i < DROCE_RX_MAX_STREAMS; i++) {
		const struct droce_rx_stream *st = rx->streams[i];
		struct droce_rx_stream_stats s;

		if (st == NULL || !st->ever_started)
			continue;
		droce_rx_stream_stats(st, &s);
		fprintf(out, "%s\n      {\"qp\": %u, \"rkey\": %u, \"port\": %u, \"failed\": %s, "
			"\"frames\": %" PRIu64 ", \"frames_lossy\": %" PRIu64
			", \"frames_dropped\": %" PRIu64 ", \"packets\": %" PRIu64
			", \"bytes\": %" PRIu64 ", \"lost_packets\": %" PRIu64
			", \"acks\": %" PRIu64 ", \"handed_over\": %" PRIu64
			", \"held\": %" PRIu64 ", \"refused\": ",
			first ? "" : ",", st->qpn, st->rkey, st->port,
			atomic_load(&st->failed) ? "true" : "false", s.frames,
			s.frames_lossy, s.frames_dropped, s.packets, s.bytes,
			s.lost_packets, s.acks, s.handed_over, s.held);
		json_refusals(out, s.refused);
		fputc('}', out);
		first = false;
	}
	droce_rx_refusals(rx, unknown);
	fputs("\n    ],\n    \"refused_without_stream\": ", out);
	json_refusals(out, unknown);
	fputs("\n  }", out);
}

/* A ring per worker for the packets of its streams that other workers
 * receive; the note a packet carries on the way is an mbuf dynfield.
 */
static int
make_handoff_rings(struct droce_rx *rx, char *err, size_t errlen)
{
	static unsigned int instance;
	unsigned int id = __atomic_fetch_add(&instance, 1, __ATOMIC_RELAXED);
	int ret = rx_note_register();

	if (ret != 0) {
		snprintf(err, errlen, "rx: no mbuf dynfield for hand-overs: %s",
			 rte_strerror(-ret));
		return ret;
	}
	for (unsigned int w = 0; w < rx->nb_workers; w++) {
		char name[RTE_RING_NAMESIZE];

		snprintf(name, sizeof(name), "droce_rxh%u_%u", id, w);
		rx->workers[w].handoff = rte_ring_create(name, RX_HANDOFF_SIZE, SOCKET_ID_ANY,
							 RING_F_SC_DEQ);
		if (rx->workers[w].handoff == NULL) {
			snprintf(err, errlen, "rx: no hand-over ring for worker %u: %s", w,
				 rte_strerror(rte_errno));
			return -ENOMEM;
		}
	}
	return 0;
}

struct droce_rx *
droce_rx_create(struct droce_stack *stack, char *err, size_t errlen)
{
	struct droce_rx *rx = rte_zmalloc("droce_rx", sizeof(*rx), RTE_CACHE_LINE_SIZE);
	struct timespec ts;
	int ret;

	if (rx == NULL) {
		snprintf(err, errlen, "rx: out of memory");
		return NULL;
	}
	rx->stack = stack;
	rx->qp_table = rx->qp_tables[0];
	rx->next_qp = RX_FIRST_QPN;
	pthread_mutex_init(&rx->lock, NULL);
	rx->nb_workers = droce_stack_nb_workers(stack);
	rx->workers = rte_zmalloc("droce_rx_workers",
				  sizeof(*rx->workers) * rx->nb_workers,
				  RTE_CACHE_LINE_SIZE);
	if (rx->workers != NULL && make_handoff_rings(rx, err, errlen) != 0) {
		droce_rx_destroy(rx);
		return NULL;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	rx->base_tsc = rte_get_tsc_cycles();
	rx->base_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	rx->ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	ret = rx->workers == NULL ? -ENOMEM
	      : droce_roce_claim_qps(stack, 0, DROCE_QPN_MASK, rx_udp_handler, rx);
	if (ret == 0)
		ret = droce_worker_hook_register(stack, rx_worker_hook, rx);
	if (ret == 0) {
		struct droce_stats_ext ext = { .line = stats_line,
					       .json = stats_json, .arg = rx };

		ret = droce_stats_ext_register(stack, &ext);
	}
	if (ret != 0) {
		snprintf(err, errlen, "rx: cannot take UDP port %u on the workers: %s",
			 DROCE_ROCE_UDP_PORT, strerror(-ret));
		droce_rx_destroy(rx);
		return NULL;
	}
	for (uint16_t p = 0; p < droce_stack_nb_ports(stack); p++) {
		uint16_t id = droce_port_ethdev(stack, p);

		rte_eth_dev_callback_register(id, RTE_ETH_EVENT_INTR_RMV, port_event, rx);
		rte_eth_dev_callback_register(id, RTE_ETH_EVENT_INTR_RESET, port_event, rx);
	}
	rx->callbacks_registered = true;
	return rx;
}

void
droce_rx_destroy(struct droce_rx *rx)
{
	if (rx == NULL)
		return;
	droce_roce_release_qps(rx->stack, rx_udp_handler, rx);
	if (rx->callbacks_registered)
		for (uint16_t p = 0; p < droce_stack_nb_ports(rx->stack); p++) {
			uint16_t id = droce_port_ethdev(rx->stack, p);

			rte_eth_dev_callback_unregister(id, RTE_ETH_EVENT_INTR_RMV,
							port_event, rx);
			rte_eth_dev_callback_unregister(id, RTE_ETH_EVENT_INTR_RESET,
							port_event, rx);
		}
	for (unsigned int i = 0; i < DROCE_RX_MAX_STREAMS; i++)
		if (rx->streams[i] != NULL) {
			rx->streams[i]->in_use = true;
			droce_rx_stream_free(rx->streams[i]);
			pthread_mutex_destroy(&rx->streams[i]->lock);
			pthread_cond_destroy(&rx->streams[i]->cond);
			rte_free(rx->streams[i]);
		}
	for (unsigned int w = 0; rx->workers != NULL && w < rx->nb_workers; w++) {
		struct rte_mbuf *m;

		while (rx->workers[w].handoff != NULL &&
		       rte_ring_sc_dequeue(rx->workers[w].handoff, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(rx->workers[w].handoff);
	}
	rte_free(rx->workers);
	pthread_mutex_destroy(&rx->lock);
	rte_free(rx);
}

void
droce_rx_refusals(const struct droce_rx *rx, uint64_t refused[DROCE_RX_REFUSAL_MAX])
{
	memset(refused, 0, sizeof(uint64_t) * DROCE_RX_REFUSAL_MAX);
	for (unsigned int w = 0; w < rx->nb_workers; w++)
		for (int r = 0; r < DROCE_RX_REFUSAL_MAX; r++)
			refused[r] += __atomic_load_n(&rx->workers[w].refused[r],
						      __ATOMIC_RELAXED);
}
