/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * hcom_ping: an hcom4db client of droce's own RPC server (rpc.port):
 * synchronous calls to its echo service (id 0), each answer checked,
 * for a number of seconds; a line a second, then calls, calls/s, the
 * round trip's p50 and p99, and errors.
 *
 *   hcom_ping IP PORT SECONDS BYTES [TLS_DIR]
 *
 * TLS_DIR holds ca.pem, client.pem, client.key and, if the key is
 * encrypted, client.pass (its passphrase); without it TLS is off.
 * RDMA needs DROCE_HCOM_CONF (and DROCE_HCOM_EAL), as every hcom4db
 * client over droce does. Exit status: 0 when every call came back
 * right, 1 if one did not, 2 for bad arguments.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hcom4db.h"

#define SERVER_NAME "droce"
#define SVC_ECHO 0
#define MAX_SAMPLES (1u << 22)
#define BYTES_MAX 65536

static char tls_dir[200];
static char path_ca[256], path_cert[256], path_key[256];
static char keypass[256];

static void
tls_cert(const char **path)
{
	*path = path_cert;
}

static void
erase(char *pass)
{
	/* As an application does it; droce calls it once, after the load. */
	volatile char *p = pass;

	while (*p != '\0')
		*p++ = '\0';
}

static void
tls_key(const char **path, char **pass, OckRpcTlsKeypassErase *erase_fn)
{
	char file[256];
	FILE *f;

	*path = path_key;
	*pass = NULL;
	*erase_fn = NULL;
	snprintf(file, sizeof(file), "%s/client.pass", tls_dir);
	f = fopen(file, "r");
	if (f == NULL)
		return;
	if (fgets(keypass, sizeof(keypass), f) != NULL) {
		keypass[strcspn(keypass, "\r\n")] = '\0';
		*pass = keypass;
		*erase_fn = erase;
	}
	fclose(f);
}

static int
tls_verify(void *x509, const char *crl)
{
	(void)crl;
	return x509 != NULL ? 1 : -1;
}

static void
tls_ca(const char **ca, const char **crl, OckRpcTlsCertVerify *verify)
{
	*ca = path_ca;
	*crl = "";
	*verify = tls_verify;
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int
by_value(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static int
server_gone(OckRpcClient client, uint64_t ctx, const char *payload)
{
	(void)client;
	(void)ctx;
	(void)payload;
	printf("hcom_ping: the session with droce broke at %.3f s\n", now_s());
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	RpcConfigPair pairs[] = {
		{ OCK_RPC_STR_SERVER_NAME, SERVER_NAME },
		{ OCK_RPC_STR_COMMUNICATION_TYPE, "RDMA" },
		{ OCK_RPC_STR_ENABLE_TLS, argc > 5 ? "yes" : "no" },
		{ OCK_RPC_STR_HEATBEAT_IDLE, "1" },
		{ OCK_RPC_STR_CLIENT_BREAK, (const char *)(uintptr_t)server_gone },
	};
	OckRpcCreateConfig cfg = { .mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS,
				   .configs = { (int)(sizeof(pairs) / sizeof(pairs[0])), pairs } };
	double seconds = argc > 3 ? atof(argv[3]) : 0, t0, last, end;
	unsigned long bytes = argc > 4 ? strtoul(argv[4], NULL, 10) : 0;
	unsigned long calls = 0, wrong = 0, failed = 0, second_calls = 0;
	static uint8_t q[BYTES_MAX], r[BYTES_MAX];
	float *rtt = malloc(MAX_SAMPLES * sizeof(*rtt));
	unsigned int samples = 0;
	OckRpcClient c;

	if (argc < 5 || argc > 6 || seconds <= 0 || bytes == 0 || bytes > BYTES_MAX || rtt == NULL) {
		fprintf(stderr, "usage: %s IP PORT SECONDS BYTES(1..%u) [TLS_DIR]\n", argv[0],
			BYTES_MAX);
		return 2;
	}
	if (argc > 5) {
		snprintf(tls_dir, sizeof(tls_dir), "%s", argv[5]);
		snprintf(path_ca, sizeof(path_ca), "%s/ca.pem", tls_dir);
		snprintf(path_cert, sizeof(path_cert), "%s/client.pem", tls_dir);
		snprintf(path_key, sizeof(path_key), "%s/client.key", tls_dir);
		cfg.mask |= OCK_RPC_CONFIG_USE_SSL_CALLBACK;
		cfg.getCaAndVerify = tls_ca;
		cfg.getCert = tls_cert;
		cfg.getPriKey = tls_key;
	}
	if (OckRpcClientConnectWithCfg(argv[1], (uint16_t)atoi(argv[2]), &c, &cfg) != OCK_RPC_OK) {
		fprintf(stderr, "hcom_ping: cannot connect to %s:%s\n", argv[1], argv[2]);
		return 1;
	}
	OckRpcClientSetTimeout(c, 5000);
	printf("hcom_ping: connected to %s:%s, TLS %s\n", argv[1], argv[2], argc > 5 ? "on" : "off");
	fflush(stdout);
	t0 = last = now_s();
	end = t0 + seconds;
	for (double now = t0; now < end; calls++) {
		OckRpcMessage req = { q, bytes }, rsp = { r, sizeof(r) };
		OckRpcStatus st;
		double sent;

		memcpy(q, &calls, sizeof(calls) < bytes ? sizeof(calls) : bytes);
		sent = now_s();
		st = OckRpcClientCall(c, SVC_ECHO, &req, &rsp, NULL);
		now = now_s();
		if (st != OCK_RPC_OK) {
			if (failed++ < 5)
				fprintf(stderr, "hcom_ping: call %lu: status %d\n", calls, (int)st);
			if (st == OCK_RPC_ERR_CONN_BROKEN)
				break;
		} else if (rsp.len != bytes || memcmp(q, r, bytes) != 0) {
			wrong++;
		} else if (samples < MAX_SAMPLES) {
			rtt[samples++] = (float)((now - sent) * 1e6);
		}
		second_calls++;
		if (now - last >= 1) {
			printf("hcom_ping: %.0f calls/s\n", (double)second_calls / (now - last));
			fflush(stdout);
			second_calls = 0;
			last = now;
		}
	}
	qsort(rtt, samples, sizeof(*rtt), by_value);
	printf("hcom_ping: %lu calls of %lu bytes in %.2f s: %.0f calls/s, p50 %.1f us, p99 %.1f us, %lu failed, %lu wrong, TLS %s\n",
	       calls, bytes, now_s() - t0, (double)calls / (now_s() - t0),
	       samples != 0 ? rtt[samples / 2] : 0.0, samples != 0 ? rtt[samples * 99 / 100] : 0.0,
	       failed, wrong, argc > 5 ? "on" : "off");
	OckRpcClientDisconnect(c);
	free(rtt);
	return failed == 0 && wrong == 0 ? 0 : 1;
}
