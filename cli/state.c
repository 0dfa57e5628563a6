// SPDX-License-Identifier: GPL-2.0
/* Which storage files belong to which snapshot (see state.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "blksnap_ctl.h"
#include "common.h"
#include "secure.h"
#include "state.h"
#include "storage.h"

#define FILES_NAME "files"
#define UNNAMED_PREFIX "unnamed-"
#define TAKEMAP_PREFIX "takemap-"
/* What blksnap-storage before the kernel held its files recorded there. */
#define OLD_GROWTH_PREFIX "growth-"

/* Why the last call failed, when more can be said than strerror(). */
static char last_why[WHY_LEN];

static int say(int ret, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int say(int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_why, sizeof(last_why), fmt, ap);
	va_end(ap);
	return ret;
}

const char *state_strerror(int ret)
{
	return *last_why ? last_why : strerror(-ret);
}

int state_report(int ret)
{
	if (*last_why)
		report(NULL, "%s", last_why);
	else
		report(state_dir(), "%s", strerror(-ret));
	return EXIT_RUNTIME;
}

/*
 * The state directory decides what commands act on: it must be a real
 * directory (no symbolic link anywhere on its path) that only root, or
 * we, can change, like every directory above it.  -ENOENT if it does
 * not exist (then nothing is recorded).
 */
static int check_state_dir(void)
{
	struct stat st;
	int fd;

	*last_why = '\0';
	fd = secure_open_dir(state_dir(), true, "state directory", last_why);
	if (fd == -ENOENT) {
		*last_why = '\0';
		return -ENOENT;
	}
	if (fd < 0)
		return fd;
	/*
	 * Sticky is not enough here: anybody could still create entries
	 * named like snapshots that every later command would trip on.
	 */
	if (fstat(fd, &st) == 0 && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return say(-EPERM, "%s: state directory writable by other "
			   "users (mode %04o): use one only root can write to, "
			   "or 'chmod go-w' it", state_dir(),
			   (unsigned int)(st.st_mode & 07777));
	}
	close(fd);
	return 0;
}

/* A snapshot's directory under it: ours, private, no symbolic link. */
static int check_snapshot_dir(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return say(-ENOTDIR, "%s: not a directory: remove it", dir);
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return say(-EPERM, "%s: owned by uid %u, mode %04o: only root "
			   "may write there; remove it", dir,
			   (unsigned int)st.st_uid,
			   (unsigned int)(st.st_mode & 07777));
	return 0;
}

const char *state_dir(void)
{
	const char *dir = getenv(STATE_DIR_ENV);

	return dir && *dir ? dir : STATE_DIR_DEFAULT;
}

static void snapshot_dir(const struct blk_snap_uuid *id, char *buf, size_t len)
{
	char text[BSC_UUID_LEN + 1];

	bsc_uuid_format(id, text);
	snprintf(buf, len, "%s/%s", state_dir(), text);
}

/*
 * Create the state directory itself, mode 0700, in a parent that must
 * already pass the rules (secure.h): a missing parent is not made, so no
 * path string is followed through another user's link to make it.
 */
static int make_state_dir(const char *path)
{
	char parent[PATH_MAX];
	const char *base;
	int fd, ret;

	*last_why = '\0';
	ret = secure_split(path, parent, sizeof(parent), &base);
	if (ret)
		return say(ret, "%s: the state directory must be an absolute "
			   "path", path);
	fd = secure_open_dir(parent, true, "directory above the state "
			     "directory", last_why);
	if (fd < 0)
		return fd;
	ret = mkdirat(fd, base, 0700) < 0 && errno != EEXIST ? -errno : 0;
	close(fd);
	if (ret)
		return say(ret, "%s: cannot create the state directory: %s",
			   path, strerror(-ret));
	return 0;
}

/* Lock a snapshot's directory so concurrent adds do not lose entries. */
static int lock_dir(const char *dir, bool create)
{
	struct stat st;
	int fd, ret;

again:
	ret = check_state_dir();
	if (ret == -ENOENT && create)
		ret = make_state_dir(state_dir());
	if (!ret)
		ret = check_state_dir();
	if (ret)
		return ret;
	if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	/*
	 * Removed between our mkdir and here (state_forget(), or
	 * state_drop_if_unused() of a failed growth): make it again.
	 */
	ret = check_snapshot_dir(dir);
	if (ret == -ENOENT && create)
		goto again;
	if (ret)
		return ret;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create)
		goto again;
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	/* state_forget() removed it while we waited: start again. */
	if (fstat(fd, &st) == 0 && st.st_nlink == 0) {
		close(fd);
		goto again;
	}
	return fd;
}

/* "MAJOR:MINOR INODE /PATH", digits only: anything else is refused. */
static bool parse_u64_field(const char **p, char end, uint64_t *v)
{
	char *e;

	if (!isdigit((unsigned char)**p))
		return false;
	errno = 0;
	*v = strtoull(*p, &e, 10);
	if (errno || *e != end)
		return false;
	*p = e + 1;
	return true;
}

static bool parse_record(const char *line, struct state_file *r)
{
	uint64_t major, minor, ino;
	const char *p = line;

	if (!parse_u64_field(&p, ':', &major) ||
	    !parse_u64_field(&p, ' ', &minor) ||
	    !parse_u64_field(&p, ' ', &ino) || *p != '/' ||
	    major > 0xfff || minor > 0xfffff)
		return false;
	r->dev = makedev(major, minor);
	r->ino = ino;
	r->path = strdup(p);
	return r->path != NULL;
}

/*
 * A record file for reading: a regular file of ours that nobody else can
 * write, or -ENOENT, or the reason it is refused (in last_why).  A
 * @replaced file (a take-time map, read again and saved in its place)
 * need not be removed by hand: the reason alone is said.
 */
static int open_record_as(const char *file, bool replaced)
{
	const char *then = replaced ? "" : ": remove it";
	struct stat st;
	int fd;

	/* O_NONBLOCK: a FIFO in its place must not hang us. */
	fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return say(-ELOOP, "%s: not a regular file (a symbolic "
			   "link)%s", file, then);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return say(-EINVAL, "%s: not a regular file%s", file, then);
	}
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		if (replaced)
			return say(-EPERM, "%s: owned by uid %u, mode %04o, "
				   "so not trusted (only root may write it)",
				   file, (unsigned int)st.st_uid,
				   (unsigned int)(st.st_mode & 07777));
		return say(-EPERM, "%s: owned by uid %u, mode %04o: only root "
			   "may write records; remove it", file,
			   (unsigned int)st.st_uid,
			   (unsigned int)(st.st_mode & 07777));
	}
	return fd;
}

static int open_record(const char *file)
{
	return open_record_as(file, false);
}

/*
 * A new temporary file to write a record into, before it is renamed over
 * the record: whatever was left at @tmp (a crash, or a FIFO or symbolic
 * link put there) is removed, and only a file this call creates is
 * opened, so a write can neither hang on a FIFO nor follow a link.
 */
static int open_tmp(const char *tmp)
{
	int fd;

	if (unlink(tmp) < 0 && errno != ENOENT)
		return -errno;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	return fd < 0 ? -errno : fd;
}

static int read_records(const char *file, struct state_file **out,
			size_t *count)
{
	struct state_file *v = NULL;
	char *line = NULL;
	size_t cap = 0, n = 0, lineno = 0;
	ssize_t len;
	int fd, ret = 0;
	FILE *f;

	*out = NULL;
	*count = 0;
	fd = open_record(file);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		struct state_file *grown;

		lineno++;
		if (line[len - 1] != '\n' || strlen(line) != (size_t)len) {
			ret = say(-EINVAL, "%s: line %zu is malformed (cut "
				  "short or holds a NUL byte): fix or remove "
				  "it", file, lineno);
			break;
		}
		line[len - 1] = '\0';
		grown = realloc(v, (n + 1) * sizeof(*v));
		if (!grown) {
			ret = -ENOMEM;
			break;
		}
		v = grown;
		/*
		 * A bare path is what versions before the records named
		 * device and inode wrote: its file cannot be checked, so it
		 * is not acted on, but the line says how to finish by hand.
		 */
		if (line[0] == '/') {
			ret = say(-EINVAL, "%s: line %zu is a record of an older "
				  "blksnap-storage (a path without device and "
				  "inode, which cannot be checked): remove this "
				  "record, destroy the snapshot ('blksnap-storage "
				  "destroy' then leaves that file immutable), and "
				  "only then, if %s is yours and no snapshot uses "
				  "it, unpin it ('chattr -i')", file, lineno, line);
			break;
		}
		if (!parse_record(line, &v[n])) {
			ret = say(-EINVAL, "%s: line %zu is malformed (expected "
				  "'MAJOR:MINOR INODE /PATH'): fix or remove "
				  "it", file, lineno);
			break;
		}
		n++;
	}
	free(line);
	fclose(f);
	if (ret) {
		state_free_files(v, n);
		return ret;
	}
	*out = v;
	*count = n;
	return 0;
}

/* Replace the file list atomically: write a temp file, rename it. */
static int write_records(const char *dir, const struct state_file *v,
			 size_t count, const char *skip)
{
	char file[PATH_MAX + 16], tmp[PATH_MAX + 16];
	FILE *f;
	int fd, ret = 0;

	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, FILES_NAME);
	fd = open_tmp(tmp);
	if (fd < 0)
		return fd;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++)
		if (!skip || strcmp(v[i].path, skip))
			fprintf(f, "%u:%u %llu %s\n", major(v[i].dev),
				minor(v[i].dev), (unsigned long long)v[i].ino,
				v[i].path);
	if (fflush(f) || fsync(fileno(f)))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, file) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

/* The index of @path's record in @v, or -1. */
static ssize_t find_path(const struct state_file *v, size_t count,
			 const char *path)
{
	for (size_t i = 0; i < count; i++)
		if (!strcmp(v[i].path, path))
			return (ssize_t)i;
	return -1;
}

/* Read-modify-write of a snapshot's list under its lock. */
static int update(const struct blk_snap_uuid *id, const struct state_file *r,
		  bool add)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	struct state_file *v;
	size_t count;
	ssize_t at;
	int lock, ret;

	snapshot_dir(id, dir, sizeof(dir));
	lock = lock_dir(dir, add);
	if (lock < 0)
		return !add && lock == -ENOENT ? 0 : lock;
	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	ret = read_records(file, &v, &count);
	at = ret ? -1 : find_path(v, count, r->path);
	/* Another file at the same path now (its directory was renamed). */
	if (!ret && add && at >= 0 &&
	    (v[at].dev != r->dev || v[at].ino != r->ino)) {
		v[at].dev = r->dev;
		v[at].ino = r->ino;
		ret = write_records(dir, v, count, NULL);
	} else if (!ret && (at >= 0) != add) {
		if (add) {
			struct state_file *grown = realloc(v, (count + 1) *
							   sizeof(*v));

			if (grown) {
				v = grown;
				v[count++] = *r;
				ret = write_records(dir, v, count, NULL);
				count--;	/* not ours to free */
			} else {
				ret = -ENOMEM;
			}
		} else {
			ret = write_records(dir, v, count, r->path);
		}
	}
	state_free_files(v, count);
	close(lock);
	return ret;
}

int state_record(const struct blk_snap_uuid *id, const char *abs_path,
		 dev_t dev, ino_t ino)
{
	struct state_file r = { dev, ino, (char *)abs_path };

	*last_why = '\0';
	return update(id, &r, true);
}

int state_unrecord(const struct blk_snap_uuid *id, const char *abs_path)
{
	struct state_file r = { 0, 0, (char *)abs_path };

	*last_why = '\0';
	return update(id, &r, false);
}

int state_files(const struct blk_snap_uuid *id, struct state_file **files,
		size_t *count)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	int ret;

	*files = NULL;
	*count = 0;
	ret = check_state_dir();
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	snapshot_dir(id, dir, sizeof(dir));
	ret = check_snapshot_dir(dir);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	return read_records(file, files, count);
}

void state_free_files(struct state_file *files, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(files[i].path);
	free(files);
}

/* "<dir>/unnamed-MAJOR:MINOR-INODE": one record per named storage file. */
static void unnamed_file(const char *dir, dev_t dev, ino_t ino, char *buf,
			size_t len)
{
	snprintf(buf, len, "%s/%s%u:%u-%llu", dir, UNNAMED_PREFIX, major(dev),
		 minor(dev), (unsigned long long)ino);
}

int state_unnamed_set(const struct blk_snap_uuid *id, dev_t dev, ino_t ino,
		      uint64_t bytes)
{
	char dir[PATH_MAX], file[PATH_MAX + 64], tmp[PATH_MAX + 80], line[32];
	int lock, fd, len, ret = 0;

	*last_why = '\0';
	snapshot_dir(id, dir, sizeof(dir));
	lock = lock_dir(dir, true);
	if (lock < 0)
		return lock;
	unnamed_file(dir, dev, ino, file, sizeof(file));
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	len = snprintf(line, sizeof(line), "%llu\n",
		       (unsigned long long)bytes);
	fd = open_tmp(tmp);
	if (fd < 0) {
		ret = fd;
	} else {
		ssize_t done = write(fd, line, len);

		if (done < 0)
			ret = -errno;
		else if (done != len)
			ret = -EIO;
		if (!ret && fsync(fd) < 0)
			ret = -errno;
		if (close(fd) < 0 && !ret)
			ret = -errno;
		if (!ret && rename(tmp, file) < 0)
			ret = -errno;
		if (ret)
			unlink(tmp);
	}
	close(lock);
	return ret;
}

int state_unnamed_get(const struct blk_snap_uuid *id, dev_t dev, ino_t ino,
		      uint64_t *bytes)
{
	char dir[PATH_MAX], file[PATH_MAX + 64], line[32];
	const char *p = line;
	ssize_t len;
	int fd, ret;

	*last_why = '\0';
	ret = check_state_dir();
	if (ret)
		return ret;
	snapshot_dir(id, dir, sizeof(dir));
	ret = check_snapshot_dir(dir);
	if (ret)
		return ret;
	unnamed_file(dir, dev, ino, file, sizeof(file));
	fd = open_record(file);
	if (fd < 0)
		return fd;
	len = read(fd, line, sizeof(line) - 1);
	ret = len < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	line[len] = '\0';
	if (!parse_u64_field(&p, '\n', bytes) || *p)
		return say(-EINVAL, "%s: malformed (expected the bytes of "
			   "storage given in unnamed files): remove it; only "
			   "the sizes blksnap-storage reports depend on it",
			   file);
	return 0;
}

static bool has_prefix(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

/* Remove the unnamed-storage records and take-time maps in @dir (locked). */
static int forget_unnamed(const char *dir)
{
	struct dirent *e;
	int ret = 0;
	DIR *d = opendir(dir);

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)))
		if ((has_prefix(e->d_name, UNNAMED_PREFIX) ||
		     has_prefix(e->d_name, TAKEMAP_PREFIX) ||
		     has_prefix(e->d_name, OLD_GROWTH_PREFIX)) &&
		    unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
			ret = -errno;
	closedir(d);
	return ret;
}

int state_forget(const struct blk_snap_uuid *id)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	int lock, ret = check_state_dir();

	if (ret)
		return ret == -ENOENT ? 0 : ret;
	snapshot_dir(id, dir, sizeof(dir));
	/* Under the lock update() takes: a record being written is not lost. */
	lock = lock_dir(dir, false);
	if (lock < 0)
		return lock == -ENOENT ? 0 : lock;
	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	ret = unlink(file) < 0 && errno != ENOENT ? -errno : 0;
	snprintf(file, sizeof(file), "%s/%s.tmp", dir, FILES_NAME);
	unlink(file);
	if (!ret)
		ret = forget_unnamed(dir);
	if (!ret && rmdir(dir) < 0 && errno != ENOENT)
		ret = -errno;
	close(lock);
	return ret;
}

/* True when @dir holds an unnamed-storage record, or may: unreadable. */
static bool has_unnamed(const char *dir)
{
	struct dirent *e;
	bool found = false;
	DIR *d = opendir(dir);

	if (!d)
		return true;
	while (!found && (e = readdir(d)))
		found = !strncmp(e->d_name, UNNAMED_PREFIX,
				 strlen(UNNAMED_PREFIX));
	closedir(d);
	return found;
}

int state_drop_if_unused(const struct blk_snap_uuid *id)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	struct state_file *v;
	size_t count;
	int lock, ret;

	*last_why = '\0';
	if (check_state_dir())
		return 0;
	snapshot_dir(id, dir, sizeof(dir));
	lock = lock_dir(dir, false);
	if (lock < 0)
		return lock == -ENOENT ? 0 : lock;
	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	ret = read_records(file, &v, &count);
	if (!ret) {
		state_free_files(v, count);
		if (!count && !has_unnamed(dir)) {
			/* Maps only serve growths of recorded storage. */
			forget_unnamed(dir);
			unlink(file);
			snprintf(file, sizeof(file), "%s/%s.tmp", dir,
				 FILES_NAME);
			unlink(file);
			ret = rmdir(dir) < 0 && errno != ENOENT ? -errno : 0;
		}
	}
	close(lock);
	return ret;
}

int state_ids(struct blk_snap_uuid **ids, size_t *count)
{
	struct blk_snap_uuid *v = NULL, *grown;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int ret = check_state_dir();
	DIR *d;

	*ids = NULL;
	*count = 0;
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	d = opendir(state_dir());
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		struct blk_snap_uuid id;

		if (bsc_uuid_parse(e->d_name, &id))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				ret = -ENOMEM;
				break;
			}
			v = grown;
		}
		v[n++] = id;
	}
	closedir(d);
	if (ret) {
		free(v);
		return ret;
	}
	*ids = v;
	*count = n;
	return 0;
}

int state_owner(dev_t dev, ino_t ino, const struct blk_snap_uuid *prefer,
		struct blk_snap_uuid *owner, struct state_file *rec)
{
	struct dirent *e;
	int ret = check_state_dir();
	DIR *d;

	if (ret)
		return ret;
	ret = -ENOENT;
	d = opendir(state_dir());
	if (!d)
		return errno == ENOENT ? -ENOENT : -errno;
	while ((ret == -ENOENT || (!ret && memcmp(owner, prefer,
						    sizeof(*owner)))) &&
	       (e = readdir(d))) {
		struct blk_snap_uuid id;
		struct state_file *v;
		size_t count;
		int err;

		if (bsc_uuid_parse(e->d_name, &id))
			continue;
		/* An unreadable record might list it: say so, do not guess. */
		err = state_files(&id, &v, &count);
		if (err) {
			ret = err;
			break;
		}
		for (size_t i = 0; i < count; i++) {
			if (v[i].dev != dev || v[i].ino != ino)
				continue;
			*owner = id;
			rec->dev = v[i].dev;
			rec->ino = v[i].ino;
			rec->path = NULL;
			ret = 0;
		}
		state_free_files(v, count);
	}
	closedir(d);
	return ret;
}

/* "<dir>/takemap-MAJOR:MINOR": the take-time map of one device. */
static void takemap_file(const char *dir, dev_t dev, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%u:%u", dir, TAKEMAP_PREFIX, major(dev),
		 minor(dev));
}

/* "1.5 MiB", "12 KiB": a size said to a person. */
static void size_text(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= 1ull << 20)
		snprintf(buf, len, "%.1f MiB", (double)bytes / (1 << 20));
	else
		snprintf(buf, len, "%llu KiB",
			 (unsigned long long)((bytes + 1023) >> 10));
}

/*
 * Room for a map of @bytes (@runs in-use runs) in the state directory
 * (@fd, a directory in it)?  0, or -EFBIG/-ENOSPC said in last_why.
 */
static int takemap_room(int fd, uint64_t bytes, uint64_t runs)
{
	char size[32], free_text[32];
	struct statvfs sv;
	uint64_t avail;
	int ret;

	if (fstatvfs(fd, &sv) < 0)
		return -errno;
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	ret = sf_takemap_room(bytes, avail);
	size_text(bytes, size, sizeof(size));
	size_text(avail, free_text, sizeof(free_text));
	if (ret == -EFBIG)
		return say(ret, "its map (%s: %llu in-use runs) is bigger "
			   "than the %u MiB a map may take in %s", size,
			   (unsigned long long)runs,
			   SF_TAKEMAP_MAX_BYTES >> 20, state_dir());
	if (ret == -ENOSPC)
		return say(ret, "its map (%s) would take more than a quarter "
			   "of the %s free in %s", size, free_text,
			   state_dir());
	return ret;
}

int state_takemap_save(const struct blk_snap_uuid *id, dev_t dev,
		       const struct sf_takemap_key *key,
		       const struct sf_ranges *in_use)
{
	char dir[PATH_MAX], file[PATH_MAX + 64], tmp[PATH_MAX + 80];
	void *buf = NULL;
	size_t len = 0;
	int lock, fd = -1, ret;

	*last_why = '\0';
	snapshot_dir(id, dir, sizeof(dir));
	/*
	 * Not made here: a snapshot with nothing recorded (or destroyed
	 * meanwhile, its directory forgotten) must not get a directory
	 * back that 'list' would show.
	 */
	lock = lock_dir(dir, false);
	if (lock < 0)
		return lock;
	takemap_file(dir, dev, file, sizeof(file));
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	/* Checked before it is encoded: a map too big is not made twice. */
	ret = takemap_room(lock, sf_takemap_bytes(in_use->count),
			   in_use->count);
	if (ret == -EFBIG || ret == -ENOSPC) {
		/* An old one (damaged, since it is replaced) is not kept. */
		unlink(file);
		goto out;
	}
	if (!ret)
		ret = sf_takemap_encode(key, in_use, &buf, &len);
	if (!ret) {
		fd = open_tmp(tmp);
		ret = fd < 0 ? fd : write_all_fd(fd, buf, len);
	}
	if (fd >= 0 && !ret && fsync(fd) < 0)
		ret = -errno;
	if (fd >= 0 && close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, file) < 0)
		ret = -errno;
	/* The rename itself, on a state directory that is not a tmpfs. */
	if (!ret && fsync(lock) < 0)
		ret = -errno;
	if (ret && fd >= 0)
		unlink(tmp);
out:
	free(buf);
	close(lock);
	return ret;
}

static int takemap_load(const struct blk_snap_uuid *id, dev_t dev,
			void **buf, size_t *len, char *file, size_t file_len)
{
	char dir[PATH_MAX];
	struct stat st;
	ssize_t n = 0;
	size_t done = 0;
	char *p;
	int fd, ret;

	*last_why = '\0';
	*buf = NULL;
	*len = 0;
	snapshot_dir(id, dir, sizeof(dir));
	takemap_file(dir, dev, file, file_len);
	ret = check_state_dir();
	if (ret)
		return ret;
	ret = check_snapshot_dir(dir);
	if (ret)
		return ret;
	fd = open_record_as(file, true);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if ((uint64_t)st.st_size > SF_TAKEMAP_MAX_BYTES) {
		close(fd);
		return -EFBIG;
	}
	/* One byte more than its size: growing meanwhile shows as damage. */
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	while (done <= (size_t)st.st_size &&
	       (n = read(fd, p + done, (size_t)st.st_size + 1 - done)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		done += (size_t)n;
	}
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret) {
		free(p);
		return ret;
	}
	*buf = p;
	*len = done;
	return 0;
}

int state_takemap_load(const struct blk_snap_uuid *id, dev_t dev,
		       void **buf, size_t *len, char *file, size_t file_len)
{
	int ret = takemap_load(id, dev, buf, len, file, file_len);

	/* Every failure worth a line names the file. */
	if (ret && ret != -ENOENT && !*last_why)
		say(ret, "%s: %s", file, strerror(-ret));
	return ret;
}

int state_temp_dir(const char *prefix, char *buf, size_t len)
{
	int ret = check_state_dir();

	if (ret == -ENOENT)
		ret = make_state_dir(state_dir());
	if (!ret)
		ret = check_state_dir();
	if (ret)
		return ret;
	if (snprintf(buf, len, "%s/%s.XXXXXX", state_dir(), prefix) >= (int)len)
		return -ENAMETOOLONG;
	return mkdtemp(buf) ? 0 : -errno;
}
