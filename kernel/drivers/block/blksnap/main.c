// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/blkdev.h>
#include "params.h"
#include "ctrl.h"
#include "tracker.h"
#include "snapimage.h"
#include "snapshot.h"
#include "diff_buffer.h"
#include "diff_io.h"

static int __init blk_snap_init(void)
{
	int ret;

	pr_info("Loading\n");
	ret = params_check();
	if (ret)
		return ret;

	ret = diff_io_init();
	if (ret)
		return ret;

	/* Its scans queue work on blksnap_wq. */
	ret = diff_buffer_init();
	if (ret)
		goto fail_diff_io;

	ret = tracker_init();
	if (ret)
		goto fail_diff_buffer;

	ret = snapimage_init();
	if (ret)
		goto fail_tracker;

	ret = ctrl_init();
	if (ret)
		goto fail_snapimage;

	return 0;

fail_snapimage:
	snapimage_done();
fail_tracker:
	tracker_done();
fail_diff_buffer:
	diff_buffer_done();
fail_diff_io:
	diff_io_done();
	return ret;
}

static void __exit blk_snap_exit(void)
{
	pr_info("Unloading module\n");

	ctrl_done();
	snapshot_done();
	snapimage_done();
	tracker_done();
	diff_buffer_done();
	diff_io_done();

	pr_info("Module was unloaded\n");
}

module_init(blk_snap_init);
module_exit(blk_snap_exit);
