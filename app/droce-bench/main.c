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

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_timer.h>

#include "droce_core.h"
#include "droce_net.h"

#define MAX_ROUNDS 20
#define MAX_SAMPLES 600

struct bench_opts {
	const char *only_case;
	unsigned int seconds;
	unsigned int rounds;
	const char *testpmd;
	char cpus[64];           /* "A,B": the two cpus both sides run on */
};

struct bench_case {
	const char *name;
	const char *what;
	int (*run)(const struct bench_opts *o);
};

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, unsigned int n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- rx-drop: droce RX -> classify -> drop vs testpmd io forwarding ---- */

/* testpmd io forwarding on net_null for o->seconds; its per-second Rx-pps
 * lines after the first (warm-up) are the samples; returns their median.
 */
static double
testpmd_io_mpps(const struct bench_opts *o, unsigned int round)
{
	char prefix[64], line[4096];
	double samples[MAX_SAMPLES];
	unsigned int n = 0, seen = 0;
	size_t used = 0;
	uint64_t end;
	int pipefd[2], status;
	pid_t pid;

	snprintf(prefix, sizeof(prefix), "droce-bench-tpmd-%d-%u", getpid(), round);
	if (pipe(pipefd) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		/* Line-buffered, or testpmd's stats wait in its stdio buffer. */
		execlp("stdbuf", "stdbuf", "-oL", o->testpmd, "--no-pci", "--no-huge", "-m", "512",
		       "--file-prefix", prefix, "-l", o->cpus, "--vdev", "net_null0",
		       "--", "--forward-mode=io", "--port-topology=loop",
		       "--nb-cores=1", "--stats-period=1",
		       "--total-num-mbufs=16384", (char *)NULL);
		fprintf(stderr, "exec stdbuf %s: %s\n", o->testpmd, strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	end = rte_get_timer_cycles() + (uint64_t)(o->seconds + 2) * rte_get_timer_hz();
	for (bool stopping = false;;) {
		struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
		ssize_t got;

		if (!stopping && rte_get_timer_cycles() >= end) {
			kill(pid, SIGINT);
			stopping = true;
		}
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		got = read(pipefd[0], line + used, sizeof(line) - 1 - used);
		if (got <= 0)
			break; /* testpmd exited */
		used += (size_t)got;
		line[used] = '\0';
		/* Parse whole lines; keep a partial one for the next read. */
		for (char *nl; (nl = strchr(line, '\n')) != NULL;) {
			unsigned long long pps;

			*nl = '\0';
			if (!stopping && sscanf(line, " Rx-pps: %llu", &pps) == 1 &&
			    seen++ >= 2 && n < MAX_SAMPLES) /* skip start, warm-up */
				samples[n++] = (double)pps / 1e6;
			used -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, used + 1);
		}
		if (used == sizeof(line) - 1)
			used = 0; /* an absurdly long line: drop it */
	}
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	if (n == 0) {
		fprintf(stderr, "droce-bench: no Rx-pps from %s (is it installed? --testpmd PATH)\n",
			o->testpmd);
		return -1;
	}
	return median(samples, n);
}

/* droce's own path on the same vdev: one worker busy-polls net_null,
 * classifies every frame (all-zero frames: not for us) and drops it.
 */
static double
droce_rx_drop_mpps(const struct bench_opts *o)
{
	char *kv[] = { "port.0.device=net_null0", "port.0.address=198.18.0.1/24",
		       "stats.period=0", "worker.thread.groups=1" };
	double samples[MAX_SAMPLES];
	struct droce_lcore_layout layout;
	struct droce_counters c;
	char err[DROCE_ERR_LEN];
	static struct droce_conf conf;
	struct droce_stack *s;
	uint64_t prev, prev_tsc;
	unsigned int n = 0;

	if (droce_conf_load(&conf, NULL, kv, RTE_DIM(kv), err, sizeof(err)) != 0 ||
	    droce_lcores_layout(&conf, "droce-bench", &layout, err, sizeof(err)) != 0) {
		fprintf(stderr, "droce-bench: %s\n", err);
		return -1;
	}
	s = droce_stack_create(&conf, &layout, err, sizeof(err));
	if (s == NULL) {
		fprintf(stderr, "droce-bench: %s\n", err);
		return -1;
	}
	if (droce_stack_start(s, true) != 0) {
		droce_stack_destroy(s);
		return -1;
	}
	rte_delay_ms(1000); /* warm-up, as for testpmd */
	droce_port_counters(s, 0, &c);
	prev = c.rx_packets;
	prev_tsc = rte_get_timer_cycles();
	for (unsigned int i = 0; i < o->seconds && n < MAX_SAMPLES; i++) {
		uint64_t now;

		rte_delay_ms(1000);
		droce_control_poll(s);
		droce_port_counters(s, 0, &c);
		now = rte_get_timer_cycles();
		samples[n++] = (double)(c.rx_packets - prev) /
			       ((double)(now - prev_tsc) / (double)rte_get_timer_hz()) / 1e6;
		prev = c.rx_packets;
		prev_tsc = now;
	}
	droce_stack_stop(s);
	droce_stack_destroy(s);
	return median(samples, n);
}

static int
case_rx_drop(const struct bench_opts *o)
{
	double tpmd[MAX_ROUNDS], droce[MAX_ROUNDS];

	printf("  %u rounds of %u s; net_null, 64-byte frames; one polling core each, on cpus %s\n",
	       o->rounds, o->seconds, o->cpus);
	for (unsigned int r = 0; r < o->rounds; r++) {
		tpmd[r] = testpmd_io_mpps(o, r);
		droce[r] = droce_rx_drop_mpps(o);
		if (tpmd[r] < 0 || droce[r] < 0)
			return 1;
		printf("  round %u: testpmd io %.2f Mpps, droce rx->classify->drop %.2f Mpps (%.2fx)\n",
		       r + 1, tpmd[r], droce[r], droce[r] / tpmd[r]);
		fflush(stdout);
	}
	{
		double mt = median(tpmd, o->rounds), md = median(droce, o->rounds);

		printf("  median: testpmd io %.2f Mpps, droce %.2f Mpps, ratio droce/testpmd %.2f\n",
		       mt, md, md / mt);
	}
	return 0;
}

static const struct bench_case cases[] = {
	{ "rx-drop", "droce RX->classify->drop vs testpmd io forwarding (packet rate)",
	  case_rx_drop },
};

static void
usage(const char *prog)
{
	printf("Usage: %s [EAL options] -- [options]\n"
	       "\n"
	       "Measures droce's hot paths against their baselines in one run.\n"
	       "The EAL options must give two lcores (e.g. -l 0,1) and a --vdev\n"
	       "net_null0 for rx-drop; usertools/droce-bench.sh does that.\n"
	       "\n"
	       "Options:\n"
	       "  --case NAME     run only this case (default: all)\n"
	       "  --seconds S     seconds per side and round (default 5)\n"
	       "  --rounds N      rounds, alternating the sides (default 3, at most %u)\n"
	       "  --testpmd PATH  DPDK's testpmd (default dpdk-testpmd)\n"
	       "  -h, --help      this text\n"
	       "\nCases:\n", prog, MAX_ROUNDS);
	for (unsigned int i = 0; i < RTE_DIM(cases); i++)
		printf("  %-10s %s\n", cases[i].name, cases[i].what);
}

static int
parse_args(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "case", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "testpmd", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	unsigned long v;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->only_case = optarg;
			break;
		case 's':
		case 'r':
			v = strtoul(optarg, &end, 10);
			if (*end != '\0' || v == 0 ||
			    v > (opt == 's' ? 300ul : MAX_ROUNDS)) {
				fprintf(stderr, "droce-bench: --%s \"%s\": allowed: 1..%u\n",
					opt == 's' ? "seconds" : "rounds", optarg,
					opt == 's' ? 300u : MAX_ROUNDS);
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
	int ret, failed = 0, ran = 0;

	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "droce-bench: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argv[ret] = argv[0];
	ret = parse_args(argc - ret, argv + ret, &o);
	if (ret != 0)
		goto out;
	if (lcore_cpus(o.cpus, sizeof(o.cpus)) != 0) {
		fprintf(stderr, "droce-bench: needs two lcores (e.g. -l 0,1)\n");
		ret = 2;
		goto out;
	}
	rte_timer_subsystem_init();
	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		if (o.only_case != NULL && strcmp(o.only_case, cases[i].name) != 0)
			continue;
		printf("case %s: %s\n", cases[i].name, cases[i].what);
		fflush(stdout);
		failed |= cases[i].run(&o);
		ran++;
	}
	if (ran == 0) {
		fprintf(stderr, "droce-bench: no case \"%s\"; --help lists them\n", o.only_case);
		ret = 2;
	} else {
		ret = failed;
	}
out:
	rte_eal_cleanup();
	return ret < 0 ? 2 : ret;
}
