// SPDX-License-Identifier: GPL-2.0
/*
 * Sorted, merged lists of sector ranges: building, set difference, union
 * and the kernel-chunk usable-space report.  Pure, no system calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sf_internal.h"

void sf_ranges_init(struct sf_ranges *rs)
{
	memset(rs, 0, sizeof(*rs));
}

void sf_ranges_free(struct sf_ranges *rs)
{
	free(rs->r);
	sf_ranges_init(rs);
}

void sf_ranges_move(struct sf_ranges *to, struct sf_ranges *from)
{
	if (to == from)
		return;
	sf_ranges_free(to);
	*to = *from;
	sf_ranges_init(from);
}

uint64_t sf_ranges_total(const struct sf_ranges *rs)
{
	uint64_t total = 0;

	for (size_t i = 0; i < rs->count; i++)
		total += rs->r[i].sector_count;
	return total;
}

int sf_ranges_reserve(struct sf_ranges *rs, size_t need)
{
	struct blk_snap_block_range *r;
	size_t cap = rs->cap ? rs->cap : 16;

	if (need <= rs->cap)
		return 0;
	while (cap < need) {
		if (cap > SIZE_MAX / 2 / sizeof(*r))
			return -ENOMEM;
		cap *= 2;
	}
	r = realloc(rs->r, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	rs->r = r;
	rs->cap = cap;
	return 0;
}

int sf_ranges_append(struct sf_ranges *rs, uint64_t offset, uint64_t count)
{
	struct blk_snap_block_range *last;
	int ret;

	if (!count)
		return 0;
	if (offset > UINT64_MAX - count)
		return -EOVERFLOW;

	last = rs->count ? &rs->r[rs->count - 1] : NULL;
	if (last && offset < last->sector_offset + last->sector_count)
		return -EINVAL;
	if (last && offset == last->sector_offset + last->sector_count) {
		last->sector_count += count;
		rs->usable_sectors += count;
		return 0;
	}

	ret = sf_ranges_reserve(rs, rs->count + 1);
	if (ret)
		return ret;
	rs->r[rs->count].sector_offset = offset;
	rs->r[rs->count].sector_count = count;
	rs->count++;
	rs->usable_sectors += count;
	return 0;
}

int sf_ranges_usable(const struct sf_ranges *rs, uint64_t chunk_sectors,
		     uint64_t *usable, uint64_t *wasted)
{
	uint64_t in_chunks = 0, tails = 0;

	if (!sf_is_pow2(chunk_sectors))
		return -EINVAL;

	for (size_t i = 0; i < rs->count; i++) {
		uint64_t tail = rs->r[i].sector_count & (chunk_sectors - 1);

		in_chunks += rs->r[i].sector_count - tail;
		tails += tail;
	}
	if (usable)
		*usable = in_chunks;
	if (wasted)
		*wasted = tails;
	return 0;
}

/*
 * Append [start, end) shrunk inward to @align; count what the shrinking
 * cuts off in out->wasted_sectors.
 */
static int append_aligned(struct sf_ranges *out, uint64_t start, uint64_t end,
			  uint64_t align)
{
	uint64_t astart, aend;

	aend = end & ~(align - 1);
	if (start > UINT64_MAX - (align - 1))
		astart = UINT64_MAX;	/* no aligned block can start here */
	else
		astart = (start + align - 1) & ~(align - 1);

	if (astart >= aend) {
		out->wasted_sectors += end - start;
		return 0;
	}
	out->wasted_sectors += (astart - start) + (end - aend);
	return sf_ranges_append(out, astart, aend - astart);
}

static uint64_t range_end(const struct blk_snap_block_range *r)
{
	return r->sector_offset + r->sector_count;
}

/* Emit the parts of @a not covered by b[*j...]; advance *j past used b's. */
static int subtract_one(const struct blk_snap_block_range *a,
			const struct sf_ranges *b, size_t *j,
			uint64_t align, struct sf_ranges *out)
{
	uint64_t cur = a->sector_offset, end = range_end(a);
	int ret;

	while (*j < b->count && range_end(&b->r[*j]) <= cur)
		(*j)++;

	for (; *j < b->count && b->r[*j].sector_offset < end; (*j)++) {
		const struct blk_snap_block_range *hole = &b->r[*j];

		if (hole->sector_offset > cur) {
			ret = append_aligned(out, cur, hole->sector_offset,
					     align);
			if (ret)
				return ret;
		}
		if (range_end(hole) > cur)
			cur = range_end(hole);
		/* b's range reaches into the next a range: keep it. */
		if (range_end(hole) > end)
			return 0;
	}
	return cur < end ? append_aligned(out, cur, end, align) : 0;
}

int sf_ranges_subtract(const struct sf_ranges *a, const struct sf_ranges *b,
		       uint64_t align_sectors, struct sf_ranges *out)
{
	struct sf_ranges tmp = SF_RANGES_INIT;
	size_t j = 0;
	int ret;

	if (!sf_is_pow2(align_sectors))
		return -EINVAL;

	for (size_t i = 0; i < a->count; i++) {
		ret = subtract_one(&a->r[i], b, &j, align_sectors, &tmp);
		if (ret) {
			sf_ranges_free(&tmp);
			return ret;
		}
	}
	sf_ranges_move(out, &tmp);
	return 0;
}

int sf_ranges_append_merge(struct sf_ranges *rs,
			   const struct blk_snap_block_range *r)
{
	struct blk_snap_block_range *last;
	uint64_t end = range_end(r);

	last = rs->count ? &rs->r[rs->count - 1] : NULL;
	if (last && r->sector_offset <= range_end(last)) {
		if (end > range_end(last)) {
			rs->usable_sectors += end - range_end(last);
			last->sector_count = end - last->sector_offset;
		}
		return 0;
	}
	return sf_ranges_append(rs, r->sector_offset, r->sector_count);
}

int sf_ranges_union(struct sf_ranges *into, const struct sf_ranges *add)
{
	struct sf_ranges tmp = SF_RANGES_INIT;
	size_t i = 0, j = 0;
	int ret = sf_ranges_reserve(&tmp, into->count + add->count);

	while (!ret && (i < into->count || j < add->count)) {
		const struct blk_snap_block_range *next;

		if (j >= add->count || (i < into->count &&
		    into->r[i].sector_offset <= add->r[j].sector_offset))
			next = &into->r[i++];
		else
			next = &add->r[j++];
		ret = sf_ranges_append_merge(&tmp, next);
	}
	if (ret) {
		sf_ranges_free(&tmp);
		return ret;
	}
	tmp.wasted_sectors = into->wasted_sectors;
	sf_ranges_move(into, &tmp);
	return 0;
}
