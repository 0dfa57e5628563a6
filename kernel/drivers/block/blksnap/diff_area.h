/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_DIFF_AREA_H
#define __BLK_SNAP_DIFF_AREA_H

#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/blkdev.h>
#include <linux/xarray.h>
#include <linux/hashtable.h>
#include <linux/wait.h>
#include <linux/wait_bit.h>
#include <linux/mempool.h>
#include "diff_storage.h"
#include "event_queue.h"
#include "diff_buffer.h"

struct diff_storage;
struct chunk;
struct diff_region;

/**
 * struct diff_area - Discribes the difference area for one original device.
 * @kref:
 *	The reference counter. The &struct diff_area can be shared between
 *	the &struct tracker and &struct snapimage.
 * @orig_bdev:
 *	A pointer to the structure of an opened block device.
 * @diff_storage:
 *	Pointer to difference storage for storing difference data.
 * @chunk_shift:
 *	Power of 2 used to specify the chunk size. This allows to set different chunk sizes for
 *	huge and small block devices.
 * @chunk_count:
 *	Count of chunks. The number of chunks into which the block device
 *	is divided.
 * @capacity:
 *	The size of the original device in sectors when the diff area was
 *	created; the last chunk ends there.
 * @map_lock:
 *	Protects @chunk_map, the contents of @stored_groups and the freeing
 *	of chunks (chunk_put()). Taken in the image reads' completion too.
 * @chunk_map:
 *	The chunks in use, hashed by number. A chunk is allocated the first
 *	time it is copied or written through the image, so that an idle
 *	snapshot costs memory in proportion to its changes, not to the size
 *	of the device; once stored and idle, it is freed, and its record in
 *	@stored_groups is all that is left of it.
 * @stored_groups:
 *	The records of stored chunks: where the data of each is on the
 *	difference storage, by groups of 64 consecutive chunk numbers
 *	(&struct chunk_group).
 * @tracked_reads_lock:
 *	Protects @tracked_reads.
 * @tracked_reads:
 *	Reads of the image in flight without a chunk's lock (&struct
 *	diff_area_read), hashed by their group of TRACKED_READ_GROUP chunks.
 * @tracked_reads_wq:
 *	Copy-on-write waits here for tracked reads of its chunks to complete.
 * @caches_lock:
 *	This spinlock guarantees consistency of the linked lists of chunk
 *	caches.
 * @read_cache_queue:
 *	Queue for the read cache.
 * @read_cache_count:
 *	The number of chunks in the read cache.
 * @write_cache_queue:
 *	Queue for the write cache.
 * @write_cache_count:
 *	The number of chunks in the write cache.
 * @cache_release_work:
 *	The workqueue work item. This worker limits the number of chunks
 *	that store their data in RAM.
 * @cache_limit:
 *	The most chunks each cache keeps: chunk_maximum_in_cache, or less
 *	when buffer_memory_maximum_mb says so.
 * @cache_release_all:
 *	Set when memory is short: the next cache release empties the caches.
 * @chunk_pool:
 *	The chunk descriptors, with a reserve of one batch of copies.
 * @buffer_pool:
 *	The chunk buffers: free ones kept for reuse, and a reserve of one
 *	batch of copies.
 * @corrupt_flag:
 *	The flag is set if an error occurred in the operation of the data
 *	saving mechanism in the diff area. In this case, an error will be
 *	generated when reading from the snapshot image.
 * @pending_io_count:
 *	Counter of incomplete I/O operations. Allows to wait for all I/O
 *	operations to be completed before releasing this structure.
 *
 * The &struct diff_area is created for each block device in the snapshot.
 * It is used to save the differences between the original block device and
 * the snapshot image. That is, when writing data to the original device,
 * the differences are copied as chunks to the difference storage.
 * Reading and writing from the snapshot image is also performed using
 * &struct diff_area.
 *
 * A chunk in use has its &struct chunk in @chunk_map; a stored chunk that
 * is idle has only its record in @stored_groups (see "Memory" in
 * diff_area.c). The number of chunks is bounded by the chunk_maximum_count
 * module parameter, which grows the chunk of a large device instead.
 *
 * To provide high performance, a read cache and a write cache for chunks are
 * used. The cache algorithm is the simplest. If the data of the chunk was
 * read to the difference buffer, then the buffer is not released immediately,
 * but is placed at the end of the queue. The worker thread checks the number
 * of chunks in the queue and releases a difference buffer for the first chunk
 * in the queue, but only if the binary semaphore of the chunk is not locked.
 * If the read thread accesses the chunk from the cache again, it returns
 * back to the end of the queue.
 *
 * The linked list of difference buffers allows to have a certain number of
 * "hot" buffers. This allows to reduce the number of allocations and releases
 * of memory.
 *
 *
 */
struct diff_area {
	struct kref kref;
	struct diff_storage_origin origin;

	struct block_device *orig_bdev;
	struct diff_storage *diff_storage;

	unsigned long long chunk_shift;
	unsigned long chunk_count;
	sector_t capacity;

	/* protects chunk_map and stored_groups' contents; see Locking */
	spinlock_t map_lock;
	DECLARE_HASHTABLE(chunk_map, 8);
	struct xarray stored_groups;

	/* protects tracked_reads; taken in the reads' completion too */
	spinlock_t tracked_reads_lock;
	DECLARE_HASHTABLE(tracked_reads, 6);
	wait_queue_head_t tracked_reads_wq;

	/* protects read_cache_queue and write_cache_queue */
	spinlock_t caches_lock;
	struct list_head read_cache_queue;
	atomic_t read_cache_count;
	struct list_head write_cache_queue;
	atomic_t write_cache_count;
	struct work_struct cache_release_work;
	unsigned int cache_limit;
	atomic_t cache_release_all;

	mempool_t chunk_pool;
	struct diff_buffer_pool buffer_pool;

	atomic_t corrupt_flag;
	atomic_t pending_io_count;
};

/*
 * Copy-on-write runs in batches of at most this much chunk data (one chunk
 * when chunks are larger), each waited for before the next starts. A write
 * can be as large as its device (WRITE_ZEROES), and every chunk in flight
 * holds a buffer of its size: as kcopyd bounds its work, so does this. A
 * device reserves buffers and descriptors for one batch.
 */
#define COW_BATCH_BYTES (4u << 20)

struct diff_area *diff_area_new(dev_t dev_id,
				struct diff_storage *diff_storage);
void diff_area_free(struct kref *kref);
void diff_area_release_cache_now(struct diff_area *diff_area);
int diff_area_starving(struct diff_area *diff_area);
static inline void diff_area_get(struct diff_area *diff_area)
{
	kref_get(&diff_area->kref);
};

static inline void diff_area_put(struct diff_area *diff_area)
{
	if (likely(diff_area))
		kref_put(&diff_area->kref, diff_area_free);
};

void diff_area_set_corrupted(struct diff_area *diff_area, int err_code);
static inline bool diff_area_is_corrupted(struct diff_area *diff_area)
{
	return !!atomic_read(&diff_area->corrupt_flag);
};

/*
 * An I/O of the diff area has ended. The wake-up is keyed by the counter's
 * address and touches nothing of the diff area, which diff_area_free() may
 * free as soon as the count reaches zero.
 */
static inline void diff_area_io_done(struct diff_area *diff_area)
{
	if (atomic_dec_and_test(&diff_area->pending_io_count))
		wake_up_var(&diff_area->pending_io_count);
}

static inline sector_t diff_area_chunk_sectors(struct diff_area *diff_area)
{
	return (sector_t)(1ull << (diff_area->chunk_shift - SECTOR_SHIFT));
};

void diff_area_record_chunk(struct diff_area *diff_area, struct chunk *chunk);

int diff_area_copy(struct diff_area *diff_area, sector_t sector, sector_t count,
		   const bool is_nowait);

int diff_area_wait(struct diff_area *diff_area, sector_t sector, sector_t count,
		   const bool is_nowait);
/**
 * struct diff_area_image_ctx - The context for processing an io request to
 *	the snapshot image.
 * @diff_area:
 *	Pointer to &struct diff_area for the current snapshot image.
 * @is_write:
 *	Distinguishes between the behavior of reading or writing when
 *	processing a request.
 * @chunk:
 *	Current chunk.
 */
struct diff_area_image_ctx {
	struct diff_area *diff_area;
	bool is_write;
	struct chunk *chunk;
};

static inline void diff_area_image_ctx_init(struct diff_area_image_ctx *io_ctx,
					    struct diff_area *diff_area,
					    bool is_write)
{
	io_ctx->diff_area = diff_area;
	io_ctx->is_write = is_write;
	io_ctx->chunk = NULL;
};

void diff_area_image_ctx_done(struct diff_area_image_ctx *io_ctx);
blk_status_t diff_area_image_io(struct diff_area_image_ctx *io_ctx,
				const struct bio_vec *bvec, sector_t *pos);

/**
 * struct diff_area_read - A read of the image sent straight to where the data
 *	of one chunk, or of a run of chunks, is.
 * @chunk:
 *	The chunk, locked until the read completes, or NULL when the read is
 *	in &diff_area.tracked_reads instead (chunks without a descriptor, or
 *	read from their records): storing a recorded chunk again waits for a
 *	tracked read of it, and copy-on-write of a chunk does too while
 *	@on_orig is set.
 * @number:
 *	The number of the first chunk.
 * @count:
 *	The number of chunks read, from @number; changed under
 *	&diff_area.tracked_reads_lock, as @on_orig is.
 * @on_orig:
 *	The read goes to the original device, or may still: copy-on-write of
 *	its chunks waits for it. A read of the difference storage holds back
 *	only the storing again of its chunks.
 * @tracked_link:
 *	The link in &diff_area.tracked_reads.
 */
struct diff_area_read {
	struct chunk *chunk;
	bool parked;
	unsigned long number;
	unsigned long count;
	bool on_orig;
	struct hlist_node tracked_link;
};

int diff_area_image_read_begin(struct diff_area *diff_area, sector_t sector,
			       sector_t wanted, struct diff_area_read *rd,
			       struct diff_region *from);
int diff_area_image_read_load(struct diff_area *diff_area, struct chunk *chunk);
void diff_area_image_read_end(struct diff_area *diff_area,
			      struct diff_area_read *rd);

void diff_area_throttling_io(struct diff_area *diff_area);

#endif /* __BLK_SNAP_DIFF_AREA_H */
