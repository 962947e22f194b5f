/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Two processes through hcom4db.h: a server with all 1000 services, and a
 * client whose threads make calls of random sizes to random services,
 * synchronous and asynchronous mixed, answers of known and of unknown
 * length, and check every byte of every answer against its call.
 *
 *   hcom_stress server IP PORT SEGSIZE
 *   hcom_stress client IP PORT SEGSIZE CALLS THREADS MAX_BYTES SEED
 *
 * A request starts with its service id and a tag (8 bytes); the server
 * answers with the same 8 bytes and every other byte XORed with 0x5a.
 * Sizes spread over the powers of two up to MAX_BYTES. HCOM_STRESS_TYPE
 * names the transport (TCP, the default, or RDMA). Over RDMA a request
 * longer than the segment size goes by rendezvous: the client registers
 * it as a memory region for the call, the server READs it into buffers
 * of its rndv malloc and answers with the head and an FNV-1a hash of the
 * rest (16 bytes). The client exits
 * 0 when every call ended once, OK, with its own answer byte for byte;
 * it counts calls that failed (an error status, once) apart from wrong
 * ones (another answer, or an end other than once).
 *
 * HCOM_STRESS_ONE_SIDED=N (RDMA): after its calls the client makes N
 * one-sided rounds too, spread over its threads, each thread in a slice
 * of its own of the server's memory region (service 999 tells where it
 * is; calls go to services 0..998): a WRITE of random size, as one piece
 * or an SGL of up to 4, then a READ of the same bytes back, checked byte
 * for byte. Every 64-byte block of what it writes starts with the 16
 * bytes "droce-plaintext!", for a wire to look for.
 *
 * HCOM_STRESS_TLS, when set, names a folder of tests/tools/make_test_pki.sh's
 * certificates: both sides then speak TLS, the server with server.pem,
 * the client with client.pem, both trusting ca.pem and its crl.pem.
 *
 * HCOM_STRESS_APP_EAL, when set, holds EAL arguments: the program then
 * plays an application that runs DPDK itself and starts the EAL before its
 * first hcom call, as such an application would (it never cleans the EAL
 * up: the library's stack runs on it until the process exits).
 *
 * hcom_stress_stepped, the same program built with droce itself
 * (HCOM_STRESS_STEPPED), plays a run-to-completion application: with
 * HCOM_STRESS_APP_EAL and DROCE_HCOM_CONF it makes a droce stack of its
 * own that its one thread polls (droce_lcores_layout_here(), nothing
 * launched) and lends it to the library (droce_rpc_attach()). Its client
 * makes its calls on that thread (THREADS must be 1): the library's
 * waits run the stack's rounds (droce_stack_poll()), and so do the
 * program's own waits for its asynchronous calls. No other thread polls.
 */

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "hcom4db.h"
#include "test_pki.h"
#ifdef HCOM_STRESS_STEPPED
#include "droce_core.h"
#include "droce_net.h"
#include "droce_rpc.h"

/* The stack this thread polls; NULL until main() made it. */
static struct droce_stack *stepped;
#endif

/* A wait of the application's own: a round of its stack where it polls
 * one, else a sleep.
 */
static void
pause_us(unsigned int us)
{
#ifdef HCOM_STRESS_STEPPED
	if (stepped != NULL) {
		droce_stack_poll(stepped);
		return;
	}
#endif
	usleep(us);
}

#define NAME "hcom-stress"
#define HEAD 8
#define WINDOW 16
#define SVC_REGION 999          /* answers with the server's region */
#define REGION_BYTES (16u << 20)
#define MARKER "droce-plaintext!"
#define MARKER_EVERY 64
#define SGL_PIECES_MAX 4

static const char *
transport(void)
{
	const char *type = getenv("HCOM_STRESS_TYPE");

	return type != NULL ? type : "TCP";
}

static bool
over_rdma(void)
{
	return strcmp(transport(), "RDMA") == 0;
}

/* ---- TLS, when HCOM_STRESS_TLS names the certificates ---------------------------------- */

static const char *
tls_enable(void)
{
	return getenv("HCOM_STRESS_TLS") != NULL ? "yes" : "no";
}

static void
tls_callbacks(OckRpcCreateConfig *cfg, bool server)
{
	if (getenv("HCOM_STRESS_TLS") != NULL)
		test_pki_use(cfg, getenv("HCOM_STRESS_TLS"), server);
}

static uint64_t
fnv1a(uint64_t h, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

#define FNV_START 0xcbf29ce484222325ull

/* ---- the server ----------------------------------------------------------------------- */

static void
answer(OckRpcServerContext ctx, OckRpcMessage msg)
{
	uint8_t *r = malloc(msg.len + 1);
	const uint8_t *q = msg.data;
	OckRpcMessage reply = { r, msg.len };
	uint32_t service = 0;

	if (r == NULL || msg.len < HEAD) {
		free(r);
		return;
	}
	memcpy(&service, q, sizeof(service));
	memcpy(r, q, HEAD);
	for (size_t i = HEAD; i < msg.len; i++)
		r[i] = q[i] ^ 0x5a;
	OckRpcServerReply(ctx, (uint16_t)service, &reply, NULL);
	free(r);
}

/* A rendezvous message: its pieces one after another, hashed. */
static void
answer_rndv(OckRpcServerRndvContext ctx, OckRpcRndvMessage msg)
{
	uint8_t r[HEAD + 8];
	OckRpcMessage reply = { r, sizeof(r) };
	uint64_t h = FNV_START;
	size_t seen = 0;
	uint32_t service = 0;

	for (uint16_t i = 0; i < msg.cnt; i++) {
		const uint8_t *p = msg.msg[i].data;
		size_t len = msg.msg[i].len;

		for (size_t k = 0; k < len; k++, seen++) {
			if (seen < HEAD)
				r[seen] = p[k];
			else
				h = fnv1a(h, p + k, 1);
		}
	}
	memcpy(&service, r, sizeof(service));
	memcpy(r + HEAD, &h, sizeof(h));
	OckRpcServerReplyRndv(ctx, (uint16_t)service, &reply, NULL);
	OckRpcServerCleanupRndvCtx(ctx);
}

static int
rndv_malloc(uint64_t size, uintptr_t *address, uint32_t *key)
{
	*address = (uintptr_t)malloc(size);
	*key = 0;
	return *address != 0 ? 0 : -1;
}

static int
rndv_free(uintptr_t address)
{
	free((void *)address);
	return 0;
}

static OckRpcMemoryRegionInfo server_region;

static void
region(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcMessage reply = { &server_region, sizeof(server_region) };

	(void)msg;
	OckRpcServerReply(ctx, SVC_REGION, &reply, NULL);
}

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int
serve(const char *ip, const char *port, const char *segsize)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, NAME }, { OCK_RPC_STR_COMMUNICATION_TYPE, transport() },
		{ OCK_RPC_STR_ENABLE_TLS, tls_enable() }, { OCK_RPC_STR_WRK_THR_GRP, "2" },
		{ OCK_RPC_STR_PRE_SEGMENT_SIZE, segsize },
		{ OCK_RPC_STR_ENABLE_SEND_RNDV, "yes" },
		{ OCK_RPC_STR_RNDV_MALLOC, (const char *)(uintptr_t)rndv_malloc },
		{ OCK_RPC_STR_RNDV_MFREE, (const char *)(uintptr_t)rndv_free },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { over_rdma() ? 8 : 5, pairs } };
	OckRpcService region_svc = { SVC_REGION, region };
	OckRpcMemoryRegion mr;
	OckRpcServer server;
	char **ips;
	uint16_t *ports;
	int n;

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	tls_callbacks(&cfg, true);
	if (OckRpcServerCreateWithCfg(ip, (uint16_t)atoi(port), &server, &cfg) != OCK_RPC_OK)
		return 1;
	for (uint16_t id = 0; id < SVC_REGION; id++) {
		OckRpcService s = { id, answer };
		OckRpcRndvService r = { id, answer_rndv };

		if (OckRpcServerAddService(server, &s) != OCK_RPC_OK ||
		    (over_rdma() && OckRpcServerAddRndvService(server, &r) != OCK_RPC_OK))
			return 1;
	}
	/* The region after the start: over RDMA its key is then the one a
	 * peer's READs and WRITEs use.
	 */
	if (OckRpcServerAddService(server, &region_svc) != OCK_RPC_OK ||
	    OckRpcServerStart(server) != OCK_RPC_OK ||
	    OckRpcRegisterMemoryRegion(server, REGION_BYTES, &mr) != OCK_RPC_OK ||
	    OckRpcGetMemoryRegionInfo(mr, &server_region) != OCK_RPC_OK ||
	    !OckRpcGetOobIpAndPort(server, &ips, &ports, &n))
		return 1;
	printf("listening on %s:%u\n", ips[0], ports[0]);
	fflush(stdout);
	free(ips[0]);
	free(ips);
	free(ports);
	while (!stop)
		pause();
	OckRpcServerDestroy(server);
	OckRpcDestroyMemoryRegion(server, mr);
	return 0;
}

/* ---- the client ----------------------------------------------------------------------- */

struct call {
	uint8_t *req;
	OckRpcMessage q, r;
	OckRpcCallDone done;
	atomic_int ended;
	OckRpcStatus status;
	bool alloc;             /* the library allocates the answer */
	OckRpcMemoryRegion mr;  /* a rendezvous call's request */
	OckRpcMessageInfo info;
};

struct worker {
	pthread_t thread;
	OckRpcClient client;
	OckRpcServer regions;   /* what memory regions are registered with */
	size_t segsize;
	unsigned long calls, max;
	unsigned int seed, id;
	atomic_ulong bad, failed, ok;
	unsigned long rndv;     /* of the right ones, by rendezvous */
	uint64_t bytes;
	struct call window[WINDOW];
	/* One-sided rounds: how many, and what they ended as. */
	unsigned long rounds, rounds_ok, rounds_failed, rounds_bad;
	uint64_t rounds_bytes;
	OckRpcMemoryRegionInfo slice;   /* its part of the server's region */
};

static void
call_done(OckRpcStatus status, void *arg)
{
	struct call *c = arg;

	c->status = status;
	atomic_fetch_add(&c->ended, 1);
}

/* Sizes spread over the powers of two: as many small as large. */
static size_t
pick_size(struct worker *w)
{
	unsigned int bits = 0;
	size_t size;

	while ((1ul << bits) < w->max)
		bits++;
	size = (size_t)rand_r(&w->seed) % (((size_t)1 << (rand_r(&w->seed) % (bits + 1))) + 1);
	return size < HEAD ? HEAD : size > w->max ? w->max : size;
}

static bool
is_rndv(const struct worker *w, const struct call *c)
{
	return over_rdma() && c->q.len > w->segsize;
}

static void
fill(struct worker *w, struct call *c, unsigned long n)
{
	uint32_t service = (uint32_t)rand_r(&w->seed) % SVC_REGION, tag = (uint32_t)n;
	size_t len = pick_size(w);

	c->req = malloc(len);
	memcpy(c->req, &service, 4);
	memcpy(c->req + 4, &tag, 4);
	for (size_t i = HEAD; i < len; i++)
		c->req[i] = (uint8_t)(rand_r(&w->seed) ^ i);
	c->q = (OckRpcMessage){ c->req, len };
	c->alloc = rand_r(&w->seed) % 2 == 0;
	if (is_rndv(w, c)) {
		OckRpcMemoryRegionInfo mi;

		len = HEAD + 8;
		if (OckRpcRegisterAssignMemoryRegion(w->regions, (uintptr_t)c->req, c->q.len,
						     &c->mr) != 0 ||
		    OckRpcGetMemoryRegionInfo(c->mr, &mi) != 0)
			abort();
		c->info = (OckRpcMessageInfo){ (uintptr_t)c->req, mi.lKey, (uint32_t)c->q.len };
	}
	c->r = c->alloc ? (OckRpcMessage){ NULL, 0 } : (OckRpcMessage){ malloc(len), len };
	atomic_store(&c->ended, 0);
}

/* The call's request, by the way it goes. */
static OckRpcStatus
call(struct worker *w, struct call *c, OckRpcCallDone *done)
{
	uint16_t service = (uint16_t)(*(uint32_t *)c->req);

	if (is_rndv(w, c))
		return OckRpcClientCallRndv(w->client, service, &c->info, &c->r, done);
	return OckRpcClientCall(w->client, service, &c->q, &c->r, done);
}

/* The answer is the request's head and its other bytes XORed (or, for
 * a rendezvous call, hashed).
 */
static bool
check(const struct worker *w, const struct call *c)
{
	const uint8_t *q = c->req, *r = c->r.data;

	if (is_rndv(w, c)) {
		uint64_t h = fnv1a(FNV_START, q + HEAD, c->q.len - HEAD);

		return c->status == OCK_RPC_OK && c->r.len == HEAD + 8 &&
		       memcmp(q, r, HEAD) == 0 && memcmp(r + HEAD, &h, 8) == 0;
	}
	if (c->status != OCK_RPC_OK || c->r.len != c->q.len || memcmp(q, r, HEAD) != 0)
		return false;
	for (size_t i = HEAD; i < c->q.len; i++)
		if (r[i] != (q[i] ^ 0x5a))
			return false;
	return true;
}

static void
finish(struct worker *w, struct call *c)
{
	if (atomic_load(&c->ended) == 1 && c->status != OCK_RPC_OK) {
		/* Failed, once: not wrong (a broken session fails its calls). */
		if (atomic_fetch_add(&w->failed, 1) < 5)
			fprintf(stderr, "thread %u: a call of %zu bytes failed: status %d\n",
				w->id, c->q.len, (int)c->status);
	} else if (atomic_load(&c->ended) != 1 || !check(w, c)) {
		if (atomic_fetch_add(&w->bad, 1) < 5)
			fprintf(stderr, "thread %u: a call of %zu bytes: status %d, %zu bytes back, ended %d times\n",
				w->id, c->q.len, (int)c->status, c->r.len, atomic_load(&c->ended));
	} else {
		atomic_fetch_add(&w->ok, 1);
		w->bytes += 2 * c->q.len;
		w->rndv += is_rndv(w, c);
	}
	if (is_rndv(w, c))
		OckRpcDestroyMemoryRegion(w->regions, c->mr);
	free(c->req);
	free(c->r.data);
	c->req = NULL;
}

/* ---- one-sided rounds ---------------------------------------------------------------- */

/* A local buffer of @p len bytes in a region of its own. */
static uint8_t *
local_buffer(struct worker *w, size_t len, OckRpcMemoryRegion *mr, OckRpcMemoryRegionInfo *info)
{
	uint8_t *p = aligned_alloc(4096, (len + 4095) / 4096 * 4096);

	if (p == NULL ||
	    OckRpcRegisterAssignMemoryRegion(w->regions, (uintptr_t)p, len, mr) != OCK_RPC_OK ||
	    OckRpcGetMemoryRegionInfo(*mr, info) != OCK_RPC_OK)
		abort();
	return p;
}

/* @p len bytes between @p out (or @p in) and the slice at @p offset, as
 * up to SGL_PIECES_MAX pieces; asynchronous when @p async.
 */
static OckRpcStatus
one_sided_move(struct worker *w, bool write, const OckRpcMemoryRegionInfo *local,
	       size_t offset, size_t len, bool async)
{
	OckRpcRequest piece[SGL_PIECES_MAX];
	unsigned int count = 1 + (unsigned int)rand_r(&w->seed) % SGL_PIECES_MAX;
	OckRpcSglRequest sgl = { piece, 0 };
	struct call c = { 0 };
	OckRpcCallDone done = { call_done, &c };
	OckRpcStatus st;
	size_t at = 0;

	if (count > len)
		count = (unsigned int)len;
	for (unsigned int i = 0; i < count; i++) {
		size_t n = i + 1 == count ? len - at : len / count;

		piece[i] = (OckRpcRequest){ .lAddress = local->lAddress + at, .lKey = local->lKey,
					    .rAddress = w->slice.lAddress + offset + at,
					    .rKey = w->slice.lKey, .size = (uint32_t)n };
		at += n;
	}
	sgl.iovCount = (uint16_t)count;
	if (write)
		st = count == 1 ? OckRpcWrite(w->client, piece, async ? &done : NULL)
		     : OckRpcWriteSgl(w->client, &sgl, async ? &done : NULL);
	else
		st = count == 1 ? OckRpcRead(w->client, piece, async ? &done : NULL)
		     : OckRpcReadSgl(w->client, &sgl, async ? &done : NULL);
	if (st != OCK_RPC_OK || !async)
		return st;
	while (atomic_load(&c.ended) == 0)
		pause_us(50);
	return c.status;
}

/* WRITE random bytes (the marker heading each block) to the slice, READ
 * them back into another buffer, compare.
 */
static void
one_sided_rounds(struct worker *w)
{
	OckRpcMemoryRegionInfo out_info, in_info;
	OckRpcMemoryRegion out_mr, in_mr;
	size_t max = w->max < w->slice.size ? w->max : w->slice.size;
	uint8_t *out = local_buffer(w, max, &out_mr, &out_info);
	uint8_t *in = local_buffer(w, max, &in_mr, &in_info);

	for (unsigned long n = 0; n < w->rounds; n++) {
		size_t len = pick_size(w), offset;
		OckRpcStatus st;

		if (len > max)
			len = max;
		offset = (size_t)rand_r(&w->seed) % (w->slice.size - len + 1);

		for (size_t i = 0; i < len; i++)
			out[i] = i % MARKER_EVERY < sizeof(MARKER) - 1 ? (uint8_t)MARKER[i % MARKER_EVERY]
				 : (uint8_t)rand_r(&w->seed);
		memset(in, 0, len);
		st = one_sided_move(w, true, &out_info, offset, len, n % 2 == 1);
		if (st == OCK_RPC_OK)
			st = one_sided_move(w, false, &in_info, offset, len, n % 3 == 1);
		if (st != OCK_RPC_OK) {
			if (w->rounds_failed++ < 5)
				fprintf(stderr, "thread %u: a one-sided round of %zu bytes failed: status %d\n",
					w->id, len, (int)st);
		} else if (memcmp(out, in, len) != 0) {
			if (w->rounds_bad++ < 5)
				fprintf(stderr, "thread %u: a one-sided round of %zu bytes read back other bytes\n",
					w->id, len);
		} else {
			w->rounds_ok++;
			w->rounds_bytes += len;
		}
	}
	OckRpcDestroyMemoryRegion(w->regions, out_mr);
	OckRpcDestroyMemoryRegion(w->regions, in_mr);
	free(out);
	free(in);
}

/* Even calls synchronous, odd ones asynchronous with up to WINDOW waiting;
 * then the one-sided rounds.
 */
static void *
client_thread(void *arg)
{
	struct worker *w = arg;
	unsigned long next_async = 0;

	for (unsigned long n = 0; n < w->calls; n++) {
		if (n % 2 == 0) {
			struct call c = { 0 };

			fill(w, &c, n);
			c.status = call(w, &c, NULL);
			atomic_store(&c.ended, 1);
			finish(w, &c);
			continue;
		}
		struct call *c = &w->window[next_async++ % WINDOW];
		OckRpcStatus st;

		if (c->req != NULL) {
			while (atomic_load(&c->ended) == 0)
				pause_us(50);
			finish(w, c);
		}
		fill(w, c, n);
		c->done = (OckRpcCallDone){ call_done, c };
		while ((st = call(w, c, &c->done)) == OCK_RPC_ERR_NO_MEMORY)
			pause_us(100);
		if (st != OCK_RPC_OK) {
			c->status = st;
			atomic_store(&c->ended, 1);
		}
	}
	for (unsigned int i = 0; i < WINDOW; i++)
		if (w->window[i].req != NULL) {
			while (atomic_load(&w->window[i].ended) == 0)
				pause_us(50);
			finish(w, &w->window[i]);
		}
	if (w->rounds != 0)
		one_sided_rounds(w);
	return NULL;
}

static int
run_client(char **argv)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, NAME }, { OCK_RPC_STR_COMMUNICATION_TYPE, transport() },
		{ OCK_RPC_STR_ENABLE_TLS, tls_enable() }, { OCK_RPC_STR_PRE_SEGMENT_SIZE, argv[4] },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { 4, pairs } };
	unsigned long calls = strtoul(argv[5], NULL, 10), threads = strtoul(argv[6], NULL, 10);
	unsigned long max = strtoul(argv[7], NULL, 10), seed = strtoul(argv[8], NULL, 10);
	unsigned long ok = 0, bad = 0, failed = 0, rndv = 0;
	unsigned long rounds = getenv("HCOM_STRESS_ONE_SIDED") != NULL
			       ? strtoul(getenv("HCOM_STRESS_ONE_SIDED"), NULL, 10) : 0;
	unsigned long rounds_ok = 0, rounds_failed = 0, rounds_bad = 0;
	uint64_t bytes = 0, rounds_bytes = 0;
	OckRpcMemoryRegionInfo region_info = { 0 };
	struct worker *w = calloc(threads, sizeof(*w));
	struct timespec t0, t1;
	bool connected = false, have_regions = false;
	OckRpcClient client;
	OckRpcServer regions;
	double s;

	/* As hcom's users do: memory regions belong to a server, here one
	 * that never starts.
	 */
	tls_callbacks(&cfg, false);
	if (w == NULL || threads == 0 || max < HEAD)
		goto fail;
	if (OckRpcClientConnectWithCfg(argv[2], (uint16_t)atoi(argv[3]), &client, &cfg) !=
	    OCK_RPC_OK)
		goto fail;
	connected = true;
	if (OckRpcServerCreateWithCfg(argv[2], 0, &regions, &cfg) != OCK_RPC_OK)
		goto fail;
	have_regions = true;
	OckRpcClientSetTimeout(client, 30000);
	if (rounds != 0 &&
	    (OckRpcClientCall(client, SVC_REGION, &(OckRpcMessage){ &region_info, 0 },
			      &(OckRpcMessage){ &region_info, sizeof(region_info) },
			      NULL) != OCK_RPC_OK || region_info.size < threads)) {
		fprintf(stderr, "the server's region: no answer\n");
		goto fail;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i < threads; i++) {
		w[i] = (struct worker){ .client = client, .regions = regions,
					.segsize = strtoul(argv[4], NULL, 10), .max = max,
					.id = (unsigned int)i,
					.seed = (unsigned int)(seed * 7919 + i),
					.calls = calls / threads + (i < calls % threads),
					.rounds = rounds / threads + (i < rounds % threads) };
		w[i].slice = (OckRpcMemoryRegionInfo){
			.lAddress = region_info.lAddress + i * (region_info.size / threads),
			.lKey = region_info.lKey, .size = (uint32_t)(region_info.size / threads) };
#ifdef HCOM_STRESS_STEPPED
		if (stepped != NULL) {
			client_thread(&w[i]);   /* the one thread that polls */
			continue;
		}
#endif
		pthread_create(&w[i].thread, NULL, client_thread, &w[i]);
	}
	for (unsigned long i = 0; i < threads; i++) {
#ifdef HCOM_STRESS_STEPPED
		if (stepped == NULL)
#endif
			pthread_join(w[i].thread, NULL);
		ok += atomic_load(&w[i].ok);
		bad += atomic_load(&w[i].bad);
		failed += atomic_load(&w[i].failed);
		rndv += w[i].rndv;
		bytes += w[i].bytes;
		rounds_ok += w[i].rounds_ok;
		rounds_failed += w[i].rounds_failed;
		rounds_bad += w[i].rounds_bad;
		rounds_bytes += w[i].rounds_bytes;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%lu calls from %lu threads: %lu right (%lu by rendezvous), %lu failed, %lu wrong; %.1f MB both ways in %.2f s (%.0f calls/s)\n",
	       calls, threads, ok, rndv, failed, bad, (double)bytes / 1e6, s, (double)calls / s);
	if (rounds != 0)
		printf("%lu one-sided rounds from %lu threads: %lu right, %lu failed, %lu wrong; %.1f MB written and read back\n",
		       rounds, threads, rounds_ok, rounds_failed, rounds_bad, (double)rounds_bytes / 1e6);
	OckRpcClientDisconnect(client);
	OckRpcServerDestroy(regions);
	free(w);
	return ok == calls && bad == 0 && rounds_ok == rounds && rounds_bad == 0 ? 0 : 1;
fail:
	if (have_regions)
		OckRpcServerDestroy(regions);
	if (connected)
		OckRpcClientDisconnect(client);
	free(w);
	return 1;
}

/* The EAL as an application that runs DPDK starts it; 0 when not asked. */
static int
app_eal_start(void)
{
	/* Static: the EAL may keep pointers into its arguments. */
	static char *eal_argv[64] = { (char *)"hcom_stress-app" }, *args;
	const char *env = getenv("HCOM_STRESS_APP_EAL");
	char *save = NULL;
	int eal_argc = 1;

	if (env == NULL)
		return 0;
	args = strdup(env);
	if (args == NULL)
		return -1;
	for (char *tok = strtok_r(args, " ", &save); tok != NULL && eal_argc < 63;
	     tok = strtok_r(NULL, " ", &save))
		eal_argv[eal_argc++] = tok;
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "HCOM_STRESS_APP_EAL: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	printf("the application started the EAL\n");
	return 0;
}

#ifdef HCOM_STRESS_STEPPED
/* A stack from DROCE_HCOM_CONF that this thread alone runs, lent to the
 * library.
 */
static int
stepped_start(void)
{
	const char *file = getenv("DROCE_HCOM_CONF");
	static struct droce_conf conf;
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN];

	if (file == NULL || getenv("HCOM_STRESS_APP_EAL") == NULL) {
		fprintf(stderr, "hcom_stress_stepped needs HCOM_STRESS_APP_EAL and DROCE_HCOM_CONF\n");
		return -1;
	}
	if (droce_conf_load(&conf, file, NULL, 0, err, sizeof(err)) != 0 ||
	    droce_lcores_layout_here(&conf, &layout, err, sizeof(err)) != 0)
		goto fail;
	stepped = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (stepped == NULL)
		goto fail;
	/* Lent before the start: lib/rc takes its QPNs on a stopped stack. */
	if (droce_rpc_attach(stepped, &conf, err, sizeof(err)) != 0)
		goto fail;
	if (droce_stack_start(stepped, false) != 0) {
		snprintf(err, sizeof(err), "the stack did not start");
		goto fail;
	}
	printf("the application polls its own stack\n");
	return 0;
fail:
	fprintf(stderr, "hcom_stress_stepped: %s\n", err);
	return -1;
}
#endif

int
main(int argc, char **argv)
{
	if (app_eal_start() != 0)
		return 2;
#ifdef HCOM_STRESS_STEPPED
	if (stepped_start() != 0)
		return 2;
	if (argc == 9 && strtoul(argv[6], NULL, 10) != 1) {
		fprintf(stderr, "hcom_stress_stepped: THREADS must be 1 (the thread that polls)\n");
		return 2;
	}
#endif
	if (argc == 5 && strcmp(argv[1], "server") == 0)
		return serve(argv[2], argv[3], argv[4]);
	if (argc == 9 && strcmp(argv[1], "client") == 0)
		return run_client(argv);
	fprintf(stderr, "usage: %s server IP PORT SEGSIZE\n"
		"       %s client IP PORT SEGSIZE CALLS THREADS MAX_BYTES SEED\n", argv[0], argv[0]);
	return 2;
}
