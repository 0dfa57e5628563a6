// SPDX-License-Identifier: GPL-2.0
/*
 * Byte spans -> sector ranges.  Shared by the FIEMAP conversion (round
 * inward: we may only hand out whole aligned blocks the file owns) and the
 * GETFSMAP in-use map (round outward: a partly used block is used).
 */
#include <errno.h>
#include <stdlib.h>

#include "sf_internal.h"

static int cmp_span(const void *pa, const void *pb)
{
	const struct sf_span *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->end > b->end) - (a->end < b->end);
}

/* Merge overlapping or touching spans in place; drop empty ones. */
static size_t merge_spans(struct sf_span *spans, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (spans[i].end <= spans[i].start)
			continue;
		if (out && spans[i].start <= spans[out - 1].end) {
			if (spans[i].end > spans[out - 1].end)
				spans[out - 1].end = spans[i].end;
			continue;
		}
		spans[out++] = spans[i];
	}
	return out;
}

static int add_inward(struct sf_ranges *rs, const struct sf_span *s,
		      uint64_t align)
{
	uint64_t astart, aend = s->end & ~(align - 1);

	if (s->start > UINT64_MAX - (align - 1))
		astart = UINT64_MAX;
	else
		astart = (s->start + align - 1) & ~(align - 1);

	if (astart >= aend) {
		rs->wasted_sectors += (s->end - s->start) >> SF_SECTOR_SHIFT;
		return 0;
	}
	rs->wasted_sectors += ((astart - s->start) + (s->end - aend))
			      >> SF_SECTOR_SHIFT;
	return sf_ranges_append(rs, astart >> SF_SECTOR_SHIFT,
				(aend - astart) >> SF_SECTOR_SHIFT);
}

static int add_outward(struct sf_ranges *rs, const struct sf_span *s,
		       uint64_t align)
{
	/* In sectors, so rounding the end up cannot overflow. */
	uint64_t align_s = align >> SF_SECTOR_SHIFT;
	uint64_t start = (s->start >> SF_SECTOR_SHIFT) & ~(align_s - 1);
	uint64_t end = (s->end >> SF_SECTOR_SHIFT) +
		       !!(s->end & (SF_SECTOR_SIZE - 1));
	struct blk_snap_block_range r;

	end = (end + align_s - 1) & ~(align_s - 1);
	r.sector_offset = start;
	r.sector_count = end - start;
	return sf_ranges_append_merge(rs, &r);
}

int sf_spans_to_ranges(struct sf_span *spans, size_t n, uint64_t align_bytes,
		       bool inward, struct sf_ranges *out)
{
	struct sf_ranges tmp = SF_RANGES_INIT;
	int ret = 0;

	if (!sf_is_pow2(align_bytes) || align_bytes < SF_SECTOR_SIZE)
		return -EINVAL;

	if (n)
		qsort(spans, n, sizeof(*spans), cmp_span);
	n = merge_spans(spans, n);

	for (size_t i = 0; i < n && !ret; i++)
		ret = inward ? add_inward(&tmp, &spans[i], align_bytes)
			     : add_outward(&tmp, &spans[i], align_bytes);
	if (ret) {
		sf_ranges_free(&tmp);
		return ret;
	}
	sf_ranges_move(out, &tmp);
	return 0;
}
