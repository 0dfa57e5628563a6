/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_SYSFS_H
#define __BLK_SNAP_SYSFS_H

#include <linux/sysfs.h>

extern const struct attribute_group *sysfs_attr_groups[];
#endif /* __BLK_SNAP_SYSFS_H */
