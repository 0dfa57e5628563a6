// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-diff-buffer: " fmt

#include <linux/slab.h>
#include <linux/shrinker.h>
#include "diff_buffer.h"

/*
 * The pages of the buffers are ours: their private field carries the
 * address of this marker, so that a write of a chunk to the difference
 * storage is known as ours wherever it shows up. A storage device
 * stacked on a snapshotted disk (an LV on it, an md array) sends the
 * disk clones of our bio that share its pages but not its BIO_FILTERED
 * flag; copying them on write would copy the store into the store, and
 * wait for itself when the region lies in the chunk being stored.
 */
static const char diff_buffer_page_marker;

bool diff_buffer_owns_page(struct page *page)
{
	return page_private(page) == (unsigned long)&diff_buffer_page_marker;
}

static void diff_buffer_free(struct diff_buffer *diff_buffer)
{
	size_t inx;

	if (unlikely(!diff_buffer))
		return;

	for (inx = 0; inx < diff_buffer->page_count; inx++) {
		struct page *page = diff_buffer->pages[inx];

		if (page) {
			set_page_private(page, 0);
			__free_page(page);
		}
	}
	kfree(diff_buffer);
}

static struct diff_buffer *diff_buffer_new(size_t page_count, size_t size,
					   gfp_t gfp_mask)
{
	struct diff_buffer *diff_buffer;
	size_t inx;

	/* Not kvzalloc(): a REQ_NOWAIT write may free a buffer (vfree sleeps). */
	diff_buffer = kzalloc(struct_size(diff_buffer, pages, page_count),
			      gfp_mask);
	if (!diff_buffer)
		return NULL;

	INIT_LIST_HEAD(&diff_buffer->link);
	diff_buffer->size = size;
	diff_buffer->page_count = page_count;

	for (inx = 0; inx < page_count; inx++) {
		diff_buffer->pages[inx] = alloc_page(gfp_mask);
		if (!diff_buffer->pages[inx])
			goto fail;
		set_page_private(diff_buffer->pages[inx],
				 (unsigned long)&diff_buffer_page_marker);
	}
	return diff_buffer;
fail:
	diff_buffer_free(diff_buffer);
	return NULL;
}

/*
 * Every device's pool, for the shrinker. The lock nests outside a pool's:
 * the shrinker holds it while it frees from a pool and while it asks the
 * pool's owner to release its cache, so that diff_buffer_pool_cleanup(),
 * which unlists the pool under it first, knows that neither is running.
 */
static LIST_HEAD(diff_buffer_pools);
static DEFINE_SPINLOCK(diff_buffer_pools_lock);

/*
 * Free buffers beyond the reserve, which only
 * diff_buffer_pool_cleanup() frees. Under the pool's lock.
 */
static unsigned int diff_buffer_pool_spare(struct diff_buffer_pool *pool)
{
	if (pool->total <= pool->reserve)
		return 0;
	return min(pool->free_count, pool->total - pool->reserve);
}

static struct diff_buffer *diff_buffer_pool_get(struct diff_buffer_pool *pool)
{
	struct diff_buffer *diff_buffer;

	spin_lock(&pool->lock);
	diff_buffer = list_first_entry_or_null(&pool->free, struct diff_buffer,
					       link);
	if (diff_buffer) {
		list_del(&diff_buffer->link);
		pool->free_count--;
	}
	spin_unlock(&pool->lock);
	return diff_buffer;
}

static void diff_buffer_pool_put(struct diff_buffer_pool *pool,
				 struct diff_buffer *diff_buffer)
{
	spin_lock(&pool->lock);
	list_add(&diff_buffer->link, &pool->free);
	pool->free_count++;
	spin_unlock(&pool->lock);
	wake_up(&pool->wait);
}

static struct diff_buffer *diff_buffer_pool_alloc(struct diff_buffer_pool *pool,
						  gfp_t gfp_mask)
{
	size_t page_count = DIV_ROUND_UP(pool->buffer_sectors, PAGE_SECTORS);
	struct diff_buffer *diff_buffer;

	diff_buffer = diff_buffer_new(page_count,
				      pool->buffer_sectors << SECTOR_SHIFT,
				      gfp_mask);
	if (diff_buffer) {
		spin_lock(&pool->lock);
		pool->total++;
		spin_unlock(&pool->lock);
	}
	return diff_buffer;
}

/**
 * diff_buffer_pool_init() - Makes the buffer pool of a device.
 * @pool:
 *	The pool.
 * @buffer_sectors:
 *	The size of each buffer: the chunk size of the device.
 * @reserve:
 *	The buffers allocated now and kept until diff_buffer_pool_cleanup(),
 *	so that copy-on-write goes on when no memory can be had: as many as
 *	one batch of copies holds (COW_BATCH_BYTES).
 * @keep:
 *	The most free buffers kept for reuse; more are freed.
 * @ops:
 *	How the shrinker has the pool's owner give back the buffers it
 *	caches.
 *
 * Context: may sleep (GFP_KERNEL).
 * Return: 0 or -ENOMEM.
 */
int diff_buffer_pool_init(struct diff_buffer_pool *pool, sector_t buffer_sectors,
			  unsigned int reserve, unsigned int keep,
			  const struct diff_buffer_pool_ops *ops)
{
	spin_lock_init(&pool->lock);
	INIT_LIST_HEAD(&pool->free);
	INIT_LIST_HEAD(&pool->link);
	init_waitqueue_head(&pool->wait);
	pool->free_count = 0;
	pool->total = 0;
	pool->reserve = reserve;
	pool->keep = max(keep, reserve);
	pool->buffer_sectors = buffer_sectors;
	pool->ops = ops;

	while (pool->total < reserve) {
		struct diff_buffer *diff_buffer;

		diff_buffer = diff_buffer_pool_alloc(pool, GFP_KERNEL);
		if (!diff_buffer) {
			diff_buffer_pool_cleanup(pool);
			return -ENOMEM;
		}
		diff_buffer_pool_put(pool, diff_buffer);
	}

	spin_lock(&diff_buffer_pools_lock);
	list_add_tail(&pool->link, &diff_buffer_pools);
	spin_unlock(&diff_buffer_pools_lock);
	return 0;
}

/**
 * diff_buffer_take() - Take a buffer for one chunk, without waiting for
 *	one to be released.
 * @pool:
 *	The pool of the device; its buffer size is the device's chunk size.
 * @is_nowait:
 *	The caller must not sleep: only a free buffer or an allocation that
 *	does not wait for reclaim will do.
 *
 * A free buffer (the reserve is among them), else an allocation that
 * reclaims once and does not retry, as kcopyd takes its pages. When both
 * fail, the caller may empty its cache and diff_buffer_wait() for a
 * buffer in use to be released.
 *
 * Return: the buffer, ERR_PTR(-EAGAIN) with @is_nowait, else
 * ERR_PTR(-ENOMEM).
 */
struct diff_buffer *diff_buffer_take(struct diff_buffer_pool *pool,
				     const bool is_nowait)
{
	struct diff_buffer *diff_buffer;

	diff_buffer = diff_buffer_pool_get(pool);
	if (diff_buffer)
		return diff_buffer;
	if (is_nowait) {
		diff_buffer = diff_buffer_pool_alloc(pool,
						     GFP_NOWAIT | __GFP_NOWARN);
		return diff_buffer ?: ERR_PTR(-EAGAIN);
	}
	diff_buffer = diff_buffer_pool_alloc(pool, GFP_NOIO | __GFP_NORETRY |
					     __GFP_NOWARN);
	return diff_buffer ?: ERR_PTR(-ENOMEM);
}

/*
 * A new buffer for @pool, reclaiming as long as it takes: for image I/O,
 * which must not wait for the buffers of copies (see diff_area_starving()).
 *
 * Return: the buffer, or ERR_PTR(-ENOMEM).
 */
struct diff_buffer *diff_buffer_alloc(struct diff_buffer_pool *pool)
{
	return diff_buffer_pool_alloc(pool, GFP_NOIO) ?: ERR_PTR(-ENOMEM);
}

/*
 * Waits, at most @timeout jiffies and not interruptibly, for a buffer to
 * be released to @pool.
 */
void diff_buffer_wait(struct diff_buffer_pool *pool, long timeout)
{
	wait_event_timeout(pool->wait, READ_ONCE(pool->free_count), timeout);
}

void diff_buffer_release(struct diff_buffer_pool *pool,
			 struct diff_buffer *diff_buffer)
{
	spin_lock(&pool->lock);
	if (pool->free_count >= pool->keep && pool->total > pool->reserve) {
		pool->total--;
		spin_unlock(&pool->lock);
		diff_buffer_free(diff_buffer);
		return;
	}
	list_add(&diff_buffer->link, &pool->free);
	pool->free_count++;
	spin_unlock(&pool->lock);
	wake_up(&pool->wait);
}

/*
 * Takes the pool out of the shrinker's reach. On return the shrinker is
 * not using it, nor calling its &struct diff_buffer_pool_ops.
 */
void diff_buffer_pool_unlist(struct diff_buffer_pool *pool)
{
	spin_lock(&diff_buffer_pools_lock);
	list_del_init(&pool->link);
	spin_unlock(&diff_buffer_pools_lock);
}

/*
 * Frees every free buffer, the reserve too, and takes the pool out of the
 * shrinker's reach. The pool's owner has released all its buffers.
 */
void diff_buffer_pool_cleanup(struct diff_buffer_pool *pool)
{
	struct diff_buffer *diff_buffer;

	diff_buffer_pool_unlist(pool);
	while ((diff_buffer = diff_buffer_pool_get(pool))) {
		pool->total--;
		diff_buffer_free(diff_buffer);
	}
	WARN_ON(pool->total);
}

static unsigned long diff_buffer_pool_pages(struct diff_buffer_pool *pool)
{
	return DIV_ROUND_UP(pool->buffer_sectors, PAGE_SECTORS);
}

/* In pages, as the page cache and the slabs count: a buffer is a chunk. */
static unsigned long diff_buffer_shrink_count(struct shrinker *shrinker,
					      struct shrink_control *sc)
{
	struct diff_buffer_pool *pool;
	unsigned long count = 0;

	spin_lock(&diff_buffer_pools_lock);
	list_for_each_entry(pool, &diff_buffer_pools, link) {
		unsigned long buffers;

		spin_lock(&pool->lock);
		buffers = diff_buffer_pool_spare(pool);
		spin_unlock(&pool->lock);
		buffers += pool->ops->cached(pool);
		count += buffers * diff_buffer_pool_pages(pool);
	}
	spin_unlock(&diff_buffer_pools_lock);
	return count;
}

/*
 * Frees the free buffers beyond each pool's reserve and, when that is not
 * enough, has the owners release their caches, which gives their buffers
 * back to the pools for a later scan. Counts pages.
 */
static unsigned long diff_buffer_shrink_scan(struct shrinker *shrinker,
					     struct shrink_control *sc)
{
	struct diff_buffer_pool *pool;
	unsigned long freed = 0;
	LIST_HEAD(victims);
	struct diff_buffer *diff_buffer, *next;

	spin_lock(&diff_buffer_pools_lock);
	list_for_each_entry(pool, &diff_buffer_pools, link) {
		spin_lock(&pool->lock);
		while (freed < sc->nr_to_scan && diff_buffer_pool_spare(pool)) {
			diff_buffer = list_last_entry(&pool->free,
						      struct diff_buffer, link);
			list_move(&diff_buffer->link, &victims);
			pool->free_count--;
			pool->total--;
			freed += diff_buffer_pool_pages(pool);
		}
		spin_unlock(&pool->lock);
		if (freed < sc->nr_to_scan && pool->ops->cached(pool))
			pool->ops->release_cached(pool);
	}
	spin_unlock(&diff_buffer_pools_lock);

	list_for_each_entry_safe(diff_buffer, next, &victims, link)
		diff_buffer_free(diff_buffer);
	/* A buffer is many pages: say how many went, not how many were asked. */
	if (freed > sc->nr_to_scan)
		sc->nr_scanned = freed;
	return freed ?: SHRINK_STOP;
}

static struct shrinker diff_buffer_shrinker = {
	.count_objects = diff_buffer_shrink_count,
	.scan_objects = diff_buffer_shrink_scan,
	.seeks = DEFAULT_SEEKS,
};

int diff_buffer_init(void)
{
	return register_shrinker(&diff_buffer_shrinker, "blksnap-buffers");
}

void diff_buffer_done(void)
{
	unregister_shrinker(&diff_buffer_shrinker);
}
