/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_DIFF_BUFFER_H
#define __BLK_SNAP_DIFF_BUFFER_H

#include <linux/types.h>
#include <linux/mm.h>
#include <linux/list.h>
#include <linux/blkdev.h>
#include <linux/spinlock.h>
#include <linux/atomic.h>
#include <linux/wait.h>

/**
 * struct diff_buffer - Difference buffer.
 * @link:
 *	The list header allows to create a pool of the diff_buffer structures.
 * @size:
 *	Count of bytes in the buffer.
 * @page_count:
 *	The number of pages reserved for the buffer.
 * @pages:
 *	An array of pointers to pages.
 *
 * Describes the memory buffer for a chunk in the memory.
 */
struct diff_buffer {
	struct list_head link;
	size_t size;
	size_t page_count;
	struct page *pages[];
};

/**
 * struct diff_buffer_iter - Iterator for &struct diff_buffer.
 * @page:
 *	A pointer to the current page.
 * @offset:
 *	The offset in bytes in the current page.
 * @bytes:
 *	The number of bytes that can be read or written from the current page.
 *
 * It is convenient to use when copying data from or to &struct bio_vec.
 */
struct diff_buffer_iter {
	struct page *page;
	size_t offset;
	size_t bytes;
};

static inline bool diff_buffer_iter_get(struct diff_buffer *diff_buffer,
					size_t buff_offset,
					struct diff_buffer_iter *iter)
{
	if (diff_buffer->size <= buff_offset)
		return false;

	iter->page = diff_buffer->pages[buff_offset >> PAGE_SHIFT];
	iter->offset = buff_offset & (PAGE_SIZE - 1);
	iter->bytes = min_t(size_t, PAGE_SIZE - iter->offset,
			    diff_buffer->size - buff_offset);
	return true;
};

struct diff_buffer_pool;

/**
 * struct diff_buffer_pool_ops - What a pool asks of its owner.
 * @cached:
 *	The number of the pool's buffers the owner keeps in a cache.
 * @release_cached:
 *	Release them soon, without waiting: the shrinker calls it, under
 *	its spinlock.
 */
struct diff_buffer_pool_ops {
	unsigned long (*cached)(struct diff_buffer_pool *pool);
	void (*release_cached)(struct diff_buffer_pool *pool);
};

/**
 * struct diff_buffer_pool - The buffers of one device.
 * @lock:
 *	Protects @free, @free_count and @total.
 * @free:
 *	The free buffers, linked by &struct diff_buffer.link.
 * @free_count:
 *	The number of buffers in @free.
 * @total:
 *	The number of buffers allocated, free or in use.
 * @reserve:
 *	@total never goes below it: these buffers let copy-on-write go on
 *	when no memory can be had.
 * @keep:
 *	At most this many free buffers are kept; more are freed when
 *	released. The shrinker frees them down to @reserve.
 * @wait:
 *	Where diff_buffer_wait() waits for a buffer to be released.
 * @buffer_sectors:
 *	The size of each buffer: the chunk size of the device.
 * @ops:
 *	The owner's cache (&struct diff_buffer_pool_ops).
 * @link:
 *	In the shrinker's list of pools.
 */
struct diff_buffer_pool {
	spinlock_t lock; /* protects free, free_count and total */
	struct list_head free;
	unsigned int free_count;
	unsigned int total;
	unsigned int reserve;
	unsigned int keep;
	wait_queue_head_t wait;
	sector_t buffer_sectors;
	const struct diff_buffer_pool_ops *ops;
	struct list_head link;
};

int diff_buffer_init(void);
void diff_buffer_done(void);
int diff_buffer_pool_init(struct diff_buffer_pool *pool, sector_t buffer_sectors,
			  unsigned int reserve, unsigned int keep,
			  const struct diff_buffer_pool_ops *ops);
struct diff_buffer *diff_buffer_take(struct diff_buffer_pool *pool,
				     const bool is_nowait);
struct diff_buffer *diff_buffer_alloc(struct diff_buffer_pool *pool);
void diff_buffer_wait(struct diff_buffer_pool *pool, long timeout);
void diff_buffer_release(struct diff_buffer_pool *pool,
			 struct diff_buffer *diff_buffer);
void diff_buffer_pool_unlist(struct diff_buffer_pool *pool);
void diff_buffer_pool_cleanup(struct diff_buffer_pool *pool);
bool diff_buffer_owns_page(struct page *page);
#endif /* __BLK_SNAP_DIFF_BUFFER_H */
