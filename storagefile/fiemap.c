// SPDX-License-Identifier: GPL-2.0
/* FS_IOC_FIEMAP: read a file's whole extent list, in batches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/fs.h>

#include "storagefile.h"

/* Extents per ioctl: 512 * 56 bytes keeps each buffer at ~28 KiB. */
#define SF_FIEMAP_BATCH 512

static int append_extents(struct fiemap_extent **all, size_t *n, size_t *cap,
			  const struct fiemap_extent *add, size_t count)
{
	if (*n + count > *cap) {
		size_t new_cap = *cap ? *cap : SF_FIEMAP_BATCH;
		struct fiemap_extent *p;

		while (new_cap < *n + count)
			new_cap *= 2;
		p = realloc(*all, new_cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*all = p;
		*cap = new_cap;
	}
	memcpy(*all + *n, add, count * sizeof(*add));
	*n += count;
	return 0;
}

/* One FIEMAP call from @start; returns mapped count or -errno. */
static int fiemap_batch(int fd, struct fiemap *fm, uint64_t start)
{
	memset(fm, 0, sizeof(*fm));
	fm->fm_start = start;
	fm->fm_length = FIEMAP_MAX_OFFSET - start;
	fm->fm_flags = FIEMAP_FLAG_SYNC;	/* no delalloc: real locations */
	fm->fm_extent_count = SF_FIEMAP_BATCH;

	if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
		return (errno == ENOTTY || errno == EOPNOTSUPP)
			? -EOPNOTSUPP : -errno;
	return (int)fm->fm_mapped_extents;
}

int sf_fiemap_read(int fd, struct fiemap_extent **ext, size_t *n)
{
	size_t bufsize = sizeof(struct fiemap) +
			 SF_FIEMAP_BATCH * sizeof(struct fiemap_extent);
	struct fiemap *fm = malloc(bufsize);
	struct fiemap_extent *all = NULL;
	size_t count = 0, cap = 0;
	uint64_t start = 0;
	int ret = 0;

	if (!fm)
		return -ENOMEM;

	for (;;) {
		const struct fiemap_extent *last;
		int mapped = fiemap_batch(fd, fm, start);

		if (mapped <= 0) {
			ret = mapped;
			break;
		}
		ret = append_extents(&all, &count, &cap, fm->fm_extents,
				     (size_t)mapped);
		last = &fm->fm_extents[mapped - 1];
		if (ret || (last->fe_flags & FIEMAP_EXTENT_LAST))
			break;
		/* A filesystem that does not move forward would loop forever. */
		if (last->fe_logical + last->fe_length <= start ||
		    last->fe_logical > UINT64_MAX - last->fe_length) {
			ret = -EIO;
			break;
		}
		start = last->fe_logical + last->fe_length;
	}

	free(fm);
	if (ret) {
		free(all);
		return ret;
	}
	*ext = all;
	*n = count;
	return 0;
}
