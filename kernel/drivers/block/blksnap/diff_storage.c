// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-diff-storage: " fmt
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/sort.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/swap.h>
#include <linux/rbtree.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/fscrypt.h>
#include <uapi/linux/magic.h>
#include <uapi/linux/blksnap.h>
#include "params.h"
#include "diff_io.h"
#include "diff_buffer.h"
#include "diff_storage.h"

/**
 * struct storage_bdev - Information about the opened block device.
 * @link:
 *	In &diff_storage.storage_bdevs.
 * @dev_id:
 *	Its device number.
 * @bdev:
 *	The device, opened for reading and writing while the snapshot lives.
 * @index:
 *	Its number in the storage, from 0, in the order devices were added.
 */
struct storage_bdev {
	struct list_head link;
	dev_t dev_id;
	struct block_device *bdev;
	unsigned int index;
};

/**
 * struct storage_file - A file whose blocks the storage writes into.
 * @link:
 *	In &diff_storage.storage_files.
 * @file:
 *	A reference to the file, which keeps its inode and its mount; the
 *	inode has S_SWAPFILE until diff_storage_free().
 */
struct storage_file {
	struct list_head link;
	struct file *file;
};

#define STORAGE_PLACE_MAX_BDEVS (1U << (64 - STORAGE_PLACE_SECTOR_BITS))

/**
 * struct storage_block - A storage unit reserved for storing differences.
 * @link:
 *	In &diff_storage.empty_blocks, then &diff_storage.filled_blocks.
 * @bdev:
 *	The device that holds it.
 * @sector:
 *	Its first sector.
 * @count:
 *	Its size in sectors.
 * @used:
 *	How many of its sectors, from the first, hold chunks already.
 */
struct storage_block {
	struct list_head link;
	struct block_device *bdev;
	sector_t sector;
	sector_t count;
	sector_t used;
};

/*
 * One storage append at a time, across the checks and the append, for
 * every snapshot: the checks look at all of them. Also protects the list
 * of storages and each one's origins.
 */
static DEFINE_MUTEX(append_lock);
static LIST_HEAD(diff_storages);

#define LOW_SPACE_EVENT_SIZE sizeof(struct blk_snap_event_low_free_space)

/*
 * Keep a spare low free space event, made where the caller may wait for
 * memory: the request for storage is asked from where it may not (a copy
 * waiting for storage, a REQ_NOWAIT write), and, lost, it would leave the
 * storage to overflow with user space ready to give more.
 */
static void diff_storage_refill_spare_event(struct diff_storage *diff_storage,
					    gfp_t gfp)
{
	struct event *event;

	if (READ_ONCE(diff_storage->spare_event))
		return;
	event = event_alloc(gfp, LOW_SPACE_EVENT_SIZE);
	if (!event)
		return;
	spin_lock(&diff_storage->lock);
	if (!diff_storage->spare_event) {
		diff_storage->spare_event = event;
		event = NULL;
	}
	spin_unlock(&diff_storage->lock);
	event_free(event);
}

static inline int diff_storage_event_low(struct diff_storage *diff_storage,
					 gfp_t gfp)
{
	struct blk_snap_event_low_free_space data = {
		.requested_nr_sect = diff_storage_minimum,
	};
	struct event *event;
	int ret;

	event = event_alloc(gfp, sizeof(data));
	if (!event) {
		spin_lock(&diff_storage->lock);
		event = diff_storage->spare_event;
		diff_storage->spare_event = NULL;
		spin_unlock(&diff_storage->lock);
		if (!event)
			return -ENOMEM;
	}
	ret = event_queue_push(&diff_storage->event_queue, event,
			       blk_snap_event_code_low_free_space, &data,
			       sizeof(data));
	if (ret)
		return ret;
	diff_storage->requested += data.requested_nr_sect;
	pr_debug("Diff storage low free space. Portion: %llu sectors, requested: %llu\n",
		 data.requested_nr_sect, diff_storage->requested);
	return 0;
}

static void diff_storage_wait_work(struct work_struct *work);

/*
 * @resume_parked goes on with a chunk that waited for storage
 * (diff_storage_park()): given here, so that the storage needs to know
 * nothing of chunks.
 */
struct diff_storage *diff_storage_new(diff_storage_resume_fn resume_parked)
{
	struct diff_storage *diff_storage;

	diff_storage = kzalloc(sizeof(*diff_storage), GFP_KERNEL);
	if (!diff_storage)
		return NULL;

	kref_init(&diff_storage->kref);
	INIT_LIST_HEAD(&diff_storage->link);
	INIT_LIST_HEAD(&diff_storage->origins);
	spin_lock_init(&diff_storage->lock);
	INIT_LIST_HEAD(&diff_storage->storage_bdevs);
	INIT_LIST_HEAD(&diff_storage->empty_blocks);
	INIT_LIST_HEAD(&diff_storage->filled_blocks);
	INIT_LIST_HEAD(&diff_storage->storage_files);
	INIT_LIST_HEAD(&diff_storage->waiting_chunks);
	diff_storage->resume_parked = resume_parked;
	init_waitqueue_head(&diff_storage->space_wq);
	INIT_DELAYED_WORK(&diff_storage->wait_work, diff_storage_wait_work);

	event_queue_init(&diff_storage->event_queue);
	/*
	 * As in v1: the new snapshot asks for its first storage at once.
	 * User space written for v1 waits for this event before it appends
	 * any storage and takes the snapshot; a tool that appends storage
	 * before the take may simply take the event off the queue. Without
	 * the event, such user space would wait for it forever: no snapshot.
	 */
	diff_storage->spare_event = event_alloc(GFP_KERNEL,
						LOW_SPACE_EVENT_SIZE);
	if (!diff_storage->spare_event ||
	    diff_storage_event_low(diff_storage, GFP_KERNEL)) {
		diff_storage_put(diff_storage);
		return NULL;
	}

	mutex_lock(&append_lock);
	list_add_tail(&diff_storage->link, &diff_storages);
	mutex_unlock(&append_lock);
	return diff_storage;
}

/* From the difference area's creation: see diff_storage_append(). */
void diff_storage_add_origin(struct diff_storage *diff_storage,
			     struct diff_storage_origin *origin)
{
	mutex_lock(&append_lock);
	list_add_tail(&origin->link, &diff_storage->origins);
	mutex_unlock(&append_lock);
}

void diff_storage_remove_origin(struct diff_storage_origin *origin)
{
	mutex_lock(&append_lock);
	list_del_init(&origin->link);
	mutex_unlock(&append_lock);
}

static inline struct storage_block *
first_empty_storage_block(struct diff_storage *diff_storage)
{
	return list_first_entry_or_null(&diff_storage->empty_blocks,
					struct storage_block, link);
};

static inline struct storage_block *
first_filled_storage_block(struct diff_storage *diff_storage)
{
	return list_first_entry_or_null(&diff_storage->filled_blocks,
					struct storage_block, link);
};

static inline struct storage_bdev *
first_storage_bdev(struct diff_storage *diff_storage)
{
	return list_first_entry_or_null(&diff_storage->storage_bdevs,
					struct storage_bdev, link);
};

/*
 * Storage files. The storage writes straight into the blocks of a file,
 * behind its file system's back, exactly as swap does; so it holds the
 * file under the kernel's contract for swap files (mm/swapfile.c): the
 * file system's swap_activate() maps it under the inode lock (refusing
 * holes, shared, inline and uncommitted extents, and blocks on another
 * device), and while its inode has S_SWAPFILE, the VFS and the file
 * systems refuse to unlink it, rename over it, truncate, write, fallocate,
 * reflink, dedupe or swap its extents, whoever asks. The held reference
 * keeps the inode, and its mount busy. The flag lives in memory only:
 * after a crash the file is an ordinary one.
 */

/* A run of a file's blocks on its device, in sectors. */
struct file_extent {
	sector_t sector;
	sector_t count;
};

static int cmp_file_extent(const void *a, const void *b)
{
	const struct file_extent *ea = a;
	const struct file_extent *eb = b;

	if (ea->sector < eb->sector)
		return -1;
	return ea->sector > eb->sector;
}

static void free_swap_extents(struct swap_info_struct *sis)
{
	while (!RB_EMPTY_ROOT(&sis->swap_extent_root)) {
		struct rb_node *node = sis->swap_extent_root.rb_node;

		rb_erase(node, &sis->swap_extent_root);
		kfree(rb_entry(node, struct swap_extent, rb_node));
	}
}

/*
 * The extents swap_activate() put in @sis's tree (file order, in pages),
 * as runs of sectors sorted by place, adjacent ones merged.
 */
static struct file_extent *swap_extents_to_runs(struct swap_info_struct *sis,
						unsigned int *nr)
{
	struct file_extent *ext;
	unsigned int count = 0, inx = 0, out;
	struct rb_node *rb;

	for (rb = rb_first(&sis->swap_extent_root); rb; rb = rb_next(rb))
		count++;
	if (!count)
		return ERR_PTR(-EINVAL);
	ext = kvcalloc(count, sizeof(*ext), GFP_KERNEL);
	if (!ext)
		return ERR_PTR(-ENOMEM);
	for (rb = rb_first(&sis->swap_extent_root); rb; rb = rb_next(rb)) {
		struct swap_extent *se = rb_entry(rb, struct swap_extent,
						  rb_node);

		ext[inx].sector = (sector_t)se->start_block <<
				  (PAGE_SHIFT - SECTOR_SHIFT);
		ext[inx].count = (sector_t)se->nr_pages <<
				 (PAGE_SHIFT - SECTOR_SHIFT);
		inx++;
	}

	sort(ext, count, sizeof(*ext), cmp_file_extent, NULL);
	for (inx = 1, out = 0; inx < count; inx++) {
		if (ext[out].sector + ext[out].count == ext[inx].sector)
			ext[out].count += ext[inx].count;
		else
			ext[++out] = ext[inx];
	}
	*nr = out + 1;
	return ext;
}

static void storage_file_deactivate(struct file *file)
{
	if (file->f_mapping->a_ops->swap_deactivate)
		file->f_mapping->a_ops->swap_deactivate(file);
}

/*
 * Maps @file and pins it: S_SWAPFILE is set under the inode lock that the
 * mapping was read under, so nothing can change it in between, and
 * nobody may open it for writing from then on (as for a running
 * program), which also keeps out writable shared mappings: their
 * writeback would write into the storage behind the snapshot's back.
 * The checks are swapon's, but for unlinked files: an unnamed file is
 * welcome, its file system frees it after a crash.
 * Returns the device of its blocks in *@bdev, and its extents.
 */
static struct file_extent *storage_file_pin(struct file *file,
					    struct block_device **bdev,
					    unsigned int *nr)
{
	struct inode *inode = file_inode(file);
	struct address_space *mapping = file->f_mapping;
	struct super_block *sb = inode->i_sb;
	struct swap_info_struct *sis;
	struct file_extent *ext;
	sector_t span;
	int ret;

	if (!S_ISREG(inode->i_mode)) {
		pr_err("Storage file %pD is not a regular file\n", file);
		return ERR_PTR(-EINVAL);
	}
	/*
	 * Only the file systems whose swap_activate() was reviewed for this
	 * use: it maps the file and has no side effects (btrfs and f2fs pin
	 * or move blocks of their own in it).
	 */
	if (sb->s_magic != EXT4_SUPER_MAGIC && sb->s_magic != XFS_SUPER_MAGIC) {
		pr_err("Storage file %pD is on %s: only ext4 and xfs can hold storage files\n",
		       file, sb->s_type->name);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!IS_ENABLED(CONFIG_SWAP) || !sb->s_bdev ||
	    !mapping->a_ops->swap_activate || WARN_ON_ONCE(mapping->host != inode)) {
		pr_err("Storage file %pD cannot be mapped to blocks as a swap file%s: only ext4 (not the ext2 driver) and xfs can hold storage files\n",
		       file, IS_ENABLED(CONFIG_SWAP) ? "" :
		       " (the kernel is built without CONFIG_SWAP)");
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (sb_rdonly(sb) || __mnt_is_readonly(file->f_path.mnt)) {
		pr_err("Storage file %pD is on a read-only mount\n", file);
		return ERR_PTR(-EROFS);
	}
	if (IS_ENCRYPTED(inode)) {
		/* Raw copies of the origin would lie in its blocks unencrypted. */
		pr_err("Storage file %pD is encrypted by its file system\n",
		       file);
		return ERR_PTR(-EINVAL);
	}

	/*
	 * Before the inode lock, which a writer may hold while it waits for
	 * the storage this call gives: the check under the lock stays the
	 * one that counts.
	 */
	if (atomic_read(&inode->i_writecount) > 0) {
		pr_err("Storage file %pD is open for writing: give it with a read-only descriptor, and close the others\n",
		       file);
		return ERR_PTR(-ETXTBSY);
	}
	/*
	 * ext4's bmap() writes data still in the journal to its place
	 * (data=journal), which it would otherwise do later, over stored
	 * chunks; dirty pages go to the journal first. Both take the inode
	 * lock themselves.
	 */
	if (sb->s_magic == EXT4_SUPER_MAGIC) {
		sector_t block = 0;

		filemap_write_and_wait(mapping);
		bmap(inode, &block);
	}

	sis = kzalloc(sizeof(*sis), GFP_KERNEL);
	if (!sis)
		return ERR_PTR(-ENOMEM);
	sis->bdev = sb->s_bdev;
	sis->swap_file = file;
	sis->max = UINT_MAX;
	sis->swap_extent_root = RB_ROOT;

	inode_lock(inode);
	if (IS_SWAPFILE(inode)) {
		pr_err("Storage file %pD holds a snapshot's storage already\n",
		       file);
		ext = ERR_PTR(-EBUSY);
		goto out_unlock;
	}
	if (IS_IMMUTABLE(inode) || IS_APPEND(inode)) {
		pr_err("Storage file %pD is immutable or append-only\n", file);
		ext = ERR_PTR(-EPERM);
		goto out_unlock;
	}
	/*
	 * Exclusive, unlike deny_write_access(): a program being run is
	 * refused as well.
	 */
	if (atomic_cmpxchg(&inode->i_writecount, 0, -1) != 0) {
		pr_err("Storage file %pD is open for writing, or being run: give it with a read-only descriptor, and close the others\n",
		       file);
		ext = ERR_PTR(-ETXTBSY);
		goto out_unlock;
	}
	/* It runs the file's fsync: no write for a file synced before. */
	ret = mapping->a_ops->swap_activate(sis, file, &span);
	if (ret < 0) {
		pr_err("Storage file %pD cannot be mapped to blocks (see the line above): errno=%d\n",
		       file, -ret);
		ext = ERR_PTR(ret);
		goto out_allow;
	}
	ext = swap_extents_to_runs(sis, nr);
	if (IS_ERR(ext))
		goto out_deactivate;

	inode->i_flags |= S_SWAPFILE;
	/*
	 * What was written before is on disk before the storage writes
	 * there: its late writeback would overwrite stored chunks.
	 */
	inode_dio_wait(inode);
	ret = filemap_write_and_wait(mapping);
	if (ret) {
		inode->i_flags &= ~S_SWAPFILE;
		kvfree(ext);
		ext = ERR_PTR(ret);
		goto out_deactivate;
	}
	*bdev = sis->bdev;
	inode_unlock(inode);
	free_swap_extents(sis);
	kfree(sis);
	return ext;

out_deactivate:
	storage_file_deactivate(file);
out_allow:
	allow_write_access(file);
out_unlock:
	inode_unlock(inode);
	free_swap_extents(sis);
	kfree(sis);
	return ext;
}

static void storage_file_unpin(struct file *file)
{
	struct inode *inode = file_inode(file);

	storage_file_deactivate(file);
	inode_lock(inode);
	inode->i_flags &= ~S_SWAPFILE;
	inode_unlock(inode);
	allow_write_access(file);
	fput(file);
}

/* Do the sorted, disjoint @ranges lie in the sorted, merged extents? */
static int storage_file_check_ranges(struct file *file,
				     const struct file_extent *ext,
				     unsigned int nr,
				     const struct blk_snap_block_range *ranges,
				     unsigned int count)
{
	unsigned int inx, e = 0;

	for (inx = 0; inx < count; inx++) {
		u64 start = ranges[inx].sector_offset;
		u64 end = start + ranges[inx].sector_count;

		while (e < nr && ext[e].sector + ext[e].count <= start)
			e++;
		if (e == nr || ext[e].sector > start ||
		    ext[e].sector + ext[e].count < end) {
			pr_err("Range %llu:%llu is not in the blocks of storage file %pD\n",
			       start, ranges[inx].sector_count, file);
			return -EINVAL;
		}
	}
	return 0;
}

void diff_storage_free(struct kref *kref)
{
	struct diff_storage *diff_storage =
		container_of(kref, struct diff_storage, kref);
	struct storage_block *blk;
	struct storage_bdev *storage_bdev;

	/* diff_storage_stop_waiting() has emptied the list. */
	WARN_ON(!list_empty(&diff_storage->waiting_chunks));
	/* The difference areas, released first, took theirs off. */
	WARN_ON(!list_empty(&diff_storage->origins));
	mutex_lock(&append_lock);
	list_del_init(&diff_storage->link);
	mutex_unlock(&append_lock);
	cancel_delayed_work_sync(&diff_storage->wait_work);
	while ((blk = first_empty_storage_block(diff_storage))) {
		list_del(&blk->link);
		kfree(blk);
	}

	while ((blk = first_filled_storage_block(diff_storage))) {
		list_del(&blk->link);
		kfree(blk);
	}

	while ((storage_bdev = first_storage_bdev(diff_storage))) {
		blkdev_put(storage_bdev->bdev, FMODE_READ | FMODE_WRITE);
		list_del(&storage_bdev->link);
		kfree(storage_bdev);
	}
	/*
	 * Last, once no storage I/O can be in flight: the snapshot's diff
	 * areas, which waited for theirs, are gone before the storage is.
	 */
	while (!list_empty(&diff_storage->storage_files)) {
		struct storage_file *sfile =
			list_first_entry(&diff_storage->storage_files,
					 struct storage_file, link);

		list_del(&sfile->link);
		storage_file_unpin(sfile->file);
		kfree(sfile);
	}
	event_queue_done(&diff_storage->event_queue);
	event_free(diff_storage->spare_event);

	kfree(diff_storage);
}

static struct block_device *
diff_storage_bdev_by_id(struct diff_storage *diff_storage, dev_t dev_id)
{
	struct block_device *bdev = NULL;
	struct storage_bdev *storage_bdev;

	spin_lock(&diff_storage->lock);
	list_for_each_entry(storage_bdev, &diff_storage->storage_bdevs, link) {
		if (storage_bdev->dev_id == dev_id) {
			bdev = storage_bdev->bdev;
			break;
		}
	}
	spin_unlock(&diff_storage->lock);

	return bdev;
}

static int cmp_range(const void *a, const void *b)
{
	const struct blk_snap_block_range *ra = a;
	const struct blk_snap_block_range *rb = b;

	if (ra->sector_offset < rb->sector_offset)
		return -1;
	return ra->sector_offset > rb->sector_offset;
}

/*
 * The storage I/O goes in whole pages, and the kernel must never receive
 * the same sectors twice: two chunks would share them.
 */
static int diff_storage_check_ranges(struct block_device *bdev,
				     struct blk_snap_block_range *ranges,
				     unsigned int count)
{
	sector_t capacity = bdev_nr_sectors(bdev);
	sector_t align = max_t(sector_t, PAGE_SECTORS,
			       bdev_logical_block_size(bdev) >> SECTOR_SHIFT);
	unsigned int inx;

	for (inx = 0; inx < count; inx++) {
		u64 offset = ranges[inx].sector_offset;
		u64 sectors = ranges[inx].sector_count;

		if (!sectors) {
			pr_err("Range #%u is empty\n", inx);
			return -EINVAL;
		}
		if ((offset | sectors) & (align - 1)) {
			pr_err("Range #%u %llu:%llu is not aligned to %llu sectors\n",
			       inx, offset, sectors, (u64)align);
			return -EINVAL;
		}
		if (offset >= capacity || sectors > capacity - offset) {
			pr_err("Range #%u %llu:%llu is past the end of device [%u:%u] (%llu sectors)\n",
			       inx, offset, sectors, MAJOR(bdev->bd_dev),
			       MINOR(bdev->bd_dev), (u64)capacity);
			return -EINVAL;
		}
		if (offset + sectors > BIT_ULL(STORAGE_PLACE_SECTOR_BITS)) {
			pr_err("Range #%u %llu:%llu is beyond the %u-bit sector numbers of stored chunks\n",
			       inx, offset, sectors, STORAGE_PLACE_SECTOR_BITS);
			return -EINVAL;
		}
	}

	sort(ranges, count, sizeof(*ranges), cmp_range, NULL);
	for (inx = 1; inx < count; inx++) {
		if (ranges[inx - 1].sector_offset +
		    ranges[inx - 1].sector_count > ranges[inx].sector_offset) {
			pr_err("Ranges %llu:%llu and %llu:%llu overlap\n",
			       ranges[inx - 1].sector_offset,
			       ranges[inx - 1].sector_count,
			       ranges[inx].sector_offset,
			       ranges[inx].sector_count);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Does the block overlap any of the sorted, disjoint ranges of @bdev? The
 * block may be on @bdev, on its whole disk or on another partition of it:
 * they are compared on the disk.
 */
static bool storage_block_overlaps(struct storage_block *blk,
				   struct block_device *bdev,
				   struct blk_snap_block_range *ranges,
				   unsigned int count)
{
	sector_t start = blk->sector + blk->bdev->bd_start_sect;
	sector_t end = start + blk->count;
	unsigned int lo = 0, hi = count;

	if (bdev_whole(blk->bdev) != bdev_whole(bdev) ||
	    end <= bdev->bd_start_sect)
		return false;
	/* On @bdev, where the block starts before it: from its start. */
	start = start > bdev->bd_start_sect ? start - bdev->bd_start_sect : 0;
	end -= bdev->bd_start_sect;

	/* Find the first range that ends after the block starts. */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (ranges[mid].sector_offset + ranges[mid].sector_count <=
		    start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < count && ranges[lo].sector_offset < end;
}

static bool diff_storage_overlaps(struct diff_storage *diff_storage,
				  struct block_device *bdev,
				  struct blk_snap_block_range *ranges,
				  unsigned int count)
{
	struct list_head *lists[] = { &diff_storage->empty_blocks,
				      &diff_storage->filled_blocks };
	struct storage_block *blk;
	bool overlaps = false;
	int inx;

	spin_lock(&diff_storage->lock);
	for (inx = 0; inx < ARRAY_SIZE(lists) && !overlaps; inx++) {
		list_for_each_entry(blk, lists[inx], link) {
			if (storage_block_overlaps(blk, bdev, ranges, count)) {
				overlaps = true;
				break;
			}
		}
	}
	spin_unlock(&diff_storage->lock);

	return overlaps;
}

/*
 * Under append_lock. The same sectors must never be storage twice: two
 * chunks, of one snapshot or of two, would be stored over each other.
 */
static int diff_storage_check_overlaps(struct diff_storage *diff_storage,
				       struct block_device *bdev,
				       struct blk_snap_block_range *ranges,
				       unsigned int count)
{
	struct diff_storage *each;

	/* The caller's storage is in the list too. */
	list_for_each_entry(each, &diff_storages, link) {
		if (diff_storage_overlaps(each, bdev, ranges, count)) {
			pr_err("The ranges overlap the difference storage %s\n",
			       each == diff_storage ? "already given" :
			       "of another snapshot");
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Under append_lock. After the take, a device of a snapshot still shows
 * its data at take through the image wherever its chunk is not stored:
 * storage there, of this snapshot or of another, would overwrite it.
 * Sectors whose chunks are stored are free to use (the image reads those
 * from the storage).
 */
static int diff_storage_check_origins(struct block_device *bdev,
				      struct blk_snap_block_range *ranges,
				      unsigned int count)
{
	struct diff_storage_origin *origin;
	struct diff_storage *each;
	unsigned int inx;

	list_for_each_entry(each, &diff_storages, link) {
		list_for_each_entry(origin, &each->origins, link) {
			for (inx = 0; inx < count; inx++) {
				if (!origin->unsaved(origin, bdev,
						     ranges[inx].sector_offset,
						     ranges[inx].sector_count))
					continue;
				pr_err("Range %llu:%llu of device [%u:%u] holds data of a snapshot not copied yet\n",
				       ranges[inx].sector_offset,
				       ranges[inx].sector_count,
				       MAJOR(bdev->bd_dev), MINOR(bdev->bd_dev));
				return -EBUSY;
			}
		}
	}
	return 0;
}

static void free_storage_blocks(struct list_head *blocks)
{
	struct storage_block *blk, *tmp;

	list_for_each_entry_safe(blk, tmp, blocks, link) {
		list_del(&blk->link);
		kfree(blk);
	}
}

static int alloc_storage_blocks(struct list_head *blocks,
				struct block_device *bdev,
				struct blk_snap_block_range *ranges,
				unsigned int count)
{
	struct storage_block *blk;
	unsigned int inx;

	for (inx = 0; inx < count; inx++) {
		blk = kzalloc(sizeof(*blk), GFP_KERNEL);
		if (!blk) {
			free_storage_blocks(blocks);
			return -ENOMEM;
		}
		INIT_LIST_HEAD(&blk->link);
		blk->bdev = bdev;
		blk->sector = ranges[inx].sector_offset;
		blk->count = ranges[inx].sector_count;
		list_add_tail(&blk->link, blocks);
	}
	return 0;
}

/*
 * Appends @ranges of device @dev_id; with @sfile, they must lie in its
 * @ext, and the storage holds the file from then on.
 */
static int diff_storage_append(struct diff_storage *diff_storage,
			       dev_t dev_id,
			       struct blk_snap_block_range *ranges,
			       unsigned int range_count,
			       struct storage_file *sfile,
			       const struct file_extent *ext,
			       unsigned int nr_ext)
{
	struct storage_bdev *storage_bdev = NULL;
	struct block_device *bdev;
	bool opened = false;
	LIST_HEAD(blocks);
	sector_t added = 0;
	unsigned int inx;
	int ret;
	unsigned int noio_flag;

	pr_debug("Append %u blocks\n", range_count);

	/*
	 * Writers may be waiting for this storage: reclaim must not write
	 * back to their devices from here.
	 */
	noio_flag = memalloc_noio_save();
	/* The overlap check and the append must be one step. */
	mutex_lock(&append_lock);
	bdev = diff_storage_bdev_by_id(diff_storage, dev_id);
	if (!bdev) {
		bdev = blkdev_get_by_dev(dev_id, FMODE_READ | FMODE_WRITE, NULL);
		if (IS_ERR(bdev)) {
			pr_err("Failed to open storage device [%u:%u]. errno=%d\n",
			       MAJOR(dev_id), MINOR(dev_id),
			       abs((int)PTR_ERR(bdev)));
			mutex_unlock(&append_lock);
			memalloc_noio_restore(noio_flag);
			return PTR_ERR(bdev);
		}
		opened = true;
		storage_bdev = kzalloc(sizeof(*storage_bdev), GFP_KERNEL);
		if (!storage_bdev) {
			ret = -ENOMEM;
			goto fail;
		}
		INIT_LIST_HEAD(&storage_bdev->link);
		storage_bdev->bdev = bdev;
		storage_bdev->dev_id = dev_id;
		if (diff_storage->bdev_count >= STORAGE_PLACE_MAX_BDEVS) {
			pr_err("Too many storage devices: at most %u\n",
			       STORAGE_PLACE_MAX_BDEVS);
			ret = -EMFILE;
			goto fail;
		}
	}

	ret = diff_storage_check_ranges(bdev, ranges, range_count);
	if (ret)
		goto fail;
	if (sfile) {
		ret = storage_file_check_ranges(sfile->file, ext, nr_ext,
						ranges, range_count);
		if (ret)
			goto fail;
	}
	ret = diff_storage_check_overlaps(diff_storage, bdev, ranges,
					  range_count);
	if (ret)
		goto fail;
	/*
	 * A file's blocks are the caller's to vouch for: storage grows by
	 * files on the snapshotted file system itself, in blocks that were
	 * free at take, which only the file system's map at take can tell
	 * (blksnap-storage reads it from the image). Raw ranges are checked.
	 */
	if (!sfile) {
		ret = diff_storage_check_origins(bdev, ranges, range_count);
		if (ret)
			goto fail;
	}
	ret = alloc_storage_blocks(&blocks, bdev, ranges, range_count);
	if (ret)
		goto fail;

	for (inx = 0; inx < range_count; inx++)
		added += ranges[inx].sector_count;

	spin_lock(&diff_storage->lock);
	if (storage_bdev) {
		/* Only this function adds, under append_lock. */
		storage_bdev->index = diff_storage->bdev_count++;
		list_add_tail(&storage_bdev->link, &diff_storage->storage_bdevs);
	}
	list_splice_tail(&blocks, &diff_storage->empty_blocks);
	if (sfile)
		list_add_tail(&sfile->link, &diff_storage->storage_files);
	diff_storage->capacity += added;
	/*
	 * Ask again next time the free space runs low. A file held with no
	 * range adds nothing: waiting copies are not woken, their deadline
	 * stands.
	 */
	if (added && diff_storage->capacity - diff_storage->filled >
		     diff_storage_minimum)
		atomic_set(&diff_storage->low_space_flag, 0);
	if (added)
		diff_storage->wait_resume = true;
	spin_unlock(&diff_storage->lock);

	mutex_unlock(&append_lock);
	diff_storage_refill_spare_event(diff_storage, GFP_KERNEL);
	memalloc_noio_restore(noio_flag);
	/* Copy-on-write waiting for storage goes on at once. */
	if (added)
		mod_delayed_work(blksnap_wq, &diff_storage->wait_work, 0);
	return 0;
fail:
	mutex_unlock(&append_lock);
	if (opened)
		blkdev_put(bdev, FMODE_READ | FMODE_WRITE);
	kfree(storage_bdev);
	memalloc_noio_restore(noio_flag);
	return ret;
}

/**
 * diff_storage_append_block() - Append ranges of a block device.
 * @diff_storage:
 *	The difference storage.
 * @dev_id:
 *	The block device that holds the ranges.
 * @ranges:
 *	The ranges, in kernel memory. They are sorted in place.
 * @range_count:
 *	The number of ranges.
 *
 * Either every range is appended or none is.
 *
 * Return: 0, -EINVAL for a bad range, or the error of opening the device.
 */
int diff_storage_append_block(struct diff_storage *diff_storage, dev_t dev_id,
			      struct blk_snap_block_range *ranges,
			      unsigned int range_count)
{
	return diff_storage_append(diff_storage, dev_id, ranges, range_count,
				   NULL, NULL, 0);
}

/**
 * diff_storage_append_file() - Append ranges of a file's blocks, and hold
 *	the file until the storage is freed.
 * @diff_storage:
 *	The difference storage.
 * @file:
 *	The file, which nobody may have open for writing; the storage takes
 *	a reference of its own.
 * @ranges:
 *	Sectors of the device that holds the file's blocks, in kernel
 *	memory. They are sorted in place.
 * @range_count:
 *	The number of ranges; 0 holds the file without using its blocks.
 *
 * Either every range is appended and the file held, or nothing changes.
 *
 * Return: 0; -EINVAL for a range outside the file's blocks, or a file that
 * is not regular, is encrypted or cannot be mapped (holes, shared
 * extents); -ETXTBSY if it is open for writing (a swap file in use is) or
 * being run; -EBUSY for a file that holds storage already; -EPERM for an
 * immutable or append-only file; -EROFS on a read-only mount; -EOPNOTSUPP
 * unless it is on ext4 or xfs; or the errors of
 * diff_storage_append_block().
 */
int diff_storage_append_file(struct diff_storage *diff_storage,
			     struct file *file,
			     struct blk_snap_block_range *ranges,
			     unsigned int range_count)
{
	struct storage_file *sfile;
	struct block_device *bdev;
	struct file_extent *ext;
	unsigned int nr_ext;
	int ret;

	sfile = kzalloc(sizeof(*sfile), GFP_KERNEL);
	if (!sfile)
		return -ENOMEM;
	ext = storage_file_pin(file, &bdev, &nr_ext);
	if (IS_ERR(ext)) {
		kfree(sfile);
		return PTR_ERR(ext);
	}
	INIT_LIST_HEAD(&sfile->link);
	sfile->file = get_file(file);
	ret = diff_storage_append(diff_storage, bdev->bd_dev, ranges,
				  range_count, sfile, ext, nr_ext);
	kvfree(ext);
	if (ret) {
		storage_file_unpin(sfile->file);
		kfree(sfile);
	}
	return ret;
}

/*
 * Gives @diff_region @count sectors of the storage. Nothing is allocated
 * but the low-space event; with @is_nowait (a REQ_NOWAIT write's copy)
 * that does not wait for reclaim, and one that cannot be queued is asked
 * for again by the next region.
 *
 * Return: 0, or -ENOSPC when the storage is full.
 */
int diff_storage_new_region(struct diff_storage *diff_storage, sector_t count,
			    struct diff_region *diff_region, bool is_nowait)
{
	gfp_t gfp = is_nowait ? GFP_NOWAIT | __GFP_NOWARN : GFP_NOIO;
	int ret = 0;
	sector_t sectors_left;

	if (atomic_read(&diff_storage->overflow_flag))
		return -ENOSPC;

	spin_lock(&diff_storage->lock);
	do {
		struct storage_block *storage_block;
		sector_t available;

		storage_block = first_empty_storage_block(diff_storage);
		if (unlikely(!storage_block)) {
			/* Unless copy-on-write may wait for more (park). */
			if (!diff_storage_wait_seconds ||
			    diff_storage->wait_stopped)
				atomic_inc(&diff_storage->overflow_flag);
			ret = -ENOSPC;
			break;
		}

		available = storage_block->count - storage_block->used;
		if (likely(available >= count)) {
			diff_region->bdev = storage_block->bdev;
			diff_region->sector =
				storage_block->sector + storage_block->used;
			diff_region->count = count;

			storage_block->used += count;
			diff_storage->filled += count;
			break;
		}

		list_del(&storage_block->link);
		list_add_tail(&storage_block->link,
			      &diff_storage->filled_blocks);
		/*
		 * If there is still free space in the storage block, but
		 * it is not enough to store a piece, then such a block is
		 * considered used.
		 * We believe that the storage blocks are large enough
		 * to accommodate several pieces entirely.
		 */
		diff_storage->filled += available;
	} while (1);
	sectors_left = diff_storage->capacity - diff_storage->filled;
	spin_unlock(&diff_storage->lock);

	if (ret) {
		if (atomic_read(&diff_storage->overflow_flag))
			pr_err("Cannot get empty storage block\n");
		return ret;
	}

	/*
	 * An event that could not be queued is asked for again by the next
	 * region: lost, it would leave the storage to overflow.
	 */
	if (sectors_left <= diff_storage_minimum &&
	    atomic_inc_return(&diff_storage->low_space_flag) == 1 &&
	    diff_storage_event_low(diff_storage, gfp))
		atomic_set(&diff_storage->low_space_flag, 0);

	return 0;
}

/**
 * diff_storage_pack() - Packs the place of a region in 64 bits.
 * @diff_storage:
 *	The difference storage that gave the region.
 * @region:
 *	The region.
 * @place:
 *	Receives the packed place, for diff_storage_region_at().
 *
 * Return: 0, or -ENOENT if the region is not on a device of the storage.
 */
int diff_storage_pack(struct diff_storage *diff_storage,
		      const struct diff_region *region, u64 *place)
{
	struct storage_bdev *storage_bdev;
	int ret = -ENOENT;

	spin_lock(&diff_storage->lock);
	list_for_each_entry(storage_bdev, &diff_storage->storage_bdevs, link) {
		if (storage_bdev->bdev == region->bdev) {
			*place = ((u64)storage_bdev->index <<
				  STORAGE_PLACE_SECTOR_BITS) | region->sector;
			ret = 0;
			break;
		}
	}
	spin_unlock(&diff_storage->lock);
	return ret;
}

/**
 * diff_storage_region_at() - Unpacks a place packed by diff_storage_pack().
 * @diff_storage:
 *	The difference storage.
 * @place:
 *	The packed place.
 * @region:
 *	Receives the device and the first sector; @region->count is left as
 *	it is.
 *
 * Return: 0, or -ENOENT if no device of the storage has that index.
 */
int diff_storage_region_at(struct diff_storage *diff_storage, u64 place,
			   struct diff_region *region)
{
	unsigned int index = place >> STORAGE_PLACE_SECTOR_BITS;
	struct storage_bdev *storage_bdev;
	int ret = -ENOENT;

	spin_lock(&diff_storage->lock);
	list_for_each_entry(storage_bdev, &diff_storage->storage_bdevs, link) {
		if (storage_bdev->index == index) {
			region->bdev = storage_bdev->bdev;
			region->sector = place &
				(BIT_ULL(STORAGE_PLACE_SECTOR_BITS) - 1);
			ret = 0;
			break;
		}
	}
	spin_unlock(&diff_storage->lock);
	return ret;
}

/*
 * Waiting for storage. When the storage runs out, a chunk whose data is
 * already read waits, locked, on @waiting_chunks for an append, and the
 * writers that would read more chunks wait before they start
 * (diff_storage_wait_for_space()), so that the memory held meanwhile is
 * bounded by the copies in flight when it ran out. The wait ends when
 * storage is appended, when the snapshot goes away, or at the deadline,
 * diff_storage_wait_seconds after it began: then the storage overflows and
 * the waiting chunks fail, which marks the snapshot corrupted, as without
 * the wait. Nothing here needs a write to the original devices, and the
 * append path allocates without I/O: user space appends storage it has
 * already allocated while the writers wait. An append of a file runs its
 * fsync, which writes nothing for a file synced before it is given.
 */

/**
 * diff_storage_park() - Wait for storage with a chunk that found none.
 * @diff_storage:
 *	The difference storage.
 * @chunk_link:
 *	The locked chunk's cache_link, in no list. The storage's
 *	resume_parked() is called with it, from a work item, when the wait
 *	ends.
 * @state:
 *	The chunk's state, in which @parked is set once the chunk waits.
 * @parked:
 *	The bit that says so.
 *
 * Return: 0 if the chunk waits (the wait work stores or fails it later),
 * -EAGAIN if storage has been appended meanwhile (allocate again), or
 * -ENOSPC if it may not wait.
 */
int diff_storage_park(struct diff_storage *diff_storage,
		      struct list_head *chunk_link, atomic_t *state,
		      int parked)
{
	unsigned long delay = (unsigned long)diff_storage_wait_seconds * HZ;
	bool first = false;
	int ret = 0;

	spin_lock(&diff_storage->lock);
	if (atomic_read(&diff_storage->overflow_flag) ||
	    diff_storage->wait_stopped || !delay) {
		ret = -ENOSPC;
	} else if (first_empty_storage_block(diff_storage)) {
		ret = -EAGAIN;
	} else {
		if (!diff_storage->waiting) {
			diff_storage->wait_deadline = jiffies + delay;
			WRITE_ONCE(diff_storage->waiting, true);
			first = true;
		}
		/*
		 * Under the lock, before the wait work can resume it: from
		 * here its data is read unlocked. The buffer's data before it.
		 */
		smp_mb__before_atomic();
		atomic_or(parked, state);
		list_add_tail(chunk_link, &diff_storage->waiting_chunks);
	}
	spin_unlock(&diff_storage->lock);

	if (first) {
		pr_warn_ratelimited("The difference storage is full: copy-on-write waits up to %d s for more\n",
				    diff_storage_wait_seconds);
		/*
		 * Ask for storage now, even if a request is outstanding: the
		 * last append may have left the free space below the
		 * threshold, which raises no new event.
		 */
		atomic_set(&diff_storage->low_space_flag, 1);
		if (diff_storage_event_low(diff_storage,
					   GFP_NOWAIT | __GFP_NOWARN))
			atomic_set(&diff_storage->low_space_flag, 0);
		/* Does not delay a run an append has queued already. */
		queue_delayed_work(blksnap_wq, &diff_storage->wait_work, delay);
	}
	return ret;
}

/* Is copy-on-write waiting for storage? */
bool diff_storage_is_waiting(struct diff_storage *diff_storage)
{
	return READ_ONCE(diff_storage->waiting);
}

/**
 * diff_storage_ask_again() - Queue a new request for storage if
 *	copy-on-write waits for it and none is queued.
 * @diff_storage:
 *	The difference storage of a snapshot whose events are waited for.
 *
 * A wait asks once, when it begins. The process that took that request
 * may have died in the middle of its growth: the next one to wait for an
 * event must find the request again, or the copies fail at the deadline.
 */
void diff_storage_ask_again(struct diff_storage *diff_storage)
{
	bool ask;

	spin_lock(&diff_storage->lock);
	/* Not once an append has ended the wait, before the resume runs. */
	ask = diff_storage->waiting && !diff_storage->wait_resume &&
	      !diff_storage->wait_stopped;
	spin_unlock(&diff_storage->lock);
	/* Reclaim must not write to the devices that wait for storage. */
	if (ask && event_queue_empty(&diff_storage->event_queue))
		diff_storage_event_low(diff_storage, GFP_NOIO);
	diff_storage_refill_spare_event(diff_storage, GFP_NOIO);
}

/* Wait, not interruptible (as copies are), until the wait ends. */
void diff_storage_wait_for_space(struct diff_storage *diff_storage)
{
	wait_event(diff_storage->space_wq,
		   !diff_storage_is_waiting(diff_storage));
}

/*
 * Resumes every waiting chunk when storage was appended (those that find
 * none again wait again, with a new deadline) or when the snapshot goes
 * away, and fails them at the deadline.
 */
static void diff_storage_wait_work(struct work_struct *work)
{
	struct diff_storage *diff_storage =
		container_of(to_delayed_work(work), struct diff_storage,
			     wait_work);
	bool timed_out = false;
	LIST_HEAD(parked);

	diff_storage_refill_spare_event(diff_storage, GFP_NOIO);

	spin_lock(&diff_storage->lock);
	if (!diff_storage->wait_resume && !diff_storage->wait_stopped &&
	    diff_storage->waiting) {
		if (time_before(jiffies, diff_storage->wait_deadline)) {
			/* Early: wait on until the deadline. */
			queue_delayed_work(blksnap_wq, &diff_storage->wait_work,
					   diff_storage->wait_deadline - jiffies);
			spin_unlock(&diff_storage->lock);
			return;
		}
		atomic_inc(&diff_storage->overflow_flag);
		timed_out = true;
	}
	diff_storage->wait_resume = false;
	WRITE_ONCE(diff_storage->waiting, false);
	list_splice_init(&diff_storage->waiting_chunks, &parked);
	spin_unlock(&diff_storage->lock);

	if (timed_out)
		pr_err("No difference storage was appended within %d s\n",
		       diff_storage_wait_seconds);
	wake_up_all(&diff_storage->space_wq);

	/* Stored now, waiting again, or failed (overflow, stopped). */
	while (!list_empty(&parked)) {
		struct list_head *link = parked.next;

		list_del_init(link);
		diff_storage->resume_parked(link);
	}
}

/*
 * The snapshot goes away: nothing waits for storage any more. The waiting
 * chunks fail, releasing the writers that wait for them.
 */
void diff_storage_stop_waiting(struct diff_storage *diff_storage)
{
	spin_lock(&diff_storage->lock);
	diff_storage->wait_stopped = true;
	spin_unlock(&diff_storage->lock);
	mod_delayed_work(blksnap_wq, &diff_storage->wait_work, 0);
	flush_delayed_work(&diff_storage->wait_work);
}
