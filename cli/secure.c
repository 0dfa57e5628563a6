// SPDX-License-Identifier: GPL-2.0
/* Paths another user cannot redirect (see secure.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "secure.h"
#include "common.h"
#include "storage.h"

/* Owned by root or us, and only the owner may write (sticky dirs aside). */
static int check_dir(const char *path, const struct stat *st,
		     const char *what, char *why)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return say_why(why, -EPERM, "%s: %s owned by uid %u: use one "
			   "owned by root, that no other user can write to",
			   path, what, (unsigned int)st->st_uid);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return say_why(why, -EPERM, "%s: %s writable by other users (mode "
			   "%04o): use one only root can write to, or "
			   "'chmod go-w' it", path, what,
			   (unsigned int)(st->st_mode & 07777));
	return 0;
}

int secure_open_dir(const char *dir, bool strict, const char *what,
		    char *why)
{
	char path[PATH_MAX], *p, *next, *cut = NULL;
	bool first = true;
	struct stat st;
	int fd, sub;

	if (dir[0] != '/' || strlen(dir) >= sizeof(path))
		return say_why(why, -EINVAL, "%s: not an absolute path", dir);
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return say_why(why, -errno, "/: %s", strerror(errno));
	strcpy(path, dir);
	p = path;
	for (;;) {
		if (fstat(fd, &st) < 0) {
			sub = -errno;
			close(fd);
			return say_why(why, sub, "%s: %s", first ? "/" : path,
				   strerror(-sub));
		}
		if (strict && (sub = check_dir(first ? "/" : path, &st,
					       what, why))) {
			close(fd);
			return sub;
		}
		if (cut)
			*cut = '/';	/* path is the whole of @dir again */
		while (*p == '/')
			p++;
		if (!*p)
			return fd;
		next = strchr(p, '/');
		if (next)
			*next = '\0';	/* path: up to this component */
		cut = next;
		if (!strcmp(p, ".") || !strcmp(p, "..")) {
			close(fd);
			return say_why(why, -EINVAL, "%s: '.' or '..' in the path",
				   dir);
		}
		sub = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW |
			     O_CLOEXEC);
		if (sub < 0) {
			int err = errno;

			if ((err == ENOTDIR || err == ELOOP) &&
			    fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				say_why(why, -ELOOP, next ? "%s: a symbolic link "
				    "on the way to the %s: give its real path" :
				    "%s: %s is a symbolic link: give its real "
				    "path", path, what);
			else
				say_why(why, -err, "%s: %s", path, strerror(err));
			close(fd);
			return -err;
		}
		close(fd);
		fd = sub;
		first = false;
		p = next ? next : p + strlen(p);
	}
}

/* Symbolic links followed in one path at most, as the kernel allows. */
#define MAX_LINKS	40

/*
 * Append component @c (not "." or "..") to the resolved path @res, or
 * follow it if it is a symbolic link root may trust; @rest is what is
 * left of the path to resolve, and a link's target is put in front of it.
 */
static int resolve_step(char *res, const char *c, char *rest, int *links,
			char *why)
{
	char link[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX];
	size_t rl = strlen(res);
	struct stat st, dst;
	ssize_t n;

	if (rl + 1 + strlen(c) >= PATH_MAX)
		return say_why(why, -ENAMETOOLONG, "%s/%s: path too long", res, c);
	snprintf(dir, sizeof(dir), "%s", rl ? res : "/");
	snprintf(res + rl, PATH_MAX - rl, "/%s", c);
	if (lstat(res, &st) < 0)
		return say_why(why, -errno, "%s: %s", res, strerror(errno));
	if (!S_ISLNK(st.st_mode))
		return 0;
	/*
	 * Only a link nobody else could have made or changed: ours, in a
	 * directory only we can change (sticky ones: only the link's owner
	 * can replace it). Anyone else's link would choose for root which
	 * directory the checks below are made on.
	 */
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return say_why(why, -ELOOP, "%s: a symbolic link owned by uid %u: "
			   "blksnap-storage follows only root's; give the "
			   "real path", res, (unsigned int)st.st_uid);
	if (lstat(dir, &dst) < 0)
		return say_why(why, -errno, "%s: %s", dir, strerror(errno));
	if (check_dir(dir, &dst, "directory holding a symbolic link", why))
		return -ELOOP;
	if (++*links > MAX_LINKS)
		return say_why(why, -ELOOP, "%s: too many symbolic links", res);
	n = readlink(res, link, sizeof(link) - 1);
	if (n < 0)
		return say_why(why, -errno, "%s: %s", res, strerror(errno));
	link[n] = '\0';
	if (snprintf(tmp, sizeof(tmp), "%s/%s", link, rest) >= (int)sizeof(tmp))
		return say_why(why, -ENAMETOOLONG, "%s: path too long", res);
	strcpy(rest, tmp);
	/* An absolute target starts again from /, a relative one here. */
	if (link[0] == '/')
		res[0] = '\0';
	else
		res[rl] = '\0';
	return 0;
}

int secure_resolve(const char *path, char *out, size_t len, char *why)
{
	char rest[PATH_MAX], res[PATH_MAX] = "", *c, *next;
	int links = 0, ret;

	if (!*path)
		return say_why(why, -ENOENT, "empty path");
	if (path[0] == '/') {
		if (strlen(path) >= sizeof(rest))
			return say_why(why, -ENAMETOOLONG, "path too long");
		strcpy(rest, path);
	} else {
		if (!getcwd(res, sizeof(res)))
			return say_why(why, -errno, "current directory: %s",
				   strerror(errno));
		if (snprintf(rest, sizeof(rest), "%s/%s", res, path) >=
		    (int)sizeof(rest))
			return say_why(why, -ENAMETOOLONG, "path too long");
		res[0] = '\0';
	}
	while (rest[0]) {
		for (c = rest; *c == '/'; c++)
			;
		next = strchr(c, '/');
		if (next)
			*next++ = '\0';
		else
			next = c + strlen(c);
		if (!*c || !strcmp(c, ".")) {
			memmove(rest, next, strlen(next) + 1);
			continue;
		}
		if (!strcmp(c, "..")) {
			/* @res holds no link: its parent is textual. */
			char *slash = strrchr(res, '/');

			if (slash)
				*slash = '\0';
			memmove(rest, next, strlen(next) + 1);
			continue;
		}
		{
			char comp[NAME_MAX + 1];

			if (strlen(c) > NAME_MAX)
				return say_why(why, -ENAMETOOLONG, "%s: name too "
					   "long", c);
			strcpy(comp, c);
			memmove(rest, next, strlen(next) + 1);
			ret = resolve_step(res, comp, rest, &links, why);
			if (ret)
				return ret;
		}
	}
	if (snprintf(out, len, "%s", res[0] ? res : "/") >= (int)len)
		return say_why(why, -ENAMETOOLONG, "path too long");
	return 0;
}

int secure_check_file(const struct stat *st, char *why)
{
	if (S_ISLNK(st->st_mode))
		return say_why(why, -ELOOP, "is a symbolic link: give the real path");
	if (!S_ISREG(st->st_mode))
		return say_why(why, -EINVAL, "not a regular file");
	if (st->st_uid != geteuid())
		return say_why(why, -EPERM, "owned by uid %u, not by uid %u: "
			   "blksnap-storage only uses files it owns; delete it "
			   "and let blksnap-storage create it",
			   (unsigned int)st->st_uid, (unsigned int)geteuid());
	if (st->st_mode & (S_IRWXG | S_IRWXO))
		return say_why(why, -EPERM, "mode %04o gives group or others "
			   "access to what the snapshot writes there: delete "
			   "it and let blksnap-storage create it (mode 0600)",
			   (unsigned int)(st->st_mode & 07777));
	if (st->st_nlink != 1)
		return say_why(why, -EMLINK, "has %lu links: another name could "
			   "reach its blocks; remove the other links",
			   (unsigned long)st->st_nlink);
	return 0;
}

int secure_split(const char *path, char *dir, size_t len, const char **base)
{
	const char *slash = strrchr(path, '/');

	if (!slash || path[0] != '/' || !slash[1])
		return -EINVAL;
	if ((size_t)(slash - path) + 2 > len)
		return -ENAMETOOLONG;
	if (slash == path) {
		strcpy(dir, "/");
	} else {
		memcpy(dir, path, slash - path);
		dir[slash - path] = '\0';
	}
	*base = slash + 1;
	return 0;
}
