// SPDX-License-Identifier: GPL-2.0
/*
 * The take-time map file: what sf_takemap_encode() writes comes back from
 * sf_takemap_decode() exactly, and anything else (cut short, damaged,
 * another version, another snapshot's or device's map) is refused, the
 * caller's ranges left as they were: a map that cannot be trusted must
 * never make a sector count as free.
 */
#include <errno.h>
#include <stdlib.h>

#include "helpers.h"

#define HEADER 72u

static const struct sf_takemap_key key = {
	.snapshot = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
	.dev_major = 254, .dev_minor = 16,
	.image_major = 251, .image_minor = 0,
	.part_start = 2048, .part_sectors = 524288,
};

static const struct pair used[] = {
	{ 0, 2048 }, { 4096, 8 }, { 1ull << 33, 1 },
	{ (1ull << 40), (UINT64_MAX >> 9) - (1ull << 40) },
};

static void encode(const struct pair *p, size_t n, uint8_t **buf,
		   size_t *len)
{
	struct sf_ranges r;
	void *b;

	make_ranges(&r, p, n);
	assert_int_equal(sf_takemap_encode(&key, &r, &b, len), 0);
	*buf = b;
	sf_ranges_free(&r);
}

/* decode, expect @err; a failure must leave the caller's ranges alone. */
static void expect_refused(const uint8_t *buf, size_t len,
			   const struct sf_takemap_key *k, int err)
{
	const struct pair before[] = { { 7, 1 } };
	struct sf_ranges out;

	make_ranges(&out, before, NPAIRS(before));
	assert_int_equal(sf_takemap_decode(buf, len, k, &out), err);
	expect_ranges(&out, before, NPAIRS(before));
	sf_ranges_free(&out);
}

/* Recompute the trailing checksum after a test changed the bytes. */
static void reseal(uint8_t *buf, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len - 8; i++) {
		h ^= buf[i];
		h *= 0x100000001b3ull;
	}
	for (int i = 0; i < 8; i++)
		buf[len - 8 + i] = (uint8_t)(h >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void test_round_trip(void **state)
{
	struct sf_ranges out = SF_RANGES_INIT;
	uint8_t *buf;
	size_t len;

	(void)state;
	encode(used, NPAIRS(used), &buf, &len);
	assert_int_equal(len, HEADER + NPAIRS(used) * 16 + 8);
	assert_memory_equal(buf, "BSTAKMAP", 8);
	assert_int_equal(sf_takemap_decode(buf, len, &key, &out), 0);
	expect_ranges(&out, used, NPAIRS(used));
	expect_well_formed(&out);
	free(buf);
	sf_ranges_free(&out);
}

static void test_round_trip_empty(void **state)
{
	const struct pair before[] = { { 7, 1 } };
	struct sf_ranges out;
	uint8_t *buf;
	size_t len;

	(void)state;
	encode(NULL, 0, &buf, &len);
	make_ranges(&out, before, NPAIRS(before));
	assert_int_equal(sf_takemap_decode(buf, len, &key, &out), 0);
	assert_int_equal(out.count, 0);
	free(buf);
	sf_ranges_free(&out);
}

/* Every cut, down to nothing: short, never taken for a smaller map. */
static void test_cut_short(void **state)
{
	uint8_t *buf;
	size_t len;

	(void)state;
	encode(used, NPAIRS(used), &buf, &len);
	for (size_t cut = 0; cut < len; cut++)
		expect_refused(buf, cut, &key, -ENODATA);
	free(buf);
}

static void test_not_a_map(void **state)
{
	static const char text[] = "1:2 3 /some/record/of/another/kind\n";
	uint8_t *buf;
	size_t len;

	(void)state;
	expect_refused((const uint8_t *)text, sizeof(text) - 1, &key, -ENOMSG);
	encode(used, NPAIRS(used), &buf, &len);
	buf[0] ^= 0x20;
	expect_refused(buf, len, &key, -ENOMSG);
	free(buf);
}

static void test_other_version(void **state)
{
	uint8_t *buf;
	size_t len;

	(void)state;
	encode(used, NPAIRS(used), &buf, &len);
	buf[8] = SF_TAKEMAP_VERSION + 1;
	reseal(buf, len);
	expect_refused(buf, len, &key, -EPROTONOSUPPORT);
	/* Even cut short: the version is what the reader can tell. */
	expect_refused(buf, 20, &key, -EPROTONOSUPPORT);
	free(buf);
}

static void test_damaged(void **state)
{
	uint8_t *buf, *longer;
	size_t len;

	(void)state;
	encode(used, NPAIRS(used), &buf, &len);
	/*
	 * Any flipped bit after the magic and version; in the count of
	 * ranges, it announces more than there are.
	 */
	for (size_t i = 12; i < len; i++) {
		buf[i] ^= 0x01;
		expect_refused(buf, len, &key, i >= 64 && i < 72 ?
			       -ENODATA : -EBADMSG);
		buf[i] ^= 0x01;
	}
	/* A byte past its end. */
	longer = malloc(len + 1);
	assert_non_null(longer);
	memcpy(longer, buf, len);
	longer[len] = 0;
	expect_refused(longer, len + 1, &key, -EBADMSG);
	/* More ranges announced than there are: short. */
	put64(buf + 64, NPAIRS(used) + 1);
	reseal(buf, len);
	expect_refused(buf, len, &key, -ENODATA);
	free(longer);
	free(buf);
}

/* A well-sealed file with ranges the encoder never writes. */
static void test_bad_ranges(void **state)
{
	const struct pair two[] = { { 100, 10 }, { 200, 10 } };
	uint8_t *buf;
	size_t len;

	(void)state;
	encode(two, NPAIRS(two), &buf, &len);
	put64(buf + HEADER + 16, 50);		/* out of order */
	reseal(buf, len);
	expect_refused(buf, len, &key, -EBADMSG);
	put64(buf + HEADER + 16, 105);		/* overlapping */
	reseal(buf, len);
	expect_refused(buf, len, &key, -EBADMSG);
	put64(buf + HEADER + 16, 110);		/* touching: not merged */
	reseal(buf, len);
	expect_refused(buf, len, &key, -EBADMSG);
	put64(buf + HEADER + 16, 200);
	put64(buf + HEADER + 24, 0);		/* empty */
	reseal(buf, len);
	expect_refused(buf, len, &key, -EBADMSG);
	put64(buf + HEADER + 24, UINT64_MAX);	/* past the last sector */
	reseal(buf, len);
	expect_refused(buf, len, &key, -EBADMSG);
	free(buf);
}

/* A map of another snapshot, device, image or partition. */
static void test_foreign(void **state)
{
	struct sf_takemap_key k;
	uint8_t *buf;
	size_t len;

	(void)state;
	encode(used, NPAIRS(used), &buf, &len);
	k = key;
	k.snapshot[15] ^= 1;
	expect_refused(buf, len, &k, -ESTALE);
	k = key;
	k.dev_minor = 32;
	expect_refused(buf, len, &k, -ESTALE);
	k = key;
	k.image_minor = 1;
	expect_refused(buf, len, &k, -ESTALE);
	k = key;
	k.part_start = 0;
	expect_refused(buf, len, &k, -ESTALE);
	k = key;
	k.part_sectors = 0;
	expect_refused(buf, len, &k, -ESTALE);
	free(buf);
}

/* The size the encoder writes, and no overflow for absurd counts. */
static void test_bytes(void **state)
{
	uint8_t *buf;
	size_t len;

	(void)state;
	encode(used, NPAIRS(used), &buf, &len);
	assert_int_equal(sf_takemap_bytes(NPAIRS(used)), len);
	free(buf);
	assert_int_equal(sf_takemap_bytes(0), HEADER + 8);
	assert_int_equal(sf_takemap_bytes(UINT64_MAX / 16), UINT64_MAX);
	assert_int_equal(sf_takemap_bytes(UINT64_MAX), UINT64_MAX);
}

/*
 * At most SF_TAKEMAP_MAX_BYTES, and at most a quarter of the free space
 * of the state directory (a tmpfs /run that must not fill).
 */
static void test_room(void **state)
{
	const uint64_t max = SF_TAKEMAP_MAX_BYTES, gib = 1ull << 30;
	uint64_t runs = (max - HEADER - 8) / 16;

	(void)state;
	/* About a million runs fit; one more does not. */
	assert_true(runs >= 1000000);
	assert_int_equal(sf_takemap_room(sf_takemap_bytes(runs), gib), 0);
	assert_int_equal(sf_takemap_room(sf_takemap_bytes(runs + 1), gib),
			 -EFBIG);
	assert_int_equal(sf_takemap_room(max, 4 * max), 0);
	assert_int_equal(sf_takemap_room(max + 1, UINT64_MAX), -EFBIG);
	assert_int_equal(sf_takemap_room(UINT64_MAX, UINT64_MAX), -EFBIG);
	/* A quarter of what is free, rounded down; nothing free: nothing. */
	assert_int_equal(sf_takemap_room(1000, 4000), 0);
	assert_int_equal(sf_takemap_room(1000, 3999), -ENOSPC);
	assert_int_equal(sf_takemap_room(1001, 4003), -ENOSPC);
	assert_int_equal(sf_takemap_room(80, 0), -ENOSPC);
	assert_int_equal(sf_takemap_room(max, 4 * max - 1), -ENOSPC);
	/* Too big beats too little room: the cap is what is said. */
	assert_int_equal(sf_takemap_room(max + 1, 0), -EFBIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_empty),
		cmocka_unit_test(test_cut_short),
		cmocka_unit_test(test_not_a_map),
		cmocka_unit_test(test_other_version),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_bad_ranges),
		cmocka_unit_test(test_foreign),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_room),
	};

	return cmocka_run_group_tests_name("takemap", tests, NULL, NULL);
}
