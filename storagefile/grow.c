// SPDX-License-Identifier: GPL-2.0
/*
 * Growing a storage file and reading its layout as sector ranges.
 * A growth is all-or-nothing: on failure the file keeps its size, pin state
 * and extents, and the handle's record of handed-out ranges is unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include "sf_internal.h"

static uint64_t align_sectors(const struct sf_file *f)
{
	return f->align >> SF_SECTOR_SHIFT;
}

/* The file's full current layout, aligned; records a refused flag. */
static int current_ranges(struct sf_file *f, struct sf_ranges *out)
{
	struct fiemap_extent *ext = NULL;
	size_t n = 0;
	int ret;

	f->refused_flag = 0;
	ret = sf_fiemap_read(f->fd, &ext, &n);
	if (!ret)
		ret = sf_extents_to_ranges(ext, n, f->align, out,
					   &f->refused_flag);
	free(ext);
	return ret;
}

int sf_all_ranges(struct sf_file *f, struct sf_ranges *out)
{
	return current_ranges(f, out);
}

int sf_claim_existing(struct sf_file *f, struct sf_ranges *out)
{
	struct sf_ranges now = SF_RANGES_INIT, fresh = SF_RANGES_INIT;
	int ret = current_ranges(f, &now);

	if (!ret)
		ret = sf_new_ranges(&now, &f->given, align_sectors(f), &fresh);
	if (!ret && out)
		sf_ranges_move(out, &fresh);
	sf_ranges_free(&now);
	sf_ranges_free(&fresh);
	return ret;
}

/*
 * Fail early rather than let fallocate() fill the filesystem and then give
 * everything back: other users of the filesystem would see a full disk for
 * a moment.  Root's reserved blocks are left alone on purpose.
 */
static int check_free_space(int fd, uint64_t bytes)
{
	struct statvfs sv;

	if (fstatvfs(fd, &sv) < 0)
		return -errno;
	if (sv.f_frsize && bytes / sv.f_frsize +
	    !!(bytes % sv.f_frsize) > sv.f_bavail)
		return -ENOSPC;
	return 0;
}

uint64_t sf_file_size_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)rl.rlim_cur;
}

/* The read-only fd cannot fallocate; an immutable file cannot be opened
 * for writing at all, so this is done only after unpinning. */
static int reopen_writable(int fd)
{
	char path[64];
	int wfd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	return wfd < 0 ? -errno : wfd;
}

/* Allocate and map; compute the new ranges and the new "given" set but
 * commit nothing. */
static int allocate_and_map(struct sf_file *f, int wfd, uint64_t old_size,
			    uint64_t bytes, struct sf_ranges *fresh,
			    struct sf_ranges *given_after)
{
	struct sf_ranges before = SF_RANGES_INIT, now = SF_RANGES_INIT;
	uint64_t held, grown;
	int ret;

	/* The sectors the file holds before, to tell what the growth got. */
	ret = current_ranges(f, &before);
	held = before.usable_sectors + before.wasted_sectors;
	sf_ranges_free(&before);
	if (ret)
		return ret;
	if (fallocate(wfd, 0, (off_t)old_size, (off_t)bytes) < 0 ||
	    fsync(wfd) < 0)
		return -errno;

	ret = current_ranges(f, &now);
	if (!ret)
		ret = sf_ranges_subtract(&now, &f->given, align_sectors(f),
					 fresh);
	/*
	 * What the growth got but cannot give, because its extents are not
	 * aligned: the extents' own cut-offs count as well as the
	 * subtraction's (issue 13 item 4: a 1 KiB-block ext4 reported none).
	 */
	if (!ret) {
		grown = now.usable_sectors + now.wasted_sectors - held;
		fresh->wasted_sectors = grown > fresh->usable_sectors ?
					grown - fresh->usable_sectors : 0;
	}
	if (!ret)
		ret = sf_ranges_union(given_after, &f->given);
	if (!ret)
		ret = sf_ranges_union(given_after, fresh);
	if (!ret && f->grow_fault)
		ret = f->grow_fault(f->grow_fault_arg);
	sf_ranges_free(&now);
	return ret;
}

/* Give back whatever fallocate() got; nothing useful to do on error. */
static void roll_back(int wfd, uint64_t old_size)
{
	if (ftruncate(wfd, (off_t)old_size) == 0)
		(void)fsync(wfd);
}

int sf_forget(struct sf_file *f, const struct sf_ranges *ranges)
{
	struct sf_ranges kept = SF_RANGES_INIT;
	int ret = sf_ranges_subtract(&f->given, ranges, 1, &kept);

	if (!ret)
		sf_ranges_move(&f->given, &kept);
	return ret;
}

int sf_grow(struct sf_file *f, uint64_t bytes, struct sf_ranges *new_ranges)
{
	struct sf_ranges fresh = SF_RANGES_INIT, given_after = SF_RANGES_INIT;
	uint64_t old_size;
	int pinned, wfd, ret;

	if (!bytes)
		return -EINVAL;
	ret = sf_size(f, &old_size);
	if (!ret && (bytes > (uint64_t)INT64_MAX - old_size ||
		     old_size + bytes > sf_file_size_limit()))
		ret = -EFBIG;
	if (!ret)
		ret = check_free_space(f->fd, bytes);
	if (ret)
		return ret;

	pinned = sf_is_pinned(f);
	if (pinned < 0)
		return pinned;
	if (pinned && (ret = sf_unpin(f)))
		return ret;

	wfd = reopen_writable(f->fd);
	if (wfd < 0)
		ret = wfd;
	else
		ret = allocate_and_map(f, wfd, old_size, bytes, &fresh,
				       &given_after);
	if (ret && wfd >= 0)
		roll_back(wfd, old_size);

	if (pinned) {
		int pin_ret = sf_pin(f);

		if (pin_ret && !ret) {
			ret = pin_ret;
			roll_back(wfd, old_size);
		}
	}
	if (wfd >= 0)
		close(wfd);

	if (ret) {
		sf_ranges_free(&fresh);
		sf_ranges_free(&given_after);
		return ret;
	}
	sf_ranges_move(&f->given, &given_after);
	sf_ranges_move(new_ranges, &fresh);
	return 0;
}
