// SPDX-License-Identifier: GPL-2.0
/* sf_parse_size(): units, suffixes, rejections, 64-bit overflow. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "storagefile.h"

static void assert_size(const char *s, uint64_t expect)
{
	uint64_t v = 0;

	assert_int_equal(sf_parse_size(s, &v), 0);
	assert_true(v == expect);
}

static void assert_size_err(const char *s, int err)
{
	uint64_t v = 12345;

	assert_int_equal(sf_parse_size(s, &v), err);
	assert_true(v == 12345);	/* untouched on error */
}

static void test_plain_bytes(void **state)
{
	(void)state;
	assert_size("4096", 4096);
	assert_size("1", 1);
	assert_size("4096B", 4096);
	assert_size("18446744073709551615", UINT64_MAX);
}

static void test_units(void **state)
{
	(void)state;
	assert_size("4k", 4096);
	assert_size("4K", 4096);
	assert_size("512M", 512ull << 20);
	assert_size("4G", 4ull << 30);
	assert_size("1T", 1ull << 40);
	assert_size("2P", 2ull << 50);
	assert_size("4GiB", 4ull << 30);
	/*
	 * As util-linux (fallocate -l 4MB is 4,000,000 bytes): "KB", "MB"...
	 * are decimal, "K" and "KiB" binary.  On 2cf2299 "4GB" was 4 GiB
	 * (issue 13 item 10).
	 */
	assert_size("4GB", 4000000000ull);
	assert_size("4KB", 4000);
	assert_size("4kb", 4000);
	assert_size("512MB", 512000000ull);
	assert_size("2PB", 2000000000000000ull);
	assert_size("3kib", 3072);
	assert_size("16383P", 16383ull << 50);
}

static void test_rejects_junk(void **state)
{
	(void)state;
	assert_size_err(NULL, -EINVAL);
	assert_size_err("", -EINVAL);
	assert_size_err("0", -EINVAL);
	assert_size_err("0G", -EINVAL);
	assert_size_err("-1", -EINVAL);
	assert_size_err("+1", -EINVAL);
	assert_size_err(" 1", -EINVAL);
	assert_size_err("1 ", -EINVAL);
	assert_size_err("1 G", -EINVAL);
	assert_size_err("G", -EINVAL);
	assert_size_err("4X", -EINVAL);
	assert_size_err("4E", -EINVAL);	/* exa is not supported */
	assert_size_err("4GG", -EINVAL);
	assert_size_err("4Gx", -EINVAL);
	assert_size_err("4iB", -EINVAL);
	assert_size_err("4GiBs", -EINVAL);
	assert_size_err("1.5G", -EINVAL);
	assert_size_err("0x10", -EINVAL);
}

static void test_rejects_overflow(void **state)
{
	(void)state;
	assert_size_err("18446744073709551616", -ERANGE);
	assert_size_err("99999999999999999999999", -ERANGE);
	assert_size_err("16384P", -ERANGE);
	assert_size_err("17179869184G", -ERANGE);
	assert_size_err("18447PB", -ERANGE);
	assert_size("17179869183G", 17179869183ull << 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_bytes),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_rejects_junk),
		cmocka_unit_test(test_rejects_overflow),
	};

	return cmocka_run_group_tests_name("size", tests, NULL, NULL);
}
