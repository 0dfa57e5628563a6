// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-diff-buffer: " fmt

#include <linux/slab.h>
#include "params.h"
#include "diff_buffer.h"
#include "diff_area.h"

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

/**
 * diff_buffer_take() - Take a buffer for one chunk of the diff area.
 * @diff_area:
 *	The diff area whose chunk size gives the buffer size.
 * @is_nowait:
 *	The caller must not sleep: only a pooled buffer or an allocation
 *	that does not wait for reclaim will do.
 *
 * Return: the buffer, or ERR_PTR(-EAGAIN) / ERR_PTR(-ENOMEM).
 */
struct diff_buffer *diff_buffer_take(struct diff_area *diff_area,
				     const bool is_nowait)
{
	struct diff_buffer *diff_buffer = NULL;
	sector_t chunk_sectors;
	size_t page_count;

	spin_lock(&diff_area->free_diff_buffers_lock);
	diff_buffer = list_first_entry_or_null(&diff_area->free_diff_buffers,
					       struct diff_buffer, link);
	if (diff_buffer) {
		list_del(&diff_buffer->link);
		atomic_dec(&diff_area->free_diff_buffers_count);
	}
	spin_unlock(&diff_area->free_diff_buffers_lock);

	if (diff_buffer)
		return diff_buffer;

	chunk_sectors = diff_area_chunk_sectors(diff_area);
	page_count = round_up(chunk_sectors, PAGE_SECTORS) / PAGE_SECTORS;
	diff_buffer = diff_buffer_new(page_count, chunk_sectors << SECTOR_SHIFT,
				      is_nowait ? GFP_NOWAIT | __GFP_NOWARN :
						  GFP_NOIO);
	if (!diff_buffer)
		return ERR_PTR(is_nowait ? -EAGAIN : -ENOMEM);

	return diff_buffer;
}

void diff_buffer_release(struct diff_area *diff_area,
			 struct diff_buffer *diff_buffer)
{
	if (atomic_read(&diff_area->free_diff_buffers_count) >
	    free_diff_buffer_pool_size) {
		diff_buffer_free(diff_buffer);
		return;
	}
	spin_lock(&diff_area->free_diff_buffers_lock);
	list_add_tail(&diff_buffer->link, &diff_area->free_diff_buffers);
	atomic_inc(&diff_area->free_diff_buffers_count);
	spin_unlock(&diff_area->free_diff_buffers_lock);
}

void diff_buffer_cleanup(struct diff_area *diff_area)
{
	struct diff_buffer *diff_buffer;

	do {
		spin_lock(&diff_area->free_diff_buffers_lock);
		diff_buffer = list_first_entry_or_null(&diff_area->free_diff_buffers,
						       struct diff_buffer, link);
		if (diff_buffer) {
			list_del(&diff_buffer->link);
			atomic_dec(&diff_area->free_diff_buffers_count);
		}
		spin_unlock(&diff_area->free_diff_buffers_lock);

		diff_buffer_free(diff_buffer);
	} while (diff_buffer);
}
