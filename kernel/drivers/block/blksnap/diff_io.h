/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_DIFF_IO_H
#define __BLK_SNAP_DIFF_IO_H

#include <linux/workqueue.h>
#include <linux/completion.h>

struct diff_buffer;

/**
 * struct diff_region - Describes the location of the chunks data on
 *	difference storage.
 * @bdev:
 *	The target block device.
 * @sector:
 *	The sector offset of the region's first sector.
 * @count:
 *	The count of sectors in the region.
 */
struct diff_region {
	struct block_device *bdev;
	sector_t sector;
	sector_t count;
};

/**
 * struct diff_io_sync - Structure for notification about completion of
 *	synchronous I/O.
 * @completion:
 *	Indicates that the request has been processed.
 *
 * Allows to wait for completion of the I/O operation in the
 * current thread.
 */
struct diff_io_sync {
	struct completion completion;
};

/**
 * struct diff_io_async - Structure for notification about completion of
 *	asynchronous I/O.
 * @work:
 *	The &struct work_struct allows to schedule execution of an I/O
 *	completion handler in a process context, where it may sleep.
 * @notify_cb:
 *	A pointer to the I/O completion handler.
 * @ctx:
 *	The argument for the I/O completion handler.
 */
struct diff_io_async {
	struct work_struct work;
	void (*notify_cb)(void *ctx);
	void *ctx;
};

/**
 * struct diff_io - Structure for I/O maintenance.
 * @error:
 *	Zero if the I/O operation is successful, or an error code if it fails.
 * @bio_count:
 *	The count of bios of the operation still in flight. A chunk is
 *	usually larger than one bio can carry.
 * @is_write:
 *	Indicates a read or write operation.
 * @is_sync_io:
 *	Indicates a synchronous I/O operation.
 * @notify:
 *	Notification of completion, for synchronous or asynchronous I/O.
 *
 * The bios of a diff_io are marked BIO_FILTERED: they read the original
 * device and write the difference storage on behalf of the filter itself,
 * and must never be intercepted by it, even when the difference storage
 * lives on a device that is being tracked.
 */
struct diff_io {
	int error;
	atomic_t bio_count;
	bool is_write;
	bool is_sync_io;
	union {
		struct diff_io_sync sync;
		struct diff_io_async async;
	} notify;
};

extern struct workqueue_struct *blksnap_io_wq;
extern struct workqueue_struct *blksnap_wq;

int diff_io_init(void);
void diff_io_done(void);

void diff_io_init_sync(struct diff_io *diff_io, bool is_write);
void diff_io_init_work(struct diff_io *diff_io);
void diff_io_init_async(struct diff_io *diff_io, bool is_write,
			void (*notify_cb)(void *ctx), void *ctx);

int diff_io_do(struct diff_io *diff_io, struct diff_region *diff_region,
	       struct diff_buffer *diff_buffer, const bool is_nowait);
#endif /* __BLK_SNAP_DIFF_IO_H */
