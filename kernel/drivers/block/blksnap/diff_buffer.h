/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_DIFF_BUFFER_H
#define __BLK_SNAP_DIFF_BUFFER_H

#include <linux/types.h>
#include <linux/mm.h>
#include <linux/list.h>
#include <linux/blkdev.h>
#include <linux/spinlock.h>
#include <linux/atomic.h>

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

/**
 * struct diff_buffer_pool - Free buffers of one device, for reuse.
 * @lock:
 *	Protects @free.
 * @free:
 *	The free buffers, linked by &struct diff_buffer.link.
 * @count:
 *	The number of buffers in @free; at most free_diff_buffer_pool_size
 *	are kept, the rest are freed when released.
 * @buffer_sectors:
 *	The size of each buffer: the chunk size of the device.
 */
struct diff_buffer_pool {
	spinlock_t lock; /* protects free */
	struct list_head free;
	atomic_t count;
	sector_t buffer_sectors;
};

void diff_buffer_pool_init(struct diff_buffer_pool *pool,
			   sector_t buffer_sectors);
struct diff_buffer *diff_buffer_take(struct diff_buffer_pool *pool,
				     const bool is_nowait);
void diff_buffer_release(struct diff_buffer_pool *pool,
			 struct diff_buffer *diff_buffer);
void diff_buffer_pool_cleanup(struct diff_buffer_pool *pool);
bool diff_buffer_owns_page(struct page *page);
#endif /* __BLK_SNAP_DIFF_BUFFER_H */
