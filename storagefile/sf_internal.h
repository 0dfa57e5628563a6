/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Library-internal helpers shared between the storagefile sources and the unit
 * tests.  Not part of the public API: the CLI must not include this.
 */
#ifndef SF_INTERNAL_H
#define SF_INTERNAL_H

#include "storagefile.h"

/* A half-open byte span [start, end) on a device. */
struct sf_span {
	uint64_t start, end;
};

/*
 * sf_spans_to_ranges() - sort and merge byte spans, then round them to
 * @align_bytes: inward (storage: only whole aligned blocks we own) or
 * outward (in-use maps: anything touched counts as used).  @spans is sorted
 * in place.  Replaces @out; on failure @out is unchanged.
 */
int sf_spans_to_ranges(struct sf_span *spans, size_t n, uint64_t align_bytes,
		       bool inward, struct sf_ranges *out);

/* Make room for @need entries.  Return: 0 or -ENOMEM. */
int sf_ranges_reserve(struct sf_ranges *rs, size_t need);

/*
 * Append @r to @rs (sorted by offset), merging it with the last range if
 * they overlap or touch.  Return: 0, -EOVERFLOW, -ENOMEM.
 */
int sf_ranges_append_merge(struct sf_ranges *rs,
			   const struct blk_snap_block_range *r);

/* Move @from into @to (freeing @to's old content); @from becomes empty. */
void sf_ranges_move(struct sf_ranges *to, struct sf_ranges *from);

/* Sum of sector_count over @rs. */
uint64_t sf_ranges_total(const struct sf_ranges *rs);

static inline bool sf_is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/*
 * struct sf_file - an open, locked storage file.
 * @fd:          read-only descriptor, held for the lock and the ioctls; a
 *               pinned (immutable) file cannot be opened for writing, so a
 *               writable one is only made for the time of a growth.
 * @dev:         st_dev, the device the ranges refer to.
 * @align:       alignment of handed-out ranges, bytes.
 * @given:       everything this handle has handed out (less what
 *               sf_forget() took back).
 * @refused_flag: FIEMAP flag behind the last refusal.
 */
struct sf_file {
	int fd;
	dev_t dev;
	uint32_t align;
	struct sf_ranges given;
	uint32_t refused_flag;
	int (*grow_fault)(void *arg);
	void *grow_fault_arg;
};

/*
 * Test seam: called by sf_grow() after the space is allocated and mapped,
 * just before the growth is committed.  A non-zero return makes the growth
 * fail with that value, so tests can check the rollback path without having
 * to fill a filesystem.  NULL in normal use.
 */
typedef int (*sf_grow_fault_fn)(void *arg);
void sf_set_grow_fault(struct sf_file *f, sf_grow_fault_fn fn, void *arg);

#endif /* SF_INTERNAL_H */
