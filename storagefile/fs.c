// SPDX-License-Identifier: GPL-2.0
/*
 * Filesystem allow-list.  Only filesystems whose FIEMAP fe_physical is a
 * byte offset on the block device in st_dev can hold difference storage.
 * Others either have no such device (tmpfs, nfs, fuse, overlayfs), or map
 * extents onto several devices / logical addresses (btrfs), or may move
 * blocks behind our back.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/vfs.h>

#include "storagefile.h"

struct fs_magic {
	uint32_t magic;
	const char *name;
	bool allowed;
};

static const struct fs_magic fs_magics[] = {
	{ 0xEF53,     "ext4",      true },	/* also ext2 and ext3 */
	{ 0x58465342, "xfs",       true },
	{ 0x9123683E, "btrfs",     false },
	{ 0x01021994, "tmpfs",     false },
	{ 0x858458F6, "ramfs",     false },
	{ 0x794C7630, "overlayfs", false },
	{ 0x6969,     "nfs",       false },
	{ 0x65735546, "fuse",      false },
	{ 0xFF534D42, "cifs",      false },
	{ 0xFE534D42, "smb2",      false },
	{ 0x00C36400, "ceph",      false },
	{ 0x01021997, "9p",        false },
	{ 0x2FC12FC1, "zfs",       false },
	{ 0xCA451A4E, "bcachefs",  false },
	{ 0xF2F52010, "f2fs",      false },
	{ 0x4D44,     "vfat",      false },
	{ 0x2011BAB0, "exfat",     false },
	{ 0x5346544E, "ntfs",      false },
	{ 0x52654973, "reiserfs",  false },
	{ 0x3153464A, "jfs",       false },
	{ 0x3434,     "nilfs2",    false },
	{ 0x01161970, "gfs2",      false },
	{ 0x7461636F, "ocfs2",     false },
	{ 0x73717368, "squashfs",  false },
	{ 0xE0F5E1E2, "erofs",     false },
	{ 0x9660,     "iso9660",   false },
	{ 0x9FA0,     "proc",      false },
	{ 0x62656572, "sysfs",     false },
};

static const struct fs_magic *find_magic(unsigned long f_type)
{
	/* f_type is a signed long on 32-bit: compare the low 32 bits. */
	uint32_t magic = (uint32_t)f_type;

	for (size_t i = 0; i < sizeof(fs_magics) / sizeof(fs_magics[0]); i++)
		if (fs_magics[i].magic == magic)
			return &fs_magics[i];
	return NULL;
}

const char *sf_fs_name(unsigned long f_type)
{
	const struct fs_magic *m = find_magic(f_type);

	return m ? m->name : NULL;
}

bool sf_fs_allowed(unsigned long f_type)
{
	const struct fs_magic *m = find_magic(f_type);

	return m && m->allowed;
}

static int check_statfs(const struct statfs *st, const char **fsname,
			unsigned long *f_type)
{
	const char *name = sf_fs_name((unsigned long)st->f_type);

	if (fsname)
		*fsname = name ? name : "unknown";
	if (f_type)
		*f_type = (unsigned long)st->f_type;
	return sf_fs_allowed((unsigned long)st->f_type) ? 0 : -EOPNOTSUPP;
}

int sf_check_fs(int fd, const char **fsname, unsigned long *f_type)
{
	struct statfs st;

	if (fstatfs(fd, &st) < 0)
		return -errno;
	return check_statfs(&st, fsname, f_type);
}

int sf_check_path_fs(const char *path, const char **fsname,
		     unsigned long *f_type)
{
	char dir[PATH_MAX];
	struct statfs st;
	char *slash;

	if (statfs(path, &st) == 0)
		return check_statfs(&st, fsname, f_type);
	if (errno != ENOENT)
		return -errno;
	if (strlen(path) >= sizeof(dir))
		return -ENAMETOOLONG;

	/* Not created yet: the filesystem is its directory's. */
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (statfs(dir, &st) < 0)
		return -errno;
	return check_statfs(&st, fsname, f_type);
}
