/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_TRACKER_H
#define __BLK_SNAP_TRACKER_H

#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/list.h>
#include <linux/rwsem.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/mempool.h>

struct cbt_map;
struct diff_area;
struct blk_snap_cbt_info;
struct blk_snap_block_range;

/**
 * struct tracker - Tracker for a block device.
 *
 * @flt:
 *	The block device filter. Its reference counter protects the
 *	structure from being released while a bio or an ioctl uses it.
 * @link:
 *	List header.
 * @dev_id:
 *	Original block device ID.
 * @in_snapshot:
 *	Set while the device belongs to a snapshot, taken or not: a device
 *	can be in one snapshot only, and its tracker cannot be removed.
 * @snapshot_is_taken:
 *	Indicates that a snapshot was taken for the device whose bios are
 *	handled by this tracker.
 * @cow_in_flight:
 *	Writes in copy-on-write, some of which wait for their copies without
 *	tracker_submit_lock: the snapshot's release waits for them before it
 *	puts @diff_area (tracker_wait_for_writes()).
 * @writes_lock:
 *	Protects @writes, @write_epoch and @writes_before_take; taken in
 *	the completion of a write, with interrupts off.
 * @writes:
 *	Writes that passed the filter and have not completed
 *	(struct tracker_write).
 * @write_epoch:
 *	Raised by each take: a write of an older epoch was admitted
 *	before the latest take.
 * @writes_before_take:
 *	How many of @writes are of an older epoch: the take waits on
 *	@writes_wait until none is left.
 * @writes_wait:
 *	Woken when @writes_before_take reaches zero.
 * @write_pool:
 *	The records of this tracker's writes (struct tracker_write).
 * @cbt_map:
 *	Pointer to a change block tracker map.
 * @diff_area:
 *	Pointer to a difference area.
 *
 * The main goal of the tracker is to handle bios. The tracker detectes
 * the range of sectors that will change and transmits them to the CBT map
 * and to the difference area.
 */
struct tracker {
	struct bdev_filter flt;
	struct list_head link;
	dev_t dev_id;

	atomic_t in_snapshot;
	atomic_t snapshot_is_taken;
	atomic_t cow_in_flight;

	/* protects writes, write_epoch and writes_before_take */
	spinlock_t writes_lock;
	struct list_head writes;
	unsigned int write_epoch;
	unsigned long writes_before_take;
	wait_queue_head_t writes_wait;
	mempool_t write_pool;
	/*
	 * Set by the holder of the in_snapshot claim; writes_held is also
	 * read by the filter.
	 */
	bool untracked_writes_drained;
	bool writes_held;

	struct cbt_map *cbt_map;
	struct diff_area *diff_area;
};

void tracker_lock(void);
void tracker_unlock(void);
void tracker_wait_for_writes(struct tracker *tracker);
int tracker_wait_for_writes_before_take(struct tracker *tracker);

static inline void tracker_put(struct tracker *tracker)
{
	if (likely(tracker))
		bdev_filter_put(&tracker->flt);
}

int tracker_init(void);
void tracker_done(void);

/*
 * The tracker of @dev_id, made and attached if there is none, claimed for
 * a snapshot (in_snapshot): -EBUSY if it is claimed already (by another
 * snapshot, or by a removal). Once per tracker the claim waits for the
 * writes that no filter saw (-EINTR, -ETIMEDOUT: see tracker.c).
 */
struct tracker *tracker_create_or_get(dev_t dev_id);
int tracker_remove(dev_t dev_id);
int tracker_collect(int max_count, struct blk_snap_cbt_info *cbt_info,
		    int *pcount);
int tracker_read_cbt_bitmap(dev_t dev_id, unsigned int offset, size_t length,
			    char __user *user_buff);
int tracker_mark_dirty_blocks(dev_t dev_id,
			      struct blk_snap_block_range *block_ranges,
			      unsigned int count);

int tracker_take_snapshot(struct tracker *tracker);
void tracker_release_snapshot(struct tracker *tracker);

#endif /* __BLK_SNAP_TRACKER_H */
