/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the command files: exit codes, the one-line error format and
 * argument parsers.  Commands parse, call and report; everything here keeps
 * the report format in one place.
 */
#ifndef BLKSNAP_CLI_COMMON_H
#define BLKSNAP_CLI_COMMON_H

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/blksnap.h>

#define PROGRAM_NAME	"blksnap-storage"
#define CLI_VERSION	"1.0"

/* Documented in --help and the man page; scripts rely on them. */
enum exit_code {
	EXIT_OK		= 0,
	EXIT_RUNTIME	= 1,
	EXIT_USAGE	= 2,
	EXIT_CORRUPTED	= 3,
};

/* The command being run, e.g. "add" or "cbt read"; set by main(). */
extern const char *cmd_name;

/*
 * PREFIX and the formatted text as one line, in one write(2): 'snapshot'
 * runs a command that shares stderr with the watcher, and lines written
 * in pieces interleave.
 */
void write_line(int fd, const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* "blksnap-storage: <cmd>: <object>: <message>" on stderr; object may be NULL. */
void report(const char *object, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* All of @buf to @fd, again after EINTR and short writes: 0 or -errno. */
int write_all_fd(int fd, const void *buf, size_t len);

/* report(object, strerror(-err)) and return EXIT_RUNTIME. */
int fail(const char *object, int err);

/*
 * The kernel's refusal @err of a snapshot of @object (create, snapshot),
 * in one line that says why; returns EXIT_RUNTIME.
 */
int create_failed(const char *object, int err);

/*
 * A usage error: the message, then a hint to run --help; returns
 * EXIT_USAGE so callers can write `return usage_error(...)`.
 */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The signal dispositions the command was started with: saved by main()
 * before it changes any, given back to a command 'snapshot' runs, and
 * asked by 'watch', which leaves a hang-up or a broken pipe ignored when
 * its caller ignored it (nohup, systemd's IgnoreSIGPIPE=).
 */
void signals_save_inherited(void);
void signals_restore_inherited(void);
bool signal_inherited_ignored(int sig);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Open /dev/blksnap; on failure report it (module hint) and return -1. */
int open_ctl(void);

/* "4G"-style sizes via the storagefile parser; reports and returns false. */
bool parse_size_arg(const char *opt, const char *text, uint64_t *bytes);

/* A non-negative decimal integer that fits in 64 bits. */
bool parse_u64(const char *text, uint64_t *value);

/* A snapshot id in the standard UUID form; reports usage errors. */
bool parse_snapshot_id(const char *text, struct blk_snap_uuid *id);

/*
 * The snapshot to work on: @given (checked to exist) if not NULL, else the
 * only snapshot in the system.  Returns EXIT_OK, or reports and returns
 * the exit code: EXIT_USAGE when there are several (the message lists
 * them), EXIT_RUNTIME otherwise.
 */
int pick_snapshot(int ctl, const struct blk_snap_uuid *given,
		  struct blk_snap_uuid *id);

/*
 * getopt_long() that reports bad options in our format.  @shortopts must
 * start with ':' (after an optional '+').  Returns the option, -1 at the
 * end, or '?' once the error is reported (then return EXIT_USAGE).
 * Set optind = 0 before the first call of each command.
 */
struct option;
int next_option(int argc, char **argv, const char *shortopts,
		const struct option *longopts);

/* Print a command's help text to stdout; returns EXIT_OK. */
int show_help(const char *text);

/* DEVICE arguments to dev_t; reports and returns false on failure. */
bool resolve_devices(char **args, int count, dev_t *devs);

/* Is there a "-h"/"--help" among the arguments before a "--"? */
bool wants_help(int argc, char **argv);

#endif
