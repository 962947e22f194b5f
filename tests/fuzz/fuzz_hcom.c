/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * libFuzzer target: an hcom4db server's sessions, reached the way a
 * client reaches them. Each input is what a client sends on a fresh TCP
 * connection (its HELLO, then frames, as rpc_frame.h lays them out); the
 * harness then closes its side and reads until the server closes its
 * own, so that every byte was taken before the next input. The server
 * runs in a network namespace of the fuzzer's own where it can make one.
 * Its services answer (0), take one-way messages (1), and keep the
 * context past the handler and answer from it (2), so that the session's
 * frames, states, replies and clones are all reached; any fault is the
 * sanitizers' to report.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "hcom4db.h"
#include "fuzz_stream.h"
#include "private_loopback.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint16_t port;

static void
echo(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcServerReply(ctx, 0, &msg, NULL);
}

static void
sink(OckRpcServerContext ctx, OckRpcMessage msg)
{
	(void)ctx;
	(void)msg;
}

/* Kept, answered from the copy, let go: the clone's path. */
static void
keep(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcServerContext kept = OckRpcCloneCtx(ctx);

	if (kept == 0)
		return;
	OckRpcServerReply(kept, 2, &msg, NULL);
	OckRpcDeCloneCtx(kept);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, "server" }, { OCK_RPC_STR_COMMUNICATION_TYPE, "TCP" },
		{ OCK_RPC_STR_ENABLE_TLS, "no" }, { OCK_RPC_STR_PRE_SEGMENT_SIZE, "4096" },
		{ OCK_RPC_STR_SERVER_PORT_RANGE, "24000-24999" },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { 5, pairs } };
	OckRpcService services[] = { { 0, echo }, { 1, sink }, { 2, keep } };
	/* Static: the server lives for the whole run, and LeakSanitizer must
	 * see a pointer to it (the kernel's epoll holds the only other one).
	 */
	static OckRpcServer server;
	uint16_t *ports;
	char **ips;
	int n;

	(void)argc;
	(void)argv;
	private_loopback();
	if (OckRpcServerCreateWithCfg("127.0.0.1", 0, &server, &cfg) != OCK_RPC_OK)
		abort();
	for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++)
		if (OckRpcServerAddService(server, &services[i]) != OCK_RPC_OK)
			abort();
	if (OckRpcServerStart(server) != OCK_RPC_OK ||
	    !OckRpcGetOobIpAndPort(server, &ips, &ports, &n))
		abort();
	port = ports[0];
	free(ips[0]);
	free(ips);
	free(ports);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_stream_to(port, data, size, "fuzz_hcom");
	return 0;
}
