// SPDX-License-Identifier: GPL-2.0
/* Storage on a device-mapper, md or loop device stacked on a snapshotted disk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/dm-ioctl.h>

#include "stacked.h"

/* Deeper than any real stack; ends a loop in a corrupt sysfs. */
#define MAX_DEPTH	16
#define DM_BUF_SIZE	(64 * 1024)

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ret = 0;

	buf[0] = '\0';
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		ret = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ret;
}

static int read_dev(const char *path, dev_t *dev)
{
	char buf[32];
	unsigned int maj, min;
	int ret = read_line(path, buf, sizeof(buf));

	if (ret)
		return ret;
	if (sscanf(buf, "%u:%u", &maj, &min) != 2)
		return -EINVAL;
	*dev = makedev(maj, min);
	return 0;
}

/* The sysfs directory of @dev, resolved: /sys/devices/.../block/NAME. */
static int sysfs_dir(dev_t dev, char *buf)
{
	char link[64];

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev),
		 minor(dev));
	if (!realpath(link, buf))
		return -errno;
	return 0;
}

static bool is_orig(dev_t dev, const char *dir, const dev_t *origs,
		    unsigned int count)
{
	char path[PATH_MAX + 16];
	dev_t whole = 0;

	/* A partition's writes pass its whole disk's filter too. */
	snprintf(path, sizeof(path), "%s/partition", dir);
	if (access(path, F_OK) == 0) {
		snprintf(path, sizeof(path), "%s/../dev", dir);
		if (read_dev(path, &whole))
			whole = 0;
	}
	for (unsigned int i = 0; i < count; i++)
		if (origs[i] == dev || (whole && origs[i] == whole))
			return true;
	return false;
}

/*
 * The table of device-mapper device @dev: an allocated DM_TABLE_STATUS
 * reply with every target in it (the buffer is grown until the reply
 * fits: a fragmented LV has many targets).
 */
static int dm_table(dev_t dev, struct dm_ioctl **out)
{
	size_t size = DM_BUF_SIZE;
	int fd, ret;

	fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		struct dm_ioctl *dmi = calloc(1, size);

		if (!dmi) {
			ret = -ENOMEM;
			break;
		}
		dmi->version[0] = DM_VERSION_MAJOR;
		dmi->data_size = (uint32_t)size;
		dmi->data_start = sizeof(*dmi);
		dmi->dev = makedev(major(dev), minor(dev));
		dmi->flags = DM_STATUS_TABLE_FLAG;
		if (ioctl(fd, DM_TABLE_STATUS, dmi) < 0) {
			ret = -errno;
			free(dmi);
			break;
		}
		if (!(dmi->flags & DM_BUFFER_FULL_FLAG)) {
			if (dmi->data_size > size)	/* never past our buffer */
				dmi->data_size = (uint32_t)size;
			*out = dmi;
			ret = 0;
			break;
		}
		free(dmi);
		if (size >= (size_t)64 << 20) {	/* no real table is this big */
			ret = -E2BIG;
			break;
		}
		size *= 4;
	}
	close(fd);
	return ret;
}

/*
 * Does every target of device-mapper device @dev pass the data pages on?
 * 1 yes, 0 no (@what names the first target that does not), -errno.
 */
static int dm_passes_pages(dev_t dev, char *what, size_t len)
{
	struct dm_ioctl *dmi = NULL;
	struct dm_target_spec *spec;
	size_t next = 0;
	int ret = dm_table(dev, &dmi);

	if (ret) {
		snprintf(what, len, "device-mapper (its table cannot be read: %s)",
			 strerror(-ret));
		return ret;
	}
	if (!dmi->target_count) {
		snprintf(what, len, "device-mapper (no table)");
		free(dmi);
		return 1;
	}
	snprintf(what, len, "device-mapper linear/striped");
	for (unsigned int i = 0; i < dmi->target_count; i++) {
		char type[sizeof(spec->target_type) + 1];

		if (dmi->data_start + next + sizeof(*spec) > dmi->data_size) {
			snprintf(what, len, "device-mapper (its table cannot "
				 "be read: %s)", strerror(EPROTO));
			ret = -EPROTO;
			break;
		}
		spec = (struct dm_target_spec *)((char *)dmi +
						 dmi->data_start + next);
		memcpy(type, spec->target_type, sizeof(spec->target_type));
		type[sizeof(spec->target_type)] = '\0';
		if (strcmp(type, "linear") && strcmp(type, "striped")) {
			snprintf(what, len, "device-mapper %s", type);
			ret = 0;
			break;
		}
		ret = 1;
		next = spec->next;	/* from the first spec, for STATUS */
	}
	free(dmi);
	return ret;
}

/*
 * Does the layer @dir (device @dev) pass the data pages of a write on to
 * the devices below it? 1 yes, 0 no; @what names the layer either way.
 * A stacking driver this tool does not know (bcache, ...) is taken to
 * write pages of its own.
 */
static int passes_pages(dev_t dev, const char *dir, char *what, size_t len)
{
	char path[PATH_MAX + 16], buf[256];
	int ret;

	snprintf(path, sizeof(path), "%s/dm", dir);
	if (access(path, F_OK) == 0)
		return dm_passes_pages(dev, what, len);
	snprintf(path, sizeof(path), "%s/md/level", dir);
	if (access(path, F_OK) == 0) {
		ret = read_line(path, buf, sizeof(buf));
		if (ret) {
			snprintf(what, len, "md (its level cannot be read: %s)",
				 strerror(-ret));
			return ret;
		}
		snprintf(what, len, "md %s", buf[0] ? buf : "(no level)");
		return !strcmp(buf, "raid0") || !strcmp(buf, "linear");
	}
	snprintf(what, len, "a stacking driver this tool does not know");
	return 0;
}

static int walk(dev_t dev, const dev_t *origs, unsigned int count,
		const char *unsafe, int depth, const char *noun, char *why,
		size_t len);

/*
 * The next device in the slaves/ directory @d that sysfs knows: its name
 * (valid until the next call), number and sysfs directory; NULL at the end.
 */
static const char *next_slave(DIR *d, dev_t *slave, char *sdir)
{
	char path[PATH_MAX + 300];
	struct dirent *de;

	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s/dev",
			 de->d_name);
		if (!read_dev(path, slave) && !sysfs_dir(*slave, sdir))
			return de->d_name;
	}
	return NULL;
}

static int refuse(char *why, size_t len, const char *unsafe,
		  const char *below, const char *noun)
{
	snprintf(why, len, "it is on %s, stacked on %s, %s: its writes there "
		 "would be copied into the storage itself. Put the storage on "
		 "another disk, or on a partition or a plain (linear) LVM "
		 "volume", unsafe, below, noun);
	return -EXDEV;
}

/*
 * Loop device @name (sysfs directory @dir): its writes are page-cache pages
 * of its backing file, written back by the file system that holds the
 * file, so the device that file is on is below a layer with pages of its
 * own. A backing file that cannot be looked at is refused.
 */
static int walk_loop(const char *name, const char *dir, const dev_t *origs,
		     unsigned int count, int depth, const char *noun,
		     char *why, size_t len)
{
	char path[PATH_MAX + 32], file[PATH_MAX], layer[2 * PATH_MAX];
	char bdir[PATH_MAX], below[64];
	struct stat st;
	dev_t bdev;
	int ret;

	snprintf(path, sizeof(path), "%s/loop/backing_file", dir);
	ret = read_line(path, file, sizeof(file));
	if (!ret && stat(file, &st) < 0)
		ret = -errno;
	if (ret) {
		snprintf(why, len, "it is on %s, a loop device whose backing "
			 "file %s cannot be checked (%s): whether it is on %s "
			 "is unknown. Put the storage on a file system that is "
			 "not on a loop device", name, file[0] ? file : "(none)",
			 strerror(-ret), noun);
		return -EXDEV;
	}
	/* losetup of a block device node: its writes are that device's. */
	bdev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	snprintf(layer, sizeof(layer), "%s (a loop device over %s)", name,
		 file);
	snprintf(below, sizeof(below), "%u:%u", major(bdev), minor(bdev));
	if (sysfs_dir(bdev, bdir)) {
		/* tmpfs, a btrfs subvolume, ...: not a block device. */
		for (unsigned int i = 0; i < count; i++)
			if (origs[i] == bdev)
				return refuse(why, len, layer, below, noun);
		return 0;
	}
	if (is_orig(bdev, bdir, origs, count))
		return refuse(why, len, layer, strrchr(bdir, '/') + 1, noun);
	return walk(bdev, origs, count, layer, depth + 1, noun, why, len);
}

/*
 * @unsafe: the first layer above @dev that writes pages of its own, as
 * "NAME (what it is)", or NULL.
 */
static int walk(dev_t dev, const dev_t *origs, unsigned int count,
		const char *unsafe, int depth, const char *noun, char *why,
		size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX + 300], what[300];
	char sdir[PATH_MAX], layer[PATH_MAX + 310];
	const char *name;
	dev_t slave;
	DIR *d;
	int ret = 0;

	if (depth > MAX_DEPTH || sysfs_dir(dev, dir))
		return 0;	/* not a block device sysfs knows: no stack */
	/* A partition's writes are its whole disk's (a partitioned loop). */
	snprintf(path, sizeof(path), "%s/partition", dir);
	if (access(path, F_OK) == 0) {
		dev_t whole;

		snprintf(path, sizeof(path), "%s/../dev", dir);
		if (read_dev(path, &whole))
			return 0;
		return walk(whole, origs, count, unsafe, depth + 1, noun, why,
			    len);
	}
	snprintf(path, sizeof(path), "%s/loop/backing_file", dir);
	if (access(path, F_OK) == 0)
		return walk_loop(strrchr(dir, '/') + 1, dir, origs, count,
				 depth, noun, why, len);
	snprintf(path, sizeof(path), "%s/slaves", dir);
	d = opendir(path);
	if (!d)
		return 0;
	if (!unsafe && passes_pages(dev, dir, what, sizeof(what)) <= 0) {
		snprintf(layer, sizeof(layer), "%s (%s)", strrchr(dir, '/') + 1,
			 what);
		unsafe = layer;
	}
	while (!ret && (name = next_slave(d, &slave, sdir))) {
		if (unsafe && is_orig(slave, sdir, origs, count)) {
			ret = refuse(why, len, unsafe, name, noun);
			break;
		}
		ret = walk(slave, origs, count, unsafe, depth + 1, noun, why,
			   len);
	}
	closedir(d);
	return ret;
}

/* Does a device below @dev (at any depth) belong to @origs? */
static bool reaches(dev_t dev, const dev_t *origs, unsigned int count,
		    int depth)
{
	char dir[PATH_MAX], path[PATH_MAX + 300], sdir[PATH_MAX];
	bool found = false;
	dev_t slave;
	DIR *d;

	if (depth > MAX_DEPTH || sysfs_dir(dev, dir))
		return false;
	snprintf(path, sizeof(path), "%s/slaves", dir);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && next_slave(d, &slave, sdir))
		found = is_orig(slave, sdir, origs, count) ||
			reaches(slave, origs, count, depth + 1);
	closedir(d);
	return found;
}

bool stacked_on_origs(dev_t storage, const dev_t *origs, unsigned int count)
{
	return reaches(storage, origs, count, 0);
}

int stacked_storage_check(dev_t storage, const dev_t *origs,
			  unsigned int count, const char *noun, char *why,
			  size_t len)
{
	return walk(storage, origs, count, NULL, 0, noun, why, len);
}
