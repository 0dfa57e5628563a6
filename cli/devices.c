// SPDX-License-Identifier: GPL-2.0
/* Device arguments: /dev paths and mount points to dev_t, and back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <assert.h>
#include <linux/blksnap.h>

#include "devices.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

/* 1 if @path is the root of a mount, 0 if not, -errno. */
static int is_mount_root(const char *path, const struct stat *st)
{
	struct statx stx;
	char parent[4096];
	struct stat pst;

	if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &stx) == 0 &&
	    (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return !!(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);

	/* Old kernels: a mount root's parent is on another device, or is
	 * itself (the root directory). */
	if (snprintf(parent, sizeof(parent), "%s/..", path) >= (int)sizeof(parent))
		return -ENAMETOOLONG;
	if (stat(parent, &pst) < 0)
		return -errno;
	return pst.st_dev != st->st_dev || pst.st_ino == st->st_ino;
}

static bool sysfs_knows(dev_t dev)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(dev),
		 minor(dev));
	return access(path, F_OK) == 0;
}

int device_resolve(const char *arg, dev_t *dev, const char **cause)
{
	struct stat st;
	int ret;

	*cause = NULL;
	if (stat(arg, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		*dev = st.st_rdev;
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		*cause = "not a block device or mount point";
		return -ENOTBLK;
	}
	ret = is_mount_root(arg, &st);
	if (ret < 0)
		return ret;
	if (!ret) {
		*cause = "not a mount point (give a mount point or a /dev node)";
		return -EINVAL;
	}
	/* tmpfs, overlayfs and friends have anonymous devices (major 0). */
	if (major(st.st_dev) == 0 || !sysfs_knows(st.st_dev)) {
		*cause = "mounted filesystem is not on a block device";
		return -ENOTBLK;
	}
	*dev = st.st_dev;
	return 0;
}

bool device_is_zoned(dev_t dev)
{
	/* A partition has no queue directory of its own: its disk's. */
	static const char *const where[] = { "queue/zoned", "../queue/zoned" };
	char path[96], buf[16];

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s",
			 major(dev), minor(dev), where[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			return false;
		buf[n] = '\0';
		return strncmp(buf, "none", 4) != 0;
	}
	return false;
}

/* The unsigned number in sysfs file @dir/@name. */
static int sysfs_u64(const char *dir, const char *name, uint64_t *val)
{
	char path[96], buf[32], *end;
	int fd, ret = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		ret = -errno;
	close(fd);
	if (ret)
		return ret;
	buf[n] = '\0';
	errno = 0;
	*val = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	return 0;
}

int device_partition(dev_t dev, dev_t *whole, uint64_t *start,
		     uint64_t *sectors)
{
	char dir[64], path[96], buf[32];
	unsigned int maj, min;
	uint64_t number;
	int fd, ret;
	ssize_t n;

	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u", major(dev),
		 minor(dev));
	ret = sysfs_u64(dir, "partition", &number);
	if (ret)
		return ret == -ENOENT ? -ENOENT : ret;
	ret = sysfs_u64(dir, "start", start);
	if (!ret)
		ret = sysfs_u64(dir, "size", sectors);
	if (ret)
		return ret;
	/* A partition's sysfs directory is inside its disk's. */
	snprintf(path, sizeof(path), "%s/../dev", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	buf[n] = '\0';
	if (sscanf(buf, "%u:%u", &maj, &min) != 2)
		return -EINVAL;
	*whole = makedev(maj, min);
	return 0;
}

void device_number(dev_t dev, char *buf, size_t len)
{
	snprintf(buf, len, "%u:%u", major(dev), minor(dev));
}

void device_name(dev_t dev, char *buf, size_t len)
{
	char path[64], line[256];
	FILE *f;

	device_number(dev, buf, len);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent",
		 major(dev), minor(dev));
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "/dev/%s", line + 8);
		break;
	}
	fclose(f);
}

void image_path(dev_t image, char *buf, size_t len)
{
	snprintf(buf, len, "/dev/%s%u", BLK_SNAP_IMAGE_NAME, minor(image));
}
