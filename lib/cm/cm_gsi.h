/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CM_GSI_H
#define DROCE_CM_GSI_H

/*
 * QP1, the General Services Interface of a port, for the CM's MADs: UD
 * SEND ONLY packets to and from QP 1 with the well-known Q_Key. Workers
 * hand the packets of QPN 1 to the control lcore through a lock-free
 * ring; there each is checked (opcode, P_Key, Q_Key, ICRC, length), its
 * MAD decoded and given to the callback, or counted by why it was not.
 * Sending goes from the control lcore, through ARP.
 */

#include <stdint.h>

#include "cm_mad.h"
#include "droce_net.h"

/* The Q_Key every GSI packet carries (IBTA: QP1's well-known Q_Key). */
#define CM_GSI_QKEY 0x80010000u
#define CM_GSI_QPN 1

/* Why a packet to QP1 was dropped before its MAD was decoded. */
enum cm_gsi_drop {
	CM_GSI_BAD_HEADERS,             /* not a whole RoCEv2 packet */
	CM_GSI_NOT_UD_SEND,             /* an opcode other than UD SEND ONLY */
	CM_GSI_BAD_PKEY,
	CM_GSI_BAD_QKEY,
	CM_GSI_BAD_ICRC,
	CM_GSI_BAD_LENGTH,              /* a payload other than 256 bytes */
	CM_GSI_WRONG_PORT,              /* came in on another port of the stack */
	CM_GSI_RING_FULL,               /* the control lcore had no room */
	CM_GSI_DROP_MAX,
};

/* A word for each reason, for counters and logs. */
const char *cm_gsi_drop_name(enum cm_gsi_drop why);

struct cm_gsi_stats {
	uint64_t rx_mads;               /* decoded and given to the callback */
	uint64_t tx_mads;               /* sent (or held by ARP) */
	uint64_t tx_failed;             /* no mbuf, or dropped by the port */
	uint64_t dropped[CM_GSI_DROP_MAX];
	uint64_t not_cm[CM_DECODE_MAX]; /* MADs that decode refused, by reason */
};

/* Where a MAD came from. */
struct cm_gsi_from {
	uint32_t ip;                    /* network order */
	uint32_t src_qp;                /* the DETH's */
	uint16_t pkey;
};

struct cm_gsi;

/* On the control lcore, for each MAD that decoded. */
typedef void (*cm_gsi_rx_t)(void *arg, const struct cm_msg *msg,
			    const struct cm_gsi_from *from);

/*
 * QP1 on port @p port of @p stack, before the stack starts: claims QPN 1
 * from lib/roce's demux and registers a control hook.
 *
 * @return
 *   The GSI, or NULL with the reason in @p err.
 */
struct cm_gsi *cm_gsi_open(struct droce_stack *stack, uint16_t port, cm_gsi_rx_t fn,
			   void *arg, char *err, size_t errlen);

/* Close, the stack stopped (or never started). */
void cm_gsi_close(struct cm_gsi *g);

/*
 * Send @p msg to QP1 of @p dst_ip (network order), from the control lcore.
 *
 * @return
 *   0 when sent or held while ARP resolves; -ENOBUFS without an mbuf;
 *   else what droce_eth_send() returns (counted in tx_failed).
 */
int cm_gsi_send(struct cm_gsi *g, uint32_t dst_ip, const struct cm_msg *msg);

/* The counters (a snapshot; the control lcore writes them). */
void cm_gsi_stats(const struct cm_gsi *g, struct cm_gsi_stats *stats);

#endif /* DROCE_CM_GSI_H */
