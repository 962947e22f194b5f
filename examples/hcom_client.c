/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * An hcom4db client as openGauss writes one: a synchronous handshake with
 * a fixed-size answer, then one-way data sent asynchronously, each buffer
 * malloc'ed and freed by its done callback (an error return is retried
 * with the same buffer), and a last handshake whose answer says what the
 * server took.
 *
 *   hcom_client IP PORT [MESSAGES [MAX_BYTES [TYPE]]]   TYPE: TCP or RDMA
 *
 * Exits 0 when the server counted every message and byte, none bad.
 */

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hcom4db.h>

#include "hcom_example.h"

static atomic_ulong done_ok, done_failed;

static void
data_done(OckRpcStatus status, void *arg)
{
	free(arg);
	if (status == OCK_RPC_OK)
		atomic_fetch_add(&done_ok, 1);
	else
		atomic_fetch_add(&done_failed, 1);
}

/* The session broke (not a disconnect of ours): once. */
static int
server_went(OckRpcClient client, uint64_t usr, const char *info)
{
	(void)client;
	(void)usr;
	(void)info;
	fprintf(stderr, "hcom_client: the session with the server broke\n");
	return 0;
}

static int
handshake(OckRpcClient c, struct example_welcome *w)
{
	struct example_hello hello = { EXAMPLE_MAGIC, (uint32_t)getpid() };
	OckRpcMessage req = { &hello, sizeof(hello) }, rsp = { w, sizeof(*w) };

	if (OckRpcClientCall(c, EXAMPLE_HANDSHAKE, &req, &rsp, NULL) != OCK_RPC_OK ||
	    rsp.len != sizeof(*w) || w->magic != EXAMPLE_MAGIC)
		return -1;
	return 0;
}

int
main(int argc, char **argv)
{
	char info[64];
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, EXAMPLE_SERVER_NAME },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, argc > 5 ? argv[5] : "TCP" },
		{ OCK_RPC_STR_ENABLE_TLS, "no" },
		{ OCK_RPC_STR_PRE_SEGMENT_COUNT, "0" },
		{ OCK_RPC_STR_CLIENT_CREATE_INFO, info },
		{ OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)server_went },
		{ OCK_RPC_STR_HEATBEAT_IDLE, "1" },
	};
	OckRpcCreateConfig cfg = {
		.mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
		.configs = { (int)(sizeof(pairs) / sizeof(pairs[0])), pairs },
	};
	unsigned long messages = argc > 3 ? strtoul(argv[3], NULL, 10) : 1000;
	unsigned long max_bytes = argc > 4 ? strtoul(argv[4], NULL, 10) : 4096;
	uint64_t bytes = 0;
	struct example_welcome w;
	unsigned int seed = (unsigned int)getpid();
	OckRpcStatus st;
	OckRpcClient c;

	if (argc < 3 || max_bytes == 0 || max_bytes > 65536) {
		fprintf(stderr, "usage: %s IP PORT [MESSAGES [MAX_BYTES 1..65536 [TCP|RDMA]]]\n", argv[0]);
		return 2;
	}
	snprintf(info, sizeof(info), "example client %d", (int)getpid());
	if (OckRpcClientConnectWithCfg(argv[1], (uint16_t)atoi(argv[2]), &c, &cfg) != OCK_RPC_OK) {
		fprintf(stderr, "hcom_client: cannot connect\n");
		return 1;
	}
	OckRpcClientSetTimeout(c, 5000);
	if (handshake(c, &w) != 0) {
		fprintf(stderr, "hcom_client: no handshake\n");
		return 1;
	}
	for (unsigned long n = 0; n < messages; n++) {
		size_t len = 1 + (size_t)rand_r(&seed) % max_bytes;
		uint8_t *buf = malloc(len);
		OckRpcMessage msg = { buf, len };
		OckRpcCallDone done = { data_done, buf };

		if (buf == NULL)
			return 1;
		for (size_t i = 0; i < len; i++)
			buf[i] = example_byte(n, i);
		/* A full session asks to try again; anything else ends the run. */
		while ((st = OckRpcClientCall(c, EXAMPLE_DATA, &msg, NULL, &done)) ==
		       OCK_RPC_ERR_NO_MEMORY)
			usleep(1000);
		if (st != OCK_RPC_OK) {
			free(buf);
			fprintf(stderr, "hcom_client: message %lu: status %d; %lu sent before\n", n,
				(int)st, n);
			messages = n;
			break;
		}
		bytes += len;
	}
	/* Every started call ends, one way or the other. */
	while (atomic_load(&done_ok) + atomic_load(&done_failed) < messages)
		usleep(1000);
	/* The session keeps order: the answer comes after every message. */
	if (handshake(c, &w) != 0) {
		fprintf(stderr, "hcom_client: no last handshake; %lu of %lu messages failed\n",
			atomic_load(&done_failed), messages);
		return 1;
	}
	printf("client (session %u): sent %lu messages, %lu bytes; the server took %lu, %lu bytes, %lu bad; %lu callbacks failed\n",
	       w.session, messages, (unsigned long)bytes, (unsigned long)w.messages,
	       (unsigned long)w.bytes, (unsigned long)w.bad, atomic_load(&done_failed));
	OckRpcClientDisconnect(c);
	return w.messages == messages && w.bytes == bytes && w.bad == 0 &&
	       atomic_load(&done_failed) == 0 ? 0 : 1;
}
