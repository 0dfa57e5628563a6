// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <asm/page.h>
#include "params.h"
#include "version.h"

/*
 * What modinfo shows of the module: its identity here, and its parameters
 * with their descriptions below. The rest of the driver reads the
 * parameters through params.h.
 */
MODULE_DESCRIPTION("Non-persistent block device snapshots for backup, and change block tracking");
MODULE_VERSION(VERSION_STR);
MODULE_AUTHOR("Veeam Software Group GmbH");
MODULE_LICENSE("GPL");

/*
 * The power of 2 for the minimum tracking block size: 64 KiB by default.
 * A larger device gets a larger tracking block, so that the change tracking
 * table holds at most tracking_block_maximum_count bytes.
 */
int tracking_block_minimum_shift = 16;
int tracking_block_maximum_count = 2097152;

/*
 * The power of 2 for the minimum chunk size: 256 KiB by default. A chunk is
 * the unit copied to the difference storage. A larger device gets larger
 * chunks, so that there are at most chunk_maximum_count of them.
 */
int chunk_minimum_shift = 18;
int chunk_maximum_count = 2097152;

/* How many chunks may keep their data in memory, per cache. */
int chunk_maximum_in_cache = 32;

/* How many chunk-sized buffers each device keeps for reuse. */
int free_diff_buffer_pool_size = 128;

/*
 * The most memory, in MiB, each device keeps in chunk buffers it is not
 * using: a quarter for each cache, half for the free buffers. It bounds
 * the two counts above when chunks are large; the shrinker frees what
 * memory pressure asks for below it.
 */
int buffer_memory_maximum_mb = 64;

/*
 * When less than this many sectors (1 GiB by default) are left free in the
 * difference storage, user space is asked for more with a low free space
 * event asking for this many sectors.
 */
int diff_storage_minimum = 2097152;

/*
 * When the difference storage runs out, copy-on-write waits this long for
 * user space to append more (after the low free space event) before the
 * snapshot is marked corrupted; 0 fails at once. As dm-thin's
 * no_space_timeout.
 */
int diff_storage_wait_seconds = 60;

module_param_named(tracking_block_minimum_shift, tracking_block_minimum_shift,
		   int, 0444);
MODULE_PARM_DESC(tracking_block_minimum_shift,
		 "The power of 2 for the minimum tracking block size (12..30, default 16)");
module_param_named(tracking_block_maximum_count, tracking_block_maximum_count,
		   int, 0444);
MODULE_PARM_DESC(tracking_block_maximum_count,
		 "The maximum number of tracking blocks per device (1024..67108864, default 2097152)");
module_param_named(chunk_minimum_shift, chunk_minimum_shift, int, 0444);
MODULE_PARM_DESC(chunk_minimum_shift,
		 "The power of 2 for the minimum chunk size (12..26, default 18)");
module_param_named(chunk_maximum_count, chunk_maximum_count, int, 0444);
MODULE_PARM_DESC(chunk_maximum_count,
		 "The maximum number of chunks per device (1024..67108864, default 2097152)");
module_param_named(chunk_maximum_in_cache, chunk_maximum_in_cache, int, 0444);
MODULE_PARM_DESC(chunk_maximum_in_cache,
		 "The maximum number of chunks kept in memory per cache (1..65536, default 32)");
module_param_named(free_diff_buffer_pool_size, free_diff_buffer_pool_size,
		   int, 0444);
MODULE_PARM_DESC(free_diff_buffer_pool_size,
		 "The number of free chunk buffers kept per device (0..65536, default 128)");
module_param_named(buffer_memory_maximum_mb, buffer_memory_maximum_mb, int,
		   0444);
MODULE_PARM_DESC(buffer_memory_maximum_mb,
		 "The most memory in MiB each device keeps in free buffers and cached chunks (1..65536, default 64)");
module_param_named(diff_storage_minimum, diff_storage_minimum, int, 0444);
MODULE_PARM_DESC(diff_storage_minimum,
		 "Free sectors in the difference storage below which more is requested (2048..1073741824, default 2097152)");
module_param_named(diff_storage_wait_seconds, diff_storage_wait_seconds, int,
		   0444);
MODULE_PARM_DESC(diff_storage_wait_seconds,
		 "Seconds copy-on-write waits for storage to be appended when it runs out, before the snapshot is corrupted (0..3600, default 60)");

struct param_bound {
	const char *name;
	int *value;
	int min;
	int max;
};

static const struct param_bound param_bounds[] __initconst = {
	{ "tracking_block_minimum_shift", &tracking_block_minimum_shift, 12, 30 },
	{ "tracking_block_maximum_count", &tracking_block_maximum_count,
	  1024, 67108864 },
	{ "chunk_minimum_shift", &chunk_minimum_shift, PAGE_SHIFT, 26 },
	{ "chunk_maximum_count", &chunk_maximum_count, 1024, 67108864 },
	{ "chunk_maximum_in_cache", &chunk_maximum_in_cache, 1, 65536 },
	{ "free_diff_buffer_pool_size", &free_diff_buffer_pool_size, 0, 65536 },
	{ "buffer_memory_maximum_mb", &buffer_memory_maximum_mb, 1, 65536 },
	{ "diff_storage_minimum", &diff_storage_minimum, 2048, 1073741824 },
	{ "diff_storage_wait_seconds", &diff_storage_wait_seconds, 0, 3600 },
};

int __init params_check(void)
{
	const struct param_bound *p;

	for (p = param_bounds; p < param_bounds + ARRAY_SIZE(param_bounds); p++) {
		if (*p->value < p->min || *p->value > p->max) {
			pr_err("Parameter %s=%d is out of range %d..%d\n",
			       p->name, *p->value, p->min, p->max);
			return -EINVAL;
		}
	}
	return 0;
}
