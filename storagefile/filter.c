// SPDX-License-Identifier: GPL-2.0
/*
 * Free-at-take-time filter.  When the storage file lives on a device of a
 * taken snapshot, sectors the file got after the take may have belonged to
 * files deleted since; the snapshot image still shows them as used, so the
 * kernel must not store differences there.  Pure set arithmetic.
 */
#include "sf_internal.h"

int sf_filter_free(const struct sf_ranges *ranges,
		   const struct sf_ranges *in_use, uint64_t align_sectors,
		   struct sf_ranges *out, uint64_t *withheld,
		   uint64_t *unaligned)
{
	struct sf_ranges tmp = SF_RANGES_INIT, free_part = SF_RANGES_INIT;
	uint64_t before = sf_ranges_total(ranges);
	int ret;

	/*
	 * Sector by sector first: what was in use at take time. What the
	 * alignment then cuts off the free pieces is counted apart, so that
	 * it is not blamed on the take (issue 13 item 4).
	 */
	ret = sf_ranges_subtract(ranges, in_use, 1, &free_part);
	if (!ret)
		ret = sf_ranges_subtract(ranges, in_use, align_sectors, &tmp);
	if (ret) {
		sf_ranges_free(&free_part);
		return ret;
	}
	tmp.wasted_sectors = free_part.usable_sectors - tmp.usable_sectors;
	if (withheld)
		*withheld = before - free_part.usable_sectors;
	if (unaligned)
		*unaligned = tmp.wasted_sectors;
	sf_ranges_free(&free_part);
	sf_ranges_move(out, &tmp);
	return 0;
}
