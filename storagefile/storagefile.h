/* SPDX-License-Identifier: GPL-2.0 */
/*
 * storagefile - turn ordinary files into blksnap difference-storage ranges.
 *
 * The blksnap kernel module takes its copy-on-write storage as ranges of
 * 512-byte sectors on a block device (struct blk_snap_block_range, see
 * <linux/blksnap.h>).  This library allocates a regular file on ext4 or xfs,
 * reads its physical layout with FIEMAP and converts it to such ranges.
 *
 * Rules for every function here: return 0 or a negative errno, never print,
 * never exit, no global state.  Ranges are always sorted by sector_offset,
 * non-overlapping and merged (no two ranges touch).
 *
 * Typical use by a helper (error handling elided):
 *
 *	struct sf_ranges r = SF_RANGES_INIT;
 *	struct sf_file *f;
 *	int fd;
 *
 *	sf_parse_size(arg, &bytes);
 *	sf_openat_unnamed(dirfd, &f);       // -EOPNOTSUPP: sf_check_fs()
 *	sf_grow(f, bytes, &r);              // fallocate, fsync, FIEMAP
 *	fd = sf_reopen_readonly(f);
 *	ioctl(ctl, IOCTL_BLK_SNAP_SNAPSHOT_APPEND_FILE, ... fd, r.r, r.count);
 *	close(fd);                          // the kernel holds the file now
 *	sf_linkat(f, dirfd, name);          // the first one gets a name
 *	sf_ranges_free(&r);
 *	sf_close(f);
 *
 * The kernel holds a file given with APPEND_FILE until the snapshot is
 * gone: nobody can free or move its blocks, and it cannot grow, so each
 * growth is a new file.  sf_pin() (the immutable flag) is for callers
 * that append raw ranges with v1's APPEND_STORAGE; after the take the
 * kernel refuses such ranges on a snapshotted device over data not
 * copied yet (-EBUSY), blocks that were free at take included: growth on
 * a snapshotted file system goes through APPEND_FILE.
 */
#ifndef STORAGEFILE_H
#define STORAGEFILE_H

#include <assert.h>	/* blksnap.h uses static_assert */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/fiemap.h>
#include <linux/blksnap.h>

#define SF_SECTOR_SHIFT		9
#define SF_SECTOR_SIZE		(1u << SF_SECTOR_SHIFT)
/* Ranges are never finer than the page size the kernel does its I/O in. */
#define SF_MIN_ALIGN_BYTES	4096u
/* Kernel's default (minimum) chunk: 256 KiB. */
#define SF_DEFAULT_CHUNK_SECTORS 512u

/* ------------------------------------------------------------------ */
/* Size parsing                                                        */
/* ------------------------------------------------------------------ */

/**
 * sf_parse_size() - parse a human size such as "4G", "512M", "4096", "4k".
 * @s:     the text; units K, M, G, T, P (either case) are binary, also
 *         followed by "iB" ("4G", "4GiB": 4 GiB), and decimal when followed
 *         by a bare "B" ("4GB": 4,000,000,000 bytes), as util-linux's
 *         fallocate(1); a bare number or a bare "B" suffix means bytes.  No spaces, no sign, no fractions.
 * @bytes: out, the size in bytes.
 *
 * Return: 0; -EINVAL for NULL/empty text, a sign, junk or an unknown suffix,
 * or zero; -ERANGE if the value does not fit in 64 bits.
 */
int sf_parse_size(const char *s, uint64_t *bytes);

/* ------------------------------------------------------------------ */
/* Filesystem allow-list                                               */
/* ------------------------------------------------------------------ */

/**
 * sf_fs_name() - human name of a statfs f_type magic.
 * @f_type: statfs.f_type.
 *
 * Return: a static string such as "ext4", "xfs", "btrfs", "tmpfs", or NULL if
 * the magic is not known (the caller then prints it in hex; sf_check_fs()
 * does that for you).
 */
const char *sf_fs_name(unsigned long f_type);

/**
 * sf_fs_allowed() - may a filesystem of this type hold difference storage?
 * @f_type: statfs.f_type.
 *
 * Only filesystems whose FIEMAP extents are physical sectors of the device
 * in st_dev are allowed: ext2/3/4 (one magic) and xfs.
 *
 * Return: true if allowed.
 */
bool sf_fs_allowed(unsigned long f_type);

/**
 * sf_check_fs() - check the filesystem an open file lives on.
 * @fd:     any open file descriptor on that filesystem.
 * @fsname: out (may be NULL), set to the filesystem's human name, or to
 *          "unknown" for unknown magics (the magic is then in *@f_type).
 * @f_type: out (may be NULL), the raw statfs magic.
 *
 * Typical message: "%s: %s cannot hold difference storage (extents are not
 * physical sectors)".
 *
 * Return: 0 if allowed, -EOPNOTSUPP if not, -errno from fstatfs().
 */
int sf_check_fs(int fd, const char **fsname, unsigned long *f_type);

/**
 * sf_check_path_fs() - sf_check_fs() for a path that need not exist yet.
 * @path:   the storage file; if it does not exist, its directory is used.
 * @fsname: out (may be NULL), as for sf_check_fs().
 * @f_type: out (may be NULL), as for sf_check_fs().
 *
 * For the error message after sf_open() returned -EOPNOTSUPP.
 *
 * Return: as sf_check_fs(), -errno from statfs().
 */
int sf_check_path_fs(const char *path, const char **fsname,
		     unsigned long *f_type);

/* ------------------------------------------------------------------ */
/* Range lists                                                         */
/* ------------------------------------------------------------------ */

/**
 * struct sf_ranges - a sorted, merged list of sector ranges.
 * @r:              the ranges, ready for blk_snap_snapshot_append_storage.
 * @count:          number of valid entries in @r.
 * @cap:            allocated entries in @r.
 * @usable_sectors: sum of sector_count over @r (kept up to date by the
 *                  library's producers).
 * @wasted_sectors: sectors the producer had to leave out: allocated bytes
 *                  cut off by alignment, or withheld by sf_filter_free().
 *
 * Initialise with SF_RANGES_INIT or sf_ranges_init(); release with
 * sf_ranges_free().  Functions that fill an sf_ranges replace its content.
 */
struct sf_ranges {
	struct blk_snap_block_range *r;
	size_t count, cap;
	uint64_t usable_sectors, wasted_sectors;
};

#define SF_RANGES_INIT { NULL, 0, 0, 0, 0 }

/** sf_ranges_init() - make @rs an empty list (no allocation). */
void sf_ranges_init(struct sf_ranges *rs);

/** sf_ranges_free() - free @rs's memory and leave it empty and reusable. */
void sf_ranges_free(struct sf_ranges *rs);

/**
 * sf_ranges_append() - append a range, merging with the last one if touching.
 * @rs:     the list; @offset must be >= the end of its last range.
 * @offset: first sector.
 * @count:  number of sectors; 0 is a no-op.
 *
 * Return: 0; -EINVAL if out of order or overlapping; -EOVERFLOW if
 * offset + count overflows; -ENOMEM.
 */
int sf_ranges_append(struct sf_ranges *rs, uint64_t offset, uint64_t count);

/**
 * sf_ranges_usable() - how much of @rs the kernel can actually use.
 * @rs:            the ranges.
 * @chunk_sectors: the kernel's chunk size in sectors, a power of two
 *                 (SF_DEFAULT_CHUNK_SECTORS unless the origin is large).
 * @usable:        out (may be NULL), sectors in whole chunks.
 * @wasted:        out (may be NULL), the tails shorter than a chunk: the
 *                 kernel never splits a chunk across two ranges.
 *
 * Return: 0, or -EINVAL if @chunk_sectors is 0 or not a power of two.
 */
int sf_ranges_usable(const struct sf_ranges *rs, uint64_t chunk_sectors,
		     uint64_t *usable, uint64_t *wasted);

/* Defaults of the blksnap module parameters of the same names. */
#define SF_CHUNK_MINIMUM_SHIFT	18
#define SF_CHUNK_MAXIMUM_COUNT	2097152ull

/**
 * sf_chunk_sectors() - the chunk size the kernel will pick for an origin.
 * @capacity_sectors: size of the snapshotted (origin) device, sectors.
 * @min_io_bytes:     its queue/minimum_io_size (0 or 512 if unknown).
 * @minimum_shift:    module parameter chunk_minimum_shift (bytes, log2;
 *                    SF_CHUNK_MINIMUM_SHIFT by default).
 * @maximum_count:    module parameter chunk_maximum_count
 *                    (SF_CHUNK_MAXIMUM_COUNT by default).
 * @chunk_sectors:    out, a power of two, for sf_ranges_usable().
 *
 * Mirrors diff_area_calculate_chunk_size(): start at the minimum and double
 * while there would be more than @maximum_count chunks or a chunk would be
 * smaller than the minimum I/O size.
 *
 * Return: 0, or -EINVAL (shift < 9 or > 62, or @maximum_count 0).
 */
int sf_chunk_sectors(uint64_t capacity_sectors, uint32_t min_io_bytes,
		     unsigned int minimum_shift, uint64_t maximum_count,
		     uint64_t *chunk_sectors);

/**
 * sf_ranges_subtract() - the parts of @a not covered by @b.
 * @a:             ranges (sorted, merged).
 * @b:             ranges to remove (sorted, merged).
 * @align_sectors: each remaining piece is shrunk inward to this alignment
 *                 (a power of two, 1 for none) and dropped if empty.
 * @out:           out, replaced; out->wasted_sectors counts the sectors of
 *                 @a left out only because of alignment.
 *
 * Return: 0, -EINVAL (bad alignment), -ENOMEM.
 */
int sf_ranges_subtract(const struct sf_ranges *a, const struct sf_ranges *b,
		       uint64_t align_sectors, struct sf_ranges *out);

/**
 * sf_ranges_union() - merge @add into @into (both sorted, merged).
 * Return: 0, -ENOMEM (then @into is unchanged).
 */
int sf_ranges_union(struct sf_ranges *into, const struct sf_ranges *add);

/* ------------------------------------------------------------------ */
/* FIEMAP extents -> sector ranges (pure)                              */
/* ------------------------------------------------------------------ */

/*
 * Extent flags that make a file unusable: its bytes are not (yet, or not
 * only, or not verbatim) at fe_physical.  FIEMAP_EXTENT_UNWRITTEN (our
 * fallocated space) and FIEMAP_EXTENT_LAST are fine.
 */
#define SF_REFUSED_EXTENT_FLAGS (FIEMAP_EXTENT_UNKNOWN |		\
				 FIEMAP_EXTENT_DELALLOC |		\
				 FIEMAP_EXTENT_ENCODED |		\
				 FIEMAP_EXTENT_DATA_ENCRYPTED |	\
				 FIEMAP_EXTENT_NOT_ALIGNED |		\
				 FIEMAP_EXTENT_DATA_INLINE |		\
				 FIEMAP_EXTENT_DATA_TAIL |		\
				 FIEMAP_EXTENT_SHARED)

/**
 * sf_extent_flag_name() - name of one FIEMAP_EXTENT_* bit, e.g. "shared".
 * Return: a static string; "unknown flag" for bits it does not know.
 */
const char *sf_extent_flag_name(uint32_t flag);

/**
 * sf_extents_to_ranges() - physical layout of extents as aligned sectors.
 * @ext:           FIEMAP extents (any order; byte units as the kernel gives).
 * @n:             number of extents.
 * @align_bytes:   alignment, a power of two >= 512; use sf_align_bytes().
 * @out:           out, replaced: sorted, merged ranges.  Physically touching
 *                 extents are merged BEFORE shrinking, so no space is lost
 *                 at their seams; each merged run is then shrunk inward to
 *                 @align_bytes and dropped if empty.  out->wasted_sectors
 *                 counts what the shrinking cut off.
 * @refused_flag:  out (may be NULL), on -EOPNOTSUPP/-EAGAIN the single
 *                 FIEMAP_EXTENT_* bit that caused the refusal, else 0.
 *
 * Zero-length extents are ignored.  Extents are refused, whole call fails:
 * UNKNOWN or DELALLOC -> -EAGAIN (location not decided yet);
 * any other bit of SF_REFUSED_EXTENT_FLAGS -> -EOPNOTSUPP.
 *
 * Return: 0, -EAGAIN, -EOPNOTSUPP, -EOVERFLOW (fe_physical + fe_length
 * overflows 64 bits), -EINVAL (bad alignment), -ENOMEM.
 */
int sf_extents_to_ranges(const struct fiemap_extent *ext, size_t n,
			 uint32_t align_bytes, struct sf_ranges *out,
			 uint32_t *refused_flag);

/**
 * sf_new_ranges() - ranges of @now that were not handed out before.
 * @now:           the file's full current ranges (sf_extents_to_ranges()).
 * @given:         everything handed out before; updated to include the
 *                 result on success, unchanged on failure.
 * @align_sectors: alignment of the result (see sf_ranges_subtract()).
 * @out:           out, replaced: the new ranges, never overlapping @given,
 *                 even when a new extent physically extends an old one.
 *
 * Return: 0, -EINVAL, -ENOMEM.
 */
int sf_new_ranges(const struct sf_ranges *now, struct sf_ranges *given,
		  uint64_t align_sectors, struct sf_ranges *out);

/* ------------------------------------------------------------------ */
/* Free-at-take-time filter                                            */
/* ------------------------------------------------------------------ */

/**
 * sf_filter_free() - keep only the parts of @ranges that were free when
 *	the snapshot was taken.
 * @ranges:        candidate storage ranges (sorted, merged).
 * @in_use:        ranges in use at take time on the same device (sorted,
 *                 merged; e.g. from sf_fsmap_in_use() on the mounted image).
 * @align_sectors: the remaining pieces are shrunk again to this alignment.
 * @out:           out, replaced: the usable ranges.
 * @withheld:      out (may be NULL), sectors of @ranges in use at take
 *                 time.
 * @unaligned:     out (may be NULL), free sectors of @ranges lost to
 *                 re-alignment (also @out's wasted_sectors).
 *
 * Why: storage that lives on a snapshotted device must not be sectors the
 * snapshot image still shows as used by (since deleted) files.
 *
 * Return: 0, -EINVAL, -ENOMEM.
 */
int sf_filter_free(const struct sf_ranges *ranges,
		   const struct sf_ranges *in_use, uint64_t align_sectors,
		   struct sf_ranges *out, uint64_t *withheld,
		   uint64_t *unaligned);

/* ------------------------------------------------------------------ */
/* Take-time map (pure)                                                */
/* ------------------------------------------------------------------ */

#define SF_TAKEMAP_VERSION 1

/**
 * struct sf_takemap_key - what a take-time map is of; a map is only good
 *	for the snapshot, device and image it was read from.
 * @snapshot:     the snapshot's UUID.
 * @dev_major:    the device whose sectors the map names (where the storage
 * @dev_minor:    file's file system is).
 * @image_major:  the snapshot image the map was read from.
 * @image_minor:
 * @part_start:   where the device lies in the image (sectors), a partition
 *                of a snapshotted disk; else 0.
 * @part_sectors: its size, or 0 for all of the image.
 */
struct sf_takemap_key {
	uint8_t snapshot[16];
	uint32_t dev_major, dev_minor;
	uint32_t image_major, image_minor;
	uint64_t part_start, part_sectors;
};

/**
 * sf_takemap_encode() - the bytes of a take-time map file.
 * @key:    what the map is of.
 * @in_use: the sectors in use at take time (sorted, merged).
 * @buf:    out, malloc'ed (free() it).
 * @len:    out, its length.
 *
 * A small versioned header with @key, the ranges, and a checksum of it
 * all (storagefile/takemap.c has the layout).
 *
 * Return: 0, -ENOMEM, -EOVERFLOW.
 */
int sf_takemap_encode(const struct sf_takemap_key *key,
		      const struct sf_ranges *in_use, void **buf, size_t *len);

/*
 * The largest take-time map saved: 16 MiB, about a million in-use runs
 * (16 bytes each).  Maps live in the state directory, a tmpfs (/run)
 * that systemd and udev need and that is often only a fifth of the RAM;
 * an aged multi-terabyte file system can have tens of millions of runs.
 * A map too big to save is only a cost in time: each growth then reads
 * the image, as before there were maps.
 */
#define SF_TAKEMAP_MAX_BYTES (16u << 20)

/**
 * sf_takemap_bytes() - the size of the map file of @ranges in-use ranges,
 *	as sf_takemap_encode() writes it (UINT64_MAX when it cannot be).
 */
uint64_t sf_takemap_bytes(uint64_t ranges);

/**
 * sf_takemap_room() - may a map file of @bytes be saved where @avail
 *	bytes are free (statvfs f_bavail * f_frsize)?
 *
 * Never more than SF_TAKEMAP_MAX_BYTES, nor more than a quarter of the
 * free space: the file is written beside its temporary copy, other
 * snapshots and devices may save theirs, and the rest is not ours.
 *
 * Return: 0; -EFBIG (over SF_TAKEMAP_MAX_BYTES); -ENOSPC (over a quarter
 * of @avail).
 */
int sf_takemap_room(uint64_t bytes, uint64_t avail);

/**
 * sf_takemap_decode() - the in-use ranges of a take-time map file.
 * @buf:    the file's bytes.
 * @len:    how many.
 * @expect: what the map must be of.
 * @in_use: out, replaced on success only.
 *
 * Nothing is trusted that is not exactly what sf_takemap_encode() writes:
 * a caller that gets an error must not take any sector for free.
 *
 * Return: 0; -ENOMSG (not a take-time map); -EPROTONOSUPPORT (another
 * version of the format); -ENODATA (cut short); -EBADMSG (damaged: bad
 * checksum, bytes past its end, ranges out of order); -ESTALE (a map of
 * another snapshot, device or image); -ENOMEM.
 */
int sf_takemap_decode(const void *buf, size_t len,
		      const struct sf_takemap_key *expect,
		      struct sf_ranges *in_use);

/* ------------------------------------------------------------------ */
/* System-call wrappers                                                */
/* ------------------------------------------------------------------ */

/**
 * sf_fiemap_read() - all extents of an open file, FIEMAP_FLAG_SYNC.
 * @fd:    the file.
 * @ext:   out, malloc'ed array (free() it); NULL when @n is 0.
 * @n:     out, number of extents.
 *
 * Reads in batches of 512 extents, so files with tens of thousands of
 * extents work.
 *
 * Return: 0, -EOPNOTSUPP (no FIEMAP here), -ENOMEM, -errno of the ioctl.
 */
int sf_fiemap_read(int fd, struct fiemap_extent **ext, size_t *n);

/**
 * sf_fsmap_in_use() - every in-use physical range of a mounted filesystem.
 * @mountpoint: any path on the filesystem (e.g. a private read-only mount
 *              of the snapshot image).
 * @in_use:     out, replaced: sorted, merged ranges in 512-byte sectors of
 *              the filesystem's device: everything it does not report as
 *              free space, up to the last sector a range can name.
 *
 * Uses FS_IOC_GETFSMAP (ext4, xfs).
 *
 * Return: 0, -EOPNOTSUPP, -ENOMEM, -errno.
 */
int sf_fsmap_in_use(const char *mountpoint, struct sf_ranges *in_use);

/**
 * sf_logical_block_size() - a block device's logical block size.
 * @dev:   device number (a partition is fine: its disk's queue is used).
 * @bytes: out.
 *
 * Reads /sys/dev/block/MAJ:MIN/queue/logical_block_size, or ../queue/ for
 * a partition.
 *
 * Return: 0, -ENOENT (no such device in sysfs), -EINVAL (bad content).
 */
int sf_logical_block_size(dev_t dev, uint32_t *bytes);

/**
 * sf_align_bytes() - the alignment to use for ranges on @dev.
 * @dev:   device number.
 * @bytes: out, max(SF_MIN_ALIGN_BYTES, logical block size).
 *
 * Return: 0 or -errno of sf_logical_block_size().
 */
int sf_align_bytes(dev_t dev, uint32_t *bytes);

/* ------------------------------------------------------------------ */
/* Storage file handle                                                 */
/* ------------------------------------------------------------------ */

/* Opaque. */
struct sf_file;

/**
 * sf_open() - open (or create) a storage file.
 * @path:   the file.
 * @create: create it (mode 0600) if it does not exist; an existing file is
 *          opened either way.
 * @out:    out, the handle.
 *
 * Checks: regular file, on an allowed filesystem (sf_check_fs()), takes
 * flock(LOCK_EX|LOCK_NB) for the handle's lifetime so two helpers cannot
 * use one file.  A pinned (immutable) file can be opened.
 *
 * The handle remembers which ranges it has handed out.  A fresh handle has
 * handed out nothing: the first sf_grow() also returns the file's
 * pre-existing space.  If that space was already given to the kernel by an
 * earlier process, call sf_claim_existing(f, NULL) first.
 *
 * Symlinks are not followed (-ELOOP): a root helper must not be steered
 * into allocating somewhere else.  A file it had to create is removed
 * again if a check fails.
 *
 * Return: 0; -EBUSY (locked by someone else); -EOPNOTSUPP (filesystem; get
 * its name with sf_check_path_fs()); -EINVAL (not a regular file);
 * -ENODEV (no sysfs entry for the device); -EXDEV (an XFS realtime
 * file: its extents are on another device); -errno of open etc.
 */
int sf_open(const char *path, bool create, struct sf_file **out);

/**
 * sf_openat() - sf_open() of @name relative to the directory @dirfd (an
 * O_PATH descriptor is fine; AT_FDCWD for the working directory).
 * @created: out, true if this call created the file (may be NULL).
 *
 * The file is opened O_NONBLOCK, so a FIFO in its place fails with
 * -EINVAL instead of blocking.  A file it created and had to remove again
 * is removed through @dirfd.
 */
int sf_openat(int dirfd, const char *name, bool create, bool *created,
	      struct sf_file **out);

/**
 * sf_openat_unnamed() - a new, empty storage file without a name
 *	(O_TMPFILE, mode 0600) in the directory @dirfd, checked and locked as
 *	sf_openat() does.
 * The handle holds no writable descriptor, so the file can be given to
 * the kernel's APPEND_FILE once grown. If the process dies before the
 * file is given a name or handed to the kernel, the file system frees
 * it: closing the last descriptor does, and after a crash the file
 * system's orphan recovery (fsck where there is no journal).
 * Return: as sf_openat(); -EOPNOTSUPP where the file system has no
 * O_TMPFILE.
 */
int sf_openat_unnamed(int dirfd, struct sf_file **out);

/**
 * sf_linkat() - give a file of sf_openat_unnamed() the name @name in
 *	@dirfd; fails with -EEXIST rather than replace anything.
 * Return: 0 or -errno of linkat().
 */
int sf_linkat(const struct sf_file *f, int dirfd, const char *name);

/**
 * sf_reopen_readonly() - a new read-only descriptor of the file, with no
 *	lock of its own: the one to hand to the kernel, which keeps it
 *	(a descriptor of the handle would keep the handle's lock with it).
 * Return: the descriptor, or -errno.
 */
int sf_reopen_readonly(const struct sf_file *f);

/**
 * sf_close() - release the lock and free the handle.  Does NOT unpin: the
 * kernel may still be using the storage after the helper exits.  NULL ok.
 */
void sf_close(struct sf_file *f);

/** sf_fd() - the handle's (read-only) descriptor, e.g. for sf_check_fs(). */
int sf_fd(const struct sf_file *f);

/**
 * sf_device() - the device the ranges refer to: the file's st_dev (the
 * partition, for a filesystem on a partition).  Return: 0 or -errno.
 */
int sf_device(const struct sf_file *f, dev_t *dev);

/** sf_size() - the file's current st_size in bytes.  Return: 0 or -errno. */
int sf_size(const struct sf_file *f, uint64_t *bytes);

/**
 * sf_grow() - make the file @bytes larger and return its new ranges.
 * @f:          the handle.
 * @bytes:      how much to add (> 0); the file's size grows by exactly this.
 * @new_ranges: out, replaced: the ranges this handle has not handed out
 *              before (they are then remembered as handed out).
 *
 * One fallocate(mode 0) of the whole amount from the current size (few,
 * large extents; no data is written), fsync, FIEMAP. If the file was pinned
 * it is unpinned for the duration and re-pinned whatever happens.
 * Atomic: on any failure the file keeps its old size and extents, and its
 * pin state unless re-pinning failed too: then the growth's error is
 * returned and the file is left unpinned (check sf_is_pinned()).
 *
 * Return: 0; -EINVAL (@bytes is 0); -EFBIG (size would overflow, or pass
 * sf_file_size_limit(): refused before the file is touched);
 * -ENOSPC (checked against statvfs f_bavail before allocating, or from
 * fallocate);
 * -EOPNOTSUPP/-EAGAIN (a refused extent flag: see sf_refused_flag());
 * -EPERM (pinned and no CAP_LINUX_IMMUTABLE); -errno.
 */
int sf_grow(struct sf_file *f, uint64_t bytes, struct sf_ranges *new_ranges);

/**
 * sf_forget() - count @ranges as never handed out: those of a growth the
 * caller undid (the kernel refused them, a check failed) and then gave
 * back to the file system by truncating the file. Without it, a later
 * growth that gets the same blocks back would not hand them out.
 * Only for ranges the kernel never took.
 * Return: 0, -ENOMEM (then nothing is forgotten).
 */
int sf_forget(struct sf_file *f, const struct sf_ranges *ranges);

/**
 * sf_file_size_limit() - the largest size this process may give a file:
 * RLIMIT_FSIZE's soft limit (ulimit -f), or UINT64_MAX without one.
 * fallocate() past it raises SIGXFSZ, which ends a process that does not
 * catch or ignore it in the middle of a growth, its file unpinned:
 * sf_grow() refuses such a growth with -EFBIG instead.
 */
uint64_t sf_file_size_limit(void);

/**
 * sf_all_ranges() - the file's full current ranges (for a "ranges FILE"
 * debug command; equals `filefrag -v -b512` shrunk to the alignment).
 * Does not change what counts as handed out.
 * Return: as sf_grow() minus -ENOSPC.
 */
int sf_all_ranges(struct sf_file *f, struct sf_ranges *out);

/**
 * sf_claim_existing() - mark the file's current space as handed out.
 * @f:   the handle.
 * @out: out (may be NULL): the part of it not handed out before.
 * Return: as sf_all_ranges().
 */
int sf_claim_existing(struct sf_file *f, struct sf_ranges *out);

/**
 * sf_refused_flag() - the FIEMAP_EXTENT_* bit that made the last
 * sf_grow()/sf_all_ranges()/sf_claim_existing() fail, or 0.
 */
uint32_t sf_refused_flag(const struct sf_file *f);

/**
 * sf_align() - the alignment (bytes) this handle uses for its ranges.
 */
uint32_t sf_align(const struct sf_file *f);

/**
 * sf_pin() - set FS_IMMUTABLE_FL so nobody can move, truncate or rewrite
 * the file while the kernel uses its sectors.  Needs CAP_LINUX_IMMUTABLE.
 * Return: 0 (also if already pinned) or -errno.
 */
int sf_pin(struct sf_file *f);

/** sf_unpin() - clear FS_IMMUTABLE_FL.  Return: 0 or -errno. */
int sf_unpin(struct sf_file *f);

/** sf_is_pinned() - is FS_IMMUTABLE_FL set?  Return: 1, 0 or -errno. */
int sf_is_pinned(const struct sf_file *f);

#endif /* STORAGEFILE_H */
