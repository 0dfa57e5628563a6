// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-snapimage: " fmt
#include <linux/slab.h>
#include <linux/cdrom.h>
#include <linux/blk-mq.h>
#include <uapi/linux/blksnap.h>
#include "snapimage.h"
#include "diff_area.h"
#include "chunk.h"
#include "diff_io.h"
#include "cbt_map.h"

#define NR_SNAPIMAGE_DEVT	BIT(MINORBITS)

struct submit_event {
	struct list_head link;
	struct bio *bio;
};

static unsigned int _major;
static DEFINE_IDA(snapimage_devt_ida);

/**
 * struct image_read - A read of one chunk of the image, or of a run of
 *	chunks, sent to the device that holds their data.
 * @snapimage:
 *	The image.
 * @area_read:
 *	Keeps copy-on-write of the chunks waiting until the read completes.
 * @bio:
 *	The image's bio that the read is a part of.
 * @clone:
 *	The read itself; last, since the bio_set allocates what precedes it.
 */
struct image_read {
	struct snapimage *snapimage;
	struct diff_area_read area_read;
	struct bio *bio;
	struct bio clone;
};

static struct bio_set image_read_bioset;

static void image_read_endio(struct bio *clone)
{
	struct image_read *rd = container_of(clone, struct image_read, clone);
	struct snapimage *snapimage = rd->snapimage;
	struct bio *bio = rd->bio;
	blk_status_t status = clone->bi_status;
	unsigned long flags;

	/*
	 * Once the snapshot is corrupted, the original may have been
	 * overwritten without a copy, even while this read was in flight.
	 */
	if (status == BLK_STS_OK && diff_area_is_corrupted(snapimage->diff_area))
		status = BLK_STS_IOERR;
	if (status != BLK_STS_OK)
		bio->bi_status = status;

	diff_area_image_read_end(snapimage->diff_area, &rd->area_read);
	bio_put(clone);
	bio_endio(bio);

	/* snapimage_free() may free the image as soon as the count is zero. */
	spin_lock_irqsave(&snapimage->inflight_lock, flags);
	if (!--snapimage->inflight_reads)
		wake_up(&snapimage->inflight_waitqueue);
	spin_unlock_irqrestore(&snapimage->inflight_lock, flags);
}

/*
 * Sends the first @len bytes of @bio to where their data is, the way a
 * device-mapper target remaps a bio.
 */
static void image_read_remap(struct snapimage *snapimage, struct bio *bio,
			     unsigned int len, struct image_read *rd,
			     const struct diff_region *from)
{
	struct bio *clone = &rd->clone;

	bio_set_dev(clone, from->bdev);
	clone->bi_iter.bi_sector = from->sector;
	clone->bi_iter.bi_size = len;
	/* Reads need no copy-on-write: skip the filter of the original. */
	bio_set_flag(clone, BIO_FILTERED);
	clone->bi_end_io = image_read_endio;

	rd->snapimage = snapimage;
	rd->bio = bio;

	spin_lock_irq(&snapimage->inflight_lock);
	snapimage->inflight_reads++;
	spin_unlock_irq(&snapimage->inflight_lock);

	bio_inc_remaining(bio);
	submit_bio_noacct(clone);
}

/*
 * Copies the first @len bytes of @bio from the chunk's buffer. The chunk is
 * locked, or @parked for storage (chunk_parked_read_begin()).
 */
static blk_status_t image_read_buffer(struct diff_area *diff_area,
				      struct bio *bio, unsigned int len,
				      struct chunk *chunk, bool parked)
{
	struct diff_area_image_ctx io_ctx;
	struct bvec_iter piece = bio->bi_iter;
	struct bvec_iter iter;
	struct bio_vec bvec;
	sector_t sector = bio->bi_iter.bi_sector;
	blk_status_t status = BLK_STS_OK;

	piece.bi_size = len;
	diff_area_image_ctx_init(&io_ctx, diff_area, false);
	/* The chunk is locked and out of the cache: the context releases it. */
	io_ctx.chunk = chunk;
	__bio_for_each_segment(bvec, bio, iter, piece) {
		status = diff_area_image_io(&io_ctx, &bvec, &sector);
		if (unlikely(status != BLK_STS_OK))
			break;
	}
	if (parked) {
		/* Neither cached nor unlocked: its lock's holder does that. */
		io_ctx.chunk = NULL;
		chunk_parked_read_end(chunk);
		chunk_put(chunk);
	} else {
		diff_area_image_ctx_done(&io_ctx);
	}

	return status;
}

/*
 * Serves the part of @bio that lies in its first chunk: from the chunk's
 * buffer if it has one, otherwise by a read sent straight to the original
 * device (chunk never copied) or to the difference storage (chunk stored),
 * which completes on its own. Such a read also takes in the chunks after
 * the first whose data follows on the same device. Sets @len to the bytes
 * served.
 */
static blk_status_t image_read_chunk(struct snapimage *snapimage,
				     struct bio *bio, unsigned int *len)
{
	struct diff_area *diff_area = snapimage->diff_area;
	struct diff_region from;
	struct image_read *rd;
	struct chunk *chunk;
	struct bio *clone;
	bool parked;
	int ret;

	/*
	 * Allocated first: the read's tracking lives in it. bio_set_dev()
	 * points it at the device that holds the data once that is known.
	 */
	clone = bio_alloc_clone(bio->bi_bdev, bio, GFP_NOIO, &image_read_bioset);
	if (unlikely(!clone))
		return BLK_STS_RESOURCE;
	rd = container_of(clone, struct image_read, clone);

	ret = diff_area_image_read_begin(diff_area, bio->bi_iter.bi_sector,
					 bio_sectors(bio), &rd->area_read,
					 &from);
	if (unlikely(ret)) {
		bio_put(clone);
		return BLK_STS_IOERR;
	}

	*len = min_t(u64, bio->bi_iter.bi_size, from.count << SECTOR_SHIFT);
	if (from.bdev && rd->area_read.chunk &&
	    (((from.sector << SECTOR_SHIFT) | *len) &
	     (bdev_logical_block_size(from.bdev) - 1))) {
		/* Storage with larger blocks than the image's. */
		ret = diff_area_image_read_load(diff_area, rd->area_read.chunk);
		if (unlikely(ret)) {
			diff_area_image_read_end(diff_area, &rd->area_read);
			bio_put(clone);
			return BLK_STS_IOERR;
		}
		from.bdev = NULL;
	}
	if (from.bdev) {
		image_read_remap(snapimage, bio, *len, rd, &from);
		return BLK_STS_OK;
	}

	/* In the buffer: the chunk is held, and the clone is not needed. */
	chunk = rd->area_read.chunk;
	parked = rd->area_read.parked;
	bio_put(clone);
	return image_read_buffer(diff_area, bio, *len, chunk, parked);
}

/*
 * Reads are served in the submitter's context, without the worker's
 * hand-off, one chunk (or run of chunks) per call: the read sent for it
 * waits on current->bio_list until this returns, so nothing here may wait
 * for a second chunk while it holds the first. The rest of the bio is submitted
 * again and comes back once that read is on its way.
 */
static void image_read(struct snapimage *snapimage, struct bio *bio)
{
	blk_status_t status;
	unsigned int len;

	status = image_read_chunk(snapimage, bio, &len);
	if (likely(status == BLK_STS_OK) && len < bio->bi_iter.bi_size) {
		bio_advance(bio, len);
		submit_bio_noacct(bio);
		return;
	}
	bio->bi_status = status;
	bio_endio(bio);
}

/* Writes (and flushes) go through the chunk's buffer, one chunk at a time. */
static void image_write(struct snapimage *snapimage, struct bio *bio)
{
	struct diff_area_image_ctx io_ctx;
	struct bio_vec bvec;
	struct bvec_iter iter;
	sector_t pos = bio->bi_iter.bi_sector;
	bool is_write = op_is_write(bio_op(bio));

	/*
	 * A write to the image is a change since the snapshot as well: mark
	 * it in both tables, so that the next incremental backup copies it.
	 */
	if (is_write && bio_sectors(bio))
		cbt_map_set_both(snapimage->cbt_map, pos, bio_sectors(bio));

	diff_area_throttling_io(snapimage->diff_area);
	diff_area_image_ctx_init(&io_ctx, snapimage->diff_area, is_write);
	bio_for_each_segment(bvec, bio, iter) {
		blk_status_t st;

		st = diff_area_image_io(&io_ctx, &bvec, &pos);
		if (unlikely(st != BLK_STS_OK)) {
			bio->bi_status = st;
			break;
		}
	}
	diff_area_image_ctx_done(&io_ctx);
	bio_endio(bio);
}

static inline bool submit_bio_have(struct snapimage *snapimage)
{
	bool ret;

	spin_lock(&snapimage->submit_list_lock);
	ret = !list_empty(&snapimage->submit_list);
	spin_unlock(&snapimage->submit_list_lock);

	return ret;
}

static inline struct bio *submit_bio_pop(struct snapimage *snapimage)
{
	struct bio *bio;
	struct submit_event *ev;

	spin_lock(&snapimage->submit_list_lock);
	ev = list_first_entry_or_null(&snapimage->submit_list,
				      struct submit_event, link);
	if (ev) {
		bio = ev->bio;
		list_del(&ev->link);
	} else {
		bio = NULL;
	}
	spin_unlock(&snapimage->submit_list_lock);

	kfree(ev);

	return bio;
}

static inline int submit_bio_push(struct snapimage *snapimage, struct bio *bio,
				  gfp_t gfp)
{
	struct submit_event *ev;

	ev = kmalloc(sizeof(*ev), gfp);
	if (!ev)
		return -ENOMEM;

	INIT_LIST_HEAD(&ev->link);
	ev->bio = bio;

	spin_lock(&snapimage->submit_list_lock);
	list_add_tail(&ev->link, &snapimage->submit_list);
	spin_unlock(&snapimage->submit_list_lock);

	return 0;
}

static int snapimage_submit_worker_fn(void *data)
{
	struct snapimage *snapimage = data;
	struct bio *bio;

	pr_debug("Worker for the device [%d:%d] started",
		 MAJOR(snapimage->image_dev_id), MINOR(snapimage->image_dev_id));

	set_user_nice(current, MIN_NICE);
	current->flags |= PF_LOCAL_THROTTLE | PF_MEMALLOC_NOIO;

	while (!kthread_should_stop()) {
		wait_event_interruptible_timeout(snapimage->submit_waitqueue,
						 submit_bio_have(snapimage) ||
						 kthread_should_stop(),
						 5 * HZ);

		while ((bio = submit_bio_pop(snapimage)))
			image_write(snapimage, bio);

		schedule();
	}

	while ((bio = submit_bio_pop(snapimage)))
		image_write(snapimage, bio);

	pr_debug("Worker for the device [%d:%d] stopped",
		 MAJOR(snapimage->image_dev_id), MINOR(snapimage->image_dev_id));

	return 0;
}

/*
 * The image's queue does not take REQ_NOWAIT (no QUEUE_FLAG_NOWAIT):
 * submit_bio_noacct() fails such bios before they get here, so every bio
 * here may wait.
 */
static void snapimage_submit_bio(struct bio *bio)
{
	struct snapimage *snapimage = bio->bi_bdev->bd_disk->private_data;

	if (!snapimage->is_ready) {
		bio->bi_status = BLK_STS_IOERR;
		bio_endio(bio);
		return;
	}

	/* A read is served at once; writes go to the worker. */
	if (bio_op(bio) == REQ_OP_READ) {
		image_read(snapimage, bio);
		return;
	}

	if (!submit_bio_push(snapimage, bio, GFP_NOIO)) {
		wake_up(&snapimage->submit_waitqueue);
		return;
	}

	bio->bi_status = BLK_STS_IOERR;
	bio_endio(bio);
}

static const struct block_device_operations bd_ops = {
	.owner = THIS_MODULE,
	.submit_bio = snapimage_submit_bio
};

void snapimage_free(struct snapimage *snapimage)
{
	pr_info("Snapshot image disk [%u:%u] delete\n",
		MAJOR(snapimage->image_dev_id), MINOR(snapimage->image_dev_id));

	/*
	 * After del_gendisk() no new bio reaches snapimage_submit_bio(), even
	 * if the image is still open; the worker completes those it has, and
	 * the reads sent on to the original or the storage must be done
	 * before the chunks can go.
	 */
	del_gendisk(snapimage->disk);
	snapimage->is_ready = false;
	kthread_stop(snapimage->submit_task);

	spin_lock_irq(&snapimage->inflight_lock);
	wait_event_lock_irq(snapimage->inflight_waitqueue,
			    !snapimage->inflight_reads,
			    snapimage->inflight_lock);
	spin_unlock_irq(&snapimage->inflight_lock);

	put_disk(snapimage->disk);

	diff_area_put(snapimage->diff_area);
	cbt_map_put(snapimage->cbt_map);

	ida_free(&snapimage_devt_ida, MINOR(snapimage->image_dev_id));
	kfree(snapimage);
}

struct snapimage *snapimage_create(struct diff_area *diff_area,
				   struct cbt_map *cbt_map)
{
	int ret = 0;
	int minor;
	struct snapimage *snapimage = NULL;
	struct gendisk *disk;
	struct block_device *orig_bdev;
	struct task_struct *task;

	snapimage = kzalloc(sizeof(*snapimage), GFP_KERNEL);
	if (!snapimage)
		return ERR_PTR(-ENOMEM);

	minor = ida_alloc_range(&snapimage_devt_ida, 0, NR_SNAPIMAGE_DEVT - 1,
				GFP_KERNEL);
	if (minor < 0) {
		ret = minor;
		pr_err("Failed to allocate minor for snapshot image device. errno=%d\n",
		       abs(ret));
		goto fail_free_image;
	}

	snapimage->is_ready = true;
	snapimage->capacity = cbt_map->device_capacity;
	snapimage->image_dev_id = MKDEV(_major, minor);
	pr_info("Create snapshot image device [%u:%u] for original device [%u:%u]\n",
		MAJOR(snapimage->image_dev_id),
		MINOR(snapimage->image_dev_id),
		MAJOR(diff_area->orig_bdev->bd_dev),
		MINOR(diff_area->orig_bdev->bd_dev));

	INIT_LIST_HEAD(&snapimage->submit_list);
	spin_lock_init(&snapimage->submit_list_lock);
	init_waitqueue_head(&snapimage->submit_waitqueue);
	spin_lock_init(&snapimage->inflight_lock);
	init_waitqueue_head(&snapimage->inflight_waitqueue);

	task = kthread_create(snapimage_submit_worker_fn, snapimage,
			      BLK_SNAP_IMAGE_NAME "%d",
			      MINOR(snapimage->image_dev_id));
	if (IS_ERR(task)) {
		ret = PTR_ERR(task);
		pr_err("Failed to create thread '%s%d'\n",
		       BLK_SNAP_IMAGE_NAME, minor);
		goto fail_free_minor;
	}
	snapimage->submit_task = task;

	disk = blk_alloc_disk(NUMA_NO_NODE);
	if (!disk) {
		pr_err("Failed to allocate disk\n");
		ret = -ENOMEM;
		goto fail_free_worker;
	}
	snapimage->disk = disk;

	blk_queue_max_hw_sectors(disk->queue, BLK_DEF_MAX_SECTORS);
	blk_queue_flag_set(QUEUE_FLAG_NOMERGES, disk->queue);
	/* Filesystems on the image need the origin's sector size. */
	orig_bdev = diff_area->orig_bdev;
	blk_queue_logical_block_size(disk->queue,
				     bdev_logical_block_size(orig_bdev));
	blk_queue_physical_block_size(disk->queue,
				      bdev_physical_block_size(orig_bdev));
	/*
	 * A read of whole chunks goes out as one request per chunk, or per
	 * run of chunks whose data lies together (diff_area_span_read());
	 * add_disk() sizes the read-ahead from io_opt (twice it).
	 */
	blk_queue_io_opt(disk->queue,
			 diff_area_chunk_sectors(diff_area) << SECTOR_SHIFT);

	if (snprintf(disk->disk_name, DISK_NAME_LEN, "%s%d",
		     BLK_SNAP_IMAGE_NAME, minor) < 0) {
		pr_err("Unable to set disk name for snapshot image device: invalid minor %u\n",
		       minor);
		ret = -EINVAL;
		goto fail_cleanup_disk;
	}
	pr_debug("Snapshot image disk name [%s]\n", disk->disk_name);

	disk->flags = 0;
#ifdef GENHD_FL_NO_PART_SCAN
	disk->flags |= GENHD_FL_NO_PART_SCAN;
#else
	disk->flags |= GENHD_FL_NO_PART;
#endif
	disk->major = _major;
	disk->first_minor = minor;
	disk->minors = 1; /* One disk has only one partition */

	disk->fops = &bd_ops;
	disk->private_data = snapimage;

	set_capacity(disk, snapimage->capacity);
	pr_debug("Snapshot image device capacity %lld bytes\n",
		 (u64)(snapimage->capacity << SECTOR_SHIFT));

	diff_area_get(diff_area);
	snapimage->diff_area = diff_area;
	cbt_map_get(cbt_map);
	snapimage->cbt_map = cbt_map;

	pr_debug("Add device [%d:%d]",
		 MAJOR(snapimage->image_dev_id), MINOR(snapimage->image_dev_id));
	/* The worker must be running before the first bio can come. */
	wake_up_process(snapimage->submit_task);

	ret = add_disk(disk);
	if (ret) {
		pr_err("Failed to add disk [%s] for snapshot image device\n",
		       disk->disk_name);
		goto fail_put_refs;
	}

	return snapimage;

fail_put_refs:
	cbt_map_put(snapimage->cbt_map);
	diff_area_put(snapimage->diff_area);
fail_cleanup_disk:
	put_disk(disk);
fail_free_worker:
	kthread_stop(snapimage->submit_task);
fail_free_minor:
	ida_free(&snapimage_devt_ida, minor);
fail_free_image:
	kfree(snapimage);

	return ERR_PTR(ret);
}

int snapimage_init(void)
{
	int mj;
	int ret;

	ret = bioset_init(&image_read_bioset, BIO_POOL_SIZE,
			  offsetof(struct image_read, clone),
			  BIOSET_NEED_RESCUER);
	if (ret)
		return ret;

	mj = register_blkdev(0, BLK_SNAP_IMAGE_NAME);
	if (mj < 0) {
		pr_err("Failed to register snapshot image block device\n");
		bioset_exit(&image_read_bioset);
		return mj;
	}

	_major = mj;
	pr_info("Snapshot image block device major %d was registered\n", mj);

	return 0;
}

void snapimage_done(void)
{
	unregister_blkdev(_major, BLK_SNAP_IMAGE_NAME);
	bioset_exit(&image_read_bioset);
	pr_info("Snapshot image block device [%d] was unregistered\n", _major);
}

int snapimage_major(void)
{
	return _major;
}
