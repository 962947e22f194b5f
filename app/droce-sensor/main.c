/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * droce-sensor [EAL options] -- --src IP --dst IP --qp Q --rkey K
 *              --frame-size N [options]
 *
 * An HSB-compatible frame sender on one DPDK port: RDMA WRITE ONLY packets
 * with the frame, ended by a WRITE ONLY with IMMEDIATE that carries the
 * metadata block (with the frame's last data, or alone: --metadata), page
 * after page. It paces frames (--fps) or sends as fast as the port takes
 * them, injects faults on request, and prints what a receiver should
 * report, so tests can hold the receiver to it.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "sensor.h"

#define TX_BURST 64

struct opts {
	uint16_t port;
	rte_be32_t src, dst;
	bool have_dst_mac;
	struct rte_ether_addr dst_mac;
	uint32_t qp, rkey;
	unsigned int streams;
	size_t frame_size, page_size, metadata_offset;
	unsigned int pages;
	uint64_t page_base;
	uint32_t mtu, payload;
	double fps;               /* 0: as fast as the port takes them */
	uint64_t frames;          /* 0: until --duration or a signal */
	double duration;
	double linger;            /* seconds to wait for the receiver to go */
	const char *content;      /* "pattern" or a file */
	enum droce_hsb_imm imm;
	enum droce_hsb_metadata_layout metadata;
	uint32_t first_psn;
	bool have_first_page;
	unsigned int first_page;
	bool frame_crc;           /* false: 0 in the block, as NVIDIA's emulator */
	const char *faults;
	bool strict_receiver;     /* expectations for one without a reorder window */
	const char *stats_json;
};

struct stream {
	struct droce_hsb_sender tx;
	struct sensor_faults faults;
};

static atomic_bool stop_requested;

static void
on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, true);
}

static void
usage(FILE *out, const char *prog)
{
	fprintf(out,
		"Usage: %s [EAL options] -- --src IP --dst IP --qp Q --rkey K --frame-size N [options]\n"
		"\n"
		"Sends frames as a Holoscan Sensor Bridge does, over DPDK port 0 (or --port).\n"
		"\n"
		"Receiver:\n"
		"  --src IP              this sensor's address (the receiver's peer)\n"
		"  --dst IP              the receiver's address\n"
		"  --dst-mac MAC         its MAC; default: asked with ARP\n"
		"  --qp Q, --rkey K      what the receiver's stream was started with (0x.. or decimal)\n"
		"  --streams S           send to S streams, QPs Q .. Q+S-1, in turn (default 1)\n"
		"Frames:\n"
		"  --frame-size N        bytes of frame data\n"
		"  --pages P             pages to cycle through (default 4)\n"
		"  --metadata-offset N   default: frame size rounded up to 128\n"
		"  --page-size N         default: metadata offset + 128\n"
		"  --page-base VA        device address of page 0 (default 0, as HSB)\n"
		"  --content C           pattern (default: droce's counter pattern) or a file\n"
		"  --immediate F         hsb (12-bit page, 20-bit PSN; default) or hsb-lite\n"
		"  --metadata L          where the metadata block goes: embedded (default, as the\n"
		"                        device: in the packet with the frame's last data when\n"
		"                        that has room, else alone) or separate (always alone,\n"
		"                        in a 128-byte packet after the data)\n"
		"  --first-page N        page of the first frame, 0..P-1; default: the device's\n"
		"                        order (it counts pages up before each frame): page 1,\n"
		"                        or 0 with --pages 1\n"
		"  --frame-crc on|off    the block's crc: the frame's CRC-32/JAMCRC (on, default)\n"
		"                        or 0 (off, as NVIDIA's emulator sends it)\n"
		"  --first-psn N         PSN of the first packet (default 0)\n"
		"Wire:\n"
		"  --mtu M               IP MTU; payload per packet floor((M-74)/128)*128 (default 1500)\n"
		"  --payload N           payload per packet instead (a multiple of 128, at most 9472)\n"
		"  --fps F               frames per second per stream; default: as fast as possible\n"
		"  --frames N            stop after N frames (all streams); default: --duration\n"
		"  --duration S          stop after S seconds\n"
		"  --faults SPEC         e.g. drop=50,duplicate=33: every Nth packet of a stream;\n"
		"                        drop, duplicate, reorder, corrupt-icrc, wrong-rkey,\n"
		"                        wrong-qp, wrong-peer, bad-va\n"
		"  --strict-receiver     expect a receiver that takes packets as they come (droce\n"
		"                        with rx.N.reorder.window=0): a reordered packet is a gap\n"
		"                        and a late packet; by default it waits for the late one\n"
		"  --linger S            after the last frame, keep the port (unpolled) until its\n"
		"                        link goes down or S seconds pass: a net_memif peer must\n"
		"                        stop polling before this side disconnects (default 0)\n"
		"  --stats-json FILE     what was sent and what the receiver should report (with\n"
		"                        --faults: for --pages 2 or more)\n",
		prog);
}

static int
parse_u64(const char *name, const char *arg, uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(arg, &end, 0);
	if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-' || *out > max) {
		fprintf(stderr, "droce-sensor: %s \"%s\": allowed: a whole number 0..%" PRIu64
			" (0x.. for hexadecimal)\n", name, arg, max);
		return -1;
	}
	return 0;
}

static int
parse_ip(const char *name, const char *arg, rte_be32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, arg, &a) != 1) {
		fprintf(stderr, "droce-sensor: %s \"%s\": allowed: an IPv4 address a.b.c.d\n",
			name, arg);
		return -1;
	}
	*out = a.s_addr;
	return 0;
}

static int
parse_double(const char *name, const char *arg, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (errno != 0 || end == arg || *end != '\0' || !(*out > 0) || *out > 1e9) {
		fprintf(stderr, "droce-sensor: %s \"%s\": allowed: a number > 0\n", name, arg);
		return -1;
	}
	return 0;
}

static int
parse_on_off(const char *name, const char *arg, bool *out)
{
	if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
		fprintf(stderr, "droce-sensor: %s \"%s\": allowed: on, off\n", name, arg);
		return -1;
	}
	*out = strcmp(arg, "on") == 0;
	return 0;
}

/* How long the port stays open after its link went down (see linger()). */
#define LINK_DOWN_SETTLE_US 200000

/*
 * Wait, without touching the port's queues, until its link goes down (the
 * receiver closed its side) or @p secs pass. net_memif (DPDK 22.11) unmaps
 * a connection's rings from its interrupt thread when the peer goes, with
 * nothing to hold off a poller that is inside an rx burst: the side that
 * leaves first must be the one that polls no more.
 */
static void
linger(struct sensor_port *p, double secs)
{
	uint64_t end = rte_get_timer_cycles() + (uint64_t)(secs * (double)rte_get_timer_hz());
	struct rte_eth_link link;

	if (secs <= 0)
		return;
	while (!atomic_load(&stop_requested) && rte_get_timer_cycles() < end) {
		if (rte_eth_link_get_nowait(p->port_id, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_DOWN) {
			/* net_memif marks the link down first thing when its
			 * interrupt thread handles the peer's going, and
			 * frees the connection after; closing the port in
			 * that time frees it twice (a crash seen under load).
			 */
			rte_delay_us_sleep(LINK_DOWN_SETTLE_US);
			printf("droce-sensor: the receiver closed the link; done\n");
			return;
		}
		rte_delay_us_sleep(10000);
	}
	printf("droce-sensor: --linger %.1f s over; closing\n", secs);
}

static int
parse_args(int argc, char **argv, struct opts *o)
{
	enum { O_SRC = 256, O_DST, O_DST_MAC, O_QP, O_RKEY, O_STREAMS, O_FRAME,
	       O_PAGES, O_MDOFF, O_PAGESZ, O_BASE, O_CONTENT, O_IMM, O_PSN,
	       O_MTU, O_PAYLOAD, O_FPS, O_FRAMES, O_DURATION, O_FAULTS, O_JSON,
	       O_PORT, O_LINGER, O_METADATA, O_FIRST_PAGE, O_FRAME_CRC, O_STRICT };
	static const struct option longopts[] = {
		{ "src", required_argument, NULL, O_SRC },
		{ "dst", required_argument, NULL, O_DST },
		{ "dst-mac", required_argument, NULL, O_DST_MAC },
		{ "qp", required_argument, NULL, O_QP },
		{ "rkey", required_argument, NULL, O_RKEY },
		{ "streams", required_argument, NULL, O_STREAMS },
		{ "frame-size", required_argument, NULL, O_FRAME },
		{ "pages", required_argument, NULL, O_PAGES },
		{ "metadata-offset", required_argument, NULL, O_MDOFF },
		{ "page-size", required_argument, NULL, O_PAGESZ },
		{ "page-base", required_argument, NULL, O_BASE },
		{ "content", required_argument, NULL, O_CONTENT },
		{ "immediate", required_argument, NULL, O_IMM },
		{ "metadata", required_argument, NULL, O_METADATA },
		{ "first-page", required_argument, NULL, O_FIRST_PAGE },
		{ "frame-crc", required_argument, NULL, O_FRAME_CRC },
		{ "first-psn", required_argument, NULL, O_PSN },
		{ "mtu", required_argument, NULL, O_MTU },
		{ "payload", required_argument, NULL, O_PAYLOAD },
		{ "fps", required_argument, NULL, O_FPS },
		{ "frames", required_argument, NULL, O_FRAMES },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "linger", required_argument, NULL, O_LINGER },
		{ "faults", required_argument, NULL, O_FAULTS },
		{ "strict-receiver", no_argument, NULL, O_STRICT },
		{ "stats-json", required_argument, NULL, O_JSON },
		{ "port", required_argument, NULL, O_PORT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_src = false, have_dst = false, have_qp = false, have_rkey = false;
	uint64_t v;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		int bad = 0;

		switch (opt) {
		case O_SRC: bad = parse_ip("--src", optarg, &o->src); have_src = true; break;
		case O_DST: bad = parse_ip("--dst", optarg, &o->dst); have_dst = true; break;
		case O_DST_MAC:
			if (rte_ether_unformat_addr(optarg, &o->dst_mac) != 0) {
				fprintf(stderr, "droce-sensor: --dst-mac \"%s\": allowed: xx:xx:xx:xx:xx:xx\n",
					optarg);
				bad = -1;
			}
			o->have_dst_mac = true;
			break;
		case O_QP:
			bad = parse_u64("--qp", optarg, DROCE_QPN_MASK, &v);
			o->qp = (uint32_t)v;
			have_qp = true;
			break;
		case O_RKEY:
			bad = parse_u64("--rkey", optarg, UINT32_MAX, &v);
			o->rkey = (uint32_t)v;
			have_rkey = true;
			break;
		case O_STREAMS:
			bad = parse_u64("--streams", optarg, 4096, &v);
			o->streams = (unsigned int)v;
			break;
		case O_FRAME: bad = parse_u64("--frame-size", optarg, 1u << 30, &v); o->frame_size = v; break;
		case O_PAGES:
			bad = parse_u64("--pages", optarg, DROCE_HSB_MAX_PAGES, &v);
			o->pages = (unsigned int)v;
			break;
		case O_MDOFF: bad = parse_u64("--metadata-offset", optarg, UINT32_MAX, &v); o->metadata_offset = v; break;
		case O_PAGESZ: bad = parse_u64("--page-size", optarg, UINT32_MAX, &v); o->page_size = v; break;
		case O_BASE: bad = parse_u64("--page-base", optarg, UINT64_MAX, &o->page_base); break;
		case O_CONTENT: o->content = optarg; break;
		case O_IMM:
			if (droce_hsb_imm_parse(optarg, &o->imm) != 0 || o->imm == DROCE_HSB_IMM_OPAQUE) {
				fprintf(stderr, "droce-sensor: --immediate \"%s\": allowed: hsb, hsb-lite\n",
					optarg);
				bad = -1;
			}
			break;
		case O_METADATA:
			if (droce_hsb_metadata_layout_parse(optarg, &o->metadata) != 0) {
				fprintf(stderr, "droce-sensor: --metadata \"%s\": allowed: embedded, separate\n",
					optarg);
				bad = -1;
			}
			break;
		case O_FIRST_PAGE:
			bad = parse_u64("--first-page", optarg, DROCE_HSB_MAX_PAGES - 1, &v);
			o->first_page = (unsigned int)v;
			o->have_first_page = true;
			break;
		case O_FRAME_CRC:
			bad = parse_on_off("--frame-crc", optarg, &o->frame_crc);
			break;
		case O_PSN:
			bad = parse_u64("--first-psn", optarg, DROCE_PSN_MASK, &v);
			o->first_psn = (uint32_t)v;
			break;
		case O_MTU:
			bad = parse_u64("--mtu", optarg, 9600, &v);
			o->mtu = (uint32_t)v;
			break;
		case O_PAYLOAD:
			bad = parse_u64("--payload", optarg, DROCE_HSB_MAX_PAYLOAD, &v);
			o->payload = (uint32_t)v;
			break;
		case O_FPS: bad = parse_double("--fps", optarg, &o->fps); break;
		case O_FRAMES: bad = parse_u64("--frames", optarg, UINT64_MAX, &o->frames); break;
		case O_DURATION: bad = parse_double("--duration", optarg, &o->duration); break;
		case O_LINGER: bad = parse_double("--linger", optarg, &o->linger); break;
		case O_FAULTS: o->faults = optarg; break;
		case O_STRICT: o->strict_receiver = true; break;
		case O_JSON: o->stats_json = optarg; break;
		case O_PORT:
			bad = parse_u64("--port", optarg, RTE_MAX_ETHPORTS - 1, &v);
			o->port = (uint16_t)v;
			break;
		case 'h':
			return 1;
		default:
			fprintf(stderr, "droce-sensor: '--help' lists the options\n");
			return -1;
		}
		if (bad != 0)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "droce-sensor: unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	if (!have_src || !have_dst || !have_qp || !have_rkey || o->frame_size == 0) {
		fprintf(stderr, "droce-sensor: --src, --dst, --qp, --rkey and --frame-size are required; '--help' explains them\n");
		return -1;
	}
	if (o->frames == 0 && o->duration == 0) {
		fprintf(stderr, "droce-sensor: say when to stop: --frames N or --duration S\n");
		return -1;
	}
	if (o->streams == 0)
		o->streams = 1;
	if (o->qp < 2 || o->qp + o->streams - 1 > DROCE_QPN_MASK) {
		fprintf(stderr, "droce-sensor: --qp %#x with --streams %u: allowed: QPs 2..0xffffff\n",
			o->qp, o->streams);
		return -1;
	}
	if (!o->have_first_page)
		o->first_page = o->pages > 1 ? 1 : 0;
	if (o->first_page >= o->pages) {
		fprintf(stderr, "droce-sensor: --first-page %u with --pages %u: allowed: 0..%u\n",
			o->first_page, o->pages, o->pages - 1);
		return -1;
	}
	if (o->metadata_offset == 0)
		o->metadata_offset = RTE_ALIGN_CEIL(o->frame_size, 128);
	if (o->page_size == 0)
		o->page_size = o->metadata_offset + DROCE_HSB_METADATA_SIZE;
	if (o->payload == 0)
		o->payload = droce_hsb_payload_per_packet(o->mtu);
	if (o->faults != NULL && o->pages == 1)
		fprintf(stderr, "droce-sensor: warning: --faults with --pages 1: a receiver cannot tell where a frame whose end is lost stops (the next one writes the same page), so the expected frame counts hold with --pages 2 or more only\n");
	return 0;
}

/* The frame's content: the pattern for its number, or the file's next chunk. */
struct content {
	uint8_t *file;
	size_t file_frames;
	uint8_t *frame;
};

static int
content_init(struct content *c, const struct opts *o)
{
	c->frame = malloc(o->frame_size);
	if (c->frame == NULL)
		return -ENOMEM;
	if (o->content == NULL || strcmp(o->content, "pattern") == 0)
		return 0;
	{
		FILE *f = fopen(o->content, "rb");
		long len;

		if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0) {
			fprintf(stderr, "droce-sensor: --content %s: %s\n", o->content,
				strerror(errno));
			if (f != NULL)
				fclose(f);
			return -ENOENT;
		}
		if ((size_t)len < o->frame_size) {
			fprintf(stderr, "droce-sensor: --content %s: %ld bytes; allowed: at least one frame (%zu bytes)\n",
				o->content, len, o->frame_size);
			fclose(f);
			return -EINVAL;
		}
		c->file_frames = (size_t)len / o->frame_size;
		c->file = malloc(c->file_frames * o->frame_size);
		rewind(f);
		if (c->file == NULL ||
		    fread(c->file, o->frame_size, c->file_frames, f) != c->file_frames) {
			fprintf(stderr, "droce-sensor: --content %s: cannot read it\n", o->content);
			fclose(f);
			return -EIO;
		}
		fclose(f);
	}
	return 0;
}

static const uint8_t *
content_next(struct content *c, size_t frame_size, uint64_t frame_number)
{
	if (c->file != NULL)
		return c->file + (frame_number % c->file_frames) * frame_size;
	droce_hsb_pattern_fill(c->frame, frame_size, frame_number);
	return c->frame;
}

/* Where the frames' metadata blocks go, for the line that opens a run. */
static const char *
metadata_where(const struct droce_hsb_sender_conf *c)
{
	if (droce_hsb_metadata_embedded(c))
		return "embedded in the last data packet";
	if (c->metadata == DROCE_HSB_METADATA_EMBEDDED)
		return "in a packet of its own (no room beside the last data)";
	return "in a packet of its own";
}

static void
now_ptp(uint64_t *s, uint32_t *ns)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	*s = (uint64_t)t.tv_sec;
	*ns = (uint32_t)t.tv_nsec;
}

static void
print_summary(const struct opts *o, const struct sensor_expect *e,
	      const struct sensor_port *p, double secs, uint64_t frames_complete,
	      FILE *out, bool json)
{
	if (json) {
		fprintf(out, "{\n  \"frames\": %" PRIu64 ", \"packets\": %" PRIu64
			", \"bytes\": %" PRIu64 ", \"seconds\": %.6f, \"streams\": %u,"
			" \"frame_size\": %zu, \"payload\": %u, \"tx_retries\": %" PRIu64 ",\n"
			"  \"expect\": {\"frames_complete\": %" PRIu64 ", \"frames_lossy\": %" PRIu64
			", \"lost_packets\": %" PRIu64 ", \"stale_packets\": %" PRIu64 ", \"faults\": {",
			e->frames, e->packets, e->bytes, secs, o->streams, o->frame_size,
			o->payload, p->tx_retries, frames_complete, e->frames_lossy,
			e->lost_packets, e->stale_packets);
		for (int k = 0; k < FAULT_MAX; k++)
			fprintf(out, "%s\"%s\": %" PRIu64, k ? ", " : "", sensor_fault_name(k),
				e->refused[k]);
		fputs("}}\n}\n", out);
		return;
	}
	fprintf(out, "droce-sensor: sent %" PRIu64 " frames, %" PRIu64 " packets, %" PRIu64
		" payload bytes in %.3f s: %.1f fps, %.3f Gbps\n", e->frames, e->packets,
		e->bytes, secs, (double)e->frames / secs, (double)e->bytes * 8 / secs / 1e9);
	fprintf(out, "droce-sensor: the receiver should see %" PRIu64 " frames, %" PRIu64
		" of them lossy, %" PRIu64 " packets lost, %" PRIu64 " late or duplicate\n",
		frames_complete, e->frames_lossy, e->lost_packets, e->stale_packets);
	for (int k = 0; k < FAULT_MAX; k++)
		if (e->refused[k] != 0)
			fprintf(out, "droce-sensor:   fault %-13s %" PRIu64 "\n",
				sensor_fault_name(k), e->refused[k]);
}

/*
 * --stats-json, written whole: into FILE.tmp, then renamed, so that a
 * script waiting for FILE never reads half of it. Scripts wait for it
 * rather than for the sensor's exit: closing an af_packet port frees its
 * rings in the kernel, which can wait on kernel work that a receiver
 * busy-polling on every cpu holds off (seen on a 2-cpu VM: 120 s and more).
 */
static int
write_report(const struct opts *o, const struct sensor_expect *e,
	     const struct sensor_port *p, double secs, uint64_t frames_complete)
{
	char tmp[4096];
	FILE *f;
	int n = snprintf(tmp, sizeof(tmp), "%s.tmp", o->stats_json);

	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		fprintf(stderr, "droce-sensor: --stats-json %s: path too long (at most %zu bytes)\n",
			o->stats_json, sizeof(tmp) - 5);
		return -1;
	}
	f = fopen(tmp, "w");
	if (f == NULL) {
		fprintf(stderr, "droce-sensor: --stats-json %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	print_summary(o, e, p, secs, frames_complete, f, true);
	if (fclose(f) != 0 || rename(tmp, o->stats_json) != 0) {
		fprintf(stderr, "droce-sensor: --stats-json %s: %s\n", o->stats_json,
			strerror(errno));
		remove(tmp);
		return -1;
	}
	return 0;
}

static int
run(const struct opts *o)
{
	struct sensor_port port = { .ip = o->src };
	struct sensor_expect expect = { 0 };
	struct rte_mbuf *burst[TX_BURST + 4];
	struct content content = { 0 };
	struct stream *streams;
	char err[512];
	uint64_t hz = rte_get_timer_hz(), t0, next_round, round_tsc, end_tsc;
	uint64_t frames_complete = 0, sent_frames = 0;
	unsigned int nb = 0;
	int ret;

	if (sensor_port_init(&port, o->port, o->mtu, err, sizeof(err)) != 0) {
		fprintf(stderr, "droce-sensor: %s\n", err);
		return 1;
	}
	streams = calloc(o->streams, sizeof(*streams));
	if (streams == NULL || content_init(&content, o) != 0)
		return 1;
	{
		struct droce_hsb_sender_conf c = {
			.src_mac = port.mac, .src_ip = o->src, .dst_ip = o->dst,
			.rkey = o->rkey, .page_base = o->page_base,
			.frame_size = o->frame_size, .page_size = o->page_size,
			.metadata_offset = o->metadata_offset, .pages = o->pages,
			.payload_per_packet = o->payload, .imm = o->imm,
			.metadata = o->metadata, .first_psn = o->first_psn,
			.first_page = o->first_page,
		};

		if (o->have_dst_mac) {
			c.dst_mac = o->dst_mac;
		} else if (sensor_arp_resolve(&port, o->dst, &c.dst_mac, 5000) != 0) {
			char ip[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, &o->dst, ip, sizeof(ip));
			fprintf(stderr, "droce-sensor: no ARP reply from %s within 5 s; give --dst-mac\n",
				ip);
			return 1;
		}
		for (unsigned int i = 0; i < o->streams; i++) {
			c.qp = o->qp + i;
			if (droce_hsb_sender_init(&streams[i].tx, &c, err, sizeof(err)) != 0) {
				fprintf(stderr, "droce-sensor: %s\n", err);
				return 1;
			}
			if (o->faults != NULL &&
			    sensor_faults_parse(&streams[i].faults, o->faults, err,
						sizeof(err)) != 0) {
				fprintf(stderr, "droce-sensor: %s\n", err);
				return 1;
			}
			streams[i].faults.strict_receiver = o->strict_receiver;
		}
		printf("droce-sensor: to " RTE_ETHER_ADDR_PRT_FMT ", QP %#x%s, %zu-byte frames in %u pages of %zu from page %u, %u bytes per packet, %u packets per frame, metadata %s\n",
		       RTE_ETHER_ADDR_BYTES(&c.dst_mac), o->qp, o->streams > 1 ? " and up" : "",
		       o->frame_size, o->pages, o->page_size, o->first_page, o->payload,
		       droce_hsb_packets_per_frame(&c), metadata_where(&c));
		fflush(stdout);
	}
	t0 = rte_get_timer_cycles();
	round_tsc = o->fps > 0 ? (uint64_t)((double)hz / o->fps) : 0;
	next_round = t0;
	end_tsc = o->duration > 0 ? t0 + (uint64_t)(o->duration * (double)hz) : UINT64_MAX;
	while (!atomic_load(&stop_requested) &&
	       (o->frames == 0 || sent_frames < o->frames) &&
	       rte_get_timer_cycles() < end_tsc) {
		struct stream *s = &streams[sent_frames % o->streams];
		struct droce_hsb_metadata md = { .bytes_written = o->frame_size };
		struct droce_frame_spec spec;
		const uint8_t *data;

		if (sent_frames % o->streams == 0 && round_tsc != 0) {
			/* One frame per stream per 1/fps. The wait sleeps while
			 * the frame is far off, so that a paced sensor leaves
			 * the cpu it shares with the receiver's threads.
			 */
			for (uint64_t now = rte_get_timer_cycles();
			     now < next_round && !atomic_load(&stop_requested);
			     now = rte_get_timer_cycles()) {
				sensor_port_poll(&port);
				if (next_round - now > hz / 2000)
					rte_delay_us_sleep(100);
			}
			next_round += round_tsc;
		}
		data = content_next(&content, o->frame_size, s->tx.frame_number);
		md.crc = o->frame_crc ? droce_hsb_frame_crc(data, o->frame_size) : 0;
		now_ptp(&md.timestamp_s, &md.timestamp_ns);
		md.metadata_s = md.timestamp_s;
		md.metadata_ns = md.timestamp_ns;
		droce_hsb_frame_begin(&s->tx, data, &md);
		while (droce_hsb_frame_next(&s->tx, &spec)) {
			bool last = (spec.opcode & 0x1f) == DROCE_OP_WRITE_ONLY_IMM;

			nb += sensor_faults_apply(&s->faults, &spec, last, port.pool,
						  burst + nb, &expect);
			if (nb >= TX_BURST) {
				sensor_tx(&port, burst, nb);
				nb = 0;
			}
		}
		if (nb != 0)
			sensor_tx(&port, burst, nb);
		nb = 0;
		sent_frames++;
		if ((sent_frames & 63) == 0)
			sensor_port_poll(&port);
	}
	/* Every stream's frames count, but those nothing after them ends. */
	frames_complete = expect.frames;
	for (unsigned int i = 0; i < o->streams; i++)
		frames_complete -= sensor_faults_finish(&streams[i].faults, &expect);
	{
		double secs = (double)(rte_get_timer_cycles() - t0) / (double)hz;

		print_summary(o, &expect, &port, secs > 0 ? secs : 1e-9, frames_complete,
			      stdout, false);
		/* The report is out before the port's teardown, which waits on
		 * the kernel (see write_report()).
		 */
		fflush(stdout);
		ret = 0;
		if (o->stats_json != NULL &&
		    write_report(o, &expect, &port, secs, frames_complete) != 0)
			ret = 1;
	}
	/* Let the last packets leave before the port goes. */
	rte_delay_ms(100);
	linger(&port, o->linger);
	sensor_port_close(&port);
	free(content.file);
	free(content.frame);
	free(streams);
	return ret;
}

int
main(int argc, char **argv)
{
	struct opts o = { .pages = 4, .mtu = 1500, .imm = DROCE_HSB_IMM_CURRENT,
			  .metadata = DROCE_HSB_METADATA_EMBEDDED, .frame_crc = true };
	int eal_n, ret;

	/* Line by line, as stderr is: in a log file that gets both, the
	 * lines keep the order in which they were written.
	 */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout, argv[0]);
		return 0;
	}
	eal_n = rte_eal_init(argc, argv);
	if (eal_n < 0) {
		fprintf(stderr, "droce-sensor: rte_eal_init failed: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	argv[eal_n] = argv[0];
	ret = parse_args(argc - eal_n, argv + eal_n, &o);
	if (ret != 0) {
		if (ret > 0)
			usage(stdout, argv[0]);
		rte_eal_cleanup();
		return ret > 0 ? 0 : 2;
	}
	if (rte_eth_dev_count_avail() <= o.port) {
		fprintf(stderr, "droce-sensor: no DPDK port %u (give one with --vdev, e.g. net_memif0,role=client,socket=/tmp/m.sock)\n",
			o.port);
		rte_eal_cleanup();
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = run(&o);
	rte_eal_cleanup();
	return ret;
}
