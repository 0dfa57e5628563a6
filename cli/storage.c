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
#include <sys/sysmacros.h>
#include <linux/fs.h>

#include "blksnap_ctl.h"
#include "common.h"
#include "devices.h"
#include "secure.h"
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

/* The filesystem of the storage's directory must be one FIEMAP tells truth on. */
static int check_directory_fs(int dirfd, const char **fs_name, char *why)
{
	unsigned long magic = 0;
	int ret;

	ret = sf_check_fs(dirfd, fs_name, &magic);
	if (ret == -EOPNOTSUPP && *fs_name && strcmp(*fs_name, "unknown"))
		return say(why, ret, "%s cannot hold difference storage "
			   "(extents are not physical sectors)", *fs_name);
	if (ret == -EOPNOTSUPP)
		return say(why, ret, "filesystem type 0x%lx cannot hold "
			   "difference storage (only ext2/3/4 and xfs can)",
			   magic);
	return ret ? say_errno(why, ret) : 0;
}

/*
 * The absolute path of @path with its directory's symbolic links resolved,
 * following only links root can trust (secure_resolve()); the file itself
 * is never a link (it is opened with O_NOFOLLOW).
 */
static int absolute_path(const char *path, char *abs, size_t len, char *why)
{
	char dir_copy[PATH_MAX], base_copy[PATH_MAX], real[PATH_MAX];
	const char *base;
	int n, ret;

	if (strlen(path) >= sizeof(dir_copy))
		return say_errno(why, -ENAMETOOLONG);
	strcpy(dir_copy, path);
	strcpy(base_copy, path);
	base = basename(base_copy);
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") ||
	    !strcmp(base, "/"))
		return say_errno(why, -EISDIR);
	ret = secure_resolve(dirname(dir_copy), real, sizeof(real), why);
	if (ret)
		return ret;
	n = snprintf(abs, len, "%s/%s", strcmp(real, "/") ? real : "", base);
	if (n < 0 || (size_t)n >= len)
		return say_errno(why, -ENAMETOOLONG);
	/* A newline would break the one-path-per-line state file. */
	if (strchr(abs, '\n'))
		return say(why, -EINVAL, "a newline in the path: the state "
			   "records could not hold it; rename it");
	return 0;
}

/* Absolute path, then its directory opened and checked (secure.h). */
static int open_directory(const char *path, char *abs, size_t len,
			  const char **base, int *dirfd, char *why)
{
	char dir[PATH_MAX];
	int ret;

	*dirfd = -1;
	ret = absolute_path(path, abs, len, why);
	if (ret)
		return ret;
	ret = secure_split(abs, dir, sizeof(dir), base);
	if (ret)
		return say_errno(why, ret);
	ret = secure_open_dir(dir, true, "directory", why);
	if (ret < 0)
		return ret;
	*dirfd = ret;
	return 0;
}

/* An existing file at @base must be one root may use (secure.h). */
static int check_existing(int dirfd, const char *base, bool *exists,
			  struct stat *st, char *why)
{
	*exists = false;
	if (fstatat(dirfd, base, st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : say_errno(why, -errno);
	*exists = true;
	return secure_check_file(st, why);
}

int storage_check_path(const char *path, char *why)
{
	char abs[PATH_MAX];
	const char *base;
	struct stat st;
	bool exists;
	int dirfd, ret;

	ret = open_directory(path, abs, sizeof(abs), &base, &dirfd, why);
	if (!ret)
		ret = check_existing(dirfd, base, &exists, &st, why);
	if (dirfd >= 0)
		close(dirfd);
	return ret;
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

/* Refuse files that belong elsewhere or hold data we must not overwrite. */
static int check_ownership(struct storage *s, struct state_file *rec,
			   char *why)
{
	char text[BSC_UUID_LEN + 1];
	struct blk_snap_uuid owner;
	struct stat st;
	bool exists;
	int ret;

	ret = state_owner(s->path, &owner, rec);
	if (ret && ret != -ENOENT)
		return say(why, ret, "%s", state_strerror(ret));
	if (!ret) {
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
	return check_existing(s->dirfd, s->base, &exists, &st, why);
}

/*
 * Data in a file nobody recorded is not ours to hand out.  Checked once
 * we hold the file's lock: a file another add is growing right now is
 * reported busy by sf_openat(), not as a leftover (issue 13 item 11).
 */
static int check_unrecorded(struct storage *s, const struct stat *st,
			    char *why)
{
	if (s->recorded || s->created || st->st_size == 0)
		return 0;
	/*
	 * Not ours, but maybe a live snapshot's, given through another state
	 * directory or mount namespace: freeing it would hand the blocks the
	 * kernel writes into to other files. This snapshot exists, so the
	 * kernel is never free of snapshots here: no unconditional advice.
	 */
	if (sf_is_pinned(s->f) > 0)
		return say(why, -EEXIST, "exists, immutable, and is not "
			   "storage of this snapshot recorded here: it may be "
			   "a live snapshot's storage, given through another "
			   "state directory or mount namespace, so choose "
			   "another path (a file left pinned by a crash or "
			   "reboot is freed with 'chattr -i' once no snapshot "
			   "exists)");
	return say(why, -EEXIST, "exists and is not storage of this "
		   "snapshot recorded here: choose another path (left from an "
		   "earlier snapshot? delete it if it is yours and no "
		   "snapshot uses it)");
}

static int explain_sf_error(struct storage *s, int ret, char *why)
{
	uint32_t flag = s->f ? sf_refused_flag(s->f) : 0;

	switch (ret) {
	case -EBUSY:
		return say(why, ret, "in use by another blksnap-storage "
			   "process (an add or watch of it still running?): "
			   "wait for it to finish");
	case -ENODEV:
		return say(why, ret, "its device is not a block device known "
			   "to /sys/dev/block");
	case -EPERM:
		return say(why, ret, "cannot change the immutable flag "
			   "(needs CAP_LINUX_IMMUTABLE)");
	case -ENOSPC:
		return say(why, ret, "no space left on the filesystem");
	case -EFBIG:
		return say(why, ret, "the growth would pass the largest file "
			   "size its file system allows");
	case -EAGAIN:
		return say(why, ret, "the file's location on disk is not "
			   "decided yet (%s extent); try again",
			   sf_extent_flag_name(flag));
	case -EXDEV:
		return say(why, ret, "is an XFS realtime file: its blocks are "
			   "on the realtime device, not on the device its "
			   "sector numbers would be given for. Put it in a "
			   "directory without the rtinherit flag "
			   "(xfs_io -c 'chattr -t' DIR)");
	case -EOPNOTSUPP:
		if (flag)
			return say(why, ret, "has a %s extent: its data is not "
				   "plain sectors of the device",
				   sf_extent_flag_name(flag));
		return say(why, ret, "FIEMAP not supported here");
	}
	return say_errno(why, ret);
}

/* Make the file @size bytes again, through our own descriptor's inode. */
static int truncate_to(const struct storage *s, uint64_t size)
{
	char proc[64];
	int fd, ret = 0;
	struct stat st;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", sf_fd(s->f));
	fd = open(proc, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fd = openat(s->dirfd, s->base, O_WRONLY | O_CLOEXEC |
			    O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_ino != s->ino ||
	    st.st_dev != s->file_dev) {
		close(fd);
		return -ESTALE;
	}
	if (ftruncate(fd, (off_t)size) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* The growth's record goes before any of it is appended (state.h). */
static int end_growth(struct storage *s, char *why)
{
	int ret = state_growth_end(&s->id, s->file_dev, s->ino);

	if (ret)
		return say(why, ret, "cannot update the growth's record in "
			   "%s: %s", state_dir(), state_strerror(ret));
	return 0;
}

/*
 * A blksnap-storage killed while it grew the file (SIGKILL, a crash)
 * leaves the growth unused in the file, and the file maybe mutable.
 * None of it reached the kernel (state.h): give it back to the
 * filesystem and pin the file again, before anything else is done.
 */
static int repair_interrupted_growth(struct storage *s, uint64_t size,
				     char *why)
{
	uint64_t old_size;
	bool pending = true;
	int ret, pinned;

	ret = state_growth_pending(&s->id, s->file_dev, s->ino, &old_size);
	if (ret == -ENOENT)
		pending = false;
	else if (ret)
		return say(why, ret, "cannot tell whether a growth of it was "
			   "interrupted: %s", state_strerror(ret));
	if (pending && old_size < size) {
		ret = sf_unpin(s->f);
		if (!ret)
			ret = truncate_to(s, old_size);
		if (ret) {
			sf_pin(s->f);
			return say(why, ret, "cannot undo an interrupted growth "
				   "(from %" PRIu64 " to %" PRIu64 " bytes): "
				   "%s", old_size, size, strerror(-ret));
		}
		report(s->path, "undid an interrupted growth (a blksnap-storage "
		       "killed while growing it): %" PRIu64 " bytes given back "
		       "to the filesystem", size - old_size);
	}
	pinned = sf_is_pinned(s->f);
	if (pinned == 0) {
		ret = sf_pin(s->f);
		if (ret)
			return explain_sf_error(s, ret, why);
		if (!pending || old_size >= size)
			report(s->path, "was not immutable (a blksnap-storage "
			       "killed while growing it?): made immutable "
			       "again");
	} else if (pinned < 0) {
		return explain_sf_error(s, pinned, why);
	}
	return pending ? end_growth(s, why) : 0;
}

int storage_open(struct storage *s, int ctl, const struct blk_snap_uuid *id,
		 const char *path, char *why)
{
	char uuid[BSC_UUID_LEN + 1];
	struct state_file rec = { 0 };
	struct stat st;
	int ret;

	memset(s, 0, sizeof(*s));
	s->ctl = ctl;
	s->id = *id;
	ret = open_directory(path, s->path, sizeof(s->path), &s->base,
			     &s->dirfd, why);
	if (!ret)
		ret = check_directory_fs(s->dirfd, &s->fs_name, why);
	if (!ret)
		ret = check_ownership(s, &rec, why);
	if (ret)
		goto fail;

	/* Created O_EXCL|O_NOFOLLOW, mode 0600, in the checked directory. */
	ret = sf_openat(s->dirfd, s->base, true, &s->created, &s->f);
	if (ret) {
		s->f = NULL;
		explain_sf_error(s, ret, why);
		goto fail;
	}
	/* The file we hold is the one we checked (or a fresh one of ours). */
	if (fstat(sf_fd(s->f), &st) < 0)
		ret = say_errno(why, -errno);
	else
		ret = secure_check_file(&st, why);
	if (!ret)
		ret = check_unrecorded(s, &st, why);
	if (!ret && s->recorded && (st.st_dev != rec.dev || st.st_ino != rec.ino))
		ret = say(why, -ESTALE, "is not the file recorded as this "
			  "snapshot's storage (device %u:%u inode %llu): it "
			  "was replaced; 'blksnap-storage destroy' the snapshot",
			  major(rec.dev), minor(rec.dev),
			  (unsigned long long)rec.ino);
	/*
	 * 'destroy' drops the snapshot, then unpins its files under their
	 * lock, then forgets them: one that did so between our look at the
	 * record and our lock left a file that is no longer ours to pin or
	 * grow (review of 8157311: it was pinned again, and for ever).
	 */
	if (!ret && s->recorded && snapshot_gone(ctl, id)) {
		bsc_uuid_format(id, uuid);
		ret = say(why, -ESRCH, "left as it is: snapshot %s was "
			  "destroyed while this command started", uuid);
	}
	if (ret) {
		storage_close(s);
		return ret;
	}
	s->file_dev = st.st_dev;
	s->ino = st.st_ino;
	sf_device(s->f, &s->dev);
	if (s->recorded)
		ret = repair_interrupted_growth(s, (uint64_t)st.st_size, why);
	if (ret) {
		storage_close(s);
		return ret;
	}
	/* Its current space is user data or already the kernel's. */
	ret = sf_claim_existing(s->f, NULL);
	if (ret) {
		explain_sf_error(s, ret, why);
		storage_close(s);
	}
	return ret;

fail:
	if (s->dirfd >= 0)
		close(s->dirfd);
	s->dirfd = -1;
	return ret;
}

/*
 * Where the take-time content of the storage's device can be read: its
 * own image, or the part of its whole disk's image it lies on. The
 * snapshot not taken yet: nothing to protect, image 0.
 */
struct take_view {
	dev_t image;
	uint64_t start, sectors;	/* sectors 0: the whole image */
};

static int find_take_view(const struct storage *s, struct take_view *v,
			  char *why)
{
	struct blk_snap_image_info *info;
	uint64_t start = 0, sectors = 0;
	char name[PATH_MAX];
	unsigned int count;
	dev_t whole = 0, *origs;
	bool taken = false;
	int ret = bsc_collect_images(s->ctl, &s->id, &info, &count);

	memset(v, 0, sizeof(*v));
	if (ret == -ENODEV)
		return 0;
	if (ret == -ESRCH)
		return say(why, ret, "the snapshot no longer exists");
	if (ret)
		return say(why, ret, "cannot list the snapshot's images: %s",
			   strerror(-ret));
	/* Before the take the images are listed without a device number. */
	for (unsigned int i = 0; i < count; i++)
		taken = taken || bsc_dev_t(info[i].image_dev_id);
	if (!taken) {
		free(info);
		return 0;
	}
	device_name(s->dev, name, sizeof(name));
	ret = device_partition(s->dev, &whole, &start, &sectors);
	if (ret == -ENOENT)
		ret = 0;
	else if (ret)
		ret = say(why, ret, "cannot read where partition %s lies on "
			  "its disk: %s", name, strerror(-ret));
	for (unsigned int i = 0; !ret && i < count; i++)
		if (bsc_dev_t(info[i].orig_dev_id) == s->dev)
			v->image = bsc_dev_t(info[i].image_dev_id);
	/* A whole disk's snapshot holds its partitions' take-time content. */
	for (unsigned int i = 0; !ret && !v->image && whole && i < count; i++)
		if (bsc_dev_t(info[i].orig_dev_id) == whole) {
			v->image = bsc_dev_t(info[i].image_dev_id);
			v->start = start;
			v->sectors = sectors;
		}
	origs = ret || v->image ? NULL : calloc(count ? count : 1, sizeof(*origs));
	if (origs) {
		for (unsigned int i = 0; i < count; i++)
			origs[i] = bsc_dev_t(info[i].orig_dev_id);
		/*
		 * Below a device-mapper or md layer, which sectors of the
		 * snapshot's disk a storage sector is cannot be told here.
		 */
		if (stacked_on_origs(s->dev, origs, count))
			ret = say(why, -EXDEV, "it is on %s, stacked on a disk "
				  "of the snapshot, which is already taken: "
				  "which of its blocks were free at take time "
				  "cannot be checked. Add the storage before "
				  "'take', or put it on a file system outside "
				  "the snapshot", name);
		free(origs);
	} else if (!ret && !v->image) {
		ret = say(why, -ENOMEM, "%s", strerror(ENOMEM));
	}
	free(info);
	return ret;
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

/*
 * The file was pinned before and could not be pinned again: add that to
 * @why, whose first part says what failed.
 */
static void say_unpinned(char *why, int err)
{
	size_t n = strlen(why);

	if (n < WHY_LEN)
		snprintf(why + n, WHY_LEN - n, "; and it could not be made "
			 "immutable again%s%s%s, although the snapshot may "
			 "use its blocks: 'chattr +i' it", err ? " (" : "",
			 err ? strerror(-err) : "", err ? ")" : "");
}

/*
 * Undo a growth the kernel did not take; @why already says why. Its
 * blocks, back with the file system, may come back with the next growth:
 * they must count as never handed out then.
 */
static void roll_back(struct storage *s, uint64_t old_size, bool was_pinned,
		      bool recorded_now, const struct sf_ranges *new, char *why)
{
	int ret;

	sf_unpin(s->f);
	if (!truncate_to(s, old_size))
		sf_forget(s->f, new);
	if (was_pinned && (ret = sf_pin(s->f)))
		say_unpinned(why, ret);
	if (recorded_now) {
		state_unrecord(&s->id, s->path);
		s->recorded = false;
	}
}

/* Keep only the sectors free at take time when the device is snapshotted. */
static int usable_part(struct storage *s, const struct take_view *view,
		       struct sf_ranges *new, struct sf_ranges *usable,
		       struct growth *g, char *why)
{
	uint64_t align = sf_align(s->f) >> SF_SECTOR_SHIFT, unaligned = 0;
	const char *stage = "";
	int ret;

	if (!view->image)
		return sf_ranges_union(usable, new);
	g->take_checked = true;
	ret = free_at_take(view->image, view->start, view->sectors, s->fs_name,
			   new, align, usable, &g->withheld_sectors, &unaligned,
			   &stage);
	g->unaligned_sectors += unaligned;
	if (ret)
		return say(why, ret, "cannot tell which new sectors were free "
			   "when the snapshot was taken (%s: %s)", stage,
			   strerror(-ret));
	return 0;
}

/* Pin, record and append; on failure say why (the caller rolls back). */
static int hand_over(struct storage *s, const struct sf_ranges *usable,
		     bool *recorded_now, size_t *appended, bool spare,
		     char *why)
{
	int ret;

	*appended = 0;
	if (!s->recorded) {
		ret = state_record(&s->id, s->path, s->file_dev, s->ino);
		if (ret)
			return say(why, ret, "cannot record it in %s: %s",
				   state_dir(), state_strerror(ret));
		s->recorded = *recorded_now = true;
	}
	/*
	 * The kernel will write into these blocks: nobody may move them.
	 * While sf_grow() lifted the flag, no other user could reach them
	 * either: the file is ours, mode 0600, one link, in directories only
	 * root can write (storage_open()), so nobody else can open, write,
	 * punch, read or re-link it.
	 */
	ret = sf_pin(s->f);
	if (ret)
		return explain_sf_error(s, ret, why);
	if (spare) {	/* ready, recorded and pinned: given later */
		struct blk_snap_image_info *info;
		unsigned int count;

		/*
		 * No append can fail here if the snapshot was destroyed during
		 * the growth: ask, so that the caller takes the record back
		 * instead of leaving a pinned file of a dead snapshot.
		 */
		ret = bsc_collect_images(s->ctl, &s->id, &info, &count);
		if (ret == -ENODEV)	/* not taken yet: it exists */
			return 0;
		if (ret)
			return say(why, ret, "the snapshot is gone: %s",
				   strerror(-ret));
		free(info);
		return 0;
	}
	/*
	 * From here on the kernel may hold these blocks: the growth must
	 * never be undone again.  A kill before the append only strands
	 * them, pinned.
	 */
	ret = end_growth(s, why);
	if (ret)
		return ret;
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
static int keep_withheld(struct storage *s, bool *recorded_now, char *why)
{
	int ret;

	if (!s->recorded) {
		ret = state_record(&s->id, s->path, s->file_dev, s->ino);
		if (ret)
			return say(why, ret, "none of the new sectors was free "
				   "when the snapshot was taken, and the file "
				   "that keeps them cannot be recorded in %s: %s",
				   state_dir(), state_strerror(ret));
		s->recorded = *recorded_now = true;
	}
	ret = sf_pin(s->f);
	if (ret)
		return say(why, ret, "none of the new sectors was free when "
			   "the snapshot was taken, and the file that keeps "
			   "them cannot be made immutable: %s", strerror(-ret));
	return 0;
}

static int no_aligned_block(const struct storage *s, const struct growth *g,
			    char *why)
{
	return say(why, -ENOSPC, "the growth holds no aligned %u KiB block "
		   "the kernel can use (%" PRIu64 " sectors lost to "
		   "alignment): add more, at least %u KiB",
		   sf_align(s->f) / 1024, g->unaligned_sectors,
		   2 * sf_align(s->f) / 1024);
}

static int grow(struct storage *s, uint64_t bytes, struct growth *g,
		struct sf_ranges *spare, char *why)
{
	struct sf_ranges new = SF_RANGES_INIT, usable = SF_RANGES_INIT;
	bool was_pinned, recorded_now = false, spare_ready = false;
	size_t appended = 0;
	struct take_view view;
	int ret;

	memset(g, 0, sizeof(*g));
	ret = sf_size(s->f, &g->old_size);
	if (ret)
		return say_errno(why, ret);
	ret = find_take_view(s, &view, why);
	if (!ret)
		ret = check_stacking(s, why);
	if (ret)
		return ret;
	was_pinned = sf_is_pinned(s->f) > 0;
	/* Until ended, a killed growth is undone at the next open. */
	ret = state_growth_begin(&s->id, s->file_dev, s->ino, g->old_size);
	if (ret) {
		say(why, ret, "the growth cannot be recorded in %s: %s",
		    state_dir(), state_strerror(ret));
		state_drop_if_unused(&s->id);	/* as at out: below */
		return ret;
	}

	ret = sf_grow(s->f, bytes, &new);
	if (ret == -EFBIG && bytes <= UINT64_MAX - g->old_size &&
	    g->old_size + bytes > sf_file_size_limit()) {
		say(why, ret, "growing it to %" PRIu64 " bytes would pass this "
		    "process's file size limit (ulimit -f: %" PRIu64 " bytes): "
		    "nothing was changed; raise the limit or grow by less",
		    g->old_size + bytes, sf_file_size_limit());
		goto out;
	} else if (ret) {
		explain_sf_error(s, ret, why);
		/* sf_grow() re-pins whatever happens, or tries to. */
		if (was_pinned && sf_is_pinned(s->f) == 0)
			say_unpinned(why, 0);
		goto out;
	}
	g->unaligned_sectors = new.wasted_sectors;
	/*
	 * Nothing whole and aligned to give: that is not the take-time
	 * check's doing, and a file that gives nothing is not kept
	 * (issue 13 item 4).
	 */
	if (!new.count) {
		ret = no_aligned_block(s, g, why);
		roll_back(s, g->old_size, was_pinned, false, &new, why);
		goto out;
	}
	ret = usable_part(s, &view, &new, &usable, g, why);
	/* All free at take time, but in pieces too small to align. */
	if (!ret && !usable.count && !g->withheld_sectors) {
		ret = no_aligned_block(s, g, why);
		roll_back(s, g->old_size, was_pinned, false, &new, why);
		goto out;
	}
	/*
	 * Nothing was free at take time: keep the growth, and the file and
	 * its record even if this process created it, so that those blocks
	 * stay out of the next growth; give nothing.
	 */
	if (!ret && !usable.count) {
		ret = keep_withheld(s, &recorded_now, why);
		if (ret)	/* removed again by storage_close() if ours */
			roll_back(s, g->old_size, was_pinned, recorded_now,
				  &new, why);
		else
			s->keep = true;
		goto out;
	}
	if (!ret)
		ret = hand_over(s, &usable, &recorded_now, &appended, !!spare,
				why);
	if (ret && !appended)
		roll_back(s, g->old_size, was_pinned, recorded_now, &new,
			  why);
	if (!ret && spare) {
		s->keep = true;	/* holds sectors the kernel will get */
		sf_ranges_free(spare);
		*spare = usable;
		sf_ranges_init(&usable);
		spare_ready = true;	/* its record ends when it is given */
		goto out;
	}
	if (!ret || appended) {
		s->appended = true;
		for (size_t i = 0; i < appended; i++)
			g->given_sectors += usable.r[i].sector_count;
	}
out:
	/*
	 * Undone, kept as withheld, or (hand_over()) ended before the
	 * append: nothing left for a later open to undo.
	 */
	if (!spare_ready)
		state_growth_end(&s->id, s->file_dev, s->ino);
	/*
	 * A 'destroy' that ran during the growth forgot the snapshot's
	 * directory, which the growth's records then made again: a failed
	 * growth that leaves nothing recorded leaves no directory either.
	 */
	if (ret && !appended && !s->keep) {
		state_drop_if_unused(&s->id);
		if (snapshot_gone(s->ctl, &s->id)) {
			char uuid[BSC_UUID_LEN + 1], first[WHY_LEN];

			bsc_uuid_format(&s->id, uuid);
			snprintf(first, sizeof(first), "%s", why);
			say(why, ret, "snapshot %s was destroyed while this "
			    "command grew the file: nothing was given to it "
			    "(%s)", uuid, first);
		}
	}
	sf_size(s->f, &g->new_size);
	sf_ranges_free(&new);
	sf_ranges_free(&usable);
	return ret;
}

int storage_grow(struct storage *s, uint64_t bytes, struct growth *g,
		 char *why)
{
	return grow(s, bytes, g, NULL, why);
}

int storage_prepare_spare(struct storage *s, uint64_t bytes,
			  struct growth *g, struct sf_ranges *spare, char *why)
{
	return grow(s, bytes, g, spare, why);
}

int storage_give_spare(struct storage *s, struct sf_ranges *spare,
		       uint64_t *given_sectors, char *why)
{
	size_t appended = 0;
	int ret;

	*given_sectors = 0;
	ret = end_growth(s, why);
	if (ret) {	/* undone by the next open: never given */
		sf_ranges_free(spare);
		return ret;
	}
	ret = bsc_append_storage(s->ctl, &s->id, s->dev, spare->r,
				 spare->count, &appended);
	for (size_t i = 0; i < appended; i++)
		*given_sectors += spare->r[i].sector_count;
	if (appended)
		s->appended = true;
	/* What the kernel refused stays in the file, unused, pinned. */
	sf_ranges_free(spare);
	if (ret)
		return say(why, ret, "the snapshot refused the spare storage: "
			   "%s", strerror(-ret));
	return 0;
}

bool storage_on_snapshot(const struct storage *s)
{
	struct blk_snap_image_info *info;
	uint64_t start, sectors;
	unsigned int count;
	dev_t whole = 0, *origs;
	bool on = false;

	if (bsc_collect_images(s->ctl, &s->id, &info, &count))
		return false;
	if (device_partition(s->dev, &whole, &start, &sectors))
		whole = 0;
	origs = calloc(count ? count : 1, sizeof(*origs));
	/* Cannot tell: keep a spare, which is safe either way. */
	if (!origs) {
		free(info);
		return true;
	}
	for (unsigned int i = 0; i < count; i++) {
		origs[i] = bsc_dev_t(info[i].orig_dev_id);
		on = on || origs[i] == s->dev || (whole && origs[i] == whole);
	}
	if (!on)
		on = stacked_on_origs(s->dev, origs, count);
	free(origs);
	free(info);
	return on;
}

int storage_release(struct storage *s, char *why)
{
	int ret = sf_unpin(s->f);

	if (ret)
		return explain_sf_error(s, ret, why);
	ret = state_unrecord(&s->id, s->path);
	if (ret)
		return say(why, ret, "cannot update %s: %s", state_dir(),
			   state_strerror(ret));
	s->recorded = false;
	return 0;
}

int storage_remove(struct storage *s)
{
	struct stat a, b;

	/* Only the very file we hold, not one put in its place. */
	if (fstat(sf_fd(s->f), &a) < 0 ||
	    fstatat(s->dirfd, s->base, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return -ESTALE;
	sf_unpin(s->f);
	return unlinkat(s->dirfd, s->base, 0) < 0 ? -errno : 0;
}

void storage_close(struct storage *s)
{
	if (!s->f)
		return;
	if (s->created && !s->appended && !s->keep)
		storage_remove(s);
	sf_close(s->f);
	s->f = NULL;
	if (s->dirfd >= 0)
		close(s->dirfd);
	s->dirfd = -1;
}

static const char *file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFLNK:	return "a symbolic link";
	case S_IFDIR:	return "a directory";
	case S_IFIFO:	return "a FIFO";
	case S_IFSOCK:	return "a socket";
	case S_IFCHR:	return "a character device";
	case S_IFBLK:	return "a block device";
	default:	return "not a regular file";
	}
}

/*
 * Is what @base in @dirfd names now still the file @rec recorded? Looked
 * at without opening it (O_PATH), before any lock or file-system check:
 * whatever else is there now is not ours to unpin, and no lock another
 * user holds on it may hold up destroy. -ESTALE if it is not.
 */
static int same_as_recorded(int dirfd, const char *base,
			    const struct state_file *rec, char *why)
{
	struct stat st;
	int fd = openat(dirfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return say(why, -ENOENT, "no such file: moved or deleted "
			   "since add");
	if (fd < 0)
		return say_errno(why, -errno);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return say_errno(why, -errno);
	}
	close(fd);
	if (!S_ISREG(st.st_mode))
		return say(why, -ESTALE, "is now %s, not the file recorded at "
			   "add: left as it is", file_kind(st.st_mode));
	if (st.st_dev != rec->dev || st.st_ino != rec->ino)
		return say(why, -ESTALE, "is now another file (device %u:%u "
			   "inode %llu), not the one recorded at add: left as "
			   "it is", major(st.st_dev), minor(st.st_dev),
			   (unsigned long long)st.st_ino);
	return 0;
}

int storage_release_path(const struct state_file *rec, char *why)
{
	const struct timespec pause = { 0, RELEASE_RETRY_NS };
	struct storage s = { .dirfd = -1 };
	char dir[PATH_MAX];
	struct stat st;
	int ret = secure_split(rec->path, dir, sizeof(dir), &s.base);

	if (ret)
		return say(why, ret, "not an absolute path");
	/* No symbolic link anywhere: the names may have been swapped. */
	s.dirfd = secure_open_dir(dir, false, "directory", why);
	if (s.dirfd < 0)
		return s.dirfd;
	ret = same_as_recorded(s.dirfd, s.base, rec, why);
	if (ret) {
		close(s.dirfd);
		return ret;
	}
	ret = -EBUSY;
	for (int i = 0; i < RELEASE_RETRIES && ret == -EBUSY; i++) {
		ret = sf_openat(s.dirfd, s.base, false, NULL, &s.f);
		if (ret == -EBUSY)
			nanosleep(&pause, NULL);
	}
	/* Replaced since it was looked at: say what is there now. */
	if (ret == -ELOOP || ret == -ENOENT || ret == -EINVAL) {
		ret = same_as_recorded(s.dirfd, s.base, rec, why);
		if (!ret)
			ret = say(why, -EAGAIN, "changed while it was being "
				  "opened: run destroy again");
	} else if (ret) {
		explain_sf_error(&s, ret, why);
	}
	if (ret) {
		close(s.dirfd);
		return ret;
	}
	if (fstat(sf_fd(s.f), &st) < 0) {
		ret = say_errno(why, -errno);
	} else if (st.st_dev != rec->dev || st.st_ino != rec->ino) {
		ret = say(why, -ESTALE, "is now another file (device %u:%u "
			  "inode %llu), not the one recorded at add: left as "
			  "it is", major(st.st_dev), minor(st.st_dev),
			  (unsigned long long)st.st_ino);
	} else {
		ret = sf_unpin(s.f);
		if (ret)
			explain_sf_error(&s, ret, why);
	}
	sf_close(s.f);
	close(s.dirfd);
	return ret;
}
