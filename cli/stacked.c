// SPDX-License-Identifier: GPL-2.0
/* Storage on a device-mapper or md device stacked on a snapshotted disk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
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

/* The target types of device-mapper device @dev, "linear,striped". */
static int dm_targets(dev_t dev, char *types, size_t len)
{
	struct dm_ioctl *dmi = calloc(1, DM_BUF_SIZE);
	struct dm_target_spec *spec;
	size_t used = 0;
	int fd, ret = 0;

	if (!dmi)
		return -ENOMEM;
	fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	dmi->version[0] = DM_VERSION_MAJOR;
	dmi->data_size = DM_BUF_SIZE;
	dmi->data_start = sizeof(*dmi);
	dmi->dev = makedev(major(dev), minor(dev));
	dmi->flags = DM_STATUS_TABLE_FLAG;
	if (ioctl(fd, DM_TABLE_STATUS, dmi) < 0)
		ret = -errno;
	else if (dmi->flags & DM_BUFFER_FULL_FLAG)
		ret = -E2BIG;
	close(fd);
	types[0] = '\0';
	for (unsigned int i = 0, next = 0; !ret && i < dmi->target_count; i++) {
		if (dmi->data_start + next + sizeof(*spec) > DM_BUF_SIZE) {
			ret = -EPROTO;
			break;
		}
		spec = (struct dm_target_spec *)((char *)dmi +
						 dmi->data_start + next);
		used += snprintf(types + used, used < len ? len - used : 0,
				 "%s%.*s", i ? "," : "",
				 (int)sizeof(spec->target_type),
				 spec->target_type);
		next = spec->next;
	}
out:
	free(dmi);
	return ret;
}

/*
 * Does the layer @dir (device @dev) pass the data pages of a write on to
 * the devices below it? 1 yes, 0 no; @what names the layer either way.
 */
static int passes_pages(dev_t dev, const char *dir, char *what, size_t len)
{
	char path[PATH_MAX + 16], buf[256];
	int ret;

	snprintf(path, sizeof(path), "%s/dm", dir);
	if (access(path, F_OK) == 0) {
		ret = dm_targets(dev, buf, sizeof(buf));
		if (ret) {
			snprintf(what, len, "device-mapper (its table cannot be read: %s)",
				 strerror(-ret));
			return ret;
		}
		snprintf(what, len, "device-mapper %s", buf[0] ? buf : "(no table)");
		for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
			if (strcmp(t, "linear") && strcmp(t, "striped"))
				return 0;
		return 1;
	}
	snprintf(path, sizeof(path), "%s/md/level", dir);
	if (access(path, F_OK) == 0) {
		ret = read_line(path, buf, sizeof(buf));
		if (ret) {
			snprintf(what, len, "md (its level cannot be read: %s)",
				 strerror(-ret));
			return ret;
		}
		snprintf(what, len, "md %s", buf);
		return !strcmp(buf, "raid0") || !strcmp(buf, "linear");
	}
	snprintf(what, len, "a block device");
	return 1;
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
	struct dirent *de;
	DIR *d;
	int ret = 0;

	if (depth > MAX_DEPTH || sysfs_dir(dev, dir))
		return 0;	/* not a block device sysfs knows: no stack */
	snprintf(path, sizeof(path), "%s/slaves", dir);
	d = opendir(path);
	if (!d)
		return 0;
	if (!unsafe && passes_pages(dev, dir, what, sizeof(what)) <= 0) {
		snprintf(layer, sizeof(layer), "%s (%s)", strrchr(dir, '/') + 1,
			 what);
		unsafe = layer;
	}
	while (!ret && (de = readdir(d))) {
		dev_t slave;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s/dev",
			 de->d_name);
		if (read_dev(path, &slave) || sysfs_dir(slave, sdir))
			continue;
		if (unsafe && is_orig(slave, sdir, origs, count)) {
			snprintf(why, len, "it is on %s, stacked on %s, %s: "
				 "its writes there would be copied into the "
				 "storage itself. Put the storage on another "
				 "disk, or on a partition or a plain (linear) "
				 "LVM volume", unsafe, de->d_name, noun);
			ret = -EXDEV;
			break;
		}
		ret = walk(slave, origs, count, unsafe, depth + 1, noun, why,
			   len);
	}
	closedir(d);
	return ret;
}

int stacked_storage_check(dev_t storage, const dev_t *origs,
			  unsigned int count, const char *noun, char *why,
			  size_t len)
{
	return walk(storage, origs, count, NULL, 0, noun, why, len);
}
