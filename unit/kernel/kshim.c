// SPDX-License-Identifier: GPL-2.0
/* The user-space kernel shim of kshim.h. */
#include <sys/mman.h>
#include <unistd.h>

#include "kshim.h"

struct kshim_io kshim_io;
struct kshim_freed kshim_freed[256];
size_t kshim_nr_freed;

/*
 * Each allocation has its own pages: the size in front, the object after
 * it. kfree() makes them inaccessible.
 */
struct kshim_alloc {
	size_t size;
	size_t mapped;
	max_align_t data[];
};

void *kzalloc(size_t size, gfp_t gfp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t mapped = (sizeof(struct kshim_alloc) + size + page - 1) & ~(page - 1);
	struct kshim_alloc *a;

	(void)gfp;
	a = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(a != MAP_FAILED);
	a->size = size;
	a->mapped = mapped;
	return a->data;
}

void kfree(const void *p)
{
	struct kshim_alloc *a;

	if (!p)
		return;
	assert_false(kshim_is_freed(p));
	assert_true(kshim_nr_freed < sizeof(kshim_freed) / sizeof(kshim_freed[0]));
	a = container_of((void *)p, struct kshim_alloc, data);
	memset(a->data, KSHIM_POISON, a->size);
	kshim_freed[kshim_nr_freed].p = a;
	kshim_freed[kshim_nr_freed].size = a->size;
	kshim_freed[kshim_nr_freed].mapped = a->mapped;
	kshim_nr_freed++;
	assert_int_equal(mprotect(a, a->mapped, PROT_NONE), 0);
}

bool kshim_is_freed(const void *p)
{
	for (size_t i = 0; i < kshim_nr_freed; i++) {
		uintptr_t start = (uintptr_t)kshim_freed[i].p +
				  offsetof(struct kshim_alloc, data);

		if ((uintptr_t)p >= start &&
		    (uintptr_t)p < start + kshim_freed[i].size)
			return true;
	}
	return false;
}

void kshim_release_freed(void)
{
	for (size_t i = 0; i < kshim_nr_freed; i++)
		munmap(kshim_freed[i].p, kshim_freed[i].mapped);
	kshim_nr_freed = 0;
}

void kshim_reset(void)
{
	kshim_release_freed();
	memset(&kshim_io, 0, sizeof(kshim_io));
}

bool atomic_dec_and_test(atomic_t *a)
{
	void (*after)(void) = kshim_io.after_dec;

	if (--a->counter == 0)
		return true;
	if (after) {
		kshim_io.after_dec = NULL;
		after();
	}
	return false;
}

static struct workqueue_struct kshim_wq;

struct workqueue_struct *alloc_workqueue(const char *name, unsigned int flags,
					 int max_active)
{
	(void)name;
	(void)flags;
	(void)max_active;
	return &kshim_wq;
}

void destroy_workqueue(struct workqueue_struct *wq)
{
	(void)wq;
}

bool queue_work(struct workqueue_struct *wq, struct work_struct *work)
{
	assert_non_null(wq);
	assert_false(kshim_is_freed(work));
	if (kshim_io.hold_work) {
		assert_true(kshim_io.nr_held_work < 16);
		kshim_io.held_work[kshim_io.nr_held_work++] = work;
	} else {
		work->func(work);
	}
	return true;
}

void kshim_run_work(void)
{
	unsigned int i, n = kshim_io.nr_held_work;

	kshim_io.nr_held_work = 0;
	for (i = 0; i < n; i++)
		kshim_io.held_work[i]->func(kshim_io.held_work[i]);
}

void complete(struct completion *c)
{
	assert_false(kshim_is_freed(c));
	c->done++;
}

/* Single-threaded: whatever would end the wait must have happened. */
void wait_for_completion_io(struct completion *c)
{
	if (kshim_is_freed(c))
		fail_msg("wait_for_completion_io() on freed memory");
	if (!c->done)
		fail_msg("wait_for_completion_io() would wait forever");
	c->done--;
}

int bioset_init(struct bio_set *bs, unsigned int pool_size,
		unsigned int front_pad, int flags)
{
	(void)bs;
	(void)pool_size;
	(void)front_pad;
	(void)flags;
	return 0;
}

void bioset_exit(struct bio_set *bs)
{
	(void)bs;
}

struct bio *bio_alloc_bioset(struct block_device *bdev, unsigned short nr_vecs,
			     blk_opf_t opf, gfp_t gfp, struct bio_set *bs)
{
	struct bio *bio = kzalloc(sizeof(*bio), gfp);

	(void)bs;
	bio->bi_bdev = bdev;
	bio->bi_opf = opf;
	bio->bi_max_vecs = nr_vecs;
	return bio;
}

void bio_put(struct bio *bio)
{
	kfree(bio);
}

int bio_add_page(struct bio *bio, struct page *page, unsigned int len,
		 unsigned int off)
{
	(void)page;
	(void)off;
	if (bio->bi_vcnt >= bio->bi_max_vecs)
		return 0;
	bio->bi_vcnt++;
	bio->bi_iter.bi_size += len;
	return len;
}

static void kshim_end_bio(struct bio *bio)
{
	bio->bi_status = kshim_io.status;
	bio->bi_end_io(bio);
}

void submit_bio_noacct(struct bio *bio)
{
	assert_false(kshim_is_freed(bio));
	kshim_io.submitted++;
	if (kshim_io.hold_bios)
		bio_list_add(&kshim_io.held, bio);
	else
		kshim_end_bio(bio);
}

void kshim_complete_one_bio(void)
{
	struct bio *bio = bio_list_pop(&kshim_io.held);

	assert_non_null(bio);
	kshim_end_bio(bio);
}
