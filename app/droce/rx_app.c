/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The receivers of droce's configuration. Each rx.N section makes
 * rx.N.count streams, each with frame memory of its own on its GPU device
 * and a monitor thread running blocking_monitor(). One consumer thread
 * takes the frames of every stream as an application would: it checks
 * each clean frame as --verify asks (against the CRC the device put in
 * its metadata, or every byte against droce-sensor's pattern), dumps the
 * first ones on request and counts them all.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>

#include "droce_gpu.h"
#include "droce_gpu_drivers.h"
#include "droce_hsb.h"
#include "droce_rx.h"

#include "app_rx.h"

/* GPU pages are 64 KiB on CUDA; frame memory is aligned to them. */
#define FRAME_MEMORY_ALIGN 65536

struct app_stream {
	struct droce_rx_stream *st;
	struct droce_rx_params params;
	struct droce_gpu_buf buf;
	char peer[INET_ADDRSTRLEN];
	unsigned int section, index;
	pthread_t monitor;
	bool monitor_running;
	/* the consumer's counters */
	uint64_t taken, checked, intact_bad, mismatched, lossy, overwritten;
	uint64_t overwritten_clean;     /* of them, frames that came whole */
	uint64_t no_metadata, no_crc;   /* clean, but nothing to check against */
	uint64_t bytes;
	uint64_t first_tsc, last_tsc;   /* received_tsc of the first, last frame */
};

struct app_rx {
	struct droce_stack *stack;
	struct droce_rx *rx;
	struct app_rx_opts o;
	unsigned int nb;
	struct app_stream *streams;
	pthread_t consumer;
	bool consumer_running;
	atomic_bool stop;
	atomic_bool frames_reached;     /* a worker stopped the stack for --frames */
	uint64_t dumped;
	pthread_mutex_t lock;           /* with cond: frame_ready wakes the consumer */
	pthread_cond_t cond;
	bool frame_waiting;
	uint8_t *scratch;               /* host copy of a frame without a CPU mapping */
	size_t scratch_size;
	int16_t registered[8];          /* devices the port pools are registered with */
	unsigned int nb_registered;
};

/* Gather: the GPU reads payload straight from the mbufs, so their
 * memory is registered with each device that gathers (once).
 */
static int
pool_register(struct app_rx *a, int16_t dev, char *err, size_t errlen)
{
	uint16_t p;

	for (unsigned int i = 0; i < a->nb_registered; i++)
		if (a->registered[i] == dev)
			return 0;
	if (a->nb_registered == RTE_DIM(a->registered)) {
		snprintf(err, errlen, "rx: gather on more than %zu GPU devices",
			 RTE_DIM(a->registered));
		return -ENOSPC;
	}
	for (p = 0; p < droce_stack_nb_ports(a->stack); p++)
		if (droce_gpu_mempool_register(dev, droce_port_pool(a->stack, p), err,
					       errlen) != 0)
			break;
	if (p < droce_stack_nb_ports(a->stack)) {
		while (p-- > 0)
			droce_gpu_mempool_unregister(dev, droce_port_pool(a->stack, p));
		return -EIO;
	}
	a->registered[a->nb_registered++] = dev;
	return 0;
}

static int
stream_prepare(struct app_rx *a, struct app_stream *as,
	       const struct droce_conf *conf, unsigned int section,
	       unsigned int index, int16_t default_gpu, char *err, size_t errlen)
{
	const struct droce_rx_conf *rc = &conf->rx[section];
	size_t md_off = rc->metadata_offset != 0 ? rc->metadata_offset
						 : RTE_ALIGN_CEIL(rc->frame_size, 128);
	size_t page = rc->page_size != 0 ? rc->page_size : md_off + DROCE_HSB_METADATA_SIZE;
	size_t size = RTE_ALIGN_CEIL(page * rc->pages, FRAME_MEMORY_ALIGN);
	int16_t dev = default_gpu;
	char why[DROCE_ERR_LEN];
	struct in_addr peer = { .s_addr = rc->peer };

	if (rc->gpu[0] != '\0' && droce_gpu_find(rc->gpu, &dev, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "rx.%u.gpu = \"%s\": %s", section, rc->gpu, why);
		return -EINVAL;
	}
	if (droce_gpu_buf_alloc(dev, size, FRAME_MEMORY_ALIGN, &as->buf, why,
				sizeof(why)) != 0) {
		snprintf(err, errlen, "rx.%u: frame memory: %s", section, why);
		return -ENOMEM;
	}
	if ((rc->placement == DROCE_PLACE_GATHER || as->buf.cpu == NULL) &&
	    pool_register(a, dev, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "rx.%u: %s", section, why);
		return -EIO;
	}
	inet_ntop(AF_INET, &peer, as->peer, sizeof(as->peer));
	as->section = section;
	as->index = index;
	as->params = (struct droce_rx_params){
		.port = rc->port, .queue = DROCE_RX_ANY_QUEUE, .buf = &as->buf,
		.frame_size = rc->frame_size, .page_size = page, .pages = rc->pages,
		.metadata_offset = md_off, .peer_ip = as->peer,
		.queue_size = rc->queue_size,
		.qp = rc->qp != 0 ? rc->qp + index : 0, .rkey = rc->rkey,
		.imm = (enum droce_hsb_imm)rc->immediate,
		.placement = (enum droce_place_mode)rc->placement,
		.icrc = (enum droce_rx_icrc)rc->icrc, .remote_qp = rc->remote_qp,
		.copy_stores = (enum droce_copy_stores)rc->copy_stores,
		.device_va = rc->va,
		.reorder_window = rc->reorder_window,
		.reorder_timeout_us = rc->reorder_timeout_us,
	};
	as->st = droce_rx_stream_new(a->rx);
	if (as->st == NULL) {
		snprintf(err, errlen, "rx.%u: no room for another stream (at most %u)",
			 section, DROCE_RX_MAX_STREAMS);
		return -ENOSPC;
	}
	if (a->scratch_size < rc->frame_size && as->buf.cpu == NULL)
		a->scratch_size = rc->frame_size;
	return 0;
}

static void
consumer_json(FILE *out, void *arg)
{
	const struct app_rx *a = arg;

	fputs("\"consumer\": [", out);
	for (unsigned int i = 0; i < a->nb; i++) {
		const struct app_stream *as = &a->streams[i];

		fprintf(out, "%s\n    {\"section\": %u, \"index\": %u, \"qp\": %u, "
			"\"taken\": %" PRIu64 ", \"checked\": %" PRIu64
			", \"mismatched\": %" PRIu64 ", \"lossy\": %" PRIu64
			", \"overwritten\": %" PRIu64 ", \"overwritten_clean\": %" PRIu64
			", \"rewritten_while_read\": %" PRIu64
			", \"no_metadata\": %" PRIu64 ", \"no_crc\": %" PRIu64
			", \"verify\": \"%s\", \"bytes\": %" PRIu64 "}", i ? "," : "",
			as->section, as->index, droce_rx_stream_qp_number(as->st), as->taken,
			as->checked, as->mismatched, as->lossy, as->overwritten,
			as->overwritten_clean, as->intact_bad,
			as->no_metadata, as->no_crc, app_verify_name(a->o.verify), as->bytes);
	}
	fputs("\n  ]", out);
}

struct app_rx *
app_rx_create(const struct droce_conf *conf, struct droce_stack *s,
	      int16_t default_gpu, const struct app_rx_opts *o, char *err,
	      size_t errlen)
{
	struct app_rx *a = calloc(1, sizeof(*a));
	unsigned int n = 0;

	if (a == NULL) {
		snprintf(err, errlen, "rx: out of memory");
		return NULL;
	}
	a->stack = s;
	a->o = *o;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	for (unsigned int r = 0; r < conf->nb_rx; r++)
		a->nb += conf->rx[r].count;
	if (a->nb == 0)
		return a;
	a->rx = droce_rx_create(s, err, errlen);
	a->streams = calloc(a->nb, sizeof(*a->streams));
	if (a->rx == NULL || a->streams == NULL) {
		if (a->rx != NULL)
			snprintf(err, errlen, "rx: out of memory");
		app_rx_destroy(a);
		return NULL;
	}
	for (unsigned int r = 0; r < conf->nb_rx; r++)
		for (unsigned int i = 0; i < conf->rx[r].count; i++, n++)
			if (stream_prepare(a, &a->streams[n], conf, r, i, default_gpu,
					   err, errlen) != 0) {
				a->nb = n + 1;
				app_rx_destroy(a);
				return NULL;
			}
	{
		struct droce_stats_ext ext = { .json = consumer_json, .arg = a };

		droce_stats_ext_register(s, &ext);
	}
	if (o->dump_dir != NULL && mkdir(o->dump_dir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "--dump %s: %s", o->dump_dir, strerror(errno));
		app_rx_destroy(a);
		return NULL;
	}
	if (a->scratch_size != 0) {
		a->scratch = malloc(a->scratch_size);
		if (a->scratch == NULL) {
			snprintf(err, errlen, "rx: out of memory");
			app_rx_destroy(a);
			return NULL;
		}
	}
	return a;
}

static void
frame_ready(void *arg)
{
	struct app_rx *a = arg;

	pthread_mutex_lock(&a->lock);
	a->frame_waiting = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

static void *
monitor_main(void *arg)
{
	struct app_stream *as = arg;

	droce_rx_stream_blocking_monitor(as->st);
	return NULL;
}

/* The frame's bytes where the CPU can read them. */
static const uint8_t *
frame_bytes(struct app_rx *a, const struct app_stream *as,
	    const struct droce_rx_frame_info *f)
{
	size_t off = (size_t)(f->frame_memory - (uint64_t)(uintptr_t)as->buf.gpu);

	if (as->buf.cpu != NULL)
		return (const uint8_t *)as->buf.cpu + off;
	if (droce_gpu_cuda_dtoh(as->buf.dev_id, a->scratch,
				(const uint8_t *)as->buf.gpu + off,
				as->params.frame_size) != 0)
		return NULL;
	return a->scratch;
}

static void
dump_frame(struct app_rx *a, const struct app_stream *as,
	   const struct droce_rx_frame_info *f, const uint8_t *data)
{
	const struct droce_hsb_metadata *md = &f->metadata;
	char path[4096];
	FILE *out;

	snprintf(path, sizeof(path), "%s/rx%u-%u-frame%06" PRIu64 ".bin",
		 a->o.dump_dir, as->section, as->index, f->sequence);
	out = fopen(path, "wb");
	if (out == NULL || fwrite(data, 1, as->params.frame_size, out) !=
			   as->params.frame_size)
		fprintf(stderr, "droce: --dump: %s: %s\n", path, strerror(errno));
	if (out != NULL)
		fclose(out);
	snprintf(path, sizeof(path), "%s/rx%u-%u-frame%06" PRIu64 ".json",
		 a->o.dump_dir, as->section, as->index, f->sequence);
	out = fopen(path, "w");
	if (out == NULL) {
		fprintf(stderr, "droce: --dump: %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(out, "{\"qp\": %u, \"sequence\": %" PRIu64 ", \"page\": %u, "
		"\"immediate\": %u, \"psn\": %u, \"frame_size\": %zu, "
		"\"packets\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"lost_packets\": %" PRIu64
		", \"lossy\": %s, \"overwritten\": %s, \"dropped\": %" PRIu64
		", \"received_ns\": %" PRIu64 ", \"metadata\": ",
		droce_rx_stream_qp_number(as->st), f->sequence, f->page, f->immediate,
		f->psn, as->params.frame_size, f->packets, f->bytes, f->lost_packets,
		f->lossy ? "true" : "false", f->overwritten ? "true" : "false",
		f->dropped, f->received_ns);
	if (md->present)
		fprintf(out, "{\"flags\": %u, \"psn\": %u, \"crc\": %u, \"timestamp_s\": %" PRIu64
			", \"timestamp_ns\": %u, \"bytes_written\": %" PRIu64
			", \"frame_number\": %" PRIu64 ", \"metadata_s\": %" PRIu64
			", \"metadata_ns\": %u}", md->flags, md->psn, md->crc,
			md->timestamp_s, md->timestamp_ns, md->bytes_written,
			md->frame_number, md->metadata_s, md->metadata_ns);
	else
		fputs("null", out);
	fputs("}\n", out);
	fclose(out);
}

static const char *const verify_names[] = {
	[APP_VERIFY_NONE] = "none",
	[APP_VERIFY_CRC] = "crc",
	[APP_VERIFY_PATTERN] = "pattern",
};

const char *
app_verify_name(enum app_verify v)
{
	return (unsigned int)v < RTE_DIM(verify_names) ? verify_names[v] : "?";
}

int
app_verify_parse(const char *s, enum app_verify *v)
{
	for (unsigned int i = 0; i < RTE_DIM(verify_names); i++)
		if (strcmp(s, verify_names[i]) == 0) {
			*v = (enum app_verify)i;
			return 0;
		}
	return -1;
}

/* Whether a frame can be checked as --verify asks, and if not, counted
 * by why not: a lossy or overwritten frame is not what the sensor sent;
 * the CRC and the pattern's frame number come from the metadata, and a
 * CRC of 0 means the device computed none (it is optional).
 */
static bool
checkable(struct app_rx *a, struct app_stream *as, const struct droce_rx_frame_info *f)
{
	if (a->o.verify == APP_VERIFY_NONE || f->lossy || f->overwritten)
		return false;
	if (!f->metadata.present) {
		as->no_metadata++;
		return false;
	}
	if (a->o.verify == APP_VERIFY_CRC && f->metadata.crc == 0) {
		as->no_crc++;
		return false;
	}
	return true;
}

/* What an application would do with a frame: read it, and know whether
 * what it read is the frame the device sent.
 */
static void
consume(struct app_rx *a, struct app_stream *as, const struct droce_rx_frame_info *f)
{
	bool check, dump;
	const uint8_t *data;
	bool bad;

	if (as->taken == 0)
		as->first_tsc = f->received_tsc;
	as->last_tsc = f->received_tsc;
	as->taken++;
	as->bytes += f->bytes;
	if (f->lossy)
		as->lossy++;
	if (f->overwritten) {
		as->overwritten++;
		if (!f->lossy)
			as->overwritten_clean++;
	}
	check = checkable(a, as, f);
	dump = a->o.dump_dir != NULL && a->dumped < a->o.dump_frames;
	if (!check && !dump)
		return;
	data = frame_bytes(a, as, f);
	if (data == NULL) {
		as->mismatched++;
		return;
	}
	if (dump) {
		dump_frame(a, as, f, data);
		a->dumped++;
	}
	if (!check)
		return;
	if (a->o.verify == APP_VERIFY_CRC)
		bad = droce_hsb_frame_crc(data, as->params.frame_size) != f->metadata.crc;
	else
		bad = droce_hsb_pattern_check(data, as->params.frame_size,
					      f->metadata.frame_number) >= 0;
	/* A later frame may have written the page while we read it. */
	if (!droce_rx_stream_frame_intact(as->st, f)) {
		as->intact_bad++;
		return;
	}
	as->checked++;
	if (bad) {
		as->mismatched++;
		if (as->mismatched <= 4)
			fprintf(stderr, "droce: rx.%u stream %u frame %" PRIu64
				" (page %u): bytes differ from what the sensor sent (--verify %s)\n",
				as->section, as->index, f->sequence, f->page,
				app_verify_name(a->o.verify));
	}
}

/* Take every waiting frame once; true if there was one. */
static bool
sweep(struct app_rx *a)
{
	bool any = false;

	for (unsigned int i = 0; i < a->nb; i++) {
		struct app_stream *as = &a->streams[i];
		struct droce_rx_frame_info f;

		while (droce_rx_stream_get_next_frame(as->st, 0, &f)) {
			consume(a, as, &f);
			any = true;
		}
	}
	return any;
}

static void *
consumer_main(void *arg)
{
	struct app_rx *a = arg;

	while (!atomic_load(&a->stop)) {
		struct timespec ts;

		if (sweep(a))
			continue;
		/* Nothing waiting: sleep until a monitor says a frame is. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&a->lock);
		if (!a->frame_waiting)
			pthread_cond_timedwait(&a->cond, &a->lock, &ts);
		a->frame_waiting = false;
		pthread_mutex_unlock(&a->lock);
	}
	sweep(a);
	return NULL;
}

int
app_rx_start(struct app_rx *a, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < a->nb; i++) {
		struct app_stream *as = &a->streams[i];
		char name[32];
		int ret;

		droce_rx_stream_set_frame_ready(as->st, frame_ready, a);
		ret = droce_rx_stream_start(as->st, &as->params, err, errlen);
		if (ret != 0) {
			size_t len = strlen(err);
			char why[DROCE_ERR_LEN];

			snprintf(why, sizeof(why), "%.*s", (int)len, err);
			snprintf(err, errlen, "rx.%u (stream %u): %s", as->section,
				 as->index, why);
			return ret;
		}
		printf("droce: rx.%u stream %u: QP %#x rkey %#x, port %u, from %s, %u pages of %zu bytes (frame %zu, metadata at %zu), frame memory %s\n",
		       as->section, as->index, droce_rx_stream_qp_number(as->st),
		       droce_rx_stream_rkey(as->st), as->params.port, as->peer,
		       as->params.pages, as->params.page_size, as->params.frame_size,
		       as->params.metadata_offset,
		       as->buf.cpu != NULL ? "CPU-mapped" : "GPU only");
		if (pthread_create(&as->monitor, NULL, monitor_main, as) != 0) {
			snprintf(err, errlen, "rx: cannot start a monitor thread");
			return -EAGAIN;
		}
		as->monitor_running = true;
		snprintf(name, sizeof(name), "droce-mon%u", i);
		name[15] = '\0';     /* the kernel's limit */
		pthread_setname_np(as->monitor, name);
	}
	/* Frames arrive only while the monitors run: wait for them (10 s). */
	for (unsigned int i = 0; i < a->nb; i++) {
		for (int t = 0; t < 10000 && !droce_rx_stream_monitoring(a->streams[i].st); t++)
			rte_delay_us_sleep(1000);
		if (!droce_rx_stream_monitoring(a->streams[i].st)) {
			snprintf(err, errlen, "rx: the monitor of stream %u did not start", i);
			return -ETIMEDOUT;
		}
	}
	if (a->nb != 0) {
		if (pthread_create(&a->consumer, NULL, consumer_main, a) != 0) {
			snprintf(err, errlen, "rx: cannot start the consumer thread");
			return -EAGAIN;
		}
		a->consumer_running = true;
		pthread_setname_np(a->consumer, "droce-consumer");
	}
	fflush(stdout);
	return 0;
}

uint64_t
app_rx_received(const struct app_rx *a)
{
	uint64_t frames = 0;

	for (unsigned int i = 0; i < a->nb; i++) {
		struct droce_rx_stream_stats s;

		droce_rx_stream_stats(a->streams[i].st, &s);
		frames += s.frames;
	}
	return frames;
}

/* Frames the streams completed, not those the consumer took: a frame the
 * queue discarded was received all the same, and --frames must not wait
 * for one that will never be taken.
 */
bool
app_rx_done(const struct app_rx *a)
{
	return a->o.frames != 0 && app_rx_received(a) >= a->o.frames;
}

/* How often a worker looks at the frame count for --frames: the count
 * reads every stream's counters, cache lines that their owners write for
 * every packet.
 */
#define FRAMES_LOOK_US 50

/* A worker's round is over: --frames reached, the stack stops. Once,
 * from whichever worker sees it first.
 */
static unsigned int
frames_hook(struct droce_lcore_ctx *ctx, void *arg)
{
	static RTE_DEFINE_PER_LCORE(uint64_t, next_look);
	struct app_rx *a = arg;
	uint64_t now = rte_rdtsc();

	(void)ctx;
	if (now < RTE_PER_LCORE(next_look))
		return 0;
	RTE_PER_LCORE(next_look) = now + rte_get_tsc_hz() / 1000000 * FRAMES_LOOK_US;
	if (!atomic_load_explicit(&a->frames_reached, memory_order_relaxed) && app_rx_done(a) &&
	    !atomic_exchange(&a->frames_reached, true))
		droce_stack_request_stop(a->stack);
	return 0;
}

int
app_rx_stop_at_frames(struct app_rx *a)
{
	return a->o.frames == 0 ? 0 : droce_worker_hook_register(a->stack, frames_hook, a);
}

void
app_rx_stop(struct app_rx *a)
{
	/* The consumer takes what is queued, then the monitors go. */
	atomic_store(&a->stop, true);
	frame_ready(a);
	if (a->consumer_running)
		pthread_join(a->consumer, NULL);
	a->consumer_running = false;
	for (unsigned int i = 0; i < a->nb; i++) {
		struct app_stream *as = &a->streams[i];

		if (as->st != NULL)
			droce_rx_stream_close(as->st);
		if (as->monitor_running)
			pthread_join(as->monitor, NULL);
		as->monitor_running = false;
	}
}

/* Frames per second and Gbps from the first frame taken to the last one;
 * a single frame falls back to the whole run.
 */
static void
rates(uint64_t frames, uint64_t bytes, uint64_t first_tsc, uint64_t last_tsc,
      double run_s, double *fps, double *gbps)
{
	double window = (double)(last_tsc - first_tsc) / (double)rte_get_tsc_hz();

	if (frames >= 2 && window > 0) {
		*fps = (double)(frames - 1) / window;
		*gbps = (double)bytes * (double)(frames - 1) / (double)frames * 8 / window / 1e9;
	} else {
		*fps = (double)frames / run_s;
		*gbps = (double)bytes * 8 / run_s / 1e9;
	}
}

/* The consumer's counters of every stream, added up. */
struct consumer_totals {
	uint64_t taken, checked, mismatched, lossy, overwritten, intact_bad;
	uint64_t no_metadata, no_crc;
};

/* Why the frames taken were or were not checked, in a sentence. */
static void
print_verify_line(const struct app_rx *a, const struct consumer_totals *c, FILE *out)
{
	if (a->o.verify == APP_VERIFY_NONE) {
		fprintf(out, "  --verify none: %" PRIu64 " frames taken, none checked (--verify crc or pattern checks them)\n",
			c->taken);
		return;
	}
	fprintf(out, "  --verify %s: %" PRIu64 " of %" PRIu64 " frames taken checked, %" PRIu64
		" did not match; not checked: %" PRIu64 " lossy, %" PRIu64 " overwritten before taken, %" PRIu64
		" rewritten while read, %" PRIu64 " without metadata",
		app_verify_name(a->o.verify), c->checked, c->taken, c->mismatched, c->lossy,
		c->overwritten, c->intact_bad, c->no_metadata);
	if (a->o.verify == APP_VERIFY_CRC)
		fprintf(out, ", %" PRIu64 " with CRC 0 (the device computed none)", c->no_crc);
	fputc('\n', out);
}

int
app_rx_print_summary(const struct app_rx *a, double seconds, FILE *out)
{
	uint64_t frames = 0, lossy = 0, lost = 0, dropped = 0, refused = 0;
	uint64_t first = UINT64_MAX, last = 0, taken_bytes = 0;
	struct consumer_totals c = { 0 };
	double fps, gbps;

	if (a->nb == 0)
		return 0;
	if (seconds <= 0)
		seconds = 1;
	fprintf(out, "droce: rx summary (run %.2f s; rates from the first frame to the last)\n",
		seconds);
	fprintf(out, "  %-10s %-9s %9s %9s %9s %9s %8s %9s %8s %9s %8s %9s\n", "stream", "QP",
		"frames", "fps", "Gbps", "lost-pkt", "lossy", "q-dropped", "bad-pkt",
		"checked", "no-crc", "mismatch");
	for (unsigned int i = 0; i < a->nb; i++) {
		const struct app_stream *as = &a->streams[i];
		struct droce_rx_stream_stats s;
		uint64_t r = 0;
		char name[24];

		droce_rx_stream_stats(as->st, &s);
		for (int k = 0; k < DROCE_RX_REFUSAL_MAX; k++)
			r += s.refused[k];
		snprintf(name, sizeof(name), "rx.%u/%u", as->section, as->index);
		rates(as->taken, as->bytes, as->first_tsc, as->last_tsc, seconds, &fps, &gbps);
		fprintf(out, "  %-10s %#-9x %9" PRIu64 " %9.1f %9.3f %9" PRIu64 " %8" PRIu64
			" %9" PRIu64 " %8" PRIu64 " %9" PRIu64 " %8" PRIu64 " %9" PRIu64 "\n",
			name, droce_rx_stream_qp_number(as->st), s.frames, fps, gbps,
			s.lost_packets, s.frames_lossy, s.frames_dropped, r, as->checked,
			as->no_crc, as->mismatched);
		for (int k = 0; k < DROCE_RX_REFUSAL_MAX; k++)
			if (s.refused[k] != 0)
				fprintf(out, "  %-10s   refused %-16s %" PRIu64 " packets\n", "",
					droce_rx_refusal_name(k), s.refused[k]);
		if (s.handed_over != 0 || s.held != 0)
			fprintf(out, "  %-10s   %" PRIu64 " packets handed over from another worker, %" PRIu64
				" held back behind a PSN gap\n", "", s.handed_over,
				s.held);
		if (droce_rx_stream_receive_path_failed(as->st))
			fprintf(out, "  %-10s   the receive path FAILED\n", "");
		frames += s.frames;
		lost += s.lost_packets;
		dropped += s.frames_dropped;
		refused += r;
		lossy += s.frames_lossy;
		c.taken += as->taken;
		c.checked += as->checked;
		c.mismatched += as->mismatched;
		c.lossy += as->lossy;
		c.overwritten += as->overwritten;
		c.intact_bad += as->intact_bad;
		c.no_metadata += as->no_metadata;
		c.no_crc += as->no_crc;
		if (as->taken != 0) {
			first = RTE_MIN(first, as->first_tsc);
			last = RTE_MAX(last, as->last_tsc);
			taken_bytes += as->bytes;
		}
	}
	{
		uint64_t unknown[DROCE_RX_REFUSAL_MAX];

		droce_rx_refusals(a->rx, unknown);
		for (int k = 0; k < DROCE_RX_REFUSAL_MAX; k++)
			if (unknown[k] != 0)
				fprintf(out, "  packets for no stream: %s %" PRIu64 "\n",
					droce_rx_refusal_name(k), unknown[k]);
	}
	rates(c.taken, taken_bytes, first, last, seconds, &fps, &gbps);
	fprintf(out, "  %-10s %-9s %9" PRIu64 " %9.1f %9.3f %9" PRIu64 " %8" PRIu64
		" %9" PRIu64 " %8" PRIu64 " %9" PRIu64 " %8" PRIu64 " %9" PRIu64 "\n", "total", "",
		frames, fps, gbps, lost, lossy, dropped, refused, c.checked, c.no_crc,
		c.mismatched);
	fprintf(out, "  (lost-pkt: packets lost on the wire; lossy: frames with a loss; q-dropped: frames the queue discarded, the application was too slow; bad-pkt: packets refused)\n");
	print_verify_line(a, &c, out);
	fflush(out);
	return c.mismatched != 0;
}

void
app_rx_destroy(struct app_rx *a)
{
	if (a == NULL)
		return;
	for (unsigned int i = 0; a->streams != NULL && i < a->nb; i++) {
		droce_rx_stream_free(a->streams[i].st);
		droce_gpu_buf_free(&a->streams[i].buf);
	}
	droce_rx_destroy(a->rx);
	for (unsigned int i = 0; i < a->nb_registered; i++)
		for (uint16_t p = 0; p < droce_stack_nb_ports(a->stack); p++)
			droce_gpu_mempool_unregister(a->registered[i],
						     droce_port_pool(a->stack, p));
	free(a->streams);
	free(a->scratch);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->cond);
	free(a);
}
