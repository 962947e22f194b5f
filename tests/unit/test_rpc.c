/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * lib/rpc: the frames, byte by byte against rpc_frame.h's layout; what
 * each kind may carry; a stream cut anywhere; rendezvous descriptors;
 * the counters each thread keeps; the per-thread cache of the objects
 * each call makes.
 */

#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#include "droce_rpc.h"
#include "rpc_frame.h"
#include "rpc_private.h"

#define MAX_PAYLOAD (4u << 20)

static const struct rpc_frame request = {
	.kind = RPC_REQUEST, .flags = RPC_FLAG_WANT_RESPONSE, .service = 999, .status = 0,
	.seq = 0x0102030405060708ull, .payload_len = 0x00a0b0c0 & (MAX_PAYLOAD - 1),
};

/* Every field where the layout puts it, big-endian. */
static void
test_header_bytes(void **state)
{
	static const uint8_t want[RPC_FRAME_HDR_SIZE] = {
		'D', 'R', 'P', 'C', 1, RPC_RESPONSE, 0x00, 0x02, 0x03, 0xe7, 0xff, 0xea,
		0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 32, 2, 0, 0, 0,
	};
	struct rpc_frame f = { .kind = RPC_RESPONSE, .flags = RPC_FLAG_RNDV, .service = 999,
			       .status = -22, .seq = 0x0102030405060708ull, .payload_len = 32,
			       .rndv_count = 2 };
	uint8_t out[RPC_FRAME_HDR_SIZE];

	(void)state;
	rpc_frame_encode(&f, out);
	assert_memory_equal(out, want, sizeof(want));
}

/* Each kind with what it may carry: decoded as encoded. */
static void
test_round_trip(void **state)
{
	const struct rpc_frame frames[] = {
		{ .kind = RPC_HELLO, .payload_len = 70 },
		{ .kind = RPC_WELCOME, .status = -2, .payload_len = 0 },
		request,
		{ .kind = RPC_REQUEST, .flags = RPC_FLAG_RNDV, .service = 7, .seq = 9,
		  .payload_len = 4 * RPC_RNDV_DESC_SIZE, .rndv_count = 4 },
		{ .kind = RPC_RESPONSE, .service = 1, .status = 0, .seq = UINT64_MAX,
		  .payload_len = MAX_PAYLOAD },
		{ .kind = RPC_HEARTBEAT, .seq = 5 },
		{ .kind = RPC_HEARTBEAT_ACK, .seq = 5 },
		{ .kind = RPC_BYE },
	};
	static uint8_t buf[RPC_FRAME_HDR_SIZE + MAX_PAYLOAD];

	(void)state;
	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		struct rpc_frame got;
		size_t len = 0;

		rpc_frame_encode(&frames[i], buf);
		assert_int_equal(rpc_frame_decode(buf, RPC_FRAME_HDR_SIZE + frames[i].payload_len,
						  MAX_PAYLOAD, &got, &len), RPC_FRAME_OK);
		assert_int_equal(len, RPC_FRAME_HDR_SIZE + frames[i].payload_len);
		assert_int_equal(got.kind, frames[i].kind);
		assert_int_equal(got.flags, frames[i].flags);
		assert_int_equal(got.service, frames[i].service);
		assert_int_equal(got.status, frames[i].status);
		assert_true(got.seq == frames[i].seq);
		assert_int_equal(got.payload_len, frames[i].payload_len);
		assert_int_equal(got.rndv_count, frames[i].rndv_count);
	}
}

/* A valid REQUEST header with byte @p off set to @p value decodes to @p want. */
static void
expect_byte(size_t off, uint8_t value, int want)
{
	uint8_t buf[RPC_FRAME_HDR_SIZE + 64] = { 0 };
	struct rpc_frame f = request, got = { 0 };
	size_t len = 0;

	f.payload_len = 64;
	rpc_frame_encode(&f, buf);
	buf[off] = value;
	assert_int_equal(rpc_frame_decode(buf, sizeof(buf), MAX_PAYLOAD, &got, &len), want);
	if (want < 0)
		assert_int_equal(got.kind, 0); /* nothing set */
}

/* A valid header of @p f decodes to @p want. */
static void
expect_frame(const struct rpc_frame *f, int want)
{
	static uint8_t buf[RPC_FRAME_HDR_SIZE + 256];
	struct rpc_frame got;
	size_t len;

	rpc_frame_encode(f, buf);
	assert_int_equal(rpc_frame_decode(buf, sizeof(buf), 256, &got, &len), want);
}

/* Each check, each with its own answer. */
static void
test_refusals(void **state)
{
	struct rpc_frame f;

	(void)state;
	expect_byte(0, 'X', RPC_FRAME_BAD_MAGIC);
	expect_byte(3, 'D', RPC_FRAME_BAD_MAGIC);
	expect_byte(4, 2, RPC_FRAME_BAD_VERSION);
	expect_byte(4, 0, RPC_FRAME_BAD_VERSION);
	expect_byte(5, 0, RPC_FRAME_BAD_KIND);
	expect_byte(5, RPC_KIND_END, RPC_FRAME_BAD_KIND);
	expect_byte(5, 0xff, RPC_FRAME_BAD_KIND);
	expect_byte(6, 0x80, RPC_FRAME_BAD_FLAGS);
	expect_byte(7, 0x05, RPC_FRAME_BAD_FLAGS);
	expect_byte(8, 0x04, RPC_FRAME_BAD_SERVICE);             /* 0x04e7 = 1255 */
	expect_byte(10, 0x01, RPC_FRAME_BAD_STATUS);             /* a REQUEST has none */
	for (size_t off = 12; off < 16; off++)
		expect_byte(off, 1, RPC_FRAME_BAD_RESERVED);
	for (size_t off = 29; off < 32; off++)
		expect_byte(off, 1, RPC_FRAME_BAD_RESERVED);
	expect_byte(28, 1, RPC_FRAME_BAD_RNDV);                  /* descriptors, no flag */

	f = (struct rpc_frame){ .kind = RPC_HEARTBEAT, .payload_len = 1 };
	expect_frame(&f, RPC_FRAME_BAD_LENGTH);
	f = (struct rpc_frame){ .kind = RPC_BYE, .service = 1 };
	expect_frame(&f, RPC_FRAME_BAD_SERVICE);
	f = (struct rpc_frame){ .kind = RPC_HELLO, .flags = RPC_FLAG_WANT_RESPONSE };
	expect_frame(&f, RPC_FRAME_BAD_FLAGS);
	f = (struct rpc_frame){ .kind = RPC_RESPONSE, .flags = RPC_FLAG_WANT_RESPONSE };
	expect_frame(&f, RPC_FRAME_BAD_FLAGS);
	f = (struct rpc_frame){ .kind = RPC_HEARTBEAT_ACK, .status = -1 };
	expect_frame(&f, RPC_FRAME_BAD_STATUS);
	f = (struct rpc_frame){ .kind = RPC_REQUEST, .flags = RPC_FLAG_RNDV, .payload_len = 16 };
	expect_frame(&f, RPC_FRAME_BAD_RNDV);                    /* the flag, no count */
	f.rndv_count = 5;
	f.payload_len = 5 * RPC_RNDV_DESC_SIZE;
	expect_frame(&f, RPC_FRAME_BAD_RNDV);
	f.rndv_count = 2;
	f.payload_len = 3 * RPC_RNDV_DESC_SIZE;
	expect_frame(&f, RPC_FRAME_BAD_RNDV);                    /* payload not the count's */
	f.flags = RPC_FLAG_RNDV | RPC_FLAG_SEALED;
	f.payload_len = 2 * RPC_RNDV_DESC_SIZE;
	expect_frame(&f, RPC_FRAME_BAD_RNDV);                    /* sealed: 44 bytes each */
	f.payload_len = 2 * RPC_RNDV_SEALED_DESC_SIZE;
	expect_frame(&f, RPC_FRAME_OK);
	f.flags = RPC_FLAG_SEALED;
	expect_frame(&f, RPC_FRAME_BAD_FLAGS);                   /* sealed, not rendezvous */
	f = (struct rpc_frame){ .kind = RPC_HELLO, .payload_len = 257 };
	expect_frame(&f, RPC_FRAME_TOO_LONG);
	assert_string_equal(rpc_frame_result_str(RPC_FRAME_TOO_LONG),
			    "payload over the session's limit");
}

/* Two frames on a stream cut at every byte: until a frame is whole, the
 * decoder says how much it needs; then the next one follows.
 */
static void
test_stream_cut_anywhere(void **state)
{
	struct rpc_frame a = request, b = { .kind = RPC_HEARTBEAT, .seq = 3 }, got;
	uint8_t stream[2 * RPC_FRAME_HDR_SIZE + 100];
	size_t len, a_len = RPC_FRAME_HDR_SIZE + 100;

	(void)state;
	a.payload_len = 100;
	rpc_frame_encode(&a, stream);
	memset(stream + RPC_FRAME_HDR_SIZE, 0xab, 100);
	rpc_frame_encode(&b, stream + a_len);
	for (size_t cut = 0; cut < a_len; cut++) {
		len = 0;
		assert_int_equal(rpc_frame_decode(stream, cut, MAX_PAYLOAD, &got, &len),
				 RPC_FRAME_SHORT);
		assert_int_equal(len, cut < RPC_FRAME_HDR_SIZE ? RPC_FRAME_HDR_SIZE : a_len);
	}
	assert_int_equal(rpc_frame_decode(stream, sizeof(stream), MAX_PAYLOAD, &got, &len),
			 RPC_FRAME_OK);
	assert_int_equal(len, a_len);
	assert_int_equal(got.payload_len, 100);
	assert_int_equal(rpc_frame_decode(stream + a_len, sizeof(stream) - a_len, MAX_PAYLOAD,
					  &got, &len), RPC_FRAME_OK);
	assert_int_equal(got.kind, RPC_HEARTBEAT);
	assert_true(got.seq == 3);
	assert_int_equal(len, RPC_FRAME_HDR_SIZE);
}

/* Descriptors as sent; zero-length buffers and totals over the limit
 * refused.
 */
static void
test_rndv_descriptors(void **state)
{
	const struct rpc_rndv sent[RPC_RNDV_MAX] = {
		{ .addr = 0x7f0000001000ull, .len = 4096, .rkey = 0x1234 },
		{ .addr = 0x7f0000102000ull, .len = 1, .rkey = 0x1235 },
		{ .addr = 0x10, .len = 0xffffffffu, .rkey = 0xabcdef01 },
		{ .addr = 0xffffffffffffffffull, .len = 100, .rkey = 0 },
	};
	struct rpc_frame f = { .kind = RPC_REQUEST, .flags = RPC_FLAG_RNDV, .service = 3,
			       .payload_len = 4 * RPC_RNDV_DESC_SIZE, .rndv_count = 4 };
	uint64_t total = 4096ull + 1 + 0xffffffffull + 100;
	struct rpc_rndv got[RPC_RNDV_MAX];
	uint8_t payload[4 * RPC_RNDV_DESC_SIZE];

	(void)state;
	rpc_rndv_encode(sent, 4, f.flags, payload);
	assert_int_equal(payload[0], 0x00);
	assert_int_equal(payload[2], 0x7f);
	assert_int_equal(payload[8 + 2], 0x10);                  /* 4096, big-endian */
	assert_true(rpc_rndv_decode(&f, payload, total, got) == total);
	assert_memory_equal(got, sent, sizeof(sent));
	assert_true(rpc_rndv_decode(&f, payload, total - 1, got) == 0);
	payload[RPC_RNDV_DESC_SIZE + 11] = 0;                    /* the second: 0 bytes */
	assert_true(rpc_rndv_decode(&f, payload, total, got) == 0);
	f.flags = 0;
	assert_true(rpc_rndv_decode(&f, payload, total, got) == 0);
}

/* Sealed descriptors carry their nonce and tag after the 16 bytes. */
static void
test_sealed_rndv_descriptors(void **state)
{
	struct rpc_rndv sent[2] = { { .addr = 0x7f0000001000ull, .len = 65536, .rkey = 0x1234 },
				    { .addr = 0x7f0000202000ull, .len = 100, .rkey = 0x99 } };
	struct rpc_frame f = { .kind = RPC_REQUEST, .flags = RPC_FLAG_RNDV | RPC_FLAG_SEALED,
			       .payload_len = 2 * RPC_RNDV_SEALED_DESC_SIZE, .rndv_count = 2 };
	uint8_t payload[2 * RPC_RNDV_SEALED_DESC_SIZE];
	struct rpc_rndv got[RPC_RNDV_MAX];

	(void)state;
	for (unsigned int i = 0; i < 2; i++) {
		memset(sent[i].nonce, 0x10 + (int)i, sizeof(sent[i].nonce));
		memset(sent[i].tag, 0x20 + (int)i, sizeof(sent[i].tag));
	}
	rpc_rndv_encode(sent, 2, f.flags, payload);
	assert_int_equal(payload[RPC_RNDV_DESC_SIZE], 0x10);
	assert_int_equal(payload[RPC_RNDV_DESC_SIZE + RPC_SEAL_NONCE], 0x20);
	assert_int_equal(payload[RPC_RNDV_SEALED_DESC_SIZE + 2], 0x7f);
	assert_true(rpc_rndv_decode(&f, payload, UINT64_MAX, got) == 65536 + 100);
	assert_memory_equal(got, sent, sizeof(sent));
}

/* A sealed one-sided piece: 56 bytes, every field where rpc_frame.h
 * says; its frames refuse another size or a piece index over 15.
 */
static void
test_sealed_pieces(void **state)
{
	struct rpc_sealed_piece sent = { .addr = 0x7f0000001000ull, .len = 300000,
					 .rkey = 0x4400aa01, .back_addr = 0x7e0000002000ull,
					 .back_rkey = 0x5500bb02 }, got;
	uint8_t payload[RPC_SEALED_PIECE_SIZE];
	struct rpc_frame f;

	(void)state;
	memset(sent.nonce, 0x31, sizeof(sent.nonce));
	memset(sent.tag, 0x42, sizeof(sent.tag));
	rpc_sealed_piece_encode(&sent, payload);
	assert_int_equal(payload[0], 0x00);
	assert_int_equal(payload[2], 0x7f);
	assert_int_equal(payload[8 + 3], 300000 & 0xff);
	assert_int_equal(payload[12], 0x44);
	assert_int_equal(payload[16 + 2], 0x7e);
	assert_int_equal(payload[24], 0x55);
	assert_int_equal(payload[28], 0x31);
	assert_int_equal(payload[28 + RPC_SEAL_NONCE], 0x42);
	assert_int_equal(payload[RPC_SEALED_PIECE_SIZE - 1], 0x42);
	rpc_sealed_piece_decode(payload, &got);
	assert_memory_equal(&got, &sent, sizeof(sent));

	for (int kind = RPC_SEALED_WRITE; kind <= RPC_SEALED_DONE; kind++) {
		f = (struct rpc_frame){ .kind = (enum rpc_kind)kind, .service = 15, .seq = 9,
					.payload_len = RPC_SEALED_PIECE_SIZE };
		expect_frame(&f, RPC_FRAME_OK);
		f.service = 16;
		expect_frame(&f, RPC_FRAME_BAD_PIECE);
		f.service = 0;
		f.payload_len = RPC_SEALED_PIECE_SIZE - 1;
		expect_frame(&f, RPC_FRAME_BAD_PIECE);
		f.payload_len = 0;
		expect_frame(&f, RPC_FRAME_BAD_PIECE);
		f.payload_len = RPC_SEALED_PIECE_SIZE;
		f.flags = RPC_FLAG_WANT_RESPONSE;
		expect_frame(&f, RPC_FRAME_BAD_FLAGS);
	}
	/* Only the answer has a status. */
	f = (struct rpc_frame){ .kind = RPC_SEALED_READ, .status = -2,
				.payload_len = RPC_SEALED_PIECE_SIZE };
	expect_frame(&f, RPC_FRAME_BAD_STATUS);
	f.kind = RPC_SEALED_DONE;
	expect_frame(&f, RPC_FRAME_OK);
}

#define COUNTING_THREADS 4
#define COUNTS_EACH 1000

static void *
count_and_end(void *arg)
{
	(void)arg;
	for (int i = 0; i < COUNTS_EACH; i++)
		rpc_count(RPC_FRAMES_IN, 1);
	rpc_count(RPC_BYTES_IN, 7);
	return NULL;
}

static pthread_barrier_t counted, read_done;

static void *
count_and_stay(void *arg)
{
	(void)arg;
	rpc_count(RPC_FRAMES_IN, 500);
	pthread_barrier_wait(&counted);
	pthread_barrier_wait(&read_done);
	return NULL;
}

/* Every thread counts in a block of its own: the sum has the counts of
 * threads that ended (their blocks retired) and of one still running,
 * and of this thread.
 */
static void
test_counters_of_threads(void **state)
{
	struct droce_rpc_stats a, b, c;
	pthread_t t[COUNTING_THREADS], stays;

	(void)state;
	droce_rpc_stats_get(&a);
	for (int i = 0; i < COUNTING_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, count_and_end, NULL), 0);
	for (int i = 0; i < COUNTING_THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(pthread_barrier_init(&counted, NULL, 2), 0);
	assert_int_equal(pthread_barrier_init(&read_done, NULL, 2), 0);
	assert_int_equal(pthread_create(&stays, NULL, count_and_stay, NULL), 0);
	pthread_barrier_wait(&counted);
	rpc_count(RPC_FRAMES_IN, 10);
	droce_rpc_stats_get(&b);
	pthread_barrier_wait(&read_done);
	assert_int_equal(pthread_join(stays, NULL), 0);
	droce_rpc_stats_get(&c);
	assert_int_equal(b.frames_in - a.frames_in, COUNTING_THREADS * COUNTS_EACH + 500 + 10);
	assert_int_equal(b.bytes_in - a.bytes_in, COUNTING_THREADS * 7);
	/* The one that stayed has ended too: nothing of it is lost. */
	assert_int_equal(c.frames_in, b.frames_in);
	assert_int_equal(c.frames_out, a.frames_out);
	pthread_barrier_destroy(&counted);
	pthread_barrier_destroy(&read_done);
}

/* What a thread ends it takes again, newest first; small outs come from
 * the cache and larger ones do not.
 */
static void
test_cache_reuses_on_thread(void **state)
{
	struct rpc_out *small, *large;
	void *obj[3];

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_non_null(obj[i] = rpc_obj_get(RPC_OBJ_CALL));
	for (int i = 0; i < 3; i++)
		rpc_obj_put(RPC_OBJ_CALL, obj[i]);
	for (int i = 2; i >= 0; i--)
		assert_ptr_equal(rpc_obj_get(RPC_OBJ_CALL), obj[i]);
	for (int i = 0; i < 3; i++)
		rpc_obj_put(RPC_OBJ_CALL, obj[i]);
	rpc_obj_put(RPC_OBJ_CALL, NULL);        /* nothing */
#ifdef __SANITIZE_ADDRESS__
	/* Ended objects are poisoned until they are taken again. */
	assert_true(__asan_address_is_poisoned(obj[2]));
	assert_true(__asan_address_is_poisoned((char *)obj[2] + sizeof(struct rpc_call) - 1));
#endif
	assert_ptr_equal(rpc_obj_get(RPC_OBJ_CALL), obj[2]);
#ifdef __SANITIZE_ADDRESS__
	assert_null(__asan_region_is_poisoned(obj[2], sizeof(struct rpc_call)));
#endif
	rpc_obj_put(RPC_OBJ_CALL, obj[2]);

	assert_non_null(small = rpc_out_alloc(RPC_OUT_CACHED_BYTES));
	assert_true(small->cached);
	assert_ptr_equal(small->buf, small->bytes);
	assert_int_equal(small->len, RPC_OUT_CACHED_BYTES);
	memset(small->bytes, 0xa5, RPC_OUT_CACHED_BYTES);   /* ASan: all of it is there */
	assert_non_null(large = rpc_out_alloc(RPC_OUT_CACHED_BYTES + 1));
	assert_false(large->cached);
	memset(large->bytes, 0x5a, RPC_OUT_CACHED_BYTES + 1);
	rpc_out_free(large);
	rpc_out_free(small);
	assert_ptr_equal(rpc_out_alloc(64), small);
	rpc_out_free(small);
	rpc_out_free(NULL);
}

#define CACHE_DEPTH 64  /* rpc_cache.c's RPC_CACHE_DEPTH */

/* A thread keeps at most CACHE_DEPTH of a kind: the rest go to malloc. */
static void
test_cache_bounded(void **state)
{
	void *obj[CACHE_DEPTH + 36];
	void *got;

	(void)state;
	/* Empty the cache of this kind first (earlier tests may have filled it). */
	for (unsigned int i = 0; i < RTE_DIM(obj); i++)
		assert_non_null(obj[i] = rpc_obj_get(RPC_OBJ_CTX));
	for (unsigned int i = 0; i < RTE_DIM(obj); i++)
		rpc_obj_put(RPC_OBJ_CTX, obj[i]);
	for (int i = CACHE_DEPTH - 1; i >= 0; i--)
		assert_ptr_equal(rpc_obj_get(RPC_OBJ_CTX), obj[i]);
	/* The cache is empty now: this one is malloc's, none of those kept. */
	assert_non_null(got = rpc_obj_get(RPC_OBJ_CTX));
	for (unsigned int i = 0; i < CACHE_DEPTH; i++)
		assert_ptr_not_equal(got, obj[i]);
	rpc_obj_put(RPC_OBJ_CTX, got);
	for (unsigned int i = 0; i < CACHE_DEPTH; i++)
		rpc_obj_put(RPC_OBJ_CTX, obj[i]);
}

/* Past a cache's depth: the maker frees these when it takes them back.
 * Many, so that glibc's own per-thread cache (7 chunks a size unless
 * tuned) cannot hide their going.
 */
#define HANDED_PAST_DEPTH 256
#define HANDED_OBJS (CACHE_DEPTH + HANDED_PAST_DEPTH)
/* At least half of them shows in the heap's count. */
#define HANDED_PAST_DEPTH_BYTES (HANDED_PAST_DEPTH / 2 * sizeof(struct rpc_call))

static void *
end_objs(void *arg)
{
	void **obj = arg;

	for (int i = 0; i < HANDED_OBJS; i++)
		rpc_obj_put(RPC_OBJ_CALL, obj[i]);
	return NULL;
}

static void *
make_objs_and_end_thread(void *arg)
{
	void **obj = arg;

	for (int i = 0; i < HANDED_OBJS; i++)
		if ((obj[i] = rpc_obj_get(RPC_OBJ_CALL)) == NULL)
			return (void *)1;
	return NULL;
}

/* The objects taken again, newest first, are the last CACHE_DEPTH of
 * @p obj ended, and usable (the oldest past the depth were freed).
 */
static int
take_back_handed(void *const *obj)
{
	int wrong = 0;

	for (int i = 0; i < CACHE_DEPTH; i++) {
		void *got = rpc_obj_get(RPC_OBJ_CALL);

		wrong += got != obj[HANDED_PAST_DEPTH + i];
#ifdef __SANITIZE_ADDRESS__
		wrong += got != NULL &&
			 __asan_region_is_poisoned(got, sizeof(struct rpc_call)) != NULL;
#endif
	}
	return wrong;
}

/* Bytes in use now (glibc counts its per-thread cache's chunks in use);
 * skips the test where the counts cannot show what the cache frees.
 */
static size_t
heap_in_use(void)
{
	const char *tunables = getenv("GLIBC_TUNABLES");

	if (tunables != NULL && strstr(tunables, "tcache") != NULL)
		skip();
	return mallinfo2().uordblks;
}

/* An object ended on another thread goes back to the thread that made
 * it, poisoned until it is taken again; the maker keeps a cache's depth
 * of them and frees the rest. One whose maker has ended goes back to
 * malloc. (Under AddressSanitizer glibc's counts do not move: only the
 * objects taken again are checked.)
 */
static void
test_cache_returns_to_maker(void **state)
{
	void *held[2 * CACHE_DEPTH + 1], *obj[HANDED_OBJS], *ret;
	size_t before;
	pthread_t t;

	(void)state;
	/* Empty this thread's cache of calls, and what came back to it. */
	for (unsigned int i = 0; i < RTE_DIM(held); i++)
		assert_non_null(held[i] = rpc_obj_get(RPC_OBJ_CALL));
	for (int i = 0; i < HANDED_OBJS; i++)
		assert_non_null(obj[i] = rpc_obj_get(RPC_OBJ_CALL));
	before = heap_in_use();
	assert_int_equal(pthread_create(&t, NULL, end_objs, obj), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
#ifdef __SANITIZE_ADDRESS__
	assert_true(__asan_address_is_poisoned(obj[0]));
#else
	/* Not freed (free() on the ending thread would show by its exit). */
	assert_true(heap_in_use() + HANDED_PAST_DEPTH_BYTES > before);
	before = heap_in_use();
#endif
	assert_int_equal(take_back_handed(obj), 0);
#ifndef __SANITIZE_ADDRESS__
	assert_true(heap_in_use() + HANDED_PAST_DEPTH_BYTES <= before);
#endif
	for (int i = 0; i < CACHE_DEPTH; i++)
		rpc_obj_put(RPC_OBJ_CALL, obj[HANDED_PAST_DEPTH + i]);
	for (unsigned int i = 0; i < RTE_DIM(held); i++)
		rpc_obj_put(RPC_OBJ_CALL, held[i]);

	/* Made on a thread that has ended: freed here, not kept. */
	assert_int_equal(pthread_create(&t, NULL, make_objs_and_end_thread, obj), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	before = heap_in_use();
	for (int i = 0; i < HANDED_OBJS; i++)
		rpc_obj_put(RPC_OBJ_CALL, obj[i]);
#ifndef __SANITIZE_ADDRESS__
	assert_true(heap_in_use() + HANDED_PAST_DEPTH_BYTES <= before);
#else
	(void)before;
#endif
}

struct home_takeover {
	void *obj[HANDED_OBJS];         /* made by a thread that has ended */
	pthread_barrier_t registered, ended;
	int wrong;
};

static void *
take_over_home(void *arg)
{
	struct home_takeover *to = arg;
	void *first = rpc_obj_get(RPC_OBJ_CALL);        /* takes a spare home */

	pthread_barrier_wait(&to->registered);
	pthread_barrier_wait(&to->ended);
	to->wrong = first == NULL ? -1 : take_back_handed(to->obj);
	rpc_obj_put(RPC_OBJ_CALL, first);
	for (int i = 0; i < CACHE_DEPTH; i++)
		rpc_obj_put(RPC_OBJ_CALL, to->obj[HANDED_PAST_DEPTH + i]);
	return NULL;
}

/* A thread that takes over an ended thread's home gets what others end
 * of that thread's objects.
 */
static void
test_cache_home_taken_over(void **state)
{
	struct home_takeover to = { .wrong = -2 };
	pthread_t t;
	void *ret;

	(void)state;
	assert_int_equal(pthread_barrier_init(&to.registered, NULL, 2), 0);
	assert_int_equal(pthread_barrier_init(&to.ended, NULL, 2), 0);
	assert_int_equal(pthread_create(&t, NULL, make_objs_and_end_thread, to.obj), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	assert_int_equal(pthread_create(&t, NULL, take_over_home, &to), 0);
	pthread_barrier_wait(&to.registered);
	for (int i = 0; i < HANDED_OBJS; i++)
		rpc_obj_put(RPC_OBJ_CALL, to.obj[i]);
	pthread_barrier_wait(&to.ended);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(to.wrong, 0);
	pthread_barrier_destroy(&to.registered);
	pthread_barrier_destroy(&to.ended);
}

#define EXITING_THREAD_OBJS 32

static void *
fill_cache_and_end(void *arg)
{
	void *obj[EXITING_THREAD_OBJS];

	(void)arg;
	for (int i = 0; i < EXITING_THREAD_OBJS; i++)
		if ((obj[i] = rpc_obj_get(RPC_OBJ_OUT)) == NULL)
			return (void *)1;
	for (int i = 0; i < EXITING_THREAD_OBJS; i++)
		rpc_obj_put(RPC_OBJ_OUT, obj[i]);
	return NULL;
}

/* A thread's cache goes back to malloc when the thread ends. (Under
 * AddressSanitizer glibc's counts do not move; its leak check holds the
 * same instead.)
 */
static void
test_cache_given_back_at_thread_exit(void **state)
{
	size_t before, after;
	pthread_t t;
	void *ret;

	(void)state;
	/* A first thread's own set-up (its arena) is not what is measured. */
	assert_int_equal(pthread_create(&t, NULL, fill_cache_and_end, NULL), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	before = mallinfo2().uordblks;
	assert_int_equal(pthread_create(&t, NULL, fill_cache_and_end, NULL), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	after = mallinfo2().uordblks;
	/* Kept, they would be EXITING_THREAD_OBJS outs of 512 bytes and more. */
	assert_true(after < before + EXITING_THREAD_OBJS * RPC_OUT_CACHED_BYTES / 4);
}

static atomic_int wait_word;

static void *
wait_for_one(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)rpc_wait_state(&wait_word, 1u << 1, 0);
}

/* A waiter asleep in the kernel (no stack to drive) wakes when the
 * state it waits for is stored and told, not later.
 */
static void
test_wait_state_sleeper_woken(void **state)
{
	struct timespec until;
	pthread_t t;
	void *got;

	(void)state;
	atomic_store(&wait_word, 0);
	assert_int_equal(pthread_create(&t, NULL, wait_for_one, NULL), 0);
	usleep(50 * 1000);      /* past its spins: asleep */
	atomic_store_explicit(&wait_word, 1, memory_order_release);
	rpc_wake_state(&wait_word);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	assert_int_equal(pthread_timedjoin_np(t, &got, &until), 0);
	assert_int_equal((intptr_t)got, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_bytes),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_sealed_rndv_descriptors),
		cmocka_unit_test(test_stream_cut_anywhere),
		cmocka_unit_test(test_rndv_descriptors),
		cmocka_unit_test(test_sealed_pieces),
		cmocka_unit_test(test_counters_of_threads),
		cmocka_unit_test(test_wait_state_sleeper_woken),
		cmocka_unit_test(test_cache_reuses_on_thread),
		cmocka_unit_test(test_cache_bounded),
		cmocka_unit_test(test_cache_returns_to_maker),
		cmocka_unit_test(test_cache_home_taken_over),
		cmocka_unit_test(test_cache_given_back_at_thread_exit),
	};

	return cmocka_run_group_tests_name("RPC frames, counters and the object cache", tests, NULL, NULL);
}
