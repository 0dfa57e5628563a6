// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-diff-buffer: " fmt

#include <linux/slab.h>
#include "params.h"
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

void diff_buffer_pool_init(struct diff_buffer_pool *pool,
			   sector_t buffer_sectors)
{
	spin_lock_init(&pool->lock);
	INIT_LIST_HEAD(&pool->free);
	atomic_set(&pool->count, 0);
	pool->buffer_sectors = buffer_sectors;
}

static struct diff_buffer *diff_buffer_pool_get(struct diff_buffer_pool *pool)
{
	struct diff_buffer *diff_buffer;

	spin_lock(&pool->lock);
	diff_buffer = list_first_entry_or_null(&pool->free, struct diff_buffer,
					       link);
	if (diff_buffer) {
		list_del(&diff_buffer->link);
		atomic_dec(&pool->count);
	}
	spin_unlock(&pool->lock);
	return diff_buffer;
}

/**
 * diff_buffer_take() - Take a buffer for one chunk.
 * @pool:
 *	The pool of the device; its buffer size is the device's chunk size.
 * @is_nowait:
 *	The caller must not sleep: only a pooled buffer or an allocation
 *	that does not wait for reclaim will do.
 *
 * Return: the buffer, or ERR_PTR(-EAGAIN) / ERR_PTR(-ENOMEM).
 */
struct diff_buffer *diff_buffer_take(struct diff_buffer_pool *pool,
				     const bool is_nowait)
{
	struct diff_buffer *diff_buffer;
	size_t page_count;

	diff_buffer = diff_buffer_pool_get(pool);
	if (diff_buffer)
		return diff_buffer;

	page_count = round_up(pool->buffer_sectors, PAGE_SECTORS) / PAGE_SECTORS;
	diff_buffer = diff_buffer_new(page_count,
				      pool->buffer_sectors << SECTOR_SHIFT,
				      is_nowait ? GFP_NOWAIT | __GFP_NOWARN :
						  GFP_NOIO);
	if (!diff_buffer)
		return ERR_PTR(is_nowait ? -EAGAIN : -ENOMEM);

	return diff_buffer;
}

void diff_buffer_release(struct diff_buffer_pool *pool,
			 struct diff_buffer *diff_buffer)
{
	if (atomic_read(&pool->count) > free_diff_buffer_pool_size) {
		diff_buffer_free(diff_buffer);
		return;
	}
	spin_lock(&pool->lock);
	list_add_tail(&diff_buffer->link, &pool->free);
	atomic_inc(&pool->count);
	spin_unlock(&pool->lock);
}

void diff_buffer_pool_cleanup(struct diff_buffer_pool *pool)
{
	struct diff_buffer *diff_buffer;

	while ((diff_buffer = diff_buffer_pool_get(pool)))
		diff_buffer_free(diff_buffer);
}
