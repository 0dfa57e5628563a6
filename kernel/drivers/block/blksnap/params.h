/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __BLK_SNAP_PARAMS_H
#define __BLK_SNAP_PARAMS_H

/*
 * Module parameters. They are read-only once the module is loaded and are
 * checked against their bounds in blk_snap_init().
 */
extern int tracking_block_minimum_shift;
extern int tracking_block_maximum_count;
extern int chunk_minimum_shift;
extern int chunk_maximum_count;
extern int chunk_maximum_in_cache;
extern int free_diff_buffer_pool_size;
extern int diff_storage_minimum;
extern int diff_storage_wait_seconds;

#endif /* __BLK_SNAP_PARAMS_H */
