// SPDX-License-Identifier: GPL-2.0
/* A snapshot's storage at one path: open, grow + hand to the kernel (storage.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <linux/fs.h>

#include "blksnap_ctl.h"
#include "common.h"
#include "devices.h"
#include "secure.h"
#include "stacked.h"
#include "state.h"
#include "storage.h"
#include "take_filter.h"

int say_why(char *why, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_LEN, fmt, ap);
	va_end(ap);
	return ret;
}

static int say_errno(char *why, int ret)
{
	return say_why(why, ret, "%s", strerror(-ret));
}

/* The filesystem of the storage's directory must be one FIEMAP tells truth on. */
static int check_directory_fs(int dirfd, const char **fs_name, char *why)
{
	unsigned long magic = 0;
	int ret;

	ret = sf_check_fs(dirfd, fs_name, &magic);
	if (ret == -EOPNOTSUPP && *fs_name && strcmp(*fs_name, "unknown"))
		return say_why(why, ret, "%s cannot hold difference storage "
			   "(extents are not physical sectors)", *fs_name);
	if (ret == -EOPNOTSUPP)
		return say_why(why, ret, "filesystem type 0x%lx cannot hold "
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
		return say_why(why, -EINVAL, "a newline in the path: the state "
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

static int explain_sf_error(const struct sf_file *f, int ret, char *why)
{
	uint32_t flag = f ? sf_refused_flag(f) : 0;

	switch (ret) {
	case -EBUSY:
		return say_why(why, ret, "in use by another blksnap-storage "
			   "process (an add or watch of it still running?): "
			   "wait for it to finish");
	case -ENODEV:
		return say_why(why, ret, "its device is not a block device known "
			   "to /sys/dev/block");
	case -ENOSPC:
		return say_why(why, ret, "no space left on the filesystem");
	case -EFBIG:
		return say_why(why, ret, "the growth would pass the largest file "
			   "size its file system allows");
	case -EAGAIN:
		return say_why(why, ret, "the file's location on disk is not "
			   "decided yet (%s extent); try again",
			   sf_extent_flag_name(flag));
	case -EXDEV:
		return say_why(why, ret, "is an XFS realtime file: its blocks are "
			   "on the realtime device, not on the device its "
			   "sector numbers would be given for. Put it in a "
			   "directory without the rtinherit flag "
			   "(xfs_io -c 'chattr -t' DIR)");
	case -EOPNOTSUPP:
		if (flag)
			return say_why(why, ret, "has a %s extent: its data is not "
				   "plain sectors of the device",
				   sf_extent_flag_name(flag));
		return say_why(why, ret, "FIEMAP not supported here");
	}
	return say_errno(why, ret);
}

/*
 * Every storage file carries this mark from before it holds any space:
 * only root (CAP_SYS_ADMIN) can set a trusted.* attribute, so a file that
 * has it was made by blksnap-storage, whatever state directory or mount
 * namespace it was made through. The boot it was made in says whether a
 * reboot came between.
 */
#define STORAGE_MARK		"trusted.blksnap-storage"
#define BOOT_ID_FILE		"/proc/sys/kernel/random/boot_id"
#define BOOT_ID_LEN		36

struct mark {
	char boot[BOOT_ID_LEN + 1];
	char snapshot[BSC_UUID_LEN + 1];
};

static void this_boot(char *boot)
{
	FILE *f = fopen(BOOT_ID_FILE, "re");

	strcpy(boot, "unknown");
	if (f) {
		if (!fgets(boot, BOOT_ID_LEN + 1, f) ||
		    strlen(boot) != BOOT_ID_LEN)
			strcpy(boot, "unknown");
		fclose(f);
	}
}

static int set_mark(const struct storage *s, const struct sf_file *f,
		    char *why)
{
	char value[BOOT_ID_LEN + BSC_UUID_LEN + 32], boot[BOOT_ID_LEN + 1];
	char uuid[BSC_UUID_LEN + 1];
	int n;

	this_boot(boot);
	bsc_uuid_format(&s->id, uuid);
	n = snprintf(value, sizeof(value), "boot=%s snapshot=%s", boot, uuid);
	if (fsetxattr(sf_fd(f), STORAGE_MARK, value, (size_t)n, XATTR_CREATE))
		return say_why(why, -errno, "cannot mark the new storage file as "
			   "blksnap-storage's (%s): %s", STORAGE_MARK,
			   strerror(errno));
	return 0;
}

/* 1 with @m filled, 0 for a file without the mark, or -errno. */
static int get_mark(int fd, struct mark *m)
{
	char value[BOOT_ID_LEN + BSC_UUID_LEN + 32];
	ssize_t n = fgetxattr(fd, STORAGE_MARK, value, sizeof(value) - 1);

	if (n < 0)
		return errno == ENODATA || errno == ENOTSUP ? 0 : -errno;
	value[n] = '\0';
	memset(m, 0, sizeof(*m));
	if (sscanf(value, "boot=%36s snapshot=%36s", m->boot,
		   m->snapshot) != 2)
		strcpy(m->snapshot, "(unreadable mark)");
	return 1;
}

/*
 * Does the kernel hold the file (APPEND_FILE)? It then denies every open
 * for writing with ETXTBSY; so does a program being run, which a file of
 * mode 0600 is not. 1, 0 or -errno: -EPERM for an immutable file, which
 * hides the answer (root can make a held file immutable).
 */
static int held_by_fd(int rfd)
{
	char proc[64];
	int fd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", rfd);
	fd = open(proc, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno == ETXTBSY ? 1 : -errno;
}

static int held_by_kernel(const struct sf_file *f)
{
	return held_by_fd(sf_fd(f));
}

/* Delete the name only while it still leads to the file @f. */
static int unlink_if_same(int dirfd, const char *base, const struct sf_file *f)
{
	struct stat a, b;

	if (fstat(sf_fd(f), &a) < 0 ||
	    fstatat(dirfd, base, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return -ESTALE;
	return unlinkat(dirfd, base, 0) < 0 ? -errno : 0;
}

/*
 * A file of ours that no snapshot holds (left by a crash, a reboot, a
 * killed command or a destroy): its blocks are nobody's, it goes, with
 * one line. Called with its lock held: no other blksnap-storage is
 * between giving it to the kernel and naming it.
 */
static int remove_leftover(struct storage *s, struct sf_file *f,
			   const struct mark *m, char *why)
{
	char boot[BOOT_ID_LEN + 1];
	int ret = unlink_if_same(s->dirfd, s->base, f);

	if (ret)
		return say_why(why, ret, "blksnap storage that no snapshot holds "
			   "any more (of snapshot %s), and it cannot be "
			   "removed: %s", m->snapshot, strerror(-ret));
	this_boot(boot);
	report(s->path, "removed: storage of snapshot %s that no snapshot "
	       "holds any more (%s)", m->snapshot,
	       strcmp(boot, m->boot) ? "made before a reboot" :
	       "its snapshot was destroyed");
	return 0;
}

/*
 * Test seam for the signal and failure tests (docs/tests.md):
 * BLKSNAP_STORAGE_FAULT=STEP:ACTION makes the first growth step named STEP
 * of this process raise the signal ACTION (KILL, HUP, PIPE, XFSZ, QUIT,
 * TERM, INT) or, for ACTION "fail" at a step before the kernel got the
 * file (created, marked, allocated, checked, give), fail with EIO. The
 * steps, in order: created, marked, allocated, checked, give, given,
 * named, recorded; and "mapping", while the take-time map is read from
 * the image (take_filter.c), the mount child started.  Only root's
 * environment reaches a root tool.
 */
int fault_point(const char *step, char *why)
{
	static const struct { const char *name; int sig; } sigs[] = {
		{ "KILL", SIGKILL }, { "HUP", SIGHUP }, { "PIPE", SIGPIPE },
		{ "XFSZ", SIGXFSZ }, { "QUIT", SIGQUIT }, { "TERM", SIGTERM },
		{ "INT", SIGINT },
	};
	static bool fired;
	const char *spec = getenv("BLKSNAP_STORAGE_FAULT"), *action;
	size_t n = strlen(step);

	if (fired || !spec || strncmp(spec, step, n) || spec[n] != ':')
		return 0;
	fired = true;
	action = spec + n + 1;
	if (!strcmp(action, "fail"))
		return say_why(why, -EIO, "failed at step '%s' "
			   "(BLKSNAP_STORAGE_FAULT)", step);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcmp(action, sigs[i].name))
			raise(sigs[i].sig);
	return 0;
}

/* The storage this path holds, as far as the records tell. */
uint64_t storage_size(const struct storage *s)
{
	return s->named_bytes + s->unnamed_bytes + s->spare_bytes;
}

/*
 * A file at the path already: storage of this snapshot the kernel holds
 * (growths then go to unnamed files), an empty file (replaced by the
 * first growth), or a leftover of ours (removed); anything else is
 * refused, with no advice to free what a live snapshot may hold.
 */
static int examine_existing(struct storage *s, struct sf_file *f,
			    const struct stat *st, char *why)
{
	char text[BSC_UUID_LEN + 1];
	struct state_file rec = { 0 };
	struct blk_snap_uuid owner;
	struct mark m;
	int ret, held, marked;

	held = held_by_kernel(f);
	if (held == -EPERM)
		return say_why(why, -EEXIST, "is immutable or append-only, so "
			   "whether a snapshot holds it cannot be told: choose "
			   "another path (a "
			   "file an older blksnap-storage left pinned is freed "
			   "with 'chattr -i' once no snapshot exists)");
	marked = held < 0 ? held : get_mark(sf_fd(f), &m);
	if (marked < 0)
		return say_why(why, marked, "cannot tell whether a snapshot holds "
			   "it: %s", strerror(-marked));
	ret = state_owner(st->st_dev, st->st_ino, &s->id, &owner, &rec);
	if (ret && ret != -ENOENT)
		return say_why(why, ret, "%s", state_strerror(ret));
	if (!ret) {
		bsc_uuid_format(&owner, text);
		if (memcmp(&owner, &s->id, sizeof(owner))) {
			if (snapshot_gone(s->ctl, &owner))
				return say_why(why, -EBUSY, "still recorded as "
					   "storage of snapshot %s, which no "
					   "longer exists: 'blksnap-storage "
					   "destroy %s' releases it", text, text);
			return say_why(why, -EBUSY, "already storage of snapshot "
				   "%s: choose another path", text);
		}
		/*
		 * 'destroy' drops the snapshot, then forgets its files: one
		 * that did so between our look at the record and now.
		 */
		if (snapshot_gone(s->ctl, &s->id))
			return say_why(why, -ESRCH, "left as it is: snapshot %s was "
				   "destroyed while this command started", text);
		if (!held)
			return say_why(why, -ESTALE, "recorded as storage of "
				   "snapshot %s, but the kernel does not hold "
				   "it (given by an older blksnap-storage?): "
				   "add storage at another path", text);
		s->recorded = true;
		s->file_dev = st->st_dev;
		s->ino = st->st_ino;
		s->named_bytes = (uint64_t)st->st_size;
		return 1;	/* keep @f: the named storage */
	}
	bsc_uuid_format(&s->id, text);
	/* Named, then killed before its record was written: ours again. */
	if (held && marked && !strcmp(m.snapshot, text)) {
		ret = state_record(&s->id, s->path, st->st_dev, st->st_ino);
		if (ret)
			return say_why(why, ret, "storage of this snapshot that the "
				   "kernel holds, and it cannot be recorded in "
				   "%s: %s", state_dir(), state_strerror(ret));
		report(s->path, "recorded again: storage of this snapshot "
		       "that a killed blksnap-storage left unrecorded");
		s->recorded = true;
		s->file_dev = st->st_dev;
		s->ino = st->st_ino;
		s->named_bytes = (uint64_t)st->st_size;
		return 1;
	}
	if (held && marked)
		return say_why(why, -EBUSY, "held by the kernel as storage of "
			   "snapshot %s, not recorded in %s (given through "
			   "another state directory or mount namespace): "
			   "choose another path", m.snapshot, state_dir());
	if (held)
		return say_why(why, -EBUSY, "in use by the kernel (a swap file, or "
			   "storage of a live snapshot not recorded in %s, "
			   "given through another state directory or mount "
			   "namespace): choose another path", state_dir());
	/* Not for a snapshot that is gone: the add fails anyway. */
	if (marked && snapshot_gone(s->ctl, &s->id))
		return say_why(why, -ESRCH, "left as it is: snapshot %s was "
			   "destroyed while this command started", text);
	if (marked) {
		struct blk_snap_uuid was;

		if (bsc_uuid_parse(m.snapshot, &was))
			return say_why(why, -EEXIST, "has a blksnap-storage mark "
				   "that cannot be read: choose another path");
		/*
		 * Its snapshot lives but does not hold it: a copy (restored
		 * with its attributes?), not a leftover of ours.
		 */
		if (!snapshot_gone(s->ctl, &was))
			return say_why(why, -EEXIST, "a copy of storage of snapshot "
				   "%s, which exists but does not hold this "
				   "file: choose another path", m.snapshot);
		return remove_leftover(s, f, &m, why);
	}
	if (st->st_size == 0) {
		s->replace_empty = true;
		s->empty_dev = st->st_dev;
		s->empty_ino = st->st_ino;
		return 0;
	}
	return say_why(why, -EEXIST, "exists and is not storage of this snapshot "
		   "(it holds data blksnap-storage did not write): choose "
		   "another path");
}

static int open_existing(struct storage *s, char *why)
{
	struct sf_file *f = NULL;
	struct stat st;
	bool exists;
	int ret = check_existing(s->dirfd, s->base, &exists, &st, why);

	if (ret || !exists)
		return ret;
	/* Locked: no other blksnap-storage is growing or naming it now. */
	ret = sf_openat(s->dirfd, s->base, false, NULL, &f);
	if (ret == -ENOENT)	/* gone meanwhile: a new one is made */
		return 0;
	if (ret)
		return explain_sf_error(NULL, ret, why);
	/* The file we hold is the one we checked. */
	if (fstat(sf_fd(f), &st) < 0)
		ret = say_errno(why, -errno);
	else
		ret = secure_check_file(&st, why);
	if (!ret)
		ret = examine_existing(s, f, &st, why);
	if (ret == 1) {
		s->f = f;
		return 0;
	}
	sf_close(f);
	return ret;
}

int storage_open(struct storage *s, int ctl, const struct blk_snap_uuid *id,
		 const char *path, char *why)
{
	struct stat st;
	int ret;

	memset(s, 0, sizeof(*s));
	s->dirfd = -1;
	s->ctl = ctl;
	s->id = *id;
	ret = open_directory(path, s->path, sizeof(s->path), &s->base,
			     &s->dirfd, why);
	if (!ret)
		ret = check_directory_fs(s->dirfd, &s->fs_name, why);
	/* Records that cannot be written: say so before giving anything. */
	if (!ret) {
		struct state_file *files;
		size_t count;

		ret = state_files(&s->id, &files, &count);
		if (ret)
			say_why(why, ret, "%s", state_strerror(ret));
		else
			state_free_files(files, count);
	}
	if (!ret && fstat(s->dirfd, &st) < 0)
		ret = say_errno(why, -errno);
	if (!ret) {
		s->dev = st.st_dev;	/* new files are on its file system */
		ret = sf_align_bytes(s->dev, &s->align);
		if (ret)
			explain_sf_error(NULL, ret == -ENOENT ? -ENODEV : ret,
					 why);
	}
	if (!ret)
		ret = open_existing(s, why);
	if (!ret && s->f &&
	    state_unnamed_get(&s->id, s->file_dev, s->ino, &s->unnamed_bytes))
		s->unnamed_bytes = 0;	/* only sizes said depend on it */
	if (ret)
		storage_close(s);
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
		return say_why(why, ret, "cannot list the snapshot's devices: %s",
			   strerror(-ret));
	origs = calloc(count ? count : 1, sizeof(*origs));
	if (!origs) {
		ret = say_why(why, -ENOMEM, "%s", strerror(ENOMEM));
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

/* Keep only the sectors free at take time when the device is snapshotted. */
static int usable_part(struct storage *s, const struct sf_file *seg,
		       const struct take_view *view, struct sf_ranges *new,
		       struct sf_ranges *usable, struct growth *g, char *why)
{
	uint64_t align = sf_align(seg) >> SF_SECTOR_SHIFT, unaligned = 0;
	const char *stage = "";
	int ret;

	if (!view->image)
		return sf_ranges_union(usable, new);
	g->take_checked = true;
	ret = free_at_take(&s->id, s->dev, view, s->fs_name, new, align,
			   usable, &g->withheld_sectors, &unaligned, &stage);
	g->unaligned_sectors += unaligned;
	if (ret)
		return say_why(why, ret, "cannot tell which new sectors were free "
			   "when the snapshot was taken (%s: %s)", stage,
			   strerror(-ret));
	return 0;
}

static int no_aligned_block(const struct sf_file *seg, const struct growth *g,
			    char *why)
{
	return say_why(why, -ENOSPC, "the growth holds no aligned %u KiB block "
		   "the kernel can use (%" PRIu64 " sectors lost to "
		   "alignment): add more, at least %u KiB",
		   sf_align(seg) / 1024, g->unaligned_sectors,
		   2 * sf_align(seg) / 1024);
}

/*
 * Hand @seg to the kernel with @ranges of its blocks; with none, the
 * kernel only holds it, so that its blocks (in use at take time) do not
 * come back with the next growth. From then on the kernel holds the file
 * until the snapshot's last storage I/O is over, whatever happens to this
 * process.
 */
static int give(struct storage *s, const struct sf_file *seg,
		const struct sf_ranges *ranges, char *why)
{
	int fd, ret = fault_point("give", why);

	if (ret)
		return ret;
	fd = sf_reopen_readonly(seg);
	if (fd < 0)
		return say_why(why, fd, "cannot open the new storage file "
			   "read-only for the kernel: %s", strerror(-fd));
	ret = bsc_append_file(s->ctl, &s->id, fd, ranges->r, ranges->count);
	close(fd);
	switch (ret) {
	case 0:
		s->appended = true;
		fault_point("given", why);
		return 0;
	case -ENOTTY:
		return say_why(why, ret, "the loaded blksnap module cannot hold "
			   "storage files (it has no APPEND_FILE: older than "
			   "this blksnap-storage); load the module of the same "
			   "release");
	case -ESRCH:
		return say_why(why, ret, "the snapshot no longer exists");
	case -E2BIG:
		return say_why(why, ret, "the growth came in %zu pieces, more "
			   "than the kernel takes for one file (%u): grow by "
			   "less", ranges->count, BSC_MAX_RANGES_PER_CALL);
	}
	return say_why(why, ret, "the snapshot refused the storage: %s",
		   strerror(-ret));
}

static uint64_t total_sectors(const struct sf_ranges *r)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < r->count; i++)
		sum += r->r[i].sector_count;
	return sum;
}

/* Storage in an unnamed file, counted for the sizes reported. */
static void count_unnamed(struct storage *s, uint64_t bytes)
{
	s->unnamed_bytes += bytes;
	if (!s->recorded)
		return;
	/* Informative only: a failure changes nothing. */
	state_unnamed_set(&s->id, s->file_dev, s->ino, s->unnamed_bytes);
	/* A destroy that forgot the snapshot meanwhile: forget this too. */
	if (snapshot_gone(s->ctl, &s->id))
		state_forget(&s->id);
}

/*
 * The first storage at the path gets its name once the kernel holds it:
 * a process killed before leaves no name behind, only an unnamed file
 * that the kernel holds or the file system frees. An empty file found
 * there is replaced.
 */
static int name_first(struct storage *s, struct sf_file **seg,
		      uint64_t bytes, char *why)
{
	char uuid[BSC_UUID_LEN + 1];
	struct stat st;
	int ret;

	if (s->replace_empty &&
	    !fstatat(s->dirfd, s->base, &st, AT_SYMLINK_NOFOLLOW) &&
	    st.st_dev == s->empty_dev && st.st_ino == s->empty_ino &&
	    S_ISREG(st.st_mode) && st.st_size == 0)
		unlinkat(s->dirfd, s->base, 0);
	ret = sf_linkat(*seg, s->dirfd, s->base);
	if (!ret && fstat(sf_fd(*seg), &st) < 0)
		ret = -errno;
	if (!ret)
		fault_point("named", why);
	if (ret) {
		report(s->path, "given to the snapshot, but not named (%s): "
		       "the kernel holds it, unnamed, until the snapshot is "
		       "destroyed", ret == -EEXIST ? "another file took the "
		       "name meanwhile" : strerror(-ret));
		count_unnamed(s, bytes);
		return 0;
	}
	s->f = *seg;
	*seg = NULL;
	s->created = !s->replace_empty;	/* the path was free before */
	s->file_dev = st.st_dev;
	s->ino = st.st_ino;
	s->named_bytes = bytes;
	ret = state_record(&s->id, s->path, s->file_dev, s->ino);
	if (ret) {
		report(s->path, "given to the snapshot and named, but not "
		       "recorded in %s (%s): 'list' will not show it",
		       state_dir(), state_strerror(ret));
		return 0;
	}
	s->recorded = true;
	fault_point("recorded", why);
	/*
	 * A destroy that ran meanwhile forgot the snapshot before the record
	 * was written, and let the file go: take the record back.
	 */
	if (snapshot_gone(s->ctl, &s->id)) {
		state_unrecord(&s->id, s->path);
		state_drop_if_unused(&s->id);
		s->recorded = false;
		bsc_uuid_format(&s->id, uuid);
		return say_why(why, -ESRCH, "snapshot %s was destroyed while this "
			   "command gave it storage: the file is left, no "
			   "snapshot's (the next add at the path removes it)",
			   uuid);
	}
	return 0;
}

/* The first file at the path gets its name; later ones stay unnamed. */
static int after_give(struct storage *s, struct sf_file **seg,
		      uint64_t bytes, char *why)
{
	if (!s->f)
		return name_first(s, seg, bytes, why);
	count_unnamed(s, bytes);
	return 0;
}

static int grow(struct storage *s, uint64_t bytes, struct growth *g,
		struct sf_ranges *spare, char *why)
{
	struct sf_ranges new = SF_RANGES_INIT, usable = SF_RANGES_INIT;
	struct sf_file *seg = NULL;
	struct take_view view;
	bool given = false;
	int ret;

	memset(g, 0, sizeof(*g));
	g->old_size = storage_size(s);
	ret = take_view_find(s->ctl, &s->id, s->dev, &view, why);
	if (!ret)
		ret = check_stacking(s, why);
	if (ret)
		goto out;
	/* fallocate() past it would end this process with SIGXFSZ. */
	if (bytes > sf_file_size_limit()) {
		ret = say_why(why, -EFBIG, "a growth of %" PRIu64 " bytes would "
			  "pass this process's file size limit (ulimit -f: %"
			  PRIu64 " bytes): nothing was changed; raise the "
			  "limit or grow by less", bytes, sf_file_size_limit());
		goto out;
	}
	/* Each growth is a new file: the kernel's files cannot grow. */
	ret = sf_openat_unnamed(s->dirfd, &seg);
	if (ret) {
		seg = NULL;
		if (ret == -EOPNOTSUPP)
			say_why(why, ret, "its file system cannot make unnamed "
			    "files (O_TMPFILE)");
		else
			explain_sf_error(NULL, ret, why);
		goto out;
	}
	ret = fault_point("created", why);
	if (!ret)
		ret = set_mark(s, seg, why);
	if (!ret)
		ret = fault_point("marked", why);
	if (!ret) {
		ret = sf_grow(seg, bytes, &new);
		if (ret)
			explain_sf_error(seg, ret, why);
	}
	if (!ret)
		ret = fault_point("allocated", why);
	if (ret)
		goto out;
	g->unaligned_sectors = new.wasted_sectors;
	/*
	 * Nothing whole and aligned to give: that is not the take-time
	 * check's doing, and such a growth is not kept (issue 13 item 4).
	 */
	if (!new.count) {
		ret = no_aligned_block(seg, g, why);
		goto out;
	}
	ret = usable_part(s, seg, &view, &new, &usable, g, why);
	/* All free at take time, but in pieces too small to align. */
	if (!ret && !usable.count && !g->withheld_sectors)
		ret = no_aligned_block(seg, g, why);
	if (!ret)
		ret = fault_point("checked", why);
	if (ret)
		goto out;
	/*
	 * A spare is given later with no write to any file system. One with
	 * nothing usable is held at once, so that the next growth gets
	 * other blocks.
	 */
	if (spare && usable.count) {
		sf_close(s->spare_f);
		s->spare_f = seg;
		seg = NULL;
		s->spare_bytes = bytes;
		sf_ranges_free(spare);
		*spare = usable;
		sf_ranges_init(&usable);
		goto out;
	}
	ret = give(s, seg, &usable, why);
	if (ret)
		goto out;
	g->given_sectors = total_sectors(&usable);
	given = true;
	ret = after_give(s, &seg, bytes, why);
out:
	/* Not given: an unnamed file, which the file system frees now. */
	sf_close(seg);
	if (ret && !given && snapshot_gone(s->ctl, &s->id)) {
		char uuid[BSC_UUID_LEN + 1], first[WHY_LEN];

		bsc_uuid_format(&s->id, uuid);
		snprintf(first, sizeof(first), "%s", why);
		say_why(why, ret, "snapshot %s was destroyed while this command "
		    "grew its storage: nothing was given to it (%s)", uuid,
		    first);
	}
	g->new_size = storage_size(s);
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
	int ret = 0;

	*given_sectors = 0;
	if (s->spare_f) {
		ret = give(s, s->spare_f, spare, why);
		if (!ret) {
			uint64_t bytes = s->spare_bytes;

			/* Named after the append: nothing waits for it. */
			*given_sectors = total_sectors(spare);
			s->spare_bytes = 0;
			ret = after_give(s, &s->spare_f, bytes, why);
		}
		/* Refused: the file system frees it. */
		sf_close(s->spare_f);
		s->spare_f = NULL;
		s->spare_bytes = 0;
	}
	sf_ranges_free(spare);
	return ret;
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

uint32_t storage_align(const struct storage *s)
{
	return s->align;
}

int storage_release(struct storage *s, char *why)
{
	int ret;

	if (!s->recorded)
		return 0;
	ret = state_unrecord(&s->id, s->path);
	if (ret)
		return say_why(why, ret, "cannot update %s: %s", state_dir(),
			   state_strerror(ret));
	s->recorded = false;
	return 0;
}

int storage_remove(struct storage *s)
{
	if (!s->f)
		return -ENOENT;
	return unlink_if_same(s->dirfd, s->base, s->f);
}

void storage_close(struct storage *s)
{
	sf_close(s->f);
	s->f = NULL;
	/* A spare never given: unnamed, freed by the file system. */
	sf_close(s->spare_f);
	s->spare_f = NULL;
	s->spare_bytes = 0;
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
		return say_why(why, -ENOENT, "no such file: moved or deleted "
			   "since add");
	if (fd < 0)
		return say_errno(why, -errno);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return say_errno(why, -errno);
	}
	close(fd);
	if (!S_ISREG(st.st_mode))
		return say_why(why, -ESTALE, "is now %s, not the file recorded at "
			   "add: left as it is", file_kind(st.st_mode));
	if (st.st_dev != rec->dev || st.st_ino != rec->ino)
		return say_why(why, -ESTALE, "is now another file (device %u:%u "
			   "inode %llu), not the one recorded at add: left as "
			   "it is", major(st.st_dev), minor(st.st_dev),
			   (unsigned long long)st.st_ino);
	return 0;
}

int storage_release_path(const struct state_file *rec, bool *immutable,
			 char *why)
{
	char dir[PATH_MAX];
	const char *base;
	struct stat st;
	int dirfd, fd, flags, ret = secure_split(rec->path, dir, sizeof(dir),
						&base);

	*immutable = false;
	if (ret)
		return say_why(why, ret, "not an absolute path");
	/* No symbolic link anywhere: the names may have been swapped. */
	dirfd = secure_open_dir(dir, false, "directory", why);
	if (dirfd < 0)
		return dirfd;
	ret = same_as_recorded(dirfd, base, rec, why);
	if (ret) {
		close(dirfd);
		return ret;
	}
	fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
	close(dirfd);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_dev != rec->dev || st.st_ino != rec->ino) {
		if (fd >= 0)
			close(fd);
		return say_why(why, -EAGAIN, "changed while it was looked at: "
			   "left as it is");
	}
	/*
	 * Its snapshot is destroyed, so the kernel holds it only for
	 * another one: a file with the recorded inode number, reused.
	 */
	ret = held_by_fd(fd);
	if (ret == 1) {
		close(fd);
		return say_why(why, -EBUSY, "is storage the kernel holds for "
			   "another snapshot (the recorded inode number was "
			   "reused): left as it is");
	}
	/* Pinned by a blksnap-storage before the kernel held its files. */
	if (!ioctl(fd, FS_IOC_GETFLAGS, &flags))
		*immutable = flags & FS_IMMUTABLE_FL;
	close(fd);
	return 0;
}
