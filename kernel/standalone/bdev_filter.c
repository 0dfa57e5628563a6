// SPDX-License-Identifier: GPL-2.0
/*
 * bdev_filter.ko: the block device filter API of kernel/patches/0001 on an
 * unmodified Linux 6.1 kernel (Debian 12's), so that the blksnap driver of
 * kernel/drivers/block/blksnap/ runs there unchanged.
 *
 * Design, and how it keeps 0001's semantics:
 * - 0001 hooks the top of submit_bio_noacct_nocheck(). Here an ftrace ops
 *   with FTRACE_OPS_FL_IPMODIFY on that (unexported) function sends the
 *   call to bf_submit_bio_noacct_nocheck(), which filters the bio and then
 *   calls the real function; a call coming from this module is let
 *   through (within_module(parent_ip)), which is what ends the recursion.
 *   As in 0001 the hook is before the current->bio_list check, so bios
 *   that stacked drivers (dm, md) submit from their ->submit_bio are
 *   filtered too, and a bio to a partition also passes the whole disk's
 *   filter, with its sector already remapped.
 * - There is no bd_filter field: the filters are in a hash table keyed by
 *   the block_device pointer, read under RCU; every filtered bio holds a
 *   kref of its filter, and detach waits for an RCU grace period before it
 *   drops the device's reference, as 0001 does.
 * - BIO_FILTERED is the first unused bi_flags bit (bdev_filter_compat.h).
 *   The driver's own bios carry it and pass. Unlike 0001, the stock
 *   bio_set_dev() does not clear it: a bio that a driver redirects in place
 *   (md linear/raid0) after a filter saw it skips the filter of the device
 *   it is redirected to. dm clones its bios, which are filtered.
 * - 0001 detaches in bdev_evict_inode(); here a second IPMODIFY ops sends
 *   bdev_evict_inode() through bf_bdev_evict_inode(), which detaches (it
 *   may sleep, which a kprobe handler may not) and calls the real one.
 * - Both hooks are registered only while a filter is attached: an idle
 *   system runs the stock code. Every attached filter holds a reference
 *   of this module, so it cannot be unloaded under a filter.
 * - As in 0001, a bio being filtered, or whose completion a filter took
 *   over, holds a reference to the filter's module, dropped here once the
 *   filter's code has returned.
 * - Only one IPMODIFY ops may hook a function: if a livepatch already
 *   does, attaching fails with -EBUSY and a line saying so.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/ftrace.h>
#include <linux/hashtable.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#if !defined(CONFIG_DYNAMIC_FTRACE_WITH_ARGS) && !defined(CONFIG_DYNAMIC_FTRACE_WITH_REGS)
#error "bdev_filter needs a kernel with DYNAMIC_FTRACE_WITH_ARGS or DYNAMIC_FTRACE_WITH_REGS"
#endif
#ifndef CONFIG_KPROBES
#error "bdev_filter needs a kernel with KPROBES (to find unexported functions)"
#endif

struct bf_entry {
	struct hlist_node node;
	struct block_device *bdev;
	struct bdev_filter *flt;
};

/* Writers hold bf_lock; the hooks read under RCU. */
static DEFINE_HASHTABLE(bf_table, 6);
static DEFINE_MUTEX(bf_lock);
static unsigned int bf_count;

static void (*bf_real_submit)(struct bio *bio);
static void (*bf_real_evict)(struct inode *inode);
static unsigned long bf_submit_addr, bf_evict_addr;

/* Calls inside the replacement functions, waited for at unload. */
static atomic_t bf_inflight = ATOMIC_INIT(0);

static void bf_enter(void)
{
	atomic_inc(&bf_inflight);
}

static void bf_leave(void)
{
	if (atomic_dec_and_test(&bf_inflight))
		wake_up_var(&bf_inflight);
}

/* Under rcu_read_lock() or bf_lock. */
static struct bf_entry *bf_find(struct block_device *bdev)
{
	struct bf_entry *e;

	hash_for_each_possible_rcu(bf_table, e, node, (unsigned long)bdev,
				   lockdep_is_held(&bf_lock))
		if (e->bdev == bdev)
			return e;
	return NULL;
}

struct bdev_filter *bdev_filter_get_by_bdev(struct block_device *bdev)
{
	struct bdev_filter *flt = NULL;
	struct bf_entry *e;

	rcu_read_lock();
	e = bf_find(bdev);
	if (e) {
		flt = e->flt;
		if (!kref_get_unless_zero(&flt->kref))
			flt = NULL;
	}
	rcu_read_unlock();
	return flt;
}
EXPORT_SYMBOL_GPL(bdev_filter_get_by_bdev);

/*
 * 0001's bdev_filter_get_for_bio(): the filter with a reference for the
 * bio, and one to its module; none while that module is being unloaded.
 */
static struct bdev_filter *bf_get_for_bio(struct block_device *bdev)
{
	struct bdev_filter *flt = NULL;
	struct bf_entry *e;

	rcu_read_lock();
	e = bf_find(bdev);
	if (e && try_module_get(e->flt->fops->owner)) {
		flt = e->flt;
		if (!kref_get_unless_zero(&flt->kref)) {
			module_put(flt->fops->owner);
			flt = NULL;
		}
	}
	rcu_read_unlock();
	return flt;
}

/* Run @bdev's filter on @bio, if it has one (0001's bdev_filter_call()). */
static bool bf_call(struct block_device *bdev, struct bio *bio)
{
	struct bdev_filter *flt;
	struct module *owner;
	bool pass;

	flt = bf_get_for_bio(bdev);
	if (!flt)
		return true;
	owner = flt->fops->owner;
	pass = flt->fops->submit_bio_cb(bio, flt);
	bdev_filter_put(flt);
	module_put(owner);
	return pass;
}

/*
 * 0001's bdev_filter_end_io(). Its owner holds this module (it uses its
 * symbols) until module_put(); from there bf_inflight and bf_exit()'s
 * synchronize_rcu_tasks() cover the rest of this function.
 */
static void bf_end_io(struct bio *bio)
{
	struct bdev_filter_end_io *fe = bio->bi_private;
	struct module *owner = fe->owner;

	bf_enter();
	fe->end_io(bio);
	module_put(owner);
	bf_leave();
}

void bdev_filter_take_end_io(struct bio *bio, struct bdev_filter *flt,
			     struct bdev_filter_end_io *fe,
			     bio_end_io_t *end_io)
{
	/* bf_call() holds one already. */
	__module_get(flt->fops->owner);
	fe->end_io = end_io;
	fe->owner = flt->fops->owner;
	bio->bi_end_io = bf_end_io;
	bio->bi_private = fe;
}
EXPORT_SYMBOL_GPL(bdev_filter_take_end_io);

struct bdev_filter_end_io *bdev_filter_taken_end_io(struct bio *bio)
{
	if (bio->bi_end_io != bf_end_io)
		return NULL;
	return bio->bi_private;
}
EXPORT_SYMBOL_GPL(bdev_filter_taken_end_io);

static bool bf_has_filter(struct block_device *bdev)
{
	bool has;

	rcu_read_lock();
	has = bf_find(bdev) ||
	      (bdev_is_partition(bdev) && bf_find(bdev_whole(bdev)));
	rcu_read_unlock();
	return has;
}

/* 0001's bdev_filter_submit_bio(). */
static bool bf_submit_bio(struct bio *bio)
{
	struct block_device *bdev = bio->bi_bdev;

	if (bio_flagged(bio, BIO_FILTERED))
		return true;
	bio_set_flag(bio, BIO_FILTERED);

	if (!bf_call(bdev, bio))
		return false;
	if (bdev_is_partition(bdev))
		return bf_call(bdev_whole(bdev), bio);
	return true;
}

/*
 * What submit_bio_noacct_nocheck() runs while a filter is attached. The
 * call of the real function must stay a call (not a tail jump), so that
 * its parent_ip is in this module: see Kbuild's -fno-optimize-sibling-calls.
 */
static void bf_submit_bio_noacct_nocheck(struct bio *bio)
{
	bf_enter();
	if (!bf_has_filter(bio->bi_bdev) || bf_submit_bio(bio))
		bf_real_submit(bio);
	bf_leave();
}

static void bf_bdev_evict_inode(struct inode *inode)
{
	bf_enter();
	/* Nobody can submit I/O to a bdev whose inode is being evicted. */
	bdev_filter_detach(I_BDEV(inode));
	bf_real_evict(inode);
	bf_leave();
}

static void notrace bf_submit_handler(unsigned long ip, unsigned long parent_ip,
				      struct ftrace_ops *ops,
				      struct ftrace_regs *fregs)
{
	if (!within_module(parent_ip, THIS_MODULE))
		ftrace_instruction_pointer_set(fregs, (unsigned long)bf_submit_bio_noacct_nocheck);
}

static void notrace bf_evict_handler(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *ops,
				     struct ftrace_regs *fregs)
{
	if (!within_module(parent_ip, THIS_MODULE))
		ftrace_instruction_pointer_set(fregs, (unsigned long)bf_bdev_evict_inode);
}

/*
 * PERMANENT, as livepatch: while a filter is attached, sysctl
 * kernel.ftrace_enabled=0 is refused instead of silently unhooking the
 * filters, and attaching fails while it is 0.
 */
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_ARGS
#define BF_OPS_FLAGS (FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_PERMANENT)
#else
#define BF_OPS_FLAGS (FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_PERMANENT | \
		      FTRACE_OPS_FL_SAVE_REGS)
#endif

static struct ftrace_ops bf_submit_ops = {
	.func = bf_submit_handler,
	.flags = BF_OPS_FLAGS,
};

static struct ftrace_ops bf_evict_ops = {
	.func = bf_evict_handler,
	.flags = BF_OPS_FLAGS,
};

static int bf_register(struct ftrace_ops *ops, const char *name)
{
	int ret = register_ftrace_function(ops);

	if (ret == -EBUSY)
		pr_err("cannot hook %s(): another ftrace IPMODIFY user (a livepatch?) already modifies it, or sysctl kernel.ftrace_enabled is 0\n",
		       name);
	else if (ret)
		pr_err("cannot hook %s(): ftrace error %d (ftrace disabled after an error?)\n",
		       name, ret);
	return ret;
}

/* Under bf_lock, when the first filter comes. */
static int bf_hooks_register(void)
{
	int ret;

	ret = bf_register(&bf_evict_ops, "bdev_evict_inode");
	if (ret)
		return ret;
	ret = bf_register(&bf_submit_ops, "submit_bio_noacct_nocheck");
	if (ret)
		unregister_ftrace_function(&bf_evict_ops);
	return ret;
}

/* Under bf_lock, when the last filter goes. */
static void bf_hooks_unregister(void)
{
	unregister_ftrace_function(&bf_submit_ops);
	unregister_ftrace_function(&bf_evict_ops);
}

int bdev_filter_attach(struct block_device *bdev, struct bdev_filter *flt)
{
	struct bf_entry *e;
	int ret = 0;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->bdev = bdev;
	e->flt = flt;

	mutex_lock(&bf_lock);
	if (bf_find(bdev)) {
		ret = -EALREADY;
		goto out;
	}
	if (!bf_count) {
		/*
		 * The reason is in the kernel log; ftrace's -EBUSY would reach
		 * user space as "device busy" (in another snapshot).
		 */
		if (bf_hooks_register()) {
			ret = -EOPNOTSUPP;
			goto out;
		}
	}
	__module_get(THIS_MODULE);
	hash_add_rcu(bf_table, &e->node, (unsigned long)bdev);
	bf_count++;
	e = NULL;
out:
	mutex_unlock(&bf_lock);
	kfree(e);
	return ret;
}
EXPORT_SYMBOL_GPL(bdev_filter_attach);

int bdev_filter_detach(struct block_device *bdev)
{
	struct bf_entry *e;

	mutex_lock(&bf_lock);
	e = bf_find(bdev);
	if (!e) {
		mutex_unlock(&bf_lock);
		return -ENOENT;
	}
	hash_del_rcu(&e->node);
	if (!--bf_count)
		bf_hooks_unregister();
	mutex_unlock(&bf_lock);

	synchronize_rcu();
	bdev_filter_put(e->flt);
	kfree(e);
	module_put(THIS_MODULE);
	return 0;
}
EXPORT_SYMBOL_GPL(bdev_filter_detach);

/* The address of an unexported function: kallsyms_lookup_name(), found by a kprobe. */
static unsigned long bf_lookup(const char *name)
{
	static unsigned long (*lookup_name)(const char *name);
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };

	if (!lookup_name) {
		if (register_kprobe(&kp))
			return 0;
		lookup_name = (void *)kp.addr;
		unregister_kprobe(&kp);
	}
	return lookup_name(name);
}

static int bf_set_target(struct ftrace_ops *ops, const char *name,
			 unsigned long *addr)
{
	int ret;

	*addr = bf_lookup(name);
	if (!*addr) {
		pr_err("cannot find %s() (kprobes disabled?)\n", name);
		return -ENOENT;
	}
	ret = ftrace_set_filter_ip(ops, *addr, 0, 0);
	if (ret)
		pr_err("cannot trace %s(): error %d (this kernel is not supported)\n",
		       name, ret);
	return ret;
}

static int __init bf_init(void)
{
	int ret;

	BUILD_BUG_ON(BIO_FILTERED >= 8 * sizeof(((struct bio *)0)->bi_flags));

	ret = bf_set_target(&bf_submit_ops, "submit_bio_noacct_nocheck",
			    &bf_submit_addr);
	if (ret)
		return ret;
	ret = bf_set_target(&bf_evict_ops, "bdev_evict_inode", &bf_evict_addr);
	if (ret) {
		ftrace_free_filter(&bf_submit_ops);
		return ret;
	}
	bf_real_submit = (void *)bf_submit_addr;
	bf_real_evict = (void *)bf_evict_addr;
	return 0;
}

static void __exit bf_exit(void)
{
	/*
	 * No filter is attached (each holds a module reference), so the hooks
	 * are gone; wait for calls still inside the replacement functions,
	 * then for tasks preempted on their last instructions.
	 */
	wait_var_event(&bf_inflight, !atomic_read(&bf_inflight));
	synchronize_rcu_tasks();
	ftrace_free_filter(&bf_submit_ops);
	ftrace_free_filter(&bf_evict_ops);
}

module_init(bf_init);
module_exit(bf_exit);
MODULE_DESCRIPTION("Block device filters (the bdev_filter API) for unmodified Linux 6.1 kernels");
MODULE_AUTHOR("blksnap developers");
MODULE_LICENSE("GPL");
