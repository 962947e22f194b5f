/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * An hcom4db server as openGauss writes one: worker groups, heartbeat,
 * new and break handlers, a synchronous handshake (service 0) that keeps
 * a record of the client with OckRpcSetUpCtx, one-way data (service 1)
 * counted into that record with OckRpcGetUpCtx.
 *
 *   hcom_server IP PORT [GROUPS [POLL [TYPE]]]   e.g. hcom_server 127.0.0.1 0 2 no
 *
 * TYPE is TCP (the default) or RDMA (droce's RoCE: DROCE_HCOM_CONF names
 * the droce port, see the README).
 *
 * Prints "listening on IP:PORT", then a line per client that comes and
 * goes; ends on SIGINT or SIGTERM.
 */

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hcom4db.h>

#include "hcom_example.h"

struct client_record {
	uint32_t session;
	uint64_t messages, bytes, bad;
};

static atomic_uint sessions;
static atomic_uint breaks;
static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int
client_new(OckRpcClient client, uint64_t usr, const char *info)
{
	(void)client;
	(void)usr;
	printf("client came: %s\n", info);
	fflush(stdout);
	return 0;
}

/* The up ctx is the client's record (0 before its handshake). */
static int
client_break(OckRpcClient client, uint64_t usr, const char *info)
{
	struct client_record *r = (struct client_record *)(uintptr_t)usr;

	(void)client;
	(void)info;
	if (r != NULL) {
		printf("client %u went: %lu messages, %lu bytes, %lu bad\n", r->session,
		       (unsigned long)r->messages, (unsigned long)r->bytes, (unsigned long)r->bad);
		free(r);
	} else {
		printf("a client went before its handshake\n");
	}
	fflush(stdout);
	atomic_fetch_add(&breaks, 1);
	return 0;
}

static void
handshake(OckRpcServerContext ctx, OckRpcMessage msg)
{
	struct example_welcome w = { .magic = EXAMPLE_MAGIC };
	OckRpcMessage reply = { &w, sizeof(w) };
	struct example_hello hello;
	struct client_record *r;
	OckRpcClient client;
	uint64_t up = 0;

	if (msg.len != sizeof(hello) || OckRpcGetClient(ctx, &client) != 0)
		return;
	memcpy(&hello, msg.data, sizeof(hello));
	if (hello.magic != EXAMPLE_MAGIC)
		return;
	OckRpcGetUpCtx(client, &up);
	r = (struct client_record *)(uintptr_t)up;
	if (r == NULL) {
		r = calloc(1, sizeof(*r));
		if (r == NULL)
			return;
		r->session = atomic_fetch_add(&sessions, 1) + 1;
		OckRpcSetUpCtx(client, (uint64_t)(uintptr_t)r);
	}
	w.session = r->session;
	w.messages = r->messages;
	w.bytes = r->bytes;
	w.bad = r->bad;
	OckRpcServerReply(ctx, EXAMPLE_HANDSHAKE, &reply, NULL);
}

/* One-way: nobody waits for an answer, and none is sent. */
static void
data(OckRpcServerContext ctx, OckRpcMessage msg)
{
	const uint8_t *p = msg.data;
	struct client_record *r;
	OckRpcClient client;
	uint64_t up = 0, n;

	if (OckRpcGetClient(ctx, &client) != 0 || OckRpcGetUpCtx(client, &up) != 0 || up == 0)
		return;
	r = (struct client_record *)(uintptr_t)up;
	n = r->messages++;
	r->bytes += msg.len;
	for (size_t i = 0; i < msg.len; i++)
		if (p[i] != example_byte(n, i)) {
			r->bad++;
			break;
		}
}

int
main(int argc, char **argv)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, EXAMPLE_SERVER_NAME },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, argc > 5 ? argv[5] : "TCP" },
		{ OCK_RPC_STR_ENABLE_TLS, "no" },
		{ OCK_RPC_STR_WRK_THR_GRP, argc > 3 ? argv[3] : "2" },
		{ OCK_RPC_STR_ENABLE_POLL_WORKER, argc > 4 ? argv[4] : "no" },
		{ OCK_RPC_STR_HEATBEAT_IDLE, "1" },
		{ OCK_RPC_STR_CLIENT_NEW, (const char *)(uintptr_t)client_new },
		{ OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)client_break },
	};
	OckRpcCreateConfig cfg = {
		.mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
		.configs = { (int)(sizeof(pairs) / sizeof(pairs[0])), pairs },
	};
	OckRpcService hs = { EXAMPLE_HANDSHAKE, handshake }, dt = { EXAMPLE_DATA, data };
	OckRpcServer server;
	char **ips;
	uint16_t *ports;
	int n;

	if (argc < 3) {
		fprintf(stderr, "usage: %s IP PORT [GROUPS [POLL yes|no [TCP|RDMA]]]\n", argv[0]);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (OckRpcServerCreateWithCfg(argv[1], (uint16_t)atoi(argv[2]), &server, &cfg) != OCK_RPC_OK ||
	    OckRpcServerAddService(server, &hs) != OCK_RPC_OK ||
	    OckRpcServerStart(server) != OCK_RPC_OK) {
		fprintf(stderr, "hcom_server: cannot start\n");
		return 1;
	}
	/* Added after the start, as openGauss may. */
	if (OckRpcServerAddService(server, &dt) != OCK_RPC_OK ||
	    !OckRpcGetOobIpAndPort(server, &ips, &ports, &n) || n < 1)
		return 1;
	printf("listening on %s:%u\n", ips[0], ports[0]);
	fflush(stdout);
	free(ips[0]);
	free(ips);
	free(ports);
	while (!stop)
		pause();
	OckRpcServerDestroy(server);
	printf("stopped: %u clients, %u gone\n", atomic_load(&sessions), atomic_load(&breaks));
	return 0;
}
