/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * rx-drop: droce's RX -> classify -> drop path on net_null against DPDK's
 * own testpmd io forwarding on the same vdev, one polling core each.
 */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "droce_core.h"
#include "droce_net.h"
#include "bench.h"

/* testpmd io forwarding on net_null for o->seconds; its per-second Rx-pps
 * lines after the first (warm-up) are the samples; returns their median.
 */
static double
testpmd_io_mpps(const struct bench_opts *o, unsigned int round)
{
	char prefix[64], line[4096];
	double samples[BENCH_MAX_SAMPLES];
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
			    seen++ >= 2 && n < BENCH_MAX_SAMPLES) /* skip start, warm-up */
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
	return bench_median(samples, n);
}

/* droce's own path on the same vdev: one worker busy-polls net_null,
 * classifies every frame (all-zero frames: not for us) and drops it.
 */
static double
droce_rx_drop_mpps(const struct bench_opts *o)
{
	char *kv[] = { "port.0.device=net_null0", "port.0.address=198.18.0.1/24",
		       "stats.period=0", "worker.thread.groups=1" };
	double samples[BENCH_MAX_SAMPLES];
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
	for (unsigned int i = 0; i < o->seconds && n < BENCH_MAX_SAMPLES; i++) {
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
	return bench_median(samples, n);
}

int
bench_rx_drop(const struct bench_opts *o)
{
	double tpmd[BENCH_MAX_ROUNDS], droce[BENCH_MAX_ROUNDS];

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
		double mt = bench_median(tpmd, o->rounds), md = bench_median(droce, o->rounds);

		printf("  median: testpmd io %.2f Mpps, droce %.2f Mpps, ratio droce/testpmd %.2f\n",
		       mt, md, md / mt);
	}
	return 0;
}

