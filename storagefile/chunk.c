// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's chunk size, so the usable-space report can use the same
 * number the module will.  Keep in step with diff_area_calculate_chunk_size()
 * in kernel/drivers/block/blksnap/diff_area.c.
 */
#include <errno.h>

#include "storagefile.h"

/* ceil(capacity / 2^shift_sectors) without overflow */
static uint64_t count_by_shift(uint64_t capacity, unsigned int shift_sectors)
{
	uint64_t mask = (1ull << shift_sectors) - 1;

	return (capacity >> shift_sectors) + !!(capacity & mask);
}

int sf_chunk_sectors(uint64_t capacity_sectors, uint32_t min_io_bytes,
		     unsigned int minimum_shift, uint64_t maximum_count,
		     uint64_t *chunk_sectors)
{
	uint64_t min_io_sectors = min_io_bytes >> SF_SECTOR_SHIFT;
	unsigned int shift = minimum_shift;

	if (shift < SF_SECTOR_SHIFT || shift > 62 || !maximum_count)
		return -EINVAL;

	while (count_by_shift(capacity_sectors, shift - SF_SECTOR_SHIFT) >
		       maximum_count ||
	       (1ull << (shift - SF_SECTOR_SHIFT)) < min_io_sectors) {
		if (++shift > 62)
			return -EINVAL;
	}
	*chunk_sectors = 1ull << (shift - SF_SECTOR_SHIFT);
	return 0;
}
