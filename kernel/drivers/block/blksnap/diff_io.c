// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-diff-io: " fmt

#include <linux/blkdev.h>
#include <linux/slab.h>
#include "diff_io.h"
#include "diff_buffer.h"

#define SECTORS_IN_PAGE (PAGE_SIZE / SECTOR_SIZE)

static struct bio_set diff_io_bioset;

/*
 * Copy-on-write goes on through work items: the completions of its reads
 * and writes (blksnap_io_wq), the release of cached chunks and the wait for
 * storage (blksnap_wq). Writeback that frees memory may wait for a
 * copy, so these queues have rescuers (WQ_MEM_RECLAIM): a copy must not
 * wait for a new kworker, which needs memory. Their work items do not
 * wait for each other; the completions go first (WQ_HIGHPRI).
 */
struct workqueue_struct *blksnap_io_wq;
struct workqueue_struct *blksnap_wq;

int diff_io_init(void)
{
	int ret;

	blksnap_io_wq = alloc_workqueue("blksnap_io",
					WQ_MEM_RECLAIM | WQ_HIGHPRI, 0);
	if (!blksnap_io_wq)
		return -ENOMEM;
	blksnap_wq = alloc_workqueue("blksnap", WQ_MEM_RECLAIM, 0);
	if (!blksnap_wq) {
		ret = -ENOMEM;
		goto fail_io_wq;
	}
	ret = bioset_init(&diff_io_bioset, 64, 0, BIOSET_NEED_BVECS);
	if (ret)
		goto fail_wait_wq;
	return 0;

fail_wait_wq:
	destroy_workqueue(blksnap_wq);
fail_io_wq:
	destroy_workqueue(blksnap_io_wq);
	return ret;
}

void diff_io_done(void)
{
	bioset_exit(&diff_io_bioset);
	destroy_workqueue(blksnap_wq);
	destroy_workqueue(blksnap_io_wq);
}

static void diff_io_notify_cb(struct work_struct *work)
{
	struct diff_io_async *async =
		container_of(work, struct diff_io_async, work);

	might_sleep();
	async->notify_cb(async->ctx);
}

static void diff_io_complete(struct diff_io *diff_io)
{
	if (diff_io->is_sync_io)
		complete(&diff_io->notify.sync.completion);
	else
		queue_work(blksnap_io_wq, &diff_io->notify.async.work);
}

static void diff_io_endio(struct bio *bio)
{
	struct diff_io *diff_io = bio->bi_private;

	if (bio->bi_status != BLK_STS_OK)
		WRITE_ONCE(diff_io->error, -EIO);
	bio_put(bio);

	if (atomic_dec_and_test(&diff_io->bio_count))
		diff_io_complete(diff_io);
}

/*
 * A diff_io is part of what it serves (a chunk, or the stack of a sync
 * reader), so that starting a copy allocates nothing but its bios, which
 * come from a mempool-backed bio_set.
 */
void diff_io_init_sync(struct diff_io *diff_io, bool is_write)
{
	diff_io->error = 0;
	diff_io->is_write = is_write;
	diff_io->is_sync_io = true;
	atomic_set(&diff_io->bio_count, 0);
	init_completion(&diff_io->notify.sync.completion);
}

/*
 * Once, for a diff_io that is used again: its next I/O may start from the
 * callback of the last one, still running as this work item.
 */
void diff_io_init_work(struct diff_io *diff_io)
{
	INIT_WORK(&diff_io->notify.async.work, diff_io_notify_cb);
}

/* After diff_io_init_work(). */
void diff_io_init_async(struct diff_io *diff_io, bool is_write,
			void (*notify_cb)(void *ctx), void *ctx)
{
	diff_io->error = 0;
	diff_io->is_write = is_write;
	diff_io->is_sync_io = false;
	atomic_set(&diff_io->bio_count, 0);
	diff_io->notify.async.ctx = ctx;
	diff_io->notify.async.notify_cb = notify_cb;
}

/*
 * Build one bio for the part of the region that starts at @offset sectors,
 * as large as one bio can carry.
 */
static struct bio *diff_io_bio_new(struct diff_io *diff_io,
				   struct diff_region *diff_region,
				   struct diff_buffer *diff_buffer,
				   sector_t offset, gfp_t gfp)
{
	sector_t left = diff_region->count - offset;
	size_t page_inx = offset / SECTORS_IN_PAGE;
	unsigned short nr_vecs;
	struct bio *bio;

	nr_vecs = min_t(sector_t, BIO_MAX_VECS,
			DIV_ROUND_UP(left, SECTORS_IN_PAGE));
	bio = bio_alloc_bioset(diff_region->bdev, nr_vecs,
			       diff_io->is_write ? REQ_OP_WRITE : REQ_OP_READ,
			       gfp, &diff_io_bioset);
	if (unlikely(!bio))
		return NULL;

	bio_set_flag(bio, BIO_FILTERED);
	bio->bi_end_io = diff_io_endio;
	bio->bi_private = diff_io;
	bio->bi_iter.bi_sector = diff_region->sector + offset;

	while (left && nr_vecs--) {
		unsigned int len = min_t(sector_t, left, SECTORS_IN_PAGE)
				   << SECTOR_SHIFT;

		if (bio_add_page(bio, diff_buffer->pages[page_inx], len, 0) !=
		    len) {
			bio_put(bio);
			return NULL;
		}
		left -= len >> SECTOR_SHIFT;
		page_inx++;
	}
	return bio;
}

static void diff_io_submit_list(struct diff_io *diff_io,
				struct bio_list *bios)
{
	struct bio *bio;

	while ((bio = bio_list_pop(bios))) {
		atomic_inc(&diff_io->bio_count);
		submit_bio_noacct(bio);
	}
}

/*
 * Drops the submitter's reference and, for a sync diff_io, waits for the
 * end. @is_sync_io was read before any bio was sent: an async diff_io may
 * be freed as soon as the reference is dropped (see diff_io_do()).
 */
static void diff_io_end_submit(struct diff_io *diff_io, bool is_sync_io)
{
	if (atomic_dec_and_test(&diff_io->bio_count))
		diff_io_complete(diff_io);
	if (is_sync_io)
		wait_for_completion_io(&diff_io->notify.sync.completion);
}

/**
 * diff_io_do() - Read or write a region through a diff buffer.
 * @diff_io:
 *	The operation, from diff_io_init_sync() or diff_io_init_async().
 * @diff_region:
 *	Where on disk. Its sectors map onto the buffer from its first page.
 * @diff_buffer:
 *	The memory.
 * @is_nowait:
 *	The caller must not sleep.
 *
 * A region is split into as many bios as it takes. Without @is_nowait the
 * bios are allocated and submitted one at a time, as a mempool-backed
 * bio_set requires. With @is_nowait every bio is allocated before any is
 * submitted, so that a failed allocation leaves nothing in flight.
 *
 * Return: 0 if the I/O was started (and, for a sync diff_io, finished: its
 * result is in &diff_io.error), or -EAGAIN, -ENOMEM, -EINVAL if nothing
 * was submitted. After 0, an async diff_io, @diff_region and @diff_buffer
 * belong to the diff_io's callback, which may already have run: the
 * caller must not touch them.
 */
int diff_io_do(struct diff_io *diff_io, struct diff_region *diff_region,
	       struct diff_buffer *diff_buffer, const bool is_nowait)
{
	gfp_t gfp = is_nowait ? GFP_NOWAIT | __GFP_NOWARN : GFP_NOIO;
	const bool is_sync_io = diff_io->is_sync_io;
	struct bio_list bios;
	sector_t offset = 0;
	struct bio *bio;

	if (unlikely(!diff_region->count ||
		     diff_region->count > (diff_buffer->size >> SECTOR_SHIFT))) {
		pr_err("Region of %llu sectors does not fit a buffer of %zu bytes\n",
		       diff_region->count, diff_buffer->size);
		return -EINVAL;
	}

	/*
	 * Without waiting, every bio of the region is held before any is
	 * sent: keep that to one bio, so that a large chunk cannot drain
	 * the bio_set's mempool that others wait on. The write is retried
	 * by a caller that may wait.
	 */
	if (is_nowait &&
	    diff_region->count > (sector_t)BIO_MAX_VECS * PAGE_SECTORS)
		return -EAGAIN;

	bio_list_init(&bios);
	/*
	 * One reference for the submitter, so the end cannot come early.
	 * Once it is dropped, an async diff_io belongs to its completion,
	 * whose callback may free it, the region and the buffer on another
	 * CPU before this returns: touch none of them after that.
	 */
	atomic_set(&diff_io->bio_count, 1);

	while (offset < diff_region->count) {
		bio = diff_io_bio_new(diff_io, diff_region, diff_buffer, offset,
				      gfp);
		if (unlikely(!bio))
			goto fail;

		offset += bio_sectors(bio);
		bio_list_add(&bios, bio);
		if (!is_nowait)
			diff_io_submit_list(diff_io, &bios);
	}
	diff_io_submit_list(diff_io, &bios);
	diff_io_end_submit(diff_io, is_sync_io);
	return 0;

fail:
	while ((bio = bio_list_pop(&bios)))
		bio_put(bio);
	if (offset == 0 || is_nowait) {
		/* Nothing is in flight. */
		return is_nowait ? -EAGAIN : -ENOMEM;
	}
	/*
	 * A blocking bio_set allocation does not fail; should it ever, the
	 * bios already submitted complete the diff_io with an error.
	 */
	WRITE_ONCE(diff_io->error, -ENOMEM);
	diff_io_end_submit(diff_io, is_sync_io);
	return 0;
}
