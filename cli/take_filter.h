/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Storage growth on a device whose snapshot is already taken may receive
 * blocks freed since the take, whose old content the snapshot image still
 * shows.  This keeps only the sectors that were free at take time, as the
 * image's own filesystem says: read once, right after the take, and saved
 * in the state directory, so that growths need not read the image.
 */
#ifndef BLKSNAP_CLI_TAKE_FILTER_H
#define BLKSNAP_CLI_TAKE_FILTER_H

#include <sys/types.h>

#include <linux/blksnap.h>

#include "storage.h"
#include "storagefile.h"

/*
 * Where the take-time content of a device can be read: its own image, or
 * the part of its whole disk's image it lies on.  The snapshot not taken
 * yet, or the device not in it: nothing to protect, image 0.
 */
struct take_view {
	dev_t image;
	uint64_t start, sectors;	/* sectors 0: the whole image */
};

/*
 * take_view_find() - the take view of @dev (a storage file's device) in
 *	snapshot @id.
 *
 * Return: 0, or -errno with @why (WHY_LEN) set: -EXDEV for a device
 * stacked (device-mapper, md) on a disk of the taken snapshot, whose
 * sectors cannot be told apart.
 */
int take_view_find(int ctl, const struct blk_snap_uuid *id, dev_t dev,
		   struct take_view *v, char *why);

/*
 * free_at_take() - the part of @ranges that was free when the snapshot
 *	was taken.
 * @id:            the snapshot.
 * @dev:           the device of @ranges (where the storage's file system
 *                 is).
 * @v:             its take view (v->image set).
 * @fs_name:       its filesystem, as sf_check_fs() names it ("ext4", "xfs").
 * @ranges:        candidate ranges on @dev.
 * @align_sectors: alignment the result must keep.
 * @out:           out, replaced: the usable ranges.
 * @withheld:      out, sectors of @ranges in use at take time.
 * @unaligned:     out, free sectors of @ranges lost to alignment.
 * @stage:         out on failure: the step that failed, e.g. "mount".
 *
 * Uses the map take_maps_save() saved, with no read of the image: a
 * growth comes when the storage has run out and writers wait for it.
 * With none saved for @dev (a device that held no storage at take, a
 * snapshot taken by an older blksnap-storage), or one that cannot be
 * trusted (said in one line), the map is read from the image as
 * take_maps_save() does, and saved for the next growths.
 *
 * Return: 0 or -errno.
 */
int free_at_take(const struct blk_snap_uuid *id, dev_t dev,
		 const struct take_view *v, const char *fs_name,
		 const struct sf_ranges *ranges, uint64_t align_sectors,
		 struct sf_ranges *out, uint64_t *withheld,
		 uint64_t *unaligned, const char **stage);

/*
 * take_maps_save() - right after the take: for each device of the
 *	snapshot (or partition of a snapshotted disk) that holds recorded
 *	storage of @id, read which sectors its file system used at take
 *	time and save it in the state directory (state_takemap_save()).
 *
 * The image (a partition's part of it through a read-only loop device) is
 * mounted read-only (ext4: noload; xfs: norecovery,nouuid) in a child
 * process inside its own mount namespace, so no mount outlives us or is
 * seen by anyone else, even if we are killed half-way.
 *
 * A device whose map could not be saved is said in one line; its next
 * growth reads the image instead (free_at_take()).  A map too big for
 * the state directory (state_takemap_save()) is never saved: every
 * growth on that device reads the image.  The take itself is
 * not undone.
 *
 * It takes one mount and one GETFSMAP walk per device, seconds on a big
 * file system, after the take: SIGINT, SIGTERM, SIGHUP and SIGQUIT are
 * held back meanwhile (the process, and its mount child, would end with
 * the snapshot taken and its caller told it failed) and SIGPIPE is
 * ignored; the mask and SIGPIPE's disposition are given back after.
 * With @deferred NULL, a signal held back is delivered then, to the
 * caller's handlers; else it is taken off, the first one stored in
 * @deferred (0: none), for a caller whose only right answer now is
 * "taken".  A SIGKILL of the process kills the mount child too.
 *
 * Return: 0, or the last failure's -errno.
 */
int take_maps_save(int ctl, const struct blk_snap_uuid *id, int *deferred);

#endif
