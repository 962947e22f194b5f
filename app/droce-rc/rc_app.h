/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RC_APP_H
#define DROCE_RC_APP_H

/*
 * droce-rc: droce's RC transport against rdma-core's own test tools. Each
 * mode plays one side of a tool exactly as it is on the wire: its TCP
 * exchange (the kernel's sockets, out of band) and its RC traffic (droce,
 * on port 0 of the stack).
 */

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "droce_cm.h"
#include "droce_rc.h"

/* The TCP port ibv_rc_pingpong and perftest meet on. */
#define RCAPP_TCP_PORT 18515
/* rping's and ucmatose's ports (rdma_cm's TCP port space). */
#define RCAPP_RPING_PORT 7174
#define RCAPP_UCMATOSE_PORT 7471
/* Bytes a RoCEv2 packet adds to its payload over the IP MTU: IPv4, UDP,
 * BTH, the largest extended header and the ICRC, as rxe reckons a path MTU.
 */
#define RCAPP_ROCE_OVERHEAD 80

enum rcapp_mode {
	RCAPP_PINGPONG,         /* ibv_rc_pingpong, either side */
	RCAPP_PERFTEST,         /* the server of ib_{write,read,send}_bw */
	RCAPP_STRESS,           /* random work against another droce-rc, checked */
	RCAPP_RPING,            /* librdmacm's rping, either side, through droce_cm.h */
	RCAPP_UCMATOSE,         /* librdmacm's ucmatose, either side */
};

enum rcapp_verb {
	RCAPP_WRITE,
	RCAPP_READ,
	RCAPP_SEND,
};

/* What the command line asked for, checked. */
struct rcapp_opts {
	enum rcapp_mode mode;
	enum rcapp_verb verb;           /* perftest */
	bool server;                    /* --server (else --connect) */
	struct in_addr connect_ip;      /* --connect */
	uint16_t tcp_port;
	uint32_t size;                  /* bytes per message */
	uint32_t iters;
	uint32_t rx_depth;              /* receives kept posted */
	enum droce_mtu mtu;             /* 0: chosen from the port's MTU */
	unsigned int timeout_s;         /* longest wait with nothing happening */
	uint64_t seed;                  /* stress: what every message is made from */
	uint32_t cycles;                /* rping, ucmatose: connections one after another */
	uint32_t connections;           /* ucmatose: connections at once (cmatose -c) */
	bool rdma_cm;                   /* perftest -R: the exchange and the QP through the CM */
	const char *reject;             /* rping, ucmatose server: refuse each, with these words */
	uint8_t cm_retries;             /* rping, ucmatose client: 0 for the CM's default */
	uint8_t cm_response_timeout;    /* ... 0 for the CM's default */
	bool workers_inline;            /* --workers-inline */
	enum droce_rc_owners owners;    /* --owners */
	int zero_copy;                  /* --zero-copy: 1 on, 0 off, -1 the device's */
	const char *config;
	int nb_overrides;
	char **overrides;
};

/* The droce side of a run: the stack and the RC objects of one QP. */
struct rcapp {
	struct droce_stack *stack;
	struct droce_rc_device *dev;
	struct droce_cm *cm;            /* rping: the port's connection manager */
	struct droce_pd *pd;
	struct droce_mr *mr;
	struct droce_cq *cq;            /* send and receive completions */
	struct droce_qp *qp;
	struct droce_qp_init_attr qp_init;      /* what qp was made with, for a new one */
	int qp_access;
	uint8_t *buf;
	size_t buf_len;
	unsigned int timeout_s;
	bool workers_inline;            /* the main lcore runs the workers' rounds */
	uint64_t rx_seen;               /* RoCE packets counted by rcapp_idle() */
};

/* Set by SIGINT/SIGTERM: every wait gives up. */
extern volatile sig_atomic_t rcapp_interrupted;

/* ---- rc_setup.c: the RC objects ------------------------------------------------ */

/* What a QP is connected with (ibv_modify_qp's RTR and RTS attributes). */
struct rcapp_conn {
	uint8_t dgid[16];
	uint32_t dest_qpn;
	uint32_t rq_psn;                /* the peer's first PSN */
	uint32_t sq_psn;                /* ours */
	enum droce_mtu mtu;
	uint8_t hop_limit;
	uint8_t min_rnr_timer;
	uint8_t max_dest_rd_atomic;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t max_rd_atomic;
};

/* Buffer, PD (unless app->pd is there already), MR, one CQ and an RC QP in INIT with @p qp_access, work
 * requests of up to @p max_sge entries.
 */
int rcapp_qp_create(struct rcapp *app, size_t buf_len, int mr_access, uint32_t max_send_wr,
		    uint32_t max_recv_wr, uint32_t max_sge, int qp_access, char *err,
		    size_t errlen);
/* INIT -> RTR, and on to RTS unless @p rtr_only. */
int rcapp_qp_connect(struct rcapp *app, const struct rcapp_conn *c, bool rtr_only,
		     char *err, size_t errlen);
/* Post @p n receives of @p len bytes at the start of the buffer; returns how many went. */
uint32_t rcapp_post_recvs(struct rcapp *app, uint64_t wr_id, uint32_t len, uint32_t n);
int rcapp_post_send(struct rcapp *app, uint64_t wr_id, uint32_t len);
/* The QP destroyed and made again, as it was, in INIT (a new QPN). */
int rcapp_qp_renew(struct rcapp *app, char *err, size_t errlen);
/* Destroy what rcapp_qp_create() made (what exists of it). */
void rcapp_qp_destroy(struct rcapp *app);
/* One round of the stack's control lcore, and of its workers' with
 * --workers-inline; returns what the rounds did.
 */
unsigned int rcapp_poll(struct rcapp *app);
/* One round of the stack's control lcore. Returns true when RoCE packets
 * arrived since the last call (the peer is alive).
 */
bool rcapp_idle(void *arg);
/* Run the stack until port 0's link is up (a memif peer connected), at
 * most @p timeout_s; whether it is.
 */
bool rcapp_wait_link(struct rcapp *app, unsigned int timeout_s);
/* Whether port 0's link is up now. */
bool rcapp_link_up(const struct rcapp *app);
/* Keep the stack running for @p ms, to answer what is still on its way. */
void rcapp_linger(struct rcapp *app, unsigned int ms);
/* The peer's GID must be IPv4-mapped (RoCEv2 over IPv4); else a message. */
int rcapp_gid_check(const uint8_t gid[16], const char *who, char *err, size_t errlen);
/* The largest path MTU the port carries (as rxe takes it from its netdev). */
enum droce_mtu rcapp_port_mtu(const struct rcapp *app);
/* Print the transport's counters (one line). */
void rcapp_print_stats(const struct rcapp *app);
/* Micro- and milliseconds on a monotonic clock. */
uint64_t rcapp_now_us(void);
uint64_t rcapp_now_ms(void);

/* ---- exchange.c: the out-of-band TCP connection --------------------------------- */

/* One TCP connection of an exchange. Every wait lasts at most timeout_s
 * seconds in which neither the awaited bytes nor, through idle(), any
 * RoCE packet came; idle() keeps droce running meanwhile.
 */
struct oob {
	int fd;
	unsigned int timeout_s;
	bool (*idle)(void *arg);
	void *idle_arg;
	char peer[INET_ADDRSTRLEN + 8]; /* "a.b.c.d:port" */
};

void oob_init(struct oob *o, unsigned int timeout_s, bool (*idle)(void *), void *arg);
/* Listen on every address at @p port and take one connection. */
int oob_accept(struct oob *o, uint16_t port, char *err, size_t errlen);
/* Connect to @p ip:@p port; a refusal is tried again until the timeout. */
int oob_connect(struct oob *o, struct in_addr ip, uint16_t port, char *err, size_t errlen);
/* Exactly @p len bytes (@p what names them in messages). */
int oob_read(struct oob *o, void *buf, size_t len, const char *what, char *err, size_t errlen);
/* What comes until @p len bytes or the peer closes; returns the bytes read or -1. */
long oob_read_upto(struct oob *o, void *buf, size_t len, const char *what, char *err,
		   size_t errlen);
int oob_write(struct oob *o, const void *buf, size_t len, const char *what, char *err,
	      size_t errlen);
void oob_close(struct oob *o);
/* Half-close, wait at most @p wait_ms without running idle() for the peer's
 * close, then close; true when the peer closed (or half-closed) in time.
 */
bool oob_part(struct oob *o, unsigned int wait_ms);
/* Leave the peer of @p oob in an order a net_memif link survives (see
 * rc_setup.c); @p server: the end that stops its port second.
 */
void rcapp_part(struct rcapp *app, struct oob *oob, bool server);

/* ---- the modes ------------------------------------------------------------------ */

/* Each returns the process's exit status: 0, 1 (run time) or 2 (bad argument). */
int rcapp_pingpong(struct rcapp *app, const struct rcapp_opts *o);
int rcapp_perftest(struct rcapp *app, const struct rcapp_opts *o);
int rcapp_stress(struct rcapp *app, const struct rcapp_opts *o);
/* rping or ucmatose (o->mode), through droce_cm.h. */
int rcapp_cm_tool(struct rcapp *app, const struct rcapp_opts *o);

#endif /* DROCE_RC_APP_H */
