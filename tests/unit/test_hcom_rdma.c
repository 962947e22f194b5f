/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The hcom4db.h API over RDMA (droce's RC, connected by its CM), written
 * as an application would use it: the library starts a process's droce
 * stack from DROCE_HCOM_CONF and DROCE_HCOM_EAL. A process has one stack
 * and one RC device, so the server runs in a child forked before either
 * starts one, the client here; a net_memif pair joins them (198.18.0.1
 * the server's, 198.18.0.2 the client's). What the server sees comes
 * back through shared memory. Plain calls, rendezvous calls, one-sided
 * READ and WRITE, and what each refuses; calls with pieces, timeouts,
 * contexts answered from another thread, the client handle and up ctx;
 * the server's new-client and break handlers, both sides' segment sizes
 * and count, and a server destroyed with calls in flight and a context
 * kept; TLS sessions (certificates from tests/tools/make_test_pki.sh),
 * their rendezvous and one-sided operations, and plaintext peers refused
 * either way.
 *
 * The server outlives this process: DPDK 22.11's memif unmaps a link's
 * rings from its interrupt thread when the peer goes, while the lcores may
 * still poll them, so the side whose peer exits can fault. The server
 * therefore reports its verdict through shared memory and waits to be
 * killed when this process exits (PR_SET_PDEATHSIG), after the library
 * stopped this process's lcores.
 */

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <cmocka.h>

#include <rte_lcore.h>

#include "hcom4db.h"
#include "hcom_checks.h"
#include "test_pki.h"

#define SERVER_IP "198.18.0.1"
#define SERVER_NAME "droce-rdma-test"
#define SEGSIZE "65536"

enum {
	SVC_ECHO = 0,           /* answers with the request */
	SVC_REGION = 1,         /* answers with its memory region's address and key */
	SVC_RNDV = 2,           /* rendezvous: answers with the sum and length of the bytes */
	SVC_SILENT = 3,         /* never answers */
	SVC_LATER = 4,          /* answers from another thread, with a cloned context */
	SVC_WHO = 5,            /* its client's up ctx, set to the 8 bytes it got */
	SVC_BIG = 6,            /* tries to answer with 4 KiB */
	SVC_PULL = 7,           /* READs what an OckRpcRequest names into its region */
	SVC_NONE = 999,
};

#define SERVER_REGION (1 << 20)

/* Between the server (the child) and the tests. */
struct shared {
	atomic_int port;                /* 0 until it listens; -1 failed */
	atomic_int stop;
	atomic_int served;              /* 1: the server was destroyed, errors final */
	atomic_int errors;              /* what its handlers found wrong */
	atomic_int rndv_cleaned, rndv_allocated;
	atomic_int news, server_breaks, refuse_next;
	char new_info[64];              /* the last new client's create info */
	atomic_int big_replies, big_status;
	/* A second server, destroyed on request with calls in flight. */
	atomic_int doomed_port, doomed_calls, doom, doomed_gone;
	atomic_int kept_reply;          /* a context kept past its server's end answered */
	atomic_int tls_port;            /* a third server, with TLS */
	atomic_int pulls;               /* SVC_PULL's READs that ended well */
	OckRpcMemoryRegionInfo server_region;
	uint8_t region[SERVER_REGION] __attribute__((aligned(4096)));
};

static struct {
	char dir[64];
	bool server;                    /* this process is the server */
	pid_t parent, server_pid;
	struct shared *sh;
	OckRpcClient client;
	OckRpcServer regions;           /* the client's, never started */
} T;

#define SERVER_CHECK(cond) \
	do { if (!(cond)) atomic_fetch_add(&T.sh->errors, 1); } while (0)

/* ---- the server -------------------------------------------------------------------- */

static void
silent(OckRpcServerContext ctx, OckRpcMessage msg)
{
	(void)ctx;
	(void)msg;
}

struct later {
	OckRpcServerContext ctx;
	uint8_t byte;
};

/* Off the control lcore, as a handler that has slow work would do it. */
static void *
answer_later(void *arg)
{
	struct later *l = arg;
	OckRpcMessage r = { &l->byte, 1 };

	usleep(20000);
	l->byte ^= 0xff;
	SERVER_CHECK(OckRpcServerReply(l->ctx, SVC_LATER, &r, NULL) == OCK_RPC_OK);
	/* Once only. */
	SERVER_CHECK(OckRpcServerReply(l->ctx, SVC_LATER, &r, NULL) == OCK_RPC_ERR);
	OckRpcDeCloneCtx(l->ctx);
	free(l);
	return NULL;
}

static void
later(OckRpcServerContext ctx, OckRpcMessage msg)
{
	struct later *l = malloc(sizeof(*l));
	pthread_t t;

	SERVER_CHECK(l != NULL && msg.len == 1);
	if (l == NULL)
		return;
	l->ctx = OckRpcCloneCtx(ctx);
	l->byte = *(const uint8_t *)msg.data;
	if (l->ctx == 0 || pthread_create(&t, NULL, answer_later, l) != 0) {
		SERVER_CHECK(false);
		if (l->ctx != 0)
			OckRpcDeCloneCtx(l->ctx);
		free(l);
		return;
	}
	pthread_detach(t);
}

static void
who(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcClient client = 0;
	uint64_t up = 0, next;
	OckRpcMessage r = { &up, sizeof(up) };

	SERVER_CHECK(msg.len == sizeof(next));
	memcpy(&next, msg.data, sizeof(next));
	SERVER_CHECK(OckRpcGetClient(ctx, &client) == 0 && client != 0);
	SERVER_CHECK(OckRpcSetUpCtx(client, next) == 0);
	SERVER_CHECK(OckRpcGetUpCtx(client, &up) == 0);
	SERVER_CHECK(OckRpcServerReply(ctx, SVC_WHO, &r, NULL) == OCK_RPC_OK);
}

static void
big(OckRpcServerContext ctx, OckRpcMessage msg)
{
	static uint8_t four_k[4096];
	OckRpcMessage r = { four_k, sizeof(four_k) };

	(void)msg;
	atomic_store(&T.sh->big_status, OckRpcServerReply(ctx, SVC_BIG, &r, NULL));
	atomic_fetch_add(&T.sh->big_replies, 1);
}

static void
doomed_silent(OckRpcServerContext ctx, OckRpcMessage msg)
{
	(void)ctx;
	(void)msg;
	atomic_fetch_add(&T.sh->doomed_calls, 1);
}

/* The doomed server's context kept for after its end (serve()). */
static OckRpcServerContext doomed_kept;

static void
doomed_keep(OckRpcServerContext ctx, OckRpcMessage msg)
{
	(void)msg;
	SERVER_CHECK(doomed_kept == 0);
	doomed_kept = OckRpcCloneCtx(ctx);
	atomic_fetch_add(&T.sh->doomed_calls, 1);
}

/* Takes the client unless told to refuse the next one. */
static int
on_new(OckRpcClient client, uint64_t usr, const char *payload)
{
	int refuse = atomic_exchange(&T.sh->refuse_next, 0);

	(void)usr;
	SERVER_CHECK(client != 0);
	snprintf(T.sh->new_info, sizeof(T.sh->new_info), "%s", payload != NULL ? payload : "");
	atomic_fetch_add(&T.sh->news, 1);
	return refuse;
}

static int
on_server_break(OckRpcClient client, uint64_t usr, const char *payload)
{
	(void)usr;
	(void)payload;
	SERVER_CHECK(client != 0);
	atomic_fetch_add(&T.sh->server_breaks, 1);
	return 0;
}

/* Handlers run on the lcore that owns the session's QP: the control
 * lcore, here the EAL's main lcore (the library started this EAL).
 */
static void
echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	SERVER_CHECK(rte_lcore_id() == rte_get_main_lcore());
	SERVER_CHECK(OckRpcServerReply(ctx, SVC_ECHO, &msg, NULL) == OCK_RPC_OK);
}

static void
region(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcMessage reply = { &T.sh->server_region, sizeof(T.sh->server_region) };

	(void)msg;
	SERVER_CHECK(OckRpcServerReply(ctx, SVC_REGION, &reply, NULL) == OCK_RPC_OK);
}

/* SVC_PULL's READ ended: its status answers the call. */
static void
pulled(OckRpcStatus status, void *arg)
{
	OckRpcServerContext ctx = (OckRpcServerContext)(uintptr_t)arg;
	int32_t st = status;
	OckRpcMessage reply = { &st, sizeof(st) };

	if (status == OCK_RPC_OK)
		atomic_fetch_add(&T.sh->pulls, 1);
	SERVER_CHECK(OckRpcServerReply(ctx, SVC_PULL, &reply, NULL) == OCK_RPC_OK);
	OckRpcDeCloneCtx(ctx);
}

/* The server as a one-sided operation's initiator: a READ from its
 * client's memory, asynchronous (this is the session's lcore).
 */
static void
pull(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcServerContext kept = OckRpcCloneCtx(ctx);
	OckRpcCallDone done = { pulled, (void *)(uintptr_t)kept };
	OckRpcClient client = 0;
	OckRpcRequest r;

	SERVER_CHECK(msg.len == sizeof(r) && kept != 0);
	memcpy(&r, msg.data, sizeof(r));
	SERVER_CHECK(OckRpcGetClient(ctx, &client) == 0);
	if (OckRpcRead(client, &r, &done) != OCK_RPC_OK)
		pulled(OCK_RPC_ERR, (void *)(uintptr_t)kept);
}

/* What the rendezvous service answers: the bytes' sum and count. */
struct rndv_digest {
	uint64_t sum, len;
	uint16_t pieces;
};

static void
rndv_handler(OckRpcServerRndvContext ctx, OckRpcRndvMessage msg)
{
	struct rndv_digest d = { .pieces = msg.cnt };
	OckRpcMessage reply = { &d, sizeof(d) };
	OckRpcClient who = 0;

	for (uint16_t i = 0; i < msg.cnt; i++) {
		const uint8_t *p = msg.msg[i].data;

		for (size_t k = 0; k < msg.msg[i].len; k++)
			d.sum += p[k];
		d.len += msg.msg[i].len;
	}
	SERVER_CHECK(OckRpcGetRndvClient(ctx, &who) == OCK_RPC_OK && who != 0);
	SERVER_CHECK(OckRpcServerReplyRndv(ctx, SVC_RNDV, &reply, NULL) == OCK_RPC_OK);
	SERVER_CHECK(OckRpcServerCleanupRndvCtx(ctx) == OCK_RPC_OK);
	atomic_fetch_add(&T.sh->rndv_cleaned, 1);
}

static int
rndv_malloc(uint64_t size, uintptr_t *address, uint32_t *key)
{
	*address = (uintptr_t)malloc(size);
	*key = 0;
	atomic_fetch_add(&T.sh->rndv_allocated, 1);
	return *address != 0 ? 0 : -1;
}

static int
rndv_free(uintptr_t address)
{
	free((void *)address);
	atomic_fetch_sub(&T.sh->rndv_allocated, 1);
	return 0;
}

/* ---- TLS: each process shows its certificate (make_test_pki.sh's) ------------------ */

/* @p cfg with TLS on: this process's side, the run's certificates. */
static void
with_tls(OckRpcCreateConfig *cfg)
{
	test_pki_use(cfg, T.dir, T.server);
}

/* This process's droce configuration: side @p role of the memif pair. */
static void
configure(const char *role, const char *address)
{
	char conf[128], eal[512];
	FILE *f;

	snprintf(conf, sizeof(conf), "%s/%s.conf", T.dir, role);
	f = fopen(conf, "w");
	if (f == NULL)
		abort();
	/* Busy polling: memif does not take the restart event mode makes. */
	fprintf(f, "[port.0]\ndevice = net_memif0\naddress = %s/24\nqueues = 2\n"
		"[worker]\nthread.groups = 1\npoll.enable = yes\n", address);
	fclose(f);
	snprintf(eal, sizeof(eal),
		 "--no-pci --no-huge -m 256 --file-prefix hcom-rdma-%s-%d "
		 "--vdev=net_memif0,role=%s,socket=%s/m.sock", role, (int)T.parent, role, T.dir);
	setenv("DROCE_HCOM_CONF", conf, 1);
	setenv("DROCE_HCOM_EAL", eal, 1);
}

static RpcConfigPair server_pairs[] = {
	{ OCK_RPC_STR_SERVER_NAME, SERVER_NAME },
	{ OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" },
	{ OCK_RPC_STR_ENABLE_TLS, "no" },
	{ OCK_RPC_STR_PRE_SEGMENT_SIZE, SEGSIZE },
	{ OCK_RPC_STR_ENABLE_SEND_RNDV, "yes" },
	{ OCK_RPC_STR_RNDV_MALLOC, (const char *)(uintptr_t)rndv_malloc },
	{ OCK_RPC_STR_RNDV_MFREE, (const char *)(uintptr_t)rndv_free },
	{ OCK_RPC_STR_CLIENT_NEW, (const char *)(uintptr_t)on_new },
	{ OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)on_server_break },
};

/* The port a server of this process listens on. */
static int
port_of(OckRpcServer server)
{
	char **ips;
	uint16_t *ports;
	int n, port;

	if (!OckRpcGetOobIpAndPort(server, &ips, &ports, &n))
		return -1;
	port = ports[0];
	free(ips[0]);
	free(ips);
	free(ports);
	return port;
}

/* The child: a server until told to stop, then idle until killed; returns
 * only when it could not start. */
static int
serve(void)
{
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { 9, server_pairs } };
	/* The doomed server: name, type, TLS and segment size alone. */
	OckRpcCreateConfig doomed_cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
					  .configs = { 4, server_pairs } };
	OckRpcService svc[] = { { SVC_ECHO, echo }, { SVC_REGION, region },
				{ SVC_SILENT, silent }, { SVC_LATER, later }, { SVC_WHO, who },
				{ SVC_BIG, big } };
	OckRpcService doomed_svc[] = { { SVC_SILENT, doomed_silent }, { SVC_LATER, doomed_keep } };
	OckRpcRndvService rsvc = { SVC_RNDV, rndv_handler };
	/* The TLS server: the first one's pairs, but TLS on. */
	RpcConfigPair tls_pairs[7] = { server_pairs[0], server_pairs[1],
				       { OCK_RPC_STR_ENABLE_TLS, "yes" }, server_pairs[3],
				       server_pairs[4], server_pairs[5], server_pairs[6] };
	OckRpcCreateConfig tls_cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				       .configs = { 7, tls_pairs } };
	OckRpcService tls_svc[] = { { SVC_ECHO, echo }, { SVC_REGION, region },
				    { SVC_PULL, pull } };
	OckRpcServer server, doomed, secure;
	OckRpcMemoryRegion mr;
	int port, doomed_port, tls_port;

	configure("server", SERVER_IP);
	if (OckRpcServerCreateWithCfg(SERVER_IP, 0, &server, &cfg) != OCK_RPC_OK)
		return 1;
	for (size_t i = 0; i < sizeof(svc) / sizeof(svc[0]); i++)
		if (OckRpcServerAddService(server, &svc[i]) != OCK_RPC_OK)
			return 1;
	if (OckRpcServerAddRndvService(server, &rsvc) != OCK_RPC_OK ||
	    OckRpcServerStart(server) != OCK_RPC_OK ||
	    /* Made while the stack runs: its key is what a peer READs and
	     * WRITEs it with.
	     */
	    OckRpcRegisterAssignMemoryRegion(server, (uintptr_t)T.sh->region, SERVER_REGION,
					     &mr) != 0 ||
	    OckRpcGetMemoryRegionInfo(mr, &T.sh->server_region) != 0 ||
	    (port = port_of(server)) <= 0)
		return 1;
	if (OckRpcServerCreateWithCfg(SERVER_IP, 0, &doomed, &doomed_cfg) != OCK_RPC_OK ||
	    OckRpcServerAddService(doomed, &doomed_svc[0]) != OCK_RPC_OK ||
	    OckRpcServerAddService(doomed, &doomed_svc[1]) != OCK_RPC_OK ||
	    OckRpcServerStart(doomed) != OCK_RPC_OK || (doomed_port = port_of(doomed)) <= 0)
		return 1;
	with_tls(&tls_cfg);
	if (OckRpcServerCreateWithCfg(SERVER_IP, 0, &secure, &tls_cfg) != OCK_RPC_OK ||
	    OckRpcServerAddService(secure, &tls_svc[0]) != OCK_RPC_OK ||
	    OckRpcServerAddService(secure, &tls_svc[1]) != OCK_RPC_OK ||
	    OckRpcServerAddService(secure, &tls_svc[2]) != OCK_RPC_OK ||
	    OckRpcServerAddRndvService(secure, &rsvc) != OCK_RPC_OK ||
	    OckRpcServerStart(secure) != OCK_RPC_OK || (tls_port = port_of(secure)) <= 0)
		return 1;
	atomic_store(&T.sh->tls_port, tls_port);
	atomic_store(&T.sh->doomed_port, doomed_port);
	atomic_store(&T.sh->port, port);
	while (!atomic_load(&T.sh->stop)) {
		/* From this thread, as an application ends a server. */
		if (atomic_load(&T.sh->doom) && doomed != 0) {
			OckRpcMessage a = { "a", 1 };

			OckRpcServerDestroy(doomed);
			doomed = 0;
			/* Its reply fails; its release frees it. */
			if (doomed_kept != 0) {
				atomic_store(&T.sh->kept_reply,
					     OckRpcServerReply(doomed_kept, SVC_LATER, &a, NULL));
				OckRpcDeCloneCtx(doomed_kept);
			}
			atomic_store(&T.sh->doomed_gone, 1);
		}
		usleep(10000);
	}
	if (doomed != 0)
		OckRpcServerDestroy(doomed);
	OckRpcServerDestroy(secure);
	OckRpcDestroyMemoryRegion(server, mr);
	OckRpcServerDestroy(server);
	atomic_store(&T.sh->served, 1);
	for (;;)
		pause();
}

static int
setup(void **state)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, SERVER_NAME },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" },
		{ OCK_RPC_STR_ENABLE_TLS, "no" },
		{ OCK_RPC_STR_PRE_SEGMENT_SIZE, SEGSIZE },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { 4, pairs } };

	char cmd[256];

	(void)state;
	T.parent = getpid();
	snprintf(T.dir, sizeof(T.dir), "/tmp/droce-hcom-rdma-test.XXXXXX");
	assert_non_null(mkdtemp(T.dir));
	assert_non_null(getenv("DROCE_TEST_PKI"));
	snprintf(cmd, sizeof(cmd), "%s %s", getenv("DROCE_TEST_PKI"), T.dir);
	assert_int_equal(system(cmd), 0);
	T.sh = mmap(NULL, sizeof(*T.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	assert_true(T.sh != MAP_FAILED);
	T.server_pid = fork();
	assert_true(T.server_pid >= 0);
	if (T.server_pid == 0) {
		/* Killed when this process's main thread, which forked it, exits. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != T.parent)
			_exit(1);
		T.server = true;
		serve();
		atomic_store(&T.sh->port, -1);
		_exit(1);
	}
	for (int w = 0; w < 30000 && atomic_load(&T.sh->port) == 0; w++)
		usleep(1000);
	assert_true(atomic_load(&T.sh->port) > 0);
	configure("client", "198.18.0.2");
	assert_int_equal(OckRpcClientConnectWithCfg(SERVER_IP, (uint16_t)atomic_load(&T.sh->port),
						    &T.client, &cfg), OCK_RPC_OK);
	assert_int_equal(OckRpcServerCreateWithCfg("198.18.0.2", 0, &T.regions, &cfg),
			 OCK_RPC_OK);
	OckRpcClientSetTimeout(T.client, 20000);
	return 0;
}

static int
teardown(void **state)
{
	char path[192];
	int served;

	(void)state;
	OckRpcClientDisconnect(T.client);
	OckRpcServerDestroy(T.regions);
	atomic_store(&T.sh->stop, 1);
	for (int w = 0; w < 30000 && !atomic_load(&T.sh->served) &&
			waitpid(T.server_pid, NULL, WNOHANG) == 0; w++)
		usleep(1000);
	served = atomic_load(&T.sh->served);
	assert_int_equal(atomic_load(&T.sh->errors), 0);
	munmap(T.sh, sizeof(*T.sh));
	snprintf(path, sizeof(path), "rm -rf %s", T.dir);
	if (system(path) != 0)
		fprintf(stderr, "test_hcom_rdma: %s failed\n", path);
	/* The EAL's runtime folders: the server's ended, ours is not needed
	 * after the start.
	 */
	snprintf(path, sizeof(path), "rm -rf /var/run/dpdk/hcom-rdma-server-%d /var/run/dpdk/hcom-rdma-client-%d",
		 (int)T.parent, (int)T.parent);
	if (system(path) != 0)
		fprintf(stderr, "test_hcom_rdma: %s failed\n", path);
	assert_true(served);
	return 0;
}

/* ---- tests -------------------------------------------------------------------------- */

static void
fill(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

/* Calls of every size up to the segment: a frame is several SENDs. */
static void
test_calls_byte_exact(void **state)
{
	static const size_t sizes[] = { 0, 1, 63, 64, 1000, 8191, 8192, 8193, 20000, 65536 };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *q = malloc(sizes[i] + 1), *r = malloc(sizes[i] + 1);
		OckRpcMessage req = { q, sizes[i] }, rsp = { r, sizes[i] }, alloc = { NULL, 0 };

		fill(q, sizes[i], (unsigned int)i);
		assert_int_equal(OckRpcClientCall(T.client, SVC_ECHO, &req, &rsp, NULL), OCK_RPC_OK);
		assert_int_equal(rsp.len, sizes[i]);
		assert_memory_equal(q, r, sizes[i]);
		assert_int_equal(OckRpcClientCall(T.client, SVC_ECHO, &req, &alloc, NULL), OCK_RPC_OK);
		assert_int_equal(alloc.len, sizes[i]);
		if (sizes[i] != 0)
			assert_memory_equal(q, alloc.data, sizes[i]);
		free(alloc.data);
		free(q);
		free(r);
	}
	/* Over the segment size, and to a service nobody added. */
	{
		static uint8_t big[65537];
		OckRpcMessage req = { big, sizeof(big) }, small = { big, 8 }, rsp = { NULL, 0 };

		assert_int_equal(OckRpcClientCall(T.client, SVC_ECHO, &req, &rsp, NULL),
				 OCK_RPC_ERR_INVALID_PARAM);
		assert_int_equal(OckRpcClientCall(T.client, SVC_NONE, &small, &rsp, NULL),
				 OCK_RPC_ERR_MISMATCH_MSG_ID);
	}
}

/* A registered buffer of @p len bytes of the client's. */
static OckRpcMessageInfo
client_buffer(size_t len, unsigned int seed, OckRpcMemoryRegion *mr, uint8_t **mem)
{
	OckRpcMemoryRegionInfo info;

	*mem = malloc(len);
	assert_non_null(*mem);
	fill(*mem, len, seed);
	assert_int_equal(OckRpcRegisterAssignMemoryRegion(T.regions, (uintptr_t)*mem, len, mr),
			 OCK_RPC_OK);
	assert_int_equal(OckRpcGetMemoryRegionInfo(*mr, &info), OCK_RPC_OK);
	return (OckRpcMessageInfo){ (uintptr_t)*mem, info.lKey, (uint32_t)len };
}

static uint64_t
sum(const uint8_t *p, size_t len)
{
	uint64_t s = 0;

	for (size_t i = 0; i < len; i++)
		s += p[i];
	return s;
}

static atomic_int rndv_async_done;

static void
rndv_async_cb(OckRpcStatus status, void *arg)
{
	(void)arg;
	if (status == OCK_RPC_OK)
		atomic_fetch_add(&rndv_async_done, 1);
}

/* Over the segment size: the server READs the buffers. */
static void
test_rendezvous(void **state)
{
	static const size_t sizes[] = { 1, 65537, 300000, 1 << 20, 3 << 20 };
	OckRpcMemoryRegion mr[4];
	OckRpcMessageInfo info[4];
	uint8_t *mem[4];
	struct rndv_digest d;
	OckRpcMessage rsp = { &d, sizeof(d) };
	uint64_t want = 0, want_len = 0;
	OckRpcMessageInfoIov iov = { 4, info };
	int cleaned = atomic_load(&T.sh->rndv_cleaned);

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		info[0] = client_buffer(sizes[i], (unsigned int)i, &mr[0], &mem[0]);
		memset(&d, 0, sizeof(d));
		assert_int_equal(OckRpcClientCallRndv(T.client, SVC_RNDV, &info[0], &rsp, NULL),
				 OCK_RPC_OK);
		assert_int_equal(d.len, sizes[i]);
		assert_int_equal(d.pieces, 1);
		assert_int_equal(d.sum, sum(mem[0], sizes[i]));
		OckRpcDestroyMemoryRegion(T.regions, mr[0]);
		free(mem[0]);
	}
	/* Four buffers in one message, synchronously and not. */
	for (unsigned int i = 0; i < 4; i++) {
		info[i] = client_buffer(100000 * (i + 1), i, &mr[i], &mem[i]);
		want += sum(mem[i], info[i].size);
		want_len += info[i].size;
	}
	memset(&d, 0, sizeof(d));
	assert_int_equal(OckRpcClientCallRndvIov(T.client, SVC_RNDV, &iov, &rsp, NULL), OCK_RPC_OK);
	assert_int_equal(d.pieces, 4);
	assert_int_equal(d.len, want_len);
	assert_int_equal(d.sum, want);
	atomic_store(&rndv_async_done, 0);
	{
		OckRpcCallDone done = { rndv_async_cb, NULL };
		struct rndv_digest ds[8];
		OckRpcMessage rs[8];

		for (int k = 0; k < 8; k++) {
			rs[k] = (OckRpcMessage){ &ds[k], sizeof(ds[k]) };
			assert_int_equal(OckRpcClientCallRndvIov(T.client, SVC_RNDV, &iov, &rs[k], &done),
					 OCK_RPC_OK);
		}
		for (int w = 0; w < 20000 && atomic_load(&rndv_async_done) < 8; w++)
			usleep(1000);
		assert_int_equal(atomic_load(&rndv_async_done), 8);
		for (int k = 0; k < 8; k++)
			assert_int_equal(ds[k].sum, want);
	}
	/* Every context cleaned, every buffer given back. The server's
	 * handler counts its cleanup after the call that gives the buffers
	 * back returns, and its answer went before both: wait for the count.
	 */
	for (int w = 0; w < 2000 && (atomic_load(&T.sh->rndv_allocated) != 0 ||
				     atomic_load(&T.sh->rndv_cleaned) != cleaned + 5 + 1 + 8); w++)
		usleep(1000);
	assert_int_equal(atomic_load(&T.sh->rndv_cleaned), cleaned + 5 + 1 + 8);
	assert_int_equal(atomic_load(&T.sh->rndv_allocated), 0);
	/* Refused: a buffer outside its region, a wrong key, five buffers,
	 * a service that takes no rendezvous.
	 */
	{
		OckRpcMessageInfo bad = info[0];
		OckRpcMessageInfoIov five = { 5, info };

		bad.size += 1;
		assert_int_equal(OckRpcClientCallRndv(T.client, SVC_RNDV, &bad, &rsp, NULL),
				 OCK_RPC_ERR_INVALID_PARAM);
		bad = info[0];
		bad.lKey ^= 0x5a5a;
		assert_int_equal(OckRpcClientCallRndv(T.client, SVC_RNDV, &bad, &rsp, NULL),
				 OCK_RPC_ERR_INVALID_PARAM);
		assert_int_equal(OckRpcClientCallRndvIov(T.client, SVC_RNDV, &five, &rsp, NULL),
				 OCK_RPC_ERR_INVALID_PARAM);
		assert_int_equal(OckRpcClientCallRndv(T.client, SVC_ECHO, &info[0], &rsp, NULL),
				 OCK_RPC_ERR_MISMATCH_MSG_ID);
	}
	for (unsigned int i = 0; i < 4; i++) {
		OckRpcDestroyMemoryRegion(T.regions, mr[i]);
		free(mem[i]);
	}
}

static atomic_int one_sided_done;

static void
one_sided_cb(OckRpcStatus status, void *arg)
{
	(void)arg;
	if (status == OCK_RPC_OK)
		atomic_fetch_add(&one_sided_done, 1);
}

/* WRITE into the server's region, READ it back, as one piece and as SGLs. */
static void
test_one_sided(void **state)
{
	OckRpcMemoryRegionInfo srv;
	OckRpcMessage req = { &srv, 0 }, rsp = { &srv, sizeof(srv) };
	OckRpcMemoryRegion out_mr, in_mr;
	OckRpcMessageInfo out, in;
	uint8_t *out_mem, *in_mem;
	OckRpcRequest r;
	OckRpcRequest pieces[16];
	OckRpcSglRequest sgl = { pieces, 16 };
	OckRpcCallDone done = { one_sided_cb, NULL };

	(void)state;
	/* The server says where its region is, as applications do. */
	assert_int_equal(OckRpcClientCall(T.client, SVC_REGION, &req, &rsp, NULL), OCK_RPC_OK);
	out = client_buffer(200000, 7, &out_mr, &out_mem);
	in = client_buffer(200000, 0, &in_mr, &in_mem);
	memset(in_mem, 0, 200000);
	r = (OckRpcRequest){ .lAddress = out.lAddress, .lKey = out.lKey,
			     .rAddress = srv.lAddress + 4096, .rKey = srv.lKey, .size = 200000 };
	assert_int_equal(OckRpcWrite(T.client, &r, NULL), OCK_RPC_OK);
	assert_memory_equal(T.sh->region + 4096, out_mem, 200000);
	r.lAddress = in.lAddress;
	r.lKey = in.lKey;
	assert_int_equal(OckRpcRead(T.client, &r, NULL), OCK_RPC_OK);
	assert_memory_equal(in_mem, out_mem, 200000);
	/* 16 pieces each way, asynchronously. */
	fill(out_mem, 200000, 99);
	memset(in_mem, 0, 200000);
	for (unsigned int i = 0; i < 16; i++)
		pieces[i] = (OckRpcRequest){ .lAddress = out.lAddress + i * 10000, .lKey = out.lKey,
					     .rAddress = srv.lAddress + i * 20000, .rKey = srv.lKey,
					     .size = 10000 };
	atomic_store(&one_sided_done, 0);
	assert_int_equal(OckRpcWriteSgl(T.client, &sgl, &done), OCK_RPC_OK);
	for (int w = 0; w < 10000 && atomic_load(&one_sided_done) < 1; w++)
		usleep(1000);
	assert_int_equal(atomic_load(&one_sided_done), 1);
	for (unsigned int i = 0; i < 16; i++) {
		pieces[i].lAddress = in.lAddress + i * 10000;
		pieces[i].lKey = in.lKey;
	}
	assert_int_equal(OckRpcReadSgl(T.client, &sgl, NULL), OCK_RPC_OK);
	assert_memory_equal(in_mem, out_mem, 160000);
	/* Refused before anything goes: a local piece outside its region,
	 * 17 pieces, none.
	 */
	r.size = 200001;
	assert_int_equal(OckRpcRead(T.client, &r, NULL), OCK_RPC_ERR_INVALID_PARAM);
	sgl.iovCount = 17;
	assert_int_equal(OckRpcReadSgl(T.client, &sgl, NULL), OCK_RPC_ERR_INVALID_PARAM);
	sgl.iovCount = 0;
	assert_int_equal(OckRpcWriteSgl(T.client, &sgl, NULL), OCK_RPC_ERR_INVALID_PARAM);
	OckRpcDestroyMemoryRegion(T.regions, out_mr);
	OckRpcDestroyMemoryRegion(T.regions, in_mr);
	free(out_mem);
	free(in_mem);
}

/* A region the library allocates is registered with lib/rc at once: a
 * WRITE from it and a READ into it move the bytes.
 */
static void
test_allocated_region(void **state)
{
	OckRpcMemoryRegionInfo srv, mine;
	OckRpcMessage req = { &srv, 0 }, rsp = { &srv, sizeof(srv) };
	OckRpcMemoryRegion mr;
	OckRpcRequest r;
	uint8_t *mem;

	(void)state;
	assert_int_equal(OckRpcClientCall(T.client, SVC_REGION, &req, &rsp, NULL), OCK_RPC_OK);
	assert_int_equal(OckRpcRegisterMemoryRegion(T.regions, 65536, &mr), OCK_RPC_OK);
	assert_int_equal(OckRpcGetMemoryRegionInfo(mr, &mine), OCK_RPC_OK);
	assert_int_equal(mine.size, 65536);
	mem = (uint8_t *)mine.lAddress;
	fill(mem, 65536, 3);
	r = (OckRpcRequest){ .lAddress = mine.lAddress, .lKey = mine.lKey,
			     .rAddress = srv.lAddress + 300000, .rKey = srv.lKey, .size = 65536 };
	assert_int_equal(OckRpcWrite(T.client, &r, NULL), OCK_RPC_OK);
	assert_memory_equal(T.sh->region + 300000, mem, 65536);
	memset(mem, 0, 65536);
	r.lAddress += 4096;
	r.size = 4096;
	assert_int_equal(OckRpcRead(T.client, &r, NULL), OCK_RPC_OK);
	assert_memory_equal(mem + 4096, T.sh->region + 300000, 4096);
	assert_int_equal(mem[0], 0);
	assert_int_equal(OckRpcRegisterMemoryRegion(T.regions, 0, &mr), OCK_RPC_ERR_INVALID_PARAM);
	OckRpcDestroyMemoryRegion(T.regions, mr);
}

static atomic_int breaks;

static int
on_break(OckRpcClient client, uint64_t ctx, const char *payload)
{
	(void)client;
	(void)ctx;
	(void)payload;
	atomic_fetch_add(&breaks, 1);
	return 0;
}

/* A READ the peer refuses (a key it never gave) breaks the connection,
 * as RC does: the operation fails, later calls fail, the break handler
 * runs. Last: the session does not come back.
 */
static void
test_bad_remote_key_breaks_the_session(void **state)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, SERVER_NAME },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" },
		{ OCK_RPC_STR_ENABLE_TLS, "no" },
		{ OCK_RPC_STR_PRE_SEGMENT_SIZE, SEGSIZE },
		{ OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)on_break },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { 5, pairs } };
	OckRpcMemoryRegion mr;
	OckRpcMessageInfo mine;
	uint8_t *mem, b[8] = { 0 };
	OckRpcMessage req = { b, sizeof(b) }, rsp = { b, sizeof(b) };
	OckRpcRequest r;
	OckRpcClient c;

	(void)state;
	assert_int_equal(OckRpcClientConnectWithCfg(SERVER_IP, (uint16_t)atomic_load(&T.sh->port),
						    &c, &cfg), OCK_RPC_OK);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &req, &rsp, NULL), OCK_RPC_OK);
	mine = client_buffer(4096, 1, &mr, &mem);
	r = (OckRpcRequest){ .lAddress = mine.lAddress, .lKey = mine.lKey,
			     .rAddress = T.sh->server_region.lAddress,
			     .rKey = T.sh->server_region.lKey ^ 0xff00,
			     .size = 4096 };
	atomic_store(&breaks, 0);
	assert_int_equal(OckRpcRead(c, &r, NULL), OCK_RPC_ERR);
	for (int w = 0; w < 5000 && atomic_load(&breaks) == 0; w++)
		usleep(1000);
	assert_int_equal(atomic_load(&breaks), 1);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &req, &rsp, NULL), OCK_RPC_ERR_CONN_BROKEN);
	OckRpcClientDisconnect(c);
	OckRpcDestroyMemoryRegion(T.regions, mr);
	free(mem);
	/* The first client is untouched. */
	assert_int_equal(OckRpcClientCall(T.client, SVC_ECHO, &req, &rsp, NULL), OCK_RPC_OK);
}

static struct {
	atomic_int ran;
	unsigned int lcore;
	OckRpcStatus status, sync_status;
} in_done;

static void
done_tries_a_sync_call(OckRpcStatus status, void *arg)
{
	OckRpcMessage req = { "x", 1 }, rsp = { NULL, 0 };

	(void)arg;
	in_done.lcore = rte_lcore_id();
	in_done.status = status;
	in_done.sync_status = OckRpcClientCall(T.client, SVC_ECHO, &req, &rsp, NULL);
	atomic_store(&in_done.ran, 1);
}

/* A client's done callback runs on the control lcore too, where a
 * synchronous call over RDMA would wait for the lcore it blocks: refused,
 * at once.
 */
static void
test_sync_call_from_the_control_lcore_refused(void **state)
{
	OckRpcCallDone done = { .cb = done_tries_a_sync_call };
	char out[2] = "y", back[2];
	OckRpcMessage req = { out, 1 }, rsp = { back, 1 };

	(void)state;
	atomic_store(&in_done.ran, 0);
	assert_int_equal(OckRpcClientCall(T.client, SVC_ECHO, &req, &rsp, &done), OCK_RPC_OK);
	assert_true(wait_for(&in_done.ran, 1, 20));
	assert_int_equal(in_done.status, OCK_RPC_OK);
	assert_int_equal(in_done.lcore, rte_get_main_lcore());
	assert_int_equal(in_done.sync_status, OCK_RPC_ERR);
	/* From this thread the same call works. */
	assert_int_equal(OckRpcClientCall(T.client, SVC_ECHO, &req, &rsp, NULL), OCK_RPC_OK);
}

static void
test_call_with_params(void **state)
{
	(void)state;
	check_call_with_params(T.client, SVC_ECHO);
}

/* The deadlines are the control lcore's over RDMA. */
static void
test_timeouts(void **state)
{
	(void)state;
	check_timeouts(T.client, SVC_SILENT, SVC_ECHO, 20000);
}

/* The handler keeps its context and answers from a thread of its own. */
static void
test_cloned_context_answers_later(void **state)
{
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	uint8_t byte = 0x5a, back = 0, back_async = 0;
	OckRpcMessage q = { &byte, 1 }, r = { &back, 1 }, ra = { &back_async, 1 };

	(void)state;
	assert_int_equal(OckRpcClientCall(T.client, SVC_LATER, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(back, 0xa5);
	assert_int_equal(OckRpcClientCall(T.client, SVC_LATER, &q, &ra, &done), OCK_RPC_OK);
	assert_true(wait_for(&log.calls, 1, 20));
	assert_int_equal(log.last, OCK_RPC_OK);
	assert_int_equal(back_async, 0xa5);
}

/* Up ctx on both ends: the client's own, and the server's for its client. */
static void
test_client_handle_and_up_ctx(void **state)
{
	uint64_t mine = 0, next = 0x1234567890ull, theirs = 0;
	OckRpcMessage q = { &next, sizeof(next) }, r = { &theirs, sizeof(theirs) };

	(void)state;
	assert_int_equal(OckRpcSetUpCtx(T.client, 42), 0);
	assert_int_equal(OckRpcGetUpCtx(T.client, &mine), 0);
	assert_int_equal(mine, 42);
	assert_int_equal(OckRpcClientCall(T.client, SVC_WHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(theirs, next);
}

/* The next connects' segment count, when not the default. */
static const char *segcount;

/* An RDMA client of @p segsize-byte segments to server @p name on @p port,
 * with @p info for the server's new-client handler and a break handler
 * (both optional).
 */

static OckRpcStatus
connect_named(const char *name, int port, const char *segsize, const char *info,
	      OckRpcClientHandler brk, OckRpcClient *c)
{
	RpcConfigPair pairs[7] = {
		{ OCK_RPC_STR_SERVER_NAME, name },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" },
		{ OCK_RPC_STR_ENABLE_TLS, "no" },
		{ OCK_RPC_STR_PRE_SEGMENT_SIZE, segsize },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { 4, pairs } };
	OckRpcStatus st;

	if (info != NULL)
		pairs[cfg.configs.size++] = (RpcConfigPair){ OCK_RPC_STR_CLIENT_CREATE_INFO, info };
	if (brk != NULL)
		pairs[cfg.configs.size++] = (RpcConfigPair){ OCK_RPC_STR_CLIENT_BREAK,
							     (const char *)(uintptr_t)brk };
	if (segcount != NULL)
		pairs[cfg.configs.size++] = (RpcConfigPair){ OCK_RPC_STR_PRE_SEGMENT_COUNT,
							     segcount };
	st = OckRpcClientConnectWithCfg(SERVER_IP, (uint16_t)port, c, &cfg);
	if (st == OCK_RPC_OK)
		OckRpcClientSetTimeout(*c, 20000);
	return st;
}

static OckRpcStatus
connect_to(int port, const char *segsize, const char *info, OckRpcClientHandler brk,
	   OckRpcClient *c)
{
	return connect_named(SERVER_NAME, port, segsize, info, brk, c);
}

/* A client's create info reaches the server's new-client handler, whose
 * refusal fails the connect; the break handler runs once when it goes.
 */
static void
test_new_and_break_handlers(void **state)
{
	int port = atomic_load(&T.sh->port);
	int news = atomic_load(&T.sh->news), breaks = atomic_load(&T.sh->server_breaks);
	OckRpcClient c;

	(void)state;
	assert_int_equal(connect_to(port, SEGSIZE, "rdma-hello", NULL, &c), OCK_RPC_OK);
	assert_true(wait_for(&T.sh->news, news + 1, 20));
	assert_string_equal(T.sh->new_info, "rdma-hello");
	OckRpcClientDisconnect(c);
	assert_true(wait_for(&T.sh->server_breaks, breaks + 1, 20));
	atomic_store(&T.sh->refuse_next, 7);
	assert_int_equal(connect_to(port, SEGSIZE, "refuse-me", NULL, &c), OCK_RPC_ERR);
	assert_int_equal(atomic_load(&T.sh->news), news + 2);
	assert_string_equal(T.sh->new_info, "refuse-me");
	/* Never taken, so never broken. */
	usleep(200000);
	assert_int_equal(atomic_load(&T.sh->server_breaks), breaks + 1);
}

/* Another server's name is refused before the new-client handler hears;
 * a port where nobody listens is refused by the CM.
 */
static void
test_wrong_server_name_refused(void **state)
{
	int port = atomic_load(&T.sh->port), news = atomic_load(&T.sh->news);
	OckRpcClient c;

	(void)state;
	assert_int_equal(connect_named("another-server", port, SEGSIZE, NULL, NULL, &c),
			 OCK_RPC_ERR_INVALID_PARAM);
	assert_int_equal(connect_to(port + 100, SEGSIZE, NULL, NULL, &c),
			 OCK_RPC_ERR_CONN_UNCONNECTED);
	assert_int_equal(atomic_load(&T.sh->news), news);
}

/* Each side's segment size bounds what the other may send it. */
static void
test_segment_sizes_of_both_sides(void **state)
{
	static uint8_t big[100000];
	int port = atomic_load(&T.sh->port), replies = atomic_load(&T.sh->big_replies);
	uint8_t buf[64];
	OckRpcMessage q = { big, 10 }, r = { buf, sizeof(buf) };
	OckRpcClient c;

	(void)state;
	/* A client of 1 KiB segments: the server may not answer 4 KiB. */
	assert_int_equal(connect_to(port, "1024", NULL, NULL, &c), OCK_RPC_OK);
	OckRpcClientSetTimeout(c, 300);
	assert_int_equal(OckRpcClientCall(c, SVC_BIG, &q, &r, NULL), OCK_RPC_ERR_UCP_TIMEOUT);
	assert_true(wait_for(&T.sh->big_replies, replies + 1, 20));
	assert_int_equal(atomic_load(&T.sh->big_status), OCK_RPC_ERR_INVALID_PARAM);
	OckRpcClientSetTimeout(c, 20000);
	r.len = sizeof(buf);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, 10);
	/* And over its own size it may not call. */
	q.len = 1025;
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_ERR_INVALID_PARAM);
	OckRpcClientDisconnect(c);
	/* A client of 128 KiB segments may not send the server (64 KiB) 100000 bytes. */
	assert_int_equal(connect_to(port, "131072", NULL, NULL, &c), OCK_RPC_OK);
	q.len = sizeof(big);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_ERR_INVALID_PARAM);
	q.len = 10;
	r.len = sizeof(buf);
	assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &q, &r, NULL), OCK_RPC_OK);
	assert_int_equal(r.len, 10);
	OckRpcClientDisconnect(c);
}

/* A session takes as many calls at once as its segment count. */
static void
test_full_session_refuses_then_takes(void **state)
{
	OckRpcClient c;

	(void)state;
	segcount = "3";
	assert_int_equal(connect_to(atomic_load(&T.sh->port), SEGSIZE, NULL, NULL, &c),
			 OCK_RPC_OK);
	segcount = NULL;
	check_full_session(c, SVC_SILENT, SVC_ECHO, 20000);
}

static atomic_int doomed_breaks;

/* On the control lcore, where a client leaves from its break handler. */
static int
disconnect_on_break(OckRpcClient client, uint64_t usr, const char *payload)
{
	(void)usr;
	(void)payload;
	atomic_fetch_add(&doomed_breaks, 1);
	OckRpcClientDisconnectBreakHandler(client);
	return 0;
}

/* The server goes while calls wait: each fails once, the client's break
 * handler runs once and disconnects it; the other server is untouched.
 */
static void
test_server_destroy_fails_calls(void **state)
{
	struct done_log log = { 0 };
	OckRpcCallDone done = { count_done, &log };
	OckRpcMessage q = { "q", 1 }, r = { NULL, 0 };
	char back[2];
	OckRpcMessage rb = { back, 1 };
	OckRpcClient c;

	(void)state;
	assert_int_equal(connect_to(atomic_load(&T.sh->doomed_port), SEGSIZE, NULL,
				    disconnect_on_break, &c), OCK_RPC_OK);
	for (int i = 0; i < 10; i++)
		assert_int_equal(OckRpcClientCall(c, SVC_SILENT, &q, &r, &done), OCK_RPC_OK);
	assert_int_equal(OckRpcClientCall(c, SVC_LATER, &q, &r, &done), OCK_RPC_OK);
	assert_true(wait_for(&T.sh->doomed_calls, 11, 20));
	atomic_store(&T.sh->doom, 1);
	assert_true(wait_for(&T.sh->doomed_gone, 1, 20));
	assert_int_equal(atomic_load(&T.sh->kept_reply), OCK_RPC_ERR_CONN_BROKEN);
	assert_true(wait_for(&log.calls, 11, 20));
	assert_int_equal(atomic_load(&log.bad), 11);
	assert_int_equal(log.last, OCK_RPC_ERR_CONN_BROKEN);
	assert_true(wait_for(&doomed_breaks, 1, 20));
	usleep(200000);
	assert_int_equal(atomic_load(&doomed_breaks), 1);
	assert_int_equal(atomic_load(&log.calls), 11);
	assert_int_equal(OckRpcClientCall(T.client, SVC_ECHO, &q, &rb, NULL), OCK_RPC_OK);
	assert_int_equal(back[0], 'q');
}

/* A TLS client's configuration: this side's certificates. */
struct tls_client {
	RpcConfigPair pairs[4];
	OckRpcCreateConfig cfg;
};

/* A TLS session with the TLS server, its calls given 20 s. */
static OckRpcClient
tls_connect(struct tls_client *t)
{
	OckRpcClient c = 0;

	*t = (struct tls_client){
		.pairs = { { OCK_RPC_STR_SERVER_NAME, SERVER_NAME },
			   { OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" },
			   { OCK_RPC_STR_ENABLE_TLS, "yes" },
			   { OCK_RPC_STR_PRE_SEGMENT_SIZE, SEGSIZE } },
		.cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS },
	};
	t->cfg.configs = (RpcConfigs){ 4, t->pairs };
	with_tls(&t->cfg);
	assert_int_equal(OckRpcClientConnectWithCfg(SERVER_IP,
						    (uint16_t)atomic_load(&T.sh->tls_port), &c,
						    &t->cfg), OCK_RPC_OK);
	OckRpcClientSetTimeout(c, 20000);
	return c;
}

/* TLS over RDMA: calls of every size as TLS records in RC SENDs; a
 * plaintext client and a TLS server refuse each other, either way round.
 */
static void
test_tls_sessions(void **state)
{
	static uint8_t q[65536], r[65536];
	int tls_port = atomic_load(&T.sh->tls_port);
	struct tls_client tls;
	unsigned int seed = 7;
	OckRpcClient c;

	(void)state;
	c = tls_connect(&tls);
	/* Few: a sync call here waits for the scheduler to switch four
	 * pollers on two cpus (hcom_stress makes 10^4 through TLS inline).
	 */
	for (int i = 0; i < 300; i++) {
		size_t len = (size_t)rand_r(&seed) % (i % 10 == 0 ? sizeof(q) + 1 : 2048);
		OckRpcMessage req = { q, len }, rsp = { r, sizeof(r) };

		fill(q, len, (unsigned int)i);
		assert_int_equal(OckRpcClientCall(c, SVC_ECHO, &req, &rsp, NULL), OCK_RPC_OK);
		assert_int_equal(rsp.len, len);
		assert_memory_equal(q, r, len);
	}
	OckRpcClientDisconnect(c);
	assert_int_equal(connect_to(tls_port, SEGSIZE, NULL, NULL, &c), OCK_RPC_ERR_ENCRYPT);
	assert_int_equal(OckRpcClientConnectWithCfg(SERVER_IP, (uint16_t)atomic_load(&T.sh->port),
						    &c, &tls.cfg), OCK_RPC_ERR_ENCRYPT);
	/* The first client is untouched. */
	r[0] = 0;
	assert_int_equal(OckRpcClientCall(T.client, SVC_ECHO, &(OckRpcMessage){ "t", 1 },
					  &(OckRpcMessage){ r, 1 }, NULL), OCK_RPC_OK);
	assert_int_equal(r[0], 't');
}

/* Rendezvous on a TLS session: the server READs sealed copies and
 * unseals them; the caller's buffers stay as they were.
 */
static void
test_tls_rendezvous(void **state)
{
	static const size_t sizes[] = { 1, 65537, 1 << 20, 3 << 20 };
	OckRpcMemoryRegion mr[4];
	OckRpcMessageInfo info[4];
	OckRpcMessageInfoIov iov = { 4, info };
	uint8_t *mem[4];
	struct rndv_digest d, ds[8];
	OckRpcMessage rsp = { &d, sizeof(d) }, rs[8];
	OckRpcCallDone done = { rndv_async_cb, NULL };
	uint64_t want = 0, want_len = 0;
	struct tls_client tls;
	OckRpcClient c;

	(void)state;
	c = tls_connect(&tls);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t before;

		info[0] = client_buffer(sizes[i], (unsigned int)i + 7, &mr[0], &mem[0]);
		before = sum(mem[0], sizes[i]);
		memset(&d, 0, sizeof(d));
		assert_int_equal(OckRpcClientCallRndv(c, SVC_RNDV, &info[0], &rsp, NULL), OCK_RPC_OK);
		assert_int_equal(d.len, sizes[i]);
		assert_int_equal(d.sum, before);
		assert_int_equal(sum(mem[0], sizes[i]), before);
		OckRpcDestroyMemoryRegion(T.regions, mr[0]);
		free(mem[0]);
	}
	for (unsigned int i = 0; i < 4; i++) {
		info[i] = client_buffer(100000 * (i + 1), i + 3, &mr[i], &mem[i]);
		want += sum(mem[i], info[i].size);
		want_len += info[i].size;
	}
	atomic_store(&rndv_async_done, 0);
	for (int k = 0; k < 8; k++) {
		rs[k] = (OckRpcMessage){ &ds[k], sizeof(ds[k]) };
		assert_int_equal(OckRpcClientCallRndvIov(c, SVC_RNDV, &iov, &rs[k], &done), OCK_RPC_OK);
	}
	assert_true(wait_for(&rndv_async_done, 8, 20));
	for (int k = 0; k < 8; k++) {
		assert_int_equal(ds[k].pieces, 4);
		assert_int_equal(ds[k].len, want_len);
		assert_int_equal(ds[k].sum, want);
	}
	for (unsigned int i = 0; i < 4; i++) {
		OckRpcDestroyMemoryRegion(T.regions, mr[i]);
		free(mem[i]);
	}
	OckRpcClientDisconnect(c);
	for (int w = 0; w < 2000 && atomic_load(&T.sh->rndv_allocated) != 0; w++)
		usleep(1000);
	assert_int_equal(atomic_load(&T.sh->rndv_allocated), 0);
}

/* Whether @p c's session is broken: its calls fail so, within 10 s. */
static bool
broken(OckRpcClient c)
{
	uint8_t b = 0;

	for (int w = 0; w < 1000; w++) {
		if (OckRpcClientCall(c, SVC_ECHO, &(OckRpcMessage){ "b", 1 },
				     &(OckRpcMessage){ &b, 1 }, NULL) == OCK_RPC_ERR_CONN_BROKEN)
			return true;
		usleep(10000);
	}
	return false;
}

/* One-sided operations on a TLS session: ciphertext on the wire, the
 * plaintext where it belongs at the end (the target unseals a WRITE in
 * place, the caller a READ); the server as the initiator too. A piece
 * outside the target's regions fails and breaks the session, as RC's
 * remote access error does without TLS.
 */
static void
test_tls_one_sided(void **state)
{
	OckRpcMemoryRegionInfo srv;
	OckRpcMemoryRegion out_mr, in_mr;
	OckRpcMessageInfo out, in;
	uint8_t *out_mem, *in_mem;
	OckRpcRequest r, pieces[16];
	OckRpcSglRequest sgl = { pieces, 16 };
	OckRpcCallDone done = { one_sided_cb, NULL };
	int32_t pull_status = -1;
	struct tls_client tls;
	OckRpcClient c;

	(void)state;
	c = tls_connect(&tls);
	assert_int_equal(OckRpcClientCall(c, SVC_REGION, &(OckRpcMessage){ &srv, 0 },
					  &(OckRpcMessage){ &srv, sizeof(srv) }, NULL), OCK_RPC_OK);
	out = client_buffer(300000, 11, &out_mr, &out_mem);
	in = client_buffer(300000, 0, &in_mr, &in_mem);
	memset(in_mem, 0, 300000);
	memset(T.sh->region + 8192, 0, 300000);
	r = (OckRpcRequest){ .lAddress = out.lAddress, .lKey = out.lKey,
			     .rAddress = srv.lAddress + 8192, .rKey = srv.lKey, .size = 300000 };
	assert_int_equal(OckRpcWrite(c, &r, NULL), OCK_RPC_OK);
	assert_memory_equal(T.sh->region + 8192, out_mem, 300000);
	/* The caller's bytes stay plaintext: it WRITEs a sealed copy. */
	assert_int_equal(out_mem[12345], (uint8_t)(12345 * 31 + 11));
	r.lAddress = in.lAddress;
	r.lKey = in.lKey;
	assert_int_equal(OckRpcRead(c, &r, NULL), OCK_RPC_OK);
	assert_memory_equal(in_mem, out_mem, 300000);
	/* 16 pieces each way, asynchronously then not. */
	fill(out_mem, 300000, 5);
	memset(in_mem, 0, 300000);
	for (unsigned int i = 0; i < 16; i++)
		pieces[i] = (OckRpcRequest){ .lAddress = out.lAddress + i * 15000, .lKey = out.lKey,
					     .rAddress = srv.lAddress + i * 30000, .rKey = srv.lKey,
					     .size = 15000 - i };
	atomic_store(&one_sided_done, 0);
	assert_int_equal(OckRpcWriteSgl(c, &sgl, &done), OCK_RPC_OK);
	assert_true(wait_for(&one_sided_done, 1, 20));
	for (unsigned int i = 0; i < 16; i++) {
		assert_memory_equal(T.sh->region + i * 30000, out_mem + i * 15000, 15000 - i);
		pieces[i].lAddress = in.lAddress + i * 15000;
		pieces[i].lKey = in.lKey;
	}
	assert_int_equal(OckRpcReadSgl(c, &sgl, NULL), OCK_RPC_OK);
	for (unsigned int i = 0; i < 16; i++)
		assert_memory_equal(in_mem + i * 15000, out_mem + i * 15000, 15000 - i);
	/* The server READs from this side: this side seals, the server unseals. */
	fill(out_mem, 300000, 77);
	r = (OckRpcRequest){ .lAddress = srv.lAddress + 500000, .lKey = srv.lKey,
			     .rAddress = out.lAddress + 1000, .rKey = out.lKey, .size = 200000 };
	assert_int_equal(OckRpcClientCall(c, SVC_PULL, &(OckRpcMessage){ &r, sizeof(r) },
					  &(OckRpcMessage){ &pull_status, sizeof(pull_status) }, NULL),
			 OCK_RPC_OK);
	assert_int_equal(pull_status, OCK_RPC_OK);
	assert_memory_equal(T.sh->region + 500000, out_mem + 1000, 200000);
	assert_int_equal(atomic_load(&T.sh->pulls), 1);
	/* A last READ of 200 bytes, then one past the server's region and a
	 * WRITE with another key, each on a session of its own: the
	 * target's refusal and RC's.
	 */
	r = (OckRpcRequest){ .lAddress = out.lAddress, .lKey = out.lKey,
			     .rAddress = srv.lAddress, .rKey = srv.lKey, .size = 200 };
	assert_int_equal(OckRpcRead(c, &r, NULL), OCK_RPC_OK);
	assert_memory_equal(out_mem, T.sh->region, 200);
	r.rAddress = srv.lAddress + SERVER_REGION - 100;
	assert_int_equal(OckRpcRead(c, &r, NULL), OCK_RPC_ERR);
	assert_true(broken(c));
	OckRpcClientDisconnect(c);
	c = tls_connect(&tls);
	r.rAddress = srv.lAddress;
	r.rKey = srv.lKey ^ 0x100;
	assert_int_equal(OckRpcWrite(c, &r, NULL), OCK_RPC_ERR);
	assert_true(broken(c));
	OckRpcClientDisconnect(c);
	OckRpcDestroyMemoryRegion(T.regions, out_mr);
	OckRpcDestroyMemoryRegion(T.regions, in_mr);
	free(out_mem);
	free(in_mem);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_byte_exact),
		cmocka_unit_test(test_rendezvous),
		cmocka_unit_test(test_one_sided),
		cmocka_unit_test(test_allocated_region),
		cmocka_unit_test(test_bad_remote_key_breaks_the_session),
		cmocka_unit_test(test_sync_call_from_the_control_lcore_refused),
		cmocka_unit_test(test_call_with_params),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_cloned_context_answers_later),
		cmocka_unit_test(test_client_handle_and_up_ctx),
		cmocka_unit_test(test_new_and_break_handlers),
		cmocka_unit_test(test_wrong_server_name_refused),
		cmocka_unit_test(test_segment_sizes_of_both_sides),
		cmocka_unit_test(test_full_session_refuses_then_takes),
		cmocka_unit_test(test_server_destroy_fails_calls),
		cmocka_unit_test(test_tls_sessions),
		cmocka_unit_test(test_tls_rendezvous),
		cmocka_unit_test(test_tls_one_sided),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
