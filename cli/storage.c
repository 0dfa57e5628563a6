// SPDX-License-Identifier: GPL-2.0
/* A snapshot's storage file: open, grow + append, release (storage.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>

#include "blksnap_ctl.h"
#include "stacked.h"
#include "state.h"
#include "storage.h"
#include "take_filter.h"

#define RELEASE_RETRIES		50
#define RELEASE_RETRY_NS	100000000L	/* 0.1 s */

static int say(char *why, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int say(char *why, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_LEN, fmt, ap);
	va_end(ap);
	return ret;
}

static int say_errno(char *why, int ret)
{
	return say(why, ret, "%s", strerror(-ret));
}

/* The filesystem of @path's directory must be one FIEMAP tells truth on. */
static int check_directory_fs(const char *path, const char **fs_name,
			      char *why)
{
	char copy[PATH_MAX];
	unsigned long magic = 0;
	int fd, ret;

	snprintf(copy, sizeof(copy), "%s", path);
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return say_errno(why, -errno);
	ret = sf_check_fs(fd, fs_name, &magic);
	close(fd);
	if (ret == -EOPNOTSUPP && *fs_name && strcmp(*fs_name, "unknown"))
		return say(why, ret, "%s cannot hold difference storage "
			   "(extents are not physical sectors)", *fs_name);
	if (ret == -EOPNOTSUPP)
		return say(why, ret, "filesystem type 0x%lx cannot hold "
			   "difference storage (only ext2/3/4 and xfs can)",
			   magic);
	return ret ? say_errno(why, ret) : 0;
}

/* The kernel no longer knows @id (destroyed without this tool, reloaded). */
static bool snapshot_gone(int ctl, const struct blk_snap_uuid *id)
{
	struct blk_snap_image_info *info = NULL;
	unsigned int count;
	int ret = bsc_collect_images(ctl, id, &info, &count);

	if (!ret)
		free(info);
	return ret == -ESRCH;
}

/* A pinned file nobody recorded: its snapshot died with a reboot. */
static bool is_immutable(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	int flags = 0;

	if (fd < 0)
		return false;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		flags = 0;
	close(fd);
	return flags & FS_IMMUTABLE_FL;
}

/* Refuse files that belong elsewhere or hold data we must not overwrite. */
static int check_ownership(struct storage *s, bool *exists, char *why)
{
	char text[BSC_UUID_LEN + 1];
	struct blk_snap_uuid owner;
	struct stat st;

	if (state_owner(s->path, &owner) == 0) {
		if (memcmp(&owner, &s->id, sizeof(owner))) {
			bsc_uuid_format(&owner, text);
			if (snapshot_gone(s->ctl, &owner))
				return say(why, -EBUSY, "still recorded as storage "
					   "of snapshot %s, which no longer exists: "
					   "'blksnap-storage destroy %s' releases it",
					   text, text);
			return say(why, -EBUSY, "already storage of snapshot %s",
				   text);
		}
		s->recorded = true;
	}
	*exists = lstat(s->path, &st) == 0;
	if (*exists && !S_ISREG(st.st_mode))
		return say(why, -EINVAL, "not a regular file");
	if (*exists && !s->recorded && st.st_size > 0 && is_immutable(s->path))
		return say(why, -EEXIST, "exists, immutable, and is no "
			   "snapshot's storage (left pinned by a crash or "
			   "reboot?): 'chattr -i' and delete it first");
	if (*exists && !s->recorded && st.st_size > 0)
		return say(why, -EEXIST, "exists and is not storage of this "
			   "snapshot (left from an earlier one? delete it first)");
	return 0;
}

static int explain_sf_error(struct storage *s, int ret, char *why)
{
	uint32_t flag = s->f ? sf_refused_flag(s->f) : 0;

	switch (ret) {
	case -EBUSY:
		return say(why, ret, "in use by another blksnap-storage process");
	case -ENODEV:
		return say(why, ret, "its device is not a block device known "
			   "to /sys/dev/block");
	case -EPERM:
		return say(why, ret, "cannot change the immutable flag "
			   "(needs CAP_LINUX_IMMUTABLE)");
	case -ENOSPC:
		return say(why, ret, "no space left on the filesystem");
	case -EAGAIN:
		return say(why, ret, "the file's location on disk is not "
			   "decided yet (%s extent); try again",
			   sf_extent_flag_name(flag));
	case -EOPNOTSUPP:
		if (flag)
			return say(why, ret, "has a %s extent: its data is not "
				   "plain sectors of the device",
				   sf_extent_flag_name(flag));
		return say(why, ret, "FIEMAP not supported here");
	}
	return say_errno(why, ret);
}

int storage_open(struct storage *s, int ctl, const struct blk_snap_uuid *id,
		 const char *path, char *why)
{
	bool exists = false;
	int ret;

	memset(s, 0, sizeof(*s));
	s->ctl = ctl;
	s->id = *id;
	ret = state_canonical_path(path, s->path, sizeof(s->path));
	if (ret)
		return say_errno(why, ret);
	ret = check_directory_fs(s->path, &s->fs_name, why);
	if (!ret)
		ret = check_ownership(s, &exists, why);
	if (ret)
		return ret;

	ret = sf_open(s->path, true, &s->f);
	if (ret) {
		s->f = NULL;
		return explain_sf_error(s, ret, why);
	}
	s->created = !exists;
	sf_device(s->f, &s->dev);
	/* Its current space is user data or already the kernel's. */
	ret = sf_claim_existing(s->f, NULL);
	if (ret) {
		explain_sf_error(s, ret, why);
		storage_close(s);
	}
	return ret;
}

/* The image of the storage's device if its snapshot is taken, else 0. */
static int find_image(const struct storage *s, dev_t *image, char *why)
{
	struct blk_snap_image_info *info;
	unsigned int count;
	int ret = bsc_collect_images(s->ctl, &s->id, &info, &count);

	*image = 0;
	if (ret == -ENODEV)	/* not taken yet: nothing to protect */
		return 0;
	if (ret == -ESRCH)
		return say(why, ret, "the snapshot no longer exists");
	if (ret)
		return say(why, ret, "cannot list the snapshot's images: %s",
			   strerror(-ret));
	for (unsigned int i = 0; i < count; i++)
		if (bsc_dev_t(info[i].orig_dev_id) == s->dev)
			*image = bsc_dev_t(info[i].image_dev_id);
	free(info);
	return 0;
}

/*
 * Refuse storage stacked on a disk it would be copied from (stacked.h).
 * The image list names the snapshot's devices, taken or not; a module
 * that lists none before the take (-ENODEV) gets every tracked device.
 */
static int check_stacking(const struct storage *s, char *why)
{
	struct blk_snap_image_info *img = NULL;
	struct blk_snap_cbt_info *cbt = NULL;
	const char *noun = "a disk of the snapshot";
	unsigned int count = 0;
	dev_t *origs;
	int ret;

	ret = bsc_collect_images(s->ctl, &s->id, &img, &count);
	if (ret == -ENODEV) {
		noun = "a tracked disk (this snapshot's or another's)";
		ret = bsc_tracker_collect(s->ctl, &cbt, &count);
	}
	if (ret)
		return say(why, ret, "cannot list the snapshot's devices: %s",
			   strerror(-ret));
	origs = calloc(count ? count : 1, sizeof(*origs));
	if (!origs) {
		ret = say(why, -ENOMEM, "%s", strerror(ENOMEM));
		goto out;
	}
	for (unsigned int i = 0; i < count; i++)
		origs[i] = img ? bsc_dev_t(img[i].orig_dev_id) :
				 bsc_dev_t(cbt[i].dev_id);
	ret = stacked_storage_check(s->dev, origs, count, noun, why, WHY_LEN);
	free(origs);
out:
	free(img);
	free(cbt);
	return ret;
}

/* Make the file @size bytes again, through our own descriptor's inode. */
static int truncate_to(const struct storage *s, uint64_t size)
{
	char proc[64];
	int fd, ret = 0;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", sf_fd(s->f));
	fd = open(proc, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(s->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Undo a growth the kernel did not take. */
static void roll_back(struct storage *s, uint64_t old_size, bool was_pinned,
		      bool recorded_now)
{
	sf_unpin(s->f);
	truncate_to(s, old_size);
	if (was_pinned)
		sf_pin(s->f);
	if (recorded_now) {
		state_unrecord(&s->id, s->path);
		s->recorded = false;
	}
}

/* Keep only the sectors free at take time when the device is snapshotted. */
static int usable_part(struct storage *s, dev_t image, struct sf_ranges *new,
		       struct sf_ranges *usable, struct growth *g, char *why)
{
	uint64_t align = sf_align(s->f) >> SF_SECTOR_SHIFT;
	const char *stage = "";
	int ret;

	if (!image)
		return sf_ranges_union(usable, new);
	g->take_checked = true;
	ret = free_at_take(image, s->fs_name, new, align, usable,
			   &g->withheld_sectors, &stage);
	if (ret)
		return say(why, ret, "cannot tell which new sectors were free "
			   "when the snapshot was taken (%s: %s)", stage,
			   strerror(-ret));
	return 0;
}

/* Pin, record and append; on failure say why (the caller rolls back). */
static int hand_over(struct storage *s, const struct sf_ranges *usable,
		     bool *recorded_now, size_t *appended, char *why)
{
	int ret;

	*appended = 0;
	if (!s->recorded) {
		ret = state_record(&s->id, s->path);
		if (ret)
			return say(why, ret, "cannot record it in %s: %s",
				   state_dir(), strerror(-ret));
		s->recorded = *recorded_now = true;
	}
	/* The kernel will write into these blocks: nobody may move them. */
	ret = sf_pin(s->f);
	if (ret)
		return explain_sf_error(s, ret, why);
	ret = bsc_append_storage(s->ctl, &s->id, s->dev, usable->r,
				 usable->count, appended);
	if (ret && *appended)
		return say(why, ret, "the snapshot took only %zu of %zu ranges "
			   "(%s); the file stays pinned as its storage",
			   *appended, usable->count, strerror(-ret));
	if (ret)
		return say(why, ret, "the snapshot refused the storage: %s",
			   strerror(-ret));
	return 0;
}

/*
 * A file kept for its withheld blocks is recorded and pinned like any
 * storage (destroy unpins it): unpinned, it could be deleted and its blocks
 * handed out again by the next growth.
 */
static int keep_withheld(struct storage *s, char *why)
{
	int ret;

	if (!s->recorded) {
		ret = state_record(&s->id, s->path);
		if (ret)
			return say(why, ret, "none of the new sectors was free "
				   "when the snapshot was taken, and the file "
				   "that keeps them cannot be recorded in %s: %s",
				   state_dir(), strerror(-ret));
		s->recorded = true;
	}
	ret = sf_pin(s->f);
	if (ret)
		return say(why, ret, "none of the new sectors was free when "
			   "the snapshot was taken, and the file that keeps "
			   "them cannot be made immutable: %s", strerror(-ret));
	return 0;
}

int storage_grow(struct storage *s, uint64_t bytes, struct growth *g,
		 char *why)
{
	struct sf_ranges new = SF_RANGES_INIT, usable = SF_RANGES_INIT;
	bool was_pinned, recorded_now = false;
	size_t appended = 0;
	dev_t image;
	int ret;

	memset(g, 0, sizeof(*g));
	ret = sf_size(s->f, &g->old_size);
	if (ret)
		return say_errno(why, ret);
	ret = find_image(s, &image, why);
	if (!ret)
		ret = check_stacking(s, why);
	if (ret)
		return ret;
	was_pinned = sf_is_pinned(s->f) > 0;

	ret = sf_grow(s->f, bytes, &new);
	if (ret)
		return explain_sf_error(s, ret, why);
	g->unaligned_sectors = new.wasted_sectors;
	ret = usable_part(s, image, &new, &usable, g, why);
	/*
	 * Nothing was free at take time: keep the growth, and the file and
	 * its record even if this process created it, so that those blocks
	 * stay out of the next growth; give nothing.
	 */
	if (!ret && !usable.count) {
		s->keep = true;
		ret = keep_withheld(s, why);
		goto out;
	}
	if (!ret)
		ret = hand_over(s, &usable, &recorded_now, &appended, why);
	if (ret && !appended)
		roll_back(s, g->old_size, was_pinned, recorded_now);
	if (!ret || appended) {
		s->appended = true;
		for (size_t i = 0; i < appended; i++)
			g->given_sectors += usable.r[i].sector_count;
	}
out:
	sf_size(s->f, &g->new_size);
	sf_ranges_free(&new);
	sf_ranges_free(&usable);
	return ret;
}

int storage_release(struct storage *s, char *why)
{
	int ret = sf_unpin(s->f);

	if (ret)
		return explain_sf_error(s, ret, why);
	ret = state_unrecord(&s->id, s->path);
	if (ret)
		return say(why, ret, "cannot update %s: %s", state_dir(),
			   strerror(-ret));
	s->recorded = false;
	return 0;
}

void storage_close(struct storage *s)
{
	struct stat a, b;

	if (!s->f)
		return;
	/* Remove only the very file we created, not one put in its place. */
	if (s->created && !s->appended && !s->keep && fstat(sf_fd(s->f), &a) == 0 &&
	    lstat(s->path, &b) == 0 && a.st_ino == b.st_ino &&
	    a.st_dev == b.st_dev) {
		sf_unpin(s->f);
		unlink(s->path);
	}
	sf_close(s->f);
	s->f = NULL;
}

int storage_release_path(const char *path, char *why)
{
	const struct timespec pause = { 0, RELEASE_RETRY_NS };
	struct storage s = { 0 };
	int ret = -EBUSY;

	for (int i = 0; i < RELEASE_RETRIES && ret == -EBUSY; i++) {
		ret = sf_open(path, false, &s.f);
		if (ret == -EBUSY)
			nanosleep(&pause, NULL);
	}
	if (ret == -ENOENT)
		return 0;
	if (ret) {
		s.f = NULL;
		return explain_sf_error(&s, ret, why);
	}
	ret = sf_unpin(s.f);
	if (ret)
		explain_sf_error(&s, ret, why);
	sf_close(s.f);
	return ret;
}
