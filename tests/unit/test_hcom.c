/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The hcom4db.h API over TCP, written as an hcom4db application would
 * use it: a server and its clients in this process, talking over the
 * loopback of a network namespace of the test's own where it may make
 * one (as root), else over this host's loopback. Peers that stop
 * answering are played with raw sockets that speak the opening and then
 * nothing.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "droce_rpc.h"
#include "hcom4db.h"
#include "hcom_checks.h"
#include "private_loopback.h"
#include "rpc_frame.h"

#define LOCAL_IP "127.0.0.1"
#define SERVER_NAME "droce-test"
#define SEGSIZE 65536

/* ---- helpers ---------------------------------------------------------------------- */

/* Config pairs, as an application writes them. */
struct cfg {
	RpcConfigPair pairs[24];
	OckRpcCreateConfig c;
};

static void
cfg_init(struct cfg *g)
{
	memset(g, 0, sizeof(*g));
	g->c.mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS;
	g->c.configs.pairs = g->pairs;
}

static void
cfg_set(struct cfg *g, const char *key, const char *value)
{
	g->pairs[g->c.configs.size++] = (RpcConfigPair){ key, value };
}

static void
cfg_tcp(struct cfg *g)
{
	cfg_init(g);
	cfg_set(g, OCK_RPC_STR_SERVER_NAME, SERVER_NAME);
	cfg_set(g, OCK_RPC_STR_COMMUNICATION_TYPE, "TCP");
	cfg_set(g, OCK_RPC_STR_ENABLE_TLS, "no");
	cfg_set(g, OCK_RPC_STR_SERVER_PORT_RANGE, "21000-21999");
}

/* ---- the server under test ---------------------------------------------------------- */

enum {
	SVC_ECHO = 0,           /* answers with the request */
	SVC_SINK = 1,           /* one-way: counts and checks, never answers */
	SVC_SILENT = 2,         /* takes a call and never answers */
	SVC_LATER = 3,          /* clones the context; a thread answers later */
	SVC_WHO = 4,            /* answers with its client's up ctx, sets it */
	SVC_LONG = 5,           /* answers with 1000 bytes */
	SVC_BIG = 6,            /* tries to answer with 4096 bytes */
	SVC_CHAIN = 7,          /* keeps calls 0 and 1; call 2 answers them from callbacks */
	SVC_NONE = 999,         /* nothing is added here */
};

static struct {
	OckRpcServer server;
	uint16_t port;
	atomic_int news, breaks, sinks, sink_bytes_bad;
	OckRpcClient last_new;
	char last_info[80];
	atomic_int later_pending;
	atomic_int refuse_next, big_replies;
	OckRpcStatus big_status;
	OckRpcServerContext later[64];
	pthread_mutex_t later_lock;
	OckRpcServerContext chain[2];
	atomic_int chain_kept;
} S;

static int
on_new(OckRpcClient client, uint64_t usr, const char *payload)
{
	(void)usr;
	S.last_new = client;
	snprintf(S.last_info, sizeof(S.last_info), "%s", payload);
	atomic_fetch_add(&S.news, 1);
	return atomic_exchange(&S.refuse_next, 0);
}

static int
on_break(OckRpcClient client, uint64_t usr, const char *payload)
{
	(void)client;
	(void)usr;
	(void)payload;
	atomic_fetch_add(&S.breaks, 1);
	return 0;
}

/* Replies, then cleans up as some users do (it is a no-op). */
static void
svc_echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	assert_int_equal(OckRpcServerReply(ctx, SVC_ECHO, &msg, NULL), OCK_RPC_OK);
	OckRpcServerCleanupCtx(ctx);
}

/* A one-way message's bytes are i * 7 + len, each. */
static void
svc_sink(OckRpcServerContext ctx, OckRpcMessage msg)
{
	const uint8_t *p = msg.data;

	(void)ctx;
	for (size_t i = 0; i < msg.len; i++)
		if (p[i] != (uint8_t)(i * 7 + msg.len))
			atomic_fetch_add(&S.sink_bytes_bad, 1);
	atomic_fetch_add(&S.sinks, 1);
}

static void
svc_silent(OckRpcServerContext ctx, OckRpcMessage msg)
{
	(void)ctx;
	(void)msg;
}

static void
svc_later(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcServerContext kept = OckRpcCloneCtx(ctx);

	(void)msg;
	assert_true(kept != 0);
	/* Kept first, counted then: whoever sees the count sees the context. */
	pthread_mutex_lock(&S.later_lock);
	S.later[atomic_load(&S.later_pending)] = kept;
	atomic_fetch_add(&S.later_pending, 1);
	pthread_mutex_unlock(&S.later_lock);
}

static void
svc_who(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcClient client = 0;
	uint64_t up = 0;
	OckRpcMessage r = { &up, sizeof(up) };
	uint64_t next;

	assert_int_equal(msg.len, sizeof(next));
	memcpy(&next, msg.data, sizeof(next));
	assert_int_equal(OckRpcGetClient(ctx, &client), 0);
	assert_true(client == S.last_new);
	assert_int_equal(OckRpcGetUpCtx(client, &up), 0);
	assert_int_equal(OckRpcSetUpCtx(client, next), 0);
	assert_int_equal(OckRpcServerReply(ctx, SVC_WHO, &r, NULL), OCK_RPC_OK);
}

static void
svc_long(OckRpcServerContext ctx, OckRpcMessage msg)
{
	static uint8_t bytes[1000];
	OckRpcMessage r = { bytes, sizeof(bytes) };

	(void)msg;
	memset(bytes, 0xab, sizeof(bytes));
	assert_int_equal(OckRpcServerReply(ctx, SVC_LONG, &r, NULL), OCK_RPC_OK);
}

static void
svc_big(OckRpcServerContext ctx, OckRpcMessage msg)
{
	static uint8_t bytes[4096];
	OckRpcMessage r = { bytes, sizeof(bytes) };

	(void)msg;
	S.big_status = OckRpcServerReply(ctx, SVC_BIG, &r, NULL);
	atomic_fetch_add(&S.big_replies, 1);
}

/* Call 1's answer, made as call 0's answer is written. */
static void
chain_answer_one(OckRpcStatus status, void *arg)
{
	static int one = 1;
	OckRpcMessage r = { &one, sizeof(one) };

	(void)arg;
	assert_int_equal(status, OCK_RPC_OK);
	assert_int_equal(OckRpcServerReply(S.chain[1], SVC_CHAIN, &r, NULL), OCK_RPC_OK);
	OckRpcDeCloneCtx(S.chain[1]);
}

/* Calls 0 and 1 are kept. Call 2 answers call 0 (whose written answer
 * answers call 1 from its callback) and then itself: two frames queued
 * in one batch, the first one's callback queueing a third.
 */
static void
svc_chain(OckRpcServerContext ctx, OckRpcMessage msg)
{
	static int zero, two = 2;
	OckRpcMessage r0 = { &zero, sizeof(zero) }, r2 = { &two, sizeof(two) };
	OckRpcCallDone then = { chain_answer_one, NULL };
	int i;

	assert_int_equal(msg.len, sizeof(i));
	memcpy(&i, msg.data, sizeof(i));
	if (i < 2) {
		S.chain[i] = OckRpcCloneCtx(ctx);
		assert_true(S.chain[i] != 0);
		atomic_fetch_add(&S.chain_kept, 1);
		return;
	}
	assert_int_equal(OckRpcServerReply(S.chain[0], SVC_CHAIN, &r0, &then), OCK_RPC_OK);
	OckRpcDeCloneCtx(S.chain[0]);
	assert_int_equal(OckRpcServerReply(ctx, SVC_CHAIN, &r2, NULL), OCK_RPC_OK);
}

static void
server_up(const char *idle)
{
	static OckRpcService services[] = {
		{ SVC_ECHO, svc_echo }, { SVC_SINK, svc_sink }, { SVC_SILENT, svc_silent },
		{ SVC_LATER, svc_later }, { SVC_WHO, svc_who }, { SVC_BIG, svc_big },
		{ SVC_CHAIN, svc_chain },
	};
	OckRpcService late = { SVC_LONG, svc_long };
	char **ips = NULL;
	uint16_t *ports = NULL;
	int n = 0;
	struct cfg g;

	memset(&S, 0, sizeof(S));
	pthread_mutex_init(&S.later_lock, NULL);
	cfg_tcp(&g);
	cfg_set(&g, OCK_RPC_STR_CLIENT_NEW, (const char *)(uintptr_t)on_new);
	cfg_set(&g, OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)on_break);
	cfg_set(&g, OCK_RPC_STR_WRK_THR_GRP, "2");
	cfg_set(&g, OCK_RPC_STR_HEATBEAT_IDLE, idle);
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &S.server, &g.c), OCK_RPC_OK);
	for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++)
		assert_int_equal(OckRpcServerAddService(S.server, &services[i]), OCK_RPC_OK);
	assert_int_equal(OckRpcServerStart(S.server), OCK_RPC_OK);
	/* Services may come after the start too. */
	assert_int_equal(OckRpcServerAddService(S.server, &late), OCK_RPC_OK);
	assert_true(OckRpcGetOobIpAndPort(S.server, &ips, &ports, &n));
	assert_int_equal(n, 1);
	assert_string_equal(ips[0], LOCAL_IP);
	assert_true(ports[0] >= 21000 && ports[0] <= 21999);
	S.port = ports[0];
	free(ips[0]);
	free(ips);
	free(ports);
}

static void
server_down(void)
{
	OckRpcServerDestroy(S.server);
	pthread_mutex_destroy(&S.later_lock);
}

static OckRpcClient
client_up(const char *info, const char *idle, OckRpcClientHandler brk)
{
	OckRpcClient c = 0;
	struct cfg g;

	cfg_tcp(&g);
	if (info != NULL)
		cfg_set(&g, OCK_RPC_STR_CLIENT_CREATE_INFO, info);
	if (idle != NULL)
		cfg_set(&g, OCK_RPC_STR_HEATBEAT_IDLE, idle);
	if (brk != NULL)
		cfg_set(&g, OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)brk);
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, S.port, &c, &g.c), OCK_RPC_OK);
	return c;
}

/* ---- configuration -------------------------------------------------------------------- */

static void
expect_create(const char *key, const char *value, OckRpcStatus want)
{
	OckRpcServer srv = 0;
	struct cfg g;

	cfg_tcp(&g);
	cfg_set(&g, key, value);
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &g.c), want);
	if (want == OCK_RPC_OK)
		OckRpcServerDestroy(srv);
}

static atomic_int logged_errors;

static void
count_log(int level, const char *msg)
{
	if (level == 3 && strstr(msg, "droce.rpc") != NULL)
		atomic_fetch_add(&logged_errors, 1);
}

static void
test_config_refusals(void **state)
{
	OckRpcServer srv = 0;
	OckRpcClient c = 0;
	struct cfg g;

	(void)state;
	OckRpcSetExternalLogger(count_log);
	expect_create(OCK_RPC_STR_COMMUNICATION_TYPE, "HCCS", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_COMMUNICATION_TYPE, "UBC", OCK_RPC_ERR_UNSUPPORT);
	expect_create(OCK_RPC_STR_SERVER_NAME,
		      "a-name-of-sixty-five-characters-is-one-more-than-hcom-takes-12345",
		      OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_SERVER_NAME,
		      "a-name-of-sixty-four-characters-is-what-hcom-takes-at-most-12345",
		      OCK_RPC_OK);
	expect_create(OCK_RPC_STR_PRE_SEGMENT_SIZE, "0", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_PRE_SEGMENT_SIZE, "943718401", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_PRE_SEGMENT_SIZE, "64k", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_PRE_SEGMENT_COUNT, "65536", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_PRE_SEGMENT_COUNT, "0", OCK_RPC_OK);
	expect_create(OCK_RPC_STR_ENABLE_POLL_WORKER, "true", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_HEATBEAT_IDLE, "0", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_SERVER_PORT_RANGE, "5000-4000", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_SERVER_PORT_RANGE, "80-90", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_WRK_THR_GRP, "x", OCK_RPC_ERR_INVALID_PARAM);
	expect_create(OCK_RPC_STR_ENABLE_SEND_RNDV, "yes", OCK_RPC_ERR_INVALID_PARAM);
	expect_create("netstack.exclusive.enable", "yes", OCK_RPC_OK);      /* unknown: ignored */
	/* TLS asked for without its callbacks cannot be had. */
	cfg_init(&g);
	cfg_set(&g, OCK_RPC_STR_COMMUNICATION_TYPE, "TCP");
	cfg_set(&g, OCK_RPC_STR_ENABLE_TLS, "yes");
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &g.c),
			 OCK_RPC_ERR_INVALID_PARAM);
	/* RDMA (the default type) needs a droce port: without DROCE_HCOM_CONF
	 * a start or a connect says RDMA is not enabled, and may be tried
	 * again (test_hcom_rdma.sh runs RDMA with one).
	 */
	unsetenv("DROCE_HCOM_CONF");
	cfg_init(&g);
	cfg_set(&g, OCK_RPC_STR_ENABLE_TLS, "no");
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &g.c), OCK_RPC_OK);
	assert_int_equal(OckRpcServerStart(srv), OCK_RPC_ERR_RDMA_NOT_ENABLE);
	assert_int_equal(OckRpcServerStart(srv), OCK_RPC_ERR_RDMA_NOT_ENABLE);
	OckRpcServerDestroy(srv);
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, 4000, &c, &g.c),
			 OCK_RPC_ERR_RDMA_NOT_ENABLE);
	/* Ports below 1024 other than 0, and missing arguments. */
	cfg_tcp(&g);
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 80, &srv, &g.c),
			 OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(OckRpcServerCreateWithCfg(NULL, 0, &srv, &g.c), OCK_RPC_ERR_INVALID_PARAM);
	assert_true(atomic_load(&logged_errors) >= 15);
	OckRpcSetExternalLogger(NULL);
}

/* Only what the mask names is read: users leave the rest uninitialised,
 * and a client that says no info is "hello".
 */
static void
test_mask_and_defaults(void **state)
{
	OckRpcCreateConfig cfg;
	OckRpcServer srv = 0;
	OckRpcClient c = 0;
	struct cfg g;

	(void)state;
	cfg_tcp(&g);
	cfg = g.c;
	memset(&cfg.serverCtxbuilder, 0xa5, sizeof(cfg) - offsetof(OckRpcCreateConfig, serverCtxbuilder));
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &cfg), OCK_RPC_OK);
	OckRpcServerDestroy(srv);
	/* No configs named: their pointer and size are not looked at. */
	memset(&cfg, 0xa5, sizeof(cfg));
	cfg.mask = 0;
	assert_int_equal(OckRpcServerCreateWithCfg(LOCAL_IP, 0, &srv, &cfg), OCK_RPC_OK);
	OckRpcServerDestroy(srv);
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	assert_true(wait_for(&S.news, 1, 5));
	assert_string_equal(S.last_info, "hello");
	OckRpcClientDisconnect(c);
	server_down();
}

/* ---- calls -------------------------------------------------------------------------- */

static void
test_sync_calls(void **state)
{
	uint8_t req[3000], rsp[3000], small[10];
	OckRpcMessage q = { req, sizeof(req) };
	OckRpcMessage r = { rsp, sizeof(rsp) };
	OckRpcMessage alloc = { NULL, 0 };
	OckRpcMessage too_small = { small, sizeof(small) };
	OckRpcClient c;

	(void)state;
	server_up("5");
	c = client_up("hello-test", NULL, NULL);
	assert_true(wait_for(&S.news, 1, 5));
	assert_string_equal(S.last_info, "hello-test");
	for (size_t i = 0; i < sizeof(req); i++)
		req[i] = (uint8_t)(i * 13);
	/* Into the caller's buffer: its length becomes the answer's. */
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, sizeof(req));
	assert_memory_equal(rsp, req, sizeof(req));
	/* Allocated by the library, freed by the caller. */
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &alloc, NULL), OCK_RPC_OK);
	assert_int_equal(alloc.len, sizeof(req));
	assert_memory_equal(alloc.data, req, sizeof(req));
	free(alloc.data);
	/* An empty call and its empty answer. */
	q.len = 0;
	r.len = sizeof(rsp);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, 0);
	/* A longer answer than the buffer is an error, never an overflow. */
	memset(small, 0x11, sizeof(small));
	assert_int_equal(OckRpcClientCall(c, SVC_LONG, &q, &too_small, NULL),
			 OCK_RPC_ERR_DESERIALIZE);
	for (size_t i = 0; i < sizeof(small); i++)
		assert_int_equal(small[i], 0x11);
	/* No such service: the server says so. */
	r.len = sizeof(rsp);
	assert_int_equal(OckRpcClientCall(c, SVC_NONE, &q, &r, NULL), OCK_RPC_ERR_MISMATCH_MSG_ID);
	/* Bad arguments. */
	assert_int_equal(OckRpcClientCall(c, 1000, &q, &r, NULL), OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, NULL, &r, NULL), OCK_RPC_ERR_INVALID_PARAM);
	q.len = SEGSIZE + 1;
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_ERR_INVALID_PARAM);
	/* A one-way message: the handler runs, nothing comes back. */
	q.len = 100;
	for (size_t i = 0; i < q.len; i++)
		req[i] = (uint8_t)(i * 7 + q.len);
	assert_int_equal(OckRpcClientCall(c, SVC_SINK, &q, NULL, NULL), OCK_RPC_OK);
	assert_true(wait_for(&S.sinks, 1, 5));
	assert_int_equal(atomic_load(&S.sink_bytes_bad), 0);
	OckRpcClientDisconnect(c);
	assert_true(wait_for(&S.breaks, 1, 5));
	server_down();
}

/* droce_rpc_stats_get() counts what both ends in this process did: the
 * sessions, the calls made and served, frames and bytes, a refusal, a
 * timeout, a session that ends by the peer's BYE (not broken).
 */
static void
test_counters(void **state)
{
	struct droce_rpc_stats a, b;
	uint8_t req[100] = { 0 }, rsp[100];
	OckRpcMessage q = { req, sizeof(req) }, r = { rsp, sizeof(rsp) };
	OckRpcClient c;

	(void)state;
	server_up("5");
	droce_rpc_stats_get(&a);
	c = client_up("counters", NULL, NULL);
	for (int i = 0; i < 10; i++)
		assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(OckRpcClientCall(c, SVC_NONE, &q, &r, NULL), OCK_RPC_ERR_MISMATCH_MSG_ID);
	OckRpcClientSetTimeout(c, 50);
	assert_int_equal(OckRpcClientCall(c, SVC_SILENT, &q, &r, NULL), OCK_RPC_ERR_UCP_TIMEOUT);
	OckRpcClientDisconnect(c);
	assert_true(wait_for(&S.breaks, 1, 5));
	droce_rpc_stats_get(&b);
	/* The client's end and the server's. */
	assert_int_equal(b.sessions_opened - a.sessions_opened, 2);
	assert_int_equal(b.sessions_ended - a.sessions_ended, 2);
	assert_int_equal(b.calls_made - a.calls_made, 12);
	assert_int_equal(b.calls_served - a.calls_served, 12);
	/* HELLO, WELCOME, 12 calls, 11 answers (the silent one none), BYE. */
	assert_int_equal(b.frames_out - a.frames_out, 26);
	assert_int_equal(b.frames_in - a.frames_in, 26);
	assert_int_equal(b.bytes_out - a.bytes_out, b.bytes_in - a.bytes_in);
	assert_true(b.bytes_out - a.bytes_out >= 26 * RPC_FRAME_HDR_SIZE + 22 * sizeof(req));
	assert_int_equal(b.err_timeout - a.err_timeout, 1);
	assert_int_equal(b.err_broken - a.err_broken, 0);
	assert_int_equal(b.err_refused - a.err_refused, 0);
	assert_int_equal(b.tls_handshakes - a.tls_handshakes, 0);
	server_down();
}

static void
test_call_with_params(void **state)
{
	OckRpcClient c;

	(void)state;
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	check_call_with_params(c, SVC_ECHO);
	OckRpcClientDisconnect(c);
	server_down();
}

/* One of 4 application threads: async calls of random sizes to the echo. */
#define ASYNC_THREADS 4
#define ASYNC_CALLS 500

/* How an async call ended, and how often (once, or the test fails). */
struct call_end {
	atomic_int finished;
	OckRpcStatus status;
};

static void
call_ended(OckRpcStatus status, void *arg)
{
	struct call_end *e = arg;

	e->status = status;
	atomic_fetch_add(&e->finished, 1);
}

struct async_call {
	uint8_t req[2048], rsp[2048];
	OckRpcMessage q, r;
	OckRpcCallDone done;
	struct call_end end;
};

static void *
async_thread(void *arg)
{
	OckRpcClient c = (OckRpcClient)arg;
	struct async_call *calls = calloc(ASYNC_CALLS, sizeof(*calls));
	unsigned int seed = (unsigned int)(uintptr_t)&calls;
	long bad = 0;

	for (int i = 0; i < ASYNC_CALLS; i++) {
		struct async_call *a = &calls[i];

		a->q = (OckRpcMessage){ a->req, (size_t)rand_r(&seed) % sizeof(a->req) };
		a->r = (OckRpcMessage){ a->rsp, sizeof(a->rsp) };
		for (size_t k = 0; k < a->q.len; k++)
			a->req[k] = (uint8_t)rand_r(&seed);
		a->done = (OckRpcCallDone){ call_ended, &a->end };
		/* A full session says so; callers try again, as hcom's do. */
		for (;;) {
			OckRpcStatus st = OckRpcClientCall(c, SVC_ECHO, &a->q, &a->r, &a->done);

			if (st == OCK_RPC_OK)
				break;
			if (st != OCK_RPC_ERR_NO_MEMORY) {
				bad++;
				break;
			}
			usleep(100);
		}
	}
	for (int i = 0; i < ASYNC_CALLS; i++) {
		struct async_call *a = &calls[i];

		if (!wait_for(&a->end.finished, 1, 20) || atomic_load(&a->end.finished) != 1 ||
		    a->end.status != OCK_RPC_OK || a->r.len != a->q.len ||
		    memcmp(a->req, a->rsp, a->q.len) != 0)
			bad++;
	}
	free(calls);
	return (void *)bad;
}

static void
test_async_calls_from_four_threads(void **state)
{
	pthread_t t[ASYNC_THREADS];
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	OckRpcMessage q = { "x", 1 };
	OckRpcClient c;

	(void)state;
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	for (int i = 0; i < ASYNC_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, async_thread, (void *)c), 0);
	for (int i = 0; i < ASYNC_THREADS; i++) {
		void *bad;

		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_int_equal((long)bad, 0);
	}
	/* An error return never calls back; a one-way async call does, once. */
	assert_int_equal(OckRpcClientCall(c, 1000, &q, NULL, &done), OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(OckRpcClientCall(c, SVC_SINK, &q, NULL, &done), OCK_RPC_OK);
	assert_true(wait_for(&log.calls, 1, 5));
	usleep(50000);
	assert_int_equal(atomic_load(&log.calls), 1);
	assert_int_equal(atomic_load(&log.ok), 1);
	OckRpcClientDisconnect(c);
	server_down();
}

/* ---- contexts ------------------------------------------------------------------------ */

static void *
answer_later(void *arg)
{
	int n = *(int *)arg;

	for (int i = 0; i < n; i++) {
		OckRpcServerContext ctx = S.later[i];
		OckRpcMessage r = { &i, sizeof(i) };

		assert_int_equal(OckRpcServerReply(ctx, SVC_LATER, &r, NULL), OCK_RPC_OK);
		/* Once only. */
		assert_int_equal(OckRpcServerReply(ctx, SVC_LATER, &r, NULL), OCK_RPC_ERR);
		OckRpcDeCloneCtx(ctx);
	}
	return NULL;
}

struct later_call {
	int msg;
	int answer;
	OckRpcMessage q, r;
	OckRpcCallDone done;
	struct call_end end;
};

static void
test_cloned_context_answers_from_another_thread(void **state)
{
	enum { N = 16 };
	struct later_call calls[N];
	pthread_t t;
	int n = N;
	OckRpcClient c;

	(void)state;
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	/* Many messages in one read: a clone keeps its own while the rest
	 * of the buffer is taken.
	 */
	for (int i = 0; i < N; i++) {
		calls[i] = (struct later_call){ .msg = i * 1000 };
		calls[i].q = (OckRpcMessage){ &calls[i].msg, sizeof(int) };
		calls[i].r = (OckRpcMessage){ &calls[i].answer, sizeof(int) };
		calls[i].done = (OckRpcCallDone){ call_ended, &calls[i].end };
		assert_int_equal(OckRpcClientCall(c, SVC_LATER, &calls[i].q, &calls[i].r,
						  &calls[i].done), OCK_RPC_OK);
	}
	assert_true(wait_for(&S.later_pending, N, 5));
	assert_int_equal(pthread_create(&t, NULL, answer_later, &n), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (int i = 0; i < N; i++) {
		assert_true(wait_for(&calls[i].end.finished, 1, 5));
		assert_int_equal(calls[i].end.status, OCK_RPC_OK);
	}
	/* The answers came in the order the contexts were kept. */
	for (int i = 0; i < N; i++)
		assert_int_equal(calls[i].answer, i);
	OckRpcClientDisconnect(c);
	server_down();
}

/* An answer's written callback that answers again on the same session,
 * while frames written with the first are still queued: each frame goes
 * out once, and every call gets its own answer.
 */
static void
test_answer_from_written_callback(void **state)
{
	struct later_call calls[3];
	struct droce_rpc_stats a, b;
	OckRpcClient c;

	(void)state;
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	atomic_store(&S.chain_kept, 0);
	for (int i = 0; i < 3; i++) {
		calls[i] = (struct later_call){ .msg = i, .answer = -1 };
		calls[i].q = (OckRpcMessage){ &calls[i].msg, sizeof(int) };
		calls[i].r = (OckRpcMessage){ &calls[i].answer, sizeof(int) };
		calls[i].done = (OckRpcCallDone){ call_ended, &calls[i].end };
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(OckRpcClientCall(c, SVC_CHAIN, &calls[i].q, &calls[i].r,
						  &calls[i].done), OCK_RPC_OK);
	assert_true(wait_for(&S.chain_kept, 2, 5));
	droce_rpc_stats_get(&a);
	assert_int_equal(OckRpcClientCall(c, SVC_CHAIN, &calls[2].q, &calls[2].r,
					  &calls[2].done), OCK_RPC_OK);
	for (int i = 0; i < 3; i++) {
		assert_true(wait_for(&calls[i].end.finished, 1, 5));
		assert_int_equal(calls[i].end.status, OCK_RPC_OK);
		assert_int_equal(calls[i].answer, i);
	}
	usleep(100000);         /* a frame written twice would be here by now */
	droce_rpc_stats_get(&b);
	/* The server took call 2; the client took three answers. */
	assert_int_equal(b.frames_in - a.frames_in, 4);
	OckRpcClientDisconnect(c);
	server_down();
}

static void
test_client_handle_and_up_ctx(void **state)
{
	uint64_t next, seen = 99;
	OckRpcMessage q = { &next, sizeof(next) }, r = { &seen, sizeof(seen) };
	OckRpcClient c;

	(void)state;
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	assert_true(wait_for(&S.news, 1, 5));
	/* The up ctx set in one handler is read in the next. */
	next = 0x1234;
	assert_int_equal(OckRpcClientCall(c, SVC_WHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(seen, 0);
	next = 0x5678;
	assert_int_equal(OckRpcClientCall(c, SVC_WHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(seen, 0x1234);
	/* And on the client's own handle. */
	assert_int_equal(OckRpcSetUpCtx(c, 42), 0);
	assert_int_equal(OckRpcGetUpCtx(c, &seen), 0);
	assert_int_equal(seen, 42);
	assert_int_equal(OckRpcGetUpCtx(0, &seen), OCK_RPC_ERR_INVALID_PARAM);
	OckRpcClientDisconnect(c);
	server_down();
}

/* ---- time ------------------------------------------------------------------------------ */

static void
test_timeouts(void **state)
{
	OckRpcClient c;

	(void)state;
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	check_timeouts(c, SVC_SILENT, SVC_ECHO, -1);
	OckRpcClientDisconnect(c);
	server_down();
}

/* Each side sends the other nothing longer than the other's segment
 * size (the opening says it): the sender refuses, the session stays.
 */
static void
test_segment_sizes_of_both_sides(void **state)
{
	static uint8_t big[100000];
	uint8_t buf[64];
	OckRpcMessage q = { big, sizeof(big) }, r = { buf, sizeof(buf) };
	OckRpcClient c = 0;
	struct cfg g;

	(void)state;
	server_up("5");
	/* A client of 1 KiB segments: the server may not answer 4 KiB. */
	cfg_tcp(&g);
	cfg_set(&g, OCK_RPC_STR_PRE_SEGMENT_SIZE, "1024");
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, S.port, &c, &g.c), OCK_RPC_OK);
	OckRpcClientSetTimeout(c, 300);
	q.len = 10;
	assert_int_equal(OckRpcClientCall(c, SVC_BIG, &q, &r, NULL), OCK_RPC_ERR_UCP_TIMEOUT);
	assert_true(wait_for(&S.big_replies, 1, 5));
	assert_int_equal(S.big_status, OCK_RPC_ERR_INVALID_PARAM);
	r.len = sizeof(buf);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, 10);
	/* And over its own size it may not call. */
	q.len = 1025;
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_ERR_INVALID_PARAM);
	OckRpcClientDisconnect(c);
	/* A client of 128 KiB segments may not send the server (64 KiB) 100000 bytes. */
	cfg_tcp(&g);
	cfg_set(&g, OCK_RPC_STR_PRE_SEGMENT_SIZE, "131072");
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, S.port, &c, &g.c), OCK_RPC_OK);
	q.len = sizeof(big);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_ERR_INVALID_PARAM);
	q.len = 10;
	r.len = sizeof(buf);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_OK);
	/* A server's session is not a client to call from. */
	assert_true(wait_for(&S.news, 2, 5));
	assert_int_equal(OckRpcClientCall(S.last_new, SVC_ECHO, &q, &r, NULL),
			 OCK_RPC_ERR_INVALID_PARAM);
	OckRpcClientDisconnect(c);
	server_down();
}

/* The new-client handler refuses with anything but 0. */
static void
test_new_client_handler_refuses(void **state)
{
	OckRpcClient c = 0;
	struct cfg g;

	(void)state;
	server_up("5");
	atomic_store(&S.refuse_next, 7);
	cfg_tcp(&g);
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, S.port, &c, &g.c), OCK_RPC_ERR);
	assert_int_equal(atomic_load(&S.news), 1);
	/* Never taken, so never broken. */
	usleep(100000);
	assert_int_equal(atomic_load(&S.breaks), 0);
	c = client_up(NULL, NULL, NULL);
	OckRpcClientDisconnect(c);
	assert_true(wait_for(&S.breaks, 1, 5));
	server_down();
}

/* A context kept past the server's end: its reply fails, its release frees. */
static void
test_reply_after_server_destroy(void **state)
{
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	OckRpcMessage q = { "q", 1 }, r = { NULL, 0 }, a = { "a", 1 };
	OckRpcServerContext kept;
	OckRpcClient c;

	(void)state;
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	assert_int_equal(OckRpcClientCall(c, SVC_LATER, &q, &r, &done), OCK_RPC_OK);
	assert_true(wait_for(&S.later_pending, 1, 5));
	kept = S.later[0];
	server_down();
	assert_true(wait_for(&log.calls, 1, 5));
	assert_int_equal(log.last, OCK_RPC_ERR_CONN_BROKEN);
	assert_int_equal(OckRpcServerReply(kept, SVC_LATER, &a, NULL), OCK_RPC_ERR_CONN_BROKEN);
	OckRpcDeCloneCtx(kept);
	OckRpcClientDisconnect(c);
}

/* A session takes as many calls at once as its segment count. */
static void
test_full_session_refuses_then_takes(void **state)
{
	OckRpcClient c = 0;
	struct cfg g;

	(void)state;
	server_up("5");
	cfg_tcp(&g);
	cfg_set(&g, OCK_RPC_STR_PRE_SEGMENT_COUNT, "3");
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, S.port, &c, &g.c), OCK_RPC_OK);
	check_full_session(c, SVC_SILENT, SVC_ECHO, -1);
	server_down();
}

/* ---- ends ------------------------------------------------------------------------------ */

static atomic_int client_breaks;

static int
on_client_break(OckRpcClient client, uint64_t usr, const char *payload)
{
	(void)client;
	(void)usr;
	(void)payload;
	atomic_fetch_add(&client_breaks, 1);
	return 0;
}

static void
test_wrong_server_name_refused(void **state)
{
	OckRpcClient c = 0;
	struct cfg g;

	(void)state;
	server_up("5");
	cfg_tcp(&g);
	g.pairs[0].value = "another-server";
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, S.port, &c, &g.c),
			 OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(atomic_load(&S.news), 0);
	/* Nobody there. */
	cfg_tcp(&g);
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, 1023, &c, &g.c),
			 OCK_RPC_ERR_CONN_UNCONNECTED);
	server_down();
}

/* The server goes while calls wait: they fail, the client hears. */
static void
test_server_destroy_fails_calls(void **state)
{
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	OckRpcMessage q = { "q", 1 }, r = { NULL, 0 };
	OckRpcClient c;

	(void)state;
	atomic_store(&client_breaks, 0);
	server_up("5");
	c = client_up(NULL, NULL, on_client_break);
	for (int i = 0; i < 10; i++)
		assert_int_equal(OckRpcClientCall(c, SVC_SILENT, &q, &r, &done), OCK_RPC_OK);
	assert_true(wait_for(&S.news, 1, 5));
	server_down();
	assert_true(wait_for(&log.calls, 10, 5));
	assert_int_equal(atomic_load(&log.bad), 10);
	assert_int_equal(log.last, OCK_RPC_ERR_CONN_BROKEN);
	assert_true(wait_for(&client_breaks, 1, 5));
	/* A broken session takes no calls. */
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_ERR_CONN_BROKEN);
	assert_int_equal(atomic_load(&client_breaks), 1);
	OckRpcClientDisconnect(c);
}

static atomic_int left_in_break;

/* On the clients' worker: a client may leave from its break handler. */
static int
disconnect_on_break(OckRpcClient client, uint64_t usr, const char *payload)
{
	(void)usr;
	(void)payload;
	OckRpcClientDisconnectBreakHandler(client);
	atomic_fetch_add(&left_in_break, 1);
	return 0;
}

/* The last client leaves from its own worker's break handler: that
 * worker stays for the next client, which works.
 */
static void
test_disconnect_in_break_handler(void **state)
{
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	OckRpcMessage q = { "q", 1 }, r = { NULL, 0 };
	OckRpcClient c;

	(void)state;
	atomic_store(&left_in_break, 0);
	server_up("5");
	c = client_up(NULL, NULL, disconnect_on_break);
	assert_int_equal(OckRpcClientCall(c, SVC_SILENT, &q, &r, &done), OCK_RPC_OK);
	assert_true(wait_for(&S.news, 1, 5));
	server_down();
	assert_true(wait_for(&log.calls, 1, 5));
	assert_int_equal(log.last, OCK_RPC_ERR_CONN_BROKEN);
	assert_true(wait_for(&left_in_break, 1, 5));
	server_up("5");
	c = client_up(NULL, NULL, NULL);
	r = (OckRpcMessage){ NULL, 0 };
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, 1);
	free(r.data);
	OckRpcClientDisconnect(c);
	server_down();
	assert_int_equal(atomic_load(&left_in_break), 1);
}

/* A raw TCP client: its HELLO, then nothing. */
static int
raw_connect(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint8_t buf[RPC_FRAME_HDR_SIZE + 64];
	struct rpc_frame f = { .kind = RPC_HELLO };
	const char body[] = SERVER_NAME "\0silent";     /* and its NUL */

	inet_pton(AF_INET, LOCAL_IP, &a.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	f.payload_len = sizeof(body) + 4;
	rpc_frame_encode(&f, buf);
	memcpy(buf + RPC_FRAME_HDR_SIZE, body, sizeof(body));
	rpc_put_be32(buf + RPC_FRAME_HDR_SIZE + sizeof(body), SEGSIZE);
	assert_int_equal(send(fd, buf, RPC_FRAME_HDR_SIZE + f.payload_len, 0),
			 RPC_FRAME_HDR_SIZE + f.payload_len);
	return fd;
}

/*
 * Heartbeat with an idle time of 1 s: a client that opens its session and
 * then says nothing (a process stopped dead, a cut link) is found broken
 * within twice the idle time, and its break handler runs once.
 */
static void
test_heartbeat_finds_a_silent_client(void **state)
{
	double t0, took;
	int fd;

	(void)state;
	server_up("1");
	fd = raw_connect(S.port);
	assert_true(wait_for(&S.news, 1, 5));
	t0 = now_s();
	assert_true(wait_for(&S.breaks, 1, 10));
	took = now_s() - t0;
	print_message("  a silent client found broken after %.2f s (idle 1 s)\n", took);
	assert_true(took >= 1.0 && took < 3.5);
	usleep(100000);
	assert_int_equal(atomic_load(&S.breaks), 1);
	close(fd);
	server_down();
}

/* The same from the client's side: a server (a child process) that
 * welcomes and then says nothing.
 */
static void
test_heartbeat_finds_a_silent_server(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	OckRpcMessage q = { "q", 1 }, r = { NULL, 0 };
	socklen_t alen = sizeof(a);
	struct rpc_frame f = { .kind = RPC_WELCOME };
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	OckRpcClient c = 0;
	double t0, took;
	struct cfg g;
	pid_t pid;

	(void)state;
	atomic_store(&client_breaks, 0);
	inet_pton(AF_INET, LOCAL_IP, &a.sin_addr);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	pid = fork();
	if (pid == 0) {
		uint8_t buf[256];
		int s = accept(lfd, NULL, NULL);

		if (recv(s, buf, sizeof(buf), 0) > 0) {
			f.payload_len = 4;
			rpc_frame_encode(&f, buf);
			rpc_put_be32(buf + RPC_FRAME_HDR_SIZE, SEGSIZE);
			if (send(s, buf, RPC_FRAME_HDR_SIZE + 4, 0) != RPC_FRAME_HDR_SIZE + 4)
				_exit(1);
		}
		sleep(30);      /* silent until the parent ends it */
		_exit(0);
	}
	assert_true(pid > 0);
	cfg_tcp(&g);
	cfg_set(&g, OCK_RPC_STR_HEATBEAT_IDLE, "1");
	cfg_set(&g, OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)on_client_break);
	assert_int_equal(OckRpcClientConnectWithCfg(LOCAL_IP, ntohs(a.sin_port), &c, &g.c),
			 OCK_RPC_OK);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, &done), OCK_RPC_OK);
	t0 = now_s();
	assert_true(wait_for(&client_breaks, 1, 10));
	took = now_s() - t0;
	print_message("  a silent server found broken after %.2f s (idle 1 s)\n", took);
	assert_true(took >= 1.0 && took < 3.5);
	assert_true(wait_for(&log.calls, 1, 1));
	assert_int_equal(log.last, OCK_RPC_ERR_CONN_BROKEN);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(lfd);
	OckRpcClientDisconnect(c);
}

/* ---- memory ------------------------------------------------------------------------------ */

static void
test_memory_allocator(void **state)
{
	static uint8_t region[1 << 20] __attribute__((aligned(4096)));
	OckRpcMemoryAllocatorOptions o = {
		.address = (uintptr_t)region, .size = sizeof(region), .minBlockSize = 4096,
		.bucketCount = 16, .alignedAddress = 1,
	};
	OckRpcMemoryAllocator a;
	uintptr_t addr[300], free_size, off, x;
	uint32_t key;

	(void)state;
	/* Plain: first fit, neighbours merge when they come back. */
	assert_int_equal(OckRpcMemoryAllocatorCreate(MEM_DYNAMIC_SIZE, &o, &a), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorSetMrKey(a, 0xabc), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorFreeSize(a, &free_size), OCK_RPC_OK);
	assert_int_equal(free_size, sizeof(region));
	for (int i = 0; i < 256; i++) {
		assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 1 + (uint64_t)i % 4096, &addr[i], &key),
				 OCK_RPC_OK);
		assert_int_equal(key, 0xabc);
		assert_int_equal(OckRpcMemoryAllocatorMemOffset(a, addr[i], &off), OCK_RPC_OK);
		assert_int_equal(off, (uintptr_t)i * 4096);
	}
	/* Full: nothing more, and 0 bytes is no size. */
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 1, &x, &key), OCK_RPC_ERR_NO_MEMORY);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 0, &x, &key), OCK_RPC_ERR_INVALID_PARAM);
	/* Every other block back: 128 holes of one block, no two together. */
	for (int i = 0; i < 256; i += 2)
		assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[i]), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorFreeSize(a, &free_size), OCK_RPC_OK);
	assert_int_equal(free_size, 128 * 4096);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 8192, &x, &key), OCK_RPC_ERR_NO_MEMORY);
	/* A block twice, or an address never handed out, is an error. */
	assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[0]), OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[1] + 1), OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, (uintptr_t)region + sizeof(region)),
			 OCK_RPC_ERR_INVALID_PARAM);
	/* The rest back: one piece again. */
	for (int i = 1; i < 256; i += 2)
		assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[i]), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, sizeof(region), &x, &key), OCK_RPC_OK);
	assert_int_equal(x, (uintptr_t)region);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, x), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorDestroy(a), OCK_RPC_OK);

	/* Cached, tiers by powers of two: a freed tier block comes back as is. */
	o.cacheTierCount = 4;
	o.cacheBlockCountPerTier = 2;
	o.cacheTierPolicy = MEM_TIER_POWER;
	assert_int_equal(OckRpcMemoryAllocatorCreate(MEM_DYNAMIC_SIZE_WITH_CACHE, &o, &a), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 5000, &addr[0], &key), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 3 * 4096, &addr[1], &key), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorMemOffset(a, addr[1], &off), OCK_RPC_OK);
	assert_int_equal(off, 2 * 4096);        /* 5000 bytes took the 2-block tier */
	assert_int_equal(OckRpcMemoryAllocatorFreeSize(a, &free_size), OCK_RPC_OK);
	assert_int_equal(free_size, sizeof(region) - 6 * 4096);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[0]), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorFreeSize(a, &free_size), OCK_RPC_OK);
	assert_int_equal(free_size, sizeof(region) - 4 * 4096);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 8000, &x, &key), OCK_RPC_OK);
	assert_int_equal(x, addr[0]);
	/* Above the last tier (8 blocks): not cached. */
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 9 * 4096, &addr[2], &key), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[2]), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, x), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[1]), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[1]), OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(OckRpcMemoryAllocatorFreeSize(a, &free_size), OCK_RPC_OK);
	assert_int_equal(free_size, sizeof(region));
	assert_int_equal(OckRpcMemoryAllocatorDestroy(a), OCK_RPC_OK);

	/* Tiers by multiples: 3 blocks is a tier of its own. */
	o.cacheTierPolicy = MEM_TIER_TIMES;
	assert_int_equal(OckRpcMemoryAllocatorCreate(MEM_DYNAMIC_SIZE_WITH_CACHE, &o, &a), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 3 * 4096 - 1, &addr[0], &key), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 1, &addr[1], &key), OCK_RPC_OK);
	assert_int_equal(addr[1] - addr[0], 3 * 4096);
	assert_int_equal(OckRpcMemoryAllocatorDestroy(a), OCK_RPC_OK);

	/* Sizes past the region, up to the largest, are no memory. */
	o.cacheTierPolicy = MEM_TIER_POWER;
	assert_int_equal(OckRpcMemoryAllocatorCreate(MEM_DYNAMIC_SIZE_WITH_CACHE, &o, &a), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, UINT64_MAX, &x, &key), OCK_RPC_ERR_NO_MEMORY);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, UINT64_MAX - 100, &x, &key),
			 OCK_RPC_ERR_NO_MEMORY);
	/* Blocks sitting in the caches come back when a big request needs them. */
	for (int i = 0; i < 256; i++)
		assert_int_equal(OckRpcMemoryAllocatorAllocate(a, 4096, &addr[i], &key), OCK_RPC_OK);
	for (int i = 0; i < 256; i++)
		assert_int_equal(OckRpcMemoryAllocatorFree(a, addr[i]), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorAllocate(a, sizeof(region), &x, &key), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorFree(a, x), OCK_RPC_OK);
	assert_int_equal(OckRpcMemoryAllocatorDestroy(a), OCK_RPC_OK);

	/* Bad options. */
	o.minBlockSize = 3000;
	assert_int_equal(OckRpcMemoryAllocatorCreate(MEM_DYNAMIC_SIZE, &o, &a), OCK_RPC_ERR_INVALID_PARAM);
	o.minBlockSize = 4096;
	o.address = (uintptr_t)region + 8;
	assert_int_equal(OckRpcMemoryAllocatorCreate(MEM_DYNAMIC_SIZE, &o, &a), OCK_RPC_ERR_INVALID_PARAM);
	o.address = (uintptr_t)region;
	o.cacheTierCount = 0;
	assert_int_equal(OckRpcMemoryAllocatorCreate(MEM_DYNAMIC_SIZE_WITH_CACHE, &o, &a),
			 OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(OckRpcMemoryAllocatorCreate(7, &o, &a), OCK_RPC_ERR_INVALID_PARAM);
}

static void
test_memory_regions_and_one_sided(void **state)
{
	static uint8_t mine[8192];
	OckRpcMemoryRegionInfo info, info2;
	OckRpcMemoryRegion mr, mr2;
	OckRpcRequest req = { 0 };
	OckRpcSglRequest sgl = { &req, 1 };
	OckRpcClient c;

	(void)state;
	server_up("5");
	assert_int_equal(OckRpcRegisterMemoryRegion(S.server, 1 << 20, &mr), OCK_RPC_OK);
	assert_int_equal(OckRpcGetMemoryRegionInfo(mr, &info), OCK_RPC_OK);
	assert_int_equal(info.size, 1 << 20);
	assert_true(info.lAddress != 0 && info.lKey != 0);
	memset((void *)info.lAddress, 0x5a, info.size);     /* it is memory */
	assert_int_equal(OckRpcRegisterAssignMemoryRegion(S.server, (uintptr_t)mine, sizeof(mine),
							  &mr2), OCK_RPC_OK);
	assert_int_equal(OckRpcGetMemoryRegionInfo(mr2, &info2), OCK_RPC_OK);
	assert_int_equal(info2.lAddress, (uintptr_t)mine);
	assert_int_equal(info2.size, sizeof(mine));
	assert_true(info2.lKey != info.lKey);
	assert_int_equal(OckRpcRegisterMemoryRegion(S.server, 0, &mr), OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(OckRpcRegisterMemoryRegion(0, 4096, &mr2), OCK_RPC_ERR_INVALID_PARAM);
	/* Over TCP: one-sided operations and rendezvous are not enabled. */
	c = client_up(NULL, NULL, NULL);
	req = (OckRpcRequest){ .lAddress = info.lAddress, .lKey = info.lKey, .size = 64 };
	assert_int_equal(OckRpcRead(c, &req, NULL), OCK_RPC_ERR_RDMA_NOT_ENABLE);
	assert_int_equal(OckRpcWrite(c, &req, NULL), OCK_RPC_ERR_RDMA_NOT_ENABLE);
	assert_int_equal(OckRpcReadSgl(c, &sgl, NULL), OCK_RPC_ERR_RDMA_NOT_ENABLE);
	assert_int_equal(OckRpcWriteSgl(c, &sgl, NULL), OCK_RPC_ERR_RDMA_NOT_ENABLE);
	assert_int_equal(OckRpcRead(c, NULL, NULL), OCK_RPC_ERR_INVALID_PARAM);
	OckRpcDestroyMemoryRegion(S.server, mr);
	OckRpcDestroyMemoryRegion(S.server, mr2);
	OckRpcClientDisconnect(c);
	server_down();
}

/* ---- setup ------------------------------------------------------------------------------ */

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_refusals),
		cmocka_unit_test(test_mask_and_defaults),
		cmocka_unit_test(test_sync_calls),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_call_with_params),
		cmocka_unit_test(test_async_calls_from_four_threads),
		cmocka_unit_test(test_cloned_context_answers_from_another_thread),
		cmocka_unit_test(test_answer_from_written_callback),
		cmocka_unit_test(test_client_handle_and_up_ctx),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_full_session_refuses_then_takes),
		cmocka_unit_test(test_segment_sizes_of_both_sides),
		cmocka_unit_test(test_new_client_handler_refuses),
		cmocka_unit_test(test_reply_after_server_destroy),
		cmocka_unit_test(test_wrong_server_name_refused),
		cmocka_unit_test(test_server_destroy_fails_calls),
		cmocka_unit_test(test_disconnect_in_break_handler),
		cmocka_unit_test(test_heartbeat_finds_a_silent_client),
		cmocka_unit_test(test_heartbeat_finds_a_silent_server),
		cmocka_unit_test(test_memory_allocator),
		cmocka_unit_test(test_memory_regions_and_one_sided),
	};

	private_loopback();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
