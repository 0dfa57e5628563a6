/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A storage file of one snapshot: open it, grow it and hand the growth to
 * the kernel, all or nothing.  Shared by add, watch and snapshot.
 *
 * Failures return -errno and put the cause, without the file name, in the
 * caller's @why buffer; the caller reports "<cmd>: <file>: <why>".
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
	ino_t ino;		/* the file's identity, as recorded */
	dev_t file_dev;
	struct sf_file *f;
	dev_t dev;		/* the device its sectors are on */
	const char *fs_name;
	bool created;		/* this process created the file */
	bool recorded;		/* listed in the snapshot's state */
	bool appended;		/* the kernel holds some of its sectors */
	bool keep;		/* holds blocks withheld from the kernel */
};

struct growth {
	uint64_t old_size, new_size;	/* bytes */
	uint64_t given_sectors;		/* appended to the snapshot */
	uint64_t withheld_sectors;	/* in use at take time: not given */
	uint64_t unaligned_sectors;	/* cut off by alignment */
	bool take_checked;		/* the free-at-take check ran */
};

/* Room for two paths and the sentence around them. */
#define WHY_LEN (2 * PATH_MAX + 512)

/*
 * Refuse @path unless it is safe storage for root (see secure.h): its
 * directory and every one above it writable by root only (sticky ones
 * aside), and, if the file exists, a regular file of ours, mode 0600,
 * one link.  storage_open() checks again; commands call this first so
 * that a bad path is reported before anything else is done.
 */
int storage_check_path(const char *path, char *why);

/*
 * Open (creating if missing, mode 0600, O_EXCL|O_NOFOLLOW) @path as
 * storage of snapshot @id, after the checks of storage_check_path().  An existing
 * file must be empty or already this snapshot's storage: its current space
 * is never handed out again, only growth is.  A growth of it that a killed
 * process left unfinished is undone first, and the file pinned again
 * (state_growth_begin()); that repair is said on stderr, in one line.
 */
int storage_open(struct storage *s, int ctl, const struct blk_snap_uuid *id,
		 const char *path, char *why);

/*
 * Grow the file by @bytes and append the new sectors to the snapshot;
 * pins the file first.  On failure the file is as before (unless the
 * kernel took part of the ranges, which the message then says).
 *
 * When the file's device is in the taken snapshot, only sectors free at
 * take time are given; the rest stays allocated to the file, unused, so
 * the next growth gets other blocks.  If none was free this returns 0
 * with g->given_sectors == 0: the caller may grow again.
 */
int storage_grow(struct storage *s, uint64_t bytes, struct growth *g,
		 char *why);

/*
 * A growth made ahead of need (issue 15): like storage_grow(), but the
 * usable sectors are only recorded and pinned, and returned in @spare
 * instead of being appended. storage_give_spare() appends them later,
 * with no write to any file system: the way to give storage at once
 * when the file lives on a snapshotted device, whose writers may be
 * waiting for storage, metadata writes of a growth among them.
 * storage_give_spare() empties @spare; sectors the kernel refuses stay
 * in the file, unused.
 */
int storage_prepare_spare(struct storage *s, uint64_t bytes,
			  struct growth *g, struct sf_ranges *spare, char *why);
int storage_give_spare(struct storage *s, struct sf_ranges *spare,
		       uint64_t *given_sectors, char *why);

/* The file's device is a device of the snapshot, or on one. */
bool storage_on_snapshot(const struct storage *s);

/* Unpin and forget the file; only once the snapshot is destroyed. */
int storage_release(struct storage *s, char *why);

/* Drop the handle; a file created here that the kernel never got is removed. */
void storage_close(struct storage *s);

/*
 * Delete the file through its directory descriptor, only if its name
 * still leads to our inode.  Return: 0 or -errno.
 */
int storage_remove(struct storage *s);

/*
 * Unpin a recorded file after its snapshot is gone: its path is walked
 * without following symbolic links and must still lead to the recorded
 * device and inode, which is checked before the file is opened or locked:
 * else nothing is done and -ESTALE is returned (another file, a symbolic
 * link, a FIFO...; @why says which).  A watcher may hold the file's lock
 * for a moment after the snapshot disappeared, so a busy file is retried
 * for a few seconds.  -ENOENT if it is missing.
 */
struct state_file;
int storage_release_path(const struct state_file *rec, char *why);

#endif
