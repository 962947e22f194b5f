/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_NET_H
#define DROCE_NET_H

/**
 * @file
 * droce net: ports, Ethernet, ARP, IPv4, ICMP echo, UDP demultiplexing.
 *
 * Worker lcores busy-poll their RX queues in bursts and classify each
 * packet. UDP to a port with a worker handler is handled in place; ARP,
 * ICMP and UDP for control handlers travel to the control lcore through
 * one single-producer ring per worker. Every lcore owns one TX queue on
 * every port, so no lcore takes a lock to send.
 *
 * Every packet that is not delivered is counted under a drop reason, on
 * the RX queue it came from or on the lcore that dropped it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "droce_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Why a packet was not delivered. */
enum droce_drop_reason {
	DROCE_DROP_TRUNCATED,        /**< Shorter than its headers say. */
	DROCE_DROP_NOT_FOR_US,       /**< Other MAC, IP or ARP target. */
	DROCE_DROP_UNKNOWN_ETHERTYPE,/**< Neither IPv4 nor ARP. */
	DROCE_DROP_IP_BAD_HEADER,    /**< IPv4 version, IHL or total length. */
	DROCE_DROP_IP_BAD_CKSUM,     /**< IPv4 header checksum. */
	DROCE_DROP_IP_FRAGMENT,      /**< Fragments are not reassembled. */
	DROCE_DROP_IP_BAD_SOURCE,    /**< Zero, loopback, multicast source. */
	DROCE_DROP_UNKNOWN_IP_PROTO, /**< Neither UDP nor ICMP. */
	DROCE_DROP_UDP_BAD_LENGTH,   /**< UDP length vs IP payload. */
	DROCE_DROP_L4_BAD_CKSUM,     /**< UDP or ICMP checksum. */
	DROCE_DROP_UDP_NO_HANDLER,   /**< No handler on that UDP port. */
	DROCE_DROP_ICMP_UNHANDLED,   /**< ICMP other than echo request. */
	DROCE_DROP_ARP_BAD,          /**< Malformed ARP. */
	DROCE_DROP_ARP_UNRESOLVED,   /**< Waited for ARP that never came. */
	DROCE_DROP_NO_ROUTE,         /**< Off-link and no gateway. */
	DROCE_DROP_RING_FULL,        /**< Worker to control ring full. */
	DROCE_DROP_TX_FULL,          /**< TX queue full. */
	DROCE_DROP_NO_MBUF,          /**< No mbuf (or headroom) to send. */
	DROCE_DROP_MTU_EXCEEDED,     /**< A packet to send exceeds the MTU. */
	DROCE_DROP_PORT_STOPPED,     /**< Sent while its port is not started. */
	DROCE_DROP_MAX
};

/** Name of a drop reason ("bad_ip_cksum"), or NULL. */
const char *droce_drop_reason_name(enum droce_drop_reason reason);

/** Packet and byte counters, with drops by reason. */
struct droce_counters {
	uint64_t rx_packets;  /**< Received on RX queues. */
	uint64_t rx_bytes;    /**< Bytes of rx_packets (frame length). */
	uint64_t tx_packets;  /**< Handed to TX queues. */
	uint64_t tx_bytes;    /**< Bytes of tx_packets. */
	uint64_t drop[DROCE_DROP_MAX]; /**< Not delivered, by reason. */
};

/** Sum of the drop counters. */
uint64_t droce_counters_drops(const struct droce_counters *c);

struct droce_stack;
/** An lcore's context: its TX queues and counters. */
struct droce_lcore_ctx;

/**
 * Create the stack: probe or find the ports, configure queues (RSS where
 * the PMD has it), mempools and rings. Needs rte_eal_init() and
 * rte_timer_subsystem_init() first.
 *
 * @param conf
 *   Configuration; copied.
 * @param layout
 *   Lcores from droce_lcores_layout(); copied.
 * @param err
 *   Receives a message on failure (names the key, its origin, the device
 *   and what the device allows).
 * @param errlen
 *   Size of @p err.
 * @return
 *   The stack, or NULL with rte_errno set.
 */
struct droce_stack *droce_stack_create(const struct droce_conf *conf,
				       const struct droce_lcore_layout *layout,
				       char *err, size_t errlen);

/** Where a UDP handler runs. */
enum droce_udp_where {
	DROCE_UDP_ON_WORKER,  /**< On the worker that received the packets. */
	DROCE_UDP_ON_CONTROL, /**< On the control lcore. */
};

/**
 * UDP handler. Gets a burst of packets for its port; each mbuf starts at
 * the Ethernet header (DROCE_UDP_PKT_L3_OFFSET bytes), followed by an
 * IPv4 header that passed every check (droce_udp_pkt_l3_len()) and the
 * UDP header, whose length was checked, all in the first segment. The
 * handler owns the mbufs: it frees or sends each one.
 *
 * On a worker, l2_len and l3_len are not set (they hold whatever the
 * mbuf's last use left): they lie in the mbuf's second cache line, which
 * the receive need not touch, and writing it costs a line of memory
 * traffic a packet at high packet rates.
 *
 * @param ctx
 *   The running lcore's context (for sending and counting).
 * @param port
 *   droce port index the packets arrived on.
 * @param queue
 *   RX queue they arrived on (worker handlers); DROCE_ANY_QUEUE on the
 *   control lcore.
 * @param pkts
 *   The packets.
 * @param nb_pkts
 *   Their number, at least 1.
 * @param arg
 *   The handler's argument.
 */
typedef void (*droce_udp_handler_t)(struct droce_lcore_ctx *ctx,
				    uint16_t port, uint16_t queue,
				    struct rte_mbuf **pkts, uint16_t nb_pkts,
				    void *arg);

/** Where the IPv4 header of a packet given to a UDP handler starts. */
#define DROCE_UDP_PKT_L3_OFFSET RTE_ETHER_HDR_LEN

/**
 * The length of the IPv4 header, options included, of a packet given to a
 * UDP handler: read from the header, which the stack checked.
 */
static inline uint32_t
droce_udp_pkt_l3_len(const struct rte_mbuf *m)
{
	return rte_ipv4_hdr_len(rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *,
							DROCE_UDP_PKT_L3_OFFSET));
}

/** Where the UDP header of a packet given to a UDP handler starts. */
static inline uint32_t
droce_udp_pkt_l4_offset(const struct rte_mbuf *m)
{
	return DROCE_UDP_PKT_L3_OFFSET + droce_udp_pkt_l3_len(m);
}

/**
 * Free received packets in bulk. The usual one (one segment, direct, one
 * reference) goes back to its pool from what the mbuf's first cache line
 * says: with one segment its next pointer is NULL (an mbuf's invariant),
 * so it is not read; rte_pktmbuf_free_bulk() reads it, in the second line
 * where DPDK keeps IOVAs in mbufs (RTE_IOVA_AS_PA). Any other takes
 * rte_pktmbuf_free().
 *
 * @param pkts
 *   The packets; runs of one pool go back in one put.
 * @param n
 *   Their number.
 */
static inline void
droce_free_received(struct rte_mbuf **pkts, unsigned int n)
{
	unsigned int i = 0;

	while (i < n) {
		struct rte_mempool *pool = pkts[i]->pool;
		unsigned int end = i;

		while (end < n && pkts[end]->pool == pool && pkts[end]->nb_segs == 1 &&
		       RTE_MBUF_DIRECT(pkts[end]) && rte_mbuf_refcnt_read(pkts[end]) == 1) {
			__rte_mbuf_raw_sanity_check(pkts[end]);
			end++;
		}
		if (end == i) {
			rte_pktmbuf_free(pkts[i++]);
			continue;
		}
		rte_mempool_put_bulk(pool, (void * const *)(pkts + i), end - i);
		i = end;
	}
}

/** The queue a control handler is told: packets came through a ring. */
#define DROCE_ANY_QUEUE UINT16_MAX

/**
 * Register a handler for a UDP destination port, before droce_stack_start().
 *
 * @return
 *   0; -EEXIST if the UDP port has a handler; -ENOSPC if there are too many
 *   handlers; -EBUSY once the stack has started; -EINVAL for port 0.
 */
int droce_udp_register(struct droce_stack *s, uint16_t udp_port,
		       enum droce_udp_where where, droce_udp_handler_t fn,
		       void *arg);

/**
 * Start the ports, announce each address with a gratuitous ARP and launch
 * the worker lcores (not with worker.inline=yes: droce_stack_run() then
 * runs their rounds).
 *
 * @param launch
 *   False to start the ports without launching workers (the caller then
 *   polls with droce_worker_poll(), as unit tests do).
 * @return
 *   0, or a negative errno (logged).
 */
int droce_stack_start(struct droce_stack *s, bool launch);

/**
 * Run the control loop on the calling (main) lcore until
 * droce_stack_request_stop(); with worker.inline=yes and the workers not
 * launched, the workers' rounds too.
 */
void droce_stack_run(struct droce_stack *s);

/** Ask the control loop and the workers to return; async-signal-safe. */
void droce_stack_request_stop(struct droce_stack *s);

/**
 * Stop polling and leave the ports started: ask the control loop and the
 * workers to return, wait for them and handle what they left for the
 * control lcore. An application that shares a link with a peer that may
 * leave calls it first: DPDK 22.11's net_memif unmaps the link's rings from
 * its interrupt thread when the peer goes, with nothing to hold off a
 * poller inside them. Nothing polls until the application calls
 * droce_worker_poll() or droce_control_poll() itself.
 */
void droce_stack_stop_polling(struct droce_stack *s);

/** Stop: droce_stack_stop_polling(), then stop the ports. */
void droce_stack_stop(struct droce_stack *s);

/** Free everything; the stack must be stopped. NULL is allowed. */
void droce_stack_destroy(struct droce_stack *s);

/**
 * One poll of worker @p worker: RX bursts from its queues, classify,
 * handle or forward, flush TX (lazy frames alone wait for the next poll:
 * droce_tx_lazy()).
 *
 * @return
 *   Packets received.
 */
unsigned int droce_worker_poll(struct droce_stack *s, unsigned int worker);

/**
 * One round of the control lcore: packets from the workers, timers, TX
 * (as droce_worker_poll() flushes it).
 *
 * @return
 *   Packets processed.
 */
unsigned int droce_control_poll(struct droce_stack *s);

/**
 * One round of what the calling thread runs of @p s: the workers it polls
 * (worker.inline, not launched), then the control lcore's round. For an
 * application whose one thread both runs the stack and waits on it (the
 * hcom4db library drives a lent stack so while a call of that thread
 * waits); droce_stack_run() is the loop of the same rounds. Lazy frames
 * (droce_tx_lazy()) leave before it returns: the thread may turn to
 * other work for longer than a peer waits for an ACK.
 *
 * @return
 *   Packets processed, or -EBUSY: not on the control lcore, or inside
 *   droce_stack_run() or another round (a hook) on it.
 */
int droce_stack_poll(struct droce_stack *s);

/** Context of the control lcore. */
struct droce_lcore_ctx *droce_control_ctx(struct droce_stack *s);

/** Id of the control lcore: the EAL's main lcore, or the thread that an
 *  application's EAL registered for the stack (droce_lcores_layout_here()). */
unsigned int droce_control_lcore(const struct droce_stack *s);

/**
 * Send an IPv4 packet from the control lcore. The mbuf's data starts at
 * the L4 header; droce prepends IPv4 and Ethernet headers, resolves the
 * next hop (ARP, queueing while it resolves) and transmits.
 *
 * @return
 *   0 when sent or queued for ARP; a negative errno when dropped (counted;
 *   the mbuf is freed either way).
 */
int droce_ipv4_send(struct droce_lcore_ctx *ctx, uint16_t port,
		    struct rte_mbuf *m, uint8_t proto, rte_be32_t dst);

/**
 * Send a UDP datagram from the control lcore. The mbuf holds the payload;
 * droce prepends the UDP header (with checksum) and sends it as
 * droce_ipv4_send() does.
 */
int droce_udp_send(struct droce_lcore_ctx *ctx, uint16_t port,
		   struct rte_mbuf *m, rte_be32_t dst, uint16_t src_port,
		   uint16_t dst_port);

/**
 * Whether the control lcore can send to @p dst on @p port now: its next
 * hop's MAC is known. ARP holds only a few packets per unresolved
 * neighbour, so a sender with many (RoCE's requester) asks first and
 * waits.
 *
 * @return
 *   0; -EAGAIN while ARP resolves it (a resolution is started if none
 *   runs); -ENETUNREACH when off-link without a gateway.
 */
int droce_neigh_ready(struct droce_lcore_ctx *ctx, uint16_t port, rte_be32_t dst);

/**
 * As droce_neigh_ready(), and the next hop's MAC in @p mac when it is
 * known: for a sender on a worker lcore, which builds whole frames and
 * sends them with droce_tx() (ARP itself runs on the control lcore only,
 * so this is called there).
 *
 * @return
 *   0 with @p mac; -EAGAIN while ARP resolves it; -ENETUNREACH.
 */
int droce_neigh_mac(struct droce_lcore_ctx *ctx, uint16_t port, rte_be32_t dst,
		    struct rte_ether_addr *mac);

/** Whether the stack's workers busy-poll (worker.poll.enable). */
bool droce_stack_busy_poll(const struct droce_stack *s);

/** Whether the stack is started (between droce_stack_start and _stop). */
bool droce_stack_started(const struct droce_stack *s);

/**
 * Send a complete IPv4 frame from the control lcore: droce writes the
 * Ethernet source, chooses the next hop for @p dst (on-link or the port's
 * gateway) and fills the destination MAC from ARP, holding the frame while
 * it resolves. For senders that build the whole frame themselves because a
 * checksum covers the IP header (RoCEv2's ICRC).
 *
 * @return
 *   0 when sent or queued for ARP; a negative errno when dropped (counted;
 *   the mbuf is freed either way).
 */
int droce_eth_send(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m,
		   rte_be32_t dst);

/**
 * As droce_eth_send(), for a frame that may wait until the control
 * lcore's next flush, as droce_tx_lazy() says.
 */
int droce_eth_send_lazy(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m,
			rte_be32_t dst);

/**
 * Worker poll hook: runs on every worker after each RX round (also when no
 * packet came), for work that finishes later than the packets that caused
 * it. Returns how much is still pending; a worker with pending work does
 * not sleep in event mode.
 */
typedef unsigned int (*droce_worker_hook_t)(struct droce_lcore_ctx *ctx,
					    void *arg);

/**
 * Register a worker poll hook, before droce_stack_start().
 *
 * @return
 *   0, -ENOSPC (too many hooks), -EBUSY once started.
 */
int droce_worker_hook_register(struct droce_stack *s, droce_worker_hook_t fn,
			       void *arg);

/**
 * Remove a worker hook registered with @p fn and @p arg, while the stack
 * is not started (none runs then).
 *
 * @return
 *   0 (also when there is none), -EBUSY while started.
 */
int droce_worker_hook_unregister(struct droce_stack *s, droce_worker_hook_t fn, void *arg);

/**
 * Control poll hook: runs on the control lcore every round, after the
 * packets from the workers and the timers. Returns how much work is still
 * pending; the control lcore does not sleep (event mode) while it is not 0.
 */
typedef unsigned int (*droce_control_hook_t)(struct droce_lcore_ctx *ctx, void *arg);

/**
 * Register a control poll hook, before droce_stack_start().
 *
 * @return
 *   0, -ENOSPC (too many hooks), -EBUSY once started.
 */
int droce_control_hook_register(struct droce_stack *s, droce_control_hook_t fn, void *arg);

/**
 * Register a control poll hook that runs after every hook registered with
 * droce_control_hook_register(), before the round's TX flush (those
 * registered last run in their order of registration). For a layer that
 * other hooks use: lib/rc sends there what lib/rpc's hooks posted in the
 * round, in that round. Before droce_stack_start().
 *
 * @return
 *   0, -ENOSPC (too many hooks), -EBUSY once started.
 */
int droce_control_hook_register_last(struct droce_stack *s, droce_control_hook_t fn,
				     void *arg);

/** As droce_worker_hook_unregister(), for a control hook. */
int droce_control_hook_unregister(struct droce_stack *s, droce_control_hook_t fn, void *arg);

/**
 * Wake the control lcore if it sleeps in event mode, so that its hooks run
 * soon: for a thread that queued work for it. A no-op in busy-poll mode.
 */
void droce_control_wake(struct droce_stack *s);

/**
 * Wait until every running worker, and the control lcore when it runs
 * droce_stack_run(), has finished the poll round it was in, so that what
 * it might still have been reading when the caller unlinked it can be
 * freed. Returns at once when none runs (an application that steps the
 * stack itself calls this between its rounds). On an lcore of the stack
 * (from its own hook or handler), that lcore's round is the caller's and
 * is not waited for.
 */
void droce_stack_quiesce(struct droce_stack *s);

/** Index of @p ctx's worker (0..workers-1), or -1 for the control lcore. */
int droce_lcore_worker_index(const struct droce_lcore_ctx *ctx);

/**
 * True in a worker's last rounds: the stack is stopping, no packet is
 * taken any more, and its hooks finish what they hold (a packet waiting
 * for one that will not come now) instead of waiting.
 */
bool droce_lcore_stopping(const struct droce_lcore_ctx *ctx);

/** Number of worker lcores. */
unsigned int droce_stack_nb_workers(const struct droce_stack *s);

/** The stack of an lcore context. */
struct droce_stack *droce_lcore_stack(struct droce_lcore_ctx *ctx);

/**
 * Send a complete frame (Ethernet header on) on @p port from the calling
 * lcore's own TX queue, without routing or ARP: for replies to the sender
 * of a packet, such as RoCE ACKs sent by workers. The mbuf is consumed.
 */
void droce_tx(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m);

/**
 * As droce_tx(), for a frame that may wait: it leaves with the next frame
 * the lcore sends that may not (at its round's end, or in a
 * droce_tx_flush()), and at the start of the lcore's next round at the
 * latest. For acknowledgements: an application that polls its
 * completions between two rounds and answers at once sends the ACK in
 * its answer's burst, and the driver's TX call for the ACK alone leaves
 * the round trip's path. An lcore that stops polling holds them, as it
 * holds its timers; droce_stack_stop_polling() sends them, and a
 * droce_stack_poll() leaves none behind.
 */
void droce_tx_lazy(struct droce_lcore_ctx *ctx, uint16_t port, struct rte_mbuf *m);

/**
 * Hand the ports what the calling lcore's TX buffers hold now, lazy
 * frames too, rather than at the end of its round: for a post that should
 * leave before the round's other work. It only calls the drivers' TX
 * bursts.
 */
void droce_tx_flush(struct droce_lcore_ctx *ctx);

/**
 * droce_tx_flush(), then have the ports' drivers free the mbufs they have
 * sent from the calling lcore's queues (rte_eth_tx_done_cleanup(), where
 * the driver has it): for a deregistration that waits until no mbuf
 * refers to a region sent from. Control path only (a driver may make a
 * syscall or walk its whole ring).
 */
void droce_tx_reclaim(struct droce_lcore_ctx *ctx);

/** IPv4 address of droce port @p port, network order. */
rte_be32_t droce_port_addr(const struct droce_stack *s, uint16_t port);

/** IP MTU of droce port @p port, as configured (port.N.mtu). */
uint16_t droce_port_mtu(const struct droce_stack *s, uint16_t port);

/** Count a dropped packet on @p ctx's lcore for @p port and free it. */
void droce_drop(struct droce_lcore_ctx *ctx, uint16_t port,
		struct rte_mbuf *m, enum droce_drop_reason reason);

/** Mempool of @p port (for replies built by handlers). */
struct rte_mempool *droce_port_pool(const struct droce_stack *s,
				    uint16_t port);

/** Number of configured ports. */
uint16_t droce_stack_nb_ports(const struct droce_stack *s);

/** Ethdev port id of droce port @p port. */
uint16_t droce_port_ethdev(const struct droce_stack *s, uint16_t port);

/** MAC address of droce port @p port. */
void droce_port_mac(const struct droce_stack *s, uint16_t port,
		    struct rte_ether_addr *mac);

/** Counters of a port: its RX queues plus what every lcore did for it. */
void droce_port_counters(const struct droce_stack *s, uint16_t port,
			 struct droce_counters *c);

/** Counters of RX queue @p queue of port @p port. */
void droce_queue_counters(const struct droce_stack *s, uint16_t port,
			  uint16_t queue, struct droce_counters *c);

/** Counters of lcore @p lcore_id: its RX queues plus its TX and drops;
 *  with worker.inline the control lcore's include the workers'. */
void droce_lcore_counters(const struct droce_stack *s, unsigned int lcore_id,
			  struct droce_counters *c);

/** Print one stats line (rates since the previous line) to @p out. */
void droce_stack_print_stats_line(struct droce_stack *s, FILE *out);

/** Write all counters, per port, queue and lcore, as JSON to @p out. */
int droce_stack_write_stats_json(const struct droce_stack *s, FILE *out);

/** A library's own counters in the stats line and the JSON stats. */
struct droce_stats_ext {
	/** Appends to the stats line (" | rx ..."); @p seconds since the
	 *  previous line, for rates. NULL: nothing.
	 */
	void (*line)(FILE *out, double seconds, void *arg);
	/** Writes one JSON member, `"name": value`, without separators;
	 *  NULL: nothing.
	 */
	void (*json)(FILE *out, void *arg);
	void *arg;
};

/**
 * Register a stats extension (the struct is copied).
 *
 * @return
 *   0, or -ENOSPC when there are too many.
 */
int droce_stats_ext_register(struct droce_stack *s,
			     const struct droce_stats_ext *ext);

/**
 * Register /droce/stats, /droce/config and /droce/lcores with
 * rte_telemetry (dpdk-telemetry.py can query them).
 */
int droce_telemetry_register(struct droce_stack *s);

/** Log type of droce's net library. */
extern int droce_net_logtype;

#ifdef __cplusplus
}
#endif

#endif /* DROCE_NET_H */
