// SPDX-License-Identifier: GPL-2.0
/* Filesystem allow-list: pure magic table and sf_check_fs() on real fds. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/vfs.h>
#include <cmocka.h>

#include "storagefile.h"

static void test_allowed(void **state)
{
	(void)state;
	assert_true(sf_fs_allowed(0xEF53));		/* ext2/3/4 */
	assert_true(sf_fs_allowed(0x58465342));		/* xfs */
	assert_string_equal(sf_fs_name(0xEF53), "ext4");
	assert_string_equal(sf_fs_name(0x58465342), "xfs");
}

static void test_refused(void **state)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} refused[] = {
		{ 0x9123683E, "btrfs" }, { 0x01021994, "tmpfs" },
		{ 0x794C7630, "overlayfs" }, { 0x6969, "nfs" },
		{ 0x65735546, "fuse" }, { 0x2FC12FC1, "zfs" },
		{ 0xCA451A4E, "bcachefs" }, { 0xF2F52010, "f2fs" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
		assert_false(sf_fs_allowed(refused[i].magic));
		assert_string_equal(sf_fs_name(refused[i].magic),
				    refused[i].name);
	}
}

static void test_unknown(void **state)
{
	(void)state;
	assert_false(sf_fs_allowed(0x12345678));
	assert_null(sf_fs_name(0x12345678));
	assert_false(sf_fs_allowed(0));
	/* Sign-extended magic from a 32-bit statfs still matches. */
	assert_true(sf_fs_allowed((unsigned long)(long)(int32_t)0x58465342));
}

/* sf_check_fs() must agree with fstatfs() on whatever @path is. */
static void check_path(const char *path, bool must_exist)
{
	struct statfs st;
	const char *name = NULL;
	unsigned long magic = 0;
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	int ret;

	if (fd < 0) {
		if (must_exist)
			fail_msg("cannot open %s", path);
		skip();
	}
	assert_int_equal(fstatfs(fd, &st), 0);
	ret = sf_check_fs(fd, &name, &magic);
	close(fd);

	assert_true(magic == (unsigned long)st.f_type);
	assert_non_null(name);
	assert_int_equal(ret, sf_fs_allowed(magic) ? 0 : -EOPNOTSUPP);
	if (!sf_fs_name(magic))
		assert_string_equal(name, "unknown");
}

static void test_check_tmp(void **state)
{
	(void)state;
	check_path("/tmp", true);
}

static void test_check_proc_refused(void **state)
{
	const char *name = NULL;
	int fd = open("/proc/self", O_RDONLY | O_DIRECTORY);

	(void)state;
	if (fd < 0)
		skip();
	assert_int_equal(sf_check_fs(fd, &name, NULL), -EOPNOTSUPP);
	assert_string_equal(name, "proc");
	close(fd);
}

static void test_check_tmpfs_refused(void **state)
{
	struct statfs st;
	const char *name = NULL;
	int fd = open("/dev/shm", O_RDONLY | O_DIRECTORY);

	(void)state;
	if (fd < 0 || fstatfs(fd, &st) || st.f_type != 0x01021994) {
		if (fd >= 0)
			close(fd);
		skip();		/* no tmpfs at /dev/shm here */
	}
	assert_int_equal(sf_check_fs(fd, &name, NULL), -EOPNOTSUPP);
	assert_string_equal(name, "tmpfs");
	close(fd);
}

static void test_check_bad_fd(void **state)
{
	(void)state;
	assert_int_equal(sf_check_fs(-1, NULL, NULL), -EBADF);
}

static void test_check_path_fs(void **state)
{
	const char *name = NULL;
	unsigned long magic = 0;
	struct statfs st;
	int ret;

	(void)state;
	assert_int_equal(statfs("/tmp", &st), 0);
	/* a file that does not exist yet is judged by its directory */
	ret = sf_check_path_fs("/tmp/sf-no-such-file-here", &name, &magic);
	assert_true(magic == (unsigned long)st.f_type);
	assert_int_equal(ret, sf_fs_allowed(magic) ? 0 : -EOPNOTSUPP);
	assert_non_null(name);

	assert_int_equal(sf_check_path_fs("/proc/self/status", &name, NULL),
			 -EOPNOTSUPP);
	assert_string_equal(name, "proc");
	assert_int_equal(sf_check_path_fs("/no-such-dir/file", NULL, NULL),
			 -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_check_tmp),
		cmocka_unit_test(test_check_proc_refused),
		cmocka_unit_test(test_check_tmpfs_refused),
		cmocka_unit_test(test_check_bad_fd),
		cmocka_unit_test(test_check_path_fs),
	};

	return cmocka_run_group_tests_name("fs", tests, NULL, NULL);
}
