// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-tracker: " fmt

#include <linux/slab.h>
#include <linux/blk-mq.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/percpu-rwsem.h>
#include <linux/mempool.h>
#include <linux/mm.h>
#include <linux/part_stat.h>
#include <uapi/linux/blksnap.h>
#include "params.h"
#include "tracker.h"
#include "cbt_map.h"
#include "diff_area.h"
#include "diff_buffer.h"
#include "diff_storage.h"

/*
 * A tracked device keeps a reference to its block device: a disk unplugged
 * while someone holds it open no longer opens by its number, yet its
 * filter stays attached until it is detached here (tracker_remove(),
 * module exit). The reference keeps the gendisk, whose release calls its
 * driver (->free_disk): so the driver's module is held too, and cannot be
 * unloaded while one of its disks is tracked.
 */
struct tracked_device {
	struct list_head link;
	dev_t dev_id;
	struct block_device *bdev;
};

/* Still reachable by its number: not unplugged or deleted. */
static bool bdev_is_live(struct block_device *bdev)
{
	return disk_live(bdev->bd_disk) && !inode_unhashed(bdev->bd_inode);
}

static void tracked_device_free(struct tracked_device *tr_dev)
{
	struct module *owner = tr_dev->bdev->bd_disk->fops->owner;

	put_device(&tr_dev->bdev->bd_device);
	module_put(owner);
	kfree(tr_dev);
}

/*
 * Read side: held by the filter while it marks the CBT and decides whether
 * to copy, not while it copies, so that the switch of a take never waits
 * for a copy (its drain of the writes in flight may: see
 * tracker_wait_for_writes_before_take()).
 * Write side: take and destroy, so that the trackers switch with no write
 * between its CBT mark and its copy decision. Lock order of the whole driver:
 * Documentation/block/blksnap.rst, "Locking"; this lock is taken inside
 * freeze_bdev() and outside every chunk's lock. Set up in tracker_init(),
 * freed last in tracker_done(), which waits for its RCU callback.
 */
static struct percpu_rw_semaphore tracker_submit_lock;
static LIST_HEAD(tracked_device_list);
static DEFINE_SPINLOCK(tracked_device_lock);
static refcount_t trackers_counter = REFCOUNT_INIT(1);

struct tracker_release_worker {
	struct work_struct work;
	struct list_head list;
	/* protects list */
	spinlock_t lock;
};

static struct tracker_release_worker tracker_release_worker;

/*
 * A write between the filter and its completion. A take must not return
 * while a write admitted before it is still on its way to the device:
 * the write passed uncopied, and landing after the take it would change
 * the image; a copy of its chunk made meanwhile may also lack it, so
 * the take marks it in the new generation of the change table too.
 * Below the filter a write can be held for long (dm-delay, a dm-thin
 * pool out of space, an I/O scheduler), and only its completion says
 * that it has landed: the filter takes the bio's completion over
 * (as bcache does for a detached device) and gives it back then.
 *
 * A write to a partition passes the partition's filter and then its
 * disk's: one record serves both, so that the second filter never waits
 * for a record while the first holds one.
 */
struct tracker_write_ref {
	struct list_head link;
	struct tracker *tracker;
	sector_t sector;
	sector_t count;
	unsigned int epoch;
};

struct tracker_write {
	struct bdev_filter_end_io fe;
	bio_end_io_t *bi_end_io;
	void *bi_private;
	mempool_t *pool;
	struct tracker_write_ref ref[2];
};

/*
 * Each tracker keeps records for the writes of a deep queue, so that a
 * write waits for another's completion rather than for reclaim. One pool
 * per tracker, as device-mapper keeps a bio_set per device: a write that
 * holds a record of a stacked device and waits for one of the disk below
 * waits for writes that the disk completes on its own.
 */
#define TRACKER_WRITES_RESERVED 64
static struct kmem_cache *tracker_write_cache;

/*
 * Bios that a stacked driver submitted from its ->submit_bio and that wait
 * on current->bio_list, each holding a record, are sent from here when
 * the filter would wait for a record: as bio_alloc_bioset() punts them
 * to its bio_set's rescuer, so that a task never waits for records that
 * only its own queued bios would give back.
 */
static struct workqueue_struct *tracker_rescue_wq;
static DEFINE_SPINLOCK(tracker_rescue_lock);
static struct bio_list tracker_rescue_list;

static void tracker_rescue_work_fn(struct work_struct *work)
{
	struct bio *bio;

	while (true) {
		spin_lock(&tracker_rescue_lock);
		bio = bio_list_pop(&tracker_rescue_list);
		spin_unlock(&tracker_rescue_lock);
		if (!bio)
			break;
		/*
		 * Filtered already (BIO_FILTERED lets it through), unless
		 * its device got a filter after it was queued: then it is
		 * filtered here, as a bio submitted from any work item.
		 */
		submit_bio_noacct(bio);
	}
}

static DECLARE_WORK(tracker_rescue_work, tracker_rescue_work_fn);

static void tracker_punt_bios(void)
{
	struct bio_list punt;

	bio_list_init(&punt);
	bio_list_merge(&punt, &current->bio_list[0]);
	bio_list_init(&current->bio_list[0]);
	bio_list_merge(&punt, &current->bio_list[1]);
	bio_list_init(&current->bio_list[1]);

	spin_lock(&tracker_rescue_lock);
	bio_list_merge(&tracker_rescue_list, &punt);
	spin_unlock(&tracker_rescue_lock);
	queue_work(tracker_rescue_wq, &tracker_rescue_work);
}

static struct tracker_write *tracker_write_alloc(struct tracker *tracker,
						 bool is_nowait)
{
	mempool_t *pool = &tracker->write_pool;
	struct tracker_write *write;

	if (is_nowait) {
		write = mempool_alloc(pool, GFP_NOWAIT);
	} else if (current->bio_list &&
		   (!bio_list_empty(&current->bio_list[0]) ||
		    !bio_list_empty(&current->bio_list[1]))) {
		write = mempool_alloc(pool, GFP_NOWAIT);
		if (!write) {
			tracker_punt_bios();
			write = mempool_alloc(pool, GFP_NOIO);
		}
	} else {
		write = mempool_alloc(pool, GFP_NOIO);
	}
	if (write)
		write->pool = pool;
	return write;
}

void tracker_lock(void)
{
	pr_debug("Lock trackers\n");
	percpu_down_write(&tracker_submit_lock);
}

void tracker_unlock(void)
{
	percpu_up_write(&tracker_submit_lock);
	pr_debug("Trackers have been unlocked\n");
}

static void tracker_free(struct tracker *tracker)
{
	might_sleep();
	WARN_ON(!list_empty(&tracker->writes));
	/* Every record was given back before its tracker's reference. */
	mempool_exit(&tracker->write_pool);

	pr_debug("Free tracker for device [%u:%u].\n", MAJOR(tracker->dev_id),
		 MINOR(tracker->dev_id));

	diff_area_put(tracker->diff_area);
	cbt_map_put(tracker->cbt_map);

	kfree(tracker);

	refcount_dec(&trackers_counter);
}

static inline struct tracker *tracker_get_by_dev(struct block_device *bdev)
{
	struct bdev_filter *flt = bdev_filter_get_by_bdev(bdev);

	if (!flt)
		return NULL;

	return container_of(flt, struct tracker, flt);
}

/*
 * Copy the chunks that the write is about to overwrite to the difference
 * storage and wait until they are there. Called without tracker_submit_lock
 * and with @tracker->cow_in_flight raised, which keeps the difference area:
 * the switch of a take or destroy never waits for a copy, and the release
 * waits for cow_in_flight before it frees the area. A write whose snapshot
 * is released meanwhile stops at its next batch: nothing is left to keep.
 *
 * The filter may be called from inside a stacked driver's ->submit_bio,
 * where current->bio_list collects bios to be dispatched only after that
 * driver returns. Our own bios must be dispatched now, since we wait for
 * them, so the list is set aside meanwhile. They carry BIO_FILTERED and
 * do not come back here.
 *
 * Return: 0, or -EAGAIN for a REQ_NOWAIT write that would have to wait;
 * any other failure has flagged the snapshot corrupted.
 */
static int tracker_copy_on_write(struct tracker *tracker, sector_t sector,
				 sector_t count, bool is_nowait)
{
	struct diff_area *diff_area = tracker->diff_area;
	/* Both powers of two: a batch is a whole number of chunks. */
	sector_t batch = max_t(sector_t, diff_area_chunk_sectors(diff_area),
			       COW_BATCH_BYTES >> SECTOR_SHIFT);
	struct bio_list *saved_bio_list = current->bio_list;
	/*
	 * The image ends where the device ended at take: sectors the device
	 * has grown since have nothing to keep.
	 */
	sector_t end = min(sector + count, diff_area->capacity);
	unsigned int current_flag;
	int err = 0;

	if (sector >= end)
		return 0;
	current_flag = memalloc_noio_save();
	current->bio_list = NULL;

	while (sector < end) {
		sector_t len = min(end, round_down(sector, batch) + batch) - sector;

		err = diff_area_copy(diff_area, sector, len, is_nowait);
		if (unlikely(err == -EXFULL)) {
			/* Out of storage: wait for more, copy the batch again. */
			if (is_nowait) {
				err = -EAGAIN;
				break;
			}
			diff_storage_wait_for_space(diff_area->diff_storage);
			err = 0;
		} else {
			if (likely(!err))
				err = diff_area_wait(diff_area, sector, len,
						     is_nowait);
			if (err)
				break;
			sector += len;
		}
		if (sector >= end || !atomic_read(&tracker->snapshot_is_taken) ||
		    diff_area_is_corrupted(diff_area))
			break;
		cond_resched();
	}

	current->bio_list = saved_bio_list;
	memalloc_noio_restore(current_flag);

	if (err && err != -EAGAIN) {
		/*
		 * The original data could not be saved: the write goes on, the
		 * origin is never held back, but the image no longer matches
		 * it and must fail its reads.
		 */
		diff_area_set_corrupted(diff_area, err);
		err = 0;
	}
	return err;
}

/*
 * Wait for the writes that may still be copying into @tracker's difference
 * area. Called by a snapshot's release after it has cleared
 * snapshot_is_taken under tracker_lock(): no new write can start a copy,
 * and one in flight stops at its next batch.
 */
void tracker_wait_for_writes(struct tracker *tracker)
{
	wait_var_event(&tracker->cow_in_flight,
		       !atomic_read(&tracker->cow_in_flight));
}

static void tracker_write_ref_end(struct tracker_write_ref *ref)
{
	struct tracker *tracker = ref->tracker;
	unsigned long flags;
	bool wake = false;

	spin_lock_irqsave(&tracker->writes_lock, flags);
	list_del(&ref->link);
	if (ref->epoch != tracker->write_epoch)
		wake = !--tracker->writes_before_take;
	spin_unlock_irqrestore(&tracker->writes_lock, flags);
	if (wake)
		wake_up_all(&tracker->writes_wait);
}

/*
 * A bio_chain() child that the filter wrapped no longer ends through
 * bio_endio()'s loop but through bio_chain_endio(), one level deeper for
 * each such child in a row: the block layer's own chains (discard,
 * zeroout) are built on bios the filter has seen already, and pass it.
 */
static void tracker_write_end_io(struct bio *bio)
{
	struct tracker_write *write =
		container_of(bio->bi_private, struct tracker_write, fe);
	struct tracker *trackers[2] = { write->ref[0].tracker,
					write->ref[1].tracker };
	int inx;

	bio->bi_end_io = write->bi_end_io;
	bio->bi_private = write->bi_private;

	for (inx = 0; inx < 2; inx++) {
		if (trackers[inx])
			tracker_write_ref_end(&write->ref[inx]);
	}
	mempool_free(write, write->pool);
	if (bio->bi_end_io)
		bio->bi_end_io(bio);
	/* The filters' references, taken for this write. */
	for (inx = 0; inx < 2; inx++)
		tracker_put(trackers[inx]);
}

/*
 * Under tracker_submit_lock (read): a take either lists the write as
 * admitted before it, or the write sees the take.
 */
static void tracker_write_ref_start(struct tracker *tracker,
				    struct tracker_write_ref *ref,
				    sector_t sector, sector_t count)
{
	unsigned long flags;

	bdev_filter_get(&tracker->flt);
	ref->tracker = tracker;
	ref->sector = sector;
	ref->count = count;

	spin_lock_irqsave(&tracker->writes_lock, flags);
	ref->epoch = tracker->write_epoch;
	list_add_tail(&ref->link, &tracker->writes);
	spin_unlock_irqrestore(&tracker->writes_lock, flags);
}

/*
 * The record of a bio that another of our filters (its partition's) has
 * taken over already, with a free place for this one; or NULL.
 */
static struct tracker_write_ref *tracker_write_shared_ref(struct bio *bio)
{
	struct bdev_filter_end_io *fe = bdev_filter_taken_end_io(bio);
	struct tracker_write *write;

	if (!fe || fe->end_io != tracker_write_end_io)
		return NULL;
	write = container_of(fe, struct tracker_write, fe);
	return write->ref[1].tracker ? NULL : &write->ref[1];
}

/*
 * The block layer (bdev_filter.ko on the standalone route) calls
 * tracker_write_end_io() with this module held:
 * the completion that puts a tracker's last reference runs no code of a
 * module that is gone.
 */
static void tracker_write_take_over(struct tracker_write *write,
				    struct bio *bio, struct tracker *tracker)
{
	write->bi_end_io = bio->bi_end_io;
	write->bi_private = bio->bi_private;
	write->ref[1].tracker = NULL;
	bdev_filter_take_end_io(bio, &tracker->flt, &write->fe,
				tracker_write_end_io);
}

static bool tracker_writes_before_take_done(struct tracker *tracker)
{
	bool done;

	spin_lock_irq(&tracker->writes_lock);
	done = !tracker->writes_before_take;
	spin_unlock_irq(&tracker->writes_lock);
	return done;
}

/*
 * Wait until the writes admitted before the latest take have completed.
 * A device below may hold them for as long as it likes (a multipath
 * device queueing without a path): the wait is killable. Such a write
 * may also reach another tracked device below, whose snapshot (this one
 * or another) copies it first: then the drain waits for that copy, and
 * for storage if the storage has run out, at most until
 * diff_storage_wait_seconds marks that snapshot corrupted.
 *
 * Return: 0, or -EINTR if a fatal signal ended the wait.
 */
int tracker_wait_for_writes_before_take(struct tracker *tracker)
{
	if (wait_event_killable(tracker->writes_wait,
				tracker_writes_before_take_done(tracker)))
		return -EINTR;
	return 0;
}

/*
 * Under tracker_lock(), after the change table switched: the writes in
 * flight become writes before the take, and their sectors are marked in
 * the new generation. The marks are made from a copy of their ranges:
 * cbt_map->locker is not taken under writes_lock, which completions
 * take with interrupts off. No write can start meanwhile; completions
 * only shrink the list.
 */
static void tracker_writes_to_new_epoch(struct tracker *tracker)
{
	struct tracker_write_ref *ref;
	struct {
		sector_t sector;
		sector_t count;
	} *ranges = NULL;
	unsigned long count = 0;
	unsigned long inx;

	spin_lock_irq(&tracker->writes_lock);
	list_for_each_entry(ref, &tracker->writes, link)
		count++;
	spin_unlock_irq(&tracker->writes_lock);
	if (count) {
		ranges = kvmalloc_array(count, sizeof(*ranges), GFP_NOIO);
		if (!ranges) {
			/* The next take resets the table: a full backup. */
			pr_err("No memory to mark the writes in flight of device [%u:%u]: change tracking reset\n",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
			cbt_map_set_corrupted(tracker->cbt_map);
		}
	}

	spin_lock_irq(&tracker->writes_lock);
	tracker->write_epoch++;
	inx = 0;
	list_for_each_entry(ref, &tracker->writes, link) {
		if (ranges && inx < count) {
			ranges[inx].sector = ref->sector;
			ranges[inx].count = ref->count;
		}
		inx++;
	}
	tracker->writes_before_take = inx;
	spin_unlock_irq(&tracker->writes_lock);

	if (!ranges)
		return;
	count = min(count, inx);
	for (inx = 0; inx < count; inx++)
		cbt_map_set(tracker->cbt_map, ranges[inx].sector,
			    ranges[inx].count);
	kvfree(ranges);
}

/*
 * A zone operation on a device that became zoned after it was tracked (a
 * device-mapper table reload; zoned devices are refused at create): its
 * change cannot be copied first nor marked, so the change table and the
 * snapshot say that they no longer match the device.
 */
static void tracker_zone_op(struct tracker *tracker)
{
	percpu_down_read(&tracker_submit_lock);
	cbt_map_set_corrupted(tracker->cbt_map);
	if (atomic_read(&tracker->snapshot_is_taken))
		diff_area_set_corrupted(tracker->diff_area, -EOPNOTSUPP);
	percpu_up_read(&tracker_submit_lock);
	pr_err_ratelimited("Zone operation on tracked device [%u:%u]: change tracking and snapshot lost\n",
			   MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
}

/*
 * While a first create waits for the writes that no filter saw (see
 * tracker_drain_untracked_writes()), the device's other writes, empty
 * flushes included, wait here. Not held: the stores of snapshots, and
 * the bios the rescuer sends, which other bios' records wait for.
 *
 * Return: false if the bio was ended (REQ_NOWAIT).
 */
static bool tracker_hold_write(struct tracker *tracker, struct bio *bio,
			       bool is_nowait)
{
	if (bio_has_data(bio) && diff_buffer_owns_page(bio_page(bio)))
		return true;
	if (current_work() == &tracker_rescue_work)
		return true;
	if (is_nowait) {
		bio_wouldblock_error(bio);
		return false;
	}
	wait_event(tracker->writes_wait, !READ_ONCE(tracker->writes_held));
	return true;
}

static bool tracker_submit_bio_cb(struct bio *bio, struct bdev_filter *flt)
{
	struct tracker *tracker = container_of(flt, struct tracker, flt);
	bool is_nowait = !!(bio->bi_opf & REQ_NOWAIT);
	struct tracker_write_ref *ref;
	struct tracker_write *write = NULL;
	unsigned int current_flag;
	sector_t sector;
	sector_t count;
	int err;

	if (unlikely(op_is_zone_mgmt(bio_op(bio)) ||
		     bio_op(bio) == REQ_OP_ZONE_APPEND)) {
		tracker_zone_op(tracker);
		return true;
	}
	if (!op_is_write(bio_op(bio)))
		return true;
	if (unlikely(READ_ONCE(tracker->writes_held)) &&
	    !tracker_hold_write(tracker, bio, is_nowait))
		return false;

	count = bio_sectors(bio);
	if (!count)
		return true;

	/*
	 * A remapped bio's sector is on the whole disk. Only a tracker of
	 * the partition itself wants it relative; a whole-disk tracker gets
	 * its partitions' bios too (bdev_filter_submit_bio()).
	 */
	sector = bio->bi_iter.bi_sector;
	if (bio_flagged(bio, BIO_REMAPPED) &&
	    bio->bi_bdev->bd_dev == tracker->dev_id)
		sector -= bio->bi_bdev->bd_start_sect;

	/*
	 * A store of ours, reaching the disk through a stacked device
	 * (diff_buffer_owns_page()): marked in the CBT, never copied. It
	 * needs no copy decision, so no tracker_submit_lock: a take or
	 * destroy in progress must not hold up a store.
	 */
	if (bio_has_data(bio) && diff_buffer_owns_page(bio_page(bio))) {
		current_flag = memalloc_noio_save();
		cbt_map_set(tracker->cbt_map, sector, count);
		memalloc_noio_restore(current_flag);
		return true;
	}

	ref = tracker_write_shared_ref(bio);
	if (!ref) {
		write = tracker_write_alloc(tracker, is_nowait);
		if (!write) {
			bio_wouldblock_error(bio);
			return false;
		}
		ref = &write->ref[0];
	}
	if (is_nowait) {
		if (!percpu_down_read_trylock(&tracker_submit_lock)) {
			if (write)
				mempool_free(write, write->pool);
			bio_wouldblock_error(bio);
			return false;
		}
	} else {
		percpu_down_read(&tracker_submit_lock);
	}
	/* From here every way out completes or passes the bio. */
	if (write)
		tracker_write_take_over(write, bio, tracker);
	tracker_write_ref_start(tracker, ref, sector, count);

	/*
	 * A discard is advisory: while a snapshot is held it is completed
	 * here without reaching the device. Passed on, it would make the
	 * range's data undefined, and saving that data first would cost
	 * memory and storage in proportion to the range (an fstrim of the
	 * whole free space). Since the data does not change, the CBT does
	 * not mark it either.
	 */
	if (bio_op(bio) == REQ_OP_DISCARD &&
	    atomic_read(&tracker->snapshot_is_taken)) {
		percpu_up_read(&tracker_submit_lock);
		bio_endio(bio);
		return false;
	}

	/*
	 * A map that failed is flagged corrupted in itself and reported with
	 * the CBT; the snapshot still needs its copy.
	 */
	current_flag = memalloc_noio_save();
	cbt_map_set(tracker->cbt_map, sector, count);
	memalloc_noio_restore(current_flag);

	if (!atomic_read(&tracker->snapshot_is_taken))
		goto out;

	if (diff_area_is_corrupted(tracker->diff_area))
		goto out;

	atomic_inc(&tracker->cow_in_flight);
	percpu_up_read(&tracker_submit_lock);
	err = tracker_copy_on_write(tracker, sector, count, is_nowait);
	if (atomic_dec_and_test(&tracker->cow_in_flight))
		wake_up_var(&tracker->cow_in_flight);
	if (unlikely(err)) {
		bio_wouldblock_error(bio);
		return false;
	}
	return true;
out:
	percpu_up_read(&tracker_submit_lock);
	return true;
}

static void tracker_release_work(struct work_struct *work)
{
	struct tracker *tracker = NULL;
	struct tracker_release_worker *tracker_release =
		container_of(work, struct tracker_release_worker, work);

	do {
		spin_lock_irq(&tracker_release->lock);
		tracker = list_first_entry_or_null(&tracker_release->list,
						   struct tracker, link);
		if (tracker)
			list_del(&tracker->link);
		spin_unlock_irq(&tracker_release->lock);

		if (tracker)
			tracker_free(tracker);
	} while (tracker);
}

static void tracker_detach_cb(struct kref *kref)
{
	struct bdev_filter *flt = container_of(kref, struct bdev_filter, kref);
	struct tracker *tracker = container_of(flt, struct tracker, flt);

	unsigned long flags;

	/* The last reference may be a write's, put by its completion. */
	spin_lock_irqsave(&tracker_release_worker.lock, flags);
	list_add_tail(&tracker->link, &tracker_release_worker.list);
	spin_unlock_irqrestore(&tracker_release_worker.lock, flags);

	queue_work(system_wq, &tracker_release_worker.work);
}

static const struct bdev_filter_operations tracker_fops = {
	.owner = THIS_MODULE,
	.submit_bio_cb = tracker_submit_bio_cb,
	.detach_cb = tracker_detach_cb
};

static int tracker_filter_attach(struct block_device *bdev,
				 struct tracker *tracker)
{
	int ret;
	bool is_frozen = false;

	pr_debug("Tracker attach filter\n");

	if (freeze_bdev(bdev)) {
		pr_err("Failed to freeze device [%u:%u]\n", MAJOR(bdev->bd_dev),
		       MINOR(bdev->bd_dev));
	} else {
		is_frozen = true;
		pr_debug("Device [%u:%u] was frozen\n", MAJOR(bdev->bd_dev),
			 MINOR(bdev->bd_dev));
	}

	ret = bdev_filter_attach(bdev, &tracker->flt);

	if (is_frozen) {
		if (thaw_bdev(bdev))
			pr_err("Failed to thaw device [%u:%u]\n",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
		else
			pr_debug("Device [%u:%u] was unfrozen\n",
				 MAJOR(bdev->bd_dev), MINOR(bdev->bd_dev));
	}

	if (ret)
		pr_err("Failed to attach tracker to device [%u:%u]\n",
		       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));

	return ret;
}

static int tracker_filter_detach(struct block_device *bdev)
{
	int ret;
	bool is_frozen = false;

	pr_debug("Tracker delete filter\n");
	/*
	 * An unplugged disk takes no more writes: no need to freeze it, and
	 * its file system's sync could wait on a dead transport.
	 */
	if (!bdev_is_live(bdev)) {
		pr_debug("Device [%u:%u] is gone\n", MAJOR(bdev->bd_dev),
			 MINOR(bdev->bd_dev));
	} else if (freeze_bdev(bdev)) {
		pr_err("Failed to freeze device [%u:%u]\n", MAJOR(bdev->bd_dev),
		       MINOR(bdev->bd_dev));
	} else {
		is_frozen = true;
		pr_debug("Device [%u:%u] was frozen\n", MAJOR(bdev->bd_dev),
			 MINOR(bdev->bd_dev));
	}

	ret = bdev_filter_detach(bdev);

	if (is_frozen) {
		if (thaw_bdev(bdev))
			pr_err("Failed to thaw device [%u:%u]\n",
			       MAJOR(bdev->bd_dev), MINOR(bdev->bd_dev));
		else
			pr_debug("Device [%u:%u] was unfrozen\n",
				 MAJOR(bdev->bd_dev), MINOR(bdev->bd_dev));
	}

	if (ret)
		pr_err("Failed to detach filter from device [%u:%u]\n",
		       MAJOR(bdev->bd_dev), MINOR(bdev->bd_dev));
	return ret;
}

static struct tracker *tracker_new(struct block_device *bdev)
{
	int ret;
	struct tracker *tracker = NULL;
	struct cbt_map *cbt_map;

	pr_debug("Creating tracker for device [%u:%u].\n", MAJOR(bdev->bd_dev),
		 MINOR(bdev->bd_dev));

	tracker = kzalloc(sizeof(*tracker), GFP_KERNEL);
	if (!tracker)
		return ERR_PTR(-ENOMEM);

	refcount_inc(&trackers_counter);
	bdev_filter_init(&tracker->flt, &tracker_fops);
	INIT_LIST_HEAD(&tracker->link);
	atomic_set(&tracker->snapshot_is_taken, false);
	atomic_set(&tracker->cow_in_flight, 0);
	atomic_set(&tracker->in_snapshot, 0);
	spin_lock_init(&tracker->writes_lock);
	INIT_LIST_HEAD(&tracker->writes);
	init_waitqueue_head(&tracker->writes_wait);
	tracker->dev_id = bdev->bd_dev;
	ret = mempool_init_slab_pool(&tracker->write_pool,
				     TRACKER_WRITES_RESERVED,
				     tracker_write_cache);
	if (ret) {
		/* It undid itself: tracker_free() must find it empty. */
		memset(&tracker->write_pool, 0, sizeof(tracker->write_pool));
		goto fail;
	}

	pr_info("Create tracker for device [%u:%u]. Capacity 0x%llx sectors\n",
		MAJOR(tracker->dev_id), MINOR(tracker->dev_id),
		(unsigned long long)bdev_nr_sectors(bdev));

	cbt_map = cbt_map_create(bdev);
	if (!cbt_map) {
		pr_err("Failed to create tracker for device [%u:%u]\n",
		       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
		ret = -ENOMEM;
		goto fail;
	}
	tracker->cbt_map = cbt_map;

	ret = tracker_filter_attach(bdev, tracker);
	if (ret) {
		pr_err("Failed to attach tracker. errno=%d\n", abs(ret));
		goto fail;
	}
	/*
	 * The filter stores a pointer to the tracker.
	 * The tracker will not be released until its filter is released.
	 */

	pr_debug("New tracker for device [%u:%u] was created.\n",
		 MAJOR(tracker->dev_id), MINOR(tracker->dev_id));

	return tracker;
fail:
	tracker_put(tracker);
	return ERR_PTR(ret);
}

int tracker_take_snapshot(struct tracker *tracker)
{
	int ret = 0;
	bool cbt_reset_needed = false;
	sector_t capacity;

	if (tracker->cbt_map->is_corrupted) {
		cbt_reset_needed = true;
		pr_warn("Corrupted CBT table detected. CBT fault\n");
	}

	/* A device-mapper table reload may have made it zoned since. */
	if (bdev_is_zoned(tracker->diff_area->orig_bdev)) {
		pr_err("Cannot take a snapshot of device [%u:%u]: it is zoned\n",
		       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
		return -EOPNOTSUPP;
	}

	capacity = bdev_nr_sectors(tracker->diff_area->orig_bdev);
	if (tracker->cbt_map->device_capacity != capacity) {
		cbt_reset_needed = true;
		pr_warn("Device resize detected. CBT fault\n");
	}

	if (cbt_reset_needed) {
		ret = cbt_map_reset(tracker->cbt_map, capacity);
		if (ret) {
			pr_err("Failed to reset the CBT map of device [%u:%u]. errno=%d\n",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id),
			       abs(ret));
			return ret;
		}
	}

	cbt_map_switch(tracker->cbt_map);
	tracker_writes_to_new_epoch(tracker);
	atomic_set(&tracker->snapshot_is_taken, true);

	return 0;
}

void tracker_release_snapshot(struct tracker *tracker)
{
	if (!tracker)
		return;

	pr_debug("Tracker for device [%u:%u] release snapshot\n",
		 MAJOR(tracker->dev_id), MINOR(tracker->dev_id));

	atomic_set(&tracker->snapshot_is_taken, false);
}

int tracker_init(void)
{
	int ret;

	/*
	 * Not DEFINE_STATIC_PERCPU_RWSEM: percpu_free_rwsem() would free its
	 * static per-cpu counter, and without it the module could be freed
	 * with rcu_sync_func queued on the lock (see tracker_done()).
	 */
	ret = percpu_init_rwsem(&tracker_submit_lock);
	if (ret)
		return ret;

	tracker_write_cache = KMEM_CACHE(tracker_write, 0);
	if (!tracker_write_cache) {
		ret = -ENOMEM;
		goto fail_cache;
	}
	bio_list_init(&tracker_rescue_list);
	tracker_rescue_wq = alloc_workqueue("blksnap_rescue", WQ_MEM_RECLAIM, 0);
	if (!tracker_rescue_wq) {
		ret = -ENOMEM;
		goto fail_wq;
	}

	INIT_WORK(&tracker_release_worker.work, tracker_release_work);
	INIT_LIST_HEAD(&tracker_release_worker.list);
	spin_lock_init(&tracker_release_worker.lock);

	return 0;

fail_wq:
	kmem_cache_destroy(tracker_write_cache);
fail_cache:
	percpu_free_rwsem(&tracker_submit_lock);
	return ret;
}

/* Detach the tracker of @bdev, unless a snapshot holds it. */
static int tracker_detach(struct block_device *bdev)
{
	struct tracker *tracker;
	int ret;

	tracker = tracker_get_by_dev(bdev);
	if (!tracker) {
		pr_info("Unable to remove device [%u:%u] from tracking: tracker not found\n",
			MAJOR(bdev->bd_dev), MINOR(bdev->bd_dev));
		return -ENODATA;
	}

	/*
	 * Claimed as a snapshot would claim it: a snapshot created meanwhile
	 * cannot take a tracker that is being detached (it gets -EBUSY).
	 */
	if (atomic_cmpxchg(&tracker->in_snapshot, 0, 1) != 0) {
		pr_err("Tracker for device [%u:%u] is busy with a snapshot\n",
		       MAJOR(bdev->bd_dev), MINOR(bdev->bd_dev));
		ret = -EBUSY;
		goto put_tracker;
	}

	ret = tracker_filter_detach(bdev);
	if (ret) {
		pr_err("Failed to remove tracker from device [%u:%u]\n",
		       MAJOR(bdev->bd_dev), MINOR(bdev->bd_dev));
		atomic_set(&tracker->in_snapshot, 0);
	}
put_tracker:
	tracker_put(tracker);
	return ret;
}

/**
 * tracker_wait_for_release - Waiting for all trackers are released.
 */
static void tracker_wait_for_release(void)
{
	long inx = 0;
	u64 start_waiting = jiffies_64;

	while (refcount_read(&trackers_counter) > 1) {
		schedule_timeout_interruptible(HZ);
		if (jiffies_64 > (start_waiting + 10 * HZ)) {
			start_waiting = jiffies_64;
			inx++;

			if (inx <= 12)
				pr_warn("Waiting for trackers release\n");

			WARN_ONCE(inx > 12, "Failed to release trackers\n");
		}
	}
}

void tracker_done(void)
{
	struct tracked_device *tr_dev;

	pr_debug("Cleanup trackers\n");
	while (true) {
		spin_lock(&tracked_device_lock);
		tr_dev = list_first_entry_or_null(&tracked_device_list,
						  struct tracked_device, link);
		if (tr_dev)
			list_del(&tr_dev->link);
		spin_unlock(&tracked_device_lock);

		if (!tr_dev)
			break;

		tracker_detach(tr_dev->bdev);
		tracked_device_free(tr_dev);
	}

	tracker_wait_for_release();
	/* The last tracker_free() may still be returning from the work. */
	flush_work(&tracker_release_worker.work);
	/*
	 * The first percpu_up_write() (take, snapshot release) after a grace
	 * period queues an RCU callback on the lock; another one before it
	 * ends makes it re-queue itself once (GP_REPLAY). delete_module()
	 * does not wait for callbacks. rcu_sync_dtor() turns
	 * GP_REPLAY into GP_EXIT and waits with rcu_barrier(): nothing of
	 * the lock is left queued when the module's memory goes.
	 */
	percpu_free_rwsem(&tracker_submit_lock);
	/*
	 * No code of ours is left running for a filtered bio: a bio in the
	 * filter and a write whose completion the filter holds each hold
	 * this module, dropped by the block layer (or bdev_filter.ko) after
	 * our code returned (bdev_filter_call(), bdev_filter_take_end_io()),
	 * so the unload cannot begin while one is left (rmmod says the
	 * module is in use). Still open: the completions of our own bios
	 * (diff_io_endio(), the image's reads) return through the module
	 * after the signal the exit waits for. In interrupt context
	 * free_module()'s synchronize_rcu() covers that; a completion run
	 * by a task (a loop or dm worker) preempted right there is not.
	 */
	/* Rescued bios were all sent: their senders' records are back. */
	destroy_workqueue(tracker_rescue_wq);
	/* The trackers' pools are gone with them. */
	kmem_cache_destroy(tracker_write_cache);
}

/*
 * Writes in flight on a device before its filter was attached passed no
 * filter: they have no record, a take cannot wait for them, and one that
 * lands after the device's first take changes its image. So, once per
 * tracker, before its first snapshot, the create waits for them. A blk-mq
 * device's queue is frozen, which ends its requests (as upstream's attach
 * does); the hold of its new writes in the filter starts while it is
 * frozen, so that no request of the device is in progress then. Then,
 * with the writes held, the device's count of writes in flight must fall
 * to zero: what a bio-based driver holds is waited for as far as that
 * count has it. Device-mapper targets that hold writes themselves (delay,
 * thin, crypt, cache) count a write only when they let it go, and md
 * counts none while iostats is off: those writes are not waited for
 * (blksnap.rst, "Copy-on-write").
 *
 * A bio-based queue is not frozen: a call into its ->submit_bio may be
 * copying on write to a tracked device below whose storage is on this
 * very device, and such a store would wait for the freeze that waits for
 * it. A write still inside the driver's ->submit_bio before the driver
 * counts it is not waited for either.
 */
#define TRACKER_DRAIN_WARN_SECONDS 5
#define TRACKER_DRAIN_MAX_SECONDS 30

static long bdev_part_writes_in_flight(struct block_device *part)
{
	long count = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		count += part_stat_local_read_cpu(part, in_flight[WRITE], cpu);
	return count;
}

/* A whole disk's writes are counted on the partition they were sent to. */
static long bdev_writes_in_flight(struct block_device *bdev)
{
	struct block_device *part;
	unsigned long idx;
	long count = 0;

	if (bdev_is_partition(bdev))
		return bdev_part_writes_in_flight(bdev);
	/* A partition's block device is freed after a grace period. */
	rcu_read_lock();
	xa_for_each(&bdev->bd_disk->part_tbl, idx, part)
		count += bdev_part_writes_in_flight(part);
	rcu_read_unlock();
	return count;
}

/*
 * Between two looks at the device: 0, -EINTR or -ETIMEDOUT. @what: what
 * is waited for, as the log says it.
 */
static int tracker_drain_wait_more(struct tracker *tracker,
				   struct block_device *bdev, const char *what,
				   unsigned long start, bool *warned)
{
	if (fatal_signal_pending(current)) {
		pr_err("Device [%u:%u]: killed while waiting for %s; no snapshot created\n",
		       MAJOR(tracker->dev_id), MINOR(tracker->dev_id), what);
		return -EINTR;
	}
	if (time_after(jiffies, start + TRACKER_DRAIN_MAX_SECONDS * HZ)) {
		pr_err("Device [%u:%u]: %s did not end within %d s; no snapshot created, try again when the device is less busy or has let them go\n",
		       MAJOR(tracker->dev_id), MINOR(tracker->dev_id), what,
		       TRACKER_DRAIN_MAX_SECONDS);
		return -ETIMEDOUT;
	}
	if (!*warned &&
	    time_after(jiffies, start + TRACKER_DRAIN_WARN_SECONDS * HZ)) {
		pr_warn("Device [%u:%u]: waiting for %s (%ld writes counted in flight), for %d s at most; its writes wait meanwhile\n",
			MAJOR(tracker->dev_id), MINOR(tracker->dev_id), what,
			bdev_writes_in_flight(bdev), TRACKER_DRAIN_MAX_SECONDS);
		*warned = true;
	}
	return 0;
}

/*
 * Called by the holder of the tracker's in_snapshot claim, which keeps
 * out other creates and a removal.
 *
 * Return: 0; -EINTR if a fatal signal ended the wait, or -ETIMEDOUT if
 * the device held the writes too long: the next snapshot of the device
 * waits again then.
 */
static int tracker_drain_untracked_writes(struct tracker *tracker,
					  struct block_device *bdev)
{
	static const char *const freeze_what =
		"the requests in flight on its disk";
	static const char *const count_what =
		"the writes in flight from before its tracking began";
	struct request_queue *q = bdev_get_queue(bdev);
	unsigned long start = jiffies;
	bool warned = false;
	int zeros = 0;
	int ret = 0;

	if (queue_is_mq(q)) {
		blk_freeze_queue_start(q);
		while (!blk_mq_freeze_queue_wait_timeout(q, HZ / 10)) {
			ret = tracker_drain_wait_more(tracker, bdev,
						      freeze_what, start,
						      &warned);
			if (ret)
				break;
		}
		if (!ret)
			WRITE_ONCE(tracker->writes_held, true);
		blk_mq_unfreeze_queue(q);
	} else {
		WRITE_ONCE(tracker->writes_held, true);
	}
	/*
	 * The per-CPU counts are summed one CPU after another, and a store
	 * (not held) may start and end meanwhile: zero twice in a row.
	 */
	while (!ret) {
		zeros = bdev_writes_in_flight(bdev) > 0 ? 0 : zeros + 1;
		if (zeros == 2)
			break;
		schedule_timeout_killable(msecs_to_jiffies(10));
		ret = tracker_drain_wait_more(tracker, bdev, count_what,
					      start, &warned);
	}
	if (!ret)
		tracker->untracked_writes_drained = true;
	WRITE_ONCE(tracker->writes_held, false);
	wake_up_all(&tracker->writes_wait);
	return ret;
}

struct tracker *tracker_create_or_get(dev_t dev_id)
{
	struct tracker *tracker;
	struct block_device *bdev;
	struct tracked_device *tr_dev;

	bdev = blkdev_get_by_dev(dev_id, 0, NULL);
	if (IS_ERR(bdev)) {
		pr_info("Cannot open device [%u:%u]\n", MAJOR(dev_id),
			MINOR(dev_id));
		return ERR_PTR(PTR_ERR(bdev));
	}

	tracker = tracker_get_by_dev(bdev);
	if (tracker) {
		pr_debug("Device [%u:%u] is already under tracking\n",
			 MAJOR(dev_id), MINOR(dev_id));
		goto drain;
	}

	if (!bdev_nr_sectors(bdev)) {
		pr_err("Cannot track device [%u:%u]: it has no sectors\n",
		       MAJOR(dev_id), MINOR(dev_id));
		tracker = ERR_PTR(-EINVAL);
		goto put_bdev;
	}
	/*
	 * A zone reset or finish changes data with a write of no size, and
	 * a zone append chooses its sector on completion: neither can be
	 * copied first nor marked in the change table.
	 */
	if (bdev_is_zoned(bdev)) {
		pr_err("Cannot track device [%u:%u]: it is zoned\n",
		       MAJOR(dev_id), MINOR(dev_id));
		tracker = ERR_PTR(-EOPNOTSUPP);
		goto put_bdev;
	}

	tr_dev = kzalloc(sizeof(*tr_dev), GFP_KERNEL);
	if (!tr_dev) {
		tracker = ERR_PTR(-ENOMEM);
		goto put_bdev;
	}

	INIT_LIST_HEAD(&tr_dev->link);
	tr_dev->dev_id = dev_id;

	tracker = tracker_new(bdev);
	if (IS_ERR(tracker)) {
		int err = PTR_ERR(tracker);

		pr_err("Failed to create tracker. errno=%d\n", abs(err));
		kfree(tr_dev);
	} else {
		/*
		 * It is normal that the new trackers filter will have
		 * a ref counter value of 2. This allows not to detach
		 * the filter when the snapshot is released.
		 */
		bdev_filter_get(&tracker->flt);

		/* Cannot fail: the open device holds its driver already. */
		__module_get(bdev->bd_disk->fops->owner);
		get_device(&bdev->bd_device);
		tr_dev->bdev = bdev;
		spin_lock(&tracked_device_lock);
		list_add_tail(&tr_dev->link, &tracked_device_list);
		spin_unlock(&tracked_device_lock);
	}
drain:
	/*
	 * Claimed first: a removal cannot detach the tracker while its
	 * writes are held and waited for; it fails with -EBUSY instead.
	 */
	if (!IS_ERR(tracker)) {
		int err = 0;

		if (atomic_cmpxchg(&tracker->in_snapshot, 0, 1) != 0) {
			pr_err("Unable to create snapshot: device [%u:%u] is already in a snapshot, or being removed from tracking\n",
			       MAJOR(dev_id), MINOR(dev_id));
			err = -EBUSY;
		} else if (!tracker->untracked_writes_drained) {
			err = tracker_drain_untracked_writes(tracker, bdev);
			if (err)
				atomic_set(&tracker->in_snapshot, 0);
		}
		if (err) {
			tracker_put(tracker);
			tracker = ERR_PTR(err);
		}
	}
put_bdev:
	blkdev_put(bdev, 0);
	return tracker;
}

int tracker_remove(dev_t dev_id)
{
	struct tracked_device *tr_dev = NULL;
	struct tracked_device *iter;
	struct block_device *bdev = NULL;
	int ret;

	pr_info("Removing device [%u:%u] from tracking\n", MAJOR(dev_id),
		MINOR(dev_id));

	/*
	 * By the block device kept, not by opening @dev_id: see above. A
	 * disk unplugged and another plugged in may share the number: the
	 * live one is meant.
	 */
	spin_lock(&tracked_device_lock);
	list_for_each_entry(iter, &tracked_device_list, link) {
		if (iter->dev_id == dev_id &&
		    (!bdev || bdev_is_live(iter->bdev)))
			bdev = iter->bdev;
	}
	if (bdev)
		get_device(&bdev->bd_device);
	spin_unlock(&tracked_device_lock);
	if (!bdev) {
		pr_info("Unable to remove device [%u:%u] from tracking: not tracked\n",
			MAJOR(dev_id), MINOR(dev_id));
		return -ENODATA;
	}

	ret = tracker_detach(bdev);
	if (!ret) {
		/* Only the caller whose detach succeeded gets here. */
		spin_lock(&tracked_device_lock);
		list_for_each_entry(iter, &tracked_device_list, link) {
			if (iter->bdev == bdev) {
				list_del(&iter->link);
				tr_dev = iter;
				break;
			}
		}
		spin_unlock(&tracked_device_lock);
		if (tr_dev)
			tracked_device_free(tr_dev);
	}
	put_device(&bdev->bd_device);
	return ret;
}

int tracker_read_cbt_bitmap(dev_t dev_id, unsigned int offset, size_t length,
			    char __user *user_buff)
{
	int ret;
	struct tracker *tracker;
	struct block_device *bdev;

	bdev = blkdev_get_by_dev(dev_id, 0, NULL);
	if (IS_ERR(bdev)) {
		pr_info("Cannot open device [%u:%u]\n", MAJOR(dev_id),
			MINOR(dev_id));
		return PTR_ERR(bdev);
	}

	tracker = tracker_get_by_dev(bdev);
	if (!tracker) {
		pr_err("Cannot get tracker for device [%u:%u]\n",
		       MAJOR(dev_id), MINOR(dev_id));
		ret = -ENODEV;
		goto put_bdev;
	}

	if (atomic_read(&tracker->snapshot_is_taken)) {
		ret = cbt_map_read_to_user(tracker->cbt_map, user_buff,
					   offset, length);
	} else {
		pr_err("Unable to read CBT bitmap for device [%u:%u]: ",
		       MAJOR(dev_id), MINOR(dev_id));
		pr_err("device is not captured by snapshot\n");
		ret = -EPERM;
	}
	tracker_put(tracker);
put_bdev:
	blkdev_put(bdev, 0);
	return ret;
}

static inline void collect_cbt_info(dev_t dev_id,
				    struct blk_snap_cbt_info *cbt_info)
{
	struct block_device *bdev;
	struct tracker *tracker;

	bdev = blkdev_get_by_dev(dev_id, 0, NULL);
	if (IS_ERR(bdev)) {
		pr_err("Cannot open device [%u:%u]\n", MAJOR(dev_id),
		       MINOR(dev_id));
		return;
	}

	tracker = tracker_get_by_dev(bdev);
	if (!tracker)
		goto put_bdev;
	if (!tracker->cbt_map)
		goto put_tracker;

	cbt_info->device_capacity =
		(__u64)(tracker->cbt_map->device_capacity << SECTOR_SHIFT);
	cbt_info->blk_size = (__u32)cbt_map_blk_size(tracker->cbt_map);
	cbt_info->blk_count = (__u32)tracker->cbt_map->blk_count;
	cbt_info->snap_number = (__u8)tracker->cbt_map->snap_number_previous;

	export_uuid(cbt_info->generation_id.b, &tracker->cbt_map->generation_id);
put_tracker:
	tracker_put(tracker);
put_bdev:
	blkdev_put(bdev, 0);
}

int tracker_collect(int max_count, struct blk_snap_cbt_info *cbt_info,
		    int *pcount)
{
	int ret = 0;
	int count = 0;
	int iter = 0;
	struct tracked_device *tr_dev;

	if (!cbt_info) {
		/**
		 * Just calculate trackers list length.
		 */
		spin_lock(&tracked_device_lock);
		list_for_each_entry(tr_dev, &tracked_device_list, link)
			++count;
		spin_unlock(&tracked_device_lock);
		goto out;
	}

	spin_lock(&tracked_device_lock);
	list_for_each_entry(tr_dev, &tracked_device_list, link) {
		if (count >= max_count) {
			ret = -ENOBUFS;
			break;
		}

		cbt_info[count].dev_id.mj = MAJOR(tr_dev->dev_id);
		cbt_info[count].dev_id.mn = MINOR(tr_dev->dev_id);
		++count;
	}
	spin_unlock(&tracked_device_lock);

	if (ret)
		return ret;

	for (iter = 0; iter < count; iter++) {
		dev_t dev_id = MKDEV(cbt_info[iter].dev_id.mj,
				     cbt_info[iter].dev_id.mn);

		collect_cbt_info(dev_id, &cbt_info[iter]);
	}
out:
	*pcount = count;
	return 0;
}

int tracker_mark_dirty_blocks(dev_t dev_id,
			      struct blk_snap_block_range *block_ranges,
			      unsigned int count)
{
	int ret = 0;
	struct tracker *tracker;
	struct block_device *bdev;

	bdev = blkdev_get_by_dev(dev_id, 0, NULL);
	if (IS_ERR(bdev)) {
		pr_err("Cannot open device [%u:%u]\n", MAJOR(dev_id),
		       MINOR(dev_id));
		return PTR_ERR(bdev);
	}

	pr_debug("Marking [%d] dirty blocks for device [%u:%u]\n", count,
		 MAJOR(dev_id), MINOR(dev_id));

	tracker = tracker_get_by_dev(bdev);
	if (!tracker) {
		pr_err("Cannot find tracker for device [%u:%u]\n",
		       MAJOR(dev_id), MINOR(dev_id));
		ret = -ENODEV;
		goto put_bdev;
	}

	ret = cbt_map_mark_dirty_blocks(tracker->cbt_map, block_ranges, count);
	if (ret)
		pr_err("Failed to set CBT table. errno=%d\n", abs(ret));

	tracker_put(tracker);
put_bdev:
	blkdev_put(bdev, 0);
	return ret;
}
