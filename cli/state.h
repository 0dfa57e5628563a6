/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which storage files belong to which snapshot, so that `destroy` can unpin
 * them later from another process.
 *
 * Layout: $BLKSNAP_STATE_DIR (default /run/blksnap) / <uuid> / files, one
 * line per file: "MAJOR:MINOR INODE /ABSOLUTE/PATH", the identity the file
 * had at add.  Later commands act on a file only if its path, walked
 * without following symbolic links, still leads to that inode.
 *
 * The state directory must be a real directory that only root (or the
 * caller's euid) can write to, as must every directory above it; record
 * files must be regular files of ours, parsed strictly.  Anything else
 * fails with a sentence that state_report() prints.  /run is a tmpfs: after a reboot no snapshot
 * exists either, so the state vanishing with it is right.
 */
#ifndef BLKSNAP_CLI_STATE_H
#define BLKSNAP_CLI_STATE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/blksnap.h>

struct state_file {
	dev_t dev;
	ino_t ino;
	char *path;
};

#define STATE_DIR_DEFAULT	"/run/blksnap"
#define STATE_DIR_ENV		"BLKSNAP_STATE_DIR"

const char *state_dir(void);

int state_record(const struct blk_snap_uuid *id, const char *abs_path,
		 dev_t dev, ino_t ino);
int state_unrecord(const struct blk_snap_uuid *id, const char *abs_path);

/* The files of a snapshot; 0 with *count 0 if it has none recorded. */
int state_files(const struct blk_snap_uuid *id, struct state_file **files,
		size_t *count);
void state_free_files(struct state_file *files, size_t count);

/*
 * Report the failure @ret of the last state_*() call in one line (naming
 * the state file or directory and what to do) and return EXIT_RUNTIME.
 */
int state_report(int ret);

/* The sentence state_report() prints, for a caller's own message. */
const char *state_strerror(int ret);

/* Remove everything recorded about a snapshot (0 if nothing was). */
int state_forget(const struct blk_snap_uuid *id);

/*
 * Remove a snapshot's directory when it records nothing: no file and no
 * growth.  A growth that failed calls it, because its own record may have
 * made the directory again after 'destroy' forgot it (0 if nothing was
 * there).
 */
int state_drop_if_unused(const struct blk_snap_uuid *id);

/*
 * A growth of a storage file in progress: "<uuid>/growth-MAJOR:MINOR-INODE"
 * holds the file's size before it.  Begun before the file is unpinned to
 * grow, ended before any of the growth is appended to the snapshot (or
 * once it is undone): while it exists, nothing of the file beyond that
 * size is the kernel's, so a process killed in between leaves a growth
 * that the next one to open the file can undo (storage_open()).  A spare
 * made ahead keeps its record until it is given.
 */
int state_growth_begin(const struct blk_snap_uuid *id, dev_t dev, ino_t ino,
		       uint64_t old_size);
/* 0 also when there was none. */
int state_growth_end(const struct blk_snap_uuid *id, dev_t dev, ino_t ino);
/* 0 with *@old_size, -ENOENT if none, or -errno (state_strerror()). */
int state_growth_pending(const struct blk_snap_uuid *id, dev_t dev,
			 ino_t ino, uint64_t *old_size);

/*
 * The snapshot a file is recorded for, and its record's identity in @rec
 * (path NULL): 0, -ENOENT if none, or another -errno (state_strerror()).
 */
int state_owner(const char *abs_path, struct blk_snap_uuid *owner,
		struct state_file *rec);

/*
 * The snapshots that have records, in no particular order (@ids
 * malloc'ed; NULL when @count is 0). Return: 0 or -errno
 * (state_strerror()).
 */
int state_ids(struct blk_snap_uuid **ids, size_t *count);

/*
 * A fresh private directory (mode 0700) under the state directory, for
 * short-lived mounts; @buf receives its path.  Return: 0 or -errno.
 */
int state_temp_dir(const char *prefix, char *buf, size_t len);

#endif
