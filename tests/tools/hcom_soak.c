/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * hcom_soak: many hcom4db sessions of one process against droce's own RPC
 * server (rpc.port, its echo service 0), for the soak test. Each session
 * keeps one asynchronous call in flight, of a random size up to MAX_BYTES,
 * and checks every answer byte for byte against its call. A session whose
 * call failed is connected again (a new session) and goes on.
 *
 *   hcom_soak IP PORT SECONDS SESSIONS MAX_BYTES SEED [TLS_DIR]
 *
 * TLS_DIR holds tests/tools/make_test_pki.sh's certificates (TLS on; the
 * client's key passphrase is "client-pass"). RDMA needs DROCE_HCOM_CONF
 * and DROCE_HCOM_EAL, as every hcom4db client over droce does.
 *
 * Prints "hcom_soak: connected N sessions of M" once it tried them all, a
 * line a second, then the totals: calls right, failed (an error status its
 * caller saw, once), wrong (another answer, or an end other than once,
 * or none within the library's timeout and a margin), and sessions
 * connected again. Exit status: 0 when no call was wrong and some were
 * right, 1 otherwise, 2 for bad arguments.
 */

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hcom4db.h"
#include "test_pki.h"

#define PROG "hcom_soak"
#define SERVER_NAME "droce"
#define SVC_ECHO 0
#define SESSIONS_MAX 1000
#define BYTES_MAX 65536
#define HEAD 16                 /* session, call number, length */
#define CALL_TIMEOUT_MS 10000
/* A call with no end this long after its start is wrong, not slow. */
#define CALL_LOST_S (CALL_TIMEOUT_MS / 1000.0 + 10)
/* A session that could not connect tries again after this. */
#define RECONNECT_S 1.0

struct session {
	OckRpcClient client;
	bool connected, in_flight;
	double since;                /* the call's start, or the failed connect's */
	uint32_t id;
	uint64_t calls;              /* this session's calls so far: the next one's number */
	uint8_t *req, *rsp;
	OckRpcMessage q, r;
	OckRpcCallDone done;
	atomic_int ended;
	OckRpcStatus status;
};

static struct {
	const char *ip;
	uint16_t port;
	unsigned int max_bytes;
	uint64_t seed;
	OckRpcCreateConfig cfg;
	uint64_t right, failed, wrong, reconnects, connect_failures, bytes;
	atomic_uint_fast64_t breaks;
} soak;

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* splitmix64: the bytes of a call follow from the seed, session and number. */
static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int
server_gone(OckRpcClient client, uint64_t ctx, const char *payload)
{
	(void)client;
	(void)ctx;
	(void)payload;
	atomic_fetch_add(&soak.breaks, 1);
	return 0;
}

static void
call_done(OckRpcStatus status, void *arg)
{
	struct session *s = arg;

	s->status = status;
	atomic_fetch_add_explicit(&s->ended, 1, memory_order_release);
}

static bool
session_connect(struct session *s)
{
	s->since = now_s();
	if (OckRpcClientConnectWithCfg(soak.ip, soak.port, &s->client, &soak.cfg) != OCK_RPC_OK) {
		if (soak.connect_failures++ < 5)
			fprintf(stderr, PROG ": session %u: cannot connect to %s:%u\n", s->id,
				soak.ip, soak.port);
		return false;
	}
	OckRpcClientSetTimeout(s->client, CALL_TIMEOUT_MS);
	s->connected = true;
	return true;
}

/* A new session in place of one whose call failed. */
static void
session_renew(struct session *s)
{
	OckRpcClientDisconnect(s->client);
	s->connected = false;
	soak.reconnects++;
	session_connect(s);
}

/* Call number s->calls of session s: its head, then bytes of its own. */
static void
call_fill(struct session *s)
{
	uint64_t x = mix(soak.seed ^ ((uint64_t)s->id << 40) ^ s->calls);
	uint32_t len = HEAD + (uint32_t)(x % (soak.max_bytes - HEAD + 1));

	memcpy(s->req, &s->id, 4);
	memcpy(s->req + 4, &s->calls, 8);
	memcpy(s->req + 12, &len, 4);
	for (uint32_t i = HEAD; i < len; i += 8) {
		x = mix(x);
		memcpy(s->req + i, &x, len - i < 8 ? len - i : 8);
	}
	s->q = (OckRpcMessage){ s->req, len };
	s->r = (OckRpcMessage){ s->rsp, soak.max_bytes };
}

/* Its clock read now: a pass's connects before it may have taken long. */
static void
call_start(struct session *s)
{
	OckRpcStatus st;

	call_fill(s);
	s->calls++;
	atomic_store(&s->ended, 0);
	s->since = now_s();
	st = OckRpcClientCall(s->client, SVC_ECHO, &s->q, &s->r, &s->done);
	if (st == OCK_RPC_OK) {
		s->in_flight = true;
		return;
	}
	if (soak.failed++ < 5)
		fprintf(stderr, PROG ": session %u: call %" PRIu64 " refused: status %d\n", s->id,
			s->calls - 1, (int)st);
	session_renew(s);
}

/* The call in flight ended (or never will): judged once. */
static void
call_finish(struct session *s, double now)
{
	int ended = atomic_load_explicit(&s->ended, memory_order_acquire);

	if (ended == 0 && now - s->since < CALL_LOST_S)
		return;
	s->in_flight = false;
	if (ended == 1 && s->status != OCK_RPC_OK) {
		if (soak.failed++ < 5)
			fprintf(stderr, PROG ": session %u: call %" PRIu64 " of %zu bytes failed: status %d\n",
				s->id, s->calls - 1, s->q.len, (int)s->status);
		session_renew(s);
		return;
	}
	if (ended != 1 || s->r.len != s->q.len || memcmp(s->q.data, s->r.data, s->q.len) != 0) {
		if (soak.wrong++ < 5)
			fprintf(stderr, PROG ": session %u: call %" PRIu64 " of %zu bytes: ended %d times, status %d, %zu bytes back%s\n",
				s->id, s->calls - 1, s->q.len, ended, (int)s->status, s->r.len,
				ended == 1 && s->r.len == s->q.len ? ", bytes differ" : "");
		if (ended == 0) {
			/* Its buffers may still be written: the session goes with them. */
			fprintf(stderr, PROG ": session %u: a call with no end after %.0f s\n",
				s->id, CALL_LOST_S);
			exit(1);
		}
		session_renew(s);
		return;
	}
	soak.right++;
	soak.bytes += 2 * s->q.len;
}

/* One look at every session; whether anything happened. */
static bool
sessions_step(struct session *ss, unsigned int n, bool start_new)
{
	double now = now_s();
	bool busy = false;

	for (unsigned int i = 0; i < n; i++) {
		struct session *s = &ss[i];

		if (s->in_flight) {
			call_finish(s, now);
			if (s->in_flight)
				continue;
			busy = true;
		}
		if (!start_new)
			continue;
		if (!s->connected && (now - s->since < RECONNECT_S || !session_connect(s)))
			continue;
		call_start(s);
		busy = true;
	}
	return busy;
}

static void
nap(void)
{
	struct timespec t = { 0, 20000 };

	nanosleep(&t, NULL);
}

int
main(int argc, char **argv)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, SERVER_NAME },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" },
		{ OCK_RPC_STR_ENABLE_TLS, argc > 7 ? "yes" : "no" },
		{ OCK_RPC_STR_HEATBEAT_IDLE, "1" },
		{ OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)server_gone },
	};
	unsigned long nb = argc > 4 ? strtoul(argv[4], NULL, 10) : 0;
	double seconds = argc > 3 ? atof(argv[3]) : 0, t0, last, end;
	uint64_t last_right = 0;
	struct session *ss;
	unsigned int up = 0;

	soak.max_bytes = argc > 5 ? (unsigned int)strtoul(argv[5], NULL, 10) : 0;
	if (argc < 7 || argc > 8 || seconds <= 0 || nb == 0 || nb > SESSIONS_MAX ||
	    soak.max_bytes < HEAD || soak.max_bytes > BYTES_MAX) {
		fprintf(stderr, "usage: %s IP PORT SECONDS SESSIONS(1..%u) MAX_BYTES(%u..%u) SEED [TLS_DIR]\n",
			argv[0], SESSIONS_MAX, HEAD, BYTES_MAX);
		return 2;
	}
	soak.ip = argv[1];
	soak.port = (uint16_t)strtoul(argv[2], NULL, 10);
	soak.seed = strtoull(argv[6], NULL, 10);
	soak.cfg = (OckRpcCreateConfig){ .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
					 .configs = { (int)(sizeof(pairs) / sizeof(pairs[0])), pairs } };
	if (argc > 7)
		test_pki_use(&soak.cfg, argv[7], false);
	ss = calloc(nb, sizeof(*ss));
	if (ss == NULL)
		return 1;
	for (unsigned int i = 0; i < nb; i++) {
		ss[i].id = i;
		ss[i].req = malloc(soak.max_bytes);
		ss[i].rsp = malloc(soak.max_bytes);
		ss[i].done = (OckRpcCallDone){ call_done, &ss[i] };
		if (ss[i].req == NULL || ss[i].rsp == NULL)
			return 1;
		up += session_connect(&ss[i]);
	}
	printf(PROG ": connected %u sessions of %lu to %s:%u, TLS %s, seed %" PRIu64 "\n", up, nb,
	       soak.ip, soak.port, argc > 7 ? "on" : "off", soak.seed);
	fflush(stdout);
	t0 = last = now_s();
	end = t0 + seconds;
	while (now_s() < end) {
		if (!sessions_step(ss, (unsigned int)nb, true))
			nap();
		if (now_s() - last >= 1) {
			last = now_s();
			printf(PROG ": %.0f s: %" PRIu64 " calls/s, %" PRIu64 " right, %" PRIu64
			       " failed, %" PRIu64 " wrong\n", last - t0, soak.right - last_right,
			       soak.right, soak.failed, soak.wrong);
			fflush(stdout);
			last_right = soak.right;
		}
	}
	/* The calls still in flight end, each within its timeout. */
	for (bool waiting = true; waiting;) {
		waiting = false;
		sessions_step(ss, (unsigned int)nb, false);
		for (unsigned int i = 0; i < nb; i++)
			waiting |= ss[i].in_flight;
		if (waiting)
			nap();
	}
	printf(PROG ": %lu sessions, %.1f s: %" PRIu64 " calls right (%.1f MB each way), %" PRIu64
	       " failed, %" PRIu64 " wrong; %" PRIu64 " sessions connected again, %" PRIu64
	       " connects failed, %" PRIu64 " breaks seen\n", nb, now_s() - t0, soak.right,
	       (double)soak.bytes / 2e6, soak.failed, soak.wrong, soak.reconnects,
	       soak.connect_failures, (uint64_t)atomic_load(&soak.breaks));
	for (unsigned int i = 0; i < nb; i++) {
		if (ss[i].connected)
			OckRpcClientDisconnect(ss[i].client);
		free(ss[i].req);
		free(ss[i].rsp);
	}
	free(ss);
	return soak.wrong == 0 && soak.right != 0 ? 0 : 1;
}
