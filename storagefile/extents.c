// SPDX-License-Identifier: GPL-2.0
/*
 * FIEMAP extents -> difference-storage sector ranges, and "only what was
 * not handed out before".  Pure: the ioctl lives in fiemap.c.
 */
#include <errno.h>
#include <stdlib.h>

#include "sf_internal.h"

static const struct {
	uint32_t flag;
	const char *name;
} extent_flags[] = {
	{ FIEMAP_EXTENT_LAST,		"last" },
	{ FIEMAP_EXTENT_UNKNOWN,	"unknown" },
	{ FIEMAP_EXTENT_DELALLOC,	"delalloc" },
	{ FIEMAP_EXTENT_ENCODED,	"encoded" },
	{ FIEMAP_EXTENT_DATA_ENCRYPTED,	"encrypted" },
	{ FIEMAP_EXTENT_NOT_ALIGNED,	"not_aligned" },
	{ FIEMAP_EXTENT_DATA_INLINE,	"inline" },
	{ FIEMAP_EXTENT_DATA_TAIL,	"tail_packed" },
	{ FIEMAP_EXTENT_UNWRITTEN,	"unwritten" },
	{ FIEMAP_EXTENT_MERGED,		"merged" },
	{ FIEMAP_EXTENT_SHARED,		"shared" },
};

const char *sf_extent_flag_name(uint32_t flag)
{
	for (size_t i = 0; i < sizeof(extent_flags) / sizeof(*extent_flags);
	     i++)
		if (extent_flags[i].flag == flag)
			return extent_flags[i].name;
	return "unknown flag";
}

/*
 * Why refuse: with these flags the file's bytes are not (yet, only, or
 * verbatim) at fe_physical, so the kernel would write elsewhere than the
 * filesystem thinks the file is.
 */
static int check_extent(const struct fiemap_extent *e, uint32_t *refused)
{
	uint32_t bad = e->fe_flags & SF_REFUSED_EXTENT_FLAGS;

	if (bad) {
		bad &= -bad;	/* lowest bit: UNKNOWN/DELALLOC first */
		*refused = bad;
		return (bad & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC))
			? -EAGAIN : -EOPNOTSUPP;
	}
	if (e->fe_physical > UINT64_MAX - e->fe_length)
		return -EOVERFLOW;
	return 0;
}

int sf_extents_to_ranges(const struct fiemap_extent *ext, size_t n,
			 uint32_t align_bytes, struct sf_ranges *out,
			 uint32_t *refused_flag)
{
	struct sf_span *spans;
	uint32_t refused = 0;
	size_t used = 0;
	int ret = 0;

	if (!sf_is_pow2(align_bytes) || align_bytes < SF_SECTOR_SIZE)
		return -EINVAL;

	spans = malloc((n ? n : 1) * sizeof(*spans));
	if (!spans)
		return -ENOMEM;

	for (size_t i = 0; i < n && !ret; i++) {
		ret = check_extent(&ext[i], &refused);
		if (!ret && ext[i].fe_length) {
			spans[used].start = ext[i].fe_physical;
			spans[used].end = ext[i].fe_physical + ext[i].fe_length;
			used++;
		}
	}
	if (!ret)
		ret = sf_spans_to_ranges(spans, used, align_bytes, true, out);

	free(spans);
	if (refused_flag)
		*refused_flag = refused;
	return ret;
}

int sf_new_ranges(const struct sf_ranges *now, struct sf_ranges *given,
		  uint64_t align_sectors, struct sf_ranges *out)
{
	struct sf_ranges fresh = SF_RANGES_INIT;
	int ret;

	ret = sf_ranges_subtract(now, given, align_sectors, &fresh);
	if (!ret)
		ret = sf_ranges_union(given, &fresh);
	if (ret) {
		sf_ranges_free(&fresh);
		return ret;
	}
	sf_ranges_move(out, &fresh);
	return 0;
}
