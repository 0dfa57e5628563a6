// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-sysfs: " fmt

#include <linux/device.h>
#include <linux/sysfs.h>
#include "sysfs.h"
#include "snapimage.h"
#include "version.h"

/*
 * Attributes of the control device, in /sys/class/misc/blksnap/:
 * "major" is the major number of the snapshot image block devices, so that
 * a tool can tell an image from an original device; "version" is the
 * module version, the same as IOCTL_BLK_SNAP_VERSION reports.
 */
static ssize_t major_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%d\n", snapimage_major());
}
static DEVICE_ATTR_RO(major);

static ssize_t version_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", VERSION_STR);
}
static DEVICE_ATTR_RO(version);

static struct attribute *blk_snap_attrs[] = {
	&dev_attr_major.attr,
	&dev_attr_version.attr,
	NULL,
};

static const struct attribute_group blk_snap_attr_group = {
	.attrs = blk_snap_attrs,
};

const struct attribute_group *sysfs_attr_groups[] = {
	&blk_snap_attr_group,
	NULL,
};
