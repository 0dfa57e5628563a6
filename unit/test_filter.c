// SPDX-License-Identifier: GPL-2.0
/*
 * Free-at-take-time filter on synthetic inputs, and sf_fsmap_in_use() on
 * the real filesystem holding /tmp (skipped where GETFSMAP is missing).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "helpers.h"

/*
 * filter @r against @used with alignment 8, expect @want, @withheld (in
 * use) and @unaligned (free, lost to alignment)
 */
static void check_filter(const struct pair *r, size_t nr,
			 const struct pair *used, size_t nu,
			 const struct pair *want, size_t nw, uint64_t withheld,
			 uint64_t unaligned)
{
	struct sf_ranges rr, ru, out = SF_RANGES_INIT;
	uint64_t got_withheld = 99, got_unaligned = 99;

	make_ranges(&rr, r, nr);
	make_ranges(&ru, used, nu);
	assert_int_equal(sf_filter_free(&rr, &ru, 8, &out, &got_withheld,
					&got_unaligned), 0);
	expect_ranges(&out, want, nw);
	assert_true(got_withheld == withheld);
	assert_true(got_unaligned == unaligned);
	assert_true(out.wasted_sectors == unaligned);
	sf_ranges_free(&rr);
	sf_ranges_free(&ru);
	sf_ranges_free(&out);
}

static void test_fully_free(void **state)
{
	const struct pair r[] = { { 0, 64 }, { 128, 64 } };
	const struct pair used[] = { { 64, 64 }, { 1000, 8 } };

	(void)state;
	check_filter(r, NPAIRS(r), used, NPAIRS(used), r, NPAIRS(r), 0, 0);
	check_filter(r, NPAIRS(r), NULL, 0, r, NPAIRS(r), 0, 0);
}

static void test_fully_used(void **state)
{
	const struct pair r[] = { { 16, 16 }, { 64, 8 } };
	const struct pair used[] = { { 0, 40 }, { 60, 20 } };

	(void)state;
	check_filter(r, NPAIRS(r), used, NPAIRS(used), NULL, 0, 24, 0);
}

static void test_straddling(void **state)
{
	/* used [30,40) splits [0,64): [0,30)->[0,24), [40,64) stays;
	 * used [100,140) cuts the head of [128,192) and the tail of [64,104)
	 * is not in r at all. */
	const struct pair r[] = { { 0, 64 }, { 128, 64 } };
	const struct pair used[] = { { 30, 10 }, { 100, 40 } };
	const struct pair want[] = { { 0, 24 }, { 40, 24 }, { 144, 48 } };

	(void)state;
	/* in use: [30,40) and [128,140); lost to alignment: [24,30), [140,144) */
	check_filter(r, NPAIRS(r), used, NPAIRS(used), want, NPAIRS(want),
		     22, 10);
}

static void test_adjacent_to_used(void **state)
{
	const struct pair r[] = { { 64, 64 } };
	const struct pair used[] = { { 0, 64 }, { 128, 8 } };

	(void)state;
	check_filter(r, NPAIRS(r), used, NPAIRS(used), r, NPAIRS(r), 0, 0);
}

static void test_used_inside_one_block(void **state)
{
	/* a single used sector costs its whole aligned block */
	const struct pair r[] = { { 0, 32 } };
	const struct pair used[] = { { 9, 1 } };
	const struct pair want[] = { { 0, 8 }, { 16, 16 } };

	(void)state;
	check_filter(r, NPAIRS(r), used, NPAIRS(used), want, NPAIRS(want), 1, 7);
}

static void test_many_interleaved(void **state)
{
	enum { N = 1000 };
	struct sf_ranges r = SF_RANGES_INIT, used = SF_RANGES_INIT;
	struct sf_ranges out = SF_RANGES_INIT;
	uint64_t withheld;

	(void)state;
	/* r: [64i, 64i+32); used: [64i+16, 64i+48) -> keeps [64i, 64i+16) */
	for (uint64_t i = 0; i < N; i++) {
		assert_int_equal(sf_ranges_append(&r, 64 * i, 32), 0);
		assert_int_equal(sf_ranges_append(&used, 64 * i + 16, 32), 0);
	}
	assert_int_equal(sf_filter_free(&r, &used, 8, &out, &withheld, NULL),
			 0);
	assert_int_equal(out.count, N);
	for (size_t i = 0; i < N; i++) {
		assert_true(out.r[i].sector_offset == 64 * i);
		assert_true(out.r[i].sector_count == 16);
	}
	assert_true(withheld == 16 * N);
	sf_ranges_free(&r);
	sf_ranges_free(&used);
	sf_ranges_free(&out);
}

/* Size in sectors of the device under @path, from sysfs; 0 if unknown. */
static uint64_t device_sectors(const char *path)
{
	unsigned long long size = 0;
	char sys[96];
	struct stat st;
	FILE *f;

	if (stat(path, &st))
		return 0;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/size",
		 major(st.st_dev), minor(st.st_dev));
	f = fopen(sys, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &size) != 1)
		size = 0;
	fclose(f);
	return size;
}

/*
 * Free space must not be reported as in use. Everything the filesystem
 * does not report free is in use, past the end of the device too: count
 * only the device's own sectors.
 */
static void expect_free_space_excluded(const struct sf_ranges *in_use)
{
	uint64_t dev = device_sectors("/tmp"), free_sectors, used = 0;
	struct statvfs sv;

	assert_int_equal(statvfs("/tmp", &sv), 0);
	free_sectors = (uint64_t)sv.f_bfree * sv.f_frsize / 512;
	if (!dev)
		return;
	for (size_t i = 0; i < in_use->count; i++) {
		uint64_t start = in_use->r[i].sector_offset;
		uint64_t end = start + in_use->r[i].sector_count;

		if (start < dev)
			used += (end < dev ? end : dev) - start;
	}
	assert_true(used + free_sectors / 2 <= dev);
}

/* The sectors of a freshly allocated file must all show up as in use. */
static void test_fsmap_sees_allocated_file(void **state)
{
	char path[] = "/tmp/sf-fsmap-XXXXXX";
	struct sf_ranges in_use = SF_RANGES_INIT, file = SF_RANGES_INIT;
	struct sf_ranges free_part = SF_RANGES_INIT;
	struct fiemap_extent *ext = NULL;
	size_t n = 0;
	uint64_t withheld = 0;
	int fd, ret;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(fallocate(fd, 0, 0, 4 << 20), 0);
	assert_int_equal(fsync(fd), 0);
	ret = sf_fiemap_read(fd, &ext, &n);
	if (ret == -EOPNOTSUPP) {
		close(fd);
		skip();
	}
	assert_int_equal(ret, 0);
	assert_int_equal(sf_extents_to_ranges(ext, n, 4096, &file, NULL), 0);
	assert_true(file.usable_sectors > 0);

	ret = sf_fsmap_in_use("/tmp", &in_use);
	if (ret == -EOPNOTSUPP || ret == -EPERM) {
		free(ext);
		close(fd);
		skip();
	}
	assert_int_equal(ret, 0);
	expect_well_formed(&in_use);
	assert_true(in_use.count > 0);
	expect_free_space_excluded(&in_use);

	assert_int_equal(sf_filter_free(&file, &in_use, 8, &free_part,
					&withheld, NULL), 0);
	assert_int_equal(free_part.count, 0);
	assert_true(withheld == file.usable_sectors);

	free(ext);
	close(fd);
	sf_ranges_free(&in_use);
	sf_ranges_free(&file);
	sf_ranges_free(&free_part);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fully_free),
		cmocka_unit_test(test_fully_used),
		cmocka_unit_test(test_straddling),
		cmocka_unit_test(test_adjacent_to_used),
		cmocka_unit_test(test_used_inside_one_block),
		cmocka_unit_test(test_many_interleaved),
		cmocka_unit_test(test_fsmap_sees_allocated_file),
	};

	return cmocka_run_group_tests_name("filter", tests, NULL, NULL);
}
