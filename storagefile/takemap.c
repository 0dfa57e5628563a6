// SPDX-License-Identifier: GPL-2.0
/*
 * The take-time map: which sectors of a device were in use when its
 * snapshot was taken, in a small file saved once at take, so that a
 * growth after the take needs no read of the snapshot image (issue 31
 * item 4).  Encoding and decoding only; where the file lives is the
 * caller's business.
 *
 * Layout, every integer little-endian:
 *
 *	 0  magic "BSTAKMAP"
 *	 8  u32 version (SF_TAKEMAP_VERSION)
 *	12  u32 0 (reserved)
 *	16  u8[16] snapshot UUID
 *	32  u32 device major, u32 device minor (the file system's device)
 *	40  u32 image major, u32 image minor (what the map was read from)
 *	48  u64 where the device starts in the image (sectors)
 *	56  u64 its size in sectors (0: all of the image)
 *	64  u64 number of ranges
 *	72  ranges: u64 first sector, u64 sectors; sorted, not touching
 *	    u64 FNV-1a of every byte before it
 *
 * The key fields make a map of another snapshot, device or image (a file
 * copied, or a device number reused) refused rather than trusted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sf_internal.h"

#define TAKEMAP_MAGIC		"BSTAKMAP"
#define TAKEMAP_HEADER		72u
#define TAKEMAP_RANGE		16u
#define TAKEMAP_TRAILER		8u

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t fnv1a(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void put_key(uint8_t *p, const struct sf_takemap_key *k)
{
	memcpy(p + 16, k->snapshot, sizeof(k->snapshot));
	put32(p + 32, k->dev_major);
	put32(p + 36, k->dev_minor);
	put32(p + 40, k->image_major);
	put32(p + 44, k->image_minor);
	put64(p + 48, k->part_start);
	put64(p + 56, k->part_sectors);
}

uint64_t sf_takemap_bytes(uint64_t ranges)
{
	if (ranges > (UINT64_MAX - TAKEMAP_HEADER - TAKEMAP_TRAILER) /
		     TAKEMAP_RANGE)
		return UINT64_MAX;
	return TAKEMAP_HEADER + ranges * TAKEMAP_RANGE + TAKEMAP_TRAILER;
}

int sf_takemap_room(uint64_t bytes, uint64_t avail)
{
	if (bytes > SF_TAKEMAP_MAX_BYTES)
		return -EFBIG;
	if (bytes > avail / 4)
		return -ENOSPC;
	return 0;
}

int sf_takemap_encode(const struct sf_takemap_key *key,
		      const struct sf_ranges *in_use, void **buf, size_t *len)
{
	size_t n = in_use->count, size;
	uint8_t *p;

	*buf = NULL;
	*len = 0;
	if (n > (SIZE_MAX - TAKEMAP_HEADER - TAKEMAP_TRAILER) / TAKEMAP_RANGE)
		return -EOVERFLOW;
	size = TAKEMAP_HEADER + n * TAKEMAP_RANGE + TAKEMAP_TRAILER;
	p = calloc(1, size);
	if (!p)
		return -ENOMEM;
	memcpy(p, TAKEMAP_MAGIC, 8);
	put32(p + 8, SF_TAKEMAP_VERSION);
	put_key(p, key);
	put64(p + 64, n);
	for (size_t i = 0; i < n; i++) {
		put64(p + TAKEMAP_HEADER + i * TAKEMAP_RANGE,
		      in_use->r[i].sector_offset);
		put64(p + TAKEMAP_HEADER + i * TAKEMAP_RANGE + 8,
		      in_use->r[i].sector_count);
	}
	put64(p + size - TAKEMAP_TRAILER, fnv1a(p, size - TAKEMAP_TRAILER));
	*buf = p;
	*len = size;
	return 0;
}

int sf_takemap_decode(const void *buf, size_t len,
		      const struct sf_takemap_key *expect,
		      struct sf_ranges *in_use)
{
	struct sf_ranges out = SF_RANGES_INIT;
	uint8_t key[TAKEMAP_HEADER] = { 0 };
	const uint8_t *p = buf;
	uint64_t n, end = 0;
	int ret = 0;

	if (len < 8 || memcmp(p, TAKEMAP_MAGIC, 8))
		return len < 8 && !memcmp(p, TAKEMAP_MAGIC, len) ? -ENODATA
								  : -ENOMSG;
	if (len < 12)
		return -ENODATA;
	if (get32(p + 8) != SF_TAKEMAP_VERSION)
		return -EPROTONOSUPPORT;
	if (len < TAKEMAP_HEADER + TAKEMAP_TRAILER)
		return -ENODATA;
	n = get64(p + 64);
	if (n > (len - TAKEMAP_HEADER - TAKEMAP_TRAILER) / TAKEMAP_RANGE)
		return -ENODATA;
	if (len != TAKEMAP_HEADER + n * TAKEMAP_RANGE + TAKEMAP_TRAILER)
		return -EBADMSG;	/* bytes after the end */
	if (get64(p + len - TAKEMAP_TRAILER) !=
	    fnv1a(p, len - TAKEMAP_TRAILER) || get32(p + 12))
		return -EBADMSG;
	put_key(key, expect);
	if (memcmp(p + 16, key + 16, 48))
		return -ESTALE;
	ret = sf_ranges_reserve(&out, n);
	for (uint64_t i = 0; i < n && !ret; i++) {
		uint64_t off = get64(p + TAKEMAP_HEADER + i * TAKEMAP_RANGE);
		uint64_t cnt = get64(p + TAKEMAP_HEADER + i * TAKEMAP_RANGE + 8);

		/* What the encoder writes: sorted, merged, not empty. */
		if (!cnt || (i && off <= end))
			ret = -EBADMSG;
		else
			ret = sf_ranges_append(&out, off, cnt);
		if (ret == -EINVAL || ret == -EOVERFLOW)
			ret = -EBADMSG;
		end = off + cnt;
	}
	if (!ret)
		sf_ranges_move(in_use, &out);
	sf_ranges_free(&out);
	return ret;
}
