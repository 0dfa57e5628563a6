/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which storage files belong to which snapshot, so that `destroy` can unpin
 * them later from another process.
 *
 * Layout: $BLKSNAP_STATE_DIR (default /run/blksnap) / <uuid> / files, one
 * absolute path per line.  /run is a tmpfs: after a reboot no snapshot
 * exists either, so the state vanishing with it is right.
 */
#ifndef BLKSNAP_CLI_STATE_H
#define BLKSNAP_CLI_STATE_H

#include <assert.h>
#include <stddef.h>
#include <linux/blksnap.h>

#define STATE_DIR_DEFAULT	"/run/blksnap"
#define STATE_DIR_ENV		"BLKSNAP_STATE_DIR"

const char *state_dir(void);

/*
 * The absolute form of a file path whose directory exists (the file itself
 * need not): realpath() of the directory plus the last component.
 */
int state_canonical_path(const char *path, char *out, size_t len);

int state_record(const struct blk_snap_uuid *id, const char *abs_path);
int state_unrecord(const struct blk_snap_uuid *id, const char *abs_path);

/* The files of a snapshot; 0 with *count 0 if it has none recorded. */
int state_files(const struct blk_snap_uuid *id, char ***paths, size_t *count);
void state_free_files(char **paths, size_t count);

/* Remove everything recorded about a snapshot (0 if nothing was). */
int state_forget(const struct blk_snap_uuid *id);

/* The snapshot a file is recorded for: 0, or -ENOENT if none. */
int state_owner(const char *abs_path, struct blk_snap_uuid *owner);

/*
 * A fresh private directory (mode 0700) under the state directory, for
 * short-lived mounts; @buf receives its path.  Return: 0 or -errno.
 */
int state_temp_dir(const char *prefix, char *buf, size_t len);

#endif
