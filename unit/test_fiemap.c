// SPDX-License-Identifier: GPL-2.0
/*
 * Real FIEMAP on real files in /tmp, checked against independent readings
 * of the same layout: FIBMAP per block (needs CAP_SYS_RAWIO) and
 * `filefrag -v -b512` (e2fsprogs).  Tests that cannot run here are
 * reported skipped, never passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>

#include "helpers.h"

/* Blocks written in the sparse file: every other one, so > 512 extents
 * and sf_fiemap_read() has to batch. */
#define SPARSE_BLOCKS 2400

static char tmpdir[64];

static int make_tmpdir(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/sf-fiemap-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int open_new(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", tmpdir, name);
	return open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
}

/* Write every other fs block, so the file has SPARSE_BLOCKS/2 extents. */
static int make_sparse_file(char *path, size_t len, int *bsz)
{
	int fd = open_new("sparse", path, len);
	char *buf;

	assert_true(fd >= 0);
	assert_int_equal(ioctl(fd, FIGETBSZ, bsz), 0);
	buf = malloc(*bsz);
	assert_non_null(buf);
	memset(buf, 0xA5, *bsz);
	for (int i = 0; i < SPARSE_BLOCKS; i += 2)
		assert_int_equal(pwrite(fd, buf, *bsz, (off_t)i * *bsz), *bsz);
	assert_int_equal(fsync(fd), 0);
	free(buf);
	return fd;
}

/* FIBMAP: physical fs block of logical block @blk; 0 for a hole. */
static int fibmap(int fd, int blk, int *phys)
{
	*phys = blk;
	return ioctl(fd, FIBMAP, phys) < 0 ? -errno : 0;
}

static void test_fiemap_matches_fibmap(void **state)
{
	struct fiemap_extent *ext = NULL;
	size_t n = 0, mapped_blocks = 0, fibmap_blocks = 0;
	char path[128];
	int fd, bsz, phys, ret;

	(void)state;
	fd = make_sparse_file(path, sizeof(path), &bsz);
	ret = fibmap(fd, 0, &phys);
	if (ret == -EPERM || ret == -EINVAL || ret == -ENOTTY) {
		close(fd);	/* not root, or no FIBMAP on this fs */
		skip();
	}
	assert_int_equal(ret, 0);
	ret = sf_fiemap_read(fd, &ext, &n);
	if (ret == -EOPNOTSUPP) {
		close(fd);
		skip();
	}
	assert_int_equal(ret, 0);
	assert_true(n >= SPARSE_BLOCKS / 2);	/* batching really happened */
	assert_true(ext[n - 1].fe_flags & FIEMAP_EXTENT_LAST);

	/* every block FIEMAP reports is where FIBMAP says it is */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(ext[i].fe_logical % bsz, 0);
		assert_int_equal(ext[i].fe_length % bsz, 0);
		for (uint64_t off = 0; off < ext[i].fe_length; off += bsz) {
			int blk = (int)((ext[i].fe_logical + off) / bsz);

			assert_int_equal(fibmap(fd, blk, &phys), 0);
			assert_true((uint64_t)phys * bsz ==
				    ext[i].fe_physical + off);
			mapped_blocks++;
		}
	}
	/* and FIEMAP missed no block FIBMAP knows about */
	for (int blk = 0; blk < SPARSE_BLOCKS; blk++) {
		assert_int_equal(fibmap(fd, blk, &phys), 0);
		fibmap_blocks += phys != 0;
	}
	assert_int_equal(mapped_blocks, fibmap_blocks);
	assert_int_equal(fibmap_blocks, SPARSE_BLOCKS / 2);
	free(ext);
	close(fd);
}

/* Parse `filefrag -v -b512 @path` into extents (units of 512 bytes). */
static int read_filefrag(const char *path, struct fiemap_extent *ext,
			 size_t max, size_t *n)
{
	char cmd[256], line[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "filefrag -v -b512 '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	*n = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long lstart, lend, pstart, pend, len;

		if (sscanf(line, " %*u: %llu.. %llu: %llu.. %llu: %llu:",
			   &lstart, &lend, &pstart, &pend, &len) != 5)
			continue;
		assert_true(*n < max);
		memset(&ext[*n], 0, sizeof(ext[*n]));
		ext[*n].fe_logical = lstart * 512;
		ext[*n].fe_physical = pstart * 512;
		ext[*n].fe_length = len * 512;
		(*n)++;
	}
	return pclose(p) == 0 ? 0 : -1;
}

/* sf_all_ranges() equals filefrag's layout shrunk to the alignment. */
static void test_all_ranges_match_filefrag(void **state)
{
	static struct fiemap_extent ff[SPARSE_BLOCKS];
	struct sf_ranges mine = SF_RANGES_INIT, theirs = SF_RANGES_INIT;
	struct sf_file *f;
	char path[128];
	size_t n = 0;
	int fd;

	(void)state;
	if (system("filefrag -V >/dev/null 2>&1") != 0)
		skip();
	fd = open_new("prealloc", path, sizeof(path));
	assert_true(fd >= 0);
	/* unwritten space plus a written, unaligned tail */
	assert_int_equal(fallocate(fd, 0, 0, 3 << 20), 0);
	assert_int_equal(pwrite(fd, "tail", 4, (3 << 20) + 5000), 4);
	close(fd);

	assert_int_equal(sf_open(path, false, &f), 0);
	assert_int_equal(sf_all_ranges(f, &mine), 0);
	assert_int_equal(read_filefrag(path, ff, SPARSE_BLOCKS, &n), 0);
	assert_true(n > 0);
	assert_int_equal(sf_extents_to_ranges(ff, n, sf_align(f), &theirs,
					      NULL), 0);
	expect_well_formed(&mine);
	assert_int_equal(mine.count, theirs.count);
	for (size_t i = 0; i < mine.count; i++) {
		assert_true(mine.r[i].sector_offset == theirs.r[i].sector_offset);
		assert_true(mine.r[i].sector_count == theirs.r[i].sector_count);
	}
	assert_true(mine.usable_sectors >= (3 << 20) / 512);
	sf_close(f);
	sf_ranges_free(&mine);
	sf_ranges_free(&theirs);
}

static void test_empty_file_has_no_extents(void **state)
{
	struct fiemap_extent *ext = (void *)1;
	char path[128];
	size_t n = 99;
	int fd;

	(void)state;
	fd = open_new("empty", path, sizeof(path));
	assert_true(fd >= 0);
	assert_int_equal(sf_fiemap_read(fd, &ext, &n), 0);
	assert_int_equal(n, 0);
	assert_null(ext);
	close(fd);
}

static void test_fiemap_unsupported_on_tmpfs(void **state)
{
	char path[] = "/dev/shm/sf-fiemap-XXXXXX";
	struct fiemap_extent *ext = NULL;
	size_t n = 0;
	int fd, ret;

	(void)state;
	fd = mkstemp(path);
	if (fd < 0)
		skip();
	unlink(path);
	assert_int_equal(ftruncate(fd, 4096), 0);
	ret = sf_fiemap_read(fd, &ext, &n);
	close(fd);
	if (ret == 0)
		skip();		/* a tmpfs with FIEMAP: nothing to check */
	assert_int_equal(ret, -EOPNOTSUPP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fiemap_matches_fibmap),
		cmocka_unit_test(test_all_ranges_match_filefrag),
		cmocka_unit_test(test_empty_file_has_no_extents),
		cmocka_unit_test(test_fiemap_unsupported_on_tmpfs),
	};

	return cmocka_run_group_tests_name("fiemap", tests, make_tmpdir,
					   remove_tmpdir);
}
