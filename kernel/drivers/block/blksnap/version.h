/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_VERSION_H
#define __BLK_SNAP_VERSION_H

#define VERSION_MAJOR	1
#define VERSION_MINOR	0
#define VERSION_REVISION	0
#define VERSION_BUILD	0
#define VERSION_STR	"1.0.0.0"

#endif /* __BLK_SNAP_VERSION_H */
