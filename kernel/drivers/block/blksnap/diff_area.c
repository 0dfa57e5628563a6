// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-diff-area: " fmt

#include <linux/blkdev.h>
#include <linux/slab.h>
#include <uapi/linux/blksnap.h>
#include "params.h"
#include "chunk.h"
#include "diff_area.h"
#include "diff_buffer.h"
#include "diff_storage.h"
#include "diff_io.h"

static inline unsigned long chunk_number(struct diff_area *diff_area,
					 sector_t sector)
{
	return (unsigned long)(sector >>
			       (diff_area->chunk_shift - SECTOR_SHIFT));
};

static inline sector_t chunk_sector(struct chunk *chunk)
{
	return (sector_t)(chunk->number)
	       << (chunk->diff_area->chunk_shift - SECTOR_SHIFT);
}

static inline unsigned long long count_by_shift(sector_t capacity,
						unsigned long long shift)
{
	unsigned long long shift_sector = (shift - SECTOR_SHIFT);

	return round_up(capacity, (1ull << shift_sector)) >> shift_sector;
}

static void diff_area_calculate_chunk_size(struct diff_area *diff_area)
{
	unsigned long long shift = chunk_minimum_shift;
	unsigned long long count;
	sector_t capacity;
	sector_t min_io_sect;

	min_io_sect = (sector_t)(bdev_io_min(diff_area->orig_bdev) >>
		SECTOR_SHIFT);
	capacity = bdev_nr_sectors(diff_area->orig_bdev);
	pr_debug("Minimal IO block %llu sectors\n", min_io_sect);
	pr_debug("Device capacity %llu sectors\n", capacity);

	count = count_by_shift(capacity, shift);
	pr_debug("Chunks count %llu\n", count);
	while ((count > chunk_maximum_count) ||
	       ((1ull << (shift - SECTOR_SHIFT)) < min_io_sect)) {
		shift = shift + 1ull;
		count = count_by_shift(capacity, shift);
		pr_debug("Chunks count %llu\n", count);
	}

	diff_area->chunk_shift = shift;
	diff_area->chunk_count = count;

	pr_info("The optimal chunk size was calculated as %llu bytes for device [%d:%d]\n",
		(1ull << diff_area->chunk_shift),
		MAJOR(diff_area->orig_bdev->bd_dev),
		MINOR(diff_area->orig_bdev->bd_dev));
}

void diff_area_free(struct kref *kref)
{
	unsigned long inx = 0;
	struct hlist_node *tmp;
	void *entry;
	struct chunk *chunk;
	int bkt;
	struct diff_area *diff_area =
		container_of(kref, struct diff_area, kref);

	might_sleep();
	/* Before the flushes below: the shrinker queues the cache release. */
	diff_buffer_pool_unlist(&diff_area->buffer_pool);
	diff_storage_remove_origin(&diff_area->origin);
	/*
	 * Nothing may start I/O on the chunks any more: the cache release
	 * work stops at the corrupted flag, and what it already started is
	 * pending I/O, waited for below. A completion that requeued the work
	 * meanwhile finds the flag too; the last flush keeps it from running
	 * after the free.
	 */
	atomic_set(&diff_area->corrupt_flag, 1);
	flush_work(&diff_area->cache_release_work);
	/*
	 * The chunks cannot be freed under I/O still in flight: its completion
	 * would use them. Storage that never answers is the device's bug, so
	 * keep waiting, but say so.
	 */
	while (!wait_var_event_timeout(&diff_area->pending_io_count,
				       !atomic_read(&diff_area->pending_io_count),
				       10 * HZ))
		pr_warn("Waiting for pending I/O to complete\n");

	flush_work(&diff_area->cache_release_work);
	hash_for_each_safe(diff_area->chunk_map, bkt, tmp, chunk, map_link) {
		hash_del(&chunk->map_link);
		chunk_free(chunk);
	}
	xa_for_each(&diff_area->stored_groups, inx, entry) {
		if (!xa_is_value(entry))
			kfree(entry);
	}
	xa_destroy(&diff_area->stored_groups);

	if (diff_area->orig_bdev) {
		blkdev_put(diff_area->orig_bdev, FMODE_READ | FMODE_WRITE);
		diff_area->orig_bdev = NULL;
	}

	diff_buffer_pool_cleanup(&diff_area->buffer_pool);
	mempool_exit(&diff_area->chunk_pool);

	kfree(diff_area);
}

static inline struct chunk *
get_chunk_from_cache_and_write_lock(spinlock_t *caches_lock,
				    struct list_head *cache_queue,
				    atomic_t *cache_count)
{
	struct chunk *iter;
	struct chunk *chunk = NULL;

	spin_lock(caches_lock);
	list_for_each_entry(iter, cache_queue, cache_link) {
		if (!down_trylock(&iter->lock)) {
			chunk = iter;
			break;
		}
		/*
		 * If it is not possible to lock a chunk for writing,
		 * then it is currently in use, and we try to clean up the
		 * next chunk.
		 */
	}
	if (likely(chunk)) {
		atomic_dec(cache_count);
		list_del_init(&chunk->cache_link);
		/* Safe with the lock held: see chunk_put(). */
		chunk_get(chunk);
	}
	spin_unlock(caches_lock);

	return chunk;
}

static struct chunk *
diff_area_get_chunk_from_cache_and_write_lock(struct diff_area *diff_area,
					      unsigned int limit)
{
	struct chunk *chunk;

	if (atomic_read(&diff_area->read_cache_count) > limit) {
		chunk = get_chunk_from_cache_and_write_lock(&diff_area->caches_lock,
							    &diff_area->read_cache_queue,
							    &diff_area->read_cache_count);
		if (chunk)
			return chunk;
	}

	if (atomic_read(&diff_area->write_cache_count) > limit) {
		chunk = get_chunk_from_cache_and_write_lock(&diff_area->caches_lock,
							    &diff_area->write_cache_queue,
							    &diff_area->write_cache_count);
		if (chunk)
			return chunk;
	}

	return NULL;
}

static int diff_area_wait_tracked_reads(struct diff_area *diff_area,
					unsigned long number, bool of_storage,
					bool is_nowait);

static void diff_area_cache_release(struct diff_area *diff_area)
{
	/* Read before the walk: a request made during it queues another. */
	unsigned int limit = atomic_xchg(&diff_area->cache_release_all, 0) ?
			     0 : diff_area->cache_limit;
	struct chunk *chunk;

	while (!diff_area_is_corrupted(diff_area) &&
	       (chunk = diff_area_get_chunk_from_cache_and_write_lock(diff_area,
								      limit))) {
		/*
		 * There cannot be a chunk in the cache whose buffer is
		 * not ready.
		 */
		if (WARN(!chunk_state_check(chunk, CHUNK_ST_BUFFER_READY),
			 "Cannot release empty buffer for chunk #%ld",
			 chunk->number)) {
			up(&chunk->lock);
			chunk_put(chunk);
			continue;
		}

		if (chunk_state_check(chunk, CHUNK_ST_DIRTY)) {
			int ret;

			/*
			 * Image reads of a recorded chunk go to its place on
			 * the storage without its lock: let them end before
			 * the place is written again.
			 */
			if (chunk_state_check(chunk, CHUNK_ST_RECORDED))
				diff_area_wait_tracked_reads(diff_area,
							     chunk->number,
							     true, false);
			ret = chunk_schedule_storing(chunk, false);
			if (ret)
				chunk_store_failed(chunk, ret);
		} else {
			chunk_diff_buffer_release(chunk);
			up(&chunk->lock);
		}
		chunk_put(chunk);
	}
}

static void diff_area_cache_release_work(struct work_struct *work)
{
	struct diff_area *diff_area =
		container_of(work, struct diff_area, cache_release_work);

	diff_area_cache_release(diff_area);
}

/*
 * Memory is short: every cached chunk gives back its buffer and its
 * descriptor, soon. Does not wait; any context.
 */
void diff_area_release_cache_now(struct diff_area *diff_area)
{
	atomic_set(&diff_area->cache_release_all, 1);
	queue_work(blksnap_wq, &diff_area->cache_release_work);
}

/**
 * diff_area_starving() - Neither memory nor the reserve has a chunk
 *	descriptor or buffer for a copy of @diff_area: may it wait for one
 *	to be released?
 * @diff_area:
 *	The diff area.
 *
 * Those in use come back when their I/O completes, their cache is
 * released (asked for here), or the wait for storage ends. Not when the
 * area is corrupted (its cache is no longer released), nor while storage
 * is waited for: parked chunks keep theirs until then, and an image read
 * that the growth needs may wait for the chunk the copy holds. Image I/O
 * does not come here: it allocates, reclaiming as long as it takes, so
 * that it never waits for the copies' buffers.
 *
 * Return: 0 to wait (diff_buffer_wait(), or a short sleep), else the
 * error to give up with: -EIO, or -EXFULL (copy the batch again after the
 * wait for storage).
 */
int diff_area_starving(struct diff_area *diff_area)
{
	if (diff_area_is_corrupted(diff_area))
		return -EIO;
	if (diff_storage_is_waiting(diff_area->diff_storage))
		return -EXFULL;
	diff_area_release_cache_now(diff_area);
	return 0;
}

/* A buffer for a chunk: see diff_area_starving(). */
static struct diff_buffer *diff_area_take_buffer(struct diff_area *diff_area,
						 bool is_nowait, bool copying)
{
	struct diff_buffer *diff_buffer;
	int ret;

	for (;;) {
		diff_buffer = diff_buffer_take(&diff_area->buffer_pool,
					       is_nowait);
		if (!IS_ERR(diff_buffer) || PTR_ERR(diff_buffer) != -ENOMEM)
			return diff_buffer;
		if (!copying)
			return diff_buffer_alloc(&diff_area->buffer_pool);
		ret = diff_area_starving(diff_area);
		if (ret)
			return ERR_PTR(ret);
		diff_buffer_wait(&diff_area->buffer_pool, HZ / 10);
	}
}

static unsigned long diff_area_cached_buffers(struct diff_buffer_pool *pool)
{
	struct diff_area *diff_area =
		container_of(pool, struct diff_area, buffer_pool);

	/* A corrupted area's cache is released only with the area. */
	if (diff_area_is_corrupted(diff_area))
		return 0;
	return atomic_read(&diff_area->read_cache_count) +
	       atomic_read(&diff_area->write_cache_count);
}

static void diff_area_release_cached_buffers(struct diff_buffer_pool *pool)
{
	diff_area_release_cache_now(container_of(pool, struct diff_area,
						 buffer_pool));
}

static const struct diff_buffer_pool_ops diff_area_buffer_pool_ops = {
	.cached = diff_area_cached_buffers,
	.release_cached = diff_area_release_cached_buffers,
};

/*
 * The memory a device keeps beyond what it uses (buffer_memory_maximum_mb),
 * and its reserve: one batch of copies, buffers and descriptors.
 */
static int diff_area_init_pools(struct diff_area *diff_area)
{
	u64 budget = (u64)buffer_memory_maximum_mb << 20;
	unsigned int shift = diff_area->chunk_shift;
	unsigned int reserve = max(1u, COW_BATCH_BYTES >> min(shift, 31u));
	unsigned int keep;
	int ret;

	diff_area->cache_limit = min_t(u64, chunk_maximum_in_cache,
				       (budget / 4) >> shift);
	keep = min_t(u64, free_diff_buffer_pool_size, (budget / 2) >> shift);

	ret = mempool_init_kmalloc_pool(&diff_area->chunk_pool,
					max(16u, reserve), sizeof(struct chunk));
	if (ret)
		return ret;
	ret = diff_buffer_pool_init(&diff_area->buffer_pool,
				    diff_area_chunk_sectors(diff_area), reserve,
				    keep, &diff_area_buffer_pool_ops);
	if (ret)
		mempool_exit(&diff_area->chunk_pool);
	return ret;
}

/* Records looked up per hold of map_lock (interrupts off). */
#define UNSAVED_BATCH 1024

static bool diff_area_find_record(struct diff_area *diff_area,
				  unsigned long number, u64 *place);
static bool diff_area_read_is_tracked(struct diff_area *diff_area,
				      unsigned long number, bool of_storage);

/*
 * The origin's check for storage appended after the take (see
 * diff_storage_check_origins()): does the range of @bdev cover a chunk
 * of the original device that is not stored? A chunk being copied is not
 * stored yet. Records are only ever added, so the lock can be dropped
 * between batches.
 */
static bool diff_area_unsaved(struct diff_storage_origin *origin,
			      struct block_device *bdev, sector_t sector,
			      sector_t count)
{
	struct diff_area *diff_area =
		container_of(origin, struct diff_area, origin);
	sector_t orig_start = diff_area->orig_bdev->bd_start_sect;
	sector_t start = sector + bdev->bd_start_sect;
	sector_t end = start + count;
	unsigned long number, last;

	/* Compared on the whole disk: either may be a partition of it. */
	if (bdev_whole(bdev) != bdev_whole(diff_area->orig_bdev) ||
	    end <= orig_start)
		return false;
	start = start > orig_start ? start - orig_start : 0;
	end = min(end - orig_start, diff_area->capacity);
	if (start >= end)
		return false;

	number = chunk_number(diff_area, start);
	last = chunk_number(diff_area, end - 1);
	while (number <= last) {
		unsigned long batch_last = min(last, number + UNSAVED_BATCH - 1);
		unsigned long first = number;
		bool stored = true;

		spin_lock_irq(&diff_area->map_lock);
		for (; number <= batch_last; number++) {
			if (!diff_area_find_record(diff_area, number, NULL)) {
				stored = false;
				break;
			}
		}
		spin_unlock_irq(&diff_area->map_lock);
		/*
		 * An image read sent to the original before the copy may
		 * still be reading there (the copy's writer waits for it).
		 */
		while (stored && first < number)
			stored = !diff_area_read_is_tracked(diff_area,
							     first++, false);
		if (!stored)
			return true;
		cond_resched();
	}
	return false;
}

struct diff_area *diff_area_new(dev_t dev_id, struct diff_storage *diff_storage)
{
	struct diff_area *diff_area = NULL;
	struct block_device *bdev;

	pr_debug("Open device [%u:%u]\n", MAJOR(dev_id), MINOR(dev_id));

	if (!diff_storage->capacity) {
		pr_err("Unable to take snapshot of [%u:%u]: the difference storage is empty\n",
		       MAJOR(dev_id), MINOR(dev_id));
		return ERR_PTR(-ENOSPC);
	}

	bdev = blkdev_get_by_dev(dev_id, FMODE_READ | FMODE_WRITE, NULL);
	if (IS_ERR(bdev)) {
		pr_err("Failed to open device. errno=%d\n",
		       abs((int)PTR_ERR(bdev)));
		return ERR_PTR(PTR_ERR(bdev));
	}

	diff_area = kzalloc(sizeof(*diff_area), GFP_KERNEL);
	if (!diff_area) {
		blkdev_put(bdev, FMODE_READ | FMODE_WRITE);
		return ERR_PTR(-ENOMEM);
	}

	diff_area->orig_bdev = bdev;
	diff_area->diff_storage = diff_storage;

	if (!bdev_nr_sectors(bdev)) {
		pr_err("Unable to take snapshot of [%u:%u]: the device is empty\n",
		       MAJOR(dev_id), MINOR(dev_id));
		blkdev_put(bdev, FMODE_READ | FMODE_WRITE);
		kfree(diff_area);
		return ERR_PTR(-EINVAL);
	}

	diff_area->capacity = bdev_nr_sectors(bdev);
	diff_area_calculate_chunk_size(diff_area);
	pr_debug("Chunk size %llu in bytes\n", 1ull << diff_area->chunk_shift);
	pr_debug("Chunk count %lu\n", diff_area->chunk_count);

	kref_init(&diff_area->kref);
	spin_lock_init(&diff_area->map_lock);
	hash_init(diff_area->chunk_map);
	/* Its own lock nests in map_lock, taken with interrupts off. */
	xa_init_flags(&diff_area->stored_groups, XA_FLAGS_LOCK_IRQ);
	spin_lock_init(&diff_area->tracked_reads_lock);
	hash_init(diff_area->tracked_reads);
	init_waitqueue_head(&diff_area->tracked_reads_wq);

	spin_lock_init(&diff_area->caches_lock);
	INIT_LIST_HEAD(&diff_area->read_cache_queue);
	atomic_set(&diff_area->read_cache_count, 0);
	INIT_LIST_HEAD(&diff_area->write_cache_queue);
	atomic_set(&diff_area->write_cache_count, 0);
	INIT_WORK(&diff_area->cache_release_work, diff_area_cache_release_work);

	atomic_set(&diff_area->cache_release_all, 0);
	if (diff_area_init_pools(diff_area)) {
		blkdev_put(bdev, FMODE_READ | FMODE_WRITE);
		kfree(diff_area);
		return ERR_PTR(-ENOMEM);
	}

	atomic_set(&diff_area->corrupt_flag, 0);
	atomic_set(&diff_area->pending_io_count, 0);

	diff_area->origin.unsaved = diff_area_unsaved;
	diff_storage_add_origin(diff_storage, &diff_area->origin);
	return diff_area;
}

static void diff_area_take_chunk_from_cache(struct diff_area *diff_area,
					    struct chunk *chunk)
{
	spin_lock(&diff_area->caches_lock);
	if (!list_is_first(&chunk->cache_link, &chunk->cache_link)) {
		list_del_init(&chunk->cache_link);

		if (chunk_state_check(chunk, CHUNK_ST_DIRTY))
			atomic_dec(&diff_area->write_cache_count);
		else
			atomic_dec(&diff_area->read_cache_count);
	}
	spin_unlock(&diff_area->caches_lock);
}

/*
 * Memory: a chunk in use is a &struct chunk in diff_area.chunk_map; a chunk
 * stored and idle is only a record, the packed place of its data
 * (diff_storage_pack()), in diff_area.stored_groups, one entry per 64
 * consecutive chunk numbers. The entry of a single stored chunk is an
 * xarray value: its bit number and its place, in 63 bits. The entry of two
 * or more is a &struct chunk_group, an array with exactly one element per
 * stored chunk. So a record costs a share of an xarray node when one chunk
 * in a hundred changed, and its 8 bytes and a share of the group's bitmap
 * when most did. Records are only ever added: a stored chunk keeps its
 * place until the snapshot is destroyed (a write through the image stores
 * it again in the same place).
 */
#define CHUNK_GROUP_SHIFT 6

/**
 * struct chunk_group - The records of stored chunks of 64 consecutive
 *	numbers.
 * @stored:
 *	Bit N is set if chunk (group index << CHUNK_GROUP_SHIFT) + N is stored.
 * @place:
 *	The packed places of those chunks, in the order of their bits.
 */
struct chunk_group {
	u64 stored;
	u64 place[];
};

/*
 * A single record as a value entry: the bit number in the top 6 of its 63
 * bits, then a storage device index of 10 bits and a sector of 47 (64 PiB).
 * A place beyond that takes a one-element &struct chunk_group instead.
 */
#define CHUNK_SINGLE_SECTOR_BITS 47
#define CHUNK_SINGLE_INDEX_BITS 10
#define CHUNK_SINGLE_BIT_SHIFT (CHUNK_SINGLE_SECTOR_BITS + \
				CHUNK_SINGLE_INDEX_BITS)

static inline unsigned long chunk_group_index(unsigned long number)
{
	return number >> CHUNK_GROUP_SHIFT;
}

static inline unsigned int chunk_group_bitnr(unsigned long number)
{
	return number & (BIT(CHUNK_GROUP_SHIFT) - 1);
}

static bool chunk_single_fits(u64 place)
{
	return IS_ENABLED(CONFIG_64BIT) &&
	       (place >> STORAGE_PLACE_SECTOR_BITS) <
			BIT_ULL(CHUNK_SINGLE_INDEX_BITS) &&
	       !(place & GENMASK_ULL(STORAGE_PLACE_SECTOR_BITS - 1,
				     CHUNK_SINGLE_SECTOR_BITS));
}

static void *chunk_single_entry(unsigned int bitnr, u64 place)
{
	u64 index = place >> STORAGE_PLACE_SECTOR_BITS;
	u64 sector = place & GENMASK_ULL(CHUNK_SINGLE_SECTOR_BITS - 1, 0);

	return xa_mk_value((unsigned long)((u64)bitnr << CHUNK_SINGLE_BIT_SHIFT |
					   index << CHUNK_SINGLE_SECTOR_BITS |
					   sector));
}

/*
 * The records of an entry: the bitmap of its chunks, and their places,
 * which for a value entry are in @single.
 */
static unsigned int chunk_records(void *entry, u64 *stored,
				  const u64 **places, u64 *single)
{
	const struct chunk_group *group = entry;
	u64 value;

	if (!entry) {
		*stored = 0;
		*places = NULL;
		return 0;
	}
	if (!xa_is_value(entry)) {
		*stored = group->stored;
		*places = group->place;
		return hweight64(group->stored);
	}
	value = xa_to_value(entry);
	*stored = BIT_ULL(value >> CHUNK_SINGLE_BIT_SHIFT);
	*single = (value >> CHUNK_SINGLE_SECTOR_BITS &
		   GENMASK_ULL(CHUNK_SINGLE_INDEX_BITS - 1, 0)) <<
			STORAGE_PLACE_SECTOR_BITS |
		  (value & GENMASK_ULL(CHUNK_SINGLE_SECTOR_BITS - 1, 0));
	*places = single;
	return 1;
}

/* Under map_lock. */
static bool diff_area_find_record(struct diff_area *diff_area,
				  unsigned long number, u64 *place)
{
	u64 bit = BIT_ULL(chunk_group_bitnr(number));
	const u64 *places;
	u64 stored, single;
	void *entry;

	entry = xa_load(&diff_area->stored_groups, chunk_group_index(number));
	chunk_records(entry, &stored, &places, &single);
	if (!(stored & bit))
		return false;
	if (place)
		*place = places[hweight64(stored & (bit - 1))];
	return true;
}

/* Under map_lock. */
static struct chunk *diff_area_find_used(struct diff_area *diff_area,
					 unsigned long number)
{
	struct chunk *chunk;

	hash_for_each_possible(diff_area->chunk_map, chunk, map_link, number) {
		if (chunk->number == number)
			return chunk;
	}
	return NULL;
}

/**
 * diff_area_record_chunk() - Records the place of a chunk just stored.
 * @diff_area:
 *	The diff area of the chunk.
 * @chunk:
 *	The chunk, locked, stored for the first time.
 *
 * Once recorded, the chunk is freed when it is idle (chunk_put()). Without
 * memory for the record it is not: it stays in use, and costs its
 * &struct chunk, until the snapshot is destroyed.
 *
 * Context: may sleep; the storage's completion.
 */
void diff_area_record_chunk(struct diff_area *diff_area, struct chunk *chunk)
{
	unsigned long index = chunk_group_index(chunk->number);
	unsigned int bitnr = chunk_group_bitnr(chunk->number);
	u64 bit = BIT_ULL(bitnr);
	struct chunk_group *grown = NULL;
	u64 place, stored, single;
	const u64 *places;
	unsigned int count, pos, room = 0;
	unsigned long flags;
	void *entry;

	if (!chunk->diff_region ||
	    diff_storage_pack(diff_area->diff_storage, chunk->diff_region,
			      &place))
		return;
	/*
	 * The store under map_lock must not allocate: an empty slot is
	 * reserved first. Entries are never removed, so a slot that has
	 * one keeps it.
	 */
	if (!xa_load(&diff_area->stored_groups, index) &&
	    xa_reserve_irq(&diff_area->stored_groups, index, GFP_NOIO))
		return;

	spin_lock_irqsave(&diff_area->map_lock, flags);
	for (;;) {
		entry = xa_load(&diff_area->stored_groups, index);
		count = chunk_records(entry, &stored, &places, &single);
		if (!count && chunk_single_fits(place)) {
			kfree(grown);
			grown = NULL;
			break;
		}
		/* Allocated for the records read under the lock before? */
		if (room > count)
			break;
		spin_unlock_irqrestore(&diff_area->map_lock, flags);

		kfree(grown);
		room = count + 1;
		grown = kmalloc(struct_size(grown, place, room), GFP_NOIO);
		if (!grown)
			return;

		spin_lock_irqsave(&diff_area->map_lock, flags);
	}

	if (WARN_ON(stored & bit)) {
		spin_unlock_irqrestore(&diff_area->map_lock, flags);
		kfree(grown);
		return;
	}
	if (grown) {
		pos = hweight64(stored & (bit - 1));
		grown->stored = stored | bit;
		memcpy(grown->place, places, pos * sizeof(u64));
		grown->place[pos] = place;
		memcpy(grown->place + pos + 1, places + pos,
		       (count - pos) * sizeof(u64));
	}
	/* Into the reserved or the used slot: it does not allocate. */
	xa_store(&diff_area->stored_groups, index,
		 grown ? grown : chunk_single_entry(bitnr, place), GFP_NOWAIT);
	chunk_state_set(chunk, CHUNK_ST_RECORDED);
	spin_unlock_irqrestore(&diff_area->map_lock, flags);
	/* Every reader of the old group held map_lock. */
	if (!xa_is_value(entry))
		kfree(entry);
}

/*
 * Idle: stored and recorded, or never copied (as if it had not been
 * allocated), and without a buffer. Under the chunk's lock.
 */
static bool chunk_is_idle(struct chunk *chunk)
{
	int state = atomic_read(&chunk->state);

	if (chunk->diff_buffer)
		return false;
	if (!state)
		return !chunk->diff_region;
	return state == (CHUNK_ST_STORE_READY | CHUNK_ST_RECORDED);
}

/**
 * chunk_put() - Drops a reference to a chunk.
 * @chunk:
 *	The chunk.
 *
 * The last reference frees the chunk if it is idle (chunk_is_idle()) and
 * not locked. Nothing else can find it then: lookups take their reference
 * under map_lock, and a chunk in the cache has its buffer, so is not idle.
 * A chunk that is locked at its last put stays in chunk_map without a
 * reference, still found by lookups: the put of the next one to use it
 * frees it, or diff_area_free() does.
 *
 * Context: any, the image reads' completion included.
 */
void chunk_put(struct chunk *chunk)
{
	struct diff_area *diff_area = chunk->diff_area;
	unsigned long flags;

	if (!atomic_dec_and_lock_irqsave(&chunk->refs, &diff_area->map_lock,
					 flags))
		return;

	if (down_trylock(&chunk->lock)) {
		spin_unlock_irqrestore(&diff_area->map_lock, flags);
		return;
	}
	/*
	 * The cache release work takes a reference while it holds the lock:
	 * with the lock held here, the count is the final word.
	 */
	if (atomic_read(&chunk->refs) || !chunk_is_idle(chunk)) {
		up(&chunk->lock);
		spin_unlock_irqrestore(&diff_area->map_lock, flags);
		return;
	}
	hash_del(&chunk->map_link);
	spin_unlock_irqrestore(&diff_area->map_lock, flags);

	mempool_free(chunk, &diff_area->chunk_pool);
}

/*
 * Finds the chunk in use, with a reference, or NULL; either way @recorded
 * tells whether the chunk has a record (at @place). CHUNK_ST_RECORDED is
 * set under map_lock with the record, so a chunk in use without it has none.
 */
static struct chunk *diff_area_find_chunk(struct diff_area *diff_area,
					  unsigned long number, bool *recorded,
					  u64 *place)
{
	struct chunk *chunk;
	unsigned long flags;

	spin_lock_irqsave(&diff_area->map_lock, flags);
	chunk = diff_area_find_used(diff_area, number);
	if (chunk)
		chunk_get(chunk);
	*recorded = (!chunk || chunk_state_check(chunk, CHUNK_ST_RECORDED)) &&
		    diff_area_find_record(diff_area, number, place);
	spin_unlock_irqrestore(&diff_area->map_lock, flags);

	return chunk;
}

/**
 * diff_area_get_chunk() - Finds the chunk, or allocates it.
 * @diff_area:
 *	The diff area.
 * @number:
 *	The number of the chunk.
 * @is_nowait:
 *	The caller must not sleep.
 * @copying:
 *	For copy-on-write: a stored chunk needs nothing more, so its record
 *	is enough and NULL is returned for it. Otherwise a stored chunk is
 *	brought back from its record, in the state it had.
 *
 * A chunk is allocated the first time it is needed, in the write's path,
 * rather than every chunk at take: that keeps an idle snapshot of a large
 * device cheap. Without @is_nowait the allocation may take from the
 * device's reserve and wait for a descriptor in use (chunk_alloc()).
 *
 * Return: the chunk with a reference (chunk_put() it), NULL (see
 * @copying), or an error pointer.
 */
static struct chunk *diff_area_get_chunk(struct diff_area *diff_area,
					 unsigned long number, bool is_nowait,
					 bool copying)
{
	sector_t chunk_sectors = diff_area_chunk_sectors(diff_area);
	sector_t first = (sector_t)number * chunk_sectors;
	struct chunk *chunk, *used;
	unsigned long flags;
	bool recorded = false;
	bool again;
	u64 place;

	if (unlikely(number >= diff_area->chunk_count))
		return ERR_PTR(-EINVAL);
	do {
		chunk = diff_area_find_chunk(diff_area, number, &recorded,
					     &place);
		if (chunk)
			return chunk;
		if (recorded && copying)
			return NULL;

		chunk = chunk_alloc(diff_area, number,
				    min(chunk_sectors,
					diff_area->capacity - first),
				    is_nowait, copying);
		if (IS_ERR(chunk))
			return chunk;
		if (recorded) {
			chunk->region.count = chunk_sectors;
			if (diff_storage_region_at(diff_area->diff_storage,
						   place, &chunk->region)) {
				chunk_free(chunk);
				return ERR_PTR(-EIO);
			}
			chunk->diff_region = &chunk->region;
			atomic_set(&chunk->state,
				   CHUNK_ST_STORE_READY | CHUNK_ST_RECORDED);
		}

		spin_lock_irqsave(&diff_area->map_lock, flags);
		used = diff_area_find_used(diff_area, number);
		again = false;
		if (used) {
			/* Another allocated it first. */
			chunk_get(used);
		} else if (!recorded &&
			   diff_area_find_record(diff_area, number, NULL)) {
			/* It was stored and freed meanwhile: look again. */
			again = true;
		} else {
			hash_add(diff_area->chunk_map, &chunk->map_link,
				 number);
		}
		spin_unlock_irqrestore(&diff_area->map_lock, flags);

		if (used || again)
			chunk_free(chunk);
		if (used)
			return used;
	} while (again);

	return chunk;
}

/*
 * Locks @chunk for a copy-on-write, or says -EAGAIN without waiting to a
 * REQ_NOWAIT write, and then drops the caller's reference. Not killable:
 * the write goes on whether or not its copy was waited for, so a writer's
 * fatal signal must not cost the snapshot its chunk. The wait is bounded
 * by the copy's I/O.
 */
static int diff_area_lock_for_copy(struct chunk *chunk, bool is_nowait)
{
	if (!is_nowait) {
		down(&chunk->lock);
		return 0;
	}
	if (!down_trylock(&chunk->lock))
		return 0;
	chunk_put(chunk);
	return -EAGAIN;
}

/**
 * diff_area_copy() - Implements the copy-on-write mechanism.
 * @diff_area:
 *	The diff area of the original device.
 * @sector:
 *	The first sector about to be overwritten.
 * @count:
 *	The number of sectors about to be overwritten.
 * @is_nowait:
 *	The caller must not sleep.
 *
 * Starts copying every chunk of the range that has not been saved yet.
 * diff_area_wait() waits for the copies to be done.
 *
 * Return: 0, -EAGAIN if @is_nowait and it would have to sleep (nothing is
 * lost: the chunk stays as it was), -EXFULL if the storage is out of space
 * and copy-on-write waits for more (the chunks before the one that needed
 * reading are started; copy the range again after
 * diff_storage_wait_for_space()), or another error for which the chunk
 * was failed.
 */
int diff_area_copy(struct diff_area *diff_area, sector_t sector, sector_t count,
		   const bool is_nowait)
{
	int ret = 0;
	sector_t offset;
	struct chunk *chunk;
	struct diff_buffer *diff_buffer;
	sector_t area_sect_first;
	sector_t chunk_sectors = diff_area_chunk_sectors(diff_area);

	area_sect_first = round_down(sector, chunk_sectors);
	for (offset = area_sect_first; offset < (sector + count);
	     offset += chunk_sectors) {
		chunk = diff_area_get_chunk(diff_area,
					    chunk_number(diff_area, offset),
					    is_nowait, true);
		if (!chunk)
			continue;	/* stored */
		if (IS_ERR(chunk)) {
			ret = PTR_ERR(chunk);
			if (ret != -EAGAIN && ret != -EXFULL)
				diff_area_set_corrupted(diff_area, ret);
			return ret;
		}
		WARN_ON(chunk_number(diff_area, offset) != chunk->number);
		if (diff_area_lock_for_copy(chunk, is_nowait))
			return -EAGAIN;

		if (chunk_state_check(chunk, CHUNK_ST_FAILED | CHUNK_ST_DIRTY |
						     CHUNK_ST_STORE_READY)) {
			/*
			 * The chunk has already been:
			 * - Failed, when the snapshot is corrupted
			 * - Overwritten in the snapshot image
			 * - Already stored in the diff storage
			 */
			up(&chunk->lock);
			chunk_put(chunk);
			continue;
		}

		if (unlikely(chunk_state_check(chunk,
					       CHUNK_ST_LOADING | CHUNK_ST_STORING))) {
			pr_err("Invalid chunk state\n");
			ret = -EFAULT;
			goto fail_unlock_chunk;
		}

		if (chunk_state_check(chunk, CHUNK_ST_BUFFER_READY)) {
			diff_area_take_chunk_from_cache(diff_area, chunk);
			/**
			 * The chunk has already been read, but now we need
			 * to store it to diff_storage.
			 */
			ret = chunk_schedule_storing(chunk, is_nowait);
			if (unlikely(ret))
				goto fail_unlock_chunk;
		} else {
			/*
			 * The storage is out of space and copy-on-write waits
			 * for more: read no more chunks into memory meanwhile.
			 * The caller waits, then copies the batch again.
			 */
			if (diff_storage_is_waiting(diff_area->diff_storage)) {
				ret = -EXFULL;
				goto fail_unlock_chunk;
			}
			/* See diff_io_do(): one bio at most without waiting. */
			if (is_nowait && chunk->sector_count >
			    (sector_t)BIO_MAX_VECS * PAGE_SECTORS) {
				ret = -EAGAIN;
				goto fail_unlock_chunk;
			}
			diff_buffer = diff_area_take_buffer(diff_area,
							    is_nowait, true);
			if (IS_ERR(diff_buffer)) {
				ret = PTR_ERR(diff_buffer);
				goto fail_unlock_chunk;
			}
			WARN(chunk->diff_buffer, "Chunks buffer has been lost");
			chunk->diff_buffer = diff_buffer;

			ret = chunk_async_load_orig(chunk, is_nowait);
			if (unlikely(ret))
				goto fail_unlock_chunk;
		}
		/* The I/O started holds its own reference. */
		chunk_put(chunk);
	}

	return ret;
fail_unlock_chunk:
	WARN_ON(!chunk);
	if (ret == -EAGAIN || ret == -EXFULL) {
		/*
		 * The write will be retried (REQ_NOWAIT), or the batch copied
		 * again after the wait for storage: the chunk is not broken,
		 * it goes back to the state it had.
		 */
		if (chunk_state_check(chunk, CHUNK_ST_BUFFER_READY)) {
			chunk_schedule_caching(chunk);
		} else {
			chunk_diff_buffer_release(chunk);
			up(&chunk->lock);
		}
		chunk_put(chunk);
		return ret;
	}
	chunk_store_failed(chunk, ret);
	chunk_put(chunk);
	return ret;
}

/*
 * A read tracked without a chunk's lock covers a run of chunks within one
 * group of TRACKED_READ_GROUP, which is its key in &diff_area.tracked_reads,
 * so that a lookup of one chunk finds the runs that cover it in one bucket.
 */
#define TRACKED_READ_GROUP_SHIFT 4
#define TRACKED_READ_GROUP BIT(TRACKED_READ_GROUP_SHIFT)

static inline unsigned long tracked_read_key(unsigned long number)
{
	return number >> TRACKED_READ_GROUP_SHIFT;
}

static bool diff_area_read_is_tracked(struct diff_area *diff_area,
				      unsigned long number, bool of_storage)
{
	struct diff_area_read *rd;
	unsigned long flags;
	bool tracked = false;

	spin_lock_irqsave(&diff_area->tracked_reads_lock, flags);
	hash_for_each_possible(diff_area->tracked_reads, rd, tracked_link,
			       tracked_read_key(number)) {
		if (number - rd->number < rd->count &&
		    (rd->on_orig || of_storage)) {
			tracked = true;
			break;
		}
	}
	spin_unlock_irqrestore(&diff_area->tracked_reads_lock, flags);

	return tracked;
}

/*
 * An image read of a chunk that had no descriptor went to the original
 * device without the chunk's lock (diff_area_image_read_begin()): the write
 * about to overwrite the chunk must wait until that read is done. A read
 * that starts later finds the chunk, allocated by the copy, and locks it.
 * An image read of a recorded chunk went to its place on the storage, also
 * without the lock: storing the chunk again waits for it here as well
 * (@of_storage), but a write to the original device does not, since it
 * cannot change what that read sees.
 */
static int diff_area_wait_tracked_reads(struct diff_area *diff_area,
					unsigned long number, bool of_storage,
					bool is_nowait)
{
	if (!diff_area_read_is_tracked(diff_area, number, of_storage))
		return 0;
	if (is_nowait)
		return -EAGAIN;
	/* Not killable, as the chunk locks of diff_area_copy(). */
	wait_event(diff_area->tracked_reads_wq,
		   !diff_area_read_is_tracked(diff_area, number, of_storage));
	return 0;
}

int diff_area_wait(struct diff_area *diff_area, sector_t sector, sector_t count,
		   const bool is_nowait)
{
	int ret = 0;
	sector_t offset;
	struct chunk *chunk;
	sector_t area_sect_first;
	sector_t chunk_sectors = diff_area_chunk_sectors(diff_area);

	area_sect_first = round_down(sector, chunk_sectors);
	for (offset = area_sect_first; offset < (sector + count);
	     offset += chunk_sectors) {
		unsigned long number = chunk_number(diff_area, offset);
		bool recorded = false;
		bool failed;

		chunk = diff_area_find_chunk(diff_area, number, &recorded,
					     NULL);
		if (!chunk && !recorded) {
			/* diff_area_copy() left it in use or recorded. */
			diff_area_set_corrupted(diff_area, -EINVAL);
			return -EINVAL;
		}
		if (chunk) {
			if (diff_area_lock_for_copy(chunk, is_nowait))
				return -EAGAIN;
			/*
			 * The lock was held while the chunk was being read from
			 * the original device: now it is read (or was failed).
			 */
			failed = chunk_state_check(chunk, CHUNK_ST_FAILED);
			up(&chunk->lock);
			chunk_put(chunk);
			if (failed) {
				ret = -EIO;
				break;
			}
		}

		ret = diff_area_wait_tracked_reads(diff_area, number, false,
						   is_nowait);
		if (ret)
			break;
	}

	return ret;
}

static inline void diff_area_image_put_chunk(struct chunk *chunk, bool is_write)
{
	if (is_write) {
		/*
		 * Since the chunk was taken to perform writing,
		 * we mark it as dirty.
		 */
		chunk_state_set(chunk, CHUNK_ST_DIRTY);
	}

	chunk_schedule_caching(chunk);
	chunk_put(chunk);
}

void diff_area_image_ctx_done(struct diff_area_image_ctx *io_ctx)
{
	if (!io_ctx->chunk)
		return;

	diff_area_image_put_chunk(io_ctx->chunk, io_ctx->is_write);
}

static int diff_area_load_chunk_from_storage(struct diff_area *diff_area,
					     struct chunk *chunk)
{
	struct diff_buffer *diff_buffer;

	diff_buffer = diff_area_take_buffer(diff_area, false, false);
	if (IS_ERR(diff_buffer))
		return PTR_ERR(diff_buffer);

	WARN_ON(chunk->diff_buffer);
	chunk->diff_buffer = diff_buffer;

	if (chunk_state_check(chunk, CHUNK_ST_STORE_READY))
		return chunk_load_diff(chunk);

	return chunk_load_orig(chunk);
}

/*
 * Locks a chunk for I/O to the image. A chunk that failed has lost the
 * snapshot's data, so the image cannot give it.
 */
static int diff_area_image_lock_chunk(struct chunk *chunk)
{
	int ret;

	ret = down_killable(&chunk->lock);
	if (ret)
		return ret;

	if (unlikely(chunk_state_check(chunk, CHUNK_ST_FAILED))) {
		pr_err_ratelimited("Chunk #%ld corrupted\n", chunk->number);
		up(&chunk->lock);
		return -EIO;
	}
	return 0;
}

/*
 * Locks a chunk for an image read, or finds it parked for storage: then
 * the read copies from its buffer without the lock (returns 1), for the
 * storage that ends the wait may itself wait for this read (the growth of
 * a storage file on a snapshotted file system reads that file system's
 * map at take through the image). The chunk may be parked while the read
 * waits: it looks again every tenth of a second.
 */
static int diff_area_image_read_lock_chunk(struct chunk *chunk)
{
	while (down_timeout(&chunk->lock, HZ / 10)) {
		if (chunk_parked_read_begin(chunk))
			return 1;
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	if (unlikely(chunk_state_check(chunk, CHUNK_ST_FAILED))) {
		pr_err_ratelimited("Chunk #%ld corrupted\n", chunk->number);
		up(&chunk->lock);
		return -EIO;
	}
	return 0;
}

static struct chunk *
diff_area_image_context_get_chunk(struct diff_area_image_ctx *io_ctx,
				  sector_t sector)
{
	int ret;
	struct chunk *chunk;
	struct diff_area *diff_area = io_ctx->diff_area;
	unsigned long new_chunk_number = chunk_number(diff_area, sector);

	chunk = io_ctx->chunk;
	if (chunk) {
		if (chunk->number == new_chunk_number)
			return chunk;

		/*
		 * If the sector falls into a new chunk, then we release
		 * the old chunk.
		 */
		diff_area_image_put_chunk(chunk, io_ctx->is_write);
		io_ctx->chunk = NULL;
	}

	/*
	 * Once a chunk could not be saved, any chunk of the image may differ
	 * from the snapshot: fail the read rather than return wrong data.
	 */
	if (diff_area_is_corrupted(diff_area))
		return ERR_PTR(-EIO);

	chunk = diff_area_get_chunk(diff_area, new_chunk_number, false, false);
	if (IS_ERR(chunk))
		return chunk;

	ret = diff_area_image_lock_chunk(chunk);
	if (ret) {
		chunk_put(chunk);
		return ERR_PTR(ret);
	}

	/*
	 * If there is already data in the buffer, then nothing needs to be loaded.
	 * Otherwise, the chunk needs to be loaded from the original device or
	 * from the difference storage.
	 */
	if (!chunk_state_check(chunk, CHUNK_ST_BUFFER_READY)) {
		ret = diff_area_load_chunk_from_storage(diff_area, chunk);
		if (unlikely(ret))
			goto fail_unlock_chunk;

		/* Set the flag that the buffer contains the required data. */
		chunk_state_set(chunk, CHUNK_ST_BUFFER_READY);
	} else {
		diff_area_take_chunk_from_cache(diff_area, chunk);
	}

	io_ctx->chunk = chunk;
	return chunk;

fail_unlock_chunk:
	pr_err("Failed to load chunk #%ld\n", chunk->number);
	/* A buffer without its data is of no use to the next user. */
	chunk_diff_buffer_release(chunk);
	up(&chunk->lock);
	chunk_put(chunk);
	return ERR_PTR(ret);
}

/**
 * diff_area_image_io - Implements copying data from the chunk to bio_vec when
 *	reading or from bio_vec to the chunk when writing.
 * @io_ctx:
 *	The context of the image bio; it holds the current chunk locked.
 * @bvec:
 *	The segment of the bio.
 * @pos:
 *	The sector of the image the segment starts at; advanced past it.
 *
 * Return: BLK_STS_OK or BLK_STS_IOERR.
 */
blk_status_t diff_area_image_io(struct diff_area_image_ctx *io_ctx,
				const struct bio_vec *bvec, sector_t *pos)
{
	unsigned int bv_len = bvec->bv_len;
	struct iov_iter iter;

	iov_iter_bvec(&iter, io_ctx->is_write ? WRITE : READ, bvec, 1, bv_len);

	while (bv_len) {
		struct diff_buffer_iter diff_buffer_iter;
		struct chunk *chunk;
		size_t buff_offset;

		chunk = diff_area_image_context_get_chunk(io_ctx, *pos);
		if (IS_ERR(chunk))
			return BLK_STS_IOERR;

		buff_offset = (size_t)(*pos - chunk_sector(chunk))
				<< SECTOR_SHIFT;
		while (bv_len &&
		       diff_buffer_iter_get(chunk->diff_buffer, buff_offset,
					    &diff_buffer_iter)) {
			size_t sz;

			if (io_ctx->is_write)
				sz = copy_page_from_iter(diff_buffer_iter.page,
							 diff_buffer_iter.offset,
							 diff_buffer_iter.bytes,
							 &iter);
			else
				sz = copy_page_to_iter(diff_buffer_iter.page,
						       diff_buffer_iter.offset,
						       diff_buffer_iter.bytes,
						       &iter);
			if (!sz)
				return BLK_STS_IOERR;

			buff_offset += sz;
			*pos += (sz >> SECTOR_SHIFT);
			bv_len -= sz;
		}
	}

	return BLK_STS_OK;
}

/* Context: any, the read's completion included. */
static void diff_area_untrack_read(struct diff_area *diff_area,
				   struct diff_area_read *rd)
{
	unsigned long flags;

	spin_lock_irqsave(&diff_area->tracked_reads_lock, flags);
	hash_del(&rd->tracked_link);
	spin_unlock_irqrestore(&diff_area->tracked_reads_lock, flags);
	/*
	 * Waiters are rare (a write racing a read of the same chunk); the
	 * barrier in wq_has_sleeper() pairs with the one in prepare_to_wait()
	 * before the waiter tests the hash again.
	 */
	if (wq_has_sleeper(&diff_area->tracked_reads_wq))
		wake_up_all(&diff_area->tracked_reads_wq);
}

/*
 * Is chunk @number, looked up after it was tracked, where a tracked read of
 * the chunks before it may go on: still on the original device when they
 * are (@recorded false), or stored clean at @place when they are?
 */
static bool diff_area_read_may_span(struct diff_area *diff_area,
				    unsigned long number, bool recorded,
				    u64 place)
{
	struct chunk *chunk;
	bool found_recorded = false;
	u64 found_place = 0;
	bool clean = true;

	chunk = diff_area_find_chunk(diff_area, number, &found_recorded,
				     &found_place);
	if (chunk) {
		/* In use: only a stored, clean one has its data in place. */
		clean = found_recorded &&
			!chunk_state_check(chunk,
					   CHUNK_ST_DIRTY | CHUNK_ST_FAILED);
		chunk_put(chunk);
		if (!recorded)
			return false;
	}
	if (found_recorded != recorded)
		return false;
	/*
	 * On the device of the chunk before, which ends at @place - 1: a
	 * sector that carried into the device index would not be.
	 */
	return !recorded ||
	       (clean && found_place == place &&
		found_place >> STORAGE_PLACE_SECTOR_BITS ==
		(place - 1) >> STORAGE_PLACE_SECTOR_BITS);
}

/*
 * Extends the tracked read @rd of chunk @rd->number over the chunks after
 * it, within its group and the @wanted sectors after that chunk, while
 * their data lies right after the first one's on the same device: chunks
 * still on the original device after one still there, chunks stored one
 * after another after a stored one at @place. The image's bio then reaches
 * that device as one bio where dm-snapshot sends one per chunk. Each
 * chunk is tracked before it is looked up, as the first one is, so that a
 * copy of it, or its storing again, that the lookup missed waits for the
 * read.
 *
 * Return: the sectors added to the read.
 */
static sector_t diff_area_span_read(struct diff_area *diff_area,
				    struct diff_area_read *rd, bool recorded,
				    u64 place, sector_t wanted)
{
	sector_t chunk_sectors = diff_area_chunk_sectors(diff_area);
	unsigned long last = min(diff_area->chunk_count,
				 round_up(rd->number + 1, TRACKED_READ_GROUP));
	unsigned long number = rd->number + 1;
	sector_t added = 0;

	for (; number < last && added < wanted; number++) {
		sector_t first = (sector_t)number * chunk_sectors;

		spin_lock_irq(&diff_area->tracked_reads_lock);
		rd->count++;
		spin_unlock_irq(&diff_area->tracked_reads_lock);

		place += chunk_sectors;
		if (!diff_area_read_may_span(diff_area, number, recorded,
					     place)) {
			spin_lock_irq(&diff_area->tracked_reads_lock);
			rd->count--;
			spin_unlock_irq(&diff_area->tracked_reads_lock);
			if (wq_has_sleeper(&diff_area->tracked_reads_wq))
				wake_up_all(&diff_area->tracked_reads_wq);
			break;
		}
		added += min(chunk_sectors, diff_area->capacity - first);
	}
	return added;
}

/**
 * diff_area_image_read_begin() - Tells where the snapshot's data for a sector
 *	of the image is, and keeps it there until diff_area_image_read_end().
 * @diff_area:
 *	The diff area of the image.
 * @sector:
 *	The sector of the image.
 * @wanted:
 *	The sectors the caller would read from @sector.
 * @rd:
 *	Receives the chunk, locked, or the tracking of the read when the chunk
 *	has no descriptor or is read from its record.
 * @from:
 *	Receives the device and the sector on it that hold the data of
 *	@sector, and the number of sectors that may be read there: those
 *	left in the chunk, or more, up to @wanted, when the next chunks'
 *	data follows on the same device (diff_area_span_read()).
 *	&diff_region.bdev is NULL when the data is in the chunk's buffer:
 *	then @rd->chunk is out of the cache, ready for diff_area_image_io().
 *
 * A chunk that was never copied is still on the original device, and a
 * stored chunk is on the difference storage unless a write through the
 * image made its buffer newer: the caller reads it there directly, which
 * costs neither a buffer nor a copy. Until diff_area_image_read_end(),
 * copy-on-write of the chunk waits, so the original cannot change under
 * the read, and a stored chunk is not stored again. A chunk that has no
 * descriptor is not allocated for this, nor is a recorded one locked: the
 * read is tracked instead, as dm-snapshot tracks its reads of the origin.
 *
 * Return: 0, -EIO if the snapshot is corrupted or the chunk failed, -EINVAL
 * for a sector out of the device, or -EINTR if the task was killed.
 */
int diff_area_image_read_begin(struct diff_area *diff_area, sector_t sector,
			       sector_t wanted, struct diff_area_read *rd,
			       struct diff_region *from)
{
	unsigned long number = chunk_number(diff_area, sector);
	sector_t chunk_sectors = diff_area_chunk_sectors(diff_area);
	sector_t offset = sector - (sector_t)number * chunk_sectors;
	bool recorded = false;
	struct chunk *chunk;
	u64 place = 0;
	int ret;

	if (diff_area_is_corrupted(diff_area))
		return -EIO;
	if (unlikely(number >= diff_area->chunk_count))
		return -EINVAL;

	rd->number = number;
	rd->count = 1;
	rd->on_orig = true;
	rd->chunk = NULL;
	rd->parked = false;
	/*
	 * Tracked before the lookup: a copy that allocates the chunk after it,
	 * and a write through the image that stores a recorded chunk again,
	 * wait for this read (diff_area_wait_tracked_reads()).
	 */
	spin_lock_irq(&diff_area->tracked_reads_lock);
	hash_add(diff_area->tracked_reads, &rd->tracked_link,
		 tracked_read_key(number));
	spin_unlock_irq(&diff_area->tracked_reads_lock);

	chunk = diff_area_find_chunk(diff_area, number, &recorded, &place);
	/*
	 * A stored chunk whose buffer holds nothing newer than its place is
	 * read there, as one without a descriptor is, rather than copied from
	 * the buffer under its lock: the copy would cost the submitter's CPU
	 * and hold up every other read of the chunk meanwhile. A write through
	 * the image that dirties the chunk stores it again only after this
	 * tracked read (diff_area_cache_release()): the tracking above is
	 * under tracked_reads_lock, which that check takes after DIRTY is set,
	 * so either the check sees this read or this test sees DIRTY.
	 */
	if (chunk && recorded &&
	    !chunk_state_check(chunk, CHUNK_ST_DIRTY | CHUNK_ST_FAILED)) {
		chunk_put(chunk);
		chunk = NULL;
	}
	if (!chunk && recorded) {
		ret = diff_storage_region_at(diff_area->diff_storage, place,
					     from);
		if (ret) {
			diff_area_untrack_read(diff_area, rd);
			return -EIO;
		}
		/*
		 * Storage of larger blocks than the image's may refuse the
		 * read: diff_area_image_read_load() serves it, from the
		 * chunk's buffer.
		 */
		if (bdev_logical_block_size(from->bdev) >
		    bdev_logical_block_size(diff_area->orig_bdev)) {
			chunk = diff_area_get_chunk(diff_area, number, false,
						    false);
			if (IS_ERR(chunk)) {
				diff_area_untrack_read(diff_area, rd);
				return PTR_ERR(chunk);
			}
		}
	}

	if (!chunk) {
		/*
		 * Not before the lookup: until it, copy-on-write of the chunk
		 * may still be about to change the original under this read.
		 */
		if (recorded) {
			spin_lock_irq(&diff_area->tracked_reads_lock);
			rd->on_orig = false;
			spin_unlock_irq(&diff_area->tracked_reads_lock);
			if (wq_has_sleeper(&diff_area->tracked_reads_wq))
				wake_up_all(&diff_area->tracked_reads_wq);
		}
		from->count = min(chunk_sectors,
				  diff_area->capacity - sector + offset) - offset;
		if (wanted > from->count)
			from->count += diff_area_span_read(diff_area, rd,
							   recorded, place,
							   wanted - from->count);
		if (recorded) {
			from->sector += offset;
		} else {
			from->bdev = diff_area->orig_bdev;
			from->sector = sector;
		}
		return 0;
	}

	/* The chunk's lock keeps it, as it keeps copy-on-write waiting. */
	diff_area_untrack_read(diff_area, rd);
	ret = diff_area_image_read_lock_chunk(chunk);
	if (ret == 1) {
		/* Parked: from the buffer, unlocked. */
		rd->chunk = chunk;
		rd->parked = true;
		from->count = chunk->sector_count - offset;
		from->bdev = NULL;
		from->sector = 0;
		return 0;
	}
	if (ret) {
		chunk_put(chunk);
		return ret;
	}
	rd->chunk = chunk;

	from->count = chunk->sector_count - offset;
	if (chunk_state_check(chunk, CHUNK_ST_BUFFER_READY)) {
		diff_area_take_chunk_from_cache(diff_area, chunk);
		from->bdev = NULL;
		from->sector = 0;
	} else if (chunk_state_check(chunk, CHUNK_ST_STORE_READY)) {
		from->bdev = chunk->diff_region->bdev;
		from->sector = chunk->diff_region->sector + offset;
	} else {
		from->bdev = diff_area->orig_bdev;
		from->sector = sector;
	}
	return 0;
}

/**
 * diff_area_image_read_load() - Brings a stored chunk into its buffer for a
 *	read that the difference storage cannot take as it stands.
 * @diff_area:
 *	The diff area of the image.
 * @chunk:
 *	The chunk, locked by diff_area_image_read_begin(), which found it
 *	stored and without a buffer.
 *
 * The image has the original device's logical block size; the storage may
 * have a larger one (a 4Kn disk under a 512-byte origin), and refuses a
 * read of a stored chunk remapped at 512-byte granularity. Such a read is
 * served from the chunk's buffer instead, loaded here in whole storage
 * blocks. The load waits for its own bios, which must not sit on the
 * submitter's current->bio_list meanwhile (see tracker_copy_on_write()).
 *
 * Return: 0, and the chunk is out of the cache with its buffer ready for
 * diff_area_image_io(); or the error of the load, the chunk still locked.
 */
int diff_area_image_read_load(struct diff_area *diff_area, struct chunk *chunk)
{
	struct bio_list *saved_bio_list = current->bio_list;
	int ret;

	current->bio_list = NULL;
	ret = diff_area_load_chunk_from_storage(diff_area, chunk);
	current->bio_list = saved_bio_list;
	if (ret) {
		chunk_diff_buffer_release(chunk);
		return ret;
	}
	chunk_state_set(chunk, CHUNK_ST_BUFFER_READY);
	return 0;
}

/**
 * diff_area_image_read_end() - Ends a read started by
 *	diff_area_image_read_begin() and sent to &diff_region.bdev.
 * @diff_area:
 *	The diff area of the image.
 * @rd:
 *	The read.
 *
 * Context: any, the read's completion included.
 */
void diff_area_image_read_end(struct diff_area *diff_area,
			      struct diff_area_read *rd)
{
	if (rd->chunk) {
		if (rd->parked)
			chunk_parked_read_end(rd->chunk);
		else
			up(&rd->chunk->lock);
		chunk_put(rd->chunk);
		return;
	}
	diff_area_untrack_read(diff_area, rd);
}

static inline void diff_area_event_corrupted(struct diff_area *diff_area,
					     int err_code)
{
	struct blk_snap_event_corrupted data = {
		.orig_dev_id.mj = MAJOR(diff_area->orig_bdev->bd_dev),
		.orig_dev_id.mn = MINOR(diff_area->orig_bdev->bd_dev),
		.err_code = abs(err_code),
	};

	event_gen(&diff_area->diff_storage->event_queue, GFP_NOIO,
		  blk_snap_event_code_corrupted, &data,
		  sizeof(struct blk_snap_event_corrupted));
}

void diff_area_set_corrupted(struct diff_area *diff_area, int err_code)
{
	if (atomic_inc_return(&diff_area->corrupt_flag) != 1)
		return;

	diff_area_event_corrupted(diff_area, err_code);

	pr_err("Set snapshot device is corrupted for [%u:%u] with error code %d\n",
	       MAJOR(diff_area->orig_bdev->bd_dev),
	       MINOR(diff_area->orig_bdev->bd_dev), abs(err_code));
}

/* Lets copy-on-write in flight go first, for 100 ms at most. */
void diff_area_throttling_io(struct diff_area *diff_area)
{
	wait_var_event_timeout(&diff_area->pending_io_count,
			       !atomic_read(&diff_area->pending_io_count),
			       HZ / 10);
}
