/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_SENSOR_H
#define DROCE_SENSOR_H

/*
 * droce-sensor: sends frames as a Holoscan Sensor Bridge does (lib/hsb),
 * over one DPDK port, with faults on request so that tests can check what
 * a receiver makes of them.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include "droce_hsb.h"

/* Faults, each applied to every Nth data-path packet (0: never). */
enum fault {
	FAULT_DROP,          /* not sent */
	FAULT_DUPLICATE,     /* sent twice */
	FAULT_REORDER,       /* sent after the packet that follows it */
	FAULT_CORRUPT_ICRC,  /* one payload bit flipped after the ICRC */
	FAULT_WRONG_RKEY,    /* sent in its place, with another rkey */
	FAULT_WRONG_QP,      /* ... to another QP */
	FAULT_WRONG_PEER,    /* ... from another source address */
	FAULT_BAD_VA,        /* ... to a VA past the last page */
	FAULT_MAX
};

/* What the receiver should report, counted as the faults happen. */
struct sensor_expect {
	uint64_t frames;          /* sent */
	uint64_t frames_complete; /* whose last packet arrives (all but one lossy end) */
	uint64_t frames_lossy;    /* with a packet lost or refused */
	uint64_t lost_packets;    /* PSN gaps the receiver sees */
	uint64_t stale_packets;   /* duplicates and late ones */
	uint64_t refused[FAULT_MAX];
	uint64_t packets;         /* put on the wire */
	uint64_t bytes;           /* their RoCE payload */
};

struct sensor_port {
	uint16_t port_id;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	rte_be32_t ip;
	uint64_t tx_retries;
	uint64_t rx_packets;      /* what came back: ARP, ACKs */
};

int sensor_port_init(struct sensor_port *p, uint16_t port_id, uint32_t mtu,
		     char *err, size_t errlen);
void sensor_port_close(struct sensor_port *p);

/* Ask for @ip's MAC with ARP (answering the peer's ARP meanwhile). */
int sensor_arp_resolve(struct sensor_port *p, rte_be32_t ip,
		       struct rte_ether_addr *mac, unsigned int timeout_ms);

/* Receive and answer (ARP) or drop what arrives. */
void sensor_port_poll(struct sensor_port *p);

/* Send @n packets, retrying while the queue is full (bounded). */
unsigned int sensor_tx(struct sensor_port *p, struct rte_mbuf **pkts,
		       unsigned int n);

/* Fault injection over the packet sequence. */
struct sensor_faults {
	uint64_t every[FAULT_MAX];
	/* The receiver takes packets as they come: a reordered one is a gap
	 * and a late packet. Else (droce's reorder window) it waits for the
	 * late one and loses nothing.
	 */
	bool strict_receiver;
	uint64_t seen;            /* data-path packets so far */
	struct rte_mbuf *held;    /* a reordered packet waiting for its successor */
	bool frame_lost;          /* the current frame has lost something */
	/* Since the last packet the receiver takes: what it cannot see at
	 * all if nothing else arrives (a gap shows only with a successor).
	 */
	uint64_t unseen_lost;     /* packets lost */
	uint64_t unseen_frames;   /* frames whose end was lost */
};

/* At the end: take back from @e what the receiver cannot see after the
 * last packet it takes; returns the frames it will not finish.
 */
uint64_t sensor_faults_finish(struct sensor_faults *f, struct sensor_expect *e);

/* "drop=100,duplicate=7"; -EINVAL with a message naming what is allowed. */
int sensor_faults_parse(struct sensor_faults *f, const char *spec, char *err,
			size_t errlen);

const char *sensor_fault_name(enum fault f);

/*
 * Build the next packet of a frame into *out (count: 0, 1 or 2 packets,
 * after faults), counting what the receiver should see.
 */
unsigned int sensor_faults_apply(struct sensor_faults *f,
				 struct droce_frame_spec *spec, bool last_of_frame,
				 struct rte_mempool *pool, struct rte_mbuf **out,
				 struct sensor_expect *e);

#endif /* DROCE_SENSOR_H */
