// SPDX-License-Identifier: GPL-2.0
/*
 * sfgrow: the host part of `make bench`. Times what `blksnap-storage add
 * FILE SIZE` does before its ioctl (sf_open + sf_grow: fallocate, fsync,
 * FIEMAP, range building), which needs no module, against a baseline
 * measured in the same run: open + fallocate(SIZE) + fsync, what
 * `fallocate -l SIZE` costs. Each repetition uses fresh files in DIR,
 * deleted afterwards; the two are alternated so that drift hits both.
 *
 * usage: sfgrow DIR SIZE REPS
 * prints: BENCH host.fallocate.rN.s SECONDS, BENCH host.sf_grow.rN.s
 *         SECONDS, BENCH host.sf_grow.rN.ranges N, BENCH host.sf_grow.rN.extents N,
 *         INFO host.fs TYPE
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fiemap.h>

#include "storagefile.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what, int err)
{
	fprintf(stderr, "sfgrow: %s: %s\n", what, strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	char fa[4096], sf[4096];
	const char *fsname = "?";
	uint64_t size;
	int reps, r;

	if (argc != 4 || sf_parse_size(argv[2], &size) || (reps = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: sfgrow DIR SIZE REPS\n");
		return 2;
	}
	snprintf(fa, sizeof(fa), "%s/sfgrow-bench.fallocate", argv[1]);
	snprintf(sf, sizeof(sf), "%s/sfgrow-bench.storage", argv[1]);
	if (sf_check_path_fs(argv[1], &fsname, NULL) == 0)
		printf("INFO host.fs %s\n", fsname);
	else
		printf("INFO host.fs %s (refused by storagefile)\n", fsname);

	for (r = 1; r <= reps; r++) {
		struct sf_ranges rs = SF_RANGES_INIT;
		struct fiemap_extent *ext = NULL;
		struct sf_file *f;
		size_t n = 0;
		double t0, t1;
		int fd, ret;

		unlink(fa);
		unlink(sf);
		sync();

		t0 = now();
		fd = open(fa, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0)
			return die(fa, errno);
		if (fallocate(fd, 0, 0, (off_t)size) || fsync(fd))
			return die("fallocate", errno);
		t1 = now();
		close(fd);
		unlink(fa);
		sync();
		printf("BENCH host.fallocate.r%d.s %.6f\n", r, t1 - t0);

		t0 = now();
		ret = sf_open(sf, true, &f);
		if (ret)
			return die("sf_open", -ret);
		ret = sf_grow(f, size, &rs);
		t1 = now();
		if (ret)
			return die("sf_grow", -ret);
		printf("BENCH host.sf_grow.r%d.s %.6f\n", r, t1 - t0);
		printf("BENCH host.sf_grow.r%d.ranges %zu\n", r, rs.count);
		printf("BENCH host.sf_grow.r%d.usable_sectors %" PRIu64 "\n", r, rs.usable_sectors);
		if (!sf_fiemap_read(sf_fd(f), &ext, &n))
			printf("BENCH host.sf_grow.r%d.extents %zu\n", r, n);
		free(ext);
		sf_ranges_free(&rs);
		sf_close(f);
		unlink(sf);
		fflush(stdout);
	}
	return 0;
}
