// SPDX-License-Identifier: GPL-2.0
/* Error reporting, argument parsing and snapshot selection for commands. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blksnap_ctl.h"
#include "common.h"
#include "devices.h"
#include "storagefile.h"

const char *cmd_name = "";

/* Every signal a command changes the disposition of. */
static const int changed_signals[] = {
	SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGPIPE, SIGXFSZ,
};
static struct sigaction inherited[ARRAY_SIZE(changed_signals)];

void signals_save_inherited(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(changed_signals); i++)
		sigaction(changed_signals[i], NULL, &inherited[i]);
}

void signals_restore_inherited(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(changed_signals); i++)
		if (inherited[i].sa_handler == SIG_IGN)
			sigaction(changed_signals[i], &inherited[i], NULL);
		else
			signal(changed_signals[i], SIG_DFL);
}

bool signal_inherited_ignored(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(changed_signals); i++)
		if (changed_signals[i] == sig)
			return inherited[i].sa_handler == SIG_IGN;
	return false;
}

void write_line(int fd, const char *prefix, const char *fmt, va_list ap)
{
	/* The object, and a sentence that may name two more paths. */
	char line[3 * PATH_MAX + 1024], out[sizeof(line) * 4 + 2];
	size_t n = 0;
	int len;

	len = snprintf(line, sizeof(line), "%s", prefix);
	if (len < 0 || len >= (int)sizeof(line) - 1)
		len = 0;
	vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	/*
	 * One line, whatever a path holds: control characters (a newline in
	 * a file name, escape sequences) are written as C escapes.
	 */
	for (const unsigned char *p = (const unsigned char *)line; *p; p++) {
		if (*p == '\n')
			n += sprintf(out + n, "\\n");
		else if (*p == '\t')
			n += sprintf(out + n, "\\t");
		else if (*p < 0x20 || *p == 0x7f)
			n += sprintf(out + n, "\\x%02x", *p);
		else
			out[n++] = (char)*p;
	}
	out[n++] = '\n';
	if (write(fd, out, n) < 0)
		return;	/* nowhere left to say it */
}

void report(const char *object, const char *fmt, ...)
{
	char prefix[PATH_MAX + 256];
	va_list ap;

	snprintf(prefix, sizeof(prefix), "%s: %s%s%s%s", PROGRAM_NAME,
		 cmd_name ? cmd_name : "", cmd_name && *cmd_name ? ": " : "",
		 object ? object : "", object ? ": " : "");
	fflush(stderr);
	va_start(ap, fmt);
	write_line(STDERR_FILENO, prefix, fmt, ap);
	va_end(ap);
}

int write_all_fd(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fail(const char *object, int err)
{
	report(object, "%s", strerror(err < 0 ? -err : err));
	return EXIT_RUNTIME;
}

int create_failed(const char *object, int err)
{
	if (err == -EBUSY)
		report(object, "a device is already in another snapshot, or "
		       "being removed from tracking");
	else if (err == -ENODEV || err == -ENXIO)
		report(object, "no such device");
	else if (err == -ETIMEDOUT)
		/* Only the first create that tracks a device waits so. */
		report(object, "cannot create the snapshot: the I/O in flight "
		       "on a device being tracked for the first time did not "
		       "end within 30 s (see 'dmesg'); try again when it is "
		       "less busy");
	else if (err == -EOPNOTSUPP && access("/sys/module/bdev_filter", F_OK) == 0)
		/* The standalone bdev_filter.ko says this; its log says why. */
		report(object, "the kernel cannot intercept the device's writes: "
		       "bdev_filter could not install its hook (see 'dmesg | "
		       "grep bdev_filter' for why)");
	else
		report(object, "cannot create the snapshot: %s",
		       strerror(-err));
	return EXIT_RUNTIME;
}

int usage_error(const char *fmt, ...)
{
	char prefix[PATH_MAX + 256];
	va_list ap;

	/* The argument quoted in the line may hold anything: one line. */
	snprintf(prefix, sizeof(prefix), "%s: %s%s", PROGRAM_NAME,
		 cmd_name ? cmd_name : "", cmd_name && *cmd_name ? ": " : "");
	fflush(stderr);
	va_start(ap, fmt);
	write_line(STDERR_FILENO, prefix, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s%s%s --help' for more information.\n",
		PROGRAM_NAME, *cmd_name ? " " : "", cmd_name);
	return EXIT_USAGE;
}

/*
 * Under kernel lockdown (what Secure Boot switches on) the kernel loads
 * only modules signed by a key it trusts; DKMS signs with its own key,
 * which the user must enrol before the module can load.
 */
static bool kernel_locked_down(void)
{
	char line[128] = "";
	FILE *f = fopen("/sys/kernel/security/lockdown", "re");

	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	return strstr(line, "[integrity]") || strstr(line, "[confidentiality]");
}

int open_ctl(void)
{
	int fd = bsc_open();

	if (fd >= 0)
		return fd;
	if (fd == -ENOENT || fd == -ENXIO || fd == -ENODEV) {
		report(BLK_SNAP_CTL, "not found (is the blksnap module loaded?)");
		if (kernel_locked_down())
			report(NULL, "the kernel is locked down (Secure Boot) and loads only modules signed by a key it trusts: enrol the DKMS signing key with 'mokutil --import /var/lib/dkms/mok.pub', reboot and confirm it in the MOK manager, then modprobe blksnap");
	} else
		fail(BLK_SNAP_CTL, fd);
	return -1;
}

bool parse_size_arg(const char *opt, const char *text, uint64_t *bytes)
{
	int ret = sf_parse_size(text, bytes);

	if (ret == -ERANGE)
		usage_error("%s: size '%s' is too large", opt, text);
	else if (ret)
		usage_error("%s: invalid size '%s' (use e.g. 4096, 512M, 4G)",
			    opt, text);
	return ret == 0;
}

bool parse_u64(const char *text, uint64_t *value)
{
	char *end;

	if (!text || !*text || *text == '-' || *text == '+')
		return false;
	errno = 0;
	*value = strtoull(text, &end, 10);
	return errno == 0 && *end == '\0';
}

bool parse_snapshot_id(const char *text, struct blk_snap_uuid *id)
{
	if (bsc_uuid_parse(text, id) == 0)
		return true;
	usage_error("invalid snapshot id '%s' (expected a UUID such as "
		    "01234567-89ab-cdef-0123-456789abcdef)", text);
	return false;
}

static bool id_listed(const struct blk_snap_uuid *id,
		      const struct blk_snap_uuid *ids, unsigned int count)
{
	for (unsigned int i = 0; i < count; i++)
		if (!memcmp(id, &ids[i], sizeof(*id)))
			return true;
	return false;
}

/* One line: "N snapshots exist, choose one with --snapshot: ID ID ..." */
static void report_several(const struct blk_snap_uuid *ids, unsigned int count)
{
	size_t len = (size_t)count * (BSC_UUID_LEN + 1) + 1;
	char *list = malloc(len), *p = list;

	if (!list) {
		usage_error("%u snapshots exist, choose one with --snapshot",
			    count);
		return;
	}
	for (unsigned int i = 0; i < count; i++) {
		*p++ = ' ';
		bsc_uuid_format(&ids[i], p);
		p += BSC_UUID_LEN;
	}
	usage_error("%u snapshots exist, choose one with --snapshot:%s",
		    count, list);
	free(list);
}

int pick_snapshot(int ctl, const struct blk_snap_uuid *given,
		  struct blk_snap_uuid *id)
{
	char text[BSC_UUID_LEN + 1];
	struct blk_snap_uuid *ids;
	unsigned int count;
	int ret;

	ret = bsc_snapshot_collect(ctl, &ids, &count);
	if (ret)
		return fail("cannot list snapshots", ret);
	ret = EXIT_RUNTIME;
	if (given) {
		*id = *given;
		if (id_listed(id, ids, count))
			ret = EXIT_OK;
		bsc_uuid_format(given, text);
		if (ret)
			report(text, "no such snapshot");
	} else if (count == 0) {
		report(NULL, "no snapshot exists (create one first)");
	} else if (count > 1) {
		/* The command line lacks what only its caller can give. */
		report_several(ids, count);
		ret = EXIT_USAGE;
	} else {
		*id = ids[0];
		ret = EXIT_OK;
	}
	free(ids);
	return ret;
}

bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

/*
 * What getopt_long() found wrong with the long option @arg: an argument
 * to an option that takes none, an ambiguous abbreviation, or an unknown
 * name (getopt's own optopt does not tell these apart).
 */
static void long_option_error(const char *arg, const struct option *longopts)
{
	const char *name = arg + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct option *match = NULL;
	char list[256] = "";
	int matches = 0;

	for (const struct option *o = longopts; o && o->name; o++) {
		if (strncmp(o->name, name, len))
			continue;
		if (strlen(o->name) == len) {	/* exact: no abbreviation */
			match = o;
			matches = 1;
			break;
		}
		match = o;
		matches++;
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 " '--%s'", o->name);
	}
	if (matches > 1)
		usage_error("option '--%.*s' is ambiguous; possibilities:%s",
			    (int)len, name, list);
	else if (matches == 1 && eq && match->has_arg == no_argument)
		usage_error("option '--%s' doesn't allow an argument",
			    match->name);
	else
		usage_error("unrecognized option '--%.*s'", (int)len, name);
}

int next_option(int argc, char **argv, const char *shortopts,
		const struct option *longopts)
{
	int c, start = optind;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, longopts, NULL);
	/*
	 * A long option is its own argument, so getopt moves past it; an
	 * invalid letter inside a cluster ("-zz") does not move optind, and
	 * argv[optind - 1] is then whatever came before, maybe "--json".
	 * glibc sets optopt to 0 for an unknown or ambiguous long option and
	 * to the letter for a short one.
	 */
	if (c == '?' && optind > 0 && !strncmp(argv[optind - 1], "--", 2) &&
	    (optopt == 0 || optind != start))
		long_option_error(argv[optind - 1], longopts);
	else if (c == '?')
		usage_error("invalid option -- '%c'", optopt);
	else if (c == ':') {
		usage_error("option '%s' requires an argument",
			    argv[optind - 1]);
		c = '?';
	}
	return c;
}

int show_help(const char *text)
{
	fputs(text, stdout);
	return EXIT_OK;
}

bool resolve_devices(char **args, int count, dev_t *devs)
{
	for (int i = 0; i < count; i++) {
		const char *cause;
		int ret = device_resolve(args[i], &devs[i], &cause);

		if (ret) {
			report(args[i], "%s", cause ? cause : strerror(-ret));
			return false;
		}
		if (device_is_zoned(devs[i])) {
			report(args[i], "a zoned device cannot be snapshotted: "
			       "its zone resets change data that copy-on-write "
			       "cannot save first");
			return false;
		}
		for (int j = 0; j < i; j++)
			if (devs[j] == devs[i]) {
				report(args[i], "same device as %s", args[j]);
				return false;
			}
	}
	return true;
}
