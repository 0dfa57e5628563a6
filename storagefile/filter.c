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
		   struct sf_ranges *out, uint64_t *withheld)
{
	uint64_t before = sf_ranges_total(ranges);
	struct sf_ranges tmp = SF_RANGES_INIT;
	int ret;

	ret = sf_ranges_subtract(ranges, in_use, align_sectors, &tmp);
	if (ret)
		return ret;
	/* Everything not returned was withheld: in use or lost to alignment. */
	tmp.wasted_sectors = before - tmp.usable_sectors;
	if (withheld)
		*withheld = tmp.wasted_sectors;
	sf_ranges_move(out, &tmp);
	return 0;
}
