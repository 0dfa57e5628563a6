/* SPDX-License-Identifier: GPL-2.0 */
/* Device arguments: /dev paths and mount points to dev_t, and back. */
#ifndef BLKSNAP_CLI_DEVICES_H
#define BLKSNAP_CLI_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * device_resolve() - the block device an argument names.
 * @arg:   a block device node (its st_rdev) or a mount point (its st_dev:
 *         the device the filesystem lives on).
 * @dev:   out.
 * @cause: out, a static explanation when the errno alone would mislead.
 * Return: 0 or -errno.
 */
int device_resolve(const char *arg, dev_t *dev, const char **cause);

/* "/dev/sda1" from sysfs (DEVNAME), or "MAJ:MIN" if sysfs does not know. */
void device_name(dev_t dev, char *buf, size_t len);

/*
 * device_is_zoned() - is @dev (or, for a partition, its disk) zoned?
 * Sysfs says so; where it cannot be read the answer is false, and the
 * kernel's own check refuses the device.
 */
bool device_is_zoned(dev_t dev);

/*
 * device_partition() - where partition @dev lies on its whole disk.
 * @whole:   out, the disk.
 * @start:   out, its first sector on @whole (512-byte units).
 * @sectors: out, its size in the same units.
 * Return: 0, -ENOENT if @dev is not a partition, or -errno.
 */
int device_partition(dev_t dev, dev_t *whole, uint64_t *start,
		     uint64_t *sectors);

/* "MAJ:MIN" */
void device_number(dev_t dev, char *buf, size_t len);

/* "/dev/blksnap-imageN", N being the image's minor. */
void image_path(dev_t image, char *buf, size_t len);

#endif
