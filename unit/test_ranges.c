// SPDX-License-Identifier: GPL-2.0
/* Range lists: append/merge, usable space per chunk, subtract, union. */
#include <errno.h>

#include "helpers.h"

static void test_append_merges_touching(void **state)
{
	struct sf_ranges rs = SF_RANGES_INIT;
	const struct pair want[] = { { 0, 24 }, { 100, 8 } };

	(void)state;
	assert_int_equal(sf_ranges_append(&rs, 0, 8), 0);
	assert_int_equal(sf_ranges_append(&rs, 8, 16), 0);
	assert_int_equal(sf_ranges_append(&rs, 100, 0), 0);	/* no-op */
	assert_int_equal(sf_ranges_append(&rs, 100, 8), 0);
	expect_ranges(&rs, want, NPAIRS(want));
	sf_ranges_free(&rs);
	assert_int_equal(rs.count, 0);
	assert_null(rs.r);
}

static void test_append_rejects_disorder_and_overflow(void **state)
{
	struct sf_ranges rs = SF_RANGES_INIT;
	const struct pair want[] = { { 100, 8 } };

	(void)state;
	assert_int_equal(sf_ranges_append(&rs, 100, 8), 0);
	assert_int_equal(sf_ranges_append(&rs, 50, 8), -EINVAL);
	assert_int_equal(sf_ranges_append(&rs, 107, 8), -EINVAL);
	assert_int_equal(sf_ranges_append(&rs, UINT64_MAX - 3, 8), -EOVERFLOW);
	expect_ranges(&rs, want, NPAIRS(want));
	sf_ranges_free(&rs);
}

static void test_usable_chunk_tails(void **state)
{
	/* 512-sector chunks: 1000 -> 512 usable + 488 tail; 1024 -> 0 tail;
	 * 100 -> all tail. */
	const struct pair p[] = { { 0, 1000 }, { 4096, 1024 }, { 9000, 100 } };
	struct sf_ranges rs;
	uint64_t usable = 1, wasted = 1;

	(void)state;
	make_ranges(&rs, p, NPAIRS(p));
	assert_int_equal(sf_ranges_usable(&rs, 512, &usable, &wasted), 0);
	assert_true(usable == 512 + 1024);
	assert_true(wasted == 488 + 100);
	assert_int_equal(sf_ranges_usable(&rs, 1, &usable, &wasted), 0);
	assert_true(usable == 2124 && wasted == 0);
	assert_int_equal(sf_ranges_usable(&rs, 4096, &usable, &wasted), 0);
	assert_true(usable == 0 && wasted == 2124);
	assert_int_equal(sf_ranges_usable(&rs, 0, &usable, NULL), -EINVAL);
	assert_int_equal(sf_ranges_usable(&rs, 768, NULL, NULL), -EINVAL);
	sf_ranges_free(&rs);
}

static void test_subtract_cases(void **state)
{
	const struct pair a[] = { { 0, 100 }, { 200, 100 }, { 1000, 50 } };
	/* hole inside, straddling two a ranges, covering one completely */
	const struct pair b[] = { { 10, 10 }, { 90, 120 }, { 990, 70 } };
	const struct pair want[] = { { 0, 10 }, { 20, 70 }, { 210, 90 } };
	struct sf_ranges ra, rb, out = SF_RANGES_INIT;

	(void)state;
	make_ranges(&ra, a, NPAIRS(a));
	make_ranges(&rb, b, NPAIRS(b));
	assert_int_equal(sf_ranges_subtract(&ra, &rb, 1, &out), 0);
	expect_ranges(&out, want, NPAIRS(want));
	assert_true(out.wasted_sectors == 0);
	sf_ranges_free(&ra);
	sf_ranges_free(&rb);
	sf_ranges_free(&out);
}

static void test_subtract_realigns(void **state)
{
	const struct pair a[] = { { 0, 64 } };
	const struct pair b[] = { { 10, 3 }, { 30, 1 } };
	/* pieces [0,10) [13,30) [31,64) shrunk to 8: [0,8) [16,24) [32,64) */
	const struct pair want[] = { { 0, 8 }, { 16, 8 }, { 32, 32 } };
	struct sf_ranges ra, rb, out = SF_RANGES_INIT;

	(void)state;
	make_ranges(&ra, a, NPAIRS(a));
	make_ranges(&rb, b, NPAIRS(b));
	assert_int_equal(sf_ranges_subtract(&ra, &rb, 8, &out), 0);
	expect_ranges(&out, want, NPAIRS(want));
	assert_true(out.wasted_sectors == 64 - 4 - 48);
	assert_int_equal(sf_ranges_subtract(&ra, &rb, 6, &out), -EINVAL);
	sf_ranges_free(&ra);
	sf_ranges_free(&rb);
	sf_ranges_free(&out);
}

static void test_subtract_nothing_and_everything(void **state)
{
	const struct pair a[] = { { 8, 8 }, { 32, 8 } };
	const struct pair all[] = { { 0, 1000 } };
	struct sf_ranges ra, rall, empty = SF_RANGES_INIT, out = SF_RANGES_INIT;

	(void)state;
	make_ranges(&ra, a, NPAIRS(a));
	make_ranges(&rall, all, NPAIRS(all));
	assert_int_equal(sf_ranges_subtract(&ra, &empty, 8, &out), 0);
	expect_ranges(&out, a, NPAIRS(a));
	assert_int_equal(sf_ranges_subtract(&ra, &rall, 8, &out), 0);
	assert_int_equal(out.count, 0);
	sf_ranges_free(&ra);
	sf_ranges_free(&rall);
	sf_ranges_free(&out);
}

static void test_union_merges(void **state)
{
	const struct pair a[] = { { 0, 8 }, { 100, 8 } };
	const struct pair b[] = { { 4, 8 }, { 12, 4 }, { 108, 8 }, { 200, 1 } };
	const struct pair want[] = { { 0, 16 }, { 100, 16 }, { 200, 1 } };
	struct sf_ranges ra, rb;

	(void)state;
	make_ranges(&ra, a, NPAIRS(a));
	make_ranges(&rb, b, NPAIRS(b));
	assert_int_equal(sf_ranges_union(&ra, &rb), 0);
	expect_ranges(&ra, want, NPAIRS(want));
	sf_ranges_free(&ra);
	sf_ranges_free(&rb);
}

/* Random lists checked against a bitmap: subtract and union are exact. */
static void test_random_against_bitmap(void **state)
{
	enum { SPACE = 2048 };
	uint64_t seed = 42;

	(void)state;
	for (int round = 0; round < 200; round++) {
		struct sf_ranges ra = SF_RANGES_INIT, rb = SF_RANGES_INIT;
		struct sf_ranges diff = SF_RANGES_INIT;
		unsigned char in_a[SPACE] = { 0 }, in_b[SPACE] = { 0 };
		unsigned char got[SPACE] = { 0 };

		for (uint64_t pos = lcg_next(&seed) % 16; pos < SPACE - 64;
		     pos += 1 + lcg_next(&seed) % 64) {
			uint64_t len = 1 + lcg_next(&seed) % 40;
			bool to_a = lcg_next(&seed) & 1;

			assert_int_equal(sf_ranges_append(to_a ? &ra : &rb,
							  pos, len), 0);
			for (uint64_t s = pos; s < pos + len; s++)
				(to_a ? in_a : in_b)[s] = 1;
			pos += len;
		}
		assert_int_equal(sf_ranges_subtract(&ra, &rb, 1, &diff), 0);
		expect_well_formed(&diff);
		for (size_t i = 0; i < diff.count; i++)
			for (uint64_t s = 0; s < diff.r[i].sector_count; s++)
				got[diff.r[i].sector_offset + s] = 1;
		for (int s = 0; s < SPACE; s++)
			assert_int_equal(got[s], in_a[s] && !in_b[s]);

		assert_int_equal(sf_ranges_union(&ra, &rb), 0);
		expect_well_formed(&ra);
		memset(got, 0, sizeof(got));
		for (size_t i = 0; i < ra.count; i++)
			for (uint64_t s = 0; s < ra.r[i].sector_count; s++)
				got[ra.r[i].sector_offset + s] = 1;
		for (int s = 0; s < SPACE; s++)
			assert_int_equal(got[s], in_a[s] || in_b[s]);

		sf_ranges_free(&ra);
		sf_ranges_free(&rb);
		sf_ranges_free(&diff);
	}
}

static void test_chunk_size_like_kernel(void **state)
{
	const uint64_t GiB_s = 1ull << 21;	/* sectors per GiB */
	uint64_t c = 0;

	(void)state;
	/* 2M chunks of 256 KiB cover 512 GiB; one sector more doubles */
	assert_int_equal(sf_chunk_sectors(512 * GiB_s, 512, 18, 2097152, &c),
			 0);
	assert_true(c == 512);
	assert_int_equal(sf_chunk_sectors(512 * GiB_s + 1, 512, 18, 2097152,
					  &c), 0);
	assert_true(c == 1024);
	assert_int_equal(sf_chunk_sectors(4096 * GiB_s, 0, 18, 2097152, &c), 0);
	assert_true(c == 4096);
	assert_int_equal(sf_chunk_sectors(0, 0, 18, 2097152, &c), 0);
	assert_true(c == 512);
	/* minimum I/O size larger than the minimum chunk */
	assert_int_equal(sf_chunk_sectors(GiB_s, 1 << 20, 18, 2097152, &c), 0);
	assert_true(c == 2048);
	/* near 2^64 sectors: grows without overflowing */
	assert_int_equal(sf_chunk_sectors(UINT64_MAX, 0, 18, 2097152, &c), 0);
	assert_true(c == 1ull << 43);
	assert_int_equal(sf_chunk_sectors(1, 0, 8, 1, &c), -EINVAL);
	assert_int_equal(sf_chunk_sectors(1, 0, 18, 0, &c), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_merges_touching),
		cmocka_unit_test(test_append_rejects_disorder_and_overflow),
		cmocka_unit_test(test_usable_chunk_tails),
		cmocka_unit_test(test_subtract_cases),
		cmocka_unit_test(test_subtract_realigns),
		cmocka_unit_test(test_subtract_nothing_and_everything),
		cmocka_unit_test(test_union_merges),
		cmocka_unit_test(test_random_against_bitmap),
		cmocka_unit_test(test_chunk_size_like_kernel),
	};

	return cmocka_run_group_tests_name("ranges", tests, NULL, NULL);
}
