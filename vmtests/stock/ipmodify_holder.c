// SPDX-License-Identifier: GPL-2.0
/*
 * Test module for the standalone route, never packaged: it holds an
 * ftrace IPMODIFY hook on submit_bio_noacct_nocheck(), as a livepatch of
 * that function would, so that a test can show what bdev_filter.ko and
 * blksnap-storage say when the function is already taken. The hook
 * changes nothing: the function runs as usual.
 */
#include <linux/ftrace.h>
#include <linux/module.h>

static void notrace holder_handler(unsigned long ip, unsigned long parent_ip,
				   struct ftrace_ops *ops,
				   struct ftrace_regs *fregs)
{
}

static struct ftrace_ops holder_ops = {
	.func = holder_handler,
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_ARGS
	.flags = FTRACE_OPS_FL_IPMODIFY,
#else
	.flags = FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS,
#endif
};

static char target[] = "submit_bio_noacct_nocheck";

static int __init holder_init(void)
{
	int ret = ftrace_set_filter(&holder_ops, target, strlen(target), 1);

	if (ret)
		return ret;
	ret = register_ftrace_function(&holder_ops);
	if (ret)
		ftrace_free_filter(&holder_ops);
	return ret;
}

static void __exit holder_exit(void)
{
	unregister_ftrace_function(&holder_ops);
	ftrace_free_filter(&holder_ops);
}

module_init(holder_init);
module_exit(holder_exit);
MODULE_DESCRIPTION("Test only: an ftrace IPMODIFY user of submit_bio_noacct_nocheck()");
MODULE_LICENSE("GPL");
