/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Storage growth on a device whose snapshot is already taken may receive
 * blocks freed since the take, whose old content the snapshot image still
 * shows.  This keeps only the sectors that were free at take time, as the
 * image's own filesystem says.
 */
#ifndef BLKSNAP_CLI_TAKE_FILTER_H
#define BLKSNAP_CLI_TAKE_FILTER_H

#include <sys/types.h>

#include "storagefile.h"

/*
 * free_at_take() - the part of @ranges that was free when the snapshot of
 *	their device was taken.
 * @image:         the snapshot image of that device, or of its whole disk.
 * @part_start:    where the device starts in @image (sectors; a partition
 *                 of the snapshotted disk), else 0.
 * @part_sectors:  its size, or 0 for all of @image.
 * @fs_name:       its filesystem, as sf_check_fs() names it ("ext4", "xfs").
 * @ranges:        candidate ranges on the original device.
 * @align_sectors: alignment the result must keep.
 * @out:           out, replaced: the usable ranges.
 * @withheld:      out, sectors of @ranges in use at take time.
 * @unaligned:     out, free sectors of @ranges lost to alignment.
 * @stage:         out on failure: the step that failed, e.g. "mount".
 *
 * The image (a partition's part of it through a read-only loop device) is
 * mounted read-only (ext4: noload; xfs: norecovery,nouuid) in
 * a child process inside its own mount namespace, so no mount outlives us
 * or is seen by anyone else, even if we are killed half-way.
 *
 * Return: 0 or -errno.
 */
int free_at_take(dev_t image, uint64_t part_start, uint64_t part_sectors,
		 const char *fs_name, const struct sf_ranges *ranges,
		 uint64_t align_sectors, struct sf_ranges *out,
		 uint64_t *withheld, uint64_t *unaligned, const char **stage);

#endif
