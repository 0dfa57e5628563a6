// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-cbt_map: " fmt

#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <uapi/linux/blksnap.h>
#include "cbt_map.h"
#include "params.h"

static inline unsigned long long count_by_shift(sector_t capacity,
						unsigned long long shift)
{
	sector_t blk_size = 1ull << (shift - SECTOR_SHIFT);

	return round_up(capacity, blk_size) / blk_size;
}

static void cbt_map_calculate_block_size(struct cbt_map *cbt_map)
{
	unsigned long long shift;
	unsigned long long count;

	/**
	 * The size of the tracking block is calculated based on the size of the disk
	 * so that the CBT table does not exceed a reasonable size.
	 */
	shift = tracking_block_minimum_shift;
	count = count_by_shift(cbt_map->device_capacity, shift);

	while (count > tracking_block_maximum_count) {
		shift = shift + 1;
		count = count_by_shift(cbt_map->device_capacity, shift);
	}

	cbt_map->blk_size_shift = shift;
	cbt_map->blk_count = count;
}

static int cbt_map_allocate(struct cbt_map *cbt_map)
{
	unsigned char *read_map = NULL;
	unsigned char *write_map = NULL;
	size_t size = cbt_map->blk_count;

	pr_debug("Allocate CBT map of %zu blocks\n", size);

	if (cbt_map->read_map || cbt_map->write_map)
		return -EINVAL;

	read_map = __vmalloc(size, GFP_NOIO | __GFP_ZERO);
	if (!read_map)
		return -ENOMEM;

	write_map = __vmalloc(size, GFP_NOIO | __GFP_ZERO);
	if (!write_map) {
		vfree(read_map);
		return -ENOMEM;
	}

	cbt_map->read_map = read_map;
	cbt_map->write_map = write_map;

	cbt_map->snap_number_previous = 0;
	cbt_map->snap_number_active = 1;
	generate_random_uuid(cbt_map->generation_id.b);
	cbt_map->is_corrupted = false;

	return 0;
}

static void cbt_map_deallocate(struct cbt_map *cbt_map)
{
	cbt_map->is_corrupted = false;

	if (cbt_map->read_map) {
		vfree(cbt_map->read_map);
		cbt_map->read_map = NULL;
	}

	if (cbt_map->write_map) {
		vfree(cbt_map->write_map);
		cbt_map->write_map = NULL;
	}
}

/*
 * The new maps are allocated before the old ones are let go: a reset that
 * fails keeps the old maps, flagged corrupted (writes are not marked in
 * them, readers are told), and the next take tries again.
 */
int cbt_map_reset(struct cbt_map *cbt_map, sector_t device_capacity)
{
	struct cbt_map fresh = { .device_capacity = device_capacity };
	unsigned char *old_read, *old_write;

	cbt_map_calculate_block_size(&fresh);
	if (cbt_map_allocate(&fresh)) {
		spin_lock(&cbt_map->locker);
		cbt_map->is_corrupted = true;
		spin_unlock(&cbt_map->locker);
		return -ENOMEM;
	}

	spin_lock(&cbt_map->locker);
	old_read = cbt_map->read_map;
	old_write = cbt_map->write_map;
	cbt_map->device_capacity = device_capacity;
	cbt_map->blk_size_shift = fresh.blk_size_shift;
	cbt_map->blk_count = fresh.blk_count;
	cbt_map->read_map = fresh.read_map;
	cbt_map->write_map = fresh.write_map;
	cbt_map->snap_number_previous = fresh.snap_number_previous;
	cbt_map->snap_number_active = fresh.snap_number_active;
	cbt_map->generation_id = fresh.generation_id;
	cbt_map->is_corrupted = false;
	spin_unlock(&cbt_map->locker);

	vfree(old_read);
	vfree(old_write);
	return 0;
}

static inline void cbt_map_destroy(struct cbt_map *cbt_map)
{
	pr_debug("CBT map destroy\n");

	cbt_map_deallocate(cbt_map);
	kfree(cbt_map);
}

struct cbt_map *cbt_map_create(struct block_device *bdev)
{
	struct cbt_map *cbt_map = NULL;
	int ret;

	pr_debug("CBT map create\n");

	cbt_map = kzalloc(sizeof(*cbt_map), GFP_KERNEL);
	if (!cbt_map)
		return NULL;

	cbt_map->device_capacity = bdev_nr_sectors(bdev);
	cbt_map_calculate_block_size(cbt_map);

	ret = cbt_map_allocate(cbt_map);
	if (ret) {
		pr_err("Failed to create tracker. errno=%d\n", abs(ret));
		cbt_map_destroy(cbt_map);
		return NULL;
	}

	spin_lock_init(&cbt_map->locker);
	kref_init(&cbt_map->kref);
	cbt_map->is_corrupted = false;

	return cbt_map;
}

void cbt_map_destroy_cb(struct kref *kref)
{
	cbt_map_destroy(container_of(kref, struct cbt_map, kref));
}

void cbt_map_switch(struct cbt_map *cbt_map)
{
	pr_debug("CBT map switch\n");
	spin_lock(&cbt_map->locker);

	cbt_map->snap_number_previous = cbt_map->snap_number_active;
	++cbt_map->snap_number_active;
	if (cbt_map->snap_number_active == 256) {
		/*
		 * A byte cannot count further: a new generation starts, in
		 * which nothing is known to have changed since an earlier
		 * snapshot.
		 */
		cbt_map->snap_number_previous = 0;
		cbt_map->snap_number_active = 1;

		memset(cbt_map->write_map, 0, cbt_map->blk_count);
		memset(cbt_map->read_map, 0, cbt_map->blk_count);

		generate_random_uuid(cbt_map->generation_id.b);

		pr_debug("CBT reset\n");
	} else {
		memcpy(cbt_map->read_map, cbt_map->write_map, cbt_map->blk_count);
	}
	spin_unlock(&cbt_map->locker);
}

/* Reported with the table; the next take starts it afresh. */
void cbt_map_set_corrupted(struct cbt_map *cbt_map)
{
	spin_lock(&cbt_map->locker);
	cbt_map->is_corrupted = true;
	spin_unlock(&cbt_map->locker);
}

static inline int _cbt_map_set(struct cbt_map *cbt_map, sector_t sector_start,
			       sector_t sector_cnt, u8 snap_number,
			       unsigned char *map)
{
	int res = 0;
	u8 num;
	size_t inx;
	size_t cbt_block_first = (size_t)(sector_start >>
					  (cbt_map->blk_size_shift - SECTOR_SHIFT));
	size_t cbt_block_last = (size_t)((sector_start + sector_cnt - 1) >>
					 (cbt_map->blk_size_shift - SECTOR_SHIFT));

	for (inx = cbt_block_first; inx <= cbt_block_last; ++inx) {
		if (unlikely(inx >= cbt_map->blk_count)) {
			pr_err("Block index is too large.\n");
			pr_err("Block #%zu was demanded, map size %zu blocks.\n",
			       inx, cbt_map->blk_count);
			res = -EINVAL;
			break;
		}

		num = map[inx];
		if (num < snap_number)
			map[inx] = snap_number;
	}
	return res;
}

int cbt_map_set(struct cbt_map *cbt_map, sector_t sector_start,
		sector_t sector_cnt)
{
	int res;

	spin_lock(&cbt_map->locker);
	if (unlikely(cbt_map->is_corrupted)) {
		spin_unlock(&cbt_map->locker);
		return -EINVAL;
	}
	/*
	 * The device has grown since the map was made: its new sectors are
	 * not in this generation, and the next take starts a new one.
	 */
	if (unlikely(sector_start + sector_cnt > cbt_map->device_capacity)) {
		if (sector_start >= cbt_map->device_capacity) {
			spin_unlock(&cbt_map->locker);
			return 0;
		}
		sector_cnt = cbt_map->device_capacity - sector_start;
	}
	res = _cbt_map_set(cbt_map, sector_start, sector_cnt,
			   (u8)cbt_map->snap_number_active, cbt_map->write_map);
	if (unlikely(res))
		cbt_map->is_corrupted = true;

	spin_unlock(&cbt_map->locker);

	return res;
}

int cbt_map_set_both(struct cbt_map *cbt_map, sector_t sector_start,
		     sector_t sector_cnt)
{
	int res;

	spin_lock(&cbt_map->locker);
	if (unlikely(cbt_map->is_corrupted)) {
		spin_unlock(&cbt_map->locker);
		return -EINVAL;
	}
	res = _cbt_map_set(cbt_map, sector_start, sector_cnt,
			   (u8)cbt_map->snap_number_active, cbt_map->write_map);
	if (!res)
		res = _cbt_map_set(cbt_map, sector_start, sector_cnt,
				   (u8)cbt_map->snap_number_previous,
				   cbt_map->read_map);
	spin_unlock(&cbt_map->locker);

	return res;
}

/**
 * cbt_map_read_to_user() - Copy a part of the readable table to user space.
 * @cbt_map:
 *	The change tracking map.
 * @user_buff:
 *	The user's buffer.
 * @offset:
 *	The offset in the table, in bytes (one byte per tracking block).
 * @size:
 *	The size of the user's buffer.
 *
 * The table is read in pieces through a bounce page under the lock that
 * writers, switches and resets take: copy_to_user() may fault and sleep,
 * and a take may replace the table meanwhile.
 *
 * Return: the number of bytes copied, 0 at the end of the table, or
 * -EINVAL for an offset past the end, -EFAULT for a bad buffer, -EIO if
 * the table is no longer reliable, -ENOMEM.
 */
int cbt_map_read_to_user(struct cbt_map *cbt_map, char __user *user_buff,
			 size_t offset, size_t size)
{
	size_t done = 0, total;
	int ret = 0;
	void *bounce;

	bounce = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!bounce)
		return -ENOMEM;

	spin_lock(&cbt_map->locker);
	if (unlikely(cbt_map->is_corrupted))
		ret = -EIO;
	else if (offset > cbt_map->blk_count)
		ret = -EINVAL;
	total = ret ? 0 : min_t(size_t, cbt_map->blk_count - offset, size);
	spin_unlock(&cbt_map->locker);
	total = min_t(size_t, total, INT_MAX);

	while (!ret && done < total) {
		size_t n = min_t(size_t, total - done, PAGE_SIZE);

		spin_lock(&cbt_map->locker);
		if (unlikely(cbt_map->is_corrupted ||
			     offset + done + n > cbt_map->blk_count))
			ret = -EIO;
		else
			memcpy(bounce, cbt_map->read_map + offset + done, n);
		spin_unlock(&cbt_map->locker);

		if (!ret && copy_to_user(user_buff + done, bounce, n))
			ret = -EFAULT;
		if (!ret)
			done += n;
		cond_resched();
	}
	kfree(bounce);

	if (ret == -EIO)
		pr_err("CBT table was corrupted\n");
	return ret ? ret : (int)done;
}

/*
 * Check every range before marking any: a bad one must not leave the table
 * half-updated.
 */
static int cbt_map_check_ranges(struct cbt_map *cbt_map,
				struct blk_snap_block_range *block_ranges,
				unsigned int count)
{
	unsigned int inx;

	for (inx = 0; inx < count; inx++) {
		u64 offset = block_ranges[inx].sector_offset;
		u64 sectors = block_ranges[inx].sector_count;

		if (!sectors || offset >= cbt_map->device_capacity ||
		    sectors > cbt_map->device_capacity - offset)
			return -EINVAL;
	}
	return 0;
}

int cbt_map_mark_dirty_blocks(struct cbt_map *cbt_map,
			      struct blk_snap_block_range *block_ranges,
			      unsigned int count)
{
	unsigned int inx;
	int ret;

	ret = cbt_map_check_ranges(cbt_map, block_ranges, count);
	if (ret)
		return ret;

	for (inx = 0; inx < count; inx++) {
		ret = cbt_map_set_both(cbt_map,
				       (sector_t)block_ranges[inx].sector_offset,
				       (sector_t)block_ranges[inx].sector_count);
		if (ret)
			break;
		cond_resched();
	}

	return ret;
}
