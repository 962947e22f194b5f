/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_NET_PRIVATE_H
#define DROCE_NET_PRIVATE_H

#include <stdatomic.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_epoll.h>
#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_pcapng.h>
#include <rte_ring.h>
#include <rte_timer.h>

#include "droce_core.h"
#include "droce_net.h"

#define NET_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_net_logtype, \
		"droce.net: " fmt "\n", ##__VA_ARGS__)

/* Errors reach stderr at once, while what droce printed on stdout may
 * still wait in its buffer (a log file is block-buffered): stdout goes
 * first, so that a log file keeps the order the lines were written in.
 */
#define NET_LOG_ERR(fmt, ...) do { \
	fflush(stdout); \
	NET_LOG(ERR, fmt, ##__VA_ARGS__); \
} while (0)

/* An IPv4 address in network order, for "%u.%u.%u.%u". */
#define NET_IPV4_FMT "%u.%u.%u.%u"
#define NET_IPV4_BYTES(a) \
	((const uint8_t *)&(a))[0], ((const uint8_t *)&(a))[1], \
	((const uint8_t *)&(a))[2], ((const uint8_t *)&(a))[3]

#define NET_BURST 32
#define NET_RING_SIZE 1024        /* per worker, to the control lcore */
#define NET_HELD_PER_WORKER 4096  /* mbufs a worker's services may hold */
#define NET_MBUF_CACHE 256
#define NET_IPV4_TTL 64
#define NET_MAX_UDP_HANDLERS 16
#define NET_MAX_WORKER_HOOKS 8
#define NET_MAX_CONTROL_HOOKS 8
#define NET_MAX_STATS_EXT 4
#define NET_ARP_ENTRIES 256       /* per port */
#define NET_ARP_PENDING 8         /* packets held per unresolved entry */
#define NET_ARP_RETRIES 3
#define NET_ARP_RETRY_MS 1000
#define NET_ARP_INCOMPLETE_MAX 64 /* resolutions in progress, per port */
#define NET_ARP_REQUESTS_PER_S 100 /* new resolutions a second (and burst) */

/* Counters with a single writer: the lcore that owns them. Readers on
 * other threads (stats, telemetry) load them relaxed; on 64-bit targets
 * they never see a torn value.
 */
static inline void
net_count(uint64_t *counter, uint64_t n)
{
	__atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

static inline uint64_t
net_counter_read(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/* One RX queue: which worker polls it and what it saw. */
struct net_rxq {
	struct droce_counters counters;
	unsigned int lcore_id;     /* polling worker */
	uint16_t queue;            /* its index on the port */
} __rte_cache_aligned;

/* One neighbour: its MAC, its state and the packets that wait for it. */
struct arp_entry {
	rte_be32_t ip;
	struct rte_ether_addr mac;
	enum { ARP_FREE, ARP_INCOMPLETE, ARP_REACHABLE, ARP_STALE } state;
	uint8_t tries;
	uint8_t nb_pending;
	uint64_t confirmed_tsc;    /* last reply or request from it; when
				    * INCOMPLETE: when it was created */
	struct rte_timer timer;    /* retransmission while resolving */
	struct rte_mbuf *pending[NET_ARP_PENDING];
	struct net_port *port;
};

struct net_port {
	struct droce_stack *stack;
	uint16_t index;            /* droce port number */
	uint16_t port_id;          /* ethdev */
	char name[RTE_ETH_NAME_MAX_LEN];
	struct rte_ether_addr mac;
	rte_be32_t addr;
	rte_be32_t netmask;
	rte_be32_t broadcast;      /* of the subnet; 0: none (/31, /32) */
	rte_be32_t gateway;
	uint16_t mtu;
	uint16_t nb_rxq;
	uint16_t nb_txq;
	bool rx_intr;              /* event mode through RX interrupts */
	bool ip_cksum_offload;     /* RX IPv4 checksum flags are valid */
	bool l4_cksum_offload;     /* RX UDP checksum flags are valid */
	bool started;
	bool mac_in_software;      /* port.N.mac, which the driver cannot set */
	bool probed;               /* droce probed it, so droce removes it */
	bool capture;              /* RoCEv2 packets go to a pcapng file */
	uint8_t capture_file;      /* which one, in the stack */
	struct rte_mempool *pool;
	struct net_rxq rxq[DROCE_MAX_PORT_QUEUES];
	/* ARP cache, touched only by the control lcore. */
	struct rte_hash *arp_hash;
	struct arp_entry arp[NET_ARP_ENTRIES];
	struct arp_entry *arp_last; /* the entry found last; NULL: none */
	unsigned int arp_incomplete;  /* entries INCOMPLETE */
	double arp_tokens;            /* new resolutions it may start now */
	uint64_t arp_tokens_tsc;      /* when they were counted */
	bool arp_conflict_logged;
};

/* A (port, queue) that a worker polls. */
struct net_poll_queue {
	struct net_port *port;
	uint16_t queue;
};

struct droce_lcore_ctx {
	struct droce_stack *stack;
	unsigned int lcore_id;
	uint16_t txq;              /* this lcore's TX queue on every port */
	bool is_control;
	struct rte_eth_dev_tx_buffer *txb[DROCE_MAX_PORTS];
	/* The TX buffers hold a frame that must leave by the round's end
	 * (tx_urgent), or only lazy ones, which wait for the next flush
	 * (tx_lazy): see droce_tx_lazy().
	 */
	bool tx_urgent;
	bool tx_lazy;
	const struct rte_mbuf *tx_lazy_frame;   /* the one droce_tx_lazy() sends now */
	/* TX and the drops this lcore made outside RX queue accounting. */
	struct droce_counters port_counters[DROCE_MAX_PORTS];
	/* Worker only. */
	uint16_t nb_poll;
	struct net_poll_queue poll[DROCE_MAX_PORTS * DROCE_MAX_PORT_QUEUES];
	struct rte_ring *to_control;
	int worker_index;          /* -1: control */
	/* Poll rounds done (only this lcore writes or reads it). */
	uint64_t rounds;
	/* The stack's quiesce token as this lcore read it at its last round's
	 * end: droce_stack_quiesce() waits for it to reach its own.
	 */
	uint64_t quiesce_seen;
	/* The TSC as net_round_tsc() read it, and rounds + 1 then (0: never). */
	uint64_t round_tsc;
	uint64_t round_tsc_of;
	bool in_loop;              /* worker_main runs */
	bool stopping;             /* its last rounds: the stack stops */
	uint16_t ip_id;
	/* pcapng copies for the control lcore to write; NULL without capture. */
	struct rte_ring *capture_ring;
	uint64_t capture_lost;     /* copies that found no mbuf or no room */
} __rte_cache_aligned;

struct net_udp_handler {
	droce_udp_handler_t fn;
	void *arg;
	enum droce_udp_where where;
	uint16_t udp_port;
};

struct net_capture_file {
	char path[256];
	rte_pcapng_t *pcapng;
};

struct droce_stack {
	/* Raised by each droce_stack_quiesce(); read at every round's end.
	 * Its own line: rounds read it all the time, a quiesce writes it.
	 */
	uint64_t quiesce_token __rte_cache_aligned;
	struct droce_conf conf __rte_cache_aligned;
	struct droce_lcore_layout layout;
	unsigned int instance;     /* makes memory object names unique */
	uint16_t nb_ports;
	struct net_port *port[DROCE_MAX_PORTS];
	/* ethdev port id -> droce port */
	int16_t port_of_ethdev[RTE_MAX_ETHPORTS];
	struct droce_lcore_ctx *control;
	struct droce_lcore_ctx *worker[RTE_MAX_LCORE];
	/* UDP demultiplexing: port -> handler index + 1, 0 for none. */
	uint8_t udp_map[UINT16_MAX + 1];
	uint8_t nb_udp_handlers;
	struct net_udp_handler udp_handler[NET_MAX_UDP_HANDLERS];
	unsigned int nb_hooks;
	struct {
		droce_worker_hook_t fn;
		void *arg;
	} hook[NET_MAX_WORKER_HOOKS];
	/* In the order they run: those registered "last" after the others. */
	unsigned int nb_control_hooks;
	struct {
		droce_control_hook_t fn;
		void *arg;
		bool last;
	} control_hook[NET_MAX_CONTROL_HOOKS];
	unsigned int nb_stats_ext;
	struct droce_stats_ext stats_ext[NET_MAX_STATS_EXT];
	/* Read by every worker on every loop: a cache line of its own. */
	atomic_bool stop __rte_cache_aligned;
	/* Event mode: workers ring the doorbell (an eventfd) when they hand
	 * packets to a control lcore that sleeps; -1 with busy polling.
	 */
	int doorbell_fd;
	atomic_bool control_asleep __rte_cache_aligned;
	struct rte_epoll_event doorbell_ev;
	bool started;
	bool launched;
	uint64_t arp_timeout_tsc;
	struct rte_timer stats_timer;
	/* pcapng capture (capture.c) */
	struct rte_mempool *capture_pool;
	unsigned int nb_capture_files;
	struct net_capture_file capture_file[DROCE_MAX_PORTS];
	uint64_t capture_write_errors;
	/* Previous stats line, for rates. */
	uint64_t stats_prev_tsc;
	struct droce_counters stats_prev[DROCE_MAX_PORTS];
};

/* port.c */
int net_port_create(struct droce_stack *s, uint16_t index, char *err,
		    size_t errlen);
int net_port_start(struct net_port *p);
/* Event mode: give up RX interrupts for rte_power_pmd_mgmt (restarts). */
int net_port_use_power_mgmt(struct net_port *p);
void net_port_stop(struct net_port *p);
void net_port_free(struct net_port *p);

/* classify.c: what a worker does with a burst. */
/* Lcore context @p i of @p s, 0 <= i < net_nb_ctx(s): 0 is the control
 * lcore's, i the worker i - 1's (NULL while the stack is half made).
 * Not indexed by lcore id: inline workers share the control lcore's.
 */
static inline struct droce_lcore_ctx *
net_ctx(const struct droce_stack *s, uint32_t i)
{
	return i == 0 ? s->control : s->worker[i - 1];
}

/* The TSC once a round, read when the round first asks: ARP's ageing
 * needs no finer time than a round, and a read costs as much as a frame's
 * lookup. Between rounds it is the first read after the last round, and
 * the next round reads anew (round_begin()).
 */
static inline uint64_t
net_round_tsc(struct droce_lcore_ctx *ctx)
{
	if (ctx->round_tsc_of != ctx->rounds + 1) {
		ctx->round_tsc = rte_get_timer_cycles();
		ctx->round_tsc_of = ctx->rounds + 1;
	}
	return ctx->round_tsc;
}

static inline uint32_t
net_nb_ctx(const struct droce_stack *s)
{
	return s->layout.nb_workers + 1;
}

void net_classify_burst(struct droce_lcore_ctx *ctx, struct net_rxq *rxq,
			struct net_port *port, struct rte_mbuf **pkts,
			uint16_t n);
/* The control lcore's share of packets forwarded by the workers. */
void net_control_input(struct droce_lcore_ctx *ctx, struct rte_mbuf **pkts,
		       uint16_t n);

/* arp.c */
int net_arp_init(struct net_port *p);
void net_arp_free(struct net_port *p);
void net_arp_input(struct droce_lcore_ctx *ctx, struct net_port *p,
		   struct rte_mbuf *m);
/* 0 when @next_hop's MAC is known; -EAGAIN while it resolves (started
 * here if it was not).
 */
int net_arp_ready(struct droce_lcore_ctx *ctx, struct net_port *p, rte_be32_t next_hop,
		  struct rte_ether_addr *mac);

/* Queue @m (Ethernet header prepended, source filled) for @next_hop. */
void net_arp_output(struct droce_lcore_ctx *ctx, struct net_port *p,
		    struct rte_mbuf *m, rte_be32_t next_hop);
int net_arp_announce(struct droce_lcore_ctx *ctx, struct net_port *p);

/* icmp.c */
void net_icmp_input(struct droce_lcore_ctx *ctx, struct net_port *p,
		    struct rte_mbuf *m);

/* udp.c */
void net_udp_echo(struct droce_lcore_ctx *ctx, uint16_t port, uint16_t queue,
		  struct rte_mbuf **pkts, uint16_t n, void *arg);

/* tx.c */
int net_tx_init(struct droce_lcore_ctx *ctx, const struct net_port *p);
void net_tx_free(struct droce_lcore_ctx *ctx);
void net_tx(struct droce_lcore_ctx *ctx, struct net_port *p,
	    struct rte_mbuf *m);
void net_tx_flush(struct droce_lcore_ctx *ctx);
/* A round's first and last TX steps: the lazy frames an earlier round
 * left; what this round buffered, if any of it must leave now.
 */
void net_tx_round_begin(struct droce_lcore_ctx *ctx);
void net_tx_round_end(struct droce_lcore_ctx *ctx);

/* capture.c */
bool net_is_roce(const struct rte_mbuf *m);
void net_capture(struct droce_lcore_ctx *ctx, const struct net_port *p,
		 struct rte_mbuf *m, uint32_t queue, bool rx);
int net_capture_open(struct droce_stack *s, char *err, size_t errlen);
unsigned int net_capture_drain(struct droce_stack *s);
void net_capture_close(struct droce_stack *s);

/* telemetry.c: the stack goes away; answer no more for it. */
void net_telemetry_forget(const struct droce_stack *s);

/* stats.c */
void net_counters_add(struct droce_counters *sum,
		      const struct droce_counters *c);

static inline void
net_rx_drop(struct net_rxq *rxq, struct rte_mbuf *m,
	    enum droce_drop_reason reason)
{
	net_count(&rxq->counters.drop[reason], 1);
	rte_pktmbuf_free(m);
}

/* Wake the control lcore if it sleeps (event mode only). A syscall, but
 * only for packets bound for the control lcore, never for data packets.
 */
static inline void
net_wake_control(struct droce_stack *s)
{
	static const uint64_t one = 1;

	if (s->doorbell_fd < 0)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&s->control_asleep, memory_order_relaxed) &&
	    write(s->doorbell_fd, &one, sizeof(one)) < 0) {
		/* The counter is full: the control lcore is awake anyway. */
	}
}

static inline bool
net_on_link(const struct net_port *p, rte_be32_t ip)
{
	return ((ip ^ p->addr) & p->netmask) == 0;
}

#endif /* DROCE_NET_PRIVATE_H */
