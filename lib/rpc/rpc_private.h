/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_RPC_PRIVATE_H
#define DROCE_RPC_PRIVATE_H

/*
 * lib/rpc: the hcom4db.h API (hcom4db.c) over sessions (rpc_session.c)
 * that worker threads run (rpc_engine.c), on a transport: kernel TCP
 * (rpc_tcp.c) for now. Frames are rpc_frame.h's.
 *
 * Every session belongs to one worker thread, which does all of its I/O,
 * runs its handlers and keeps its calls; other threads hand it work
 * through the worker's lock-free task queue.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include <rte_common.h>
#include <rte_log.h>
#include <rte_timer.h>

#include "droce_core.h"
#include "hcom4db.h"
#include "rpc_frame.h"

extern int rpc_logtype;

#define RPC_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rpc_logtype, "droce.rpc: " fmt "\n", ##__VA_ARGS__)

/* ---- configuration (rpc_conf.c) ------------------------------------------------ */

#define RPC_NAME_MAX 64
#define RPC_INFO_MAX 64
#define RPC_SEGSIZE_MAX 943718400u
#define RPC_SEGCOUNT_MAX 65535u
/* Calls in flight on a session whose segment count is 0 (none
 * registered): hcom's default count.
 */
#define RPC_DEFAULT_IN_FLIGHT 1024
/* A HELLO's payload at most: name, info, their NULs, the segment size. */
#define RPC_HELLO_MAX_PAYLOAD (2 * (RPC_NAME_MAX + 1) + 4)
/* A TLS record's first byte when it carries a handshake (a ClientHello). */
#define RPC_TLS_HANDSHAKE_RECORD 0x16
/* How long the opening of a session (connect, HELLO, WELCOME) may take. */
#define RPC_OPENING_TIMEOUT_MS 10000
/* Sessions a server keeps waiting for their HELLO. Over RDMA one REQ, a
 * packet, makes a session with its QP and buffers (some 400 KiB): a
 * flood of REQs never followed by a HELLO would fill the memory for the
 * opening timeout. Past this many the oldest waiting one is ended, so
 * that a real client, whose HELLO follows its REQ within a round trip,
 * still gets in while a flood goes on; while as many ended ones still
 * hold their memory, new REQs are refused.
 */
#define RPC_OPENING_MAX 64

enum rpc_transport {
	RPC_TRANSPORT_RDMA,
	RPC_TRANSPORT_TCP,
};

struct rpc_conf {
	char name[RPC_NAME_MAX + 1];
	uint16_t range_first, range_last;
	enum rpc_transport type;
	uint32_t segsize, segcount;
	OckRpcClientHandler on_new, on_break;
	struct droce_workers workers;   /* worker.thread.groups and .cpuset */
	bool busy_poll;
	bool rndv;
	OckRpcRndvMemAllocate rndv_alloc;
	OckRpcRndvMemFree rndv_free;
	unsigned int heartbeat_idle_s;
	bool tls;
	/* With TLS: the mask's three callbacks. */
	OckRpcTlsGetCAAndVerify tls_ca;
	OckRpcTlsGetCert tls_cert;
	OckRpcTlsGetPrivateKey tls_key;
	char info[RPC_INFO_MAX + 1];    /* a client's client.create.info */
	bool self_polling;
};

/* Read @p c (may be NULL) over the defaults; a refused value is logged
 * with its key and what is allowed. @p client: a client's configuration.
 */
OckRpcStatus rpc_conf_read(const OckRpcCreateConfig *c, bool client, struct rpc_conf *conf);

/* ---- workers and their task queues (rpc_engine.c) ------------------------------- */

/* Work handed to a worker: run there, in the order pushed. */
struct rpc_task {
	_Atomic(struct rpc_task *) next;
	void (*run)(struct rpc_task *t);
};

/* Many producers, the worker consumes (intrusive, lock-free). */
struct rpc_task_queue {
	_Atomic(struct rpc_task *) head;
	struct rpc_task *tail;
	struct rpc_task stub;
};

struct rpc_session;
struct rpc_rdma_link;
struct rpc_tls;
struct rpc_tls_ctx;
struct rpc_sealed;
struct rpc_one_sided;
struct droce_mr;
TAILQ_HEAD(rpc_session_list, rpc_session);
TAILQ_HEAD(rpc_one_sided_list, rpc_one_sided);

struct rpc_engine;

/* A readiness callback registered with a worker's epoll. */
struct rpc_watch {
	void (*ready)(struct rpc_watch *w, uint32_t events);
	/* Hosted workers: on the worker's ready list (rpc_worker_ready()). */
	TAILQ_ENTRY(rpc_watch) ready_link;
	bool queued;
};
TAILQ_HEAD(rpc_watch_list, rpc_watch);

struct rpc_worker {
	struct rpc_engine *engine;
	unsigned int index;
	pthread_t thread;
	bool thread_started;
	int epfd, wakefd;
	struct rpc_task_queue tasks;
	struct rpc_session_list sessions;
	unsigned int sessions_gen;      /* counts removals from the list */
	/* Ended in this round: let go of after it, so that an event of the
	 * round's batch never finds its session freed.
	 */
	struct rpc_session_list ended;
	bool batching;                  /* frames queued now go out at the pass's end */
	struct rpc_session *flush_first; /* sessions with frames due */
	atomic_bool stop;
	/* After its thread ended (closed), tasks run on the pusher's thread;
	 * pushers counts the pushes under way when it closes.
	 */
	atomic_bool closed;
	atomic_int pushers;
	/* About to sleep in epoll_wait: a pusher writes the eventfd only then. */
	atomic_bool sleeping;
	uint64_t next_scan_ns;          /* heartbeats and call deadlines */
	struct rte_timer scan_timer;    /* hosted, event mode: wakes the control lcore */
	uint64_t timer_ns;              /* when scan_timer fires; 0: not armed */
	/* Hosted: watches a source on the control lcore said are ready, run
	 * in the next round without a system call.
	 */
	struct rpc_watch_list ready;
	unsigned int nb_ready;
	/* The clock as its round last read it (what frames in stamp their
	 * session with); hosted, the TSC says when to read it again, and
	 * then the round asks epoll about the rest (CM channels, listeners).
	 */
	uint64_t round_ns;
	uint64_t next_read_tsc;
	/* Hosted on a busy-polling control lcore: rounds since the last
	 * look at the TSC.
	 */
	bool host_busy_poll;
	unsigned int rounds_unclocked;
};

/* Its threads end with rpc_engine_destroy(); its memory with the last
 * reference (the creator's, and each session's: a cloned context may
 * reply after the end).
 */
struct rpc_engine {
	atomic_int refs;
	bool busy_poll;
	/* Its workers have no thread of their own: their rounds run on
	 * droce's control lcore, which owns their sessions' QPs (RDMA).
	 */
	bool hosted;
	unsigned int nb_workers;
	atomic_uint next;               /* round robin of new sessions */
	struct rpc_worker *workers;
};


/* An RDMA engine's workers are hosted on droce's control lcore (the
 * stack must be up: rpc_rdma_start()); a TCP engine's are threads.
 */
int rpc_engine_create(const struct rpc_conf *conf, const char *name, struct rpc_engine **out);
void rpc_engine_destroy(struct rpc_engine *e);
void rpc_engine_ref(struct rpc_engine *e);
void rpc_engine_unref(struct rpc_engine *e);
struct rpc_worker *rpc_engine_pick(struct rpc_engine *e);
/* Run @p t on @p w. */
void rpc_worker_push(struct rpc_worker *w, struct rpc_task *t);
/* The worker this thread is, or NULL. */
struct rpc_worker *rpc_worker_self(void);
/* Waiting here for @p w would never end: this thread runs @p w's rounds
 * (its own worker, or the control lcore that hosts it).
 */
bool rpc_worker_would_wait_for(const struct rpc_worker *w);
/* One round of a hosted worker, on the control lcore: tasks, deadlines,
 * ready sessions; nonzero when it had work.
 */
unsigned int rpc_worker_hosted_round(struct rpc_worker *w);
int rpc_worker_watch(struct rpc_worker *w, int fd, uint32_t events, struct rpc_watch *watch);
int rpc_worker_rewatch(struct rpc_worker *w, int fd, uint32_t events, struct rpc_watch *watch);
void rpc_worker_unwatch(struct rpc_worker *w, int fd);
/* Hosted workers, on the control lcore: @p watch's ready() runs in @p w's
 * next round (once, however often it is called before); and not, once
 * unreadied.
 */
void rpc_worker_ready(struct rpc_worker *w, struct rpc_watch *watch);
void rpc_worker_unready(struct rpc_worker *w, struct rpc_watch *watch);
/* Write @p s's frames when the worker's batch (its tasks, or what one
 * session's input makes) ends; at once outside a batch.
 */
void rpc_worker_flush_later(struct rpc_worker *w, struct rpc_session *s);
/* Write now what the worker's batch has queued so far, on its thread: for
 * a session whose input keeps coming.
 */
void rpc_worker_flush_queued(struct rpc_worker *w);
/* Let go of @p s (ended) once the worker's round is over. */
void rpc_worker_bury(struct rpc_worker *w, struct rpc_session *s);
/* Look at the worker's sessions again by @p when_ns at the latest. */
void rpc_worker_scan_by(struct rpc_worker *w, uint64_t when_ns);

uint64_t rpc_now_ns(void);
/* The clock as @p w's round read it: what its sessions' heartbeats and
 * deadlines are measured by (never behind a time it stamped).
 */
uint64_t rpc_worker_now(const struct rpc_worker *w);

/* ---- transports ------------------------------------------------------------------ */

struct rpc_session;

/* What a session's connection does, on the session's worker. Both
 * transports carry the frames as one ordered byte stream.
 */
struct rpc_transport_ops {
	/* Adopted: watch what it waits on and take what came already. */
	int (*attach)(struct rpc_session *s);
	/* Take what came now (before a heartbeat verdict). */
	void (*poll)(struct rpc_session *s);
	/* Write what the connection takes of the session's queue. */
	void (*flush)(struct rpc_session *s);
	/* Write what the connection takes of @p len bytes (TLS records):
	 * how many, -EAGAIN when none now (it calls rpc_session_flush()
	 * when it can take more), or another -errno.
	 */
	ssize_t (*write)(struct rpc_session *s, const void *data, size_t len);
	/* Everything went: stop asking to write (NULL: nothing to do). */
	void (*written)(struct rpc_session *s);
	/* A BYE, now, if the connection takes it. */
	void (*say_bye)(struct rpc_session *s);
	/* The session ended: stop watching, close the connection. */
	void (*detach)(struct rpc_session *s);
	/* After the worker's round: free what detach could not while a
	 * callback of the connection may be on the stack (NULL: nothing).
	 */
	void (*release)(struct rpc_session *s);
};

/* ---- sessions (rpc_session.c) --------------------------------------------------- */

enum rpc_session_state {
	SESSION_HELLO,          /* server: accepted, its HELLO not read yet */
	SESSION_OPEN,           /* calls go both ways */
	SESSION_ENDED,          /* closed: broken, said BYE, or ended here */
};

enum rpc_call_state {
	CALL_QUEUED,            /* handed to the worker */
	CALL_SENT,              /* on the wire, its response awaited */
	CALL_ANSWERING,         /* the worker writes its result */
	CALL_DONE,
	CALL_ABANDONED,         /* its synchronous caller gave up */
};

enum rpc_response_mode {
	RESPONSE_NONE,          /* none awaited */
	RESPONSE_ALLOC,         /* the library allocates it */
	RESPONSE_BUFFER,        /* into the caller's buffer */
	RESPONSE_IOV,           /* into the caller's buffers, in order */
};

struct rpc_call {
	struct rpc_task task;
	TAILQ_ENTRY(rpc_call) link;
	struct rpc_session *s;
	uint64_t seq;
	struct rpc_out *out;            /* its frame, until it goes out */
	enum rpc_response_mode mode;
	OckRpcMessage *response;        /* where the answer is told */
	size_t response_count;          /* RESPONSE_IOV: buffers at response */
	bool async;
	OckRpcCallDone done;
	uint64_t deadline_ns;           /* 0: none */
	atomic_int state;
	OckRpcStatus status;
	struct rpc_sealed *sealed[RPC_RNDV_MAX];        /* its sealed rendezvous buffers */
};
TAILQ_HEAD(rpc_call_list, rpc_call);

/* Bytes waiting to go out, and who to tell when they went. */
struct rpc_out {
	STAILQ_ENTRY(rpc_out) link;
	uint8_t *buf;                   /* bytes, behind the struct */
	size_t len, off;
	OckRpcCallDone done;            /* an asynchronous reply's */
	struct rpc_call *call;          /* a call that awaits no response */
	bool cached;                    /* RPC_OBJ_OUT's size, from the cache */
	uint8_t bytes[];
};
STAILQ_HEAD(rpc_out_list, rpc_out);

/* Outs of up to this many bytes come from the thread's cache (a 64-byte
 * call's frame and a few hundred bytes more).
 */
#define RPC_OUT_CACHED_BYTES 512

/* An out of @p len bytes, in one allocation with them; rpc_out_free()
 * ends it.
 */
struct rpc_out *rpc_out_alloc(size_t len);
void rpc_out_free(struct rpc_out *o);

/* The objects each call makes and ends, kept per thread (rpc_cache.c). */
enum rpc_obj_kind {
	RPC_OBJ_CALL,                   /* struct rpc_call */
	RPC_OBJ_CTX,                    /* struct rpc_ctx */
	RPC_OBJ_OUT,                    /* an rpc_out of RPC_OUT_CACHED_BYTES */
	RPC_OBJ_KINDS
};

/* An object of @p kind, not zeroed; NULL when memory ran out. */
void *rpc_obj_get(enum rpc_obj_kind kind);
/* End @p obj (NULL: nothing), of @p kind. */
void rpc_obj_put(enum rpc_obj_kind kind, void *obj);

struct rpc_server;

struct rpc_session {
	struct rpc_watch watch;
	TAILQ_ENTRY(rpc_session) link;          /* its worker's */
	TAILQ_ENTRY(rpc_session) server_link;   /* its server's */
	TAILQ_ENTRY(rpc_session) opening_link;  /* its server's, until its HELLO */
	bool opening;                   /* on that list (the server's lock) */
	bool dropped;                   /* ended for a newer one (rpc_server_admit()) */
	struct rpc_worker *w;
	struct rpc_server *server;      /* server side: the one it belongs to */
	bool client;
	enum rpc_session_state state;
	const struct rpc_transport_ops *ops;
	int fd;                         /* TCP */
	struct rpc_rdma_link *rdma;     /* RDMA, until released */
	struct rpc_tls *tls;            /* TLS on it: the frames go through it */
	/* A TLS client's sealed rendezvous buffers that wait for a call. */
	pthread_mutex_t sealed_lock;
	struct rpc_sealed *sealed_free;
	unsigned int nb_sealed_free;
	uint16_t droce_port;            /* RDMA: the port of its QP */
	bool attached;                  /* its connection is up, until detach */
	uint32_t max_payload;           /* what it takes: its segment size */
	uint32_t peer_max_payload;      /* what the peer takes (the opening says) */
	unsigned int heartbeat_idle_s;
	OckRpcClientHandler on_break;
	bool announced;                 /* on_new ran: on_break will */
	bool counted_open;              /* in the counters' opened sessions */
	bool on_purpose;                /* it ends as asked: here, or by the peer's BYE */
	/* Bytes read and not yet taken; the frame being taken ends at
	 * rx_frame_end. A clone of its context takes the buffer with it
	 * (rx_detached) and leaves the bytes after it in a new one.
	 */
	uint8_t *rx;
	size_t rx_len, rx_cap, rx_frame_end;
	bool rx_detached;
	struct rpc_out_list out;
	bool want_out;                  /* EPOLLOUT asked for */
	/* Frames queued in a batch of the worker's wait for its end, to go
	 * out together (rpc_worker_flush_later()).
	 */
	bool flush_due;
	struct rpc_session *flush_next;
	/* rpc_session_flush() runs: a frame queued from one of its callbacks
	 * makes it write again rather than write the same frames twice.
	 */
	bool flushing, flush_again;
	bool closing;                   /* its last frames are being written */
	struct rpc_call_list calls;     /* sent, awaiting their responses */
	/* TLS: one-sided operations whose pieces await SEALED_DONEs. */
	struct rpc_one_sided_list sealed_ops;
	uint64_t sealed_op_seq;
	_Atomic uint64_t next_seq;
	uint64_t last_rx_ns, probe_ns;  /* probe_ns: a HEARTBEAT unanswered since */
	_Atomic uint64_t up_ctx;
	_Atomic int64_t timeout_ms;
	/* Calls started and not ended, and how many may be: a full session
	 * refuses the next (its caller tries again, as hcom's callers do).
	 */
	atomic_int in_flight;
	int max_in_flight;
	atomic_int refs;
	atomic_bool ending;             /* its end asked; no new calls */
	atomic_bool end_queued;
	OckRpcStatus end_asked;         /* what its calls fail with then */
	bool end_quiet;
	struct rpc_task end_task, adopt_task;
	OckRpcStatus end_status;        /* once ENDED */
	char peer[64];
};

/* A received REQUEST and its answer (OckRpcServerContext). */
struct rpc_ctx {
	struct rpc_task task;           /* a reply handed over */
	struct rpc_session *s;
	uint64_t seq;
	uint16_t service;
	bool want_response;
	OckRpcMessage msg;
	bool in_handler;                /* msg lies in the receive buffer */
	uint8_t *held_rx;               /* cloned: that buffer, now its own */
	atomic_int refs;                /* the handler's, and each clone's */
	atomic_bool replied;
	struct rpc_out *reply;          /* handed over with the task */
	struct rpc_rndv_in *rndv;       /* a rendezvous message's buffers */
};

/* A session on TCP socket @p fd, or (fd -1) one whose caller sets its
 * ops and link before adopting it.
 */
struct rpc_session *rpc_session_new(struct rpc_worker *w, int fd, bool client,
				    const struct rpc_conf *conf, const char *peer);
/* @p s opened (its HELLO taken, or a client's WELCOME read): counted. */
void rpc_session_counted_open(struct rpc_session *s);
/* Take @p s onto its worker (from any thread). */
void rpc_session_adopt(struct rpc_session *s);
/* On its worker: a whole frame arrived; @p o was written; the end. */
void rpc_session_frame_in(struct rpc_session *s, const struct rpc_frame *f, uint8_t *payload);
/* Room for @p need bytes in the receive buffer (never less than asked). */
bool rpc_session_rx_room(struct rpc_session *s, size_t need);
/* Take the whole frames in the receive buffer; the rest stays. */
void rpc_session_take_frames(struct rpc_session *s);
/* On its worker: bytes from the peer came (a READ's, say), so it lives. */
void rpc_session_peer_alive(struct rpc_session *s);
/* @p len bytes came: they prove the peer alive and go to the frames. */
void rpc_session_bytes_in(struct rpc_session *s, const void *data, size_t len);
/* How a client's opening reaches the server, before a worker has it:
 * each call moves all of @p len bytes or fails (0 or a negative errno).
 */
struct rpc_opening {
	int (*write_all)(void *arg, const void *buf, size_t len);
	int (*read_exact)(void *arg, void *buf, size_t len);
	void *arg;
	const char *where;              /* for messages: the server's address and name */
};

/* HELLO with @p conf's server name, info and segment size; the WELCOME
 * read exactly (the worker reads what follows it), with the server's
 * segment size.
 */
OckRpcStatus rpc_session_open_client(const struct rpc_opening *io, const struct rpc_conf *conf,
				     struct rpc_tls *tls, uint32_t *server_max);
/* After the worker's round: its connection's last resources. */
void rpc_session_release(struct rpc_session *s);
/* Write what the connection takes of the queue (through TLS if on). */
void rpc_session_flush(struct rpc_session *s);
void rpc_session_out_sent(struct rpc_session *s, struct rpc_out *o);
/* On its worker: frame @p f and its payload queued to go out. */
void rpc_session_send(struct rpc_session *s, const struct rpc_frame *f, const void *payload);
void rpc_session_close(struct rpc_session *s, OckRpcStatus status);
void rpc_session_ref(struct rpc_session *s);
void rpc_session_unref(struct rpc_session *s);
/* End @p s (from any thread): its calls fail with @p status; @p quiet:
 * without its break handler (the application asked).
 */
void rpc_session_end(struct rpc_session *s, OckRpcStatus status, bool quiet);
/* On its worker: the heartbeat and the calls' deadlines. */
void rpc_session_scan(struct rpc_session *s, uint64_t now);
/* Start @p c (built by the caller): from any thread. */
OckRpcStatus rpc_session_call(struct rpc_session *s, struct rpc_call *c);
OckRpcStatus rpc_ctx_reply(struct rpc_ctx *ctx, uint16_t service, const OckRpcMessage *reply,
			   const OckRpcCallDone *done);
void rpc_ctx_unref(struct rpc_ctx *ctx);
/* A context for REQUEST @p f (its caller's reference). */
struct rpc_ctx *rpc_ctx_new(struct rpc_session *s, const struct rpc_frame *f);
/* Answer REQUEST @p f with @p status alone, if its caller waits. */
void rpc_session_refuse(struct rpc_session *s, const struct rpc_frame *f, OckRpcStatus status);

/* Rendezvous messages (rpc_rndv.c), on the server. */
struct rpc_rndv_in;
/* A buffer of sealed bytes (a TLS client's rendezvous buffer, a sealed
 * one-sided piece): its ciphertext, registered for the peer's READ or
 * our WRITE, reused from call to call.
 */
struct rpc_sealed {
	struct rpc_sealed *next;
	uint8_t *mem;
	size_t cap;
	struct droce_mr *mr;
};
/* One of @p s's sealed buffers of @p len bytes or more; NULL (logged)
 * when none can be made.
 */
struct rpc_sealed *rpc_sealed_get(struct rpc_session *s, uint32_t len);
/* Back to @p s for the next call (or freed, past a few kept). */
void rpc_sealed_put(struct rpc_session *s, struct rpc_sealed *b);
/* @p s ends: its kept ones go. */
void rpc_sealed_pool_free(struct rpc_session *s);
/* A REQUEST with descriptors: buffers, READs, then the handler. */
void rpc_rndv_take(struct rpc_session *s, const struct rpc_frame *f, const uint8_t *payload);
/* OckRpcServerCleanupRndvCtx. */
int rpc_rndv_cleanup(struct rpc_ctx *ctx);
/* The context ends: its buffers go back. */
void rpc_rndv_release(struct rpc_rndv_in *in);
/* Keep @p ctx's message past its handler; false if out of memory. */
bool rpc_ctx_clone(struct rpc_ctx *ctx);
/* A synchronous call's end, by its caller. */
void rpc_call_release(struct rpc_call *c);

/* Wait (spin, then sleep) until *state is one of @p done_mask's bits
 * or @p deadline_ns passes (0: never). Returns the state seen.
 */
int rpc_wait_state(atomic_int *state, unsigned int done_mask, uint64_t deadline_ns);
/* Wait until *count is 0. */
void rpc_wait_zero(atomic_int *count);
void rpc_wake_state(atomic_int *state);

/* ---- memory regions (rpc_mr.c) --------------------------------------------------- */

struct droce_mr;
/* lib/rc's registration, on droce port @p port, of the hcom region with
 * @p key that holds [addr, addr + len) (made there on first need); NULL
 * when no region is such, or it cannot be registered (logged).
 */
struct droce_mr *rpc_mr_droce(uint32_t key, uintptr_t addr, uint64_t len, uint16_t port);
/* Whether [addr, addr + len) lies in a region registered on droce port
 * @p port with remote key @p rkey, as a peer's RDMA access would be
 * checked; if so the regions stay as they are (none destroyed) until
 * rpc_mr_unlock_remote().
 */
bool rpc_mr_lock_remote(uint32_t rkey, uint64_t addr, uint32_t len, uint16_t port);
void rpc_mr_unlock_remote(void);

/* ---- one-sided operations (rpc_one_sided.c) ------------------------------------ */

/* On its worker: a SEALED_WRITE, SEALED_READ or SEALED_DONE came. */
void rpc_one_sided_take(struct rpc_session *s, const struct rpc_frame *f,
			const uint8_t *payload);
/* @p s ended: its sealed operations' pieces that await answers fail. */
void rpc_one_sided_session_ended(struct rpc_session *s);

/* ---- counters (rpc_stats.c; droce_rpc.h says what each counts) ----------------- */

enum rpc_counter {
	RPC_SESSIONS_OPENED,
	RPC_SESSIONS_ENDED,
	RPC_CALLS_MADE,
	RPC_CALLS_SERVED,
	RPC_FRAMES_OUT,
	RPC_FRAMES_IN,
	RPC_BYTES_OUT,
	RPC_BYTES_IN,
	RPC_ERR_REFUSED,
	RPC_ERR_BROKEN,
	RPC_ERR_DECRYPT,
	RPC_ERR_PROTOCOL,
	RPC_ERR_TIMEOUT,
	RPC_HEARTBEATS_SENT,
	RPC_HEARTBEATS_ANSWERED,
	RPC_TLS_HANDSHAKES,
	RPC_TLS_FAILURES,
	RPC_OPENINGS_DROPPED,
	RPC_COUNTER_MAX,
};

/* A thread's own counters: only it writes them, so a count is a plain
 * add, not a locked instruction on a line every worker shares.
 */
struct rpc_counter_block {
	atomic_uint_fast64_t c[RPC_COUNTER_MAX];
	struct rpc_counter_block *next;
};

extern __thread struct rpc_counter_block *rpc_thread_counters;
/* This thread's block, made on its first count (NULL without memory). */
struct rpc_counter_block *rpc_counters_attach(void);
/* The process's count of @p c: every thread's, those that ended too. */
uint64_t rpc_counter_read(enum rpc_counter c);
/* A count where the thread has no block of its own. */
void rpc_count_shared(enum rpc_counter c, uint64_t n);

static inline void
rpc_count(enum rpc_counter c, uint64_t n)
{
	struct rpc_counter_block *b = rpc_thread_counters;

	if (unlikely(b == NULL) && (b = rpc_counters_attach()) == NULL) {
		rpc_count_shared(c, n);
		return;
	}
	atomic_store_explicit(&b->c[c], atomic_load_explicit(&b->c[c], memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* A BYE went out (the transports' say_bye). */
static inline void
rpc_count_bye(void)
{
	rpc_count(RPC_FRAMES_OUT, 1);
	rpc_count(RPC_BYTES_OUT, RPC_FRAME_HDR_SIZE);
}

/* A session ended with @p status (@p on_purpose: asked here or by its
 * peer's BYE, not broken): counted, and by its kind.
 */
void rpc_count_session_end(OckRpcStatus status, bool on_purpose);
struct droce_stack;
/* @p stack's stats line and JSON get the counters. */
int rpc_stats_register(struct droce_stack *stack);

/* ---- servers (hcom4db.c) ------------------------------------------------------ */

struct rpc_rdma_listener;

struct rpc_server {
	struct rpc_watch watch;         /* the listening socket */
	struct rpc_rdma_listener *rdma; /* RDMA: its CM listener */
	struct rpc_conf conf;
	char ip[64];
	uint16_t port;
	int listen_fd;
	struct rpc_engine *engine;
	_Atomic(OckRpcMsgHandler) services[RPC_SERVICE_MAX + 1];
	_Atomic(OckRpcMsgRndvHandler) rndv_services[RPC_SERVICE_MAX + 1];
	struct rpc_tls_ctx *tls;        /* its certificate and trust, with TLS */
	bool started;
	atomic_bool destroying;
	pthread_mutex_t lock;           /* its sessions' list */
	struct rpc_session_list sessions;
	atomic_int nb_sessions;
	struct rpc_session_list opening; /* its sessions without a HELLO, oldest first */
	unsigned int nb_opening;
	unsigned int nb_dropping;       /* ended for newer ones, not yet gone */
};

/* A session of @p srv: accepted (add), its HELLO taken (opened: the
 * new-client handler), ended.
 */
void rpc_server_session_add(struct rpc_server *srv, struct rpc_session *s);
/* Room for one more session waiting for its HELLO (RPC_OPENING_MAX): the
 * oldest waiting one may be ended for it; false, refuse the peer.
 */
bool rpc_server_admit(struct rpc_server *srv);
int rpc_server_session_opened(struct rpc_server *srv, struct rpc_session *s, const char *info);
void rpc_server_session_ended(struct rpc_server *srv, struct rpc_session *s);

#endif /* DROCE_RPC_PRIVATE_H */
