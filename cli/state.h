/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which storage files belong to which snapshot, so that `list` and
 * `destroy` can name them later from another process.
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

#include "storagefile.h"

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
 * Remove a snapshot's directory when it records nothing.  A growth that
 * failed calls it, because a record may have made the directory again
 * after 'destroy' forgot it (0 if nothing was there).
 */
int state_drop_if_unused(const struct blk_snap_uuid *id);

/*
 * Storage given in unnamed files (each growth after the first is one, see
 * storage.h), counted per named file: "<uuid>/unnamed-MAJOR:MINOR-INODE"
 * holds their bytes, for the sizes the commands report.  Written after
 * each growth the kernel took; nothing depends on it for safety.
 */
int state_unnamed_set(const struct blk_snap_uuid *id, dev_t dev, ino_t ino,
		      uint64_t bytes);
/* 0 with *@bytes, -ENOENT if none, or -errno (state_strerror()). */
int state_unnamed_get(const struct blk_snap_uuid *id, dev_t dev, ino_t ino,
		      uint64_t *bytes);

/*
 * The snapshot the file @dev:@ino is recorded for, whatever path led to
 * it (a bind mount, another namespace), and its record in @rec (path
 * NULL): 0, -ENOENT if none, or another -errno (state_strerror()).  A
 * stale record of a snapshot the kernel forgot may name a reused inode
 * number: a record of @prefer wins over the others.
 */
int state_owner(dev_t dev, ino_t ino, const struct blk_snap_uuid *prefer,
		struct blk_snap_uuid *owner, struct state_file *rec);

/*
 * The snapshots that have records, in no particular order (@ids
 * malloc'ed; NULL when @count is 0). Return: 0 or -errno
 * (state_strerror()).
 */
int state_ids(struct blk_snap_uuid **ids, size_t *count);

/*
 * The take-time map of the device @dev (the in-use sectors of its file
 * system when the snapshot was taken, storagefile/takemap.c), saved by
 * 'take' so that growths after it need no read of the image:
 * "<uuid>/takemap-MAJOR:MINOR" (@key and @in_use, sf_takemap_encode()),
 * written to a new temporary file, synced and renamed over the old one.
 * Saved only while the snapshot has a directory (something recorded):
 * -ENOENT otherwise.  Not saved, and any old map of @dev removed, when
 * it would pass SF_TAKEMAP_MAX_BYTES (-EFBIG) or a quarter of the free
 * space of the state directory (-ENOSPC), a tmpfs that must not fill
 * (sf_takemap_room()); state_strerror() then says so in a phrase (its
 * size and the limit).  Return: 0 or -errno (state_strerror()).
 */
int state_takemap_save(const struct blk_snap_uuid *id, dev_t dev,
		       const struct sf_takemap_key *key,
		       const struct sf_ranges *in_use);

/*
 * Its bytes, as they are (@buf malloc'ed), with the record file's rules
 * for ownership and type; @file receives the file's path.  Return: 0,
 * -ENOENT if none, -EFBIG if bigger than any map saved
 * (SF_TAKEMAP_MAX_BYTES), or -errno
 * (state_strerror()).
 */
int state_takemap_load(const struct blk_snap_uuid *id, dev_t dev,
		       void **buf, size_t *len, char *file, size_t file_len);

/*
 * A fresh private directory (mode 0700) under the state directory, for
 * short-lived mounts; @buf receives its path.  Return: 0 or -errno.
 */
int state_temp_dir(const char *prefix, char *buf, size_t len);

#endif
