// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-ctrl: " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/capability.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/mm.h>
#include <linux/file.h>
#include <linux/kernel.h>
#include <uapi/linux/blksnap.h>
#include "ctrl.h"
#include "params.h"
#include "version.h"
#include "snapshot.h"
#include "snapimage.h"
#include "tracker.h"
#include "event_queue.h"
#include "sysfs.h"

/*
 * Upper bounds for the arrays that cross the ioctl boundary. They keep a
 * single call from making the kernel allocate unbounded memory.
 */
#define BLK_SNAP_MAX_DEVICES	256
#define BLK_SNAP_MAX_RANGES	262144

/*
 * The v1 uapi, kept for compatibility, carries user addresses in its
 * structures as plain pointers: they are user pointers all the same.
 */
#define user_ptr(p)	((void __user *)(p))

/*
 * The v1 uapi header asserted this itself, which made it fail to compile
 * in user space C without <assert.h>.
 */
static_assert(sizeof(struct blk_snap_snapshot_event) == 4096,
	      "struct blk_snap_snapshot_event must be 4096 bytes");

static const struct blk_snap_version version = {
	.major = VERSION_MAJOR,
	.minor = VERSION_MINOR,
	.revision = VERSION_REVISION,
	.build = VERSION_BUILD,
};

/*
 * A dev_t has 12 bits of major and 20 bits of minor: a larger number would
 * be silently truncated by MKDEV() into another device's number.
 */
static int dev_id_to_dev_t(const struct blk_snap_dev *dev_id, dev_t *dev)
{
	if (dev_id->mj >= (1U << (32 - MINORBITS)) || dev_id->mn > MINORMASK)
		return -EINVAL;

	*dev = MKDEV(dev_id->mj, dev_id->mn);
	return 0;
}

/*
 * Copy an array of @count elements of @size bytes from user space, with
 * @count checked against @max first.
 */
static void *copy_array_from_user(const void __user *uarr, u32 count,
				  size_t size, u32 max)
{
	void *arr;

	if (!count)
		return ERR_PTR(-EINVAL);
	if (count > max)
		return ERR_PTR(-E2BIG);
	if (!uarr)
		return ERR_PTR(-EFAULT);

	arr = kvmalloc_array(count, size, GFP_KERNEL);
	if (!arr)
		return ERR_PTR(-ENOMEM);

	if (copy_from_user(arr, uarr, count * size)) {
		kvfree(arr);
		return ERR_PTR(-EFAULT);
	}
	return arr;
}

static int ioctl_version(unsigned long arg)
{
	if (copy_to_user((void __user *)arg, &version, sizeof(version)))
		return -EFAULT;
	return 0;
}

static int ioctl_tracker_remove(unsigned long arg)
{
	struct blk_snap_tracker_remove karg;
	dev_t dev;
	int ret;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;
	ret = dev_id_to_dev_t(&karg.dev_id, &dev);
	if (ret)
		return ret;

	return tracker_remove(dev);
}

static int ioctl_tracker_collect(unsigned long arg)
{
	struct blk_snap_tracker_collect karg;
	struct blk_snap_cbt_info *cbt_info = NULL;
	int count = 0;
	int ret;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;

	ret = tracker_collect(0, NULL, &count);
	if (ret)
		return ret;

	if (karg.cbt_info_array) {
		if (karg.count < count) {
			ret = -ENOBUFS;
			goto out;
		}
		if (!count)
			goto out;

		cbt_info = kcalloc(count, sizeof(*cbt_info), GFP_KERNEL);
		if (!cbt_info)
			return -ENOMEM;

		/* A device may have been added since it was counted. */
		ret = tracker_collect(count, cbt_info, &count);
		if (ret)
			goto out;

		if (copy_to_user(user_ptr(karg.cbt_info_array), cbt_info,
				 count * sizeof(*cbt_info)))
			ret = -EFAULT;
	}
out:
	karg.count = count;
	if (copy_to_user((void __user *)arg, &karg, sizeof(karg)))
		ret = -EFAULT;
	kfree(cbt_info);
	return ret;
}

static int ioctl_tracker_read_cbt_map(unsigned long arg)
{
	struct blk_snap_tracker_read_cbt_bitmap karg;
	dev_t dev;
	int ret;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;
	ret = dev_id_to_dev_t(&karg.dev_id, &dev);
	if (ret)
		return ret;
	if (!karg.buff)
		return -EFAULT;
	if (!karg.length)
		return -EINVAL;

	return tracker_read_cbt_bitmap(dev, karg.offset, karg.length,
				       user_ptr(karg.buff));
}

static int ioctl_tracker_mark_dirty_blocks(unsigned long arg)
{
	struct blk_snap_tracker_mark_dirty_blocks karg;
	struct blk_snap_block_range *ranges;
	dev_t dev;
	int ret;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;
	ret = dev_id_to_dev_t(&karg.dev_id, &dev);
	if (ret)
		return ret;

	ranges = copy_array_from_user(user_ptr(karg.dirty_blocks_array),
				      karg.count, sizeof(*ranges),
				      BLK_SNAP_MAX_RANGES);
	if (IS_ERR(ranges))
		return PTR_ERR(ranges);

	/* The ranges may name a snapshot image or an original device. */
	if (karg.dev_id.mj == snapimage_major())
		ret = snapshot_mark_dirty_blocks(dev, ranges, karg.count);
	else
		ret = tracker_mark_dirty_blocks(dev, ranges, karg.count);

	kvfree(ranges);
	return ret;
}

static int ioctl_snapshot_create(unsigned long arg)
{
	struct blk_snap_snapshot_create __user *uarg =
		(struct blk_snap_snapshot_create __user *)arg;
	struct blk_snap_snapshot_create karg;
	struct blk_snap_dev *dev_id_array;
	unsigned int inx;
	uuid_t id;
	dev_t dev;
	int ret;

	if (copy_from_user(&karg, uarg, sizeof(karg)))
		return -EFAULT;

	dev_id_array = copy_array_from_user(user_ptr(karg.dev_id_array),
					    karg.count, sizeof(*dev_id_array),
					    BLK_SNAP_MAX_DEVICES);
	if (IS_ERR(dev_id_array))
		return PTR_ERR(dev_id_array);

	for (inx = 0; inx < karg.count; inx++) {
		ret = dev_id_to_dev_t(&dev_id_array[inx], &dev);
		if (ret)
			goto out;
	}

	ret = snapshot_create(dev_id_array, karg.count, &id);
	if (ret)
		goto out;

	export_uuid(karg.id.b, &id);
	if (copy_to_user(&uarg->id, &karg.id, sizeof(karg.id))) {
		/* Nobody would know the id: do not leave the snapshot behind. */
		snapshot_destroy(&id);
		ret = -EFAULT;
	}
out:
	kvfree(dev_id_array);
	return ret;
}

static int ioctl_snapshot_destroy(unsigned long arg)
{
	struct blk_snap_snapshot_destroy karg;
	uuid_t id;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;

	import_uuid(&id, karg.id.b);
	return snapshot_destroy(&id);
}

static int ioctl_snapshot_append_storage(unsigned long arg)
{
	struct blk_snap_snapshot_append_storage karg;
	struct blk_snap_block_range *ranges;
	unsigned int noio_flag;
	uuid_t id;
	dev_t dev;
	int ret;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;
	ret = dev_id_to_dev_t(&karg.dev_id, &dev);
	if (ret)
		return ret;

	/*
	 * Writers may be waiting for this storage: reclaim must not write
	 * back to their devices from here (diff_storage_park()).
	 */
	noio_flag = memalloc_noio_save();
	ranges = copy_array_from_user(user_ptr(karg.ranges), karg.count,
				      sizeof(*ranges), BLK_SNAP_MAX_RANGES);
	if (IS_ERR(ranges)) {
		ret = PTR_ERR(ranges);
	} else {
		import_uuid(&id, karg.id.b);
		ret = snapshot_append_storage(&id, dev, ranges, karg.count);
		kvfree(ranges);
	}
	memalloc_noio_restore(noio_flag);
	return ret;
}

static int ioctl_snapshot_append_file(unsigned long arg)
{
	struct blk_snap_snapshot_append_file karg;
	struct blk_snap_block_range *ranges;
	unsigned int noio_flag;
	struct file *file;
	uuid_t id;
	int ret;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;
	if (karg.flags || karg.reserved)
		return -EINVAL;
	file = fget(karg.fd);
	if (!file)
		return -EBADF;

	/* As for v1's append: writers may be waiting for this storage. */
	noio_flag = memalloc_noio_save();
	/*
	 * No range (and no array): the snapshot only holds the file, whose
	 * blocks must not go back to the file system while it lives (they
	 * were in use when it was taken). A count of 0 with an array is a
	 * caller's mistake.
	 */
	if (!karg.count)
		ranges = karg.ranges ? ERR_PTR(-EINVAL) : NULL;
	else
		ranges = copy_array_from_user(u64_to_user_ptr(karg.ranges),
					      karg.count, sizeof(*ranges),
					      BLK_SNAP_MAX_RANGES);
	if (IS_ERR(ranges)) {
		ret = PTR_ERR(ranges);
	} else {
		import_uuid(&id, karg.id.b);
		ret = snapshot_append_file(&id, file, ranges, karg.count);
		kvfree(ranges);
	}
	memalloc_noio_restore(noio_flag);
	fput(file);
	return ret;
}

static int ioctl_snapshot_take(unsigned long arg)
{
	struct blk_snap_snapshot_take karg;
	uuid_t id;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;

	import_uuid(&id, karg.id.b);
	return snapshot_take(&id);
}

static int ioctl_snapshot_collect(unsigned long arg)
{
	struct blk_snap_snapshot_collect karg;
	struct blk_snap_uuid *ids = NULL;
	unsigned int count;
	int ret;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;

	ret = snapshot_collect(&count, NULL);
	if (ret)
		return ret;

	if (karg.ids) {
		if (karg.count < count) {
			ret = -ENOBUFS;
			goto out;
		}
		if (!count)
			goto out;

		ids = kcalloc(count, sizeof(*ids), GFP_KERNEL);
		if (!ids)
			return -ENOMEM;

		ret = snapshot_collect(&count, ids);
		if (ret)
			goto out;

		if (copy_to_user(user_ptr(karg.ids), ids, count * sizeof(*ids)))
			ret = -EFAULT;
	}
out:
	karg.count = count;
	if (copy_to_user((void __user *)arg, &karg, sizeof(karg)))
		ret = -EFAULT;
	kfree(ids);
	return ret;
}

static int ioctl_snapshot_collect_images(unsigned long arg)
{
	struct blk_snap_snapshot_collect_images karg;
	struct blk_snap_image_info *info = NULL;
	unsigned int count;
	uuid_t id;
	int ret;

	if (copy_from_user(&karg, (void __user *)arg, sizeof(karg)))
		return -EFAULT;
	import_uuid(&id, karg.id.b);

	ret = snapshot_collect_images(&id, NULL, &count);
	if (ret)
		return ret;

	if (karg.image_info_array) {
		if (karg.count < count) {
			ret = -ENOBUFS;
			goto out;
		}

		info = kcalloc(count, sizeof(*info), GFP_KERNEL);
		if (!info)
			return -ENOMEM;

		ret = snapshot_collect_images(&id, info, &count);
		if (ret)
			goto out;

		if (copy_to_user(user_ptr(karg.image_info_array), info,
				 count * sizeof(*info)))
			ret = -EFAULT;
	}
out:
	karg.count = count;
	if (copy_to_user((void __user *)arg, &karg, sizeof(karg)))
		ret = -EFAULT;
	kfree(info);
	return ret;
}

static int ioctl_snapshot_wait_event(unsigned long arg)
{
	struct blk_snap_snapshot_event __user *uarg =
		(struct blk_snap_snapshot_event __user *)arg;
	struct blk_snap_snapshot_event *karg;
	struct event *event;
	uuid_t id;
	int ret = 0;

	karg = kzalloc(sizeof(*karg), GFP_KERNEL);
	if (!karg)
		return -ENOMEM;

	if (copy_from_user(karg, uarg, offsetof(typeof(*karg), code))) {
		ret = -EFAULT;
		goto out;
	}
	import_uuid(&id, karg->id.b);

	event = snapshot_wait_event(&id, karg->timeout_ms);
	if (IS_ERR(event)) {
		ret = PTR_ERR(event);
		goto out;
	}

	karg->code = event->code;
	karg->time_label = event->time;
	/* event_gen() never queues more data than the field holds. */
	memcpy(karg->data, event->data, event->data_size);
	event_free(event);

	if (copy_to_user(uarg, karg, sizeof(*karg)))
		ret = -EFAULT;
out:
	kfree(karg);
	return ret;
}

static int (*const blk_snap_ioctl_table[])(unsigned long arg) = {
	[blk_snap_ioctl_version] = ioctl_version,
	[blk_snap_ioctl_tracker_remove] = ioctl_tracker_remove,
	[blk_snap_ioctl_tracker_collect] = ioctl_tracker_collect,
	[blk_snap_ioctl_tracker_read_cbt_map] = ioctl_tracker_read_cbt_map,
	[blk_snap_ioctl_tracker_mark_dirty_blocks] =
		ioctl_tracker_mark_dirty_blocks,
	[blk_snap_ioctl_snapshot_create] = ioctl_snapshot_create,
	[blk_snap_ioctl_snapshot_destroy] = ioctl_snapshot_destroy,
	[blk_snap_ioctl_snapshot_append_storage] =
		ioctl_snapshot_append_storage,
	[blk_snap_ioctl_snapshot_take] = ioctl_snapshot_take,
	[blk_snap_ioctl_snapshot_collect] = ioctl_snapshot_collect,
	[blk_snap_ioctl_snapshot_collect_images] =
		ioctl_snapshot_collect_images,
	[blk_snap_ioctl_snapshot_wait_event] = ioctl_snapshot_wait_event,
	[blk_snap_ioctl_snapshot_append_file] = ioctl_snapshot_append_file,
};

/* The full command, direction and size included, must be the uapi's. */
static const unsigned int blk_snap_ioctl_cmd[] = {
	[blk_snap_ioctl_version] = IOCTL_BLK_SNAP_VERSION,
	[blk_snap_ioctl_tracker_remove] = IOCTL_BLK_SNAP_TRACKER_REMOVE,
	[blk_snap_ioctl_tracker_collect] = IOCTL_BLK_SNAP_TRACKER_COLLECT,
	[blk_snap_ioctl_tracker_read_cbt_map] =
		IOCTL_BLK_SNAP_TRACKER_READ_CBT_MAP,
	[blk_snap_ioctl_tracker_mark_dirty_blocks] =
		IOCTL_BLK_SNAP_TRACKER_MARK_DIRTY_BLOCKS,
	[blk_snap_ioctl_snapshot_create] = IOCTL_BLK_SNAP_SNAPSHOT_CREATE,
	[blk_snap_ioctl_snapshot_destroy] = IOCTL_BLK_SNAP_SNAPSHOT_DESTROY,
	[blk_snap_ioctl_snapshot_append_storage] =
		IOCTL_BLK_SNAP_SNAPSHOT_APPEND_STORAGE,
	[blk_snap_ioctl_snapshot_take] = IOCTL_BLK_SNAP_SNAPSHOT_TAKE,
	[blk_snap_ioctl_snapshot_collect] = IOCTL_BLK_SNAP_SNAPSHOT_COLLECT,
	[blk_snap_ioctl_snapshot_collect_images] =
		IOCTL_BLK_SNAP_SNAPSHOT_COLLECT_IMAGES,
	[blk_snap_ioctl_snapshot_wait_event] =
		IOCTL_BLK_SNAP_SNAPSHOT_WAIT_EVENT,
	[blk_snap_ioctl_snapshot_append_file] =
		IOCTL_BLK_SNAP_SNAPSHOT_APPEND_FILE,
};

static long ctrl_unlocked_ioctl(struct file *filp, unsigned int cmd,
				unsigned long arg)
{
	unsigned int nr = _IOC_NR(cmd);

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;

	if (_IOC_TYPE(cmd) != BLK_SNAP ||
	    nr >= ARRAY_SIZE(blk_snap_ioctl_table) ||
	    cmd != blk_snap_ioctl_cmd[nr])
		return -ENOTTY;

	return blk_snap_ioctl_table[nr](arg);
}

static const struct file_operations ctrl_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = ctrl_unlocked_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice ctrl_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "blksnap",
	.fops = &ctrl_fops,
	.mode = 0600,
};

int ctrl_init(void)
{
	ctrl_miscdev.groups = sysfs_attr_groups;
	return misc_register(&ctrl_miscdev);
}

void ctrl_done(void)
{
	misc_deregister(&ctrl_miscdev);
}
