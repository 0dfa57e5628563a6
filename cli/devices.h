/* SPDX-License-Identifier: GPL-2.0 */
/* Device arguments: /dev paths and mount points to dev_t, and back. */
#ifndef BLKSNAP_CLI_DEVICES_H
#define BLKSNAP_CLI_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
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

/* "MAJ:MIN" */
void device_number(dev_t dev, char *buf, size_t len);

/* "/dev/blksnap-imageN", N being the image's minor. */
void image_path(dev_t image, char *buf, size_t len);

#endif
