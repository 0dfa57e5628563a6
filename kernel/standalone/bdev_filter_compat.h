/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bdev_filter API of kernel/patches/0001 for an unmodified 6.1 kernel.
 *
 * Passed with -include to every file of the blksnap driver and of the
 * bdev_filter module (kernel/standalone/Kbuild), so that the driver in
 * kernel/drivers/block/blksnap/ builds unchanged. The declarations below
 * are those of 0001's include/linux/blkdev.h; the functions are provided
 * by bdev_filter.ko instead of block/bdev.c.
 */
#ifndef _BDEV_FILTER_COMPAT_H
#define _BDEV_FILTER_COMPAT_H

#include <linux/kref.h>
#include <linux/blk_types.h>
#include <linux/blkdev.h>

/*
 * 0001 adds BIO_FILTERED to enum bio_flag; here it is the first bit past
 * the kernel's own flags (bdev_filter.c checks that it fits in bi_flags).
 */
#define BIO_FILTERED BIO_FLAG_LAST

struct bdev_filter;

struct bdev_filter_operations {
	struct module *owner;
	bool (*submit_bio_cb)(struct bio *bio, struct bdev_filter *flt);
	void (*detach_cb)(struct kref *kref);
};

struct bdev_filter {
	struct kref kref;
	const struct bdev_filter_operations *fops;
};

static inline void bdev_filter_init(struct bdev_filter *flt,
				    const struct bdev_filter_operations *fops)
{
	kref_init(&flt->kref);
	flt->fops = fops;
}

static inline void bdev_filter_get(struct bdev_filter *flt)
{
	kref_get(&flt->kref);
}

static inline void bdev_filter_put(struct bdev_filter *flt)
{
	kref_put(&flt->kref, flt->fops->detach_cb);
}

struct bdev_filter_end_io {
	bio_end_io_t *end_io;
	struct module *owner;
};

int bdev_filter_attach(struct block_device *bdev, struct bdev_filter *flt);
int bdev_filter_detach(struct block_device *bdev);
struct bdev_filter *bdev_filter_get_by_bdev(struct block_device *bdev);
void bdev_filter_take_end_io(struct bio *bio, struct bdev_filter *flt,
			     struct bdev_filter_end_io *fe,
			     bio_end_io_t *end_io);
struct bdev_filter_end_io *bdev_filter_taken_end_io(struct bio *bio);

/*
 * The headers above defined the default pr_fmt(); every source file
 * defines its own after this header, as it would without it.
 */
#undef pr_fmt

#endif /* _BDEV_FILTER_COMPAT_H */
