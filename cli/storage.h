/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The storage of one snapshot at one path: open it, grow it and hand the
 * growth to the kernel, all or nothing.  Shared by add, watch and snapshot.
 *
 * The kernel holds every file it is given (APPEND_FILE): nobody can free,
 * move or write its blocks until the snapshot is destroyed, and a held
 * file cannot grow.  So each growth is a new unnamed file (O_TMPFILE) in
 * the path's directory, marked as ours (trusted.blksnap-storage),
 * allocated, checked, given to the kernel, and only then, if it is the
 * first at the path, named.  A process killed at any step leaves a file
 * the kernel holds or one the file system frees, and no name; a crash
 * leaves ordinary files, which the next command that meets one removes
 * with one line.
 *
 * Failures return -errno and put the cause, without the path, in the
 * caller's @why buffer; the caller reports "<cmd>: <path>: <why>".
 */
#ifndef BLKSNAP_CLI_STORAGE_H
#define BLKSNAP_CLI_STORAGE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "storagefile.h"

struct storage {
	int ctl;
	struct blk_snap_uuid id;
	char path[PATH_MAX];	/* absolute, as recorded in the state dir */
	const char *base;	/* its last component, in path */
	int dirfd;		/* its directory, opened without symlinks */
	struct sf_file *f;	/* the named file, locked; NULL until made */
	ino_t ino;		/* its identity, as recorded */
	dev_t file_dev;
	struct sf_file *spare_f;	/* a growth made ahead, not given yet */
	uint64_t named_bytes, unnamed_bytes, spare_bytes;
	dev_t dev;		/* the device its sectors are on */
	uint32_t align;		/* of the ranges given, bytes */
	const char *fs_name;
	bool replace_empty;	/* an empty file at the path, replaced */
	dev_t empty_dev;
	ino_t empty_ino;
	bool created;		/* this process named the file */
	bool recorded;		/* listed in the snapshot's state */
	bool appended;		/* the kernel holds storage of ours */
};

struct growth {
	uint64_t old_size, new_size;	/* bytes of storage at the path */
	uint64_t given_sectors;		/* appended to the snapshot */
	uint64_t withheld_sectors;	/* in use at take time: not given */
	uint64_t unaligned_sectors;	/* cut off by alignment */
	bool take_checked;		/* the free-at-take check ran */
};

/* Room for two paths and the sentence around them. */
#define WHY_LEN (2 * PATH_MAX + 512)

/* Format the reason into @why (WHY_LEN bytes); return @ret. */
int say_why(char *why, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Refuse @path unless it is safe storage for root (see secure.h): its
 * directory and every one above it writable by root only (sticky ones
 * aside), and, if the file exists, a regular file of ours, mode 0600,
 * one link.  storage_open() checks again; commands call this first so
 * that a bad path is reported before anything else is done.
 */
int storage_check_path(const char *path, char *why);

/*
 * Open @path as storage of snapshot @id, after the checks of
 * storage_check_path().  What may be there: nothing; an empty file
 * (replaced by the first growth); this snapshot's storage, which the
 * kernel holds (growths then go to unnamed files); or a file of ours no
 * snapshot holds any more (left by a crash, a reboot, a killed command or
 * a destroy), which is removed, said on stderr in one line.  Anything
 * else is refused.
 */
int storage_open(struct storage *s, int ctl, const struct blk_snap_uuid *id,
		 const char *path, char *why);

/*
 * Grow the storage by @bytes: a new file, whose blocks are handed to the
 * snapshot, and the kernel holds it.  A failure before the kernel got the
 * file leaves nothing; one after (the name or the record) is said in
 * @why or on stderr, and the kernel holds the file all the same.
 *
 * When the file's device is in the taken snapshot, only sectors free at
 * take time are given; the kernel holds the rest unused, so the next
 * growth gets other blocks.  If none was free this returns 0 with
 * g->given_sectors == 0: the caller may grow again.
 */
int storage_grow(struct storage *s, uint64_t bytes, struct growth *g,
		 char *why);

/*
 * A growth made ahead of need (issue 15): like storage_grow(), but the
 * file is kept unnamed and not given, its usable sectors returned in
 * @spare.  storage_give_spare() hands it to the kernel later, with no
 * write to any file system: the way to give storage at once when the
 * file lives on a snapshotted device, whose writers may be waiting for
 * storage.  storage_give_spare() empties @spare; a spare never given is
 * freed by the file system when the process ends.
 */
int storage_prepare_spare(struct storage *s, uint64_t bytes,
			  struct growth *g, struct sf_ranges *spare, char *why);
int storage_give_spare(struct storage *s, struct sf_ranges *spare,
		       uint64_t *given_sectors, char *why);

/* Bytes of storage at the path: the named file, later growths, a spare. */
uint64_t storage_size(const struct storage *s);

/* The alignment (bytes) of the ranges given: whole blocks of it count. */
uint32_t storage_align(const struct storage *s);

/* The file's device is a device of the snapshot, or on one. */
bool storage_on_snapshot(const struct storage *s);

/* Forget the named file; once the snapshot is destroyed. */
int storage_release(struct storage *s, char *why);

/* Drop the handles; a spare never given is freed by the file system. */
void storage_close(struct storage *s);

/*
 * Delete the named file through its directory descriptor, only if its
 * name still leads to our inode.  Return: 0 or -errno.
 */
int storage_remove(struct storage *s);

/*
 * Is a recorded file still at its path, once its snapshot is destroyed?
 * The path is walked without following symbolic links and must still
 * lead to the recorded device and inode: 0, with *@immutable set for a
 * file an older blksnap-storage pinned; -ESTALE if it leads elsewhere
 * (@why says what is there); -ENOENT if nothing is there.
 */
struct state_file;
int storage_release_path(const struct state_file *rec, bool *immutable,
			 char *why);

/*
 * The test seam BLKSNAP_STORAGE_FAULT=STEP:ACTION (docs/tests.md): at the
 * process's first step named @step, raise ACTION's signal, or return
 * -EIO with @why set for "fail"; else 0.
 */
int fault_point(const char *step, char *why);

#endif
