/* SPDX-License-Identifier: GPL-2.0 */
/*
 * blksnap-storage runs as root and its storage files receive raw copies of
 * any block of the snapshotted device, so it must never adopt, hand over
 * or delete a file another user controls (issue 13).  The rules, as
 * openssh's StrictModes and logrotate apply them:
 *
 *  - every directory from / down to a storage file's directory is owned by
 *    root or by us, and is not writable by group or others unless it has
 *    the sticky bit (/tmp): nobody else can rename, replace or create
 *    entries in it that we would act on;
 *  - the file is opened without following symbolic links, at every path
 *    component, through the directory descriptor so checked;
 *  - an existing file is owned by us, gives group and others no access
 *    (mode 0600 or stricter), is a regular file and has one link.
 *
 * The same walk, without the mode rules, finds a recorded file again; the
 * caller then compares device and inode with the record.
 *
 * Failures return -errno and put one sentence, naming the object, in
 * @why (WHY_LEN bytes).
 */
#ifndef BLKSNAP_CLI_SECURE_H
#define BLKSNAP_CLI_SECURE_H

#include <stdbool.h>
#include <sys/stat.h>

/*
 * Open the absolute directory @dir (no "." or ".." components) one
 * component at a time with O_NOFOLLOW, checking each as above when
 * @strict.  Returns an O_PATH descriptor or -errno.  @what names the
 * directory's role in messages ("directory", "state directory").
 */
int secure_open_dir(const char *dir, bool strict, const char *what,
		    char *why);

/*
 * secure_resolve() - @path (relative to the current directory, or
 * absolute) as an absolute path without symbolic links, "." or "..".
 * A symbolic link on the way is followed only if root could trust it:
 * owned by root (or us), in a directory that passes the rules above.
 * Every component must exist. Return: 0, or -errno with @why set.
 */
int secure_resolve(const char *path, char *out, size_t len, char *why);

/* An existing storage file's status @st is acceptable (see above). */
int secure_check_file(const struct stat *st, char *why);

/* Split absolute @path into its directory (in @dir) and last component. */
int secure_split(const char *path, char *dir, size_t len, const char **base);

#endif
