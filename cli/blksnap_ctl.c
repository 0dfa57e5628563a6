// SPDX-License-Identifier: GPL-2.0
/* Thin client of the /dev/blksnap ioctls: no printing, -errno results. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>

#include "blksnap_ctl.h"

/* Snapshots, images and trackers are few; this only stops a livelock. */
#define COLLECT_ATTEMPTS 8

static int do_ioctl(int ctl, unsigned long request, void *arg)
{
	return ioctl(ctl, request, arg) < 0 ? -errno : 0;
}

int bsc_open(void)
{
	int fd = open(BLK_SNAP_CTL, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

struct blk_snap_dev bsc_dev(dev_t dev)
{
	struct blk_snap_dev d = { .mj = major(dev), .mn = minor(dev) };

	return d;
}

dev_t bsc_dev_t(struct blk_snap_dev dev)
{
	return makedev(dev.mj, dev.mn);
}

int bsc_version(int ctl, struct blk_snap_version *version)
{
	memset(version, 0, sizeof(*version));
	return do_ioctl(ctl, IOCTL_BLK_SNAP_VERSION, version);
}

int bsc_snapshot_create(int ctl, const dev_t *devs, unsigned int count,
			struct blk_snap_uuid *id)
{
	struct blk_snap_snapshot_create arg = { .count = count };
	int ret;

	arg.dev_id_array = calloc(count ? count : 1, sizeof(*arg.dev_id_array));
	if (!arg.dev_id_array)
		return -ENOMEM;
	for (unsigned int i = 0; i < count; i++)
		arg.dev_id_array[i] = bsc_dev(devs[i]);
	ret = do_ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_CREATE, &arg);
	if (!ret) {
		struct blk_snap_snapshot_event ev;

		*id = arg.id;
		/*
		 * The kernel asks a new snapshot's first storage with a
		 * low_free_space event, as v1 did. This tool gives the first
		 * storage with `add` before the take, so the request is
		 * answered already: take it off the queue, or `watch` would
		 * grow the storage once more for it.
		 */
		bsc_wait_event(ctl, id, 0, &ev);
	}
	free(arg.dev_id_array);
	return ret;
}

int bsc_snapshot_destroy(int ctl, const struct blk_snap_uuid *id)
{
	struct blk_snap_snapshot_destroy arg = { .id = *id };

	return do_ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_DESTROY, &arg);
}

int bsc_snapshot_take(int ctl, const struct blk_snap_uuid *id)
{
	struct blk_snap_snapshot_take arg = { .id = *id };

	return do_ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_TAKE, &arg);
}

int bsc_append_storage(int ctl, const struct blk_snap_uuid *id, dev_t dev,
		       const struct blk_snap_block_range *ranges, size_t count,
		       size_t *appended)
{
	size_t done = 0;
	int ret = 0;

	while (done < count) {
		size_t n = count - done;
		struct blk_snap_snapshot_append_storage arg = {
			.id = *id,
			.dev_id = bsc_dev(dev),
		};

		if (n > BSC_MAX_RANGES_PER_CALL)
			n = BSC_MAX_RANGES_PER_CALL;
		arg.count = (__u32)n;
		/* The uapi pointer is not const; the kernel only reads it. */
		arg.ranges = (struct blk_snap_block_range *)(ranges + done);
		ret = do_ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_APPEND_STORAGE, &arg);
		if (ret)
			break;
		done += n;
	}
	if (appended)
		*appended = done;
	return ret;
}

int bsc_append_file(int ctl, const struct blk_snap_uuid *id, int fd,
		    const struct blk_snap_block_range *ranges, size_t count)
{
	struct blk_snap_snapshot_append_file arg = {
		.id = *id,
		.fd = fd,
		.count = (__u32)count,
		.ranges = (__u64)(uintptr_t)ranges,
	};

	if (count > BSC_MAX_RANGES_PER_CALL)
		return -E2BIG;
	return do_ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_APPEND_FILE, &arg);
}

/*
 * The "count in/out, NULL array -> just the count" convention: ask for the
 * count, allocate, fetch; if the set grew in between the kernel says so
 * (-ENODATA or -ENOBUFS), and we try again with the new count.
 */
typedef int (*collect_fn)(int ctl, const void *key, void *array,
			  unsigned int *count);

static int collect(int ctl, const void *key, collect_fn fn, size_t elem_size,
		   void **array, unsigned int *count)
{
	unsigned int n = 0;
	int ret;

	*array = NULL;
	*count = 0;
	ret = fn(ctl, key, NULL, &n);
	for (int attempt = 0; !ret && attempt < COLLECT_ATTEMPTS; attempt++) {
		unsigned int got = n;
		void *buf;

		if (n == 0)
			return 0;
		buf = calloc(n, elem_size);
		if (!buf)
			return -ENOMEM;
		ret = fn(ctl, key, buf, &got);
		if (!ret && got <= n) {
			*array = buf;
			*count = got;
			return 0;
		}
		free(buf);
		if (ret == -ENODATA || ret == -ENOBUFS || ret == -ENOSPC)
			ret = fn(ctl, key, NULL, &n);
		else if (!ret)
			n = got;
	}
	return ret ? ret : -EAGAIN;
}

static int snapshot_collect_once(int ctl, const void *key, void *array,
				 unsigned int *count)
{
	struct blk_snap_snapshot_collect arg = { .count = *count, .ids = array };
	int ret;

	(void)key;
	ret = do_ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_COLLECT, &arg);
	*count = arg.count;
	return ret;
}

int bsc_snapshot_collect(int ctl, struct blk_snap_uuid **ids,
			 unsigned int *count)
{
	return collect(ctl, NULL, snapshot_collect_once, sizeof(**ids),
		       (void **)ids, count);
}

static int images_collect_once(int ctl, const void *key, void *array,
			       unsigned int *count)
{
	struct blk_snap_snapshot_collect_images arg = {
		.id = *(const struct blk_snap_uuid *)key,
		.count = *count,
		.image_info_array = array,
	};
	int ret = do_ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_COLLECT_IMAGES, &arg);

	*count = arg.count;
	return ret;
}

int bsc_collect_images(int ctl, const struct blk_snap_uuid *id,
		       struct blk_snap_image_info **images,
		       unsigned int *count)
{
	return collect(ctl, id, images_collect_once, sizeof(**images),
		       (void **)images, count);
}

int bsc_wait_event(int ctl, const struct blk_snap_uuid *id,
		   uint32_t timeout_ms, struct blk_snap_snapshot_event *event)
{
	memset(event, 0, sizeof(*event));
	event->id = *id;
	event->timeout_ms = timeout_ms;
	return do_ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_WAIT_EVENT, event);
}

static int tracker_collect_once(int ctl, const void *key, void *array,
				unsigned int *count)
{
	struct blk_snap_tracker_collect arg = {
		.count = *count,
		.cbt_info_array = array,
	};
	int ret;

	(void)key;
	ret = do_ioctl(ctl, IOCTL_BLK_SNAP_TRACKER_COLLECT, &arg);
	*count = arg.count;
	return ret;
}

int bsc_tracker_collect(int ctl, struct blk_snap_cbt_info **info,
			unsigned int *count)
{
	return collect(ctl, NULL, tracker_collect_once, sizeof(**info),
		       (void **)info, count);
}

int bsc_read_cbt_map(int ctl, dev_t dev, uint32_t offset, uint32_t length,
		     uint8_t *buf)
{
	struct blk_snap_tracker_read_cbt_bitmap arg = {
		.dev_id = bsc_dev(dev),
		.offset = offset,
		.length = length,
		.buff = buf,
	};

	return do_ioctl(ctl, IOCTL_BLK_SNAP_TRACKER_READ_CBT_MAP, &arg);
}

int bsc_mark_dirty(int ctl, dev_t dev,
		   const struct blk_snap_block_range *ranges, size_t count)
{
	struct blk_snap_tracker_mark_dirty_blocks arg = {
		.dev_id = bsc_dev(dev),
		.count = (__u32)count,
		.dirty_blocks_array = (struct blk_snap_block_range *)ranges,
	};

	if (count > UINT32_MAX)
		return -E2BIG;
	return do_ioctl(ctl, IOCTL_BLK_SNAP_TRACKER_MARK_DIRTY_BLOCKS, &arg);
}

int bsc_tracker_remove(int ctl, dev_t dev)
{
	struct blk_snap_tracker_remove arg = { .dev_id = bsc_dev(dev) };

	return do_ioctl(ctl, IOCTL_BLK_SNAP_TRACKER_REMOVE, &arg);
}

void bsc_uuid_format(const struct blk_snap_uuid *id, char *text)
{
	static const char hex[] = "0123456789abcdef";
	char *p = text;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[id->b[i] >> 4];
		*p++ = hex[id->b[i] & 0xf];
	}
	*p = '\0';
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int bsc_uuid_parse(const char *text, struct blk_snap_uuid *id)
{
	struct blk_snap_uuid out;
	const char *p = text;

	if (!text || strlen(text) != BSC_UUID_LEN)
		return -EINVAL;
	for (int i = 0; i < 16; i++) {
		int hi, lo;

		if (i == 4 || i == 6 || i == 8 || i == 10) {
			if (*p++ != '-')
				return -EINVAL;
		}
		hi = hex_value(*p++);
		lo = hex_value(*p++);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out.b[i] = (uint8_t)(hi << 4 | lo);
	}
	*id = out;
	return 0;
}
