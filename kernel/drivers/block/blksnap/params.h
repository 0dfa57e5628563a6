/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_PARAMS_H
#define __BLK_SNAP_PARAMS_H

/*
 * Module parameters, defined in params.c. They are read-only once the
 * module is loaded; blk_snap_init() refuses to load with one out of its
 * bounds (params_check()).
 */
extern int tracking_block_minimum_shift;
extern int tracking_block_maximum_count;
extern int chunk_minimum_shift;
extern int chunk_maximum_count;
extern int chunk_maximum_in_cache;
extern int free_diff_buffer_pool_size;
extern int buffer_memory_maximum_mb;
extern int diff_storage_minimum;
extern int diff_storage_wait_seconds;

int __init params_check(void);

#endif /* __BLK_SNAP_PARAMS_H */
