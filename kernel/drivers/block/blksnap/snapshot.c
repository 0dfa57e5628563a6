// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-snapshot: " fmt

#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/wait_bit.h>
#include <uapi/linux/blksnap.h>
#include "snapshot.h"
#include "tracker.h"
#include "diff_storage.h"
#include "diff_area.h"
#include "chunk.h"
#include "snapimage.h"
#include "cbt_map.h"

static LIST_HEAD(snapshots);
static DECLARE_RWSEM(snapshots_lock);
/*
 * Snapshots taken out of the list and not yet freed (under
 * snapshots_lock): a destroy that does not find its snapshot in the list
 * waits while it is here, so that -ESRCH means released, whatever an
 * earlier destroy, killed, or a failed take left running.
 */
static LIST_HEAD(snapshots_dying);

static void snapshot_release(struct snapshot *snapshot)
{
	int inx;
	unsigned int current_flag;

	pr_info("Release snapshot %pUb\n", &snapshot->id);

	/*
	 * First of all: copies waiting for storage fail now, and the writers
	 * with them, so that neither the images' workers nor the freeze
	 * below wait for storage that nobody will append.
	 */
	diff_storage_stop_waiting(snapshot->diff_storage);

	/* Destroy all snapshot images. */
	for (inx = 0; inx < snapshot->count; ++inx) {
		struct snapimage *snapimage = snapshot->snapimage_array[inx];

		if (snapimage)
			snapimage_free(snapimage);
	}

	/* Flush and freeze fs on each original block device. */
	for (inx = 0; inx < snapshot->count; ++inx) {
		struct tracker *tracker = snapshot->tracker_array[inx];

		if (!tracker || !tracker->diff_area)
			continue;

		if (freeze_bdev(tracker->diff_area->orig_bdev))
			pr_err("Failed to freeze device [%u:%u]\n",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
		else
			pr_debug("Device [%u:%u] was frozen\n",
				 MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
	}

	current_flag = memalloc_noio_save();
	tracker_lock();

	/* Set tracker as available for new snapshots. */
	for (inx = 0; inx < snapshot->count; ++inx)
		tracker_release_snapshot(snapshot->tracker_array[inx]);

	tracker_unlock();
	memalloc_noio_restore(current_flag);

	/* Thaw fs on each original block device. */
	for (inx = 0; inx < snapshot->count; ++inx) {
		struct tracker *tracker = snapshot->tracker_array[inx];

		if (!tracker || !tracker->diff_area)
			continue;

		if (thaw_bdev(tracker->diff_area->orig_bdev))
			pr_err("Failed to thaw device [%u:%u]\n",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
		else
			pr_debug("Device [%u:%u] was unfrozen\n",
				 MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
	}

	/*
	 * A write still waiting for a copy ends it at its next batch; its
	 * difference area must stay until then.
	 */
	for (inx = 0; inx < snapshot->count; ++inx) {
		if (snapshot->tracker_array[inx])
			tracker_wait_for_writes(snapshot->tracker_array[inx]);
	}

	/* Destroy diff area for each tracker and set the device free. */
	for (inx = 0; inx < snapshot->count; ++inx) {
		struct tracker *tracker = snapshot->tracker_array[inx];

		if (tracker) {
			diff_area_put(tracker->diff_area);
			tracker->diff_area = NULL;

			atomic_set(&tracker->in_snapshot, 0);
			tracker_put(tracker);
			snapshot->tracker_array[inx] = NULL;
		}
	}
}

static void snapshot_free(struct kref *kref)
{
	struct snapshot *snapshot = container_of(kref, struct snapshot, kref);

	snapshot_release(snapshot);

	kfree(snapshot->snapimage_array);
	kfree(snapshot->tracker_array);

	diff_storage_put(snapshot->diff_storage);

	if (snapshot->is_dying) {
		down_write(&snapshots_lock);
		list_del(&snapshot->link);
		up_write(&snapshots_lock);
		/* The unlink before wake_up_var()'s unlocked look at the queue. */
		smp_mb();
		wake_up_var(&snapshots_dying);
	}
	kfree(snapshot);
}

static inline void snapshot_get(struct snapshot *snapshot)
{
	kref_get(&snapshot->kref);
};

/*
 * snapshot_release_unlinked() waits for the others to put theirs. A
 * snapshot freed meanwhile is not touched by the wake-up: only its address
 * picks the wait queue.
 */
static inline void snapshot_put(struct snapshot *snapshot)
{
	if (likely(snapshot) && !kref_put(&snapshot->kref, snapshot_free)) {
		/* The put before wake_up_var()'s unlocked look at the queue. */
		smp_mb();
		wake_up_var(&snapshot->kref);
	}
};

/* Under snapshots_lock: out of the list, into snapshots_dying. */
static void snapshot_set_dying(struct snapshot *snapshot)
{
	snapshot->is_dying = true;
	list_move_tail(&snapshot->link, &snapshots_dying);
}

/* Is the snapshot @id taken out of the list, and not yet freed? */
static bool snapshot_id_dying(uuid_t *id)
{
	struct snapshot *s;
	bool dying = false;

	down_read(&snapshots_lock);
	list_for_each_entry(s, &snapshots_dying, link) {
		if (uuid_equal(&s->id, id)) {
			dying = true;
			break;
		}
	}
	up_read(&snapshots_lock);
	return dying;
}

/*
 * Destroy means done: the release of a snapshot taken out of the list,
 * which ends its storage I/O and lets its storage files go, runs here,
 * with the caller's reference, rather than in whichever caller puts the
 * last reference later. Those who hold one are on their way out, since
 * nobody finds the snapshot any more: a thread waiting for its events is
 * woken, and a take must not wait for storage meanwhile.
 * Return: 0, or -EINTR on a fatal signal (the last holder releases it).
 */
static int snapshot_release_unlinked(struct snapshot *snapshot)
{
	event_queue_close(&snapshot->diff_storage->event_queue);
	diff_storage_stop_waiting(snapshot->diff_storage);
	if (wait_var_event_killable(&snapshot->kref,
				    kref_read(&snapshot->kref) == 1)) {
		snapshot_put(snapshot);
		return -EINTR;
	}
	snapshot_put(snapshot);
	return 0;
}

static struct snapshot *snapshot_new(unsigned int count)
{
	int ret;
	struct snapshot *snapshot = NULL;

	snapshot = kzalloc(sizeof(*snapshot), GFP_KERNEL);
	if (!snapshot) {
		ret = -ENOMEM;
		goto fail;
	}

	snapshot->tracker_array = kcalloc(count, sizeof(void *), GFP_KERNEL);
	if (!snapshot->tracker_array) {
		ret = -ENOMEM;
		goto fail_free_snapshot;
	}

	snapshot->snapimage_array = kcalloc(count, sizeof(void *), GFP_KERNEL);
	if (!snapshot->snapimage_array) {
		ret = -ENOMEM;
		goto fail_free_trackers;
	}

	snapshot->diff_storage = diff_storage_new(chunk_store_parked);
	if (!snapshot->diff_storage) {
		ret = -ENOMEM;
		goto fail_free_snapimage;
	}

	INIT_LIST_HEAD(&snapshot->link);
	kref_init(&snapshot->kref);
	mutex_init(&snapshot->lock);
	uuid_gen(&snapshot->id);
	snapshot->is_taken = false;

	return snapshot;

fail_free_snapimage:
	kfree(snapshot->snapimage_array);
fail_free_trackers:
	kfree(snapshot->tracker_array);
fail_free_snapshot:
	kfree(snapshot);
fail:
	return ERR_PTR(ret);
}

void snapshot_done(void)
{
	struct snapshot *snapshot;

	pr_debug("Cleanup snapshots\n");
	do {
		down_write(&snapshots_lock);
		snapshot = list_first_entry_or_null(&snapshots, struct snapshot,
						    link);
		if (snapshot)
			list_del(&snapshot->link);
		up_write(&snapshots_lock);

		snapshot_put(snapshot);
	} while (snapshot);
}

static inline bool blk_snap_dev_is_equal(struct blk_snap_dev *first,
					 struct blk_snap_dev *second)
{
	return (first->mj == second->mj) && (first->mn == second->mn);
}

static inline int check_same_devices(struct blk_snap_dev *devices,
				     unsigned int count)
{
	unsigned int first, second;

	for (first = 0; first < count; first++) {
		for (second = first + 1; second < count; second++) {
			if (blk_snap_dev_is_equal(&devices[first],
						  &devices[second])) {
				pr_err("Unable to create snapshot: The same device [%d:%d] was added twice.\n",
				       devices[first].mj, devices[first].mn);
				return -EINVAL;
			}
		}
	}

	return 0;
}

/*
 * A device belongs to one snapshot at most: two snapshots sharing one
 * tracker would share, and overwrite, its difference area. A snapshot
 * image cannot be snapshotted either: its own I/O would be filtered.
 */
static int snapshot_add_device(struct snapshot *snapshot, dev_t dev_id)
{
	struct tracker *tracker;

	if (MAJOR(dev_id) == snapimage_major()) {
		pr_err("Unable to create snapshot: device [%u:%u] is a snapshot image\n",
		       MAJOR(dev_id), MINOR(dev_id));
		return -EINVAL;
	}

	tracker = tracker_create_or_get(dev_id);
	if (IS_ERR(tracker)) {
		pr_err("Unable to create snapshot: failed to add device [%u:%u] to tracking\n",
		       MAJOR(dev_id), MINOR(dev_id));
		return PTR_ERR(tracker);
	}

	snapshot->tracker_array[snapshot->count++] = tracker;
	return 0;
}

int snapshot_create(struct blk_snap_dev *dev_id_array, unsigned int count,
		    uuid_t *id)
{
	struct snapshot *snapshot = NULL;
	int ret;
	unsigned int inx;

	pr_info("Create snapshot for devices:\n");
	for (inx = 0; inx < count; ++inx)
		pr_info("\t%u:%u\n", dev_id_array[inx].mj,
			dev_id_array[inx].mn);

	if (!count)
		return -EINVAL;

	ret = check_same_devices(dev_id_array, count);
	if (ret)
		return ret;

	snapshot = snapshot_new(count);
	if (IS_ERR(snapshot)) {
		pr_err("Unable to create snapshot: failed to allocate snapshot structure\n");
		return PTR_ERR(snapshot);
	}

	for (inx = 0; inx < count; ++inx) {
		ret = snapshot_add_device(snapshot,
					  MKDEV(dev_id_array[inx].mj,
						dev_id_array[inx].mn));
		if (ret)
			goto fail;
	}

	down_write(&snapshots_lock);
	list_add_tail(&snapshot->link, &snapshots);
	up_write(&snapshots_lock);

	uuid_copy(id, &snapshot->id);
	pr_info("Snapshot %pUb was created\n", &snapshot->id);
	return 0;
fail:
	pr_err("Snapshot cannot be created\n");

	snapshot_put(snapshot);
	return ret;
}

static struct snapshot *snapshot_get_by_id(uuid_t *id)
{
	struct snapshot *snapshot = NULL;
	struct snapshot *s;

	down_read(&snapshots_lock);
	if (list_empty(&snapshots))
		goto out;

	list_for_each_entry(s, &snapshots, link) {
		if (uuid_equal(&s->id, id)) {
			snapshot = s;
			snapshot_get(snapshot);
			break;
		}
	}
out:
	up_read(&snapshots_lock);
	return snapshot;
}

int snapshot_destroy(uuid_t *id)
{
	struct snapshot *snapshot = NULL;
	struct snapshot *s;

	pr_info("Destroy snapshot %pUb\n", id);
	down_write(&snapshots_lock);
	list_for_each_entry(s, &snapshots, link) {
		if (uuid_equal(&s->id, id)) {
			snapshot = s;
			snapshot_set_dying(snapshot);
			break;
		}
	}
	up_write(&snapshots_lock);

	if (!snapshot) {
		pr_err("Unable to destroy snapshot: cannot find snapshot by id %pUb\n",
		       id);
		/* Maybe being released still: say so only when it is. */
		if (wait_var_event_killable(&snapshots_dying,
					    !snapshot_id_dying(id)))
			return -EINTR;
		return -ESRCH;
	}
	return snapshot_release_unlinked(snapshot);
}

/*
 * A snapshot image's writes are copied on write into storage, maybe into
 * the image itself: it cannot hold storage.
 */
static int snapshot_check_storage_dev(dev_t dev_id)
{
	if (MAJOR(dev_id) != snapimage_major())
		return 0;
	pr_err("A snapshot image [%u:%u] cannot hold difference storage\n",
	       MAJOR(dev_id), MINOR(dev_id));
	return -EINVAL;
}

int snapshot_append_storage(uuid_t *id, dev_t dev_id,
			    struct blk_snap_block_range *ranges,
			    unsigned int range_count)
{
	int ret = 0;
	struct snapshot *snapshot;

	ret = snapshot_check_storage_dev(dev_id);
	if (ret)
		return ret;
	snapshot = snapshot_get_by_id(id);
	if (!snapshot)
		return -ESRCH;

	ret = diff_storage_append_block(snapshot->diff_storage, dev_id, ranges,
					range_count);
	snapshot_put(snapshot);
	return ret;
}

int snapshot_append_file(uuid_t *id, struct file *file,
			 struct blk_snap_block_range *ranges,
			 unsigned int range_count)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct snapshot *snapshot;
	int ret;

	/* The device of the file's blocks, if it has one. */
	if (sb->s_bdev) {
		ret = snapshot_check_storage_dev(sb->s_bdev->bd_dev);
		if (ret)
			return ret;
	}
	snapshot = snapshot_get_by_id(id);
	if (!snapshot)
		return -ESRCH;

	ret = diff_storage_append_file(snapshot->diff_storage, file, ranges,
				       range_count);
	snapshot_put(snapshot);
	return ret;
}

static void snapshot_put_diff_areas(struct snapshot *snapshot)
{
	int inx;

	for (inx = 0; inx < snapshot->count; inx++) {
		struct tracker *tracker = snapshot->tracker_array[inx];

		diff_area_put(tracker->diff_area);
		tracker->diff_area = NULL;
	}
}

static int snapshot_new_diff_areas(struct snapshot *snapshot)
{
	int inx;

	for (inx = 0; inx < snapshot->count; inx++) {
		struct tracker *tracker = snapshot->tracker_array[inx];
		struct diff_area *diff_area;

		diff_area = diff_area_new(tracker->dev_id,
					  snapshot->diff_storage);
		if (IS_ERR(diff_area)) {
			snapshot_put_diff_areas(snapshot);
			return PTR_ERR(diff_area);
		}
		tracker->diff_area = diff_area;
	}
	return 0;
}

/* The partitions of a snapshot's whole disks, frozen for its take. */
struct frozen_parts {
	unsigned int count;
	struct block_device *bdev[];
};

/* Is @part a partition of a whole disk of @snapshot? */
static bool snapshot_has_disk(struct snapshot *snapshot,
			      struct block_device *part)
{
	int inx;

	if (!bdev_is_partition(part))
		return false;
	for (inx = 0; inx < snapshot->count; inx++)
		if (snapshot->tracker_array[inx]->diff_area->orig_bdev->bd_disk ==
		    part->bd_disk)
			return true;
	return false;
}

/* Counts, or with @devs fills in, the partitions of @disk, under RCU. */
static unsigned int disk_partitions(struct gendisk *disk, dev_t *devs,
				    unsigned int max)
{
	struct block_device *part;
	unsigned long idx;
	unsigned int n = 0;

	rcu_read_lock();
	xa_for_each_start(&disk->part_tbl, idx, part, 1) {
		if (devs && n < max)
			devs[n] = part->bd_dev;
		n++;
	}
	rcu_read_unlock();
	return devs ? min(n, max) : n;
}

/*
 * freeze_bdev() freezes the file system on that very device only. A
 * snapshot of a whole disk holds the file systems of its partitions as
 * well: they are frozen too, so that each is consistent in the image.
 * Without memory for the list, the take goes on with the disks alone.
 */
static struct frozen_parts *freeze_partitions(struct snapshot *snapshot)
{
	struct frozen_parts *parts;
	unsigned int inx, total = 0, n = 0;
	dev_t *devs;

	for (inx = 0; inx < snapshot->count; inx++) {
		struct block_device *bdev =
			snapshot->tracker_array[inx]->diff_area->orig_bdev;

		if (!bdev_is_partition(bdev))
			total += disk_partitions(bdev->bd_disk, NULL, 0);
	}
	if (!total)
		return NULL;

	parts = kzalloc(struct_size(parts, bdev, total), GFP_KERNEL);
	devs = kcalloc(total, sizeof(*devs), GFP_KERNEL);
	if (!parts || !devs) {
		pr_warn("No memory to freeze the partitions of the snapshot's disks\n");
		kfree(devs);
		kfree(parts);
		return NULL;
	}
	for (inx = 0; inx < snapshot->count; inx++) {
		struct block_device *bdev =
			snapshot->tracker_array[inx]->diff_area->orig_bdev;

		if (!bdev_is_partition(bdev))
			n += disk_partitions(bdev->bd_disk, devs + n, total - n);
	}
	for (inx = 0; inx < n; inx++) {
		struct block_device *part;

		part = blkdev_get_by_dev(devs[inx], FMODE_READ, NULL);
		if (IS_ERR(part))
			continue;	/* deleted since */
		if (!snapshot_has_disk(snapshot, part)) {
			/* Deleted since, and its number given to another. */
			blkdev_put(part, FMODE_READ);
			continue;
		}
		if (freeze_bdev(part)) {
			pr_err("Failed to freeze device [%u:%u]\n",
			       MAJOR(devs[inx]), MINOR(devs[inx]));
			blkdev_put(part, FMODE_READ);
			continue;
		}
		parts->bdev[parts->count++] = part;
	}
	kfree(devs);
	return parts;
}

static void thaw_partitions(struct frozen_parts *parts)
{
	unsigned int inx;

	if (!parts)
		return;
	for (inx = 0; inx < parts->count; inx++) {
		if (thaw_bdev(parts->bdev[inx]))
			pr_err("Failed to thaw device [%u:%u]\n",
			       MAJOR(parts->bdev[inx]->bd_dev),
			       MINOR(parts->bdev[inx]->bd_dev));
		blkdev_put(parts->bdev[inx], FMODE_READ);
	}
	kfree(parts);
}

static void snapshot_freeze(struct snapshot *snapshot, bool freeze)
{
	int inx;

	for (inx = 0; inx < snapshot->count; inx++) {
		struct tracker *tracker = snapshot->tracker_array[inx];
		struct block_device *bdev = tracker->diff_area->orig_bdev;
		int ret = freeze ? freeze_bdev(bdev) : thaw_bdev(bdev);

		if (ret)
			pr_err("Failed to %s device [%u:%u]\n",
			       freeze ? "freeze" : "thaw",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
	}
}

/*
 * Switch the CBT tables and enable copy-on-write on every device at once:
 * the file systems are frozen and no write bio is in the filter.
 */
static int snapshot_switch_trackers(struct snapshot *snapshot)
{
	struct frozen_parts *parts;
	unsigned int current_flag;
	int inx;
	int ret = 0;

	/*
	 * The snapshot's own devices first: one of them may be backed by a
	 * file on a partition (a loop device), whose freeze must still be
	 * able to write there.
	 */
	snapshot_freeze(snapshot, true);
	parts = freeze_partitions(snapshot);
	current_flag = memalloc_noio_save();
	tracker_lock();

	for (inx = 0; inx < snapshot->count; inx++) {
		ret = tracker_take_snapshot(snapshot->tracker_array[inx]);
		if (ret) {
			pr_err("Unable to take snapshot: failed to capture snapshot %pUb\n",
			       &snapshot->id);
			break;
		}
	}
	if (ret) {
		while (inx--)
			tracker_release_snapshot(snapshot->tracker_array[inx]);
	}

	tracker_unlock();
	memalloc_noio_restore(current_flag);
	thaw_partitions(parts);
	snapshot_freeze(snapshot, false);
	return ret;
}

/*
 * The writes admitted before the take must have landed before its images
 * can be read: each is either in the image, or copied with its chunk if
 * a later write came first, and never lands in the image afterwards.
 * Nobody can read an image yet: they are made after this.
 */
static int snapshot_wait_for_writes_before_take(struct snapshot *snapshot)
{
	int inx;

	for (inx = 0; inx < snapshot->count; inx++) {
		struct tracker *tracker = snapshot->tracker_array[inx];

		if (tracker_wait_for_writes_before_take(tracker)) {
			pr_err("Unable to take snapshot of [%u:%u]: killed while waiting for the writes in flight at the take\n",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
			return -EINTR;
		}
	}
	return 0;
}

static int snapshot_create_images(struct snapshot *snapshot)
{
	int inx;

	for (inx = 0; inx < snapshot->count; inx++) {
		struct tracker *tracker = snapshot->tracker_array[inx];
		struct snapimage *snapimage;

		if (diff_area_is_corrupted(tracker->diff_area)) {
			pr_err("Unable to take snapshot of [%u:%u]: diff area is corrupted\n",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id));
			return -EIO;
		}

		snapimage = snapimage_create(tracker->diff_area,
					     tracker->cbt_map);
		if (IS_ERR(snapimage)) {
			pr_err("Failed to create snapshot image for device [%u:%u] with error=%d\n",
			       MAJOR(tracker->dev_id), MINOR(tracker->dev_id),
			       (int)PTR_ERR(snapimage));
			return PTR_ERR(snapimage);
		}
		snapshot->snapimage_array[inx] = snapimage;
	}
	return 0;
}

int snapshot_take(uuid_t *id)
{
	struct snapshot *snapshot;
	bool unlinked = false;
	int ret;

	snapshot = snapshot_get_by_id(id);
	if (!snapshot)
		return -ESRCH;

	mutex_lock(&snapshot->lock);
	if (snapshot->is_taken) {
		ret = -EALREADY;
		goto out;
	}

	/* Until the trackers switch, a failure leaves the snapshot as it was. */
	ret = snapshot_new_diff_areas(snapshot);
	if (ret)
		goto out;

	ret = snapshot_switch_trackers(snapshot);
	if (ret) {
		snapshot_put_diff_areas(snapshot);
		goto out;
	}
	snapshot->is_taken = true;

	ret = snapshot_wait_for_writes_before_take(snapshot);
	if (!ret)
		ret = snapshot_create_images(snapshot);
	if (!ret)
		pr_info("Snapshot was taken successfully\n");
	if (ret) {
		/*
		 * The devices are being copied on write already, for a
		 * snapshot that cannot be read: it is of no use to anybody.
		 */
		pr_err("Unable to take snapshot: snapshot %pUb is destroyed\n",
		       &snapshot->id);
		down_write(&snapshots_lock);
		if (!snapshot->is_dying) {
			/* The list's reference is ours now. */
			snapshot_set_dying(snapshot);
			unlinked = true;
		}
		up_write(&snapshots_lock);
	}
out:
	mutex_unlock(&snapshot->lock);
	snapshot_put(snapshot);
	/* As a destroy would: the release is over when the take returns. */
	if (unlinked)
		snapshot_release_unlinked(snapshot);
	return ret;
}

struct event *snapshot_wait_event(uuid_t *id, unsigned long timeout_ms)
{
	struct snapshot *snapshot;
	struct event *event;

	snapshot = snapshot_get_by_id(id);
	if (!snapshot)
		return ERR_PTR(-ESRCH);

	diff_storage_ask_again(snapshot->diff_storage);
	event = event_wait(&snapshot->diff_storage->event_queue, timeout_ms);

	snapshot_put(snapshot);
	return event;
}

/**
 * snapshot_collect() - List the snapshots.
 * @pcount:
 *	In: the size of @ids, out: the number of snapshots.
 * @ids:
 *	Kernel array for the ids, or NULL to count them only.
 *
 * Return: 0, or -ENOBUFS if @ids is too small.
 */
int snapshot_collect(unsigned int *pcount, struct blk_snap_uuid *ids)
{
	unsigned int count = 0;
	struct snapshot *s;
	int ret = 0;

	down_read(&snapshots_lock);
	list_for_each_entry(s, &snapshots, link) {
		if (ids) {
			if (count >= *pcount) {
				ret = -ENOBUFS;
				continue;
			}
			export_uuid(ids[count].b, &s->id);
		}
		count++;
	}
	up_read(&snapshots_lock);

	*pcount = count;
	return ret;
}

/**
 * snapshot_collect_images() - List the devices of a snapshot and their
 *	images.
 * @id:
 *	Snapshot id.
 * @image_info_array:
 *	Kernel array of at least *@pcount elements, or NULL to count only.
 *	Before the snapshot is taken the image ids are 0:0.
 * @pcount:
 *	In: the size of the array, out: the number of devices.
 *
 * Return: 0, -ESRCH for an unknown snapshot, -ENOBUFS if the array is too
 * small.
 */
int snapshot_collect_images(uuid_t *id,
			    struct blk_snap_image_info *image_info_array,
			    unsigned int *pcount)
{
	struct snapshot *snapshot;
	int ret = 0;
	int inx;

	snapshot = snapshot_get_by_id(id);
	if (!snapshot)
		return -ESRCH;

	/* A take may wait long for writes in flight: be killable. */
	if (mutex_lock_killable(&snapshot->lock)) {
		snapshot_put(snapshot);
		return -EINTR;
	}
	if (!image_info_array)
		goto out;
	if (*pcount < snapshot->count) {
		ret = -ENOBUFS;
		goto out;
	}

	for (inx = 0; inx < snapshot->count; inx++) {
		dev_t orig_dev_id = snapshot->tracker_array[inx]->dev_id;
		struct snapimage *snapimage = snapshot->snapimage_array[inx];

		image_info_array[inx].orig_dev_id.mj = MAJOR(orig_dev_id);
		image_info_array[inx].orig_dev_id.mn = MINOR(orig_dev_id);
		if (snapimage) {
			image_info_array[inx].image_dev_id.mj =
				MAJOR(snapimage->image_dev_id);
			image_info_array[inx].image_dev_id.mn =
				MINOR(snapimage->image_dev_id);
		}
	}
out:
	*pcount = snapshot->count;
	mutex_unlock(&snapshot->lock);
	snapshot_put(snapshot);
	return ret;
}

int snapshot_mark_dirty_blocks(dev_t image_dev_id,
			       struct blk_snap_block_range *block_ranges,
			       unsigned int count)
{
	struct cbt_map *cbt_map = NULL;
	struct snapshot *s;
	int ret;
	int inx;

	pr_debug("Marking [%d] dirty blocks for device [%u:%u]\n", count,
		 MAJOR(image_dev_id), MINOR(image_dev_id));

	down_read(&snapshots_lock);
	list_for_each_entry(s, &snapshots, link) {
		for (inx = 0; inx < s->count && !cbt_map; inx++) {
			struct snapimage *snapimage = s->snapimage_array[inx];

			/* Before take, or after a failed take, there is none. */
			if (snapimage && snapimage->image_dev_id == image_dev_id)
				cbt_map = snapimage->cbt_map;
		}
		if (cbt_map)
			break;
	}
	if (!cbt_map) {
		pr_err("Cannot find snapshot image device [%u:%u]\n",
		       MAJOR(image_dev_id), MINOR(image_dev_id));
		ret = -ENODEV;
		goto out;
	}

	ret = cbt_map_mark_dirty_blocks(cbt_map, block_ranges, count);
	if (ret)
		pr_err("Failed to set CBT table. errno=%d\n", abs(ret));
out:
	up_read(&snapshots_lock);
	return ret;
}
