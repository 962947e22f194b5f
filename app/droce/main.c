/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * droce [EAL options] -- [-c FILE] [options] [key=value ...]
 *
 * Reads the configuration before the EAL starts, because the EAL's lcore
 * map comes from it (unless the user gave -l/--lcores/-c), then runs the
 * stack until SIGINT/SIGTERM (or --duration) and prints the counters.
 */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_gpudev.h>
#include <rte_lcore.h>
#include <rte_timer.h>
#include <rte_vect.h>

#include "droce_core.h"
#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "droce_net.h"
#include "droce_roce.h"

#include "app_rpc.h"
#include "app_rx.h"

struct app_opts {
	const char *config;
	const char *stats_json;
	unsigned long duration_s;   /* 0: until a signal */
	unsigned long idle_ms;      /* --exit-on-idle; 0: off */
	struct app_rx_opts rx;
	int nb_overrides;
	char **overrides;
};

static struct droce_stack *running;
/* With rpc.port: the server, which must go while the stack still runs. */
static struct app_rpc *rpc;
static volatile sig_atomic_t stop_asked;

static void
usage(FILE *out, const char *prog)
{
	fprintf(out,
		"Usage: %s [EAL options] -- [-c FILE] [options] [key=value ...]\n"
		"\n"
		"Runs the droce stack on the ports of its configuration until SIGINT or\n"
		"SIGTERM, then prints the final counters.\n"
		"\n"
		"EAL options are DPDK's ('%s --no-pci --help --' prints them). Without\n"
		"-l/--lcores/-c droce builds the EAL's --lcores from\n"
		"worker.thread.groups, worker.thread.cpuset and control.cpu. Tests and\n"
		"hosts without a DPDK NIC want --no-pci, and --no-huge -m N without\n"
		"hugepages.\n"
		"\n"
		"Options:\n"
		"  -c, --config FILE      INI configuration (rte_cfgfile syntax, '#' comments)\n"
		"      --stats-json FILE  write the final counters as JSON to FILE\n"
		"      --duration S       stop by itself after S seconds\n"
		"      --frames N         stop once N frames were received, all streams (taken\n"
		"                         or discarded; looked at every 10 ms, so at least N)\n"
		"      --exit-on-idle MS  stop when no packet arrived for MS ms (after the\n"
		"                         first one): a net_pcap file is done\n"
		"      --dump DIR         write the first frames' bytes (.bin) and info (.json)\n"
		"      --dump-frames N    how many frames --dump writes (default 4)\n"
		"      --verify MODE      how each clean frame with metadata is checked:\n"
		"                         none (default): not at all, frames are counted;\n"
		"                         crc: against the CRC in its metadata (a CRC of 0,\n"
		"                         which a device may send, is counted as no-crc);\n"
		"                         pattern: every byte against droce-sensor's pattern\n"
		"  -h, --help             this text\n"
		"  key=value              override a configuration key (after the file)\n"
		"\n"
		"The exit status is 3 when a frame checked did not match.\n"
		"\n"
		"Configuration keys (port.N.*: N = 0..%u; rx.N.*: N = 0..%u):\n",
		prog, prog, DROCE_MAX_PORTS - 1, DROCE_MAX_RX_CONF - 1);
	droce_conf_print_keys(out);
	fprintf(out,
		"\n"
		"Example:\n"
		"  %s --no-pci --no-huge -m 256 --file-prefix d0 \\\n"
		"      --vdev net_af_packet0,iface=veth0,qpairs=2 -- \\\n"
		"      port.0.device=net_af_packet0 port.0.address=198.18.0.1/24\n",
		prog);
}

/* A whole number 1..max for option @name. */
static int
parse_count(const char *name, const char *arg, unsigned long max,
	    const char *unit, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-' ||
	    *out == 0 || *out > max) {
		fprintf(stderr, "droce: %s \"%s\": allowed: whole %s 1..%lu\n", name,
			arg, unit, max);
		return -1;
	}
	return 0;
}

/* Parse droce's own arguments (after "--"); returns 0, 1 for --help, or -1. */
static int
parse_app_args(int argc, char **argv, struct app_opts *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "stats-json", required_argument, NULL, 'j' },
		{ "duration", required_argument, NULL, 'd' },
		{ "frames", required_argument, NULL, 'f' },
		{ "exit-on-idle", required_argument, NULL, 'i' },
		{ "dump", required_argument, NULL, 'D' },
		{ "dump-frames", required_argument, NULL, 'n' },
		{ "verify", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int opt;

	optind = 1;
	o->rx.dump_frames = 4;
	while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->config = optarg;
			break;
		case 'j':
			o->stats_json = optarg;
			break;
		case 'd':
			if (parse_count("--duration", optarg, 86400 * 365, "seconds",
					&o->duration_s) != 0)
				return -1;
			break;
		case 'f':
			if (parse_count("--frames", optarg, UINT32_MAX, "frames", &v) != 0)
				return -1;
			o->rx.frames = v;
			break;
		case 'i':
			if (parse_count("--exit-on-idle", optarg, 3600000, "milliseconds",
					&o->idle_ms) != 0)
				return -1;
			break;
		case 'D':
			o->rx.dump_dir = optarg;
			break;
		case 'n':
			if (parse_count("--dump-frames", optarg, 1000000, "frames", &v) != 0)
				return -1;
			o->rx.dump_frames = (unsigned int)v;
			break;
		case 'v':
			if (app_verify_parse(optarg, &o->rx.verify) != 0) {
				fprintf(stderr, "droce: --verify \"%s\": allowed: none, crc, pattern\n",
					optarg);
				return -1;
			}
			break;
		case 'h':
			return 1;
		default:
			fprintf(stderr, "droce: '--help' lists the options\n");
			return -1;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (strchr(argv[i], '=') == NULL) {
			fprintf(stderr, "droce: argument \"%s\" is neither an option nor key=value; '--help' lists both\n",
				argv[i]);
			return -1;
		}
	}
	o->overrides = argv + optind;
	o->nb_overrides = argc - optind;
	return 0;
}

static int
find_separator(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return i;
	return argc;
}

static void
stop_stack(void *s)
{
	droce_stack_request_stop(s);
}

/* The stack stops; with RPC, once its server went. */
static void
request_stop(struct droce_stack *s)
{
	if (rpc == NULL || app_rpc_stop_async(rpc, stop_stack, s) != 0)
		droce_stack_request_stop(s);
}

/* With RPC the watch timer takes the stop (a thread cannot be started here). */
static void
on_signal(int sig)
{
	(void)sig;
	stop_asked = 1;
	if (running != NULL && rpc == NULL)
		droce_stack_request_stop(running);
}

static void
on_duration(struct rte_timer *t, void *arg)
{
	(void)t;
	request_stop(arg);
}

/* Control lcore, every WATCH_MS: --frames reached, or the wire idle. */
#define WATCH_MS 10

struct watch {
	struct droce_stack *s;
	const struct app_rx *rx;
	unsigned long idle_ms;
	uint64_t last_packets;
	uint64_t last_change_tsc;
	bool frames_told;
};

static void
on_watch(struct rte_timer *t, void *arg)
{
	struct watch *w = arg;
	uint64_t packets = 0, now = rte_get_timer_cycles();

	(void)t;
	if (stop_asked) {
		request_stop(w->s);
		return;
	}
	if (app_rx_done(w->rx)) {
		if (!w->frames_told)
			printf("droce: %" PRIu64 " frames received; stopping\n",
			       app_rx_received(w->rx));
		w->frames_told = true;
		request_stop(w->s);
		return;
	}
	if (w->idle_ms == 0)
		return;
	for (uint16_t p = 0; p < droce_stack_nb_ports(w->s); p++) {
		struct droce_counters c;

		droce_port_counters(w->s, p, &c);
		packets += c.rx_packets;
	}
	if (packets != w->last_packets) {
		w->last_packets = packets;
		w->last_change_tsc = now;
	} else if (packets != 0 &&
		   now - w->last_change_tsc > w->idle_ms * rte_get_timer_hz() / 1000) {
		printf("droce: no packet for %lu ms; stopping\n", w->idle_ms);
		request_stop(w->s);
	}
}

static void
print_layout(const struct droce_stack *s, const struct droce_lcore_layout *l)
{
	printf("droce: control lcore %u, %u worker lcore%s", l->control_lcore,
	       l->nb_workers, l->nb_workers == 1 ? "" : "s");
	for (uint32_t i = 0; i < l->nb_workers; i++)
		printf("%s%u (group %u #%u)", i ? ", " : ": ", l->worker_lcore[i],
		       l->worker_group[i], l->worker_index[i]);
	putchar('\n');
	/* The CRC in use follows the EAL's SIMD bitwidth, which DPDK keeps
	 * at 256 unless told: say so where the CPU could do more.
	 */
	droce_crc_select(DROCE_CRC_AUTO);
	printf("droce: ICRC with %s (SIMD bitwidth %u)%s\n", droce_crc_impl_name(),
	       rte_vect_get_max_simd_bitwidth(),
	       rte_vect_get_max_simd_bitwidth() < RTE_VECT_SIMD_512 &&
	       droce_crc_cpu_has(DROCE_CRC_AVX512)
	       ? "; --force-max-simd-bitwidth=512 would run avx512-vpclmulqdq" : "");
	for (uint16_t p = 0; p < droce_stack_nb_ports(s); p++) {
		struct rte_ether_addr mac;

		droce_port_mac(s, p, &mac);
		printf("droce: port %u = ethdev %u, MAC " RTE_ETHER_ADDR_PRT_FMT "\n",
		       p, droce_port_ethdev(s, p), RTE_ETHER_ADDR_BYTES(&mac));
	}
	fflush(stdout);
}

static void
print_final(const struct droce_stack *s)
{
	for (uint16_t p = 0; p < droce_stack_nb_ports(s); p++) {
		struct droce_counters c;

		droce_port_counters(s, p, &c);
		printf("droce: final port %u: rx %" PRIu64 " packets %" PRIu64
		       " bytes, tx %" PRIu64 " packets %" PRIu64 " bytes, %" PRIu64
		       " dropped\n", p, c.rx_packets, c.rx_bytes, c.tx_packets,
		       c.tx_bytes, droce_counters_drops(&c));
		for (unsigned int r = 0; r < DROCE_DROP_MAX; r++)
			if (c.drop[r] != 0)
				printf("droce:   %-20s %" PRIu64 "\n",
				       droce_drop_reason_name(r), c.drop[r]);
	}
	fflush(stdout);
}

static int
write_json(const struct droce_stack *s, const char *path)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (f == NULL) {
		fprintf(stderr, "droce: --stats-json %s: %s\n", path, strerror(errno));
		return -1;
	}
	ret = droce_stack_write_stats_json(s, f);
	if (fclose(f) != 0 || ret != 0) {
		fprintf(stderr, "droce: --stats-json %s: write failed\n", path);
		return -1;
	}
	return 0;
}

/* The gpudev drivers: the host one always, CUDA where a driver loads;
 * then the device the configuration asks for.
 */
static int
setup_gpu(const struct droce_conf *conf, int16_t *dev)
{
	struct rte_gpu_info info;
	char err[DROCE_ERR_LEN];
	int ret;

	ret = droce_gpu_host_create(DROCE_GPU_HOST_PREFIX "0", NULL);
	if (ret < 0 && ret != -EEXIST) {
		fprintf(stderr, "droce: host GPU device: %s\n", rte_strerror(-ret));
		return 1;
	}
	ret = droce_gpu_cuda_probe(err, sizeof(err));
	/* Only a CUDA device asked for by name makes its absence an error
	 * (droce_gpu_find() says so below); auto falls back, and says how.
	 */
	if (ret <= 0 && strcmp(conf->gpu, "auto") == 0)
		printf("droce: gpu=auto: %s, using host memory\n",
		       ret == -ENOTSUP ? "droce was built without CUDA"
		       : ret < 0 ? "no CUDA driver" : "no CUDA device");
	if (droce_gpu_find(conf->gpu, dev, err, sizeof(err)) != 0) {
		fprintf(stderr, "droce: %s: gpu = \"%s\": %s\n",
			droce_conf_origin(conf, "gpu"), conf->gpu, err);
		return 2;
	}
	rte_gpu_info_get(*dev, &info);
	printf("droce: GPU memory from %s (%zu MiB)\n", info.name,
	       info.total_memory >> 20);
	return 0;
}

static void
close_gpus(void)
{
	int16_t id;

	RTE_GPU_FOREACH(id)
		rte_gpu_close(id);
}

static int
run(const struct droce_conf *conf, const struct app_opts *o,
    const char *lcore_option)
{
	struct droce_lcore_layout layout;
	struct rte_timer duration, watch_timer;
	struct watch watch = { .idle_ms = o->idle_ms };
	char err[DROCE_ERR_LEN];
	struct droce_stack *s;
	struct app_rx *rx;
	uint64_t t0;
	int16_t gpu_dev;
	bool had_rpc;
	int ret;

	if (droce_lcores_layout(conf, lcore_option, &layout, err,
				sizeof(err)) != 0) {
		fprintf(stderr, "droce: %s\n", err);
		return 2;
	}
	rte_timer_subsystem_init();
	ret = setup_gpu(conf, &gpu_dev);
	if (ret != 0)
		return ret;
	if (conf->nb_ports == 0) {
		fprintf(stderr, "droce: no port configured: give port.0.device=... (a PCI address, or vdev devargs such as net_af_packet0,iface=veth0) and port.0.address=a.b.c.d/len\n");
		return 2;
	}
	s = droce_stack_create(conf, &layout, err, sizeof(err));
	if (s == NULL) {
		fprintf(stderr, "droce: %s\n", err);
		return 1;
	}
	if (droce_telemetry_register(s) != 0)
		fprintf(stderr, "droce: warning: telemetry commands not registered\n");
	rx = app_rx_create(conf, s, gpu_dev, &o->rx, err, sizeof(err));
	if (rx == NULL) {
		fprintf(stderr, "droce: %s\n", err);
		droce_stack_destroy(s);
		return 2;
	}
	print_layout(s, &layout);

	ret = app_rx_start(rx, err, sizeof(err));
	if (ret == 0)
		ret = app_rpc_start(conf, s, &rpc, err, sizeof(err));
	/* With an RPC server the watch stops it first, then the stack. */
	if (ret == 0 && rpc == NULL && (ret = app_rx_stop_at_frames(rx)) != 0)
		snprintf(err, sizeof(err), "--frames: no worker hook: %s", rte_strerror(-ret));
	if (ret != 0) {
		fprintf(stderr, "droce: %s\n", err);
		ret = 2;
		goto fail;
	}
	running = s;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = droce_stack_start(s, true);
	if (ret != 0) {
		fprintf(stderr, "droce: start failed: %s\n", rte_strerror(-ret));
		ret = 1;
		goto fail;
	}
	rte_timer_init(&duration);
	if (o->duration_s != 0)
		rte_timer_reset_sync(&duration, o->duration_s * rte_get_timer_hz(),
				     SINGLE, rte_lcore_id(), on_duration, s);
	watch.s = s;
	watch.rx = rx;
	watch.last_change_tsc = rte_get_timer_cycles();
	rte_timer_init(&watch_timer);
	rte_timer_reset_sync(&watch_timer, WATCH_MS * rte_get_timer_hz() / 1000,
			     PERIODICAL, rte_lcore_id(), on_watch, &watch);
	printf("droce: running; Ctrl-C stops\n");
	fflush(stdout);
	t0 = rte_get_timer_cycles();
	droce_stack_run(s);
	if (!watch.frames_told && app_rx_done(rx))
		printf("droce: %" PRIu64 " frames received; stopping\n", app_rx_received(rx));
	rte_timer_stop_sync(&watch_timer);
	rte_timer_stop_sync(&duration);
	had_rpc = rpc != NULL;
	app_rpc_destroy(rpc);
	rpc = NULL;
	droce_stack_stop(s);
	running = NULL;
	app_rx_stop(rx);

	print_final(s);
	if (had_rpc)
		app_rpc_print_summary(stdout);
	if (app_rx_print_summary(rx, (double)(rte_get_timer_cycles() - t0) /
				 (double)rte_get_timer_hz(), stdout) != 0) {
		fprintf(stderr, "droce: some frames did not hold what the sensor sent\n");
		ret = 3;
	}
	if (o->stats_json != NULL && write_json(s, o->stats_json) != 0 && ret == 0)
		ret = 1;
	app_rx_destroy(rx);
	droce_stack_destroy(s);
	return ret;
fail:
	running = NULL;
	app_rpc_destroy(rpc);
	rpc = NULL;
	app_rx_stop(rx);
	app_rx_destroy(rx);
	droce_stack_destroy(s);
	return ret;
}

int
main(int argc, char **argv)
{
	struct app_opts opts = { 0 };
	static struct droce_eal_start eal;
	char err[DROCE_ERR_LEN];
	struct droce_conf *conf;
	int sep = find_separator(argc, argv);
	int ret;

	/* Line by line, as stderr is: in a log file that gets both, the
	 * lines keep the order in which they were written.
	 */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (sep == argc && argc > 1 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout, argv[0]);
		return 0;
	}
	/* getopt wants argv[0] in front of droce's arguments. */
	if (sep < argc)
		argv[sep] = argv[0];
	ret = parse_app_args(argc - sep, argv + sep, &opts);
	if (sep < argc)
		argv[sep] = (char *)"--";
	if (ret != 0) {
		if (ret > 0)
			usage(stdout, argv[0]);
		return ret > 0 ? 0 : 2;
	}

	conf = malloc(sizeof(*conf));
	if (conf == NULL)
		return 1;
	if (droce_conf_load(conf, opts.config, opts.overrides, opts.nb_overrides,
			    err, sizeof(err)) != 0) {
		fprintf(stderr, "droce: %s\n", err);
		free(conf);
		return 2;
	}
	ret = droce_eal_start(&eal, conf, sep, argv, err, sizeof(err));
	if (ret != 0) {
		fprintf(stderr, "droce: %s\n", err);
		free(conf);
		return ret;
	}
	ret = run(conf, &opts, eal.lcore_option);
	close_gpus();
	droce_eal_stop(&eal);
	free(conf);
	return ret;
}
