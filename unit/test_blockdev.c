// SPDX-License-Identifier: GPL-2.0
/* Logical block size lookup in sysfs and the resulting range alignment. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "helpers.h"

/* Read a sysfs number ourselves, as an independent reference. */
static long read_sysfs(const char *fmt, dev_t dev)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), fmt, major(dev), minor(dev));
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void test_tmp_device(void **state)
{
	struct stat st;
	uint32_t lbs = 0, align = 0;
	long want;

	(void)state;
	assert_int_equal(stat("/tmp", &st), 0);
	want = read_sysfs("/sys/dev/block/%u:%u/queue/logical_block_size",
			  st.st_dev);
	if (want < 0)	/* a partition: its disk has the queue */
		want = read_sysfs("/sys/dev/block/%u:%u/../queue/"
				  "logical_block_size", st.st_dev);
	if (want < 0)
		skip();		/* /tmp is not on a block device here */
	assert_int_equal(sf_logical_block_size(st.st_dev, &lbs), 0);
	assert_int_equal(lbs, want);
	assert_int_equal(sf_align_bytes(st.st_dev, &align), 0);
	assert_int_equal(align, want > 4096 ? want : 4096);
}

static void test_missing_device(void **state)
{
	uint32_t lbs = 77;

	(void)state;
	/* major 0 is for anonymous (non-block) devices: never in sysfs */
	assert_int_equal(sf_logical_block_size(makedev(0, 12345), &lbs),
			 -ENOENT);
	assert_int_equal(lbs, 77);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tmp_device),
		cmocka_unit_test(test_missing_device),
	};

	return cmocka_run_group_tests_name("blockdev", tests, NULL, NULL);
}
