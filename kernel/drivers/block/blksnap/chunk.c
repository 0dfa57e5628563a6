// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-chunk: " fmt
#include <linux/slab.h>
#include <linux/dm-io.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include "params.h"
#include "chunk.h"
#include "diff_io.h"
#include "diff_buffer.h"
#include "diff_area.h"
#include "diff_storage.h"

void chunk_diff_buffer_release(struct chunk *chunk)
{
	if (unlikely(!chunk->diff_buffer))
		return;

	chunk_state_unset(chunk, CHUNK_ST_BUFFER_READY);
	diff_buffer_release(&chunk->diff_area->buffer_pool, chunk->diff_buffer);
	chunk->diff_buffer = NULL;
}

void chunk_store_failed(struct chunk *chunk, int error)
{
	struct diff_area *diff_area = chunk->diff_area;

	chunk_state_set(chunk, CHUNK_ST_FAILED);
	chunk_diff_buffer_release(chunk);
	chunk->diff_region = NULL;

	/*
	 * Before the unlock: a writer waiting on this chunk then finds the
	 * snapshot already corrupted with the real cause, not its own guess.
	 */
	if (error)
		diff_area_set_corrupted(diff_area, error);
	up(&chunk->lock);
}

/*
 * A parked chunk holds its lock until storage comes, maybe for as long as
 * diff_storage_wait_seconds, while its buffer holds the data the image
 * must show. Image reads take it from there without the lock: the buffer
 * does not change while the chunk is parked, and the chunk leaves that
 * state only after the readers that saw it have finished.
 */
bool chunk_parked_read_begin(struct chunk *chunk)
{
	int state;

	atomic_inc(&chunk->parked_readers);
	/* Pairs with the barrier in chunk_parked_end(). */
	smp_mb__after_atomic();
	/* And with diff_storage_park()'s: the buffer's data after this. */
	state = atomic_read_acquire(&chunk->state);
	if ((state & (CHUNK_ST_PARKED | CHUNK_ST_BUFFER_READY |
		      CHUNK_ST_FAILED)) ==
	    (CHUNK_ST_PARKED | CHUNK_ST_BUFFER_READY))
		return true;
	chunk_parked_read_end(chunk);
	return false;
}

void chunk_parked_read_end(struct chunk *chunk)
{
	if (atomic_dec_and_test(&chunk->parked_readers))
		wake_up_var(&chunk->parked_readers);
}

/* By the lock's holder, before it changes or frees the buffer. */
static void chunk_parked_end(struct chunk *chunk)
{
	chunk_state_unset(chunk, CHUNK_ST_PARKED);
	/* Pairs with the barrier in chunk_parked_read_begin(). */
	smp_mb__after_atomic();
	wait_var_event(&chunk->parked_readers,
		       !atomic_read(&chunk->parked_readers));
}

int chunk_schedule_storing(struct chunk *chunk, bool is_nowait)
{
	struct diff_area *diff_area = chunk->diff_area;

	if (WARN(!list_is_first(&chunk->cache_link, &chunk->cache_link),
		 "The chunk already in the cache"))
		return -EINVAL;

	while (!chunk->diff_region) {
		int ret;

		ret = diff_storage_new_region(diff_area->diff_storage,
					      diff_area_chunk_sectors(diff_area),
					      &chunk->region, is_nowait);
		if (!ret) {
			chunk->diff_region = &chunk->region;
			break;
		}
		/*
		 * Out of storage: the chunk waits, locked, for more
		 * (diff_storage_park(); it does not sleep, and marks the
		 * chunk parked), and chunk_store_parked() goes on from here.
		 */
		if (ret == -ENOSPC) {
			ret = diff_storage_park(diff_area->diff_storage,
						&chunk->cache_link,
						&chunk->state,
						CHUNK_ST_PARKED);
			if (!ret)
				return 0;
			if (ret == -EAGAIN)
				continue;
		}
		pr_debug("Cannot get store for chunk #%ld\n", chunk->number);
		return ret;
	}

	return chunk_async_store_diff(chunk, is_nowait);
}

/*
 * Storage was appended, or the wait for it ended: store or fail the chunk
 * parked by diff_storage_park().
 */
void chunk_store_parked(struct list_head *cache_link)
{
	struct chunk *chunk = list_entry(cache_link, struct chunk, cache_link);
	unsigned int current_flag;
	int ret;

	chunk_parked_end(chunk);
	current_flag = memalloc_noio_save();
	ret = chunk_schedule_storing(chunk, false);

	memalloc_noio_restore(current_flag);
	if (ret)
		chunk_store_failed(chunk, ret);
}

void chunk_schedule_caching(struct chunk *chunk)
{
	int in_cache_count = 0;
	struct diff_area *diff_area = chunk->diff_area;

	might_sleep();

	spin_lock(&diff_area->caches_lock);

	/*
	 * The locked chunk cannot be in the cache.
	 * If the check reveals that the chunk is in the cache, then something
	 * is wrong in the algorithm.
	 */
	if (WARN(!list_is_first(&chunk->cache_link, &chunk->cache_link),
		 "The chunk already in the cache")) {
		spin_unlock(&diff_area->caches_lock);

		chunk_store_failed(chunk, 0);
		return;
	}

	if (chunk_state_check(chunk, CHUNK_ST_DIRTY)) {
		list_add_tail(&chunk->cache_link,
			      &diff_area->write_cache_queue);
		in_cache_count =
			atomic_inc_return(&diff_area->write_cache_count);
	} else {
		list_add_tail(&chunk->cache_link, &diff_area->read_cache_queue);
		in_cache_count =
			atomic_inc_return(&diff_area->read_cache_count);
	}
	spin_unlock(&diff_area->caches_lock);

	up(&chunk->lock);

	/* Initiate the cache clearing process */
	if (in_cache_count > diff_area->cache_limit &&
	    !diff_area_is_corrupted(diff_area))
		queue_work(blksnap_wq, &diff_area->cache_release_work);
}

static void chunk_notify_load(void *ctx)
{
	struct chunk *chunk = ctx;
	struct diff_area *diff_area = chunk->diff_area;
	int error = chunk->diff_io.error;

	might_sleep();

	if (unlikely(error)) {
		chunk_store_failed(chunk, error);
		goto out;
	}

	if (unlikely(chunk_state_check(chunk, CHUNK_ST_FAILED))) {
		pr_err("Chunk in a failed state\n");
		up(&chunk->lock);
		goto out;
	}

	if (chunk_state_check(chunk, CHUNK_ST_LOADING)) {
		int ret;
		unsigned int current_flag;

		chunk_state_unset(chunk, CHUNK_ST_LOADING);
		chunk_state_set(chunk, CHUNK_ST_BUFFER_READY);

		current_flag = memalloc_noio_save();
		ret = chunk_schedule_storing(chunk, false);
		memalloc_noio_restore(current_flag);
		if (ret)
			chunk_store_failed(chunk, ret);
		goto out;
	}

	pr_err("invalid chunk state 0x%x\n", atomic_read(&chunk->state));
	up(&chunk->lock);
out:
	/* The put may free the chunk; diff_area_free() waits for the count. */
	chunk_put(chunk);
	diff_area_io_done(diff_area);
}

static void chunk_notify_store(void *ctx)
{
	struct chunk *chunk = ctx;
	struct diff_area *diff_area = chunk->diff_area;
	int error = chunk->diff_io.error;

	might_sleep();

	if (unlikely(error)) {
		chunk_store_failed(chunk, error);
		goto out;
	}

	if (unlikely(chunk_state_check(chunk, CHUNK_ST_FAILED))) {
		pr_err("Chunk in a failed state\n");
		chunk_store_failed(chunk, 0);
		goto out;
	}
	if (chunk_state_check(chunk, CHUNK_ST_STORING)) {
		chunk_state_unset(chunk, CHUNK_ST_STORING);
		chunk_state_set(chunk, CHUNK_ST_STORE_READY);
		if (!chunk_state_check(chunk, CHUNK_ST_RECORDED))
			diff_area_record_chunk(diff_area, chunk);

		if (chunk_state_check(chunk, CHUNK_ST_DIRTY)) {
			/*
			 * The chunk marked "dirty" was stored in the difference
			 * storage. Now it is processed in the same way as any
			 * other stored chunks.
			 * Therefore, the "dirty" mark can be removed.
			 */
			chunk_state_unset(chunk, CHUNK_ST_DIRTY);
			chunk_diff_buffer_release(chunk);
		} else {
			unsigned int current_flag;

			current_flag = memalloc_noio_save();
			chunk_schedule_caching(chunk);
			memalloc_noio_restore(current_flag);
			goto out;
		}
	} else {
		pr_err("invalid chunk state 0x%x\n", atomic_read(&chunk->state));
	}
	up(&chunk->lock);
out:
	chunk_put(chunk);
	diff_area_io_done(diff_area);
}

/*
 * From memory without reclaim, else from the device's reserve; when both
 * are empty, a copy tries one pass of reclaim, else waits for a descriptor
 * in use to be freed, as diff_area_starving() allows, while image I/O
 * reclaims as long as it takes (see "Difference storage" in blksnap.rst).
 *
 * Return: the chunk, or ERR_PTR(-EAGAIN) with @is_nowait, -ENOMEM for
 * image I/O, or the error of diff_area_starving().
 */
struct chunk *chunk_alloc(struct diff_area *diff_area, unsigned long number,
			  sector_t sector_count, bool is_nowait, bool copying)
{
	struct chunk *chunk;
	int ret;

	for (;;) {
		chunk = mempool_alloc(&diff_area->chunk_pool,
				      GFP_NOWAIT | __GFP_NOWARN);
		if (chunk)
			break;
		if (is_nowait)
			return ERR_PTR(-EAGAIN);
		/* Of the pool's size: mempool_free() takes it as its own. */
		chunk = kmalloc(sizeof(*chunk), copying ?
				GFP_NOIO | __GFP_NORETRY | __GFP_NOWARN :
				GFP_NOIO);
		if (chunk)
			break;
		if (!copying)
			return ERR_PTR(-ENOMEM);
		ret = diff_area_starving(diff_area);
		if (ret)
			return ERR_PTR(ret);
		/* The pool's own wait queue is not ours to wait on. */
		schedule_timeout_uninterruptible(HZ / 10);
	}
	memset(chunk, 0, sizeof(*chunk));
	diff_io_init_work(&chunk->diff_io);

	INIT_LIST_HEAD(&chunk->cache_link);
	INIT_HLIST_NODE(&chunk->map_link);
	/* The allocator's reference. */
	atomic_set(&chunk->refs, 1);
	sema_init(&chunk->lock, 1);
	atomic_set(&chunk->parked_readers, 0);
	chunk->diff_area = diff_area;
	chunk->number = number;
	chunk->sector_count = sector_count;
	atomic_set(&chunk->state, 0);

	return chunk;
}

void chunk_free(struct chunk *chunk)
{
	if (unlikely(!chunk))
		return;

	down(&chunk->lock);
	chunk_diff_buffer_release(chunk);
	chunk->diff_region = NULL;
	chunk_state_set(chunk, CHUNK_ST_FAILED);
	up(&chunk->lock);

	mempool_free(chunk, &chunk->diff_area->chunk_pool);
}

/**
 * chunk_async_store_diff() - Starts asynchronous storing of a chunk to the
 *	difference storage.
 * @chunk:
 *	The locked chunk, with its data in its buffer and its region given.
 * @is_nowait:
 *	The caller must not sleep.
 *
 * Return: 0 if the write was started; chunk_notify_store() completes it.
 */
int chunk_async_store_diff(struct chunk *chunk, bool is_nowait)
{
	int ret;
	struct diff_region *region = chunk->diff_region;

	if (WARN(!list_is_first(&chunk->cache_link, &chunk->cache_link),
		 "The chunk already in the cache"))
		return -EINVAL;

	diff_io_init_async(&chunk->diff_io, true, chunk_notify_store, chunk);
	chunk_state_set(chunk, CHUNK_ST_STORING);
	/* The completion's, put by it. */
	chunk_get(chunk);
	atomic_inc(&chunk->diff_area->pending_io_count);

	ret = diff_io_do(&chunk->diff_io, region, chunk->diff_buffer,
			 is_nowait);
	if (ret) {
		chunk_state_unset(chunk, CHUNK_ST_STORING);
		/* Not the last: the caller holds the chunk locked. */
		chunk_put(chunk);
		diff_area_io_done(chunk->diff_area);
	}

	return ret;
}

/**
 * chunk_async_load_orig() - Starts asynchronous loading of a chunk from
 *	the original block device.
 * @chunk:
 *	The locked chunk, with a buffer.
 * @is_nowait:
 *	The caller must not sleep.
 *
 * Return: 0 if the read was started; chunk_notify_load() completes it.
 */
int chunk_async_load_orig(struct chunk *chunk, const bool is_nowait)
{
	int ret;
	struct diff_region region = {
		.bdev = chunk->diff_area->orig_bdev,
		.sector = (sector_t)(chunk->number) *
			  diff_area_chunk_sectors(chunk->diff_area),
		.count = chunk->sector_count,
	};

	diff_io_init_async(&chunk->diff_io, false, chunk_notify_load, chunk);
	chunk_state_set(chunk, CHUNK_ST_LOADING);
	/* The completion's, put by it. */
	chunk_get(chunk);
	atomic_inc(&chunk->diff_area->pending_io_count);

	ret = diff_io_do(&chunk->diff_io, &region, chunk->diff_buffer,
			 is_nowait);
	if (ret) {
		chunk_state_unset(chunk, CHUNK_ST_LOADING);
		/* Not the last: the caller holds the chunk locked. */
		chunk_put(chunk);
		diff_area_io_done(chunk->diff_area);
	}
	return ret;
}

/**
 * chunk_load_orig() - Performs synchronous loading of a chunk from the
 *	original block device.
 * @chunk:
 *	The locked chunk, with a buffer.
 *
 * Return: 0 or the I/O error.
 */
int chunk_load_orig(struct chunk *chunk)
{
	int ret;
	struct diff_io diff_io;
	struct diff_region region = {
		.bdev = chunk->diff_area->orig_bdev,
		.sector = (sector_t)(chunk->number) *
			  diff_area_chunk_sectors(chunk->diff_area),
		.count = chunk->sector_count,
	};

	diff_io_init_sync(&diff_io, false);
	ret = diff_io_do(&diff_io, &region, chunk->diff_buffer, false);
	if (!ret)
		ret = diff_io.error;
	return ret;
}

/**
 * chunk_load_diff() - Performs synchronous loading of a chunk from the
 *	difference storage.
 * @chunk:
 *	The locked chunk, with a buffer and a stored region.
 *
 * Return: 0 or the I/O error.
 */
int chunk_load_diff(struct chunk *chunk)
{
	int ret;
	struct diff_io diff_io;

	diff_io_init_sync(&diff_io, false);
	ret = diff_io_do(&diff_io, chunk->diff_region, chunk->diff_buffer,
			 false);
	if (!ret)
		ret = diff_io.error;
	return ret;
}
