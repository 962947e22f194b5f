/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * rpc-tls: what TLS 1.3 costs hcom4db calls, TLS on against TLS off in
 * the same run, on both transports:
 *   - synchronous calls of 64 bytes answered with 64 bytes: p50;
 *   - one-way asynchronous calls of 64 KiB, as many in flight as the
 *     session takes, and one synchronous call at the end: GB/s;
 *   - over RDMA, synchronous one-sided WRITEs and READs of 1 MiB into and
 *     out of the server's region: GB/s (with TLS each is sealed and
 *     unsealed, and waits for the target's answer);
 *   - over RDMA without TLS, synchronous rendezvous calls of 4 MiB (the
 *     server READs the client's buffer into one its rndv.malloc hands
 *     out of a registered region): GB/s against memcpy of the same bytes
 *     in the client.
 * Over TCP (loopback) the server is a child process serving both (two
 * servers). Over RDMA two more processes of this program (--rpc-tls-side,
 * before any EAL) run droce stacks of their own on a net_memif pair, one
 * polling thread each (worker.inline), a cpu each: the server's is the
 * library's; the client runs to completion, its one thread polling a
 * stack of its own lent to the library. The client side measures and
 * reports its rounds on stdout; the rpc case runs the same sides for its
 * RDMA round trips ("rtt").
 * The certificates (an EC P-256 CA and its server and client) are made
 * for the run in a temporary folder with OpenSSL.
 */

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_malloc.h>

#include "droce_core.h"
#include "droce_net.h"
#include "droce_rpc.h"
#include "hcom4db.h"
#include "bench.h"

#define TLS_RTT_ITERS 10000
#define TLS_BULK_BYTES BENCH_RPC_BYTES_MAX
#define TLS_BULK_CALLS 4000
#define ONE_SIDED_BYTES (1u << 20)
#define ONE_SIDED_OPS 200
#define SVC_REGION 2            /* answers with the server's region (RDMA) */
#define SVC_RNDV 3              /* answers a rendezvous with its length (RDMA) */
#define RNDV_BYTES (4u << 20)
#define RNDV_CALLS 32

/* ---- certificates for the run ------------------------------------------------------------ */

static char pki_dir[64];
static bool as_server;
static char pki_path[3][128];

static EVP_PKEY *
new_key(void)
{
	return EVP_EC_gen("P-256");
}

/* A certificate for @p key named @p cn, signed by @p ca_key (itself when
 * NULL: the CA).
 */
static X509 *
new_cert(EVP_PKEY *key, const char *cn, EVP_PKEY *ca_key, X509 *ca, long serial)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	X509V3_CTX v3;
	X509_EXTENSION *ext;

	if (x == NULL || name == NULL)
		goto fail;
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_subject_name(x, name);
	X509_set_issuer_name(x, ca != NULL ? X509_get_subject_name(ca) : name);
	X509_set_pubkey(x, key);
	X509V3_set_ctx(&v3, ca != NULL ? ca : x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints,
				  ca == NULL ? "critical,CA:TRUE" : "CA:FALSE");
	if (ext == NULL || X509_add_ext(x, ext, -1) != 1)
		goto fail;
	X509_EXTENSION_free(ext);
	if (X509_sign(x, ca_key != NULL ? ca_key : key, EVP_sha256()) == 0)
		goto fail;
	X509_NAME_free(name);
	return x;
fail:
	X509_NAME_free(name);
	X509_free(x);
	return NULL;
}

static bool
write_pem(const char *name, X509 *x, EVP_PKEY *k)
{
	char path[128];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", pki_dir, name);
	f = fopen(path, "w");
	if (f == NULL)
		return false;
	ok = x != NULL ? PEM_write_X509(f, x) == 1
		       : PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
	return fclose(f) == 0 && ok;
}

static bool
make_pki(void)
{
	EVP_PKEY *ca_key = new_key(), *s_key = new_key(), *c_key = new_key();
	X509 *ca = NULL, *s = NULL, *c = NULL;
	bool ok = false;

	snprintf(pki_dir, sizeof(pki_dir), "/tmp/droce-bench-tls.XXXXXX");
	if (mkdtemp(pki_dir) == NULL || ca_key == NULL || s_key == NULL || c_key == NULL)
		goto out;
	ca = new_cert(ca_key, "droce-bench CA", NULL, NULL, 1);
	s = ca != NULL ? new_cert(s_key, "droce-bench server", ca_key, ca, 2) : NULL;
	c = ca != NULL ? new_cert(c_key, "droce-bench client", ca_key, ca, 3) : NULL;
	ok = s != NULL && c != NULL && write_pem("ca.pem", ca, NULL) &&
	     write_pem("server.pem", s, NULL) && write_pem("server.key", NULL, s_key) &&
	     write_pem("client.pem", c, NULL) && write_pem("client.key", NULL, c_key);
out:
	X509_free(ca);
	X509_free(s);
	X509_free(c);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(s_key);
	EVP_PKEY_free(c_key);
	return ok;
}

static void
remove_pki(void)
{
	static const char *const names[] = { "ca.pem", "server.pem", "server.key", "client.pem",
					     "client.key" };
	char path[128];

	for (size_t i = 0; i < RTE_DIM(names); i++) {
		snprintf(path, sizeof(path), "%s/%s", pki_dir, names[i]);
		unlink(path);
	}
	rmdir(pki_dir);
}

static void
tls_cert(const char **path)
{
	snprintf(pki_path[0], sizeof(pki_path[0]), "%s/%s.pem", pki_dir,
		 as_server ? "server" : "client");
	*path = pki_path[0];
}

static void
tls_key(const char **path, char **pass, OckRpcTlsKeypassErase *erase)
{
	snprintf(pki_path[1], sizeof(pki_path[1]), "%s/%s.key", pki_dir,
		 as_server ? "server" : "client");
	*path = pki_path[1];
	*pass = NULL;           /* the keys are not encrypted */
	*erase = NULL;
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
	snprintf(pki_path[2], sizeof(pki_path[2]), "%s/ca.pem", pki_dir);
	*ca = pki_path[2];
	*crl = "";
	*verify = tls_verify;
}

/* ---- both sides' configuration ------------------------------------------------------------- */

struct config {
	RpcConfigPair pairs[8];
	OckRpcCreateConfig c;
};

static int rndv_malloc(uint64_t size, uintptr_t *address, uint32_t *key);
static int rndv_free(uintptr_t address);

/* "TCP" or "RDMA": the transport of the configurations below. */
static const char *transport = "TCP";

static void
config(struct config *g, bool tls)
{
	memset(g, 0, sizeof(*g));
	g->pairs[0] = (RpcConfigPair){ OCK_RPC_STR_SERVER_NAME, "droce-bench" };
	g->pairs[1] = (RpcConfigPair){ OCK_RPC_STR_COMMUNICATION_TYPE, transport };
	g->pairs[2] = (RpcConfigPair){ OCK_RPC_STR_ENABLE_TLS, tls ? "yes" : "no" };
	g->pairs[3] = (RpcConfigPair){ OCK_RPC_STR_SERVER_PORT_RANGE, "24000-24999" };
	g->pairs[4] = (RpcConfigPair){ OCK_RPC_STR_HEATBEAT_IDLE, "60" };
	g->c.mask = OCK_RPC_CONFIG_USE_RPC_CONFIGS;
	g->c.configs = (RpcConfigs){ 5, g->pairs };
	if (as_server && strcmp(transport, "RDMA") == 0) {
		g->pairs[5] = (RpcConfigPair){ OCK_RPC_STR_ENABLE_SEND_RNDV, "yes" };
		g->pairs[6] = (RpcConfigPair){ OCK_RPC_STR_RNDV_MALLOC,
					       (const char *)(uintptr_t)rndv_malloc };
		g->pairs[7] = (RpcConfigPair){ OCK_RPC_STR_RNDV_MFREE,
					       (const char *)(uintptr_t)rndv_free };
		g->c.configs.size = 8;
	}
	if (tls) {
		g->c.mask |= OCK_RPC_CONFIG_USE_SSL_CALLBACK;
		g->c.getCaAndVerify = tls_ca;
		g->c.getCert = tls_cert;
		g->c.getPriKey = tls_key;
	}
}

/* ---- the server process ---------------------------------------------------------------------- */

/* Over RDMA: the region one-sided operations go to, both servers'. */
static OckRpcMemoryRegionInfo server_region;

static void
region(OckRpcServerContext ctx, OckRpcMessage msg)
{
	OckRpcMessage reply = { &server_region, sizeof(server_region) };

	(void)msg;
	OckRpcServerReply(ctx, SVC_REGION, &reply, NULL);
}

/* Over RDMA: where rendezvous messages land, one at a time (the client
 * makes synchronous calls): a region registered once, as a user who
 * cares for speed would hand it out, rather than memory registered per
 * call.
 */
static OckRpcMemoryRegionInfo rndv_region;
static bool rndv_taken;

static int
rndv_malloc(uint64_t size, uintptr_t *address, uint32_t *key)
{
	if (rndv_taken || size > rndv_region.size)
		return -1;
	rndv_taken = true;
	*address = rndv_region.lAddress;
	*key = rndv_region.lKey;
	return 0;
}

static int
rndv_free(uintptr_t address)
{
	(void)address;
	rndv_taken = false;
	return 0;
}

static void
rndv_received(OckRpcServerRndvContext ctx, OckRpcRndvMessage msg)
{
	uint64_t len = msg.cnt == 1 ? msg.msg[0].len : 0;
	OckRpcMessage reply = { &len, sizeof(len) };

	OckRpcServerReplyRndv(ctx, SVC_RNDV, &reply, NULL);
	OckRpcServerCleanupRndvCtx(ctx);
}

static uint16_t
serve(const char *ip, bool tls, OckRpcServer *server)
{
	OckRpcService region_svc = { SVC_REGION, region };
	OckRpcRndvService rndv_svc = { SVC_RNDV, rndv_received };
	bool rdma = strcmp(transport, "RDMA") == 0;
	OckRpcMemoryRegion mr;
	uint16_t port, *ports;
	struct config g;
	char **ips;
	int n;

	config(&g, tls);
	if (OckRpcServerCreateWithCfg(ip, 0, server, &g.c) != OCK_RPC_OK ||
	    !bench_rpc_services(*server) ||
	    OckRpcServerAddService(*server, &region_svc) != OCK_RPC_OK ||
	    (rdma && OckRpcServerAddRndvService(*server, &rndv_svc) != OCK_RPC_OK) ||
	    OckRpcServerStart(*server) != OCK_RPC_OK ||
	    !OckRpcGetOobIpAndPort(*server, &ips, &ports, &n))
		return 0;
	/* Made once the stack runs: its key is what the peer's READs and
	 * WRITEs use.
	 */
	if (rdma && server_region.size == 0 &&
	    (OckRpcRegisterMemoryRegion(*server, ONE_SIDED_BYTES, &mr) != OCK_RPC_OK ||
	     OckRpcGetMemoryRegionInfo(mr, &server_region) != OCK_RPC_OK ||
	     OckRpcRegisterMemoryRegion(*server, RNDV_BYTES, &mr) != OCK_RPC_OK ||
	     OckRpcGetMemoryRegionInfo(mr, &rndv_region) != OCK_RPC_OK))
		return 0;
	port = ports[0];
	free(ips[0]);
	free(ips);
	free(ports);
	return port;
}

/* Both servers until the parent goes; their ports up the pipe first. */
static void
server_main(int to_parent, int from_parent)
{
	OckRpcServer plain = 0, secure = 0;
	uint16_t ports[2];
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	as_server = true;
	ports[0] = serve("127.0.0.1", false, &plain);
	ports[1] = serve("127.0.0.1", true, &secure);
	if (write(to_parent, ports, sizeof(ports)) != sizeof(ports) || ports[0] == 0 ||
	    ports[1] == 0)
		_exit(1);
	while (read(from_parent, &c, 1) > 0)
		;
	OckRpcServerDestroy(plain);
	OckRpcServerDestroy(secure);
	_exit(0);
}

/* ---- the client ------------------------------------------------------------------------------- */

/* p50 of 64-byte round trips, in microseconds; < 0 on a failure. */
static double
rtt_p50(OckRpcClient c)
{
	static uint64_t rtt[TLS_RTT_ITERS];
	double p50, p99;

	if (!bench_rpc_pingpong(c, rtt, TLS_RTT_ITERS))
		return -1;
	bench_percentiles(rtt, TLS_RTT_ITERS, &p50, &p99);
	return p50;
}

/* GB/s of one-way 64 KiB calls; < 0 on a failure. */
static double
bulk_gbps(OckRpcClient c)
{
	double rate = bench_rpc_rate(c, TLS_BULK_BYTES, TLS_BULK_CALLS);

	return rate < 0 ? -1 : rate * TLS_BULK_BYTES / 1e9;
}

/* Each round's figures, and their medians with the ratios (the
 * one-sided ones over RDMA only).
 */
struct tls_rounds {
	double plain_rtt[BENCH_MAX_ROUNDS], tls_rtt[BENCH_MAX_ROUNDS];
	double plain_bulk[BENCH_MAX_ROUNDS], tls_bulk[BENCH_MAX_ROUNDS];
	double plain_write[BENCH_MAX_ROUNDS], tls_write[BENCH_MAX_ROUNDS];
	double plain_read[BENCH_MAX_ROUNDS], tls_read[BENCH_MAX_ROUNDS];
	double rndv[BENCH_MAX_ROUNDS], rndv_memcpy[BENCH_MAX_ROUNDS];
};

/* A client's side of one-sided operations: its region, the server's. */
struct one_sided_ends {
	OckRpcMemoryRegionInfo local, remote;
};

/* GB/s of ONE_SIDED_OPS synchronous WRITEs (or READs) of 1 MiB between
 * @p e's regions; < 0 on a failure.
 */
static double
one_sided_gbps(OckRpcClient c, const struct one_sided_ends *e, bool write)
{
	OckRpcRequest r = { .lAddress = e->local.lAddress, .rAddress = e->remote.lAddress,
			    .lKey = e->local.lKey, .rKey = e->remote.lKey, .size = ONE_SIDED_BYTES };
	double t0 = bench_now();

	for (unsigned int i = 0; i < ONE_SIDED_OPS; i++)
		if ((write ? OckRpcWrite(c, &r, NULL) : OckRpcRead(c, &r, NULL)) != OCK_RPC_OK)
			return -1;
	return (double)ONE_SIDED_OPS * ONE_SIDED_BYTES / (bench_now() - t0) / 1e9;
}

/* GB/s of RNDV_CALLS synchronous rendezvous calls of @p buf's bytes; < 0
 * on a failure or a wrong answer.
 */
static double
rndv_gbps(OckRpcClient c, OckRpcMessageInfo *buf)
{
	uint64_t len = 0;
	OckRpcMessage rsp = { &len, sizeof(len) };
	double t0 = bench_now();

	for (unsigned int i = 0; i < RNDV_CALLS; i++)
		if (OckRpcClientCallRndv(c, SVC_RNDV, buf, &rsp, NULL) != OCK_RPC_OK ||
		    len != buf->size)
			return -1;
	return (double)RNDV_CALLS * buf->size / (bench_now() - t0) / 1e9;
}

/* GB/s of memcpy of the same bytes as rndv_gbps(), into @p dst. */
static double
rndv_memcpy_gbps(const OckRpcMessageInfo *buf, uint8_t *dst)
{
	double t0 = bench_now();

	for (unsigned int i = 0; i < RNDV_CALLS; i++) {
		memcpy(dst, (const void *)buf->lAddress, buf->size);
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	return (double)RNDV_CALLS * buf->size / (bench_now() - t0) / 1e9;
}

/* One round on both clients; false if a call failed. */
static bool
measure(OckRpcClient plain, OckRpcClient secure, struct tls_rounds *t, unsigned int r)
{
	t->plain_rtt[r] = rtt_p50(plain);
	t->tls_rtt[r] = rtt_p50(secure);
	t->plain_bulk[r] = bulk_gbps(plain);
	t->tls_bulk[r] = bulk_gbps(secure);
	return t->plain_rtt[r] >= 0 && t->tls_rtt[r] >= 0 && t->plain_bulk[r] >= 0 &&
	       t->tls_bulk[r] >= 0;
}

/* Over RDMA, the one-sided figures of the round too; false if one failed. */
static bool
measure_one_sided(OckRpcClient plain, OckRpcClient secure, const struct one_sided_ends e[2],
		  struct tls_rounds *t, unsigned int r)
{
	t->plain_write[r] = one_sided_gbps(plain, &e[0], true);
	t->tls_write[r] = one_sided_gbps(secure, &e[1], true);
	t->plain_read[r] = one_sided_gbps(plain, &e[0], false);
	t->tls_read[r] = one_sided_gbps(secure, &e[1], false);
	return t->plain_write[r] >= 0 && t->tls_write[r] >= 0 && t->plain_read[r] >= 0 &&
	       t->tls_read[r] >= 0;
}

static void
print_round(const struct tls_rounds *t, unsigned int r, bool one_sided)
{
	printf("  round %u: 64 B call p50 %.1f us (TLS %.1f); 64 KiB one-way %.2f GB/s (TLS %.2f)",
	       r + 1, t->plain_rtt[r], t->tls_rtt[r], t->plain_bulk[r], t->tls_bulk[r]);
	if (one_sided)
		printf("; 1 MiB WRITE %.2f GB/s (TLS %.2f), READ %.2f GB/s (TLS %.2f); 4 MiB rndv %.2f GB/s (memcpy %.2f)",
		       t->plain_write[r], t->tls_write[r], t->plain_read[r], t->tls_read[r],
		       t->rndv[r], t->rndv_memcpy[r]);
	printf("\n");
	fflush(stdout);
}

static void
report(const char *what, const struct tls_rounds *t, unsigned int rounds)
{
	printf("  %s, 64 B sync call p50: TLS %.1f us vs plaintext %.1f us = %.2fx the time\n", what,
	       bench_median(t->tls_rtt, rounds), bench_median(t->plain_rtt, rounds),
	       bench_median(t->tls_rtt, rounds) / bench_median(t->plain_rtt, rounds));
	printf("  %s, 64 KiB one-way: TLS %.2f GB/s vs plaintext %.2f GB/s = %.2fx the throughput\n",
	       what, bench_median(t->tls_bulk, rounds), bench_median(t->plain_bulk, rounds),
	       bench_median(t->tls_bulk, rounds) / bench_median(t->plain_bulk, rounds));
}

static void
report_one_sided(const struct tls_rounds *t, unsigned int rounds)
{
	printf("  RDMA, 1 MiB one-sided WRITE: TLS %.2f GB/s vs plaintext %.2f GB/s = %.2fx the throughput\n",
	       bench_median(t->tls_write, rounds), bench_median(t->plain_write, rounds),
	       bench_median(t->tls_write, rounds) / bench_median(t->plain_write, rounds));
	printf("  RDMA, 1 MiB one-sided READ: TLS %.2f GB/s vs plaintext %.2f GB/s = %.2fx the throughput\n",
	       bench_median(t->tls_read, rounds), bench_median(t->plain_read, rounds),
	       bench_median(t->tls_read, rounds) / bench_median(t->plain_read, rounds));
	printf("  RDMA, 4 MiB rendezvous call (plaintext): %.2f GB/s vs memcpy %.2f GB/s = %.2fx\n",
	       bench_median(t->rndv, rounds), bench_median(t->rndv_memcpy, rounds),
	       bench_median(t->rndv, rounds) / bench_median(t->rndv_memcpy, rounds));
}

/* Both clients to @p ip's two ports (plaintext, TLS); false if either fails. */
static bool
connect_both(const char *ip, const uint16_t ports[2], OckRpcClient *plain, OckRpcClient *secure)
{
	struct config g;

	config(&g, false);
	if (OckRpcClientConnectWithCfg(ip, ports[0], plain, &g.c) != OCK_RPC_OK)
		return false;
	config(&g, true);
	return OckRpcClientConnectWithCfg(ip, ports[1], secure, &g.c) == OCK_RPC_OK;
}

static int
bench_tcp(const struct bench_opts *o)
{
	int to_child[2], to_parent[2], status, ret = 1;
	OckRpcClient plain = 0, secure = 0;
	uint16_t ports[2] = { 0, 0 };
	struct tls_rounds t;
	pid_t pid;

	if (pipe(to_child) != 0 || pipe(to_parent) != 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		server_main(to_parent[1], to_child[0]);
	}
	close(to_child[0]);
	close(to_parent[1]);
	if (pid < 0 || read(to_parent[0], ports, sizeof(ports)) != sizeof(ports) || ports[0] == 0 ||
	    !connect_both("127.0.0.1", ports, &plain, &secure)) {
		fprintf(stderr, "droce-bench rpc-tls: no TCP server\n");
		goto out;
	}
	printf("  TCP loopback, server in a child process: %u round trips of 64 B, %u one-way calls of %u KiB a round\n",
	       TLS_RTT_ITERS, TLS_BULK_CALLS, TLS_BULK_BYTES / 1024);
	for (unsigned int r = 0; r < o->rounds; r++) {
		if (!measure(plain, secure, &t, r)) {
			fprintf(stderr, "droce-bench rpc-tls: a TCP pass failed\n");
			goto out;
		}
		print_round(&t, r, false);
	}
	report("TCP", &t, o->rounds);
	ret = 0;
out:
	if (plain != 0)
		OckRpcClientDisconnect(plain);
	if (secure != 0)
		OckRpcClientDisconnect(secure);
	close(to_child[1]);     /* the servers end */
	close(to_parent[0]);
	if (pid > 0 && waitpid(pid, &status, 0) < 0)
		kill(pid, SIGKILL);
	return ret;
}

/* ---- over RDMA: the two sides' processes ------------------------------------------------------ */

#define SERVER_IP "198.18.0.1"

/* The server side: both servers at @p ip, their ports on stdout, then
 * until stdin closes. It leaves with _exit(): its peer may be gone by then
 * (DPDK 22.11's memif tears down under the pollers when its peer goes).
 */
static int
side_server(const char *ip)
{
	OckRpcServer plain = 0, secure = 0;
	uint16_t p0, p1;
	char c;

	as_server = true;
	p0 = serve(ip, false, &plain);
	p1 = serve(ip, true, &secure);
	if (p0 == 0 || p1 == 0)
		_exit(1);
	printf("ports %u %u\n", p0, p1);
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	_exit(0);
}

/* A client's ends for one-sided operations: a 1 MiB region of its own
 * (in a server that never starts, as hcom's users do it) and the
 * server's, which SVC_REGION tells.
 */
static bool
one_sided_ends(OckRpcClient c, OckRpcServer regions, struct one_sided_ends *e)
{
	OckRpcMemoryRegion mr;

	return OckRpcRegisterMemoryRegion(regions, ONE_SIDED_BYTES, &mr) == OCK_RPC_OK &&
	       OckRpcGetMemoryRegionInfo(mr, &e->local) == OCK_RPC_OK &&
	       OckRpcClientCall(c, SVC_REGION, &(OckRpcMessage){ &e->remote, 0 },
				&(OckRpcMessage){ &e->remote, sizeof(e->remote) }, NULL) == OCK_RPC_OK &&
	       e->remote.size >= ONE_SIDED_BYTES;
}

/* The client side leaves at once (see side_server()), saying why. */
static void __attribute__((noreturn))
side_failed(const char *why)
{
	fprintf(stderr, "droce-bench RDMA client: %s\n", why);
	_exit(1);
}

/* A side that runs to completion: its EAL (DROCE_HCOM_EAL), and a droce
 * stack (DROCE_HCOM_CONF) that its one thread polls, lent to the library;
 * a client's calls' waits run the stack's rounds. NULL if it failed.
 */
static struct droce_stack *
stepped_start(void)
{
	static char *argv[64] = { (char *)"droce-bench-client" }, *args;
	static struct droce_conf conf;
	const char *eal = getenv("DROCE_HCOM_EAL"), *file = getenv("DROCE_HCOM_CONF");
	struct droce_lcore_layout layout;
	char err[DROCE_ERR_LEN] = "";
	struct droce_stack *s;
	char *save = NULL;
	int argc = 1;

	args = eal != NULL ? strdup(eal) : NULL;
	if (args == NULL || file == NULL) {
		snprintf(err, sizeof(err), "needs DROCE_HCOM_EAL and DROCE_HCOM_CONF");
		goto fail;
	}
	for (char *tok = strtok_r(args, " ", &save); tok != NULL && argc < 63;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	if (rte_eal_init(argc, argv) < 0 ||
	    droce_conf_load(&conf, file, NULL, 0, err, sizeof(err)) != 0 ||
	    droce_lcores_layout_here(&conf, &layout, err, sizeof(err)) != 0)
		goto fail;
	conf.stats_period = 0;  /* its stdout carries the rounds */
	s = droce_stack_create(&conf, &layout, err, sizeof(err));
	/* Lent before the start: lib/rc takes its QPNs on a stopped stack. */
	if (s == NULL || droce_rpc_attach(s, &conf, err, sizeof(err)) != 0 ||
	    droce_stack_start(s, false) != 0)
		goto fail;
	bench_rpc_stepped(s, false);
	return s;
fail:
	fprintf(stderr, "droce-bench rpc side: %s\n", err);
	return NULL;
}

/* The server side run to completion on a cpu it shares: its thread
 * gives the cpu away whenever a round of its stack had nothing to do,
 * until the parent ends it.
 */
static int
side_yielding_server(const char *ip)
{
	struct droce_stack *s = stepped_start();
	OckRpcServer plain = 0, secure = 0;
	uint16_t p0, p1;

	as_server = true;
	if (s == NULL || (p0 = serve(ip, false, &plain)) == 0 || (p1 = serve(ip, true, &secure)) == 0)
		_exit(1);
	printf("ports %u %u\n", p0, p1);
	fflush(stdout);
	for (;;)
		if (droce_stack_poll(s) <= 0)
			sched_yield();
}

/* The "rtt" client: per round, p50 and p99 of 64-byte round trips (us)
 * and calls/s with BENCH_RPC_WINDOW in flight, a line on stdout.
 */
static int
side_rtt(const char *p0, const char *rounds)
{
	static uint64_t rtt[TLS_RTT_ITERS];
	unsigned int n = (unsigned int)atoi(rounds);
	OckRpcClient c;
	struct config g;

	config(&g, false);
	if (n == 0 || n > BENCH_MAX_ROUNDS ||
	    OckRpcClientConnectWithCfg(SERVER_IP, (uint16_t)atoi(p0), &c, &g.c) != OCK_RPC_OK)
		side_failed("no session with the server");
	for (unsigned int r = 0; r < n; r++) {
		double p50, p99, rate;

		if (!bench_rpc_pingpong(c, rtt, TLS_RTT_ITERS))
			side_failed("a round trip failed");
		bench_percentiles(rtt, TLS_RTT_ITERS, &p50, &p99);
		rate = bench_rpc_window(c, BENCH_TCP_RATE_COUNT);
		if (rate < 0)
			side_failed("a call of the window failed");
		printf("rtt %.3f %.3f %.0f\n", p50, p99, rate);
		fflush(stdout);
	}
	_exit(0);
}

/* rpc-scale: the session counts, each a superset of the one before. */
static const unsigned int scale_sessions[] = { 1, 100, 1000 };
#define SCALE_LEVELS RTE_DIM(scale_sessions)
#define SCALE_MAX 1000

/* This process's DPDK heap in use, KiB (rte_malloc: what droce holds for
 * its sessions, touched or not).
 */
static long
heap_kib(void)
{
	struct rte_malloc_socket_stats st;
	uint64_t bytes = 0;

	for (int i = 0; i < RTE_MAX_NUMA_NODES; i++)
		if (rte_malloc_get_socket_stats(i, &st) == 0)
			bytes += st.heap_allocsz_bytes;
	return (long)(bytes / 1024);
}

/* Resident memory of process @p pid, KiB; -1 if unknown. */
static long
rss_kib(pid_t pid)
{
	char path[64], line[128];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* The "scale" client: in the first round it opens 1, then 100, then
 * 1000 sessions, saying "opened N" once N are open and idle (the parent
 * reads the server's memory then); each round a line of calls/s with
 * BENCH_RPC_WINDOW in flight spread over the first 1, 100 and 1000,
 * this side's resident and DPDK heap KiB for the 900 sessions opened
 * last, and the seconds their opening took.
 */
static int
side_scale(const char *p0, const char *rounds)
{
	static OckRpcClient c[SCALE_MAX];
	unsigned int n = (unsigned int)atoi(rounds), open = 0;
	long rss_100 = 0, rss_1000 = 0, heap_100 = 0, heap_1000 = 0;
	double open_s = 0;
	struct config g;

	config(&g, false);
	if (n == 0 || n > BENCH_MAX_ROUNDS)
		side_failed("no rounds");
	for (unsigned int r = 0; r < n; r++) {
		double rate[SCALE_LEVELS];

		for (unsigned int l = 0; l < SCALE_LEVELS; l++) {
			double t0 = bench_now();

			while (open < scale_sessions[l]) {
				char why[96];

				if (OckRpcClientConnectWithCfg(SERVER_IP, (uint16_t)atoi(p0), &c[open],
							       &g.c) != OCK_RPC_OK) {
					snprintf(why, sizeof(why), "session %u of %u failed to connect",
						 open + 1, scale_sessions[l]);
					side_failed(why);
				}
				open++;
			}
			if (r == 0) {
				if (scale_sessions[l] == 100) {
					rss_100 = rss_kib(getpid());
					heap_100 = heap_kib();
				}
				if (scale_sessions[l] == SCALE_MAX) {
					rss_1000 = rss_kib(getpid());
					heap_1000 = heap_kib();
					open_s = bench_now() - t0;
				}
				printf("opened %u\n", open);
				fflush(stdout);
			}
			rate[l] = bench_rpc_window_over(c, scale_sessions[l], BENCH_TCP_RATE_COUNT);
			if (rate[l] < 0)
				side_failed("a call of the window failed");
		}
		printf("scale %.0f %.0f %.0f %ld %ld %.3f\n", rate[0], rate[1], rate[2],
		       rss_1000 - rss_100, heap_1000 - heap_100, open_s);
		fflush(stdout);
	}
	_exit(0);
}

/* The client side: ROUNDS rounds, each a line on stdout. */
static int
side_client(const char *p0, const char *p1, const char *rounds)
{
	uint16_t ports[2] = { (uint16_t)atoi(p0), (uint16_t)atoi(p1) };
	OckRpcClient plain = 0, secure = 0;
	unsigned int n = (unsigned int)atoi(rounds);
	struct one_sided_ends e[2];
	OckRpcMemoryRegionInfo rndv_info;
	OckRpcMessageInfo rndv_buf;
	OckRpcMemoryRegion rndv_mr;
	OckRpcServer regions;
	struct tls_rounds t;
	struct config g;
	uint8_t *rndv_dst;

	config(&g, false);
	if (n == 0 || n > BENCH_MAX_ROUNDS || !connect_both(SERVER_IP, ports, &plain, &secure))
		side_failed("no sessions with the servers");
	if (OckRpcServerCreateWithCfg(SERVER_IP, 0, &regions, &g.c) != OCK_RPC_OK ||
	    !one_sided_ends(plain, regions, &e[0]) || !one_sided_ends(secure, regions, &e[1]))
		side_failed("no memory regions for the one-sided operations");
	rndv_dst = malloc(RNDV_BYTES);
	if (rndv_dst == NULL ||
	    OckRpcRegisterMemoryRegion(regions, RNDV_BYTES, &rndv_mr) != OCK_RPC_OK ||
	    OckRpcGetMemoryRegionInfo(rndv_mr, &rndv_info) != OCK_RPC_OK)
		side_failed("no memory region for the rendezvous calls");
	memset((void *)rndv_info.lAddress, 0x5a, RNDV_BYTES);
	memset(rndv_dst, 0, RNDV_BYTES);
	rndv_buf = (OckRpcMessageInfo){ rndv_info.lAddress, rndv_info.lKey, RNDV_BYTES };
	for (unsigned int r = 0; r < n; r++) {
		if (!measure(plain, secure, &t, r))
			side_failed("a round's calls failed");
		if (!measure_one_sided(plain, secure, e, &t, r))
			side_failed("a round's one-sided operations failed");
		t.rndv[r] = rndv_gbps(plain, &rndv_buf);
		t.rndv_memcpy[r] = rndv_memcpy_gbps(&rndv_buf, rndv_dst);
		if (t.rndv[r] < 0)
			side_failed("a round's rendezvous calls failed");
		printf("round %.3f %.3f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f\n", t.plain_rtt[r],
		       t.tls_rtt[r], t.plain_bulk[r], t.tls_bulk[r], t.plain_write[r], t.tls_write[r],
		       t.plain_read[r], t.tls_read[r], t.rndv[r], t.rndv_memcpy[r]);
		fflush(stdout);
	}
	_exit(0);
}

int
bench_rpc_tls_side(int argc, char **argv)
{
	struct rlimit rl;

	if (argc < 4)
		return 2;
	/* A session holds a few descriptors (its CQs' eventfds, its
	 * connection's exchange): rpc-scale's thousand need more than the
	 * usual soft limit, on both sides.
	 */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	transport = "RDMA";
	snprintf(pki_dir, sizeof(pki_dir), "%s", argv[3]);
	if (strcmp(argv[2], "server") == 0)
		return side_server(argc > 4 ? argv[4] : SERVER_IP);
	if (strcmp(argv[2], "yielding-server") == 0 && argc == 5)
		return side_yielding_server(argv[4]);
	if (stepped_start() == NULL)
		return 1;
	if (strcmp(argv[2], "client") == 0 && argc == 7)
		return side_client(argv[4], argv[5], argv[6]);
	if (strcmp(argv[2], "rtt") == 0 && argc == 7)
		return side_rtt(argv[4], argv[6]);
	if (strcmp(argv[2], "scale") == 0 && argc == 7)
		return side_scale(argv[4], argv[6]);
	return 2;
}

/* A side's droce configuration: its half of the memif pair, one polling
 * thread on @p cpu; as many RX queues as the peer sends on (memif).
 */
static bool
side_conf(const char *path, const char *address, const char *cpu)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return false;
	fprintf(f, "worker.inline = yes\ncontrol.cpu = %s\n[port.0]\ndevice = net_memif0\naddress = %s/24\nqueues = 2\n[worker]\nthread.groups = 1\npoll.enable = yes\n",
		cpu, address);
	return fclose(f) == 0;
}

/* This program again as side @p argv[2], free to run on @p cpus (the
 * EAL pinned this thread to one); its stdin and stdout pipes.
 */
static pid_t
side_start(char *const argv[], const char *conf, const char *eal, const cpu_set_t *cpus, int *in,
	   int *out)
{
	int to[2], from[2];
	pid_t pid;

	if (pipe(to) != 0 || pipe(from) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sched_setaffinity(0, sizeof(*cpus), cpus);
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		close(to[1]);
		close(from[0]);
		setenv("DROCE_HCOM_CONF", conf, 1);
		setenv("DROCE_HCOM_EAL", eal, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	*in = to[1];
	*out = from[0];
	return pid;
}

/* What a client side's line was to its taker. */
enum side_line {
	LINE_OTHER,     /* not the taker's: the client's log */
	LINE_ROUND,     /* a round's figures */
	LINE_NOTED,     /* a step the taker noted */
};

/* A client side's line, taken into the figures of round @p r. */
typedef enum side_line (*round_taker)(const char *line, unsigned int r, void *arg);

/* The server side of the run in progress (its memory is read). */
static pid_t rdma_server;

/* Ends the server side; its peer must be gone (see side_server()). */
static void
server_side_stop(struct bench_rdma_server *srv)
{
	char cmd[160];
	int status;

	if (srv->in >= 0)
		close(srv->in);
	if (srv->pid > 0) {
		kill(srv->pid, SIGKILL);
		waitpid(srv->pid, &status, 0);
	}
	if (srv->out != NULL)
		fclose(srv->out);
	unlink(srv->conf);
	unlink(srv->sock);
	snprintf(cmd, sizeof(cmd), "rm -rf /var/run/dpdk/droce-bench-rs-%d", (int)getpid());
	if (system(cmd) != 0)
		fprintf(stderr, "droce-bench: %s failed\n", cmd);
	srv->pid = -1;
	srv->in = -1;
	srv->out = NULL;
}

/* The server side at @p ip, free to run on @p cpus, its thread pinned to
 * @p cpu, the library's or (@p yielding) its own that gives the cpu away
 * while idle; 0 once its ports came, or -1 (and nothing left running).
 */
static int
server_side_start(struct bench_rdma_server *srv, const char *ip, const cpu_set_t *cpus,
		  const char *cpu, bool yielding)
{
	char eal[320], line[256];
	unsigned int p0, p1;
	FILE *f;
	int out;

	memset(srv, 0, sizeof(*srv));
	srv->pid = -1;
	srv->in = -1;
	snprintf(srv->conf, sizeof(srv->conf), "%s/server.conf", pki_dir);
	snprintf(srv->sock, sizeof(srv->sock), "%s/m.sock", pki_dir);
	snprintf(eal, sizeof(eal),
		 "--no-pci --no-huge -m 1024 --file-prefix droce-bench-rs-%d --log-level lib.eal:error --vdev=net_memif0,role=server,socket=%s%s%s",
		 (int)getpid(), srv->sock, yielding ? " --lcores=0@" : "", yielding ? cpu : "");
	if (!side_conf(srv->conf, ip, cpu))
		return -1;
	srv->pid = side_start((char *const[]){ "droce-bench", "--rpc-tls-side",
					       yielding ? "yielding-server" : "server", pki_dir,
					       (char *)ip, NULL },
			      srv->conf, eal, cpus, &srv->in, &out);
	/* Open until the end: a server that writes to a closed pipe dies. */
	f = srv->pid > 0 ? fdopen(out, "r") : NULL;
	if (f == NULL && srv->pid > 0)
		close(out);
	srv->out = f;
	if (f == NULL || fgets(line, sizeof(line), f) == NULL ||
	    sscanf(line, "ports %u %u", &p0, &p1) != 2 || p0 == 0 || p0 > UINT16_MAX ||
	    p1 == 0 || p1 > UINT16_MAX) {
		fprintf(stderr, "droce-bench: no RDMA server\n");
		server_side_stop(srv);
		return -1;
	}
	srv->plain_port = (uint16_t)p0;
	srv->secure_port = (uint16_t)p1;
	rdma_server = srv->pid;
	return 0;
}

int
bench_rdma_server_start(struct bench_rdma_server *srv, const char *ip, unsigned int cpu)
{
	char cpu_name[16];
	cpu_set_t cpus;

	if (!make_pki()) {
		fprintf(stderr, "droce-bench: cannot make the certificates\n");
		return -1;
	}
	snprintf(cpu_name, sizeof(cpu_name), "%u", cpu);
	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	if (server_side_start(srv, ip, &cpus, cpu_name, true) != 0) {
		remove_pki();
		return -1;
	}
	return 0;
}

void
bench_rdma_server_stop(struct bench_rdma_server *srv)
{
	server_side_stop(srv);
	remove_pki();
}

/*
 * Both sides over a net_memif pair, the client run as @p mode ("client":
 * TLS against plaintext, "rtt": round trips and a window of calls,
 * "scale": the window over many sessions), each of its lines to @p take;
 * 0 once o->rounds rounds came.
 */
static int
rdma_sides(const struct bench_opts *o, const char *mode, round_taker take, void *arg)
{
	char cli_conf[128], cli_eal[320], rounds[8], cpu0[16] = "", cpu1[16] = "", line[256];
	char p0[8], p1[8];
	int cli_in = -1, cli_out = -1, status, ret = 1;
	struct bench_rdma_server srv = { .pid = -1, .in = -1 };
	pid_t cli = -1;
	unsigned int r = 0;
	cpu_set_t cpus;
	FILE *f = NULL;

	sscanf(o->cpus, "%15[0-9],%15[0-9]", cpu0, cpu1);
	if (cpu1[0] == '\0')
		snprintf(cpu1, sizeof(cpu1), "%s", cpu0);
	snprintf(cli_conf, sizeof(cli_conf), "%s/client.conf", pki_dir);
	snprintf(cli_eal, sizeof(cli_eal),
		 "--no-pci --no-huge -m 1024 --file-prefix droce-bench-rc-%d --log-level lib.eal:error --lcores=0@%s --vdev=net_memif0,role=client,socket=%s/m.sock",
		 (int)getpid(), cpu1, pki_dir);
	snprintf(rounds, sizeof(rounds), "%u", o->rounds);
	printf("  RDMA over net_memif, two processes, one polling thread each (cpus %s and %s); the client's runs to completion (its calls' waits poll its stack)\n",
	       cpu0, cpu1);
	fflush(stdout);
	CPU_ZERO(&cpus);
	CPU_SET(atoi(cpu0), &cpus);
	CPU_SET(atoi(cpu1), &cpus);
	if (!side_conf(cli_conf, "198.18.0.2", cpu1) ||
	    server_side_start(&srv, SERVER_IP, &cpus, cpu0, false) != 0)
		goto out;
	snprintf(p0, sizeof(p0), "%u", srv.plain_port);
	snprintf(p1, sizeof(p1), "%u", srv.secure_port);
	cli = side_start((char *const[]){ "droce-bench", "--rpc-tls-side", (char *)mode, pki_dir,
					  p0, p1, rounds, NULL }, cli_conf, cli_eal, &cpus, &cli_in,
			 &cli_out);
	f = cli > 0 ? fdopen(cli_out, "r") : NULL;
	/* Anything else the client says (its log) goes on to stderr. */
	while (f != NULL && r < o->rounds && fgets(line, sizeof(line), f) != NULL) {
		enum side_line what = take(line, r, arg);

		if (what == LINE_ROUND)
			r++;
		else if (what == LINE_OTHER)
			fprintf(stderr, "RDMA client: %s", line);
	}
	if (r != o->rounds) {
		fprintf(stderr, "droce-bench: the RDMA client stopped after %u rounds\n", r);
		goto out;
	}
	ret = 0;
out:
	if (f != NULL)
		fclose(f);
	/* The client first: the server's end may fault in memif (see above). */
	if (cli > 0 && waitpid(cli, &status, 0) < 0)
		kill(cli, SIGKILL);
	if (cli_in >= 0)
		close(cli_in);
	server_side_stop(&srv);
	unlink(cli_conf);
	snprintf(line, sizeof(line), "rm -rf /var/run/dpdk/droce-bench-rc-%d", (int)getpid());
	if (system(line) != 0)
		fprintf(stderr, "droce-bench: %s failed\n", line);
	return ret;
}

static enum side_line
take_tls_round(const char *line, unsigned int r, void *arg)
{
	struct tls_rounds *t = arg;

	if (sscanf(line, "round %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &t->plain_rtt[r],
		   &t->tls_rtt[r], &t->plain_bulk[r], &t->tls_bulk[r], &t->plain_write[r],
		   &t->tls_write[r], &t->plain_read[r], &t->tls_read[r], &t->rndv[r],
		   &t->rndv_memcpy[r]) != 10)
		return LINE_OTHER;
	print_round(t, r, true);
	return LINE_ROUND;
}

static int
bench_rdma(const struct bench_opts *o)
{
	static struct tls_rounds t;

	if (rdma_sides(o, "client", take_tls_round, &t) != 0)
		return 1;
	report("RDMA", &t, o->rounds);
	report_one_sided(&t, o->rounds);
	return 0;
}

static enum side_line
take_rtt_round(const char *line, unsigned int r, void *arg)
{
	struct bench_rdma_rtt *f = arg;

	return sscanf(line, "rtt %lf %lf %lf", &f->p50[r], &f->p99[r], &f->rate[r]) == 3
	       ? LINE_ROUND : LINE_OTHER;
}

int
bench_rpc_rdma_rtt(const struct bench_opts *o, struct bench_rdma_rtt *f)
{
	int ret;

	/* The server side serves TLS too, with its certificates. */
	if (!make_pki()) {
		fprintf(stderr, "droce-bench: cannot make the certificates\n");
		return 1;
	}
	ret = rdma_sides(o, "rtt", take_rtt_round, f);
	remove_pki();
	return ret;
}

int
bench_rpc_tls(const struct bench_opts *o)
{
	int ret;

	if (!make_pki()) {
		fprintf(stderr, "droce-bench rpc-tls: cannot make the certificates\n");
		return 1;
	}
	ret = bench_tcp(o);
	ret |= bench_rdma(o);
	remove_pki();
	return ret;
}

/* ---- rpc-scale -------------------------------------------------------------------------- */

struct scale_figures {
	double rate[SCALE_LEVELS][BENCH_MAX_ROUNDS];
	long server_kib_100, server_kib_1000, client_kib, client_heap_kib;
	double open_s;
};

static enum side_line
take_scale_round(const char *line, unsigned int r, void *arg)
{
	struct scale_figures *f = arg;
	unsigned int opened;

	if (sscanf(line, "opened %u", &opened) == 1) {
		if (opened == 100)
			f->server_kib_100 = rss_kib(rdma_server);
		if (opened == SCALE_MAX)
			f->server_kib_1000 = rss_kib(rdma_server);
		return LINE_NOTED;
	}
	if (sscanf(line, "scale %lf %lf %lf %ld %ld %lf", &f->rate[0][r], &f->rate[1][r],
		   &f->rate[2][r], &f->client_kib, &f->client_heap_kib, &f->open_s) != 6)
		return LINE_OTHER;
	printf("  round %u: %u in flight over 1 session %.0f calls/s, over 100 %.0f, over 1000 %.0f\n",
	       r + 1, BENCH_RPC_WINDOW, f->rate[0][r], f->rate[1][r], f->rate[2][r]);
	fflush(stdout);
	return LINE_ROUND;
}

int
bench_rpc_scale(const struct bench_opts *o)
{
	static struct scale_figures f;
	unsigned int n = o->rounds;
	int ret;

	if (!make_pki()) {
		fprintf(stderr, "droce-bench: cannot make the certificates\n");
		return 1;
	}
	ret = rdma_sides(o, "scale", take_scale_round, &f);
	remove_pki();
	if (ret != 0)
		return ret;
	for (unsigned int l = 0; l < SCALE_LEVELS; l++)
		printf("  64 B calls, %u in flight over %u session%s: %.0f calls/s, %.2fx of 1 session\n",
		       BENCH_RPC_WINDOW, scale_sessions[l], scale_sessions[l] > 1 ? "s" : "",
		       bench_median(f.rate[l], n), bench_median(f.rate[l], n) / bench_median(f.rate[0], n));
	printf("  an idle session's memory (sessions 101 to 1000): resident, client %.1f KiB, server %.1f KiB; the client's DPDK heap %.1f KiB; opening those 900 took %.2f s\n",
	       (double)f.client_kib / (SCALE_MAX - 100),
	       (double)(f.server_kib_1000 - f.server_kib_100) / (SCALE_MAX - 100),
	       (double)f.client_heap_kib / (SCALE_MAX - 100), f.open_s);
	return 0;
}
