/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * droce-bench [EAL options] -- [--case NAME] [--seconds S] [--rounds N]
 *
 * Each case measures a droce hot path against its baseline in the same
 * run, alternating the two for several rounds, and prints both medians
 * and their ratio. Machines are noisy: compare ratios, not times.
 */

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_cpuflags.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_timer.h>
#include <rte_vect.h>

#include "bench.h"

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double
bench_median(const double *v, unsigned int n)
{
	double sorted[BENCH_MAX_SAMPLES];

	n = RTE_MIN(n, (unsigned int)BENCH_MAX_SAMPLES);
	if (n == 0)
		return 0;
	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

double
bench_now(void)
{
	return (double)rte_get_tsc_cycles() / (double)rte_get_tsc_hz();
}

bool
bench_allow_512(void)
{
	return rte_cpu_get_flag_enabled(RTE_CPUFLAG_VPCLMULQDQ) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) > 0 &&
	       rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512) == 0;
}

int
bench_port_up(const char *name, uint16_t *port_id, struct rte_mempool **pool, char *err,
	      size_t errlen)
{
	static unsigned int pools_made;
	struct rte_eth_conf ec = { 0 };
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	int ret = rte_eth_dev_get_port_by_name(name, port_id);

	snprintf(pool_name, sizeof(pool_name), "bench_port_%u", pools_made++);
	*pool = ret == 0 ? rte_pktmbuf_pool_create(pool_name, 2047, 64, 0,
						   RTE_MBUF_DEFAULT_BUF_SIZE,
						   SOCKET_ID_ANY) : NULL;
	if (ret == 0)
		ret = *pool == NULL ? -ENOMEM : rte_eth_dev_configure(*port_id, 1, 1, &ec);
	if (ret == 0)
		ret = rte_eth_rx_queue_setup(*port_id, 0, 512, SOCKET_ID_ANY, NULL, *pool);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(*port_id, 0, 512, SOCKET_ID_ANY, NULL);
	if (ret == 0)
		ret = rte_eth_dev_start(*port_id);
	if (ret != 0) {
		snprintf(err, errlen, "%s: %s", name, rte_strerror(-ret));
		return -1;
	}
	return 0;
}

void
bench_port_down(uint16_t port_id, struct rte_mempool *pool)
{
	struct rte_eth_dev_info info;
	int ret = rte_eth_dev_info_get(port_id, &info);

	rte_eth_dev_stop(port_id);
	rte_eth_dev_close(port_id);
	if (ret == 0 && info.device != NULL)
		rte_dev_remove(info.device);
	rte_mempool_free(pool);
}

static const struct bench_case cases[] = {
	{ "rx-drop", "droce RX->classify->drop vs testpmd io forwarding (packet rate)",
	  bench_rx_drop },
	{ "icrc", "ICRC GB/s: droce vs zlib crc32 vs rte_net_crc_calc",
	  bench_icrc },
	{ "icrc-copy", "fused ICRC verify + copy of 4096-byte payloads into a 64 MiB ring vs memcpy",
	  bench_icrc_copy },
	{ "place", "placement on the host gpudev driver, copy and gather, vs memcpy",
	  bench_place },
	{ "stream-place", "HSB frames placed by one worker, ICRC off/on/fused, vs memcpy of the payloads (GB/s)",
	  bench_stream_place },
	{ "stream-pps", "64-byte-payload packet rate through the stream path vs testpmd io forwarding",
	  bench_stream_pps },
	{ "stream-scale", "placed GB/s with 1, 16 and 256 streams on one worker",
	  bench_stream_scale },
	{ "rc", "RC over memif between two processes vs kernel TCP (ping-pong, rate) and memcpy (WRITE)",
	  bench_rc },
	{ "rpc", "hcom4db calls over droce RDMA and over TCP, two processes, vs kernel TCP (ping-pong, 32 in flight, rate)",
	  bench_rpc },
	{ "rpc-tls", "hcom4db calls with TLS 1.3 vs without, over TCP and RDMA (64 B ping-pong, 64 KiB GB/s)",
	  bench_rpc_tls },
	{ "rpc-scale", "hcom4db calls over droce RDMA spread over 1, 100 and 1000 sessions of one thread; an idle session's memory",
	  bench_rpc_scale },
	{ "stream-rpc", "HSB frames placed by one worker with and without a saturating RPC load on the same port (GB/s)",
	  bench_stream_rpc },
};

static void
usage(const char *prog)
{
	printf("Usage: %s [EAL options] -- [options]\n"
	       "\n"
	       "Measures droce's hot paths against their baselines in one run.\n"
	       "The EAL options must give two lcores (e.g. -l 0,1) and a --vdev\n"
	       "net_null0 for rx-drop; usertools/droce-bench.sh does that.\n"
	       "Rounds alternate droce and its baseline; --seconds is per side for\n"
	       "packet-rate cases, the byte cases run a fixed amount of work.\n"
	       "\n"
	       "Options:\n"
	       "  --case NAME     run only this case (default: all)\n"
	       "  --seconds S     seconds per side and round (default 5)\n"
	       "  --rounds N      rounds, alternating the sides (default 3, at most %u)\n"
	       "  --testpmd PATH  DPDK's testpmd (default dpdk-testpmd)\n"
	       "  -h, --help      this text\n"
	       "\nCases:\n", prog, BENCH_MAX_ROUNDS);
	for (unsigned int i = 0; i < RTE_DIM(cases); i++)
		printf("  %-13s %s\n", cases[i].name, cases[i].what);
}

static int
parse_args(int argc, char **argv, struct bench_opts *o, const char **only_case)
{
	static const struct option longopts[] = {
		{ "case", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "testpmd", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "rc-peer", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	unsigned long v;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			*only_case = optarg;
			break;
		case 's':
		case 'r':
			v = strtoul(optarg, &end, 10);
			if (*end != '\0' || v == 0 ||
			    v > (opt == 's' ? 300ul : BENCH_MAX_ROUNDS)) {
				fprintf(stderr, "droce-bench: --%s \"%s\": allowed: 1..%u\n",
					opt == 's' ? "seconds" : "rounds", optarg,
					opt == 's' ? 300u : BENCH_MAX_ROUNDS);
				return -1;
			}
			if (opt == 's')
				o->seconds = (unsigned int)v;
			else
				o->rounds = (unsigned int)v;
			break;
		case 't':
			o->testpmd = optarg;
			break;
		case 'h':
			usage(argv[0]);
			return 1;
		case 'P':
			o->rc_peer = true;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "droce-bench: unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* The cpus of the main lcore and the first worker, for testpmd's -l. */
static int
lcore_cpus(char *buf, size_t len)
{
	unsigned int worker = rte_get_next_lcore(-1, 1, 0);
	rte_cpuset_t a = rte_lcore_cpuset(rte_get_main_lcore());
	int ca = -1, cb = -1;
	rte_cpuset_t b;

	if (worker >= RTE_MAX_LCORE)
		return -1;
	b = rte_lcore_cpuset(worker);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (ca < 0 && CPU_ISSET(c, &a))
			ca = c;
		if (cb < 0 && CPU_ISSET(c, &b))
			cb = c;
	}
	snprintf(buf, len, ca == cb ? "%d" : "%d,%d", ca, cb);
	return 0;
}

int
main(int argc, char **argv)
{
	struct bench_opts o = { .seconds = 5, .rounds = 3, .testpmd = "dpdk-testpmd" };
	const char *only_case = NULL;
	int ret, failed = 0, ran = 0;

	/* rpc-tls's sides over RDMA: the library starts their EAL. */
	if (argc > 1 && strcmp(argv[1], "--rpc-tls-side") == 0)
		return bench_rpc_tls_side(argc, argv);
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "droce-bench: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argv[ret] = argv[0];
	ret = parse_args(argc - ret, argv + ret, &o, &only_case);
	if (ret != 0)
		goto out;
	if (lcore_cpus(o.cpus, sizeof(o.cpus)) != 0) {
		fprintf(stderr, "droce-bench: needs two lcores (e.g. -l 0,1)\n");
		ret = 2;
		goto out;
	}
	rte_timer_subsystem_init();
	if (o.rc_peer) {
		ret = bench_rc_peer();
		goto out;
	}
	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		if (only_case != NULL && strcmp(only_case, cases[i].name) != 0)
			continue;
		printf("case %s: %s\n", cases[i].name, cases[i].what);
		fflush(stdout);
		failed |= cases[i].run(&o);
		ran++;
	}
	if (ran == 0) {
		fprintf(stderr, "droce-bench: no case \"%s\"; --help lists them\n", only_case);
		ret = 2;
	} else {
		ret = failed;
	}
out:
	rte_eal_cleanup();
	return ret < 0 ? 2 : ret;
}
