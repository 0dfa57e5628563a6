// SPDX-License-Identifier: GPL-2.0
/* The storage file handle: open, lock, pin, close. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>

#include "sf_internal.h"

/* Open read-only, creating it if asked; *created says if we did. */
static int open_file(int dirfd, const char *path, bool create, bool *created)
{
	/* O_NONBLOCK: a FIFO put in its place must not hang us. */
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
			O_NONBLOCK);

	*created = false;
	if (fd >= 0 || errno != ENOENT || !create)
		return fd >= 0 ? fd : -errno;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return -errno;
	*created = true;
	return fd;
}

/* Everything that must hold before we hand out any sector of @fd. */
static int check_file(int fd, struct sf_file *f)
{
	struct fsxattr fsx;
	struct stat st;
	int ret;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	ret = sf_check_fs(fd, NULL, NULL);
	if (ret)
		return ret;
	/*
	 * An XFS realtime file's extents are on the realtime device, while
	 * FIEMAP's offsets would be taken as sectors of st_dev.
	 */
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx) == 0 &&
	    (fsx.fsx_xflags & FS_XFLAG_REALTIME))
		return -EXDEV;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;

	f->dev = st.st_dev;
	ret = sf_align_bytes(st.st_dev, &f->align);
	return ret == -ENOENT ? -ENODEV : ret;
}

int sf_open(const char *path, bool create, struct sf_file **out)
{
	return sf_openat(AT_FDCWD, path, create, NULL, out);
}

int sf_openat(int dirfd, const char *path, bool create, bool *was_created,
	      struct sf_file **out)
{
	struct sf_file *f;
	bool created;
	int fd, ret;

	if (was_created)
		*was_created = false;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	fd = open_file(dirfd, path, create, &created);
	if (fd < 0) {
		free(f);
		return fd;
	}

	ret = check_file(fd, f);
	if (ret) {
		/* Don't leave an empty file on, say, btrfs behind. */
		if (created)
			unlinkat(dirfd, path, 0);
		close(fd);
		free(f);
		return ret;
	}
	f->fd = fd;
	sf_ranges_init(&f->given);
	*out = f;
	if (was_created)
		*was_created = created;
	return 0;
}

int sf_openat_unnamed(int dirfd, struct sf_file **out)
{
	char proc[64];
	struct sf_file *f;
	int wfd, fd, ret;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	/* O_TMPFILE needs a writable descriptor; the handle keeps none. */
	wfd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (wfd < 0) {
		ret = -errno;
		free(f);
		return ret == -EISDIR ? -EOPNOTSUPP : ret;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", wfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC);
	ret = fd < 0 ? -errno : 0;
	close(wfd);
	if (!ret)
		ret = check_file(fd, f);
	if (ret) {
		if (fd >= 0)
			close(fd);
		free(f);
		return ret;
	}
	f->fd = fd;
	sf_ranges_init(&f->given);
	*out = f;
	return 0;
}

int sf_linkat(const struct sf_file *f, int dirfd, const char *name)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) < 0 ?
	       -errno : 0;
}

int sf_reopen_readonly(const struct sf_file *f)
{
	char proc[64];
	int fd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

void sf_close(struct sf_file *f)
{
	if (!f)
		return;
	close(f->fd);	/* drops the flock */
	sf_ranges_free(&f->given);
	free(f);
}

int sf_fd(const struct sf_file *f)
{
	return f->fd;
}

int sf_device(const struct sf_file *f, dev_t *dev)
{
	*dev = f->dev;
	return 0;
}

int sf_size(const struct sf_file *f, uint64_t *bytes)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return -errno;
	*bytes = (uint64_t)st.st_size;
	return 0;
}

uint32_t sf_align(const struct sf_file *f)
{
	return f->align;
}

uint32_t sf_refused_flag(const struct sf_file *f)
{
	return f->refused_flag;
}

void sf_set_grow_fault(struct sf_file *f, sf_grow_fault_fn fn, void *arg)
{
	f->grow_fault = fn;
	f->grow_fault_arg = arg;
}

/* FS_IOC_[GS]ETFLAGS take an int, whatever the macro's type says. */
static int get_flags(int fd, int *flags)
{
	return ioctl(fd, FS_IOC_GETFLAGS, flags) < 0 ? -errno : 0;
}

static int set_immutable(const struct sf_file *f, bool on)
{
	int flags, ret = get_flags(f->fd, &flags);

	if (ret)
		return ret;
	if (!!(flags & FS_IMMUTABLE_FL) == on)
		return 0;
	flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
	return ioctl(f->fd, FS_IOC_SETFLAGS, &flags) < 0 ? -errno : 0;
}

int sf_pin(struct sf_file *f)
{
	return set_immutable(f, true);
}

int sf_unpin(struct sf_file *f)
{
	return set_immutable(f, false);
}

int sf_is_pinned(const struct sf_file *f)
{
	int flags, ret = get_flags(f->fd, &flags);

	return ret ? ret : !!(flags & FS_IMMUTABLE_FL);
}
