/* SPDX-License-Identifier: GPL-2.0 */
/* Storage on a device-mapper, md or loop device stacked on a snapshotted disk. */
#ifndef BLKSNAP_CLI_STACKED_H
#define BLKSNAP_CLI_STACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * stacked_storage_check() - refuse storage that would be copied into itself.
 * @storage: the device the storage file's sectors are on.
 * @origs:   the snapshot's devices (@count of them).
 * @noun:    what @origs are, for the message ("a disk of the snapshot").
 * @why:     out, on refusal, the cause in one line (@len bytes).
 *
 * A write that a stacked driver sends to a disk of the snapshot passes the
 * disk's filter like anybody's. The kernel lets through only those that
 * carry the data pages of its own stores, which dm-linear, dm-striped and
 * md linear and RAID 0 pass on unchanged. Every other layer (dm-crypt,
 * md RAID 1/10/5/6, thin, ...) writes pages of its own, which would be
 * copied on write into the very storage being written: a deadlock.
 * A loop device is such a layer over the device its backing file is on
 * (its writes are the backing file's page-cache pages), and so is any
 * stacking driver this tool does not know (bcache, ...).
 *
 * Return: 0 if the storage reaches no device of the snapshot, or only
 * through such layers; -EXDEV if it must be refused; -errno if the stack
 * could not be read (@why says what).
 */
int stacked_storage_check(dev_t storage, const dev_t *origs,
			  unsigned int count, const char *noun, char *why,
			  size_t len);

/*
 * stacked_on_origs() - is @storage a device-mapper or md device with a
 * device of the snapshot (or a partition of one) somewhere below it?
 */
bool stacked_on_origs(dev_t storage, const dev_t *origs, unsigned int count);

#endif
