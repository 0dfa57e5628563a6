/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's API, in user space, to run a blksnap source
 * file under cmocka with the I/O and the work items under the test's
 * control. Not a model of the kernel: each test says which order of
 * events it plays (a bio completing inside submit_bio_noacct(), a work
 * item running as soon as it is queued, as another CPU could).
 *
 * kfree() does not free: it poisons the memory (as SLAB_POISON does),
 * takes all access to it away and remembers it, so that a use after free
 * fails the test that makes it (the shim's own checks name it; any other
 * access is a segmentation fault, which cmocka reports as the test's
 * failure) rather than, by chance, a later one.
 */
#ifndef UNIT_KSHIM_H
#define UNIT_KSHIM_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef unsigned long long u64;
typedef u64 sector_t;
typedef unsigned int gfp_t;
typedef unsigned int blk_opf_t;
typedef u8 blk_status_t;

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define READ_ONCE(x) (*(volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define min_t(type, a, b) ((type)(a) < (type)(b) ? (type)(a) : (type)(b))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define might_sleep() do { } while (0)
#define pr_err(fmt, ...) fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)

#define PAGE_SHIFT 12
#define PAGE_SIZE (1UL << PAGE_SHIFT)
#define SECTOR_SHIFT 9
#define SECTOR_SIZE (1 << SECTOR_SHIFT)
#define PAGE_SECTORS (PAGE_SIZE / SECTOR_SIZE)
#define BIO_MAX_VECS 256U

#define GFP_NOIO 0x1u
#define GFP_NOWAIT 0x2u
#define __GFP_NOWARN 0x4u

struct list_head {
	struct list_head *next, *prev;
};
typedef struct { int locked; } spinlock_t;
/* diff_buffer.h's pool has one; diff_io.c never waits on it. */
typedef struct { int unused; } wait_queue_head_t;
typedef struct { int counter; } atomic_t;
struct page { char data[PAGE_SIZE]; };
struct block_device { int unused; };

static inline void atomic_set(atomic_t *a, int v) { a->counter = v; }
static inline int atomic_read(const atomic_t *a) { return a->counter; }
static inline void atomic_inc(atomic_t *a) { a->counter++; }
/*
 * A decrement that leaves the count above zero runs kshim_io.after_dec
 * once, if set: what another CPU did right after it (see the tests).
 */
bool atomic_dec_and_test(atomic_t *a);

/* Memory: see the comment at the top. */
#define KSHIM_POISON 0x6b
struct kshim_freed {
	void *p;
	size_t size;
	size_t mapped;
};
extern struct kshim_freed kshim_freed[256];
extern size_t kshim_nr_freed;

void *kzalloc(size_t size, gfp_t gfp);
void kfree(const void *p);
/* Has @p been given to kfree()? */
bool kshim_is_freed(const void *p);
/* Really free what kfree() kept; between tests. */
void kshim_release_freed(void);

/* Work items: queue_work() runs the item at once, unless held. */
struct work_struct;
typedef void (*work_func_t)(struct work_struct *work);
struct work_struct {
	work_func_t func;
};
struct workqueue_struct { int unused; };
#define WQ_MEM_RECLAIM 0x1u
#define WQ_HIGHPRI 0x2u
#define INIT_WORK(w, f) ((w)->func = (f))
struct workqueue_struct *alloc_workqueue(const char *name, unsigned int flags,
					 int max_active);
void destroy_workqueue(struct workqueue_struct *wq);
bool queue_work(struct workqueue_struct *wq, struct work_struct *work);

struct completion {
	unsigned int done;
};
static inline void init_completion(struct completion *c) { c->done = 0; }
void complete(struct completion *c);
void wait_for_completion_io(struct completion *c);

/* Bios: submit_bio_noacct() completes the bio inside it, unless held. */
#define BLK_STS_OK 0
#define BLK_STS_IOERR 10
#define REQ_OP_READ 0u
#define REQ_OP_WRITE 1u
#define BIO_FILTERED 0
#define BIOSET_NEED_BVECS 1
struct bio;
typedef void (bio_end_io_t)(struct bio *);
struct bvec_iter {
	sector_t bi_sector;
	unsigned int bi_size;
};
struct bio {
	struct bio *bi_next;
	struct block_device *bi_bdev;
	blk_opf_t bi_opf;
	unsigned long bi_flags;
	blk_status_t bi_status;
	struct bvec_iter bi_iter;
	bio_end_io_t *bi_end_io;
	void *bi_private;
	unsigned short bi_max_vecs;
	unsigned short bi_vcnt;
};
struct bio_set { int unused; };
struct bio_list {
	struct bio *head, *tail;
};

int bioset_init(struct bio_set *bs, unsigned int pool_size,
		unsigned int front_pad, int flags);
void bioset_exit(struct bio_set *bs);
struct bio *bio_alloc_bioset(struct block_device *bdev, unsigned short nr_vecs,
			     blk_opf_t opf, gfp_t gfp, struct bio_set *bs);
void bio_put(struct bio *bio);
int bio_add_page(struct bio *bio, struct page *page, unsigned int len,
		 unsigned int off);
void submit_bio_noacct(struct bio *bio);
static inline void bio_set_flag(struct bio *bio, unsigned int bit)
{
	bio->bi_flags |= 1UL << bit;
}
static inline sector_t bio_sectors(const struct bio *bio)
{
	return bio->bi_iter.bi_size >> SECTOR_SHIFT;
}
static inline void bio_list_init(struct bio_list *bl) { bl->head = bl->tail = NULL; }
static inline void bio_list_add(struct bio_list *bl, struct bio *bio)
{
	bio->bi_next = NULL;
	if (bl->tail)
		bl->tail->bi_next = bio;
	else
		bl->head = bio;
	bl->tail = bio;
}
static inline struct bio *bio_list_pop(struct bio_list *bl)
{
	struct bio *bio = bl->head;

	if (bio) {
		bl->head = bio->bi_next;
		if (!bl->head)
			bl->tail = NULL;
		bio->bi_next = NULL;
	}
	return bio;
}

/* What the test controls, and what it can look at afterwards. */
struct kshim_io {
	/* Bios submitted and not completed (held), oldest first. */
	struct bio_list held;
	bool hold_bios;
	blk_status_t status;
	unsigned int submitted;
	/* Work items queued and not run (held). */
	struct work_struct *held_work[16];
	unsigned int nr_held_work;
	bool hold_work;
	void (*after_dec)(void);
};
extern struct kshim_io kshim_io;
void kshim_reset(void);
/* Completes the oldest held bio. */
void kshim_complete_one_bio(void);
/* Runs the held work items. */
void kshim_run_work(void);

#endif /* UNIT_KSHIM_H */
