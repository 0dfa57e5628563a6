// SPDX-License-Identifier: GPL-2.0
/*
 * FS_IOC_GETFSMAP: the in-use physical space of a mounted filesystem, as
 * used by the free-at-take-time filter.  The caller mounts the snapshot
 * image; its byte offsets map 1:1 onto the origin device's sectors.
 * Only what the filesystem reports free counts as free.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fsmap.h>

#include "sf_internal.h"

#define SF_FSMAP_BATCH 1024

/* fmr_device is in the kernel's new_encode_dev() format. */
static bool same_device(uint32_t fmr_device, dev_t dev)
{
	unsigned int maj = (fmr_device & 0xfff00) >> 8;
	unsigned int min = (fmr_device & 0xff) | ((fmr_device >> 12) & 0xfff00);

	return maj == major(dev) && min == minor(dev);
}

static bool is_free(const struct fsmap *rec)
{
	return (rec->fmr_flags & FMR_OF_SPECIAL_OWNER) &&
	       rec->fmr_owner == FMR_OWN_FREE;
}

static int push_span(struct sf_span **spans, size_t *n, size_t *cap,
		     uint64_t start, uint64_t length)
{
	if (*n == *cap) {
		size_t new_cap = *cap ? *cap * 2 : SF_FSMAP_BATCH;
		struct sf_span *p = realloc(*spans, new_cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*spans = p;
		*cap = new_cap;
	}
	(*spans)[*n].start = start;
	(*spans)[*n].end = length > UINT64_MAX - start ? UINT64_MAX
						       : start + length;
	(*n)++;
	return 0;
}

/*
 * Walk all records of the data device, collecting the free ones. Only
 * what the filesystem calls free is free: ext4 on Linux 6.1 with 1 KiB
 * blocks leaves some in-use space out of its records altogether (seen:
 * 32 MiB of a file's blocks between two free records, reported as
 * nothing), so what is not reported counts as in use.
 */
static int collect_free(int fd, dev_t dev, struct fsmap_head *head,
			struct sf_span **spans, size_t *n)
{
	size_t cap = 0;
	int ret = 0;

	memset(head, 0, sizeof(*head));
	head->fmh_keys[1].fmr_device = UINT32_MAX;
	head->fmh_keys[1].fmr_flags = UINT32_MAX;
	head->fmh_keys[1].fmr_physical = UINT64_MAX;
	head->fmh_keys[1].fmr_owner = UINT64_MAX;
	head->fmh_keys[1].fmr_offset = UINT64_MAX;

	for (;;) {
		head->fmh_count = SF_FSMAP_BATCH;
		if (ioctl(fd, FS_IOC_GETFSMAP, head) < 0)
			return (errno == ENOTTY || errno == EOPNOTSUPP)
				? -EOPNOTSUPP : -errno;
		if (!head->fmh_entries)
			return 0;

		for (unsigned int i = 0; i < head->fmh_entries && !ret; i++) {
			const struct fsmap *rec = &head->fmh_recs[i];

			if (same_device(rec->fmr_device, dev) && is_free(rec))
				ret = push_span(spans, n, &cap,
						rec->fmr_physical,
						rec->fmr_length);
		}
		if (ret || (head->fmh_recs[head->fmh_entries - 1].fmr_flags &
			    FMR_OF_LAST))
			return ret;
		fsmap_advance(head);
	}
}

/* @in_use: every sector that @free does not list, up to the last one. */
static int complement(const struct sf_ranges *free, struct sf_ranges *in_use)
{
	const uint64_t end = UINT64_MAX >> SF_SECTOR_SHIFT;
	struct sf_ranges out = SF_RANGES_INIT;
	uint64_t next = 0;
	int ret = 0;

	for (size_t i = 0; i < free->count && !ret; i++) {
		const struct blk_snap_block_range *r = &free->r[i];

		if (r->sector_offset > next)
			ret = sf_ranges_append(&out, next,
					       r->sector_offset - next);
		next = r->sector_offset + r->sector_count;
	}
	if (!ret && next < end)
		ret = sf_ranges_append(&out, next, end - next);
	if (!ret)
		sf_ranges_move(in_use, &out);
	sf_ranges_free(&out);
	return ret;
}

int sf_fsmap_in_use(const char *mountpoint, struct sf_ranges *in_use)
{
	struct sf_ranges free_ranges = SF_RANGES_INIT;
	struct fsmap_head *head;
	struct sf_span *spans = NULL;
	struct stat st;
	size_t n = 0;
	int ret, fd;

	fd = open(mountpoint, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	head = calloc(1, fsmap_sizeof(SF_FSMAP_BATCH));
	if (!head)
		ret = -ENOMEM;
	else if (fstat(fd, &st) < 0)
		ret = -errno;
	else
		ret = collect_free(fd, st.st_dev, head, &spans, &n);

	/* Inward: a sector partly in use is in use. */
	if (!ret)
		ret = sf_spans_to_ranges(spans, n, SF_SECTOR_SIZE, true,
					 &free_ranges);
	if (!ret)
		ret = complement(&free_ranges, in_use);
	sf_ranges_free(&free_ranges);
	free(spans);
	free(head);
	close(fd);
	return ret;
}
