// SPDX-License-Identifier: GPL-2.0
/*
 * A small ioctl fuzzer for /dev/blksnap: random commands (valid and not),
 * random structures with pointers that are valid, NULL or wild, counts
 * small and huge, device numbers taken from a given list or random, and
 * snapshot ids taken from the snapshots it managed to create. The kernel
 * must answer every call with an error or a result, never a warning.
 *
 * usage: bsctl fuzz COUNT SEED MAJ:MIN...
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/blksnap.h>

#define MAX_IDS 64

static uint64_t rng_state;
static struct blk_snap_uuid ids[MAX_IDS];
static int nr_ids;
static struct blk_snap_dev devs[16];
static int nr_devs;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint32_t rnd_count(void)
{
	switch (rnd() % 6) {
	case 0: return 0;
	case 1: return 1;
	case 2: return rnd() % 8;
	case 3: return rnd() % 300000;
	case 4: return UINT32_MAX - rnd() % 4;
	default: return (uint32_t)rnd();
	}
}

static void *rnd_ptr(void *valid)
{
	switch (rnd() % 8) {
	case 0: return NULL;
	case 1: return (void *)0xdead000000000000ULL;
	case 2: return (void *)(uintptr_t)(rnd() & 0xfffffffffffULL);
	default: return valid;
	}
}

static void rnd_dev(struct blk_snap_dev *dev)
{
	if (nr_devs && rnd() % 4) {
		*dev = devs[rnd() % nr_devs];
		return;
	}
	dev->mj = rnd() % 300;
	dev->mn = rnd() % 64;
	if (!(rnd() % 8))
		dev->mj = (uint32_t)rnd();
}

static void rnd_id(struct blk_snap_uuid *id)
{
	if (nr_ids && rnd() % 4) {
		*id = ids[rnd() % nr_ids];
		return;
	}
	for (int i = 0; i < 16; i++)
		id->b[i] = rnd();
}

static void rnd_ranges(struct blk_snap_block_range *r, int n)
{
	for (int i = 0; i < n; i++) {
		r[i].sector_offset = (rnd() % 4) ? (rnd() % 4194304) & ~7ULL : rnd();
		r[i].sector_count = (rnd() % 4) ? (rnd() % 65536) & ~7ULL : rnd();
	}
}

static void remember_id(const struct blk_snap_uuid *id)
{
	if (nr_ids < MAX_IDS)
		ids[nr_ids++] = *id;
	else
		ids[rnd() % MAX_IDS] = *id;
}

/* Buffers large enough for any valid count the fuzzer produces. */
static union {
	struct blk_snap_block_range ranges[4096];
	struct blk_snap_dev devs[4096];
	struct blk_snap_uuid ids[4096];
	struct blk_snap_image_info info[4096];
	struct blk_snap_cbt_info cbt[1024];
	unsigned char bytes[65536];
} buf;

static int one_call(int fd)
{
	union {
		struct blk_snap_snapshot_create create;
		struct blk_snap_snapshot_append_storage append;
		struct blk_snap_snapshot_append_file append_file;
		struct blk_snap_snapshot_collect collect;
		struct blk_snap_snapshot_collect_images images;
		struct blk_snap_snapshot_event event;
		struct blk_snap_tracker_collect tcollect;
		struct blk_snap_tracker_read_cbt_bitmap cbtread;
		struct blk_snap_tracker_mark_dirty_blocks dirty;
		struct blk_snap_tracker_remove tremove;
		struct blk_snap_uuid id;
		struct blk_snap_version version;
	} a;
	unsigned long cmd;
	int ret;

	memset(&a, 0, sizeof(a));
	switch (rnd() % 15) {
	case 0:
		cmd = IOCTL_BLK_SNAP_VERSION;
		break;
	case 1:
		cmd = IOCTL_BLK_SNAP_TRACKER_REMOVE;
		rnd_dev(&a.tremove.dev_id);
		break;
	case 2:
		cmd = IOCTL_BLK_SNAP_TRACKER_COLLECT;
		a.tcollect.count = rnd_count();
		a.tcollect.cbt_info_array = rnd_ptr(buf.cbt);
		if (a.tcollect.cbt_info_array == buf.cbt)
			a.tcollect.count %= 1025;
		break;
	case 3:
		cmd = IOCTL_BLK_SNAP_TRACKER_READ_CBT_MAP;
		rnd_dev(&a.cbtread.dev_id);
		a.cbtread.offset = rnd() % 3 ? rnd() % 4096 : rnd_count();
		a.cbtread.length = rnd() % 65537;
		a.cbtread.buff = rnd_ptr(buf.bytes);
		break;
	case 4:
		cmd = IOCTL_BLK_SNAP_TRACKER_MARK_DIRTY_BLOCKS;
		rnd_dev(&a.dirty.dev_id);
		a.dirty.count = rnd_count();
		a.dirty.dirty_blocks_array = rnd_ptr(buf.ranges);
		if (a.dirty.dirty_blocks_array == buf.ranges)
			a.dirty.count %= 4097;
		rnd_ranges(buf.ranges, 4096);
		break;
	case 5:
		cmd = IOCTL_BLK_SNAP_SNAPSHOT_CREATE;
		a.create.count = rnd() % 3 ? 1 + rnd() % 3 : rnd_count();
		a.create.dev_id_array = rnd_ptr(buf.devs);
		if (a.create.dev_id_array == buf.devs)
			a.create.count %= 4097;
		for (int i = 0; i < 8; i++)
			rnd_dev(&buf.devs[i]);
		break;
	case 6:
		cmd = IOCTL_BLK_SNAP_SNAPSHOT_DESTROY;
		rnd_id(&a.id);
		break;
	case 7:
		cmd = IOCTL_BLK_SNAP_SNAPSHOT_APPEND_STORAGE;
		rnd_id(&a.append.id);
		rnd_dev(&a.append.dev_id);
		a.append.count = rnd_count();
		a.append.ranges = rnd_ptr(buf.ranges);
		if (a.append.ranges == buf.ranges)
			a.append.count %= 4097;
		rnd_ranges(buf.ranges, 4096);
		break;
	case 8:
		cmd = IOCTL_BLK_SNAP_SNAPSHOT_TAKE;
		rnd_id(&a.id);
		break;
	case 9:
		cmd = IOCTL_BLK_SNAP_SNAPSHOT_COLLECT;
		a.collect.count = rnd_count();
		a.collect.ids = rnd_ptr(buf.ids);
		if (a.collect.ids == buf.ids)
			a.collect.count %= 4097;
		break;
	case 10:
		cmd = IOCTL_BLK_SNAP_SNAPSHOT_COLLECT_IMAGES;
		rnd_id(&a.images.id);
		a.images.count = rnd_count();
		a.images.image_info_array = rnd_ptr(buf.info);
		if (a.images.image_info_array == buf.info)
			a.images.count %= 4097;
		break;
	case 11:
		cmd = IOCTL_BLK_SNAP_SNAPSHOT_WAIT_EVENT;
		rnd_id(&a.event.id);
		a.event.timeout_ms = rnd() % 3;
		break;
	case 12:
		cmd = IOCTL_BLK_SNAP_SNAPSHOT_APPEND_FILE;
		rnd_id(&a.append_file.id);
		/* No file, the standard streams, /dev/blksnap, made-up ones. */
		a.append_file.fd = rnd() % 4 ? (int)(rnd() % 5) - 1 : fd;
		if (!(rnd() % 8))
			a.append_file.fd = (int)rnd();
		a.append_file.flags = rnd() % 8 ? 0 : rnd();
		a.append_file.reserved = rnd() % 8 ? 0 : rnd();
		a.append_file.count = rnd_count();
		a.append_file.ranges = (uintptr_t)rnd_ptr(buf.ranges);
		if (a.append_file.ranges == (uintptr_t)buf.ranges)
			a.append_file.count %= 4097;
		rnd_ranges(buf.ranges, 4096);
		break;
	case 13:
		/* Right number, wrong size or direction. */
		cmd = _IOC(rnd() % 4, BLK_SNAP, rnd() % 13, rnd() % 64);
		break;
	default:
		cmd = _IOC(rnd() % 4, rnd() % 2 ? BLK_SNAP : rnd() % 256,
			   rnd() % 256, rnd() % 4096);
		break;
	}

	ret = ioctl(fd, cmd, rnd() % 16 ? (void *)&a : rnd_ptr(&a));
	if (!ret && cmd == IOCTL_BLK_SNAP_SNAPSHOT_CREATE)
		remember_id(&a.create.id);
	return ret < 0 ? errno : 0;
}

static void destroy_all(int fd)
{
	struct blk_snap_snapshot_collect c = { .count = 4096, .ids = buf.ids };

	if (ioctl(fd, IOCTL_BLK_SNAP_SNAPSHOT_COLLECT, &c))
		return;
	for (unsigned int i = 0; i < c.count; i++) {
		struct blk_snap_uuid id = buf.ids[i];

		ioctl(fd, IOCTL_BLK_SNAP_SNAPSHOT_DESTROY, &id);
	}
}

int fuzz_main(int argc, char **argv, int fd)
{
	unsigned long count, ok = 0, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: bsctl fuzz COUNT SEED [MAJ:MIN...]\n");
		return 2;
	}
	count = strtoul(argv[0], NULL, 0);
	rng_state = strtoull(argv[1], NULL, 0) | 1;
	for (int i = 2; i < argc && nr_devs < 16; i++)
		if (sscanf(argv[i], "%u:%u", &devs[nr_devs].mj,
			   &devs[nr_devs].mn) == 2)
			nr_devs++;

	for (unsigned long i = 0; i < count; i++) {
		if (one_call(fd))
			failed++;
		else
			ok++;
		/* Keep the number of live snapshots, and memory, bounded. */
		if (i % 5000 == 4999)
			destroy_all(fd);
	}
	destroy_all(fd);
	printf("OK %lu calls: %lu succeeded, %lu failed\n", count, ok, failed);
	return 0;
}
