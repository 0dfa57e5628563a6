/* SPDX-License-Identifier: GPL-2.0 */
/*
 * blksnap_ctl - thin client of the /dev/blksnap ioctl interface.
 *
 * Every function returns 0 (or a descriptor) or a negative errno; none
 * prints or exits.  Arrays returned through pointers are malloc'ed and
 * belong to the caller.
 */
#ifndef BLKSNAP_CTL_H
#define BLKSNAP_CTL_H

#include <assert.h>	/* <linux/blksnap.h> uses static_assert */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/blksnap.h>

/* The kernel refuses longer lists with -E2BIG; bsc_append_storage splits. */
#define BSC_MAX_RANGES_PER_CALL	262144u

/* Length of a UUID in text form, without the terminating NUL. */
#define BSC_UUID_LEN	36

/* open(BLK_SNAP_CTL): the descriptor, or -errno (-ENOENT: not loaded). */
int bsc_open(void);

int bsc_version(int ctl, struct blk_snap_version *version);

int bsc_snapshot_create(int ctl, const dev_t *devs, unsigned int count,
			struct blk_snap_uuid *id);
int bsc_snapshot_destroy(int ctl, const struct blk_snap_uuid *id);
int bsc_snapshot_take(int ctl, const struct blk_snap_uuid *id);

/*
 * Append @count ranges on device @dev, in calls of at most
 * BSC_MAX_RANGES_PER_CALL.  *@appended (may be NULL) tells how many ranges
 * the kernel accepted before a failure: those can no longer be taken back.
 */
int bsc_append_storage(int ctl, const struct blk_snap_uuid *id, dev_t dev,
		       const struct blk_snap_block_range *ranges, size_t count,
		       size_t *appended);

/*
 * Append the file open as @fd (read-only, and nobody may have it open for
 * writing) with @count ranges of its blocks, in one call: the kernel then
 * holds the file until the snapshot is gone.  @count 0 holds it without
 * using any block.  -E2BIG over BSC_MAX_RANGES_PER_CALL ranges.
 */
int bsc_append_file(int ctl, const struct blk_snap_uuid *id, int fd,
		    const struct blk_snap_block_range *ranges, size_t count);

/* All snapshot ids; *@ids is NULL when *@count is 0. */
int bsc_snapshot_collect(int ctl, struct blk_snap_uuid **ids,
			 unsigned int *count);

/* Original and image devices of a snapshot (-ENODEV: not taken yet). */
int bsc_collect_images(int ctl, const struct blk_snap_uuid *id,
		       struct blk_snap_image_info **images,
		       unsigned int *count);

/* 0 with @event filled; -ENOENT on timeout, -EINTR, -ESRCH (destroyed). */
int bsc_wait_event(int ctl, const struct blk_snap_uuid *id,
		   uint32_t timeout_ms, struct blk_snap_snapshot_event *event);

/* Change-tracking state of every tracked device. */
int bsc_tracker_collect(int ctl, struct blk_snap_cbt_info **info,
			unsigned int *count);
int bsc_read_cbt_map(int ctl, dev_t dev, uint32_t offset, uint32_t length,
		     uint8_t *buf);
int bsc_mark_dirty(int ctl, dev_t dev,
		   const struct blk_snap_block_range *ranges, size_t count);
int bsc_tracker_remove(int ctl, dev_t dev);

/* Conversions between dev_t and the interface's {mj, mn}. */
struct blk_snap_dev bsc_dev(dev_t dev);
dev_t bsc_dev_t(struct blk_snap_dev dev);

/* Lower-case standard form, @text has room for BSC_UUID_LEN + 1. */
void bsc_uuid_format(const struct blk_snap_uuid *id, char *text);
/* Accepts the standard form, either case.  Return: 0 or -EINVAL. */
int bsc_uuid_parse(const char *text, struct blk_snap_uuid *id);

#endif
