// SPDX-License-Identifier: GPL-2.0
/*
 * FIEMAP extents -> sector ranges (pure): alignment, merging, refused
 * flags, odd extents, huge offsets, scale, and "only new ranges" across
 * several growths.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "helpers.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define TiB (1024ull * 1024 * MiB)

static struct fiemap_extent ext(uint64_t logical, uint64_t physical,
				uint64_t length, uint32_t flags)
{
	struct fiemap_extent e = { 0 };

	e.fe_logical = logical;
	e.fe_physical = physical;
	e.fe_length = length;
	e.fe_flags = flags;
	return e;
}

/* Convert with 4 KiB alignment into @out (initialised) and expect success. */
static void convert(const struct fiemap_extent *e, size_t n,
		    struct sf_ranges *out)
{
	uint32_t refused = 99;

	assert_int_equal(sf_extents_to_ranges(e, n, 4096, out, &refused), 0);
	assert_int_equal(refused, 0);
	expect_well_formed(out);
}

static void test_bytes_to_sectors(void **state)
{
	const struct fiemap_extent e[] = { ext(0, 1 * MiB, 1 * MiB, 0) };
	const struct pair want[] = { { 2048, 2048 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(e, 1, &rs);
	expect_ranges(&rs, want, NPAIRS(want));
	assert_true(rs.wasted_sectors == 0);
	sf_ranges_free(&rs);
}

static void test_shrinks_to_4k(void **state)
{
	/* bytes [1000, 11000) -> [4096, 8192) */
	const struct fiemap_extent e[] = { ext(0, 1000, 10000, 0) };
	const struct pair want[] = { { 8, 8 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(e, 1, &rs);
	expect_ranges(&rs, want, NPAIRS(want));
	assert_true(rs.wasted_sectors == (3096 + 2808) / 512);
	sf_ranges_free(&rs);
}

static void test_shrinks_to_larger_block_size(void **state)
{
	/* 8 KiB logical blocks: [4096, 20480) -> [8192, 16384) */
	const struct fiemap_extent e[] = { ext(0, 4096, 16384, 0) };
	const struct pair want[] = { { 16, 16 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	assert_int_equal(sf_extents_to_ranges(e, 1, 8192, &rs, NULL), 0);
	expect_ranges(&rs, want, NPAIRS(want));
	assert_int_equal(sf_extents_to_ranges(e, 1, 3000, &rs, NULL), -EINVAL);
	assert_int_equal(sf_extents_to_ranges(e, 1, 256, &rs, NULL), -EINVAL);
	sf_ranges_free(&rs);
}

static void test_drops_extent_smaller_than_alignment(void **state)
{
	const struct fiemap_extent e[] = {
		ext(0, 512, 3072, 0),		/* inside one 4 KiB block */
		ext(8192, 6144, 4096, 0),	/* straddles, no whole block */
	};
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(e, NPAIRS(e), &rs);
	assert_int_equal(rs.count, 0);
	assert_true(rs.wasted_sectors == 6 + 8);
	sf_ranges_free(&rs);
}

static void test_merges_before_shrinking(void **state)
{
	/* Out of order, physically touching; each alone has no whole
	 * 4 KiB block, together they have one. */
	const struct fiemap_extent e[] = {
		ext(4096, 6144, 4096, FIEMAP_EXTENT_LAST),
		ext(0, 2048, 4096, 0),
	};
	const struct pair want[] = { { 8, 8 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(e, NPAIRS(e), &rs);
	expect_ranges(&rs, want, NPAIRS(want));
	sf_ranges_free(&rs);
}

static void test_merges_adjacent_and_keeps_gaps(void **state)
{
	const struct fiemap_extent e[] = {
		ext(0, 1 * MiB, 64 * KiB, 0),
		ext(64 * KiB, 1 * MiB + 64 * KiB, 64 * KiB, 0),
		ext(128 * KiB, 4 * MiB, 64 * KiB, 0),
		ext(192 * KiB, 2 * MiB, 64 * KiB, FIEMAP_EXTENT_LAST),
	};
	const struct pair want[] = { { 2048, 256 }, { 4096, 128 },
				     { 8192, 128 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(e, NPAIRS(e), &rs);
	expect_ranges(&rs, want, NPAIRS(want));
	sf_ranges_free(&rs);
}

static void test_accepted_flags(void **state)
{
	const struct fiemap_extent e[] = {
		ext(0, 0, 4096, FIEMAP_EXTENT_UNWRITTEN),
		ext(4096, 4096, 4096, FIEMAP_EXTENT_MERGED),
		ext(8192, 8192, 4096,
		    FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST),
	};
	const struct pair want[] = { { 0, 24 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(e, NPAIRS(e), &rs);
	expect_ranges(&rs, want, NPAIRS(want));
	sf_ranges_free(&rs);
}

static void expect_refused(uint32_t flag, int err)
{
	struct fiemap_extent e[] = {
		ext(0, 0, 4096, 0),
		ext(4096, 1 * MiB, 4096, flag | FIEMAP_EXTENT_LAST),
	};
	const struct pair keep[] = { { 7, 1 } };
	struct sf_ranges rs = SF_RANGES_INIT;
	uint32_t refused = 0;

	make_ranges(&rs, keep, 1);
	assert_int_equal(sf_extents_to_ranges(e, 2, 4096, &rs, &refused), err);
	assert_int_equal(refused, flag);
	assert_string_not_equal(sf_extent_flag_name(flag), "unknown flag");
	expect_ranges(&rs, keep, 1);	/* output untouched on failure */
	sf_ranges_free(&rs);
}

static void test_refused_flags(void **state)
{
	(void)state;
	expect_refused(FIEMAP_EXTENT_UNKNOWN, -EAGAIN);
	expect_refused(FIEMAP_EXTENT_DELALLOC, -EAGAIN);
	expect_refused(FIEMAP_EXTENT_ENCODED, -EOPNOTSUPP);
	expect_refused(FIEMAP_EXTENT_DATA_ENCRYPTED, -EOPNOTSUPP);
	expect_refused(FIEMAP_EXTENT_NOT_ALIGNED, -EOPNOTSUPP);
	expect_refused(FIEMAP_EXTENT_DATA_INLINE, -EOPNOTSUPP);
	expect_refused(FIEMAP_EXTENT_DATA_TAIL, -EOPNOTSUPP);
	expect_refused(FIEMAP_EXTENT_SHARED, -EOPNOTSUPP);
	assert_string_equal(sf_extent_flag_name(FIEMAP_EXTENT_SHARED),
			    "shared");
}

static void test_refused_reports_one_flag(void **state)
{
	/* Kernels set UNKNOWN together with DELALLOC/ENCODED: name the
	 * "not decided yet" one, so callers know a retry may help. */
	const struct fiemap_extent e[] = {
		ext(0, 0, 4096, FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_UNKNOWN),
	};
	struct sf_ranges rs = SF_RANGES_INIT;
	uint32_t refused = 0;

	(void)state;
	assert_int_equal(sf_extents_to_ranges(e, 1, 4096, &rs, &refused),
			 -EAGAIN);
	assert_int_equal(refused, FIEMAP_EXTENT_UNKNOWN);
}

static void test_zero_length_and_empty(void **state)
{
	const struct fiemap_extent e[] = {
		ext(0, 1 * MiB, 0, 0),
		ext(0, 2 * MiB, 4096, FIEMAP_EXTENT_LAST),
	};
	const struct pair want[] = { { 4096, 8 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(e, NPAIRS(e), &rs);
	expect_ranges(&rs, want, NPAIRS(want));
	convert(NULL, 0, &rs);
	assert_int_equal(rs.count, 0);
	sf_ranges_free(&rs);
}

static void test_offsets_past_2tib(void **state)
{
	/* Sector numbers above 2^32 must not be truncated anywhere. */
	const struct fiemap_extent e[] = {
		ext(0, 3 * TiB, 1 * MiB, 0),
		ext(1 * MiB, 3 * TiB + 1 * MiB, 1 * MiB, 0),
		ext(2 * MiB, 700 * TiB, 64 * KiB, FIEMAP_EXTENT_LAST),
	};
	const struct pair want[] = { { 3 * TiB / 512, 4096 },
				     { 700 * TiB / 512, 128 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(e, NPAIRS(e), &rs);
	expect_ranges(&rs, want, NPAIRS(want));
	sf_ranges_free(&rs);
}

static void test_offsets_near_2_64(void **state)
{
	const struct fiemap_extent fits[] = {
		ext(0, UINT64_MAX - 8191, 4096, 0),	/* last whole blocks */
		ext(0, UINT64_MAX - 100, 100, 0),	/* no whole block */
	};
	const struct fiemap_extent overflows[] = {
		ext(0, UINT64_MAX - 4095, 8192, 0),
	};
	const struct pair want[] = { { (UINT64_MAX - 8191) / 512, 8 } };
	struct sf_ranges rs = SF_RANGES_INIT;

	(void)state;
	convert(fits, NPAIRS(fits), &rs);
	expect_ranges(&rs, want, NPAIRS(want));
	assert_int_equal(sf_extents_to_ranges(overflows, 1, 4096, &rs, NULL),
			 -EOVERFLOW);
	expect_ranges(&rs, want, NPAIRS(want));
	sf_ranges_free(&rs);
}

/* 50,000 shuffled extents, every other one touching its neighbour. */
static void test_fifty_thousand_extents(void **state)
{
	enum { N = 50000 };
	struct fiemap_extent *e = malloc(N * sizeof(*e));
	uint64_t seed = 7;
	struct sf_ranges rs = SF_RANGES_INIT;
	clock_t t0;

	(void)state;
	assert_non_null(e);
	for (size_t i = 0; i < N; i++)	/* pairs (2k, 2k+1) touch */
		e[i] = ext(i * 64 * KiB, (i / 2) * 1 * MiB + (i % 2) * 64 * KiB,
			   64 * KiB, 0);
	for (size_t i = N - 1; i > 0; i--) {
		size_t j = lcg_next(&seed) % (i + 1);
		struct fiemap_extent t = e[i];

		e[i] = e[j];
		e[j] = t;
	}
	t0 = clock();
	convert(e, N, &rs);
	/* quadratic code would take minutes; this must be well under 1 s */
	assert_true(clock() - t0 < CLOCKS_PER_SEC);
	assert_int_equal(rs.count, N / 2);
	for (size_t i = 0; i < rs.count; i++) {
		assert_true(rs.r[i].sector_offset == i * 2048);
		assert_true(rs.r[i].sector_count == 256);
	}
	sf_ranges_free(&rs);
	free(e);
}

/* The layout of a file after each of three growths; the file system
 * extends the first extent in place and adds new ones. */
static void test_only_new_across_growths(void **state)
{
	const struct fiemap_extent g1[] = {
		ext(0, 1 * MiB, 6000, FIEMAP_EXTENT_LAST),  /* one whole blk */
	};
	const struct fiemap_extent g2[] = {
		ext(0, 1 * MiB, 1 * MiB, 0),		/* grew in place */
		ext(1 * MiB, 10 * MiB, 1 * MiB, FIEMAP_EXTENT_LAST),
	};
	const struct fiemap_extent g3[] = {
		ext(0, 1 * MiB, 1 * MiB, 0),
		ext(1 * MiB, 10 * MiB, 1 * MiB, 0),
		ext(2 * MiB, 11 * MiB, 4096, FIEMAP_EXTENT_LAST), /* touches */
	};
	const struct pair want1[] = { { 2048, 8 } };
	const struct pair want2[] = { { 2056, 2040 }, { 20480, 2048 } };
	const struct pair want3[] = { { 22528, 8 } };
	const struct pair want_given[] = { { 2048, 2048 }, { 20480, 2056 } };
	struct sf_ranges now = SF_RANGES_INIT, given = SF_RANGES_INIT;
	struct sf_ranges fresh = SF_RANGES_INIT;

	(void)state;
	convert(g1, NPAIRS(g1), &now);
	assert_int_equal(sf_new_ranges(&now, &given, 8, &fresh), 0);
	expect_ranges(&fresh, want1, NPAIRS(want1));

	convert(g2, NPAIRS(g2), &now);
	assert_int_equal(sf_new_ranges(&now, &given, 8, &fresh), 0);
	expect_ranges(&fresh, want2, NPAIRS(want2));

	convert(g3, NPAIRS(g3), &now);
	assert_int_equal(sf_new_ranges(&now, &given, 8, &fresh), 0);
	expect_ranges(&fresh, want3, NPAIRS(want3));
	expect_ranges(&given, want_given, NPAIRS(want_given));

	/* Nothing changed: nothing new.  Bad alignment: given untouched. */
	assert_int_equal(sf_new_ranges(&now, &given, 8, &fresh), 0);
	assert_int_equal(fresh.count, 0);
	assert_int_equal(sf_new_ranges(&now, &given, 3, &fresh), -EINVAL);
	expect_ranges(&given, want_given, NPAIRS(want_given));

	sf_ranges_free(&now);
	sf_ranges_free(&given);
	sf_ranges_free(&fresh);
}

/* Random growths: no sector is ever handed out twice, and everything the
 * file owns (aligned) has been handed out at the end. */
static void test_random_growths_never_repeat(void **state)
{
	enum { SPACE = 4096, MAXEXT = 64 };	/* sectors */
	uint64_t seed = 1234;

	(void)state;
	for (int round = 0; round < 50; round++) {
		struct fiemap_extent e[MAXEXT];
		unsigned char handed[SPACE] = { 0 };
		struct sf_ranges now = SF_RANGES_INIT, given = SF_RANGES_INIT;
		struct sf_ranges fresh = SF_RANGES_INIT;
		size_t n = 0;

		while (n < MAXEXT) {
			/* grow: extend an extent in place, or add one */
			if (n && lcg_next(&seed) % 3 == 0) {
				e[lcg_next(&seed) % n].fe_length +=
					512 * (1 + lcg_next(&seed) % 9);
			} else {
				e[n] = ext(0, 512 * (lcg_next(&seed) % SPACE),
					   512 * (1 + lcg_next(&seed) % 30), 0);
				n++;
			}
			for (size_t i = 0; i < n; i++)	/* stay in SPACE */
				if (e[i].fe_physical + e[i].fe_length >
				    512ull * SPACE)
					e[i].fe_length = 512ull * SPACE -
							 e[i].fe_physical;
			assert_int_equal(sf_extents_to_ranges(e, n, 4096, &now,
							      NULL), 0);
			assert_int_equal(sf_new_ranges(&now, &given, 8,
						       &fresh), 0);
			expect_well_formed(&fresh);
			for (size_t i = 0; i < fresh.count; i++) {
				assert_int_equal(fresh.r[i].sector_offset % 8, 0);
				assert_int_equal(fresh.r[i].sector_count % 8, 0);
				for (uint64_t s = 0; s < fresh.r[i].sector_count;
				     s++) {
					uint64_t sec = fresh.r[i].sector_offset + s;

					assert_int_equal(handed[sec], 0);
					handed[sec] = 1;
				}
			}
		}
		/* all handed out == all currently owned (aligned) */
		for (size_t i = 0; i < now.count; i++)
			for (uint64_t s = 0; s < now.r[i].sector_count; s++)
				assert_int_equal(
					handed[now.r[i].sector_offset + s], 1);
		assert_true(given.usable_sectors == now.usable_sectors);
		sf_ranges_free(&now);
		sf_ranges_free(&given);
		sf_ranges_free(&fresh);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_to_sectors),
		cmocka_unit_test(test_shrinks_to_4k),
		cmocka_unit_test(test_shrinks_to_larger_block_size),
		cmocka_unit_test(test_drops_extent_smaller_than_alignment),
		cmocka_unit_test(test_merges_before_shrinking),
		cmocka_unit_test(test_merges_adjacent_and_keeps_gaps),
		cmocka_unit_test(test_accepted_flags),
		cmocka_unit_test(test_refused_flags),
		cmocka_unit_test(test_refused_reports_one_flag),
		cmocka_unit_test(test_zero_length_and_empty),
		cmocka_unit_test(test_offsets_past_2tib),
		cmocka_unit_test(test_offsets_near_2_64),
		cmocka_unit_test(test_fifty_thousand_extents),
		cmocka_unit_test(test_only_new_across_growths),
		cmocka_unit_test(test_random_growths_never_repeat),
	};

	return cmocka_run_group_tests_name("extents", tests, NULL, NULL);
}
