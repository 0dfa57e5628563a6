/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_DIFF_STORAGE_H
#define __BLK_SNAP_DIFF_STORAGE_H

#include <linux/wait.h>
#include <linux/workqueue.h>
#include "event_queue.h"

struct blk_snap_block_range;
struct diff_region;
struct file;

/*
 * Goes on with a chunk that waited for storage (parked by its cache_link):
 * stores it in the storage appended, or fails it.
 */
typedef void (*diff_storage_resume_fn)(struct list_head *chunk_link);

/**
 * struct diff_storage - Difference storage.
 *
 * @kref:
 *	The reference counter.
 * @lock:
 *	Spinlock allows to guarantee the safety of linked lists.
 * @bdev_count:
 *	The number of devices in @storage_bdevs; each has its index, which
 *	packed places of stored chunks name it by (diff_storage_pack()).
 * @storage_bdevs:
 *	List of opened block devices. Blocks for storing snapshot data can be
 *	located on different block devices. So, all opened block devices are
 *	located in this list. Blocks on opened block devices are allocated for
 *	storing the chunks data.
 * @empty_blocks:
 *	List of empty blocks on storage. This list can be updated while
 *	holding a snapshot. This allows us to dynamically increase the
 *	storage size for these snapshots.
 * @storage_files:
 *	The files whose blocks were appended with diff_storage_append_file():
 *	held, and pinned, until the storage is freed.
 * @filled_blocks:
 *	List of filled blocks. When the blocks from the list of empty blocks are filled,
 *	we move them to the list of filled blocks.
 * @capacity:
 *	Total amount of available storage space.
 * @filled:
 *	The number of sectors already filled in.
 * @requested:
 *	The number of sectors already requested from user space.
 * @low_space_flag:
 *	The flag is set if the number of free regions available in the
 *	difference storage is less than the allowed minimum.
 * @overflow_flag:
 *	The request for a free region failed due to the absence of free
 *	regions in the difference storage.
 * @event_queue:
 *	A queue of events to pass events to user space. Diff storage and its
 *	owner can notify its snapshot about events like snapshot overflow,
 *	low free space and snapshot terminated.
 * @waiting_chunks:
 *	Chunks whose data is read and that wait for storage to be appended,
 *	linked by their cache_link (under @lock).
 * @resume_parked:
 *	Called by the wait work for each of @waiting_chunks when the wait
 *	ends (given to diff_storage_new()).
 * @waiting:
 *	The storage is out of space and copy-on-write waits for more, until
 *	@wait_deadline (jiffies) (under @lock; read without it by writers).
 * @wait_deadline:
 *	See @waiting.
 * @wait_resume:
 *	Storage was appended: the wait work resumes every waiting chunk
 *	(under @lock).
 * @wait_stopped:
 *	Set when the snapshot goes away: nothing waits any more.
 * @space_wq:
 *	Writers waiting for storage before they start more copies.
 * @wait_work:
 *	Resumes the waiting chunks when storage is appended, fails them at
 *	the deadline.
 *
 * The difference storage manages the regions of block devices that are used
 * to store the data of the original block devices in the snapshot.
 * The difference storage is created one per snapshot and is used to store
 * data from all the original snapshot block devices. At the same time, the
 * difference storage itself can contain regions on various block devices.
 */
/**
 * struct diff_storage_origin - An original device whose chunks the storage
 *	keeps, from its difference area's creation to its release.
 * @link:
 *	In &diff_storage->origins, under the append lock.
 * @unsaved:
 *	Does the range of @bdev (a disk or a partition) cover sectors of the
 *	origin whose data at take is not in the storage yet? Called under
 *	the append lock; may sleep.
 */
struct diff_storage_origin {
	struct list_head link;
	bool (*unsaved)(struct diff_storage_origin *origin,
			struct block_device *bdev, sector_t sector,
			sector_t count);
};

struct diff_storage {
	struct kref kref;
	/* in diff_storages; the list and @origins under the append lock */
	struct list_head link;
	struct list_head origins;
	/* protects the bdev and block lists, capacity and filled */
	spinlock_t lock;

	unsigned int bdev_count;
	struct list_head storage_bdevs;
	struct list_head empty_blocks;
	struct list_head filled_blocks;
	struct list_head storage_files;

	sector_t capacity;
	sector_t filled;
	sector_t requested;

	atomic_t low_space_flag;
	atomic_t overflow_flag;

	struct event_queue event_queue;
	/* a low free space event for when no memory is to be had; ->lock */
	struct event *spare_event;

	struct list_head waiting_chunks;
	diff_storage_resume_fn resume_parked;
	bool waiting;
	unsigned long wait_deadline;
	bool wait_resume;
	bool wait_stopped;
	wait_queue_head_t space_wq;
	struct delayed_work wait_work;
};

struct diff_storage *diff_storage_new(diff_storage_resume_fn resume_parked);
void diff_storage_free(struct kref *kref);

static inline void diff_storage_get(struct diff_storage *diff_storage)
{
	kref_get(&diff_storage->kref);
};

static inline void diff_storage_put(struct diff_storage *diff_storage)
{
	if (likely(diff_storage))
		kref_put(&diff_storage->kref, diff_storage_free);
};

void diff_storage_add_origin(struct diff_storage *diff_storage,
			     struct diff_storage_origin *origin);
void diff_storage_remove_origin(struct diff_storage_origin *origin);

int diff_storage_append_block(struct diff_storage *diff_storage, dev_t dev_id,
			      struct blk_snap_block_range *ranges,
			      unsigned int range_count);
int diff_storage_append_file(struct diff_storage *diff_storage,
			     struct file *file,
			     struct blk_snap_block_range *ranges,
			     unsigned int range_count);
int diff_storage_new_region(struct diff_storage *diff_storage, sector_t count,
			    struct diff_region *diff_region, bool is_nowait);
/*
 * A stored chunk's place, packed in 64 bits for its record in the diff
 * area (diff_storage_pack()): the index of its storage device in the top
 * bits, the sector below them.
 */
#define STORAGE_PLACE_SECTOR_BITS 48

int diff_storage_pack(struct diff_storage *diff_storage,
		      const struct diff_region *region, u64 *place);
int diff_storage_region_at(struct diff_storage *diff_storage, u64 place,
			   struct diff_region *region);
int diff_storage_park(struct diff_storage *diff_storage,
		      struct list_head *chunk_link, atomic_t *state,
		      int parked);
bool diff_storage_is_waiting(struct diff_storage *diff_storage);
void diff_storage_ask_again(struct diff_storage *diff_storage);
void diff_storage_wait_for_space(struct diff_storage *diff_storage);
void diff_storage_stop_waiting(struct diff_storage *diff_storage);
#endif /* __BLK_SNAP_DIFF_STORAGE_H */
