// SPDX-License-Identifier: GPL-2.0
/* Which storage files belong to which snapshot (see state.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "blksnap_ctl.h"
#include "state.h"

#define FILES_NAME "files"

const char *state_dir(void)
{
	const char *dir = getenv(STATE_DIR_ENV);

	return dir && *dir ? dir : STATE_DIR_DEFAULT;
}

int state_canonical_path(const char *path, char *out, size_t len)
{
	char dir_copy[PATH_MAX], base_copy[PATH_MAX], real[PATH_MAX];
	const char *base;
	int n;

	if (strlen(path) >= sizeof(dir_copy))
		return -ENAMETOOLONG;
	/* A newline would break the one-path-per-line state file. */
	if (strchr(path, '\n'))
		return -EINVAL;
	strcpy(dir_copy, path);
	strcpy(base_copy, path);
	base = basename(base_copy);
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || !strcmp(base, "/"))
		return -EISDIR;
	if (!realpath(dirname(dir_copy), real))
		return -errno;
	n = snprintf(out, len, "%s/%s", strcmp(real, "/") ? real : "", base);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void snapshot_dir(const struct blk_snap_uuid *id, char *buf, size_t len)
{
	char text[BSC_UUID_LEN + 1];

	bsc_uuid_format(id, text);
	snprintf(buf, len, "%s/%s", state_dir(), text);
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Lock a snapshot's directory so concurrent adds do not lose entries. */
static int lock_dir(const char *dir, bool create)
{
	int fd, ret;

	if (create && (ret = mkdir_p(dir)))
		return ret;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

static int read_lines(const char *file, char ***lines, size_t *count)
{
	char *line = NULL, **v = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	FILE *f;

	*lines = NULL;
	*count = 0;
	f = fopen(file, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while ((len = getline(&line, &cap, f)) > 0) {
		char **grown;

		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		if (!*line)
			continue;
		grown = realloc(v, (n + 1) * sizeof(*v));
		if (!grown)
			goto no_memory;
		v = grown;
		if (!(v[n] = strdup(line)))
			goto no_memory;
		n++;
	}
	free(line);
	fclose(f);
	*lines = v;
	*count = n;
	return 0;

no_memory:
	free(line);
	fclose(f);
	state_free_files(v, n);
	return -ENOMEM;
}

/* Replace the file list atomically: write a temp file, rename it. */
static int write_lines(const char *dir, char **lines, size_t count,
		       const char *skip)
{
	char file[PATH_MAX + 16], tmp[PATH_MAX + 16];
	FILE *f;
	int ret = 0;

	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, FILES_NAME);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	for (size_t i = 0; i < count; i++)
		if (!skip || strcmp(lines[i], skip))
			fprintf(f, "%s\n", lines[i]);
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

static bool listed(char **lines, size_t count, const char *path)
{
	for (size_t i = 0; i < count; i++)
		if (!strcmp(lines[i], path))
			return true;
	return false;
}

/* Read-modify-write of a snapshot's list under its lock. */
static int update(const struct blk_snap_uuid *id, const char *path, bool add)
{
	char dir[PATH_MAX], file[PATH_MAX + 16], **lines;
	size_t count;
	int lock, ret;

	snapshot_dir(id, dir, sizeof(dir));
	lock = lock_dir(dir, add);
	if (lock < 0)
		return !add && lock == -ENOENT ? 0 : lock;
	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	ret = read_lines(file, &lines, &count);
	if (!ret && listed(lines, count, path) != add) {
		if (add) {
			char **grown = realloc(lines, (count + 1) * sizeof(*lines));

			if (grown) {
				lines = grown;
				lines[count++] = (char *)path;
				ret = write_lines(dir, lines, count, NULL);
				count--;	/* not ours to free */
			} else {
				ret = -ENOMEM;
			}
		} else {
			ret = write_lines(dir, lines, count, path);
		}
	}
	state_free_files(lines, count);
	close(lock);
	return ret;
}

int state_record(const struct blk_snap_uuid *id, const char *abs_path)
{
	return update(id, abs_path, true);
}

int state_unrecord(const struct blk_snap_uuid *id, const char *abs_path)
{
	return update(id, abs_path, false);
}

int state_files(const struct blk_snap_uuid *id, char ***paths, size_t *count)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];

	snapshot_dir(id, dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	return read_lines(file, paths, count);
}

void state_free_files(char **paths, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(paths[i]);
	free(paths);
}

int state_forget(const struct blk_snap_uuid *id)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];

	snapshot_dir(id, dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/%s", dir, FILES_NAME);
	if (unlink(file) < 0 && errno != ENOENT)
		return -errno;
	snprintf(file, sizeof(file), "%s/%s.tmp", dir, FILES_NAME);
	unlink(file);
	if (rmdir(dir) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int state_owner(const char *abs_path, struct blk_snap_uuid *owner)
{
	DIR *d = opendir(state_dir());
	struct dirent *e;
	int ret = -ENOENT;

	if (!d)
		return errno == ENOENT ? -ENOENT : -errno;
	while (ret == -ENOENT && (e = readdir(d))) {
		struct blk_snap_uuid id;
		char **lines;
		size_t count;

		if (bsc_uuid_parse(e->d_name, &id))
			continue;
		if (state_files(&id, &lines, &count))
			continue;
		if (listed(lines, count, abs_path)) {
			*owner = id;
			ret = 0;
		}
		state_free_files(lines, count);
	}
	closedir(d);
	return ret;
}

int state_temp_dir(const char *prefix, char *buf, size_t len)
{
	int ret = mkdir_p(state_dir());

	if (ret)
		return ret;
	if (snprintf(buf, len, "%s/%s.XXXXXX", state_dir(), prefix) >= (int)len)
		return -ENAMETOOLONG;
	return mkdtemp(buf) ? 0 : -errno;
}
