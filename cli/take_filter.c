// SPDX-License-Identifier: GPL-2.0
/* Keep only storage sectors that were free at take time (take_filter.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <linux/loop.h>

#include "devices.h"
#include "state.h"
#include "take_filter.h"

/* What the child reports first: its result, and where it failed. */
struct child_status {
	int32_t err;
	int32_t stage;
	uint64_t count;		/* ranges that follow */
};

static const char *const stages[] = {
	"fork", "private mount namespace", "device node", "loop device",
	"mount point", "mount", "GETFSMAP", "report",
};
enum {
	ST_FORK, ST_UNSHARE, ST_NODE, ST_LOOP, ST_MKDIR, ST_MOUNT, ST_FSMAP,
	ST_PIPE
};

/* The part of the image a partition's file system is on. */
struct image_part {
	uint64_t start, sectors;	/* sectors 0: all of it */
};

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The /dev node if udev/devtmpfs made it, else our own in @dir. */
static int image_node(dev_t image, const char *dir, char *node, size_t len)
{
	struct stat st;

	image_path(image, node, len);
	if (stat(node, &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == image)
		return 0;
	snprintf(node, len, "%s/image", dir);
	return mknod(node, S_IFBLK | 0600, image) < 0 ? -errno : 0;
}

static const char *mount_options(const char *fs_name, const char **type)
{
	if (!strcmp(fs_name, "xfs")) {
		*type = "xfs";
		return "norecovery,nouuid";
	}
	/* ext2/3/4 share a magic; the ext4 driver mounts all three. */
	*type = "ext4";
	return "noload";
}

/*
 * A read-only loop device over @part of the image @node, in @node; it
 * goes away with its last user (our descriptor, then the mount).
 */
static int loop_over(char *node, size_t len, const char *dir,
		     const struct image_part *part, int *loop_fd)
{
	struct loop_config cfg = { 0 };
	int ctl, img, fd = -1, ret = 0;
	char loop[PATH_MAX];
	struct stat st;

	img = open(node, O_RDONLY | O_CLOEXEC);
	if (img < 0)
		return -errno;
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		ret = -errno;
		goto out;
	}
	cfg.fd = (uint32_t)img;
	cfg.info.lo_offset = part->start << 9;
	cfg.info.lo_sizelimit = part->sectors << 9;
	cfg.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
	/* Another process may take the free device first: ask again. */
	for (int tries = 0; tries < 16; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);

		if (n < 0) {
			ret = -errno;
			break;
		}
		snprintf(loop, sizeof(loop), "/dev/loop%d", n);
		if (stat(loop, &st) < 0 || !S_ISBLK(st.st_mode)) {
			snprintf(loop, sizeof(loop), "%s/loop", dir);
			unlink(loop);
			if (mknod(loop, S_IFBLK | 0600, makedev(7, n)) < 0) {
				ret = -errno;
				break;
			}
		}
		fd = open(loop, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
			ret = 0;
			break;
		}
		ret = -errno;
		close(fd);
		fd = -1;
		if (ret != -EBUSY)
			break;
	}
	if (!ret) {
		snprintf(node, len, "%s", loop);
		*loop_fd = fd;
	}
	close(ctl);
out:
	close(img);
	return ret;
}

/* Runs in the child: mount, GETFSMAP, report through @out. */
static int child_in_use(dev_t image, const struct image_part *part,
			const char *fs_name, const char *dir,
			struct sf_ranges *in_use, int *stage)
{
	char node[PATH_MAX], mnt[PATH_MAX];
	const char *type, *opts = mount_options(fs_name, &type);
	int ret, loop_fd = -1;

	*stage = ST_UNSHARE;
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	*stage = ST_NODE;
	ret = image_node(image, dir, node, sizeof(node));
	if (ret)
		return ret;
	if (part->sectors) {
		*stage = ST_LOOP;
		ret = loop_over(node, sizeof(node), dir, part, &loop_fd);
		if (ret)
			return ret;
	}
	*stage = ST_MKDIR;
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	if (mkdir(mnt, 0700) < 0)
		return -errno;
	*stage = ST_MOUNT;
	if (mount(node, mnt, type, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  opts) < 0)
		return -errno;
	*stage = ST_FSMAP;
	ret = sf_fsmap_in_use(mnt, in_use);
	umount2(mnt, MNT_DETACH);
	if (loop_fd >= 0)
		close(loop_fd);
	return ret;
}

static void child_main(int out, dev_t image, const struct image_part *part,
		       const char *fs_name, const char *dir)
{
	struct sf_ranges in_use = SF_RANGES_INIT;
	struct child_status st = { 0 };
	int stage = ST_PIPE;

	st.err = child_in_use(image, part, fs_name, dir, &in_use, &stage);
	st.stage = stage;
	st.count = st.err ? 0 : in_use.count;
	if (write_all(out, &st, sizeof(st)) == 0 && st.count)
		write_all(out, in_use.r, in_use.count * sizeof(*in_use.r));
	_exit(0);
}

static int read_in_use(int in, struct sf_ranges *in_use, int *stage)
{
	struct child_status st;
	struct blk_snap_block_range r;
	int ret = read_all(in, &st, sizeof(st));

	*stage = ST_PIPE;
	if (ret)
		return ret;
	if (st.err) {
		*stage = st.stage >= 0 && st.stage <= ST_PIPE ? st.stage : ST_PIPE;
		return st.err;
	}
	for (uint64_t i = 0; i < st.count && !ret; i++) {
		ret = read_all(in, &r, sizeof(r));
		if (!ret)
			ret = sf_ranges_append(in_use, r.sector_offset,
					       r.sector_count);
	}
	return ret;
}

static int in_use_at_take(dev_t image, const struct image_part *part,
			  const char *fs_name, const char *dir,
			  struct sf_ranges *in_use, int *stage)
{
	int pipefd[2], ret, status;
	pid_t pid;

	*stage = ST_FORK;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return ret;
	}
	if (pid == 0) {
		close(pipefd[0]);
		child_main(pipefd[1], image, part, fs_name, dir);
	}
	close(pipefd[1]);
	ret = read_in_use(pipefd[0], in_use, stage);
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return ret;
}

int free_at_take(dev_t image, uint64_t part_start, uint64_t part_sectors,
		 const char *fs_name, const struct sf_ranges *ranges,
		 uint64_t align_sectors, struct sf_ranges *out,
		 uint64_t *withheld, uint64_t *unaligned, const char **stage)
{
	const struct image_part part = { part_start, part_sectors };
	struct sf_ranges in_use = SF_RANGES_INIT;
	char dir[PATH_MAX] = "", path[PATH_MAX + 16];
	int ret, st = ST_MKDIR;

	ret = state_temp_dir("take-check", dir, sizeof(dir));
	if (!ret)
		ret = in_use_at_take(image, &part, fs_name, dir, &in_use, &st);
	if (!ret) {
		st = ST_FSMAP;
		ret = sf_filter_free(ranges, &in_use, align_sectors, out,
				     withheld, unaligned);
	}
	if (ret)
		*stage = stages[st];
	sf_ranges_free(&in_use);
	if (dir[0] && strstr(dir, "take-check.")) {
		snprintf(path, sizeof(path), "%s/mnt", dir);
		rmdir(path);
		snprintf(path, sizeof(path), "%s/image", dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/loop", dir);
		unlink(path);
		rmdir(dir);
	}
	return ret;
}
