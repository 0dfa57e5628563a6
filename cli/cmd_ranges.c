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
	/* O_NONBLOCK: a FIFO fails the regular-file check instead of hanging. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return fail(path, -errno);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		report(path, "not a regular file");
		return EXIT_RUNTIME;
	}
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
