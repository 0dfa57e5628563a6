// SPDX-License-Identifier: GPL-2.0
/* ranges: the sector ranges a file would give the kernel (no module needed). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cmds.h"
#include "common.h"
#include "storagefile.h"

static const char ranges_help[] =
	"Usage:\n"
	" blksnap-storage ranges [options] FILE\n"
	"\n"
	"Print the sector ranges FILE's space would be given to the kernel as,\n"
	"one per line:  MAJ:MIN START COUNT  (512-byte sectors of the device\n"
	"MAJ:MIN; physically adjacent extents merged, then each run shrunk\n"
	"inward to 4 KiB or the device's logical block size).  Needs no module;\n"
	"compare with 'filefrag -v -b512 FILE'.\n"
	"\n"
	"Options:\n"
	" -h, --help  display this help\n";

static const struct option ranges_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int explain(const char *path, int fd, int ret, uint32_t flag)
{
	const char *fs = NULL;

	if (ret == -EOPNOTSUPP && sf_check_fs(fd, &fs, NULL) == -EOPNOTSUPP)
		report(path, "%s cannot hold difference storage (extents are "
		       "not physical sectors)", fs ? fs : "this filesystem");
	else if ((ret == -EOPNOTSUPP || ret == -EAGAIN) && flag)
		report(path, "has a %s extent: its data is not plain sectors "
		       "of the device", sf_extent_flag_name(flag));
	else
		fail(path, ret);
	return EXIT_RUNTIME;
}

/*
 * Open @path for reading only if it is a regular file, without following
 * a symbolic link: opening a device node can have effects of its own (a
 * watchdog arms, a tape rewinds), so the name is looked at with O_PATH
 * first and reopened through /proc/self/fd only once it is known to be a
 * regular file, and the reopened file must be the same inode. Reports
 * and returns -1 on failure.
 */
static int open_regular(const char *path, struct stat *st)
{
	char proc[64];
	struct stat again;
	int pfd, fd;

	pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0) {
		fail(path, -errno);
		return -1;
	}
	if (fstat(pfd, st) < 0) {
		fail(path, -errno);
		close(pfd);
		return -1;
	}
	if (S_ISLNK(st->st_mode)) {
		report(path, "is a symbolic link: give the path of the file "
		       "itself");
		close(pfd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		report(path, "not a regular file");
		close(pfd);
		return -1;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		fail(path, -errno);
		close(pfd);
		return -1;
	}
	close(pfd);
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev ||
	    again.st_ino != st->st_ino || !S_ISREG(again.st_mode)) {
		report(path, "changed while it was being opened: try again");
		close(fd);
		return -1;
	}
	return fd;
}

/* FIEMAP -> aligned ranges; @ranges replaced. */
static int file_ranges(int fd, dev_t dev, struct sf_ranges *ranges,
		       uint32_t *flag)
{
	struct fiemap_extent *ext = NULL;
	uint32_t align;
	size_t n = 0;
	int ret = sf_check_fs(fd, NULL, NULL);

	if (!ret)
		ret = sf_align_bytes(dev, &align);
	if (!ret)
		ret = sf_fiemap_read(fd, &ext, &n);
	if (!ret)
		ret = sf_extents_to_ranges(ext, n, align, ranges, flag);
	free(ext);
	return ret;
}

int cmd_ranges(int argc, char **argv)
{
	struct sf_ranges ranges = SF_RANGES_INIT;
	const char *path;
	uint32_t flag = 0;
	struct stat st;
	int c, fd, ret;

	optind = 0;
	while ((c = next_option(argc, argv, ":h", ranges_options)) != -1) {
		if (c == 'h')
			return show_help(ranges_help);
		return EXIT_USAGE;
	}
	if (argc - optind != 1)
		return usage_error(argc == optind ? "FILE expected"
						  : "too many arguments");
	path = argv[optind];
	fd = open_regular(path, &st);
	if (fd < 0)
		return EXIT_RUNTIME;
	ret = file_ranges(fd, st.st_dev, &ranges, &flag);
	if (ret) {
		explain(path, fd, ret, flag);
	} else {
		for (size_t i = 0; i < ranges.count; i++)
			printf("%u:%u %llu %llu\n", major(st.st_dev),
			       minor(st.st_dev),
			       (unsigned long long)ranges.r[i].sector_offset,
			       (unsigned long long)ranges.r[i].sector_count);
	}
	sf_ranges_free(&ranges);
	close(fd);
	return ret ? EXIT_RUNTIME : EXIT_OK;
}
