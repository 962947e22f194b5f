/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_APP_RX_H
#define DROCE_APP_RX_H

/*
 * droce's receivers: the streams of the rx.N sections, a monitor thread
 * per stream (blocking_monitor), and one consumer thread that takes every
 * frame, checks it and counts it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "droce_core.h"
#include "droce_net.h"

/* How the consumer checks a frame's bytes (--verify). */
enum app_verify {
	APP_VERIFY_NONE,          /* not at all: frames are counted */
	APP_VERIFY_CRC,           /* against the CRC in the frame's metadata */
	APP_VERIFY_PATTERN,       /* byte by byte against droce-sensor's pattern */
};

/* Name of a verify mode ("none", "crc", "pattern"). */
const char *app_verify_name(enum app_verify v);

/* Parse a verify mode; -1 for anything else. */
int app_verify_parse(const char *s, enum app_verify *v);

/* What the command line asks of the consumer. */
struct app_rx_opts {
	uint64_t frames;          /* stop after this many frames; 0: never */
	const char *dump_dir;     /* first dump_frames frames go here */
	unsigned int dump_frames;
	enum app_verify verify;
};

struct app_rx;

/* Create the receivers of @conf on @s (before droce_stack_start). */
struct app_rx *app_rx_create(const struct droce_conf *conf, struct droce_stack *s,
			     int16_t default_gpu, const struct app_rx_opts *o,
			     char *err, size_t errlen);

/* Start the streams, their monitors and the consumer, before the
 * stack's workers run (a pcap file plays from their first poll).
 */
int app_rx_start(struct app_rx *a, char *err, size_t errlen);

/* True once the streams received --frames frames (taken or discarded). */
bool app_rx_done(const struct app_rx *a);

/* With --frames: the workers stop the stack themselves once the streams
 * received that many, within 50 us of the last (the control lcore's watch
 * may come too late on a busy machine). Only for a stack that may stop
 * without more ado (no RPC server on it); before droce_stack_start().
 * 0, or a negative errno.
 */
int app_rx_stop_at_frames(struct app_rx *a);

/* Frames the streams completed so far, all streams. */
uint64_t app_rx_received(const struct app_rx *a);

/* After the workers stopped: take what is left, stop every thread. */
void app_rx_stop(struct app_rx *a);

/* The summary table; 0 when every frame checked was byte-exact. */
int app_rx_print_summary(const struct app_rx *a, double seconds, FILE *out);

/* Free everything (after app_rx_stop and droce_stack_stop). */
void app_rx_destroy(struct app_rx *a);

#endif /* DROCE_APP_RX_H */
