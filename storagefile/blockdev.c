// SPDX-License-Identifier: GPL-2.0
/* Block device queue limits from sysfs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "sf_internal.h"

static int read_u32_file(const char *path, uint32_t *value)
{
	char buf[32], *end;
	unsigned long v;
	ssize_t len;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return len < 0 ? -errno : -EINVAL;
	buf[len] = '\0';

	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v > UINT32_MAX)
		return -EINVAL;
	*value = (uint32_t)v;
	return 0;
}

int sf_logical_block_size(dev_t dev, uint32_t *bytes)
{
	/* A partition has no queue/: it is in its disk's directory. */
	static const char *const fmts[] = {
		"/sys/dev/block/%u:%u/queue/logical_block_size",
		"/sys/dev/block/%u:%u/../queue/logical_block_size",
	};
	char path[96];
	uint32_t v = 0;
	int ret = -ENOENT;

	for (size_t i = 0; i < 2 && ret == -ENOENT; i++) {
		snprintf(path, sizeof(path), fmts[i], major(dev), minor(dev));
		ret = read_u32_file(path, &v);
	}
	if (ret)
		return ret;
	if (!sf_is_pow2(v) || v < SF_SECTOR_SIZE)
		return -EINVAL;
	*bytes = v;
	return 0;
}

int sf_align_bytes(dev_t dev, uint32_t *bytes)
{
	uint32_t lbs;
	int ret = sf_logical_block_size(dev, &lbs);

	if (ret)
		return ret;
	*bytes = lbs > SF_MIN_ALIGN_BYTES ? lbs : SF_MIN_ALIGN_BYTES;
	return 0;
}
