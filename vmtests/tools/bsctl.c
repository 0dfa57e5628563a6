// SPDX-License-Identifier: GPL-2.0
/*
 * bsctl: raw access to every blksnap ioctl, for the VM tests.
 *
 * Unlike blksnap-storage it passes its arguments to the kernel as they are
 * (unaligned ranges, zero counts, NULL or wild pointers), so that the tests
 * can check how the kernel answers bad input. It prints "OK ..." with the
 * results, or "ERR <errno name>" and exits 1.
 */
#define _GNU_SOURCE	/* O_DIRECT */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/blksnap.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <linux/fiemap.h>
#include <sys/stat.h>

static int ctl_fd = -1;

static const char *errname(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case ENXIO: return "ENXIO";
	case E2BIG: return "E2BIG";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case ENOSPC: return "ENOSPC";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENODATA: return "ENODATA";
	case ENOBUFS: return "ENOBUFS";
	case EALREADY: return "EALREADY";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EBADF: return "EBADF";
	case ETXTBSY: return "ETXTBSY";
	case EROFS: return "EROFS";
	default: return "E?";
	}
}

/*
 * BSCTL_FAIL_NTH=N in the environment: the Nth fault-injection point that
 * the ioctl passes (a kmalloc or page allocation, on a kernel with
 * CONFIG_FAULT_INJECTION) fails. Armed for this thread just before the
 * call and disarmed right after it, so that nothing else in the program
 * uses it up. When the call passed fewer than N points, its output starts
 * with "NOT-REACHED ".
 */
static int fail_nth_fd = -1;

static int ioctl_or_report(unsigned long cmd, void *arg)
{
	const char *n = getenv("BSCTL_FAIL_NTH");
	int ret, err;

	if (n) {
		fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
		if (fail_nth_fd < 0 || write(fail_nth_fd, n, strlen(n)) < 0) {
			printf("ERR fail-nth %s\n", errname(errno));
			exit(1);
		}
	}
	ret = ioctl(ctl_fd, cmd, arg);
	err = errno;
	if (n) {
		char left[16] = "";

		/* What is left of the count: the call passed fewer points. */
		if (pread(fail_nth_fd, left, sizeof(left) - 1, 0) > 0 &&
		    atoi(left) > 0)
			printf("NOT-REACHED ");
		if (write(fail_nth_fd, "0", 1) < 0) {
			printf("ERR fail-nth %s\n", errname(errno));
			exit(1);
		}
	}
	if (ret < 0) {
		printf("ERR %s\n", errname(err));
		exit(1);
	}
	return ret;
}

static void parse_dev(const char *s, struct blk_snap_dev *dev)
{
	if (sscanf(s, "%u:%u", &dev->mj, &dev->mn) != 2) {
		fprintf(stderr, "bad device %s (want MAJ:MIN)\n", s);
		exit(2);
	}
}

static void parse_range(const char *s, struct blk_snap_block_range *r)
{
	if (sscanf(s, "%llu:%llu", &r->sector_offset,
		   &r->sector_count) != 2) {
		fprintf(stderr, "bad range %s (want START:COUNT)\n", s);
		exit(2);
	}
}

static void parse_id(const char *s, struct blk_snap_uuid *id)
{
	for (int i = 0; i < 16; i++) {
		while (*s == '-')
			s++;
		if (sscanf(s, "%2hhx", &id->b[i]) != 1) {
			fprintf(stderr, "bad id\n");
			exit(2);
		}
		s += 2;
	}
}

static void print_id(const struct blk_snap_uuid *id)
{
	for (int i = 0; i < 16; i++)
		printf("%02x%s", id->b[i],
		       (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
}

/* "NULL" and "WILD" stand for a NULL and an unmapped pointer. */
static void *ptr_arg(const char *s, void *real)
{
	if (s && !strcmp(s, "NULL"))
		return NULL;
	if (s && !strcmp(s, "WILD"))
		return (void *)0xdead000000000000ULL;
	return real;
}

static int cmd_version(void)
{
	struct blk_snap_version v;

	ioctl_or_report(IOCTL_BLK_SNAP_VERSION, &v);
	printf("OK %u.%u.%u.%u\n", v.major, v.minor, v.revision, v.build);
	return 0;
}

static int cmd_create(int argc, char **argv)
{
	struct blk_snap_snapshot_create arg = { .count = argc };
	struct blk_snap_dev devs[256];

	for (int i = 0; i < argc && i < 256; i++)
		parse_dev(argv[i], &devs[i]);
	arg.dev_id_array = devs;
	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_CREATE, &arg);
	printf("OK ");
	print_id(&arg.id);
	printf("\n");
	return 0;
}

static int cmd_append(int argc, char **argv)
{
	struct blk_snap_snapshot_append_storage arg = { 0 };
	struct blk_snap_block_range *ranges;

	if (argc < 2)
		return 2;
	parse_id(argv[0], &arg.id);
	parse_dev(argv[1], &arg.dev_id);
	arg.count = argc - 2;
	ranges = calloc(arg.count + 1, sizeof(*ranges));
	for (int i = 2; i < argc; i++)
		parse_range(argv[i], &ranges[i - 2]);
	arg.ranges = ranges;
	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_APPEND_STORAGE, &arg);
	printf("OK\n");
	return 0;
}

/*
 * The sectors of FD's blocks, page-aligned runs of them (as the kernel maps
 * a swap file), from FIEMAP: into *ranges, returns their number.
 */
static unsigned int file_ranges(int fd, struct blk_snap_block_range **ranges)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[512];
	} m;
	unsigned int n = 0, cap = 0;
	__u64 start = 0;
	int last = 0;

	*ranges = NULL;
	while (!last) {
		memset(&m, 0, sizeof(m));
		m.fm.fm_start = start;
		m.fm.fm_length = ~0ULL - start;
		m.fm.fm_flags = FIEMAP_FLAG_SYNC;
		m.fm.fm_extent_count = 512;
		if (ioctl(fd, FS_IOC_FIEMAP, &m.fm) < 0) {
			printf("ERR fiemap %s\n", errname(errno));
			exit(1);
		}
		if (!m.fm.fm_mapped_extents)
			break;
		for (unsigned int i = 0; i < m.fm.fm_mapped_extents; i++) {
			struct fiemap_extent *e = &m.ext[i];
			__u64 a = (e->fe_physical + 4095) & ~4095ULL;
			__u64 z = (e->fe_physical + e->fe_length) & ~4095ULL;

			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				last = 1;
			start = e->fe_logical + e->fe_length;
			if (a >= z)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				*ranges = realloc(*ranges, cap * sizeof(**ranges));
			}
			(*ranges)[n].sector_offset = a / 512;
			(*ranges)[n].sector_count = (z - a) / 512;
			n++;
		}
	}
	return n;
}

/*
 * append-file [-w] [-H] [-f FLAGS] [-R RESERVED] [-d FD] [-c COUNT] ID FILE [RANGE...]:
 * give FILE (opened read-only; -w: for reading and writing; -d: the raw
 * descriptor number FD instead) with RANGEs, or without them with every
 * page-aligned run of its blocks; -c: say COUNT ranges, whatever there are;
 * -H: no range and no array (hold only).
 */
static int cmd_append_file(int argc, char **argv)
{
	struct blk_snap_snapshot_append_file arg = { 0 };
	struct blk_snap_block_range *ranges = NULL;
	int rw = 0, hold = 0, raw_fd = -1, fd;
	long count = -1;
	struct stat st = { 0 };

	while (argc > 0 && argv[0][0] == '-' && argc > 1) {
		if (!strcmp(argv[0], "-w") || !strcmp(argv[0], "-H")) {
			if (argv[0][1] == 'w')
				rw = 1;
			else
				hold = 1;
			argc--, argv++;
			continue;
		}
		if (argc < 3)
			return 2;
		if (!strcmp(argv[0], "-f"))
			arg.flags = strtoul(argv[1], NULL, 0);
		else if (!strcmp(argv[0], "-R"))
			arg.reserved = strtoul(argv[1], NULL, 0);
		else if (!strcmp(argv[0], "-d"))
			raw_fd = atoi(argv[1]);
		else if (!strcmp(argv[0], "-c"))
			count = strtol(argv[1], NULL, 0);
		else
			return 2;
		argc -= 2, argv += 2;
	}
	if (argc < 2)
		return 2;
	parse_id(argv[0], &arg.id);
	if (stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode))
		fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	else
		fd = open(argv[1], rw ? O_RDWR : O_RDONLY);
	if (fd < 0) {
		printf("ERR open %s\n", errname(errno));
		return 1;
	}
	arg.fd = raw_fd >= 0 ? raw_fd : fd;
	if (argc > 2) {
		arg.count = argc - 2;
		ranges = calloc(arg.count, sizeof(*ranges));
		for (int i = 2; i < argc; i++)
			parse_range(argv[i], &ranges[i - 2]);
	} else if (S_ISREG(st.st_mode)) {
		arg.count = file_ranges(fd, &ranges);
	}
	if (count >= 0)
		arg.count = count;
	arg.ranges = (__u64)(uintptr_t)ranges;
	if (hold) {
		arg.count = 0;
		arg.ranges = 0;
	}
	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_APPEND_FILE, &arg);
	printf("OK %u\n", arg.count);
	return 0;
}

/* append-raw ID DEV COUNT PTR: a count that does not match the array. */
static int cmd_append_raw(int argc, char **argv)
{
	struct blk_snap_snapshot_append_storage arg = { 0 };
	static struct blk_snap_block_range one = { 0, 8 };

	if (argc < 4)
		return 2;
	parse_id(argv[0], &arg.id);
	parse_dev(argv[1], &arg.dev_id);
	arg.count = strtoul(argv[2], NULL, 0);
	arg.ranges = ptr_arg(argv[3], &one);
	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_APPEND_STORAGE, &arg);
	printf("OK\n");
	return 0;
}

static int cmd_id_only(unsigned long cmd, const char *id)
{
	struct blk_snap_uuid uuid;

	parse_id(id, &uuid);
	ioctl_or_report(cmd, &uuid);
	printf("OK\n");
	return 0;
}

static int cmd_collect(void)
{
	struct blk_snap_snapshot_collect arg = { 0 };
	struct blk_snap_uuid ids[64];

	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_COLLECT, &arg);
	printf("OK %u", arg.count);
	arg.ids = ids;
	arg.count = 64;
	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_COLLECT, &arg);
	for (unsigned int i = 0; i < arg.count; i++) {
		printf(" ");
		print_id(&ids[i]);
	}
	printf("\n");
	return 0;
}

/* collect-raw COUNT PTR */
static int cmd_collect_raw(int argc, char **argv)
{
	struct blk_snap_snapshot_collect arg = { 0 };
	static struct blk_snap_uuid ids[64];

	if (argc < 2)
		return 2;
	arg.count = strtoul(argv[0], NULL, 0);
	arg.ids = ptr_arg(argv[1], ids);
	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_COLLECT, &arg);
	printf("OK %u\n", arg.count);
	return 0;
}

static int cmd_images(const char *id)
{
	struct blk_snap_snapshot_collect_images arg = { 0 };
	struct blk_snap_image_info info[256];

	parse_id(id, &arg.id);
	arg.count = 256;
	arg.image_info_array = info;
	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_COLLECT_IMAGES, &arg);
	printf("OK");
	for (unsigned int i = 0; i < arg.count; i++)
		printf(" %u:%u=%u:%u", info[i].orig_dev_id.mj,
		       info[i].orig_dev_id.mn, info[i].image_dev_id.mj,
		       info[i].image_dev_id.mn);
	printf("\n");
	return 0;
}

static int cmd_wait(const char *id, const char *timeout)
{
	static struct blk_snap_snapshot_event ev;

	parse_id(id, &ev.id);
	ev.timeout_ms = strtoul(timeout, NULL, 0);
	ioctl_or_report(IOCTL_BLK_SNAP_SNAPSHOT_WAIT_EVENT, &ev);
	if (ev.code == blk_snap_event_code_low_free_space) {
		struct blk_snap_event_low_free_space *d = (void *)ev.data;

		printf("OK low_free_space %" PRIu64 "\n",
		       (uint64_t)d->requested_nr_sect);
	} else if (ev.code == blk_snap_event_code_corrupted) {
		struct blk_snap_event_corrupted *d = (void *)ev.data;

		printf("OK corrupted %u:%u %d\n", d->orig_dev_id.mj,
		       d->orig_dev_id.mn, d->err_code);
	} else {
		printf("OK code %u\n", ev.code);
	}
	return 0;
}

static int cmd_cbtinfo(void)
{
	struct blk_snap_tracker_collect arg = { 0 };
	struct blk_snap_cbt_info info[64];

	ioctl_or_report(IOCTL_BLK_SNAP_TRACKER_COLLECT, &arg);
	arg.count = 64;
	arg.cbt_info_array = info;
	ioctl_or_report(IOCTL_BLK_SNAP_TRACKER_COLLECT, &arg);
	printf("OK %u\n", arg.count);
	for (unsigned int i = 0; i < arg.count; i++) {
		printf("%u:%u blk_size=%u capacity=%llu blk_count=%u snap_number=%u gen=",
		       info[i].dev_id.mj, info[i].dev_id.mn, info[i].blk_size,
		       (unsigned long long)info[i].device_capacity,
		       info[i].blk_count, info[i].snap_number);
		print_id(&info[i].generation_id);
		printf("\n");
	}
	return 0;
}

/* cbtread DEV OFFSET LENGTH [NULL|WILD]: prints the non-zero bytes. */
static int cmd_cbtread(int argc, char **argv)
{
	struct blk_snap_tracker_read_cbt_bitmap arg = { 0 };
	unsigned char *buf;
	int n;

	if (argc < 3)
		return 2;
	parse_dev(argv[0], &arg.dev_id);
	arg.offset = strtoul(argv[1], NULL, 0);
	arg.length = strtoul(argv[2], NULL, 0);
	buf = calloc(1, arg.length + 1);
	arg.buff = ptr_arg(argc > 3 ? argv[3] : NULL, buf);
	n = ioctl_or_report(IOCTL_BLK_SNAP_TRACKER_READ_CBT_MAP, &arg);
	printf("OK %d", n);
	for (int i = 0; i < n; i++)
		if (buf[i])
			printf(" %u=%u", arg.offset + i, buf[i]);
	printf("\n");
	return 0;
}

static int cmd_markdirty(int argc, char **argv)
{
	struct blk_snap_tracker_mark_dirty_blocks arg = { 0 };
	struct blk_snap_block_range *ranges;

	if (argc < 1)
		return 2;
	parse_dev(argv[0], &arg.dev_id);
	arg.count = argc - 1;
	ranges = calloc(arg.count + 1, sizeof(*ranges));
	for (int i = 1; i < argc; i++)
		parse_range(argv[i], &ranges[i - 1]);
	arg.dirty_blocks_array = ranges;
	ioctl_or_report(IOCTL_BLK_SNAP_TRACKER_MARK_DIRTY_BLOCKS, &arg);
	printf("OK\n");
	return 0;
}

static int cmd_tracker_remove(const char *dev)
{
	struct blk_snap_tracker_remove arg;

	parse_dev(dev, &arg.dev_id);
	ioctl_or_report(IOCTL_BLK_SNAP_TRACKER_REMOVE, &arg);
	printf("OK\n");
	return 0;
}

/* raw NR PTR: an ioctl number of the 'V' type with any argument. */
static int cmd_raw(int argc, char **argv)
{
	unsigned long cmd;

	if (argc < 2)
		return 2;
	cmd = strtoul(argv[0], NULL, 0);
	ioctl_or_report(cmd, ptr_arg(argv[1], NULL));
	printf("OK\n");
	return 0;
}

/*
 * nowait-write DEV OFFSET: write stdin to DEV at byte OFFSET in 4 KiB
 * O_DIRECT pieces with RWF_NOWAIT, as io_uring submits, so that the bios
 * carry REQ_NOWAIT. A piece refused with EAGAIN is retried with RWF_NOWAIT
 * up to 1000 times, 1 ms apart, then once without it. Prints
 * "OK pieces=N eagain=M blocking=K".
 */
static int cmd_nowait_write(int argc, char **argv)
{
	unsigned long pieces = 0, eagain = 0, blocking = 0;
	struct iovec iov;
	off_t offset;
	char *buf;
	int fd;

	if (argc != 2)
		return 2;
	offset = strtoll(argv[1], NULL, 0);
	fd = open(argv[0], O_WRONLY | O_DIRECT);
	if (fd < 0) {
		printf("ERR %s\n", errname(errno));
		return 1;
	}
	/* posix_memalign() returns its error, errno is not set. */
	if (posix_memalign((void **)&buf, 4096, 4096)) {
		printf("ERR ENOMEM\n");
		return 1;
	}
	iov.iov_base = buf;
	iov.iov_len = 4096;
	while (fread(buf, 1, 4096, stdin) == 4096) {
		ssize_t r;
		int tries = 0;

		while ((r = pwritev2(fd, &iov, 1, offset, RWF_NOWAIT)) < 0 &&
		       errno == EAGAIN && ++tries <= 1000) {
			eagain++;
			usleep(1000);
		}
		if (r < 0 && errno == EAGAIN) {
			blocking++;
			r = pwritev2(fd, &iov, 1, offset, 0);
		}
		if (r != 4096) {
			printf("ERR %s\n", r < 0 ? errname(errno) : "short write");
			return 1;
		}
		offset += 4096;
		pieces++;
	}
	if (fsync(fd)) {
		printf("ERR %s\n", errname(errno));
		return 1;
	}
	close(fd);
	printf("OK pieces=%lu eagain=%lu blocking=%lu\n", pieces, eagain,
	       blocking);
	return 0;
}

/*
 * starved-write DEV STRIDE COUNT: COUNT 4 KiB O_DIRECT writes of stdin's
 * data, at 0, STRIDE, 2 * STRIDE..., each made with every kmalloc and page
 * allocation of this thread failing (/proc/thread-self/make-it-fail, with
 * the fault attributes the test set: task-filter, probability 100). Copy-
 * on-write in the submitter then has no memory but its reserves.
 */
static int cmd_starved_write(int argc, char **argv)
{
	unsigned long count, done;
	off_t stride;
	char *buf;
	int fd, fail_fd;

	if (argc != 3)
		return 2;
	stride = strtoll(argv[1], NULL, 0);
	count = strtoul(argv[2], NULL, 0);
	fd = open(argv[0], O_WRONLY | O_DIRECT);
	fail_fd = open("/proc/thread-self/make-it-fail", O_WRONLY);
	if (fd < 0 || fail_fd < 0) {
		printf("ERR %s\n", errname(errno));
		return 1;
	}
	if (posix_memalign((void **)&buf, 4096, 4096)) {
		printf("ERR ENOMEM\n");
		return 1;
	}
	for (done = 0; done < count; done++) {
		ssize_t r;
		int err;

		if (fread(buf, 1, 4096, stdin) != 4096)
			break;
		if (pwrite(fail_fd, "1", 1, 0) != 1) {
			printf("ERR make-it-fail %s\n", errname(errno));
			return 1;
		}
		r = pwrite(fd, buf, 4096, (off_t)done * stride);
		err = errno;
		if (pwrite(fail_fd, "0", 1, 0) != 1) {
			printf("ERR make-it-fail %s\n", errname(errno));
			return 1;
		}
		if (r != 4096) {
			printf("ERR write %lu: %s\n", done,
			       r < 0 ? errname(err) : "short write");
			return 1;
		}
	}
	printf("OK writes=%lu\n", done);
	return 0;
}

int fuzz_main(int argc, char **argv, int fd);

/* gen's stream: the xorshift64 state for SEED, then one block at a time. */
static uint64_t gen_seed(const char *seed)
{
	return strtoull(seed, NULL, 0) * 2654435761ULL + 88172645463325252ULL;
}

static void gen_block(uint64_t *x, uint64_t *block, size_t words)
{
	for (size_t i = 0; i < words; i++) {
		*x ^= *x << 13;
		*x ^= *x >> 7;
		*x ^= *x << 17;
		block[i] = *x;
	}
}

/*
 * gen SEED BYTES: reproducible pseudo-random data on stdout, so that a
 * test can write the same data again to compare (xorshift64).
 */
static int cmd_gen(int argc, char **argv)
{
	static uint64_t block[8192];
	uint64_t x, left;

	if (argc < 2)
		return 2;
	x = gen_seed(argv[0]);
	left = strtoull(argv[1], NULL, 0);
	while (left) {
		size_t n = left < sizeof(block) ? left : sizeof(block);

		gen_block(&x, block, sizeof(block) / 8);
		if (fwrite(block, 1, n, stdout) != n)
			return 1;
		left -= n;
	}
	return 0;
}

/*
 * put SEED BYTES FILE OFFSET: gen's data for SEED written into FILE (a
 * device) at byte OFFSET, then fsync: what "gen | dd conv=notrunc,fsync"
 * did without the pipe, which carries only about 10 MiB/s under TCG.
 */
static int cmd_put(int argc, char **argv)
{
	static uint64_t block[8192];
	uint64_t x, left, off;
	int fd;

	if (argc < 4)
		return 2;
	x = gen_seed(argv[0]);
	left = strtoull(argv[1], NULL, 0);
	off = strtoull(argv[3], NULL, 0);
	fd = open(argv[2], O_WRONLY);
	if (fd < 0) {
		printf("ERR %s\n", errname(errno));
		return 1;
	}
	while (left) {
		size_t n = left < sizeof(block) ? left : sizeof(block);
		ssize_t r;

		gen_block(&x, block, sizeof(block) / 8);
		for (size_t done = 0; done < n; done += r) {
			r = pwrite(fd, (char *)block + done, n - done, off + done);
			if (r <= 0) {
				printf("ERR %s\n", r < 0 ? errname(errno) : "short write");
				return 1;
			}
		}
		left -= n;
		off += n;
	}
	if (fsync(fd) || close(fd)) {
		printf("ERR %s\n", errname(errno));
		return 1;
	}
	return 0;
}

/* sum's hash: two multiply-xor lanes over 64-bit words, then the length. */
#define SUM_A0 0x9e3779b97f4a7c15ULL
#define SUM_B0 0xc2b2ae3d27d4eb4fULL

static void sum_words(uint64_t *a, uint64_t *b, const uint64_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		*a = (*a ^ w[i]) * 0xff51afd7ed558ccdULL;
		*a ^= *a >> 29;
		*b = (*b + w[i]) * 0xc4ceb9fe1a85ec53ULL;
		*b ^= *b >> 31;
	}
}

static void sum_print(uint64_t a, uint64_t b, uint64_t total)
{
	a = (a ^ total) * 0xff51afd7ed558ccdULL;
	a ^= a >> 33;
	b = (b ^ (total << 1)) * 0xc4ceb9fe1a85ec53ULL;
	b ^= b >> 33;
	printf("%016" PRIx64 "%016" PRIx64 "\n", a, b);
}

/*
 * sum FILE [direct] [MIB]: a fast 128-bit checksum of FILE's whole content,
 * or of its first MIB MiB (a
 * multiply-xor hash of 64-bit words, two lanes), printed as 32 hex digits.
 * Not cryptographic: it finds corruption, and under TCG it runs ten times
 * faster than sha256sum, which makes whole-device comparisons affordable.
 * "direct" reads with O_DIRECT (past the page cache). A read error prints
 * "ERR <errno name>" and exits 1.
 */
static int cmd_sum(int argc, char **argv)
{
	const size_t bufsize = 4 << 20;
	uint64_t a = SUM_A0, b = SUM_B0, total = 0;
	uint64_t *buf, limit = UINT64_MAX;
	int fd, flags = O_RDONLY, arg = 1;

	if (argc < 1)
		return 2;
	if (argc > arg && !strcmp(argv[arg], "direct")) {
		flags |= O_DIRECT;
		arg++;
	}
	if (argc > arg)
		limit = strtoull(argv[arg], NULL, 0) << 20;
	fd = open(argv[0], flags);
	if (fd < 0) {
		printf("ERR %s\n", errname(errno));
		return 1;
	}
	if (posix_memalign((void **)&buf, 4096, bufsize))
		return 1;
	for (;;) {
		ssize_t n = 0, r = 1;

		/* Whole buffers, so that short reads cannot shift the words. */
		while (n < (ssize_t)bufsize && r > 0 && total + n < limit) {
			size_t want = bufsize - n;

			if (want > limit - total - n)
				want = limit - total - n;
			r = read(fd, (char *)buf + n, want);
			if (r < 0) {
				printf("ERR %s\n", errname(errno));
				return 1;
			}
			n += r;
		}
		if (n == 0)
			break;
		if (n % 8)
			memset((char *)buf + n, 0, 8 - n % 8);
		sum_words(&a, &b, buf, (n + 7) / 8);
		total += n;
	}
	sum_print(a, b, total);
	close(fd);
	return 0;
}

/*
 * sum-gen SEED BYTES: what "gen SEED BYTES | sum" prints, without the
 * pipe (BYTES a multiple of 8).
 */
static int cmd_sum_gen(int argc, char **argv)
{
	static uint64_t block[8192];
	uint64_t a = SUM_A0, b = SUM_B0, x;
	uint64_t left, total;

	if (argc < 2)
		return 2;
	x = gen_seed(argv[0]);
	total = left = strtoull(argv[1], NULL, 0);
	if (total % 8)
		return 2;
	while (left) {
		size_t n = left < sizeof(block) ? left : sizeof(block);

		gen_block(&x, block, sizeof(block) / 8);
		sum_words(&a, &b, block, n / 8);
		left -= n;
	}
	sum_print(a, b, total);
	return 0;
}

/* fsmap MOUNTPOINT: every GETFSMAP record, "dev physical length owner flags". */
static int cmd_fsmap(int argc, char **argv)
{
	struct fsmap_head *h;
	int fd;

	if (argc != 1)
		return 2;
	fd = open(argv[0], O_RDONLY);
	h = calloc(1, fsmap_sizeof(128));
	if (fd < 0 || !h) {
		printf("ERR %s\n", errname(errno));
		return 1;
	}
	h->fmh_keys[1].fmr_device = UINT32_MAX;
	h->fmh_keys[1].fmr_flags = UINT32_MAX;
	h->fmh_keys[1].fmr_physical = UINT64_MAX;
	h->fmh_keys[1].fmr_owner = UINT64_MAX;
	h->fmh_keys[1].fmr_offset = UINT64_MAX;
	for (;;) {
		h->fmh_count = 128;
		if (ioctl(fd, FS_IOC_GETFSMAP, h) < 0) {
			printf("ERR %s\n", errname(errno));
			return 1;
		}
		if (!h->fmh_entries)
			break;
		for (unsigned int i = 0; i < h->fmh_entries; i++) {
			struct fsmap *r = &h->fmh_recs[i];

			printf("%u:%u %llu %llu %lld %#x\n",
			       (r->fmr_device >> 8) & 0xfff,
			       (r->fmr_device & 0xff) | ((r->fmr_device >> 12) & 0xfff00),
			       (unsigned long long)r->fmr_physical,
			       (unsigned long long)r->fmr_length,
			       (long long)r->fmr_owner, r->fmr_flags);
		}
		if (h->fmh_recs[h->fmh_entries - 1].fmr_flags & FMR_OF_LAST)
			break;
		fsmap_advance(h);
	}
	return 0;
}

/*
 * sigdfl CMD [ARGS...]: run CMD with SIGINT and SIGQUIT at their default,
 * which a shell's background job starts without.
 */
static int cmd_sigdfl(int argc, char **argv)
{
	if (argc < 1)
		return 2;
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	execvp(argv[0], argv);
	fprintf(stderr, "bsctl: sigdfl: %s: %s\n", argv[0], strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		fprintf(stderr, "usage: bsctl COMMAND [ARGS]\n");
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "gen"))
		return cmd_gen(argc - 2, argv + 2);
	if (!strcmp(cmd, "sum"))
		return cmd_sum(argc - 2, argv + 2);
	if (!strcmp(cmd, "put"))
		return cmd_put(argc - 2, argv + 2);
	if (!strcmp(cmd, "sum-gen"))
		return cmd_sum_gen(argc - 2, argv + 2);
	if (!strcmp(cmd, "nowait-write"))
		return cmd_nowait_write(argc - 2, argv + 2);
	if (!strcmp(cmd, "starved-write"))
		return cmd_starved_write(argc - 2, argv + 2);
	if (!strcmp(cmd, "fsmap"))
		return cmd_fsmap(argc - 2, argv + 2);
	if (!strcmp(cmd, "sigdfl"))
		return cmd_sigdfl(argc - 2, argv + 2);
	ctl_fd = open(BLK_SNAP_CTL, O_RDWR);
	if (ctl_fd < 0) {
		printf("ERR %s\n", errname(errno));
		return 1;
	}
	argc -= 2;
	argv += 2;
	if (!strcmp(cmd, "version"))
		return cmd_version();
	if (!strcmp(cmd, "create"))
		return cmd_create(argc, argv);
	if (!strcmp(cmd, "append"))
		return cmd_append(argc, argv);
	if (!strcmp(cmd, "append-file"))
		return cmd_append_file(argc, argv);
	if (!strcmp(cmd, "append-raw"))
		return cmd_append_raw(argc, argv);
	if (!strcmp(cmd, "take") && argc == 1)
		return cmd_id_only(IOCTL_BLK_SNAP_SNAPSHOT_TAKE, argv[0]);
	if (!strcmp(cmd, "destroy") && argc == 1)
		return cmd_id_only(IOCTL_BLK_SNAP_SNAPSHOT_DESTROY, argv[0]);
	if (!strcmp(cmd, "collect"))
		return cmd_collect();
	if (!strcmp(cmd, "collect-raw"))
		return cmd_collect_raw(argc, argv);
	if (!strcmp(cmd, "images") && argc == 1)
		return cmd_images(argv[0]);
	if (!strcmp(cmd, "wait") && argc == 2)
		return cmd_wait(argv[0], argv[1]);
	if (!strcmp(cmd, "cbtinfo"))
		return cmd_cbtinfo();
	if (!strcmp(cmd, "cbtread"))
		return cmd_cbtread(argc, argv);
	if (!strcmp(cmd, "markdirty"))
		return cmd_markdirty(argc, argv);
	if (!strcmp(cmd, "tracker-remove") && argc == 1)
		return cmd_tracker_remove(argv[0]);
	if (!strcmp(cmd, "raw"))
		return cmd_raw(argc, argv);
	if (!strcmp(cmd, "fuzz"))
		return fuzz_main(argc, argv, ctl_fd);
	fprintf(stderr, "bsctl: unknown command %s\n", cmd);
	return 2;
}
