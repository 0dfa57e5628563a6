// SPDX-License-Identifier: GPL-2.0
/* Keep only storage sectors that were free at take time (take_filter.h). */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <linux/loop.h>

#include "blksnap_ctl.h"
#include "common.h"
#include "devices.h"
#include "secure.h"
#include "stacked.h"
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

static void child_main(int out, pid_t parent, dev_t image,
		       const struct image_part *part, const char *fs_name,
		       const char *dir)
{
	struct sf_ranges in_use = SF_RANGES_INIT;
	struct child_status st = { 0 };
	int stage = ST_PIPE;

	/*
	 * Killed with us, even by SIGKILL, rather than walking a large file
	 * system for nobody (the mount goes with its namespace); gone
	 * already if we died before this.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);

	st.err = child_in_use(image, part, fs_name, dir, &in_use, &stage);
	st.stage = stage;
	st.count = st.err ? 0 : in_use.count;
	if (write_all_fd(out, &st, sizeof(st)) == 0 && st.count)
		write_all_fd(out, in_use.r, in_use.count * sizeof(*in_use.r));
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
	pid_t pid, parent = getpid();
	char why[WHY_LEN];

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
		child_main(pipefd[1], parent, image, part, fs_name, dir);
	}
	close(pipefd[1]);
	/* The child at work: a signal now is one 'take' must defer. */
	fault_point("mapping", why);
	ret = read_in_use(pipefd[0], in_use, stage);
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return ret;
}

/* Mount @v's image in a child, GETFSMAP: the in-use map, read now. */
static int compute_map(const struct take_view *v, const char *fs_name,
		       struct sf_ranges *in_use, const char **stage)
{
	const struct image_part part = { v->start, v->sectors };
	char dir[PATH_MAX] = "", path[PATH_MAX + 16];
	int ret, st = ST_MKDIR;

	ret = state_temp_dir("take-check", dir, sizeof(dir));
	if (!ret)
		ret = in_use_at_take(v->image, &part, fs_name, dir, in_use, &st);
	if (ret)
		*stage = stages[st];
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

static void map_key(const struct blk_snap_uuid *id, dev_t dev,
		    const struct take_view *v, struct sf_takemap_key *k)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->snapshot, id->b, sizeof(k->snapshot));
	k->dev_major = major(dev);
	k->dev_minor = minor(dev);
	k->image_major = major(v->image);
	k->image_minor = minor(v->image);
	k->part_start = v->start;
	k->part_sectors = v->sectors;
}

/* Save a map just read; 0, or -errno (state_strerror()). */
static int save_map(const struct blk_snap_uuid *id, dev_t dev,
		    const struct take_view *v, const struct sf_ranges *in_use)
{
	struct sf_takemap_key k;

	map_key(id, dev, v, &k);
	return state_takemap_save(id, dev, &k, in_use);
}

static const char *map_problem(int err)
{
	switch (err) {
	case -ENOMSG:
		return "not a take-time map";
	case -EPROTONOSUPPORT:
		return "written by another version of blksnap-storage";
	case -ENODATA:
		return "cut short";
	case -EBADMSG:
	case -EFBIG:
		return "damaged";
	case -ESTALE:
		return "the map of another snapshot, device or image";
	}
	return NULL;
}

/*
 * The saved map of @dev: 0, -ENOENT (none: an older blksnap-storage took
 * the snapshot, or nothing was saved for this device), or another error
 * that was said in one line; the caller then reads the image.
 */
static int load_map(const struct blk_snap_uuid *id, dev_t dev,
		    const struct take_view *v, struct sf_ranges *in_use)
{
	char file[PATH_MAX + 64] = "";
	struct sf_takemap_key k;
	const char *problem;
	size_t len = 0;
	void *buf;
	int ret;

	ret = state_takemap_load(id, dev, &buf, &len, file, sizeof(file));
	if (ret == -ENOENT)
		return ret;
	if (!ret) {
		map_key(id, dev, v, &k);
		ret = sf_takemap_decode(buf, len, &k, in_use);
		free(buf);
	}
	if (!ret || ret == -ENOMEM)
		return ret;
	/*
	 * One line: the file, what is wrong with it, and what happens (the
	 * caller reads the image, and saves the map in its place if it can:
	 * nothing to remove by hand).
	 */
	problem = map_problem(ret);
	if (problem)
		report(file, "%s: which blocks were free at take time is read "
		       "from the snapshot image instead", problem);
	else	/* state_strerror() names the file */
		report(NULL, "%s: which blocks were free at take time is read "
		       "from the snapshot image instead", state_strerror(ret));
	return ret;
}

int free_at_take(const struct blk_snap_uuid *id, dev_t dev,
		 const struct take_view *v, const char *fs_name,
		 const struct sf_ranges *ranges, uint64_t align_sectors,
		 struct sf_ranges *out, uint64_t *withheld,
		 uint64_t *unaligned, const char **stage)
{
	struct sf_ranges in_use = SF_RANGES_INIT;
	int ret = load_map(id, dev, v, &in_use);

	if (ret == -ENOMEM) {
		*stage = "loading the saved map";
		return ret;
	}
	/*
	 * None saved, or one that cannot be trusted: read it from the
	 * image, once, and save it for the next growths. Saving is a
	 * saving of time only: its failure costs the next growth a read.
	 */
	if (ret) {
		ret = compute_map(v, fs_name, &in_use, stage);
		if (!ret)
			save_map(id, dev, v, &in_use);
	}
	if (!ret) {
		ret = sf_filter_free(ranges, &in_use, align_sectors, out,
				     withheld, unaligned);
		if (ret)
			*stage = "filter";
	}
	sf_ranges_free(&in_use);
	return ret;
}

int take_view_find(int ctl, const struct blk_snap_uuid *id, dev_t dev,
		   struct take_view *v, char *why)
{
	struct blk_snap_image_info *info;
	uint64_t start = 0, sectors = 0;
	char name[PATH_MAX];
	unsigned int count;
	dev_t whole = 0, *origs;
	bool taken = false;
	int ret = bsc_collect_images(ctl, id, &info, &count);

	memset(v, 0, sizeof(*v));
	if (ret == -ENODEV)
		return 0;
	if (ret == -ESRCH)
		return say_why(why, ret, "the snapshot no longer exists");
	if (ret)
		return say_why(why, ret, "cannot list the snapshot's images: %s",
			   strerror(-ret));
	/* Before the take the images are listed without a device number. */
	for (unsigned int i = 0; i < count; i++)
		taken = taken || bsc_dev_t(info[i].image_dev_id);
	if (!taken) {
		free(info);
		return 0;
	}
	device_name(dev, name, sizeof(name));
	ret = device_partition(dev, &whole, &start, &sectors);
	if (ret == -ENOENT)
		ret = 0;
	else if (ret)
		ret = say_why(why, ret, "cannot read where partition %s lies on "
			  "its disk: %s", name, strerror(-ret));
	for (unsigned int i = 0; !ret && i < count; i++)
		if (bsc_dev_t(info[i].orig_dev_id) == dev)
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
		if (stacked_on_origs(dev, origs, count))
			ret = say_why(why, -EXDEV, "it is on %s, stacked on a disk "
				  "of the snapshot, which is already taken: "
				  "which of its blocks were free at take time "
				  "cannot be checked. Add the storage before "
				  "'take', or put it on a file system outside "
				  "the snapshot", name);
		free(origs);
	} else if (!ret && !v->image) {
		ret = say_why(why, -ENOMEM, "%s", strerror(ENOMEM));
	}
	free(info);
	return ret;
}

/* The file system of the recorded file @rec, through its directory. */
static int recorded_fs(const struct state_file *rec, const char **fs_name,
		       char *why)
{
	char dir[PATH_MAX];
	const char *base;
	unsigned long magic;
	struct stat st;
	int fd, ret = secure_split(rec->path, dir, sizeof(dir), &base);

	if (ret)
		return say_why(why, ret, "%s: not an absolute path", rec->path);
	/* No symbolic link anywhere: the path is as 'add' resolved it. */
	fd = secure_open_dir(dir, false, "directory", why);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		ret = say_why(why, -errno, "%s: %s", dir, strerror(errno));
	else if (st.st_dev != rec->dev)
		ret = say_why(why, -ESTALE, "%s: now on another file system than "
			  "at 'add'", dir);
	else
		ret = sf_check_fs(fd, fs_name, &magic);
	if (ret == -EOPNOTSUPP)
		say_why(why, ret, "%s: not on a file system that can hold "
		    "storage", dir);
	close(fd);
	return ret;
}

/*
 * Read the map of the device of @rec from the image, and save it; @big
 * set when it is not saved for its size (the state directory's limits).
 */
static int save_one(int ctl, const struct blk_snap_uuid *id,
		    const struct state_file *rec, char *why, bool *big)
{
	struct sf_ranges in_use = SF_RANGES_INIT;
	const char *fs_name = NULL, *stage = "";
	struct take_view v;
	int ret = take_view_find(ctl, id, rec->dev, &v, why);

	/* Stacked: growths on it are refused; not a device of it: none. */
	if (ret == -EXDEV || (!ret && !v.image))
		return 0;
	if (!ret)
		ret = recorded_fs(rec, &fs_name, why);
	if (!ret) {
		ret = compute_map(&v, fs_name, &in_use, &stage);
		if (ret)
			say_why(why, ret, "reading the image (%s): %s", stage,
			    strerror(-ret));
	}
	if (!ret) {
		ret = save_map(id, rec->dev, &v, &in_use);
		*big = ret == -EFBIG || ret == -ENOSPC;
		if (*big)
			say_why(why, ret, "%s", state_strerror(ret));
		else if (ret)
			say_why(why, ret, "saving it in %s: %s", state_dir(),
			    state_strerror(ret));
	}
	sf_ranges_free(&in_use);
	return ret;
}

static int save_all(int ctl, const struct blk_snap_uuid *id)
{
	struct state_file *files;
	char why[WHY_LEN], name[PATH_MAX];
	size_t count;
	int ret, failed = 0;
	bool big;

	ret = state_files(id, &files, &count);
	if (ret) {
		report(NULL, "which blocks were free at take time was not "
		       "saved (%s): growths of storage on a device of the "
		       "snapshot read it from the snapshot image",
		       state_strerror(ret));
		return ret;
	}
	for (size_t i = 0; i < count; i++) {
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen = seen || files[j].dev == files[i].dev;
		if (seen)
			continue;
		why[0] = '\0';
		big = false;
		ret = save_one(ctl, id, &files[i], why, &big);
		if (!ret)
			continue;
		failed = ret;
		device_name(files[i].dev, name, sizeof(name));
		if (big)	/* the same next time: every growth reads */
			report(name, "which of its blocks were free at take "
			       "time is not saved: %s; each growth of storage "
			       "on it reads it from the snapshot image "
			       "instead", why);
		else
			report(name, "which of its blocks were free at take "
			       "time was not saved (%s): the next growth of "
			       "storage on it reads it from the snapshot "
			       "image", why);
	}
	state_free_files(files, count);
	return failed;
}

int take_maps_save(int ctl, const struct blk_snap_uuid *id, int *deferred)
{
	const struct timespec now = { 0, 0 };
	struct sigaction ignore, pipe_was;
	sigset_t held, was, ours;
	int ret, sig;

	/*
	 * The snapshot is taken: ended by a signal now, the command would
	 * say it was not.  The mount child gets this mask and SIGPIPE
	 * ignored too: the saving goes to its end.
	 */
	sigemptyset(&held);
	sigaddset(&held, SIGINT);
	sigaddset(&held, SIGTERM);
	sigaddset(&held, SIGHUP);
	sigaddset(&held, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &held, &was);
	memset(&ignore, 0, sizeof(ignore));
	ignore.sa_handler = SIG_IGN;
	sigemptyset(&ignore.sa_mask);
	sigaction(SIGPIPE, &ignore, &pipe_was);
	ret = save_all(ctl, id);
	if (deferred) {
		/* Only what we held back: the caller's own stay pending. */
		*deferred = 0;
		sigemptyset(&ours);
		for (int n = 1; n < NSIG; n++)
			if (sigismember(&held, n) == 1 &&
			    sigismember(&was, n) != 1)
				sigaddset(&ours, n);
		while ((sig = sigtimedwait(&ours, NULL, &now)) > 0)
			if (!*deferred)
				*deferred = sig;
	}
	sigaction(SIGPIPE, &pipe_was, NULL);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return ret;
}
