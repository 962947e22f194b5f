/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CM_MAD_H
#define DROCE_CM_MAD_H

/*
 * The InfiniBand Communication Manager's messages as they travel in
 * 256-byte MADs to QP1 (IBTA vol. 1 ch. 12, as Linux's cm.c lays them
 * out), and the rdma_cm header that leads a REQ's private data. Offsets
 * are from the MAD's first byte; bit fields are numbered as the spec
 * numbers them, from a byte's most significant bit.
 *
 * Decoding checks what a receiver must (base and class version, class,
 * method, the attribute) and takes every field as it is: what a field
 * means for a connection is the state machine's to judge.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CM_MAD_SIZE 256
#define CM_MAD_HDR_SIZE 24
#define CM_MGMT_CLASS 0x07
#define CM_CLASS_VERSION 2
#define CM_METHOD_SEND 0x03

/* Attribute ids of the connection messages. */
enum cm_attr {
	CM_ATTR_REQ = 0x0010,
	CM_ATTR_MRA = 0x0011,
	CM_ATTR_REJ = 0x0012,
	CM_ATTR_REP = 0x0013,
	CM_ATTR_RTU = 0x0014,
	CM_ATTR_DREQ = 0x0015,
	CM_ATTR_DREP = 0x0016,
};

/* Private data each message carries, at most. */
#define CM_REQ_PRIVATE 92
#define CM_MRA_PRIVATE 222
#define CM_REJ_PRIVATE 148
#define CM_REP_PRIVATE 196
#define CM_RTU_PRIVATE 224
#define CM_DREQ_PRIVATE 220
#define CM_DREP_PRIVATE 224
#define CM_REJ_ARI 72

/* REJ reasons (IBA table 112, as ib_cm.h numbers them) that droce sends. */
enum cm_rej_reason {
	CM_REJ_NO_RESOURCES = 3,
	CM_REJ_TIMEOUT = 4,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_INVALID_GID = 12,
	CM_REJ_INVALID_MTU = 26,
	CM_REJ_CONSUMER_DEFINED = 28,
};

/* REQ's transport service types. */
enum cm_transport {
	CM_TRANSPORT_RC = 0,
	CM_TRANSPORT_UC = 1,
	CM_TRANSPORT_XRC = 3,
};

/* What an MRA or a REJ names as the message it answers. */
enum cm_msg_answered {
	CM_MSG_REQ = 0,
	CM_MSG_REP = 1,
	CM_MSG_OTHER = 2,
};

/* The common MAD header. */
struct cm_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

/* A path as a REQ describes it (primary or alternate). */
struct cm_path {
	uint16_t local_lid, remote_lid;
	uint8_t local_gid[16], remote_gid[16];
	uint32_t flow_label;            /* 20 bits */
	uint8_t packet_rate;            /* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;                     /* 4 bits */
	bool subnet_local;
	uint8_t local_ack_timeout;      /* 5 bits */
};

struct cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id;             /* 24 bits */
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;             /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;            /* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;           /* 24 bits */
	uint8_t remote_cm_response_timeout; /* 5 bits */
	uint8_t transport;              /* 2 bits, enum cm_transport */
	bool end_to_end_flow_control;
	uint32_t starting_psn;          /* 24 bits */
	uint8_t local_cm_response_timeout; /* 5 bits */
	uint8_t retry_count;            /* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;               /* 4 bits, IBTA's code (1: 256 .. 5: 4096) */
	bool rdc_exists;
	uint8_t rnr_retry_count;        /* 3 bits */
	uint8_t max_cm_retries;         /* 4 bits */
	bool srq;
	uint8_t extended_transport;     /* 3 bits */
	struct cm_path primary, alternate;
	uint8_t private_data[CM_REQ_PRIVATE];
};

struct cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_mraed;              /* 2 bits, enum cm_msg_answered */
	uint8_t service_timeout;        /* 5 bits */
	uint8_t private_data[CM_MRA_PRIVATE];
};

struct cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_rejected;           /* 2 bits, enum cm_msg_answered */
	uint8_t ari_length;             /* 7 bits */
	uint16_t reason;
	uint8_t ari[CM_REJ_ARI];
	uint8_t private_data[CM_REJ_PRIVATE];
};

struct cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;             /* 24 bits */
	uint32_t local_eecn;            /* 24 bits */
	uint32_t starting_psn;          /* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;       /* 5 bits */
	uint8_t failover_accepted;      /* 2 bits */
	bool end_to_end_flow_control;
	uint8_t rnr_retry_count;        /* 3 bits */
	bool srq;
	uint64_t local_ca_guid;
	uint8_t private_data[CM_REP_PRIVATE];
};

/* RTU and DREP: the ids and private data. */
struct cm_rtu {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[CM_RTU_PRIVATE];
};

struct cm_dreq {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn;            /* 24 bits */
	uint8_t private_data[CM_DREQ_PRIVATE];
};

struct cm_drep {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[CM_DREP_PRIVATE];
};

/* One connection message, whichever it is. */
struct cm_msg {
	struct cm_mad_hdr hdr;          /* hdr.attr_id says which */
	union {
		struct cm_req req;
		struct cm_mra mra;
		struct cm_rej rej;
		struct cm_rep rep;
		struct cm_rtu rtu;
		struct cm_dreq dreq;
		struct cm_drep drep;
	};
};

/* Why a MAD is not a CM message droce takes. */
enum cm_decode_error {
	CM_DECODE_OK = 0,
	CM_DECODE_SHORT,                /* fewer than 256 bytes */
	CM_DECODE_BASE_VERSION,         /* not 1 */
	CM_DECODE_CLASS,                /* not the CM class */
	CM_DECODE_CLASS_VERSION,        /* not 2 */
	CM_DECODE_METHOD,               /* not Send */
	CM_DECODE_ATTR,                 /* not a connection message (SIDR, LAP...) */
	CM_DECODE_MAX,
};

/* A word for each error, for counters and logs. */
const char *cm_decode_error_name(enum cm_decode_error e);

/* The name of a connection message ("REQ", ...), or "?". */
const char *cm_attr_name(uint16_t attr_id);

/* Decode @p len bytes of MAD into @p msg. */
enum cm_decode_error cm_mad_decode(const uint8_t *mad, size_t len, struct cm_msg *msg);

/* Encode @p msg into a 256-byte MAD (reserved bytes zero); the header's
 * versions, class and method are set here, its TID and attribute taken
 * from @p msg.
 */
void cm_mad_encode(const struct cm_msg *msg, uint8_t mad[CM_MAD_SIZE]);

/* ---- rdma_cm: service ids and the header of a REQ's private data ---------------- */

#define CM_PS_TCP 0x0106
#define CM_PS_UDP 0x0111
#define CM_PS_IB 0x013f
#define CM_RDMA_HDR_SIZE 36
/* User data after the header in a REQ. */
#define CM_RDMA_REQ_USER (CM_REQ_PRIVATE - CM_RDMA_HDR_SIZE)

/* The service id of @p port in port space @p ps. */
static inline uint64_t
cm_service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

/* What rdma_cm puts first in a REQ's private data (IPv4 only here). */
struct cm_rdma_hdr {
	uint8_t version;                /* 0 */
	uint8_t ip_version;             /* 4 or 6 */
	uint16_t src_port;
	uint8_t src_addr[16], dst_addr[16]; /* IPv4: 12 zero bytes, then the address */
};

void cm_rdma_hdr_encode(const struct cm_rdma_hdr *h, uint8_t out[CM_RDMA_HDR_SIZE]);
void cm_rdma_hdr_decode(const uint8_t in[CM_RDMA_HDR_SIZE], struct cm_rdma_hdr *h);
/* An IPv4 address (network order) as the header's 16 bytes hold it. */
void cm_rdma_addr_from_ipv4(uint32_t ip, uint8_t addr[16]);
/* The IPv4 address in @p addr; false when it is not one. */
bool cm_rdma_addr_to_ipv4(const uint8_t addr[16], uint32_t *ip);

#endif /* DROCE_CM_MAD_H */
